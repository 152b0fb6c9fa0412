"""Longboat's web dashboard: the cluster, topics, consumer groups and messages in a browser.

`longboat.dashboard.server.DashboardServer` serves it (`longboat dashboard`, and inside
`longboat up`); it reaches the cluster only through the admin client, so it works against
Apache RocketMQ too.  This package's top level names only the port, so that a server started
with the dashboard off never imports aiohttp (a third of `longboat up`'s start-up and its
memory).
"""

DEFAULT_PORT = 8080

__all__ = ["DEFAULT_PORT"]
