"""Which brokers serve timers (`client/_internal/broker_timers.py`), driven without sockets:
the settings' answer read, asked once per broker however many sends wait, asked again after
`forget`, a refusal taken as "no timers", an unreachable broker not remembered."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from longboat.client._internal.broker_timers import BrokerTimers
from longboat.client.errors import BrokerError, TransportError
from longboat.protocol import ResponseCode


class Brokers:
    """Settings by address; an address with an exception raises it when asked."""

    def __init__(self, answers: dict[str, Mapping[str, str] | Exception]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def broker_config(self, addr: str) -> Mapping[str, str]:
        self.asked.append(addr)
        await asyncio.sleep(0)  # a real question takes a turn of the loop at least
        answer = self.answers[addr]
        if isinstance(answer, Exception):
            raise answer
        return answer


ANSWERS: list[tuple[Mapping[str, str] | Exception, bool]] = [
    ({"timerWheelEnable": "true", "brokerName": "b"}, True),  # RocketMQ 5, Longboat
    ({"timerWheelEnable": "false"}, False),  # timers switched off
    ({"brokerName": "b"}, False),  # RocketMQ 4.x: no such setting
    (BrokerError(ResponseCode.NO_PERMISSION, "no admin"), False),  # settings kept from us
]


@pytest.mark.parametrize(("answer", "timers"), ANSWERS)
async def test_the_answer_read_from_the_brokers_settings(
    answer: Mapping[str, str] | Exception, timers: bool
) -> None:
    assert await BrokerTimers(Brokers({"a": answer}).broker_config).serve_timers("a") is timers


async def test_asked_once_per_broker_until_forgotten() -> None:
    brokers = Brokers({"a": {"timerWheelEnable": "true"}, "b": {}})
    known = BrokerTimers(brokers.broker_config)
    together = await asyncio.gather(*(known.serve_timers("a") for _ in range(5)))
    assert together == [True] * 5 and brokers.asked == ["a"]
    assert await known.serve_timers("b") is False
    assert await known.serve_timers("a") is True and brokers.asked == ["a", "b"]
    brokers.answers["a"] = {"timerWheelEnable": "false"}  # restarted with other settings
    known.forget("a")
    assert await known.serve_timers("a") is False and brokers.asked == ["a", "b", "a"]


async def test_an_unreachable_broker_is_asked_again() -> None:
    brokers = Brokers({"a": TransportError("connection refused")})
    known = BrokerTimers(brokers.broker_config)
    with pytest.raises(TransportError):
        await known.serve_timers("a")
    brokers.answers["a"] = {"timerWheelEnable": "true"}
    assert await known.serve_timers("a") is True and brokers.asked == ["a", "a"]
