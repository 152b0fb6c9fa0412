"""Longboat's web dashboard: the cluster, topics, consumer groups and messages in a browser.

`DashboardServer` serves it (`longboat dashboard`, and inside `longboat up`); it reaches the
cluster only through the admin client, so it works against Apache RocketMQ too.
"""

from longboat.dashboard.server import DEFAULT_PORT, DashboardServer

__all__ = ["DEFAULT_PORT", "DashboardServer"]
