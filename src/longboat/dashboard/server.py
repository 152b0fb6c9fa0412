"""The dashboard as a server with start/stop, like the name server and the broker, so
`longboat up` runs it beside them and tests start it on a free port."""

from __future__ import annotations

import logging
from dataclasses import KW_ONLY, dataclass, field

from aiohttp import web

from longboat.client.config import ClientConfig
from longboat.dashboard import DEFAULT_PORT
from longboat.dashboard.app import make_app
from longboat.dashboard.sampler import LagSampler
from longboat.dashboard.sessions import Clients, Sessions

log = logging.getLogger(__name__)


@dataclass(eq=False, slots=True)
class DashboardServer:
    """The dashboard's web app and lag sampler on `host:port`, its clients from `config`."""

    config: ClientConfig
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    _: KW_ONLY
    sample_interval: float = 10.0
    sessions: Sessions = field(init=False)
    _clients: Clients | None = field(default=None, init=False)
    _sampler: LagSampler | None = field(default=None, init=False)
    _runner: web.AppRunner | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.config)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def start(self) -> None:
        clients = await Clients.start(self.config)
        sampler = LagSampler(clients.admin, interval=self.sample_interval)
        runner = web.AppRunner(make_app(clients, self.sessions, sampler), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            await clients.shutdown()
            raise
        self._clients, self._sampler, self._runner = clients, sampler, runner
        # The bound port, when 0 asked for any free one.
        self.port = runner.addresses[0][1]
        sampler.start()
        log.info("dashboard on %s", self.url)

    async def stop(self) -> None:
        if self._sampler is not None:
            await self._sampler.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.sessions.close()
        if self._clients is not None:
            await self._clients.shutdown()
            self._clients = None
