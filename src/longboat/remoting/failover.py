"""One request to any of several servers that answer alike (the name servers): each is asked
in turn until one answers, starting with the one that answered last, as RocketMQ's
`NettyRemotingClient` keeps to the name server it chose until it fails.  Clients and brokers
both look routes up through it; what an answer means is theirs to decide.
"""

from __future__ import annotations

from collections.abc import Sequence

from longboat.protocol import RemotingCommand
from longboat.remoting.client import RemotingClient
from longboat.remoting.errors import RemotingError


class NoServerAnswered(RemotingError):
    """Every server failed: `last` is the last one's failure, at `last_addr`."""

    def __init__(self, addrs: Sequence[str], last_addr: str, last: RemotingError) -> None:
        super().__init__(f"none of {', '.join(addrs)} answered; {last_addr}: {last}")
        self.addrs = list(addrs)
        self.last_addr = last_addr
        self.last = last


class Failover:
    """Requests over `client` to whichever of `addrs` answers (at least one address)."""

    def __init__(self, client: RemotingClient, addrs: Sequence[str]) -> None:
        self.client = client
        self.addrs = list(addrs)
        self.first = 0  # the index of the server that answered last: asked first next time

    async def request(self, cmd: RemotingCommand, timeout: float) -> tuple[str, RemotingCommand]:
        """(address, answer) of the first server that answered, whatever the answer's code;
        raises NoServerAnswered when none did (ValueError when there is no address)."""
        if not self.addrs:
            raise ValueError("no server address to ask")
        for step in range(len(self.addrs)):
            index = (self.first + step) % len(self.addrs)
            addr = self.addrs[index]
            try:
                response = await self.client.request(addr, cmd, timeout)
            except RemotingError as exc:
                last_addr, last = addr, exc
                continue
            self.first = index
            return addr, response
        raise NoServerAnswered(self.addrs, last_addr, last)
