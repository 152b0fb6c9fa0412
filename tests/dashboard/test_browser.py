"""The dashboard in headless Chromium against a real name server and broker.

Every page loads with real data; the lag chart moves while a consumer catches up; an offset
reset and a DLQ resend done through the page take effect on the broker (checked through the
admin API).  One cluster, dashboard and browser serve the whole module (about half a minute).

With LONGBOAT_SCREENSHOTS=DIR the tests also save the screenshots docs/dashboard.md shows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from client.test_tracing_e2e import traced_round_trip
from conftest import Cluster, start_cluster
from dashboard.conftest import WAIT_MS, cell_texts, screenshot
from longboat.client import ClientConfig, Message, MessageExt
from longboat.client.admin import Admin, QueueOffset
from longboat.client.consume_from import ConsumeFrom
from longboat.client.producer import Producer
from longboat.client.push.consumer import PushConsumer
from longboat.dashboard.server import DashboardServer
from longboat.protocol.properties import Prop
from longboat.protocol.types import PERM_READ

pytestmark = pytest.mark.browser
T = TypeVar("T")

TOPIC = "DashOrders"
GROUP = "dash-readers"
SENT = 24


@dataclass
class Site:
    cluster: Cluster
    dashboard: DashboardServer
    config: ClientConfig
    page: Any

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return self.cluster.runner.run(coro, timeout)

    def admin(self, fn: Callable[[Admin], Coroutine[Any, Any, T]]) -> T:
        async def go() -> T:
            async with Admin(config=self.config) as admin:
                return await fn(admin)

        return self.run(go())

    def open(self, hash_path: str) -> Any:
        # A fresh load (the same hash again would not even navigate).
        self.page.goto("about:blank")
        self.page.goto(f"{self.dashboard.url}#{hash_path}")
        self.page.wait_for_selector("[data-loaded=true]", timeout=WAIT_MS)
        return self.page

    def shot(self, name: str) -> None:
        screenshot(self.page, name)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, chromium_page: Any) -> Iterator[Site]:
    cluster = start_cluster(tmp_path_factory.mktemp("dashboard-store"))
    config = ClientConfig(
        [cluster.namesrv_addr], client_ip="127.0.0.1", persist_consumer_offset_interval=0.2
    )
    dashboard = DashboardServer(config, "127.0.0.1", 0, sample_interval=0.5)
    cluster.runner.run(dashboard.start())
    try:
        site = Site(cluster, dashboard, config, chromium_page)
        site.run(seed(config))
        yield site
    finally:
        cluster.runner.run(dashboard.stop())
        cluster.stop()


async def seed(config: ClientConfig) -> None:
    """A topic with SENT messages (keys order-N, JSON bodies) and a group that consumed them."""
    async with Admin(config=config) as admin:
        await admin.create_topic(TOPIC, queue_nums=4)
    async with Producer("dash-seed", config=config) as producer:
        for i in range(SENT):
            body = b'{"order": %d, "item": "rope"}' % i
            await producer.send(Message(TOPIC, body, tags="new", keys=f"order-{i}"))
    await consume_all(config, SENT)


async def consume_all(config: ClientConfig, expected: int) -> list[MessageExt]:
    """Run a member of GROUP until the group has no lag on TOPIC and `expected` arrived."""
    got: list[MessageExt] = []
    consumer = PushConsumer(GROUP, config=config, consume_from=ConsumeFrom.FIRST_OFFSET)
    consumer.subscribe(TOPIC, "*")

    async def listener(msgs: list[MessageExt], ctx: object) -> None:
        got.extend(msgs)

    consumer.register_listener(listener)
    await consumer.start()
    try:
        async with Admin(config=config) as admin:
            deadline = time.monotonic() + 30
            while True:
                progress = await admin.group_progress(GROUP, TOPIC, with_lag_time=False)
                if len(got) >= expected and progress and not sum(p.lag or 0 for p in progress):
                    return got
                assert time.monotonic() < deadline, f"consumed {len(got)} of {expected}"
                await asyncio.sleep(0.1)
    finally:
        await consumer.shutdown()


async def member(config: ClientConfig, group: str, topic: str) -> PushConsumer:
    """A started member of `group` on `topic` that consumes nothing of note."""
    consumer = PushConsumer(group, config=config)
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: object) -> None:
        pass

    consumer.register_listener(listener)
    await consumer.start()
    return consumer


def test_every_page_shows_the_cluster(site: Site) -> None:
    page = site.open("/cluster")
    broker = site.cluster.config.broker_name
    page.wait_for_selector(f"td:text-is('{broker}')", timeout=WAIT_MS)
    cells = cell_texts(page, "td")
    assert site.cluster.broker_addr in cells
    assert "V4_9_8" in cells  # GET_BROKER_RUNTIME_INFO's version, as RocketMQ's brokers say
    site.shot("cluster")

    page = site.open("/topics")
    page.get_by_label("Search topics").fill("dashord")
    page.wait_for_selector(f"a:text-is('{TOPIC}')", timeout=WAIT_MS)
    assert "TBW102" not in cell_texts(page, "td")
    # As `longboat topic list`: brokers, write and read queues, permission.
    row = page.locator("tr", has=page.get_by_role("link", name=TOPIC))
    assert cell_texts(row, "td")[:6] == [
        TOPIC,
        "normal",
        site.cluster.config.broker_name,
        "4",
        "4",
        "rw",
    ]
    site.shot("topics")
    page.get_by_role("link", name=TOPIC).click()
    page.wait_for_selector("#page-topic[data-loaded=true]", timeout=WAIT_MS)
    rows = page.locator("table").first.locator("tbody tr")
    assert rows.count() == 4
    assert sum(int(rows.nth(i).locator("td").nth(3).inner_text()) for i in range(4)) == SENT
    site.shot("topic")

    page = site.open("/groups")
    row = page.locator("tr", has=page.get_by_role("link", name=GROUP))
    row.wait_for(timeout=WAIT_MS)
    assert row.locator("td").nth(3).inner_text() == "0"
    row.get_by_role("link", name=GROUP).click()
    page.wait_for_selector("#page-group[data-loaded=true]", timeout=WAIT_MS)
    offsets = page.locator("table:has(caption:text-is('offsets per queue')) tbody tr")
    consumed = [
        int(offsets.nth(i).locator("td").nth(4).inner_text())
        for i in range(offsets.count())
        if offsets.nth(i).locator("td").first.inner_text() == TOPIC
    ]
    assert sum(consumed) == SENT

    page = site.open("/messages")
    page.get_by_label("Topic (needed for a producer id)").fill(TOPIC)
    page.get_by_label("Key", exact=True).fill("order-7")
    page.get_by_role("button", name="Find by key or time").click()
    card = page.locator("section.message")
    card.wait_for(timeout=WAIT_MS)
    assert card.count() == 1
    assert '"order": 7' in card.locator("pre.body").inner_text()
    card.get_by_label("Show body as").select_option("json")
    assert '"order": 7,\n  "item": "rope"' in card.locator("pre.body").inner_text()
    card.get_by_label("Show body as").select_option("hex")
    assert card.locator("pre.body").inner_text().startswith("000000  7b 22 6f 72")

    # By id: the card adds the delivery state per group.
    offset_id = card.locator("tr:has(td:text-is('offset msg id')) td").nth(1).inner_text()
    page.get_by_label("Message id (producer id or offset id)").fill(offset_id)
    page.get_by_role("button", name="Find by id").click()
    page.wait_for_selector("table:has(caption:text-is('delivery per group'))", timeout=WAIT_MS)
    delivery = page.locator("table:has(caption:text-is('delivery per group')) tbody tr")
    assert cell_texts(delivery.first, "td")[0] == GROUP
    assert cell_texts(delivery.first, "td")[3] == "consumed"
    site.shot("messages")


def test_a_queue_without_a_stored_offset_says_so(site: Site) -> None:
    # The group stores an offset on queue 0 only: the other queues have none, not offset 0
    # and their whole length as lag.
    group = "dash-half"
    site.admin(lambda a: a.reset_offsets(group, TOPIC, QueueOffset(0), queue_id=0))
    page = site.open(f"/group/{group}")
    offsets = page.locator("table:has(caption:text-is('offsets per queue')) tbody tr")
    offsets.first.wait_for(timeout=WAIT_MS)
    rows = [cell_texts(offsets.nth(i), "td") for i in range(offsets.count())]
    assert [(r[2], r[4], r[5]) for r in rows if r[0] == TOPIC] == [
        ("0", "0", rows[0][3]),
        *((str(q), "no offset stored", "-") for q in (1, 2, 3)),
    ]


def test_a_topic_created_sent_to_and_deleted_through_the_page(site: Site) -> None:
    page = site.open("/topics")
    page.get_by_label("Topic", exact=True).fill("DashScratch")
    page.get_by_label("Queues", exact=True).fill("2")
    page.get_by_role("button", name="Create").click()
    page.wait_for_selector("#status :text('created DashScratch')", timeout=WAIT_MS)
    assert len(site.admin(lambda a: a.topic_status("DashScratch"))) == 2

    page.get_by_role("link", name="DashScratch").click()
    page.wait_for_selector("#page-topic[data-loaded=true]", timeout=WAIT_MS)
    page.get_by_label("Body").fill("a test message")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector("#status :text('SEND_OK')", timeout=WAIT_MS)
    status = site.admin(lambda a: a.topic_status("DashScratch"))
    assert sum(q.max_offset for q in status) == 1

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete topic").click()
    page.wait_for_selector("#status :text('deleted DashScratch')", timeout=WAIT_MS)
    assert "DashScratch" not in site.admin(lambda a: a.topics())


def test_the_change_form_starts_from_the_topic_and_asks_before_hiding_messages(
    site: Site,
) -> None:
    async def sixteen_queues_of_two() -> None:
        async with Admin(config=site.config) as admin:
            await admin.create_topic("DashWide", queue_nums=16)
        async with Producer("dash-wide", config=site.config) as producer:
            for i in range(32):
                await producer.send(Message("DashWide", b"wide %d" % i))

    def read_queues() -> list[int]:
        route = site.admin(lambda a: a.route("DashWide"))
        return [q.read_queue_nums for q in route.queue_datas]

    site.run(sixteen_queues_of_two())
    page = site.open("/topic/DashWide")
    form = page.get_by_role("form", name="Change topic")
    assert form.get_by_label("Queues").input_value() == "16"
    assert form.get_by_label("Permission").input_value() == "rw"

    # Only the permission: the 16 queues stay.
    form.get_by_label("Permission").select_option("r")
    form.get_by_role("button", name="Update").click()
    page.wait_for_selector("#status :text('updated DashWide')", timeout=WAIT_MS)
    route = site.admin(lambda a: a.route("DashWide"))
    assert [(q.read_queue_nums, q.perm) for q in route.queue_datas] == [(16, PERM_READ)]

    # Fewer queues would hide 16 unread messages: the page asks, and "no" changes nothing...
    dialogs: list[str] = []

    def answer(accept: bool) -> Callable[[Any], None]:
        def on_dialog(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return on_dialog

    form.get_by_label("Queues").fill("8")
    page.once("dialog", answer(False))
    form.get_by_role("button", name="Update").click()
    page.wait_for_selector("#status :text('not changed')", timeout=WAIT_MS)
    assert "16 unconsumed message(s)" in dialogs[0] and read_queues() == [16]
    # ...and "yes" shrinks.
    page.once("dialog", answer(True))
    form.get_by_role("button", name="Update").click()
    page.wait_for_selector("#status :text('updated DashWide')", timeout=WAIT_MS)
    assert len(dialogs) == 2 and read_queues() == [8]


def test_delivery_lists_the_groups_that_read_the_queue_and_members_show_versions(
    site: Site,
) -> None:
    # A second group, live, reading another topic: it has no say in TOPIC's deliveries.
    site.admin(lambda a: a.create_topic("DashElsewhere", queue_nums=1))
    consumer = site.run(member(site.config, "dash-elsewhere", "DashElsewhere"))
    try:
        page = site.open("/groups")
        page.get_by_role("link", name="dash-elsewhere").wait_for(timeout=WAIT_MS)
        page = site.open("/group/dash-elsewhere")
        members = page.locator("table:has(caption:text-is('members')) tbody tr")
        members.first.wait_for(timeout=WAIT_MS)
        assert cell_texts(members.first, "td")[2:] == ["PYTHON", "V4_9_8"]
    finally:
        site.run(consumer.shutdown(), timeout=60)

    [msg] = site.admin(lambda a: a.messages_by_key(TOPIC, "order-5"))
    page = site.open(f"/messages?id={msg.offset_msg_id}")
    delivery = page.locator("table:has(caption:text-is('delivery per group')) tbody tr")
    delivery.first.wait_for(timeout=WAIT_MS)
    groups = [cell_texts(delivery.nth(i), "td")[0] for i in range(delivery.count())]
    assert GROUP in groups and "dash-elsewhere" not in groups


def test_a_group_that_stored_no_offset_claims_no_lag(site: Site) -> None:
    # A member of a group whose topic does not exist yet: the group is known (its heartbeat
    # made its retry topic) but stored no offset anywhere it reads.
    consumer = site.run(member(site.config, "dash-nothing", "DashNotYet"))
    site.run(consumer.shutdown(), timeout=60)
    page = site.open("/groups")
    row = page.locator("tr", has=page.get_by_role("link", name="dash-nothing"))
    row.wait_for(timeout=WAIT_MS)
    assert cell_texts(row, "td")[:4] == ["dash-nothing", "no offsets", "0", "-"]
    row.get_by_role("link", name="dash-nothing").click()
    page.wait_for_selector("#group-lag:text-is('unknown (no offset stored)')", timeout=WAIT_MS)


def test_the_chart_has_a_colour_key_and_the_site_an_icon(site: Site) -> None:
    page = site.open(f"/group/{GROUP}")
    page.wait_for_selector("#lag-chart svg path.lag", state="attached", timeout=WAIT_MS)

    def colour(selector: str, prop: str) -> str:
        return str(page.eval_on_selector(selector, f"e => getComputedStyle(e)['{prop}']"))

    legend = page.locator("#lag-chart figcaption")
    assert legend.inner_text().split("\n") == [
        "lag, messages (left axis)",
        "consume rate, msg/s (right axis)",
    ]
    for key in ("lag", "rate"):
        line = page.eval_on_selector(
            f"#lag-chart .key.{key}", "e => getComputedStyle(e, '::before').borderTopColor"
        )
        assert line == colour(f"#lag-chart path.{key}", "stroke")
    icon = page.request.get(f"{site.dashboard.url}favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert icon.body().startswith(b"<svg")


def test_a_refresh_keeps_what_is_being_typed(site: Site) -> None:
    topic = "DashTyping"  # its own topic: the other tests count TOPIC's messages
    site.admin(lambda a: a.create_topic(topic, queue_nums=1))
    page = site.open(f"/topic/{topic}")
    queues = page.locator("table:has(caption:text-is('queues')) tbody")
    before = queues.inner_text()
    body = page.locator("#send-body")
    body.fill("")
    body.type("half a")
    page.locator("#send-tags").fill("tag-typed")
    body.focus()

    async def one_more() -> None:
        async with Producer("dash-typing", config=site.config) as producer:
            await producer.send(Message(topic, b"changes the figures"))

    site.run(one_more())
    # The figures changed on the page: a refresh ran while the form held typed text.
    deadline = time.monotonic() + WAIT_MS / 1000
    while queues.inner_text() == before:
        assert time.monotonic() < deadline, "the page did not refresh its figures"
        page.wait_for_timeout(100)
    page.keyboard.type(" sentence")  # the focus stayed in the field
    assert body.input_value() == "half a sentence"
    assert page.locator("#send-tags").input_value() == "tag-typed"


def lag_series(page: Any) -> list[int]:
    text = page.locator("#lag-chart svg").get_attribute("data-lag") or ""
    return [int(v) for v in text.split(",") if v]


def test_reset_refused_while_members_run_then_taken_and_chart_moves(site: Site) -> None:
    page = site.open(f"/group/{GROUP}")

    # A live member (on the cluster's loop, while this thread drives the page).
    consumer = site.run(member(site.config, GROUP, TOPIC))
    try:
        reset_through_page(page, "earliest", expect="refused")
    finally:
        site.run(consumer.shutdown(), timeout=60)
    progress = site.admin(lambda a: a.group_progress(GROUP, TOPIC, with_lag_time=False))
    assert sum(p.lag or 0 for p in progress) == 0, "a refused reset moved offsets"

    # No member now: the reset is taken, and the broker has the group at the queues' starts.
    reset_through_page(page, "earliest", expect="reset 4 queue(s)")
    progress = site.admin(lambda a: a.group_progress(GROUP, TOPIC, with_lag_time=False))
    assert [p.consumer_offset for p in progress] == [0, 0, 0, 0]
    assert sum(p.lag or 0 for p in progress) == SENT

    # The chart shows the lag the reset made, then falls to 0 while a member catches up.
    page.wait_for_function(
        f"(document.querySelector('#lag-chart svg')?.dataset.lag || '').endsWith(',{SENT}')",
        timeout=WAIT_MS,
    )
    site.run(consume_all(site.config, SENT), timeout=60)
    page.wait_for_function(
        "(document.querySelector('#lag-chart svg')?.dataset.lag || '').endsWith(',0')",
        timeout=WAIT_MS,
    )
    series = lag_series(page)
    assert series[-1] == 0 and SENT in series[:-1], series
    site.shot("group")


def reset_through_page(page: Any, to: str, *, expect: str) -> None:
    page.get_by_label("Reset to").select_option(to)
    page.get_by_label("Topic", exact=True).fill(TOPIC)
    page.get_by_role("button", name="Reset offsets").click()
    page.wait_for_selector(f"#status :text('{expect}')", timeout=WAIT_MS)


def test_dlq_resend_through_the_page_reaches_the_group(site: Site) -> None:
    # Dead-letter one stored message the way a consumer's last failed retry does.
    async def dead_letter() -> MessageExt:
        async with Admin(config=site.config) as admin:
            [msg] = await admin.messages_by_key(TOPIC, "order-3")
            addr = await admin.instance.find_master_addr(site.cluster.config.broker_name)
            await admin.instance.api.send_back(addr, msg, GROUP, delay_level=-1)
            return msg

    original = site.run(dead_letter())
    page = site.open(f"/group/{GROUP}")
    dlq = page.locator("#dlq tbody tr", has=page.get_by_role("button", name="Resend"))
    dlq.first.wait_for(timeout=WAIT_MS)
    assert dlq.count() == 1
    assert TOPIC in cell_texts(dlq.first, "td")
    site.shot("dlq")
    dlq.first.get_by_role("button", name="Resend").click()
    page.wait_for_selector(f"#status :text('to group {GROUP}')", timeout=WAIT_MS)

    # On the broker: the group's retry topic holds the copy, naming the original topic...
    async def retry_copies() -> list[MessageExt]:
        async with Admin(config=site.config) as admin:
            found: list[MessageExt] = []
            for status in await admin.topic_status(f"%RETRY%{GROUP}"):
                addr = await admin.instance.find_master_addr(status.mq.broker_name)
                for offset in range(status.min_offset, status.max_offset):
                    found += await admin.instance.api.peek(addr, status.mq, offset)
            return found

    [copy] = site.run(retry_copies())
    assert copy.body == original.body
    assert copy.properties[Prop.RETRY_TOPIC] == TOPIC
    # ...and a member of the group is handed it again, under the original topic.
    got = site.run(consume_all(site.config, 1), timeout=60)
    assert [(m.topic, m.body) for m in got] == [(TOPIC, original.body)]


ACL = """
globalWhiteRemoteAddresses:
accounts:
  - accessKey: dashadmin
    secretKey: dash-secret
    admin: true
