"""`QueueReader.queues(wait=...)`: a route asked again until it has readable queues, and the
last answer's error when the time runs out (driven with a scripted instance, no network)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from longboat.client._internal.instance import ClientInstance
from longboat.client.errors import NoRouteError
from longboat.client.queue_reader import QueueReader
from longboat.protocol.types import MessageQueue

MQ = [MessageQueue("T", "b", 1), MessageQueue("T", "b", 0)]
UNKNOWN = NoRouteError(17, "no route for T")


class ScriptedRoutes:
    """Answers `route()` from a script, the last answer repeating."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked = 0

    async def route(self, topic: str, *, refresh: bool = False) -> Any:
        answer = self.answers[min(self.asked, len(self.answers) - 1)]
        self.asked += 1
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(subscribe_queues=answer)


async def queues_of(routes: ScriptedRoutes, wait: float) -> list[MessageQueue]:
    reader = QueueReader()
    reader._held = cast(ClientInstance, routes)
    try:
        return await reader.queues("T", wait=wait)
    finally:
        reader._held = None


async def test_asks_again_until_the_route_has_readable_queues() -> None:
    routes = ScriptedRoutes(UNKNOWN, [], MQ)
    assert await queues_of(routes, wait=30.0) == sorted(MQ)
    assert routes.asked == 3


@pytest.mark.parametrize(
    ("answer", "error"),
    [(UNKNOWN, "no route for T"), ([], "topic T has no readable queue")],
    ids=["unknown topic", "no readable queue"],
)
async def test_the_last_answer_says_why_when_the_time_is_up(answer: Any, error: str) -> None:
    routes = ScriptedRoutes(answer)
    with pytest.raises(NoRouteError, match=error):
        await queues_of(routes, wait=0.0)
    assert routes.asked == 1
