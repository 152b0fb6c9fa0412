"""The dashboard as a server with start/stop, like the name server and the broker, so
`longboat up` runs it beside them and tests start it on a free port."""

from __future__ import annotations

import logging

from aiohttp import web

from longboat.client.admin import Admin
from longboat.client.config import ClientConfig
from longboat.client.producer import Producer
from longboat.dashboard.app import make_app
from longboat.dashboard.sampler import LagSampler

log = logging.getLogger(__name__)

DEFAULT_PORT = 8080
# The producer group of test messages and resends (shown as their producer group).
PRODUCER_GROUP = "LONGBOAT_DASHBOARD_PRODUCER"


class DashboardServer:
    def __init__(
        self,
        config: ClientConfig,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        sample_interval: float = 10.0,
    ) -> None:
        self.host = host
        self.port = port
        self.admin = Admin(config=config)
        self.producer = Producer(PRODUCER_GROUP, config=config)
        self.sampler = LagSampler(self.admin, interval=sample_interval)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def start(self) -> None:
        await self.admin.start()
        await self.producer.start()
        runner = web.AppRunner(make_app(self.admin, self.producer, self.sampler), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            await self.producer.shutdown()
            await self.admin.shutdown()
            raise
        self._runner = runner
        # The bound port, when 0 asked for any free one.
        self.port = runner.addresses[0][1]
        self.sampler.start()
        log.info("dashboard on %s", self.url)

    async def stop(self) -> None:
        await self.sampler.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.producer.shutdown()
        await self.admin.shutdown()
