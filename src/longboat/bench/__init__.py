"""Load generation and figures for `longboat bench` and the benchmark scripts under `bench/`:
one load generator, one way to compute percentiles, one plot, shared by every caller."""
