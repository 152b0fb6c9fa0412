"""The pytest plugin installing longboat registers (entry point `pytest11`): fixtures that
give a test a real Longboat cluster, with no conftest.py to write.

* `longboat_cluster`: a fresh name server and broker for one test (its own store: nothing
  left by another test), stopped after it;
* `longboat_cluster_session`: one for the whole session, for suites that name their topics
  and groups apart and would rather not pay a start per test.

Both are plain (synchronous) fixtures around a `LongboatCluster`, whose servers run on a
thread of their own: sync and asyncio tests use them alike.  docs/testing.md shows them used.

Every pytest run of a project with longboat installed loads this module: the servers are
imported only when a test asks for a cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from longboat.testing.cluster import LongboatCluster


@pytest.fixture
def longboat_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongboatCluster]:
    """A name server and broker for this test; `.namesrv` is the address to give clients."""
    from longboat.testing.cluster import LongboatCluster

    with LongboatCluster.start(tmp_path_factory.mktemp("longboat")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def longboat_cluster_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LongboatCluster]:
    """One name server and broker shared by every test of the session."""
    from longboat.testing.cluster import LongboatCluster

    with LongboatCluster.start(tmp_path_factory.mktemp("longboat-session")) as cluster:
        yield cluster
