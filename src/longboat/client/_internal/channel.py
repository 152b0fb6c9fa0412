"""How one request of the client goes out and its answer comes back.

This is the one place where transport failures and non-success answers become the client's
exceptions (`errors.py`): callers never see a `RemotingError` or a raw response code.
Name-server commands fail over between the configured name servers (`remoting.failover`:
the last one that answered is tried first); broker commands go to the address they are given,
naming the broker group they are for when they are about one of its queues.
"""

from __future__ import annotations

from collections.abc import Collection

from longboat.client.config import ClientConfig
from longboat.client.errors import ClientUsageError, TransportError, broker_error, transport_error
from longboat.protocol import RemotingCommand, ResponseCode
from longboat.protocol.headers import broker_name_field
from longboat.remoting import RemotingClient, RemotingError
from longboat.remoting.failover import Failover, NoServerAnswered


class RequestChannel:
    """Requests over one `RemotingClient`, their failures as client errors; stateless apart
    from name-server failover.  The typed requests (`api.ClientAPI`) are built on it."""

    def __init__(self, remoting: RemotingClient, config: ClientConfig) -> None:
        self.remoting = remoting
        self.config = config
        self._namesrvs = Failover(remoting, config.namesrv_addrs)

    def _command(
        self,
        code: int,
        ext: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        broker_name: str | None = None,
    ) -> RemotingCommand:
        """A request; `broker_name`, the group of the queue it is about, travels in the field
        RocketMQ 5's proxy forwards by (`broker_name_field`): the route may name one proxy
        address for every group, so the address alone does not say which group is meant."""
        if broker_name is not None:
            ext = {**(ext or {}), broker_name_field(code): broker_name}
        return RemotingCommand.request(code, ext, body, serialize_type=self.config.serialize_type)

    async def invoke(
        self, addr: str, cmd: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        """Send a request and return the answer, whatever its code; transport errors mapped."""
        try:
            return await self.remoting.request(
                addr, cmd, self.config.request_timeout if timeout is None else timeout
            )
        except RemotingError as exc:
            raise transport_error(exc, addr) from exc

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        try:
            await self.remoting.oneway(addr, cmd)
        except RemotingError as exc:
            raise transport_error(exc, addr) from exc

    async def _call(
        self,
        addr: str,
        cmd: RemotingCommand,
        timeout: float | None = None,
        ok: Collection[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        """Like `invoke`, but any code outside `ok` raises the matching BrokerError."""
        response = await self.invoke(addr, cmd, timeout)
        if response.code not in ok:
            raise broker_error(response.code, response.remark, addr=addr, request_code=cmd.code)
        return response

    async def _call_namesrv(
        self, cmd: RemotingCommand, ok: Collection[int] = (ResponseCode.SUCCESS,)
    ) -> tuple[str, RemotingCommand]:
        if not self._namesrvs.addrs:
            raise ClientUsageError("no name server address configured")
        try:
            addr, response = await self._namesrvs.request(cmd, self.config.request_timeout)
        except NoServerAnswered as exc:
            last = transport_error(exc.last, exc.last_addr)
            raise TransportError(
                f"no name server reachable ({', '.join(exc.addrs)}): {last}"
            ) from last
        if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            # A broker answers a name server's request so ("request type 105 not supported").
            raise ClientUsageError(
                f"{addr} does not serve name-server request {cmd.code}: it looks like a "
                "broker, not a name server; give the name server's address (port 9876 by "
                "default)"
            )
        if response.code not in ok:
            raise broker_error(response.code, response.remark, addr=addr, request_code=cmd.code)
        return addr, response
