"""What every producer, consumer and admin shares: one instance reference from start to shutdown.

A client that was started and never shut down leaves work undone (a consumer's offsets not
committed, the group's brokers still listing it): when such an object is collected, or at
interpreter exit if it is still alive, it is reported once, as a `ResourceWarning` (what
Python reports for unclosed files and sockets, shown with `-W default` or `-X dev`) and as a
logged warning, which is shown by default.  The blocking facade shuts its own down at exit
first (`longboat.client.sync`), so its consumers commit.  An asyncio consumer cannot: by then
its event loop is closed (asyncio.run closes it), so what it consumed since its last commit is
not committed and is delivered again; its report says so.  A client another one started for
its own use (a push consumer's producer of retry copies) is reported through its owner alone.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import warnings
import weakref
from typing import Self

from longboat.client._internal.instance import ClientInstance
from longboat.client.config import ClientConfig, parse_namesrv_addrs
from longboat.client.errors import ClientClosedError

log = logging.getLogger(__name__)

# Every started client not yet shut down (weakly: a collected one cannot be shut down anyway).
_started: weakref.WeakSet[InstanceUser] = weakref.WeakSet()


# A consumer's `left_open_consequence`.
LEFT_OPEN_UNCOMMITTED = (
    "; what it consumed since its last commit is not committed and will be delivered again"
)


def warn_not_shut_down(user: object, consequence: str = "") -> None:
    """Report `user` as started and never shut down (once per call site: at exit)."""
    text = (
        f"{user!r} was started and never shut down{consequence}; call shutdown() or use it "
        "as a context manager"
    )
    warnings.warn(text, ResourceWarning, stacklevel=2, source=user)
    log.warning("%s", text)


@atexit.register
def _report_not_shut_down() -> None:
    for user in list(_started):
        user._report_not_shut_down()


class InstanceUser:
    """Holds a `ClientInstance` between `start()` and `shutdown()`; usable as `async with`.

    `start` acquires the shared instance and `shutdown` releases it: all a user that registers
    nothing needs (admin, queue reader); producers and consumers extend both to register."""

    # What is lost when this kind of client is left open at exit, for its report.
    left_open_consequence = ""

    def __init__(self, config: ClientConfig | None, namesrv_addrs: str | list[str] | None) -> None:
        if config is None:
            # No addresses: ClientConfig reads the environment, else the default.
            config = ClientConfig(parse_namesrv_addrs(namesrv_addrs) if namesrv_addrs else [])
        self.config = config
        self._held: ClientInstance | None = None
        self._reported = False
        # The client that started this one for its own use and shuts it down (see above).
        self.owner: InstanceUser | None = None

    @property
    def _instance(self) -> ClientInstance | None:
        return self._held

    @_instance.setter
    def _instance(self, instance: ClientInstance | None) -> None:
        # Tracks started objects for the report at exit (see the module docstring).
        self._held = instance
        if instance is None:
            _started.discard(self)
        else:
            _started.add(self)

    def _report_not_shut_down(self) -> None:
        if self._held is not None and not self._reported and self.owner is None:
            self._reported = True
            warn_not_shut_down(self, self.left_open_consequence)

    def __del__(self) -> None:
        # Collected while started (the application dropped it): reported like an open file.
        with contextlib.suppress(Exception):
            self._report_not_shut_down()

    async def start(self) -> None:
        if self._instance is None:
            self._instance = ClientInstance.acquire(self.config)

    async def shutdown(self) -> None:
        instance, self._instance = self._instance, None
        if instance is not None:
            await instance.release()

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


class RegisteringNothingUser(InstanceUser):
    """An `InstanceUser` that registers nothing (admin, queue reader): built from the
    connection settings alone, given by keyword, and shown by its class name."""

    def __init__(
        self,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
    ) -> None:
        super().__init__(config, namesrv_addrs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
