"""Which brokers serve timer messages: what a `delay=` send must know before it goes.

A delay travels one of two ways.  To a broker with timers (RocketMQ 5's timer wheel, RIP-43,
and Longboat) it is the exact `TIMER_DELAY_MS` property.  To one without them — RocketMQ 4.x,
which would ignore the property and deliver at once, or 5.x with `timerWheelEnable=false`,
which refuses it — it must be a delay level, rounded up (`message.delay_property`).

The signal is the broker's own setting: `timerWheelEnable` in its GET_BROKER_CONFIG answer.
RocketMQ 5 reports every store setting there (`true` by default); 4.x has no such key.
GET_BROKER_RUNTIME_INFO would not do: RocketMQ 5.3 fills its `timerReadBehind`,
`timerOffsetBehind`, ... figures whether the wheel is on or off (zeros when off), so they tell
a 5.x broker from a 4.x one, not a broker that serves timers.  A broker that refuses the
question (an ACL keeping its settings from this account) is taken to have no timers: a level
may deliver late, never early.

Answers are cached per broker address, with one question in flight per address.  `forget`
drops an address's answer, so the next send there asks again: the producer calls it when a
delayed send to that broker failed, which is how a broker restarted with other settings is
noticed.  Invariant: the cache only ever holds an answer the broker gave (or its refusal);
a question that could not reach the broker is not remembered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from longboat.client.errors import BrokerError

log = logging.getLogger(__name__)

# RocketMQ 5's MessageStoreConfig key, as GET_BROKER_CONFIG spells it.
TIMER_WHEEL_ENABLE = "timerWheelEnable"


class BrokerTimers:
    """Per broker address: does it serve timer messages?  Owned by the client instance, so
    the producers of one process share the answers."""

    def __init__(self, broker_config: Callable[[str], Awaitable[Mapping[str, str]]]) -> None:
        """`broker_config(addr)` asks a broker its settings (`ClientAPI.get_broker_config`)."""
        self._broker_config = broker_config
        self._answers: dict[str, asyncio.Future[bool]] = {}

    async def serve_timers(self, addr: str) -> bool:
        """Whether the broker at `addr` serves timer messages (asked once, then cached).
        Raises TransportError when it cannot be asked; nothing is cached then."""
        answer = self._answers.get(addr)
        if answer is None:
            answer = asyncio.ensure_future(self._ask(addr))
            self._answers[addr] = answer
            answer.add_done_callback(lambda done: self._drop_failed(addr, done))
        # Shielded: a send cancelled while waiting leaves the question to the others.
        return await asyncio.shield(answer)

    def forget(self, addr: str) -> None:
        """Ask `addr` again at its next delayed send.
        Caller: the producer, after a delayed send to `addr` failed."""
        self._answers.pop(addr, None)  # a question in flight still answers its waiters

    async def _ask(self, addr: str) -> bool:
        try:
            settings = await self._broker_config(addr)
        except BrokerError as refused:
            log.info("%s keeps its settings (%s): delays go there as delay levels", addr, refused)
            return False
        return settings.get(TIMER_WHEEL_ENABLE, "false").lower() == "true"

    def _drop_failed(self, addr: str, done: asyncio.Future[bool]) -> None:
        failed = done.cancelled() or done.exception() is not None
        if failed and self._answers.get(addr) is done:
            del self._answers[addr]
