"""Differential scenarios over gRPC, with RocketMQ's official Python client 5.1.2, of what the
remoting scenarios compare with Longboat's client: filters (`tag_filters`, `sql_filters`),
transactions (`transactions`) and bad input (`bad_input`), as a gRPC user meets them.
Run against Longboat's gRPC endpoint and RocketMQ 5.3.3's proxy only (RocketMQ 4.9.7 has no
gRPC). The client runs on a worker thread with an event loop of its own (`_on_own_loop`).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc
from rocketmq import (
    ClientConfiguration,
    Credentials,
    FilterExpression,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)
from rocketmq import Message as GrpcMessage
from rocketmq import Producer as GrpcProducer
from rocketmq.grpc_protocol import Code, FilterType
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub
from rocketmq.v5.exception import ClientException
from rocketmq.v5.util import MessageIdCodec

from client.client_e2e import unique
from differential.harness import WAIT_S, Observation, Target, new_topic
from differential.scenarios5 import _grpc_message, _on_own_loop, _receive_all, _start_settled

FOUR_MIB = 4 * 1024 * 1024
# Labelled without "|", which a Markdown table cell cannot hold as it is.
FILTERS = {
    "tag TagA or TagB": FilterExpression("TagA || TagB"),
    "sql n > 4": FilterExpression("n > 4", FilterType.SQL),
    "sql color = 'red' AND TAGS = 'TagA'": FilterExpression(
        "color = 'red' AND TAGS = 'TagA'", FilterType.SQL
    ),
}
# Sent in this order; "end" matches every filter, so a group has all it gets once "end" came.
FILTERED = [
    ("a1-red", "TagA", {"n": "1", "color": "red"}),
    ("b5-blue", "TagB", {"n": "5", "color": "blue"}),
    ("c7", "TagC", {"n": "7"}),
    ("untagged9-red", None, {"n": "9", "color": "red"}),
    ("a-abc-red", "TagA", {"n": "abc", "color": "red"}),
    ("end", "TagA", {"n": "100", "color": "red"}),
]


def _config(endpoint: str) -> ClientConfiguration:
    return ClientConfiguration(endpoint, Credentials(), request_timeout=10)


def _grpc_refusal(call: Callable[[], object], *subjects: str) -> Observation:
    """ "ok", or what a user learns from the official client's exception: its class, the
    status code it carries (None when the client refused before the wire, or raised an
    exception of its own over the endpoint's answer), and whether its message names each of
    `subjects`."""
    try:
        call()
    except Exception as exc:
        code = exc.code if isinstance(exc, ClientException) else None
        text = str(exc.args[0]) if exc.args else ""
        return {
            "exception": type(exc).__name__,
            "code": None if code is None else Code.Name(code),
            "names_subject": all(s in text for s in subjects),
        }
    return {"exception": "ok"}


async def grpc_python5_filters(target: Target) -> Observation:
    """SimpleConsumers of three new groups on one topic, started before anything is sent: one
    subscribed with the tag expression `TagA || TagB`, two with SQL92 expressions over user
    properties (`enablePropertyFilter=true` on both), one of them naming TAGS; the bodies each
    receives, in order."""
    assert target.grpc_endpoint is not None
    topic = await new_topic(target.namesrv)
    return await asyncio.to_thread(_on_own_loop, _filters_on, target.grpc_endpoint, topic)


def _filters_on(endpoint: str, topic: str) -> Observation:
    config = _config(endpoint)
    consumers = {
        label: SimpleConsumer(config, unique("py5_filter_g"), {topic: f}, await_duration=2)
        for label, f in FILTERS.items()
    }
    producer = GrpcProducer(config, (topic,))
    started: list[SimpleConsumer | GrpcProducer] = []
    try:
        for client in (*consumers.values(), producer):
            _start_settled(client)
            started.append(client)
        for body, tag, properties in FILTERED:
            msg = _grpc_message(topic, body.encode(), **({"tag": tag} if tag else {}))
            for name, value in properties.items():
                msg.add_property(name, value)
            producer.send(msg)
        return {
            f"received by {label}": [d[0] for d in _receive_all(consumer, {"end"})]
            for label, consumer in consumers.items()
        }
    finally:
        for client in reversed(started):
            client.shutdown()


class _Ledger(TransactionChecker):
    """The durable truth a check reads: each body's decision. RocketMQ 5 may check a half the
    producer already decided (it writes decisions in batches), so every body has one; what
    was asked is recorded."""

    def __init__(self, decisions: dict[str, TransactionResolution]) -> None:
        self.decisions = decisions
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def check(self, message: GrpcMessage) -> TransactionResolution:
        body = message.body.decode()
        with self._lock:
            self.asked.append(body)
        return self.decisions[body]


async def grpc_python5_transactions(target: Target) -> Observation:
    """The official client's transactional producer on a topic of type TRANSACTION: halves
    committed and rolled back by the producer, and two it never ends, decided by its
    TransactionChecker when the broker checks them back (after 1 s on both), one each way; a
    SimpleConsumer started first receives what became visible, ended by a committed "end"
    sent once the checked-back commit came (a plain message is not the topic's type)."""
    assert target.grpc_endpoint is not None
    topic = await new_topic(target.namesrv, message_type="TRANSACTION")
    return await asyncio.to_thread(
        _on_own_loop, _transactions_on, target.grpc_endpoint, topic, unique("py5_tx_g")
    )


def _transactions_on(endpoint: str, topic: str, group: str) -> Observation:
    commit, rollback = TransactionResolution.COMMIT, TransactionResolution.ROLLBACK
    undecided = {"unknown-then-commit": commit, "unknown-then-rollback": rollback}
    ledger = _Ledger({"commit": commit, "rollback": rollback, "end": commit, **undecided})
    config = _config(endpoint)
    consumer = SimpleConsumer(config, group, {topic: FilterExpression()}, await_duration=2)
    _start_settled(consumer)
    producer = GrpcProducer(config, (topic,), checker=ledger)
    producer.startup()
    try:
        transactions = {body: producer.begin_transaction() for body in ("commit", "rollback")}
        transactions.update({body: producer.begin_transaction() for body in undecided})
        receipts = {
            body: producer.send(_grpc_message(topic, body.encode()), transaction)
            for body, transaction in transactions.items()
        }
        transactions["commit"].commit()
        transactions["rollback"].rollback()
        deadline = time.monotonic() + WAIT_S
        while not set(undecided) <= set(ledger.asked) and time.monotonic() < deadline:
            time.sleep(0.1)
        deliveries = _receive_all(consumer, {"unknown-then-commit"})
        asked = sorted(set(ledger.asked) & set(undecided))
        end = producer.begin_transaction()
        producer.send(_grpc_message(topic, b"end"), end)
        end.commit()
        deliveries += _receive_all(consumer, {"end"})
    finally:
        producer.shutdown()
        consumer.shutdown()
    committed = next(d[2] for d in deliveries if d[0] == "commit")
    return {
        "half sends: transaction id given": [bool(r.transaction_id) for r in receipts.values()],
        "undecided halves checked back": asked,
        "visible, in order": [d[0] for d in deliveries],
        "a visible id is the half's id": committed.message_id == receipts["commit"].message_id,
        "committed: message type": GrpcMessage.message_type_desc(committed.message_type),
        "committed: user property names": sorted(committed.properties),
    }


async def grpc_python5_bad_input(target: Target) -> Observation:
    """What the official client raises for a send to an unknown topic, to an illegal topic
    name, of a body over 4 MiB (the client checks the limit the endpoint's settings give);
    a receive by a group nobody created and by an illegal group name; a NORMAL message to a
    FIFO topic and a FIFO one (with a message group) to a NORMAL topic. Then what the
    endpoint answers where the client hides the answer (an unknown topic's route) or refuses
    before the wire (an illegal topic name, a body over 4 MiB, NORMAL to a FIFO topic)."""
    assert target.grpc_endpoint is not None
    ns = target.namesrv
    normal, fifo = await new_topic(ns), await new_topic(ns, message_type="FIFO")
    return await asyncio.to_thread(_on_own_loop, _bad_input_on, target.grpc_endpoint, normal, fifo)


def _bad_input_on(endpoint: str, normal: str, fifo: str) -> Observation:
    config = _config(endpoint)
    missing, illegal = unique("NoSuchTopic"), "bad topic!"
    seen: Observation = {}
    producer = GrpcProducer(config, (normal, fifo))
    producer.startup()
    try:
        seen["send: unknown topic"] = _grpc_refusal(
            lambda: producer.send(_grpc_message(missing, b"x")), missing
        )
        seen["send: illegal topic name"] = _grpc_refusal(
            lambda: producer.send(_grpc_message(illegal, b"x")), illegal
        )
        seen["send: body over 4 MiB"] = _grpc_refusal(
            lambda: producer.send(_grpc_message(normal, b"x" * (FOUR_MIB + 1))), str(FOUR_MIB)
        )
        seen["send: NORMAL to a FIFO topic"] = _grpc_refusal(
            lambda: producer.send(_grpc_message(fifo, b"x")), fifo
        )
        seen["send: FIFO to a NORMAL topic"] = _grpc_refusal(
            lambda: producer.send(_grpc_message(normal, b"x", message_group="G")), normal
        )
        seen.update(_endpoint_answers(config, producer.sign(), missing, illegal, normal, fifo))
    finally:
        producer.shutdown()
    for label, group in (("unknown group", unique("never_seen_g")), ("illegal group", "bad g!")):
        seen[f"receive: {label}"] = _grpc_refusal(
            functools.partial(_receive_once, config, group, normal), group
        )
    return seen


def _endpoint_answers(
    config: ClientConfiguration, metadata: Any, missing: str, illegal: str, normal: str, fifo: str
) -> Observation:
    """What the endpoint itself answers (status code, whether its message names the
    subject) where the client hides it or refuses before the wire: raw requests through the
    client package's stub, signed as the running producer whose settings it holds."""
    channel = grpc.insecure_channel(
        config.rpc_endpoints.facade, options=[("grpc.max_send_message_length", -1)]
    )
    stub = MessagingServiceStub(channel)
    seen: Observation = {}
    try:
        route = stub.QueryRoute(
            svc.QueryRouteRequest(
                topic=pb.Resource(name=missing), endpoints=config.rpc_endpoints.endpoints
            ),
            metadata=metadata,
            timeout=10,
        )
        seen["endpoint: route of an unknown topic"] = _status(route.status, missing)
        for label, topic, body, subject in (
            ("send to an illegal topic name", illegal, b"x", illegal),
            ("send a body over 4 MiB", normal, b"x" * (FOUR_MIB + 1), str(FOUR_MIB)),
            ("send NORMAL to a FIFO topic", fifo, b"x", fifo),
        ):
            sent = stub.SendMessage(_raw_normal(topic, body), metadata=metadata, timeout=20)
            seen[f"endpoint: {label}"] = _status(sent.status, subject)
    finally:
        channel.close()
    return seen


def _raw_normal(topic: str, body: bytes) -> Any:
    """A SendMessageRequest of one NORMAL message, as the client builds it."""
    msg = pb.Message(topic=pb.Resource(name=topic), body=body)
    sp = msg.system_properties
    sp.message_id = MessageIdCodec().next_message_id()
    sp.message_type = pb.MessageType.NORMAL
    sp.body_encoding = pb.Encoding.IDENTITY
    sp.born_timestamp.GetCurrentTime()
    sp.born_host = "127.0.0.1"
    return svc.SendMessageRequest(messages=[msg])


def _status(status: Any, subject: str) -> Observation:
    return {"code": Code.Name(status.code), "names_subject": subject in status.message}


def _receive_once(config: ClientConfiguration, group: str, topic: str) -> None:
    """One receive by a SimpleConsumer of `group` subscribed to `topic`, started for it."""
    consumer = SimpleConsumer(config, group, {topic: FilterExpression()}, await_duration=1)
    _start_settled(consumer)
    try:
        consumer.receive(1, 10)
    finally:
        consumer.shutdown()


SCENARIOS_GRPC = {
    "grpc_python5_filters": grpc_python5_filters,
    "grpc_python5_transactions": grpc_python5_transactions,
    "grpc_python5_bad_input": grpc_python5_bad_input,
}
