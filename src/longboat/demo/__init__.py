"""The order pipeline `longboat demo` runs, packaged so an installed wheel carries it.

`orders` produces JSON order events; `revenue_stream` is the streaming job (per-minute revenue
by region to Parquet, large-order alerts to a topic through the exactly-once sink);
`orders_by_time` the batch job over a store-time range.  The scripts in the repository's
`examples/` run each piece on its own against a running name server.  The jobs need the
`spark` extra.
"""
