"""What a request touches, and with which permission: RocketMQ's PlainAccessValidator.parse.

Groups appear as their `%RETRY%<group>` topic.  A code not listed touches no resource: it
needs only a valid signature (or a white address).  Beyond RocketMQ, SEND_BATCH_MESSAGE needs
PUB on its topic like any send (RocketMQ 4.9 checks nothing for it).
"""

from __future__ import annotations

from longboat.acl.plain_acl import PUB, SUB
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.bodies import HeartbeatData
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX

# Codes only an admin account may send (RocketMQ's Permission.ADMIN_CODE).
BROKER_ADMIN_CODES: frozenset[int] = frozenset({17, 25, 215, 200, 207})
# Name-server codes that change what clients are told (register, unregister, delete, kv,
# config, wipe): admin only when the name server's ACL is on.
NAMESRV_WRITE_CODES: frozenset[int] = frozenset({100, 102, 103, 104, 205, 216, 217, 318})


def retry_topic(group: str | None) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}"


def resources(cmd: RemotingCommand) -> dict[str, int]:
    """Resource → permission the request needs; ProtocolError for a body that must be read
    (a heartbeat) and does not parse."""
    ext = cmd.ext_fields
    code = cmd.code
    if code in (
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
    ):
        topic = ext.get("topic") if code == RequestCode.SEND_MESSAGE else ext.get("b")
        topic = topic or ""
        return {topic: SUB if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else PUB}
    if code == RequestCode.CONSUMER_SEND_MSG_BACK:
        return {retry_topic(ext.get("group")): SUB}
    if code in (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE):
        return {ext.get("topic", ""): SUB, retry_topic(ext.get("consumerGroup")): SUB}
    if code == RequestCode.QUERY_MESSAGE:
        return {ext.get("topic", ""): SUB}
    if code == RequestCode.HEART_BEAT:
        needed: dict[str, int] = {}
        for consumer in HeartbeatData.from_json(cmd.body).consumer_data_set:
            needed[retry_topic(consumer.group_name)] = SUB
            for sub in consumer.subscription_data_set:
                needed[sub.topic] = SUB
        return needed
    if code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        group = ext.get("consumerGroup")
        return {retry_topic(group): SUB} if group else {}
    if code == RequestCode.UPDATE_CONSUMER_OFFSET:
        return {retry_topic(ext.get("consumerGroup")): SUB, ext.get("topic", ""): SUB}
    return {}
