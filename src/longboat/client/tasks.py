"""The task helpers of the client's services, and of the dashboard, which reaches remoting
only through the client."""

from __future__ import annotations

from longboat.remoting.tasks import BackgroundTask, ended

__all__ = ["BackgroundTask", "ended"]