"""


def test_acl_brokers_ask_for_keys_and_the_page_uses_them(
    site: Site, loopback_cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL)
    cluster = loopback_cluster(acl_enable=True, plain_acl_file=acl_file)
    dashboard = DashboardServer(ClientConfig([cluster.namesrv_addr], client_ip="127.0.0.1"), port=0)
    cluster.runner.run(dashboard.start())
    try:
        page = site.page
        page.goto("about:blank")
        page.goto(f"{dashboard.url}#/topics")
        page.wait_for_selector("#page-topics[data-loaded=true]", timeout=WAIT_MS)

        def create(topic: str) -> None:
            page.get_by_label("Topic", exact=True).fill(topic)
            page.get_by_role("button", name="Create").click()

        # Unsigned, the broker refuses; the page asks for keys.
        create("AclOrders")
        page.get_by_label("Access key").wait_for(timeout=WAIT_MS)
        site.shot("sign-in")
        page.get_by_label("Access key").fill("dashadmin")
        page.get_by_label("Secret key").fill("dash-secret")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_selector("#user:has-text('access key dashadmin')", timeout=WAIT_MS)
        page.wait_for_selector("#page-topics[data-loaded=true]", timeout=WAIT_MS)
        create("AclOrders")
        page.wait_for_selector("#status :text('created AclOrders')", timeout=WAIT_MS)

        async def route_queues() -> int:
            config = ClientConfig(
                [cluster.namesrv_addr],
                client_ip="127.0.0.1",
                instance_name="acl-check",
                access_key="dashadmin",
                secret_key="dash-secret",
            )
            async with Admin(config=config) as admin:
                return len(await admin.topic_status("AclOrders"))

        assert cluster.runner.run(route_queues()) == 8
    finally:
        cluster.runner.run(dashboard.stop())


def test_a_message_page_shows_its_trace_as_a_timeline(site: Site) -> None:
    trace_topic = "DashTraces"
    ids, producer_group, group = site.run(
        traced_round_trip(site.cluster.namesrv_addr, trace_topic, [b'{"order": "traced"}']), 90
    )
    page = site.open(f"/messages?id={ids[0]}")
    card = page.get_by_role("region", name=f"message {ids[0]}")
    card.get_by_label("Trace topic").fill(trace_topic)
    card.get_by_role("button", name="Show trace").click()
    rows = card.locator("div.trace table tbody tr")
    rows.nth(3).wait_for(timeout=WAIT_MS)
    cells = [[c.strip() for c in rows.nth(i).locator("td").all_inner_texts()] for i in range(4)]
    assert [(r[1], r[2]) for r in cells] == [
        ("sent", producer_group),
        ("stored", "broker"),
        ("delivered", group),
        ("delivered", group),
    ]
    assert [(r[4], r[6]) for r in cells[2:]] == [("0", "failed"), ("1", "success")]
    site.shot("message-trace")


def test_the_topics_page_shows_each_topic_s_in_and_out_rates(site: Site) -> None:
    """And the groups page each group's consume rate."""
    topic, group = "DashRates", "dash-rates"
    site.admin(lambda a: a.create_topic(topic, queue_nums=2))

    async def traffic(stop: asyncio.Event) -> None:
        """A producer sending about 50 messages a second and a group consuming them."""
        consumer = await member(site.config, group, topic)
        try:
            async with Producer("dash-rates-pg", config=site.config) as producer:
                while not stop.is_set():
                    await producer.send(Message(topic, b"tick"))
                    await asyncio.sleep(0.02)
        finally:
            await consumer.shutdown()

    loop = site.cluster.runner.loop
    stop = site.run(make_event())
    running = asyncio.run_coroutine_threadsafe(traffic(stop), loop)
    try:
        page = site.open("/topics")
        page.get_by_label("Search topics").fill("dashrates")
        row = page.locator("tr", has=page.get_by_role("link", name=topic))
        deadline = time.monotonic() + 30
        while True:
            cells = cell_texts(row, "td")
            if len(cells) == 8 and "-" not in cells[6:] and min(map(float, cells[6:])) > 0:
                break
            assert time.monotonic() < deadline, f"no rates shown: {cells}"
            time.sleep(0.5)
        # And the group's consume rate on the groups page.
        page = site.open("/groups")
        row = page.locator("tr", has=page.get_by_role("link", name=group))
        while True:
            cells = cell_texts(row, "td")
            if len(cells) == 5 and cells[4] != "-" and float(cells[4]) > 0:
                break
            assert time.monotonic() < deadline + 30, f"no consume rate shown: {cells}"
            time.sleep(0.5)
    finally:
        loop.call_soon_threadsafe(stop.set)
        running.result(30)


async def make_event() -> asyncio.Event:
    return asyncio.Event()
