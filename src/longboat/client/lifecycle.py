"""What every producer, consumer and admin shares: one instance reference from start to shutdown."""

from __future__ import annotations

from typing import Self

from longboat.client.config import ClientConfig, parse_namesrv_addrs
from longboat.client.errors import ClientClosedError
from longboat.client.instance import ClientInstance


class InstanceUser:
    """Holds a `ClientInstance` between `start()` and `shutdown()`; usable as `async with`.

    Subclasses implement `start` (acquire, register) and `shutdown` (unregister, release)."""

    def __init__(self, config: ClientConfig | None, namesrv_addrs: str | list[str] | None) -> None:
        if config is None:
            config = (
                ClientConfig(parse_namesrv_addrs(namesrv_addrs))
                if namesrv_addrs
                else ClientConfig()
            )
        self.config = config
        self._instance: ClientInstance | None = None

    async def start(self) -> None:
        raise NotImplementedError

    async def shutdown(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    @property
    def instance(self) -> ClientInstance:
        """The shared instance; raises ClientClosedError before start or after shutdown."""
        if self._instance is None:
            raise ClientClosedError(f"{self!r} is not started")
        return self._instance
