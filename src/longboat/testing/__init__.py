"""A real Longboat cluster for an application's tests: `LongboatCluster`, and the pytest
fixtures that installing longboat registers (`longboat_cluster`, `longboat_cluster_session`;
docs/testing.md)."""

from longboat.testing.cluster import LongboatCluster

__all__ = ["LongboatCluster"]
