"""Fixtures of the client's end-to-end tests: a real name server and broker on loopback.

`namesrv` is the name-server address of a running name server with one broker registered
(auto-create of topics on); `namesrv_no_autocreate` the same with autoCreateTopicEnable=false.
Both come from the broker's loopback fixture in `tests/conftest.py`; until that fixture
exists, the end-to-end tests are skipped with that reason rather than failing.
"""

from __future__ import annotations

import pytest

BROKER_FIXTURE = "loopback_cluster"


def _namesrv(request: pytest.FixtureRequest, **broker_options: object) -> str:
    try:
        make_cluster = request.getfixturevalue(BROKER_FIXTURE)
    except pytest.FixtureLookupError:
        pytest.skip(f"needs the broker's {BROKER_FIXTURE!r} fixture (tests/conftest.py)")
    return make_cluster(**broker_options).namesrv_addr


@pytest.fixture
def namesrv(request: pytest.FixtureRequest) -> str:
    return _namesrv(request)


@pytest.fixture
def namesrv_no_autocreate(request: pytest.FixtureRequest) -> str:
    return _namesrv(request, auto_create_topic=False)


# Retry and delay levels of 100 ms each, so retry/DLQ tests take a second, not minutes.
SHORT_DELAY_LEVELS = " ".join(["100ms"] * 18)


@pytest.fixture
def namesrv_short_delays(request: pytest.FixtureRequest) -> str:
    return _namesrv(request, message_delay_level=SHORT_DELAY_LEVELS)
