"""The broker's topic rules driven by hand (`TopicManager` in `topics.py`) over a real topic
table file and a fake clock: no broker, no sockets.  The same rules run end to end in
`test_core_wire.py` (auto-creation on send) and `test_admin_wire.py` (admin codes).

Each test feeds bootstraps, sends to unknown topics, consumer heartbeats, dead letters and
admin changes, and checks the table afterwards, its data version, and when the broker was
told to re-register (`on_change`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from longboat.broker.state.topics import TopicManager
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.topic_names import AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC
from longboat.protocol.types import PERM_INHERIT, PERM_READ, PERM_READ_WRITE
from longboat.store import TopicConfigTable

from .fakes import FakeClock

DEFAULT_QUEUES = 8
SCHEDULE_QUEUES = 18


@dataclass
class Topics:
    """A bootstrapped TopicManager over a topic file, counting re-registrations."""

    path: Path
    auto_create: bool = True
    clock: FakeClock = field(default_factory=FakeClock)
    changes: int = 0
    # What each re-registration carries: the changed topics' names, or None (the whole table).
    registered: list[list[str] | None] = field(default_factory=list)
    manager: TopicManager = field(init=False)

    def __post_init__(self) -> None:
        self.manager = self.reopen()

    def reopen(self) -> TopicManager:
        """The manager of a broker (re)started on the same file."""
        table = TopicConfigTable(self.path, clock=self.clock)
        table.load()
        self.manager = TopicManager(
            table,
            auto_create=self.auto_create,
            default_queue_nums=DEFAULT_QUEUES,
            schedule_queue_nums=SCHEDULE_QUEUES,
            on_change=self.changed,
        )
        self.manager.bootstrap()
        return self.manager

    def changed(self, configs: list[TopicConfig] | None) -> None:
        self.changes += 1
        self.registered.append(None if configs is None else [c.topic_name for c in configs])

    def shape(self, topic: str) -> tuple[int, int, int] | None:
        config = self.manager.get(topic)
        if config is None:
            return None
        return config.read_queue_nums, config.write_queue_nums, config.perm


@pytest.fixture
def topics(tmp_path: Path) -> Topics:
    return Topics(tmp_path / "topics.json")


# ---------------------------------------------------------------------- bootstrap


def test_bootstrap_creates_the_broker_topics_without_re_registering(topics: Topics) -> None:
    assert sorted(topics.manager.all()) == [SCHEDULE_TOPIC, AUTO_CREATE_TOPIC_KEY]
    assert topics.shape(AUTO_CREATE_TOPIC_KEY) == (
        DEFAULT_QUEUES,
        DEFAULT_QUEUES,
        PERM_READ_WRITE | PERM_INHERIT,
    )
    assert topics.shape(SCHEDULE_TOPIC) == (SCHEDULE_QUEUES, SCHEDULE_QUEUES, PERM_READ_WRITE)
    assert topics.changes == 0  # the first registration carries them


def test_turning_auto_creation_off_removes_the_default_topic_at_the_next_start(
    topics: Topics,
) -> None:
    topics.manager.create_on_send("Made", AUTO_CREATE_TOPIC_KEY, 4)
    topics.auto_create = False
    manager = topics.reopen()
    assert sorted(manager.all()) == ["Made", SCHEDULE_TOPIC]  # topics made through it stay
    assert manager.create_on_send("Other", AUTO_CREATE_TOPIC_KEY, 4) is None


# ---------------------------------------------------------------------- auto-creation on send


@pytest.mark.parametrize(
    ("requested", "created"),
    [
        (4, 4),  # what the producer asked for
        (16, DEFAULT_QUEUES),  # at most the default topic's write queues
        (0, 1),  # at least one
    ],
)
def test_a_send_to_an_unknown_topic_creates_it_from_the_default_topic(
    topics: Topics, requested: int, created: int
) -> None:
    version = topics.manager.wrapper().data_version
    config = topics.manager.create_on_send("New", AUTO_CREATE_TOPIC_KEY, requested, 0)
    assert config is not None and topics.shape("New") == (created, created, PERM_READ_WRITE)
    assert topics.changes == 1  # registered at once, not at the next 30 s round
    assert topics.manager.wrapper().data_version.counter == version.counter + 1
    # A second send finds it: nothing changes.
    assert topics.manager.create_on_send("New", AUTO_CREATE_TOPIC_KEY, 16) == config
    assert topics.changes == 1


def test_the_created_topic_keeps_the_send_sys_flag_and_survives_a_restart(topics: Topics) -> None:
    topics.manager.create_on_send("Flagged", AUTO_CREATE_TOPIC_KEY, 4, topic_sys_flag=1)
    manager = topics.reopen()
    config = manager.get("Flagged")
    assert config is not None and config.topic_sys_flag == 1 and config.write_queue_nums == 4


@pytest.mark.parametrize(
    ("default_topic", "perm"),
    [
        ("Plain", PERM_READ_WRITE),  # an ordinary topic cannot be inherited
        ("Missing", None),  # no such default topic
    ],
)
def test_no_topic_is_created_from_a_default_that_cannot_be_inherited(
    topics: Topics, default_topic: str, perm: int | None
) -> None:
    if perm is not None:
        topics.manager.create_topic(TopicConfig(default_topic, 4, 4, perm))
    changes = topics.changes
    assert topics.manager.create_on_send("New", default_topic, 4) is None
    assert topics.shape("New") is None and topics.changes == changes


def test_an_inheritable_default_passes_its_permissions_on_without_inherit(topics: Topics) -> None:
    topics.manager.create_topic(
        TopicConfig("ReadOnlyBase", 2, 2, PERM_READ | PERM_INHERIT)  # no WRITE
    )
    topics.manager.create_on_send("Child", "ReadOnlyBase", 4)
    assert topics.shape("Child") == (2, 2, PERM_READ)


# ---------------------------------------------------------------------- a group's own topics


def test_retry_and_dlq_topics_are_created_once(topics: Topics) -> None:
    steps = [
        # (what happens, topic, its shape afterwards, re-registrations so far)
        (lambda: topics.manager.ensure_retry_topic("g", 2), "%RETRY%g", (2, 2, 6), 1),
        (lambda: topics.manager.ensure_retry_topic("g", 5), "%RETRY%g", (2, 2, 6), 1),
        (lambda: topics.manager.ensure_dlq_topic("g"), "%DLQ%g", (1, 1, 6), 2),
        (lambda: topics.manager.ensure_dlq_topic("g"), "%DLQ%g", (1, 1, 6), 2),
    ]
    for action, topic, shape, changes in steps:
        action()
        assert (topics.shape(topic), topics.changes) == (shape, changes)


@pytest.mark.parametrize("auto_create", [True, False])
def test_a_send_never_creates_a_retry_topic(tmp_path: Path, auto_create: bool) -> None:
    """A group's retry topic comes from its heartbeat (`ensure_retry_topic`); a send to a
    missing one would make up a group nobody runs."""
    topics = Topics(tmp_path / "topics.json", auto_create=auto_create)
    assert topics.manager.create_on_send("%RETRY%g", AUTO_CREATE_TOPIC_KEY, 4) is None
    plain = topics.manager.create_on_send("Plain", AUTO_CREATE_TOPIC_KEY, 4)
    assert (plain is not None) == auto_create
    topics.manager.ensure_retry_topic("g", 2)
    assert topics.manager.create_on_send("%RETRY%g", AUTO_CREATE_TOPIC_KEY, 4) is not None


# ---------------------------------------------------------------------- admin changes


def test_admin_changes_bump_the_data_version_with_the_clock(topics: Topics) -> None:
    start = topics.manager.wrapper().data_version
    topics.clock.now += 5
    topics.manager.create_topic(TopicConfig("A", 3, 3, PERM_READ_WRITE))
    created = topics.manager.wrapper()
    assert "A" in created.topic_config_table
    assert created.data_version.counter == start.counter + 1
    assert created.data_version.timestamp == int(topics.clock.now * 1000)
    topics.manager.create_topic(TopicConfig("A", 6, 6, PERM_READ))  # replaced, not kept
    assert topics.shape("A") == (6, 6, PERM_READ)
    assert topics.manager.delete_topic("A") and not topics.manager.delete_topic("A")
    assert topics.manager.wrapper().data_version.counter == start.counter + 3
    assert topics.changes == 3  # create, replace, delete; not the failed delete


def test_a_creation_registers_that_topic_alone_and_a_deletion_the_whole_table(
    topics: Topics,
) -> None:
    topics.manager.create_topic(TopicConfig("A", 3, 3, PERM_READ_WRITE))
    topics.manager.ensure_retry_topic("g")
    topics.manager.create_on_send("B", AUTO_CREATE_TOPIC_KEY, 4)
    assert topics.manager.delete_topic("A")
    assert topics.registered == [["A"], ["%RETRY%g"], ["B"], None]
