"""The official client needs an event loop on the thread that sends (see conftest)."""

from __future__ import annotations

import asyncio

import pytest

from grpc5.conftest import Grpc5, _has_usable_event_loop
from grpc5.test_python_simple import message

# Both on one worker, in this order.
pytestmark = pytest.mark.xdist_group("grpc5-caller-loop")


def test_an_asyncio_run_leaves_the_test_thread_without_a_loop() -> None:
    asyncio.run(asyncio.sleep(0))
    assert not _has_usable_event_loop()


def test_the_next_test_sends_with_a_loop_on_its_thread(grpc5: Grpc5) -> None:
    assert _has_usable_event_loop()
    topic = grpc5.topic()
    with grpc5.producer(topic) as producer:
        assert producer.send(message(topic, b"after asyncio.run")).message_id
