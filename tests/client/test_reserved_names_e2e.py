"""Names and properties the system reserves are refused in the client, before anything is sent,
as RocketMQ's Validators.checkMessage and Message.putUserProperty refuse them; a missing topic
on `update_topic` is not worth a retry."""

from __future__ import annotations

import pytest

from longboat.client import ClientUsageError, Message, NoRouteError
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.transaction import LocalTransactionState, TransactionProducer

from .client_e2e import config_for, unique

RESERVED_TOPICS = (
    "SCHEDULE_TOPIC_XXXX",
    "TBW102",
    "RMQ_SYS_TRACE_TOPIC",
    "rmq_sys_mine",
    "%RETRY%foo",
    "%DLQ%g",
)


async def test_sends_to_reserved_topics_are_refused_locally(namesrv: str) -> None:
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for topic in RESERVED_TOPICS:
            with pytest.raises(ClientUsageError, match="invalid") as info:
                await producer.send(Message(topic, b"x"))
            assert not info.value.retriable, topic
            with pytest.raises(ClientUsageError):
                await producer.send_oneway(Message(topic, b"x"))
            with pytest.raises(ClientUsageError):
                await producer.send_batch([Message(topic, b"x")])
        # The producer still sends where it may.
        assert (await producer.send(Message(unique("Ok"), b"x"))).ok
    async with Admin(config=config_for(namesrv)) as admin:
        assert not any(t.startswith(("%RETRY%foo", "%DLQ%g")) for t in await admin.topics())


@pytest.mark.parametrize(
    "properties",
    [
        {"UNIQ_KEY": "mine"},
        {"DELAY": "3"},
        {"TRAN_MSG": "true"},
        {"na\x01me": "v"},
        {"name": "va\x02lue"},
        {"name": "va\x01lue"},
    ],
)
async def test_reserved_or_broken_properties_are_refused_locally(
    namesrv: str, properties: dict[str, str]
) -> None:
    topic = unique("Props")
    config = config_for(namesrv)
    async with Producer(unique("pg"), config=config) as producer:
        with pytest.raises(ClientUsageError, match="property") as info:
            await producer.send(Message(topic, b"x", properties=properties))
        assert not info.value.retriable
        with pytest.raises(ClientUsageError, match="property"):
            await producer.send_batch([Message(topic, b"x", properties=properties)])
    transactional = TransactionProducer(
        unique("tg"), config=config, check_listener=lambda msg: LocalTransactionState.UNKNOWN
    )
    async with transactional:
        with pytest.raises(ClientUsageError, match="property"):
            await transactional.send_in_transaction(
                Message(topic, b"x", properties=properties),
                lambda msg, arg: LocalTransactionState.COMMIT_MESSAGE,
            )


async def test_admin_refuses_system_topics_and_a_missing_topic_is_not_retriable(
    namesrv: str,
) -> None:
    async with Admin(config=config_for(namesrv)) as admin:
        for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX"):
            with pytest.raises(ClientUsageError, match="system topic") as refused:
                await admin.create_topic(topic)
            assert not refused.value.retriable
            with pytest.raises(ClientUsageError, match="system topic"):
                await admin.update_topic(topic, perm=4)
        with pytest.raises(NoRouteError, match="create it first") as missing:
            await admin.update_topic(unique("Missing"), read_queue_nums=2)
        assert not missing.value.retriable and "(not retriable)" in str(missing.value)
