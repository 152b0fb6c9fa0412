"""The user commands end to end: click's runner against a real name server and broker."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Cluster, start_cluster
from longboat.client import ClientConfig, Message
from longboat.client.admin import QueueOffset
from longboat.client.producer import Producer
from longboat.client.sync import Admin, LitePullConsumer
from longboat.dashboard.server import DashboardServer

from .invoke import Invoke, cli_against
from .processes import ServerProcess


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = start_cluster(tmp_path_factory.mktemp("cli-store"))
    yield started
    started.stop()


@pytest.fixture
def longboat(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """Runs `longboat ARGS` in-process against the cluster (through $LONGBOAT_NAMESRV)."""
    return cli_against(cluster.namesrv_addr, monkeypatch)


def admin(cluster: Cluster) -> Admin:
    return Admin(config=ClientConfig([cluster.namesrv_addr], client_ip="127.0.0.1"))


def test_lines_produced_are_consumed_intact_once_per_group(longboat, cluster) -> None:
    lines = ["first line", "ünïcödé ✓", "[bold]not markup[/]", "last"]
    sent = longboat("produce", "-t", "CliLines", input="\n".join(lines) + "\n\n")
    assert "sent 4 message(s)" in sent.stdout
    got = longboat("consume", "-t", "CliLines", "-g", "cli-lines", "--from", "earliest", "-n", "4")
    assert sorted(got.stdout.splitlines()) == sorted(lines)
    assert "offsets committed" in got.stderr
    # Committed: the group has nothing left, and says so.
    again = longboat("consume", "-t", "CliLines", "-g", "cli-lines", "--idle-timeout", "1")
    assert again.stdout == ""
    with admin(cluster) as a:
        progress = a.group_progress("cli-lines", "CliLines")
    assert sum(p.consumer_offset or 0 for p in progress) == 4
    assert sum(p.lag or 0 for p in progress) == 0


def test_generated_batches_keys_tags_and_lookups(longboat) -> None:
    sent = longboat(
        "produce",
        "-t",
        "CliGen",
        "-n",
        "40",
        "--size",
        "32",
        "--batch",
        "8",
        "--keys",
        "gen-{i}",
        "--tags",
        "TagA",
        "--show-ids",
    )
    ids = re.findall(r"^([0-9A-F]{32}) CliGen@", sent.stdout, re.M)
    assert len(ids) == 40
    records = [
        json.loads(line)
        for line in longboat(
            "consume",
            "-t",
            "CliGen",
            "-g",
            "cli-gen",
            "--from",
            "earliest",
            "-n",
            "40",
            "--format",
            "json",
        ).stdout.splitlines()
    ]
    assert sorted(r["msgId"] for r in records) == sorted(ids)
    assert {r["tags"] for r in records} == {"TagA"}
    assert all(len(r["body"]) == 32 for r in records)

    found = json.loads(longboat("message", "find", "--key", "gen-7", "--format", "json").stdout)
    assert found["body"].startswith("message 7 ") and found["keys"] == ["gen-7"]
    by_id = json.loads(longboat("message", "get", ids[7], "--format", "json").stdout)
    assert by_id["msgId"] == ids[7]
    by_offset = longboat("message", "get", by_id["offsetMsgId"], "-t", "CliGen")
    assert ids[7] in by_offset.stdout

    missing = longboat("message", "find", "--key", "gen-none", "-t", "CliGen", code=1)
    assert missing.stderr.count("\n") == 1
    assert "error (not found): no message with key 'gen-none' in topic CliGen" in missing.stderr


def test_tag_filter(longboat) -> None:
    for tag in ("A", "B", "C"):
        longboat("produce", "-t", "CliTags", "--tags", tag, input=f"tagged {tag}\n")
    got = longboat(
        "consume",
        "-t",
        "CliTags",
        "-g",
        "cli-tags",
        "--from",
        "earliest",
        "--tags",
        "A || C",
        "-n",
        "2",
    )
    assert sorted(got.stdout.splitlines()) == ["tagged A", "tagged C"]


def test_user_mistakes_are_usage_errors_said_at_once(longboat) -> None:
    """A bad group or a reserved topic is the caller's mistake: said locally, never as a
    retriable broker fault."""
    longboat("topic", "create", "-t", "CliMistakes", "--queues", "1")
    for args in (
        ("consume", "-t", "CliMistakes", "-g", "bad group", "--from", "earliest", "-n", "1"),
        ("consume", "-t", "CliMistakes", "-g", "bad group", "-n", "1"),
        ("produce", "-t", "SCHEDULE_TOPIC_XXXX", "-n", "1"),
        ("produce", "-t", "%DLQ%g", "-n", "1"),
    ):
        refused = longboat(*args, code=1)
        assert "error (usage)" in refused.stderr, args
        assert "retriable" not in refused.stderr and "SYSTEM_ERROR" not in refused.stderr


def test_topics(longboat) -> None:
    created = longboat("topic", "create", "-t", "CliTopic", "--queues", "3")
    assert "CliTopic" in created.stdout
    listed = longboat("topic", "list").stdout
    assert re.search(
        r"CliTopic\s*\S\s*normal\s*\S\s*broker-\d+\s*\S\s*3\s*\S\s*3\s*\S\s*rw", listed
    )
    assert "TBW102" not in listed and "TBW102" in longboat("topic", "list", "--all").stdout
    longboat("produce", "-t", "CliTopic", "-n", "6", "--batch", "6")
    updated = longboat("topic", "update", "-t", "CliTopic", "--write-queues", "2", "--perm", "r")
    assert re.search(r"2\s*\S\s*3\s*\S\s*r-", updated.stdout)
    described = longboat("topic", "describe", "-t", "CliTopic").stdout
    assert re.search(r"total\s*\S(\s*\S){3}\s*6\s", described)
    refused = longboat("topic", "create", "-t", "TBW102", code=1)
    assert refused.stderr.startswith("error (usage): cannot create topic") and (
        "system topic" in refused.stderr
    )
    missing = longboat("topic", "update", "-t", "CliNoSuchTopic", "--perm", "r", code=1)
    assert "create it first" in missing.stderr and "(not retriable)" in missing.stderr
    unknown = longboat("topic", "describe", "-t", "CliNoSuchTopic", code=1)
    assert "TOPIC_NOT_EXIST" in unknown.stderr and unknown.stderr.count("\n") == 1


def test_fewer_read_queues_holding_unconsumed_messages_need_shrink(longboat, cluster) -> None:
    broker = cluster.config.broker_name
    longboat("topic", "create", "-t", "CliShrink", "--queues", "4")
    longboat("produce", "-t", "CliShrink", "-n", "8")
    with admin(cluster) as a:
        per_queue = {s.mq.queue_id: s.messages for s in a.topic_status("CliShrink")}
    assert sum(per_queue.values()) == 8
    hidden = per_queue[2] + per_queue[3]
    # Only the permission: the queues stay as they are.
    longboat("topic", "update", "-t", "CliShrink", "--perm", "rw")
    refused = longboat("topic", "update", "-t", "CliShrink", "--queues", "2", code=1)
    assert refused.stderr == (
        f"error (refused): topic CliShrink: {hidden} unconsumed message(s) in {broker} queue 2, "
        f"{broker} queue 3, which no consumer would read with fewer read queues; consume them "
        "first or confirm the shrink (--shrink)\n"
    )
    with admin(cluster) as a:
        assert len(a.topic_status("CliShrink")) == 4
    # Once a group has consumed them, nothing is hidden: no confirmation is asked.
    longboat("consume", "-t", "CliShrink", "-g", "cli-shrink", "--from", "earliest", "-n", "8")
    longboat("topic", "update", "-t", "CliShrink", "--queues", "3")
    longboat("produce", "-t", "CliShrink", "-n", "3")
    longboat("topic", "update", "-t", "CliShrink", "--queues", "2", code=1)
    longboat("topic", "update", "-t", "CliShrink", "--queues", "2", "--shrink")
    with admin(cluster) as a:
        assert len(a.topic_status("CliShrink")) == 2


def test_a_long_topic_name_is_printed_whole_to_a_pipe(longboat, monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS")  # as in `longboat topic list | grep ...`: no width is known
    name = "CliTrialOrders" + "X" * 90
    longboat("topic", "create", "-t", name, "--queues", "1")
    assert name in longboat("topic", "list").stdout


def test_group_reset_describe_and_refusal_while_members_run(longboat, cluster) -> None:
    longboat("produce", "-t", "CliGroup", "-n", "10", "--batch", "10")
    longboat("consume", "-t", "CliGroup", "-g", "cli-group", "--from", "earliest", "-n", "10")
    assert "cli-group" in longboat("group", "list").stdout
    described = longboat("group", "describe", "-g", "cli-group").stdout
    assert "0 live member(s)" in described
    assert re.search(r"total(\s*\S){5}\s*0\s", described)

    reset = longboat("group", "reset", "-g", "cli-group", "--to", "earliest")
    assert "CliGroup" in reset.stdout
    assert re.search(
        r"total(\s*\S){5}\s*10\s", longboat("group", "describe", "-g", "cli-group").stdout
    )
    # Subscribed before it starts, so its first heartbeat carries the subscription.
    member = LitePullConsumer(
        "cli-group", config=ClientConfig([cluster.namesrv_addr], client_ip="127.0.0.1")
    )
    member.subscribe("CliGroup")
    with member:
        live = longboat("group", "describe", "cli-group", "-t", "CliGroup").stdout
        assert "1 live member(s), clustering" in live and "subscribes CliGroup (*)" in live
        assert "127.0.0.1@" in live and "PYTHON" in live
        refused = longboat("group", "reset", "-g", "cli-group", "--to", "latest", code=1)
        assert refused.stderr.startswith("error (refused): group cli-group has 1 live member")
        assert "or pass --force" in refused.stderr and "force=True" not in refused.stderr
        # `consume --from` moves the offsets too, and says what it offers instead.
        consume = longboat(
            "consume", "-t", "CliGroup", "-g", "cli-group", "--from", "latest", code=1
        )
        assert consume.stderr.startswith("error (refused): group cli-group has 1 live member")
        assert "or consume without --from" in consume.stderr and "force" not in consume.stderr
        forced = longboat(
            "group", "reset", "-g", "cli-group", "--to", "latest", "--force", "--queue", "0"
        )
        assert len(re.findall(r"CliGroup", forced.stdout)) == 1
        as_json = longboat(
            "group",
            "reset",
            "cli-group",
            "--to",
            "0",
            "-t",
            "CliGroup",
            "--queue",
            "1",
            "--force",
            "--format",
            "json",
        )
        [moved] = json.loads(as_json.stdout)
        assert moved == {"topic": "CliGroup", "broker": moved["broker"], "queue": 1, "offset": 0}


def test_a_queue_without_a_stored_offset_shows_none_and_no_lag(longboat, cluster) -> None:
    longboat("topic", "create", "-t", "CliHalfCommitted", "--queues", "3")
    longboat("produce", "-t", "CliHalfCommitted", "-n", "9")
    with admin(cluster) as a:
        [q0, q1, q2] = sorted(a.topic_status("CliHalfCommitted"), key=lambda s: s.mq.queue_id)
        # The group stores an offset on queues 0 (at 1) and 2 (at 0), none on queue 1.
        a.reset_offsets("cli-half", "CliHalfCommitted", QueueOffset(1), queue_id=0)
        a.reset_offsets("cli-half", "CliHalfCommitted", QueueOffset(0), queue_id=2)
        progress = {p.mq.queue_id: p for p in a.group_progress("cli-half", "CliHalfCommitted")}
    # Queues 0 and 2 have a stored offset and the rest of the queue as lag (a stored 0 is an
    # offset, the whole queue its lag); queue 1 has neither, not its whole length as lag.
    assert (progress[0].consumer_offset, progress[0].lag) == (1, q0.max_offset - 1)
    assert (progress[1].consumer_offset, progress[1].lag) == (None, None)
    assert (progress[2].consumer_offset, progress[2].lag) == (0, q2.max_offset)
    assert q1.max_offset > 0
    described = longboat("group", "describe", "cli-half", "-t", "CliHalfCommitted").stdout
    rows = [line for line in described.splitlines() if "CliHalfCommitted" in line]
    assert ["no offset stored" in row for row in rows] == [False, True, False]
    total = q0.max_offset - 1 + q2.max_offset
    assert re.search(rf"total(\s*\S){{5}}\s*{total}\s", described)
    as_json = longboat(
        "group", "describe", "cli-half", "-t", "CliHalfCommitted", "--format", "json"
    )
    document = json.loads(as_json.stdout)
    assert [(q["consumerOffset"], q["lag"]) for q in document["progress"]] == [
        (1, q0.max_offset - 1),
        (None, None),
        (0, q2.max_offset),
    ]
    assert document["lag"] == total


async def send_own_copies(cluster: Cluster, topic: str, count: int) -> None:
    config = ClientConfig([cluster.namesrv_addr], client_ip="127.0.0.1")
    async with Producer("cli-retry-copies", config=config) as producer:
        for i in range(count):
            assert (await producer.send_own(Message(topic, b"copy %d" % i))).ok


def test_a_groups_total_lag_leaves_out_its_retry_queue(longboat, cluster) -> None:
    retry = "%RETRY%cli-retried"
    longboat("topic", "create", "-t", "CliRetried", "--queues", "1")
    longboat("topic", "create", "-t", retry, "--queues", "1")
    longboat("produce", "-t", "CliRetried", "-n", "3")
    # An application may not send to a retry topic: the group's failures are Longboat's own
    # sends (a consumer's retry copies), as the sender below makes them.
    asyncio.run(send_own_copies(cluster, retry, 5))
    with admin(cluster) as a:
        a.reset_offsets("cli-retried", "CliRetried", QueueOffset(1))
        a.reset_offsets("cli-retried", retry, QueueOffset(0))
    # 2 messages to read on the topic; the retry queue's 5 are the group's own failures, shown
    # on their row but not in the total, as `group list` and the JSON count it.
    described = longboat("group", "describe", "cli-retried").stdout
    lags = {
        cells[0]: cells[5]
        for line in described.splitlines()
        if len(cells := [c.strip() for c in line.strip("│").split("│")]) == 8
    }
    assert (lags[retry], lags["CliRetried"], lags["total"]) == ("5", "2", "2")
    as_json = longboat("group", "describe", "cli-retried", "--format", "json").stdout
    assert json.loads(as_json)["lag"] == 2
    listed = json.loads(longboat("group", "list", "--format", "json").stdout)
    assert {g["group"]: g["lag"] for g in listed}["cli-retried"] == 2


def test_the_readme_session(longboat) -> None:
    # README.md's first commands, as written: `{i}` counts from 0.
    longboat("produce", "-t", "Greetings", "--keys", "greet-{i}", input="hello\nworld\n")
    got = longboat("consume", "-t", "Greetings", "-g", "readme", "--from", "earliest", "-n", "2")
    assert sorted(got.stdout.splitlines()) == ["hello", "world"]
    assert "hello" in longboat("message", "find", "--key", "greet-0").stdout
    assert "world" in longboat("message", "find", "--key", "greet-1").stdout


def test_json_carries_bodies_and_names_as_they_are(longboat) -> None:
    # What rich would turn into an emoji or read as markup (a stray closing tag is an error).
    body = "pay :moneybag: [bold]9.99[/bold] :smile: [/]"
    sent = longboat("produce", "-t", "CliVerbatim", "--keys", "v:ok:", "--show-ids", input=body)
    [msg_id] = re.findall(r"^([0-9A-F]{32}) CliVerbatim@", sent.stdout, re.M)
    found = json.loads(longboat("message", "find", "--key", "v:ok:", "--format", "json").stdout)
    by_id = longboat("message", "get", msg_id, "-t", "CliVerbatim", "--format", "json").stdout
    assert found["body"] == json.loads(by_id)["body"] == body
    assert found["keys"] == ["v:ok:"]
    table = longboat("message", "get", msg_id, "-t", "CliVerbatim").stdout
    assert body in table and "v:ok:" in table


def test_every_listing_has_a_json_format(longboat, cluster) -> None:
    longboat("topic", "create", "-t", "CliJson", "--queues", "2")
    longboat("produce", "-t", "CliJson", "-n", "4", "--batch", "4")
    longboat("consume", "-t", "CliJson", "-g", "cli-json", "--from", "earliest", "-n", "4")

    def as_json(*args: str) -> Any:
        return json.loads(longboat(*args, "--format", "json").stdout)

    # The fields docs/cli.md lists, command by command.
    [topic] = [t for t in as_json("topic", "list") if t["topic"] == "CliJson"]
    assert topic.keys() == {"topic", "kind", "route"} and topic["kind"] == "normal"
    assert topic["route"].keys() == {"queues", "brokers"}
    assert [(q["read"], q["write"], q["perm"]) for q in topic["route"]["queues"]] == [(2, 2, "rw")]
    [route_broker] = topic["route"]["brokers"]
    assert route_broker.keys() == {"broker", "addrs"}
    assert route_broker["addrs"] == {"0": cluster.broker_addr}
    described = as_json("topic", "describe", "-t", "CliJson")
    assert described.keys() == {"topic", "route", "queues"}
    assert {k for q in described["queues"] for k in q} == {
        "broker",
        "queue",
        "min",
        "max",
        "messages",
    }
    assert sum(q["messages"] for q in described["queues"]) == 4
    [listed] = [g for g in as_json("group", "list") if g["group"] == "cli-json"]
    assert listed == {"group": "cli-json", "members": 0, "lag": 0}
    group = as_json("group", "describe", "cli-json", "-t", "CliJson")
    assert group.keys() == {
        "group",
        "members",
        "subscriptions",
        "messageModel",
        "consumeType",
        "progress",
        "lag",
    }
    assert group["members"] == [] and group["lag"] == 0
    assert {k for q in group["progress"] for k in q} == {
        "topic",
        "broker",
        "queue",
        "brokerOffset",
        "consumerOffset",
        "lag",
        "lagTime",
        "lastTimestamp",
        "retry",
    }
    assert sum(q["consumerOffset"] for q in group["progress"]) == 4
    # The queue that got nothing has consumed nothing: no time, not the epoch.
    assert sorted(q["lastTimestamp"] is None for q in group["progress"]) == [False, True]
    longboat("produce", "-t", "CliJson", "-n", "2")
    waiting = [q["lagTime"] for q in as_json("group", "describe", "cli-json")["progress"]]
    assert all(isinstance(t, float) and round(t, 3) == t for t in waiting), waiting
    [broker] = as_json("cluster")
    assert broker.keys() == {
        "cluster", "broker", "id", "role", "addr", "topics", "lag", "behindSeconds",
        "behindSecondsAtLeast",
    }  # fmt: skip
    assert (broker["addr"], broker["role"], broker["id"]) == (cluster.broker_addr, "master", 0)
    assert broker["lag"] is None and broker["behindSeconds"] is None  # a master
    assert broker["topics"] >= 1


def test_cluster(longboat, cluster) -> None:
    out = longboat("cluster").stdout
    assert cluster.broker_addr in out and "master" in out


def test_unreachable_name_server_is_one_line(longboat) -> None:
    result = longboat("topic", "list", "--namesrv", "127.0.0.1:1", code=1)
    assert result.stderr.startswith("error (network): no name server reachable")
    assert result.stderr.count("\n") == 1


def test_the_name_server_from_namesrv_addr_as_rocketmq_tools_read_it(
    longboat, cluster, monkeypatch
) -> None:
    monkeypatch.delenv("LONGBOAT_NAMESRV")
    monkeypatch.setenv("NAMESRV_ADDR", cluster.namesrv_addr)
    assert cluster.broker_addr in longboat("cluster").stdout


def test_addresses_that_are_not_a_name_server_say_what_they_are(longboat, cluster) -> None:
    broker = longboat("topic", "list", "--namesrv", cluster.broker_addr, code=1)
    assert broker.stderr.startswith("error (usage): ")
    assert "looks like a broker, not a name server" in broker.stderr
    assert "namesrv_addrs" not in broker.stderr

    # The dashboard's port, as a user who mixed up the two would give it.
    web = DashboardServer(ClientConfig([cluster.namesrv_addr], client_ip="127.0.0.1"), port=0)
    cluster.runner.run(web.start())
    try:
        http = longboat("topic", "list", "--namesrv", f"127.0.0.1:{web.port}", code=1)
    finally:
        cluster.runner.run(web.stop())
    assert "the peer answered in HTTP: this looks like a web port" in http.stderr
    assert http.stderr.count("\n") == 1 and "frame of" not in http.stderr


def test_a_producer_id_without_a_topic_is_searched_in_every_topic(longboat) -> None:
    sent = longboat("produce", "-t", "CliEveryTopic", "--show-ids", input="anywhere\n")
    [msg_id] = re.findall(r"^([0-9A-F]{32}) CliEveryTopic@", sent.stdout, re.M)
    assert "anywhere" in longboat("message", "get", msg_id).stdout
    missing = longboat("message", "get", "not-an-id", code=1)
    assert missing.stderr.startswith("error (not found): not-an-id is not an offset id, and no ")
    assert "pass the topic" not in missing.stderr


def test_usage_errors(longboat) -> None:
    both = longboat("produce", "-t", "X", "-n", "1", "--file", "-", code=2)
    assert "either --file" in both.stderr
    bad_time = longboat("consume", "-t", "X", "-g", "g", "--from", "yesterday", code=2)
    assert "not an ISO 8601 time" in bad_time.stderr


def test_ctrl_c_stops_consume_with_every_printed_message_committed(
    longboat, cluster, tmp_path
) -> None:
    longboat("produce", "-t", "CliCtrlC", input="".join(f"body-{i}\n" for i in range(20)))
    proc = ServerProcess(
        [
            "consume",
            "-t",
            "CliCtrlC",
            "-g",
            "cli-ctrl-c",
            "--from",
            "earliest",
            "--namesrv",
            cluster.namesrv_addr,
        ],
        tmp_path,
    )
    try:
        proc.wait_until(lambda out: len(re.findall(r"^body-\d+$", out, re.M)) == 20, "20 bodies")
        assert proc.interrupt(signal.SIGINT) == 0
    finally:
        proc.kill()
    assert "consumed 20 message(s) from CliCtrlC as cli-ctrl-c; offsets committed" in proc.output
    with admin(cluster) as a:
        progress = a.group_progress("cli-ctrl-c", "CliCtrlC")
    assert sum(p.consumer_offset or 0 for p in progress) == 20


def test_verbose_adds_the_traceback(longboat) -> None:
    quiet = longboat("cluster", "--namesrv", "127.0.0.1:1", code=1)
    assert "Traceback" not in quiet.stderr
    loud = longboat("--verbose", "cluster", "--namesrv", "127.0.0.1:1", code=1)
    assert "Traceback" in loud.stderr
    assert loud.stderr.rstrip().splitlines()[-1].startswith("error (network):")


def test_file_input_and_delayed_delivery(longboat, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("from a file\nsecond\n")
    longboat("produce", "-t", "CliFile", "--file", str(lines))
    longboat("produce", "-t", "CliFile", "--delay-level", "1", input="delayed\n")
    got = longboat(
        "consume",
        "-t",
        "CliFile",
        "-g",
        "cli-file",
        "--from",
        "earliest",
        "-n",
        "3",
        "--format",
        "json",
    )
    records = [json.loads(line) for line in got.stdout.splitlines()]
    assert sorted(r["body"] for r in records) == ["delayed", "from a file", "second"]
    delayed = next(r for r in records if r["body"] == "delayed")
    # Level 1 is 1 s: the delivered copy was stored a second after the producer sent it.
    assert delayed["storeTimestamp"] - delayed["bornTimestamp"] >= 900


def test_group_reset_to_an_explicit_offset_of_one_queue(longboat, cluster) -> None:
    longboat("topic", "create", "-t", "CliExact", "--queues", "1")
    longboat("produce", "-t", "CliExact", input="".join(f"e{i}\n" for i in range(5)))
    longboat("consume", "-t", "CliExact", "-g", "cli-exact", "--from", "earliest", "-n", "5")
    needs_queue = longboat("group", "reset", "cli-exact", "--to", "3", code=1)
    assert "give -t TOPIC and --queue Q" in needs_queue.stderr
    out_of_range = longboat(
        "group", "reset", "cli-exact", "--to", "9", "-t", "CliExact", "--queue", "0", code=1
    )
    assert "outside" in out_of_range.stderr and "range 0..5" in out_of_range.stderr
    longboat("group", "reset", "cli-exact", "--to", "3", "-t", "CliExact", "--queue", "0")
    again = longboat("consume", "-t", "CliExact", "-g", "cli-exact", "-n", "2")
    assert again.stdout.splitlines() == ["e3", "e4"]
