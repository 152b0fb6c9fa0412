"""The typed request layer: one coroutine per remoting command the client sends.

Everything above this module speaks in typed values (headers, `MessageQueue`, `PullResult`);
below it is `channel.RequestChannel`, where a request goes out over `RemotingClient` and
failures become the client's exceptions.  Broker commands go to the address they are given —
choosing the broker is the caller's business (see `instance.py`).
"""

from __future__ import annotations

import time

from longboat.client._internal.channel import RequestChannel
from longboat.client.errors import (
    BrokerError,
    NoRouteError,
    broker_error,
)
from longboat.client.message import SendResult, SendStatus
from longboat.client.types import PullResult, PullStatus
from longboat.protocol import ProtocolError, RequestCode, ResponseCode, fastjson
from longboat.protocol.assignment_bodies import MessageRequestModeBody
from longboat.protocol.bodies import (
    ClusterInfo,
    ConsumerConnection,
    HeartbeatData,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)
from longboat.protocol.codes import SEND_STORED_CODES
from longboat.protocol.controller import BrokerReplicasInfo
from longboat.protocol.headers import (
    ConsumerGroupHeader,
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    GetConsumeStatsRequestHeader,
    GetRouteInfoRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    QueueRequestHeader,
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    TopicRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from longboat.protocol.message import MessageExt, decode_record, decode_records
from longboat.protocol.properties import Prop
from longboat.protocol.table_bodies import (
    ConsumeStats,
    LockBatchRequest,
    decode_consumer_id_list,
    decode_kv_table,
    decode_lock_batch_response,
    decode_topic_list,
)
from longboat.protocol.tags import TagExpression
from longboat.protocol.topic_names import AUTO_CREATE_TOPIC_KEY
from longboat.protocol.types import MessageQueue

# Java's answer to GET_CONSUMER_LIST_BY_GROUP for a group with no live member is an error.
_NO_CONSUMER_REMARK = "no consumer"


# A group every RocketMQ broker has from its start (MixAll.TOOLS_CONSUMER_GROUP): pulls made
# for the client's own lookups use it, so they work where groups are not auto-created.
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"


_PULL_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


class ClientAPI(RequestChannel):
    """Typed requests over one `RemotingClient`: one coroutine per remoting command."""

    # ------------------------------------------------------------------ name server

    async def get_route(self, topic: str) -> TopicRouteData:
        """The topic's route; raises NoRouteError when no name server knows it."""
        cmd = self._command(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic).to_ext()
        )
        addr, response = await self._call_namesrv(
            cmd, ok=(ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
        )
        if response.code == ResponseCode.TOPIC_NOT_EXIST or not response.body:
            raise NoRouteError(
                ResponseCode.TOPIC_NOT_EXIST,
                response.remark or f"no route for topic {topic}",
                addr=addr,
                request_code=cmd.code,
            )
        return TopicRouteData.from_json(response.body)

    async def get_cluster_info(self) -> ClusterInfo:
        _, response = await self._call_namesrv(self._command(RequestCode.GET_BROKER_CLUSTER_INFO))
        return ClusterInfo.from_json(response.body)

    async def get_all_topics(self) -> list[str]:
        cmd = self._command(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        _, response = await self._call_namesrv(cmd)
        return decode_topic_list(response.body) if response.body else []

    # ------------------------------------------------------------------ sending

    async def send(
        self,
        addr: str,
        mq: MessageQueue,
        header: SendMessageRequestHeaderV2,
        body: bytes,
        *,
        msg_id: str,
        timeout: float,
    ) -> SendResult:
        """SEND_MESSAGE_V2, or SEND_BATCH_MESSAGE when `header.batch`, to `mq` (its queue id
        is sent, whatever the header's); the stored location."""
        code = RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2
        ext = header.to_ext_for_queue(mq.queue_id)
        cmd = self._command(code, ext, body, broker_name=mq.broker_name)
        response = await self._call(addr, cmd, timeout, ok=SEND_STORED_CODES)
        try:
            rh = SendMessageResponseHeader.from_ext(response.ext_fields)
        except ProtocolError as exc:
            raise BrokerError(
                response.code, f"send answer lacks {exc}", addr=addr, request_code=code
            ) from None
        return SendResult(
            status=SendStatus.from_code(response.code),
            msg_id=msg_id,
            offset_msg_id=rh.msgId,
            message_queue=MessageQueue(mq.topic, mq.broker_name, rh.queueId),
            queue_offset=rh.queueOffset,
            region_id=rh.MSG_REGION,
            transaction_id=rh.transactionId,
            recall_handle=rh.recallHandle,
            trace_on=rh.TRACE_ON != "false",
        )

    async def send_oneway(
        self, addr: str, mq: MessageQueue, header: SendMessageRequestHeaderV2, body: bytes
    ) -> None:
        """`send` without an answer."""
        code = RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2
        ext = header.to_ext_for_queue(mq.queue_id)
        await self.invoke_oneway(addr, self._command(code, ext, body, broker_name=mq.broker_name))

    async def recall_message(
        self,
        addr: str,
        header: RecallMessageRequestHeader,
        timeout: float,
        *,
        broker_name: str | None = None,
    ) -> str:
        """RECALL_MESSAGE (370) to the broker group `broker_name` (the handle's): the recalled
        message's id (BrokerError with RocketMQ's code and remark when the broker refuses)."""
        cmd = self._command(RequestCode.RECALL_MESSAGE, header.to_ext(), broker_name=broker_name)
        response = await self._call(addr, cmd, timeout)
        return RecallMessageResponseHeader.from_ext(response.ext_fields).msgId

    async def end_transaction(
        self, addr: str, header: EndTransactionRequestHeader, *, broker_name: str | None = None
    ) -> None:
        """END_TRANSACTION (37): a half's commit / rollback / unknown, one-way as Java sends
        it (a lost one is recovered by the broker's check-back)."""
        cmd = self._command(RequestCode.END_TRANSACTION, header.to_ext(), broker_name=broker_name)
        await self.invoke_oneway(addr, cmd)

    # ------------------------------------------------------------------ pulling

    async def pull(
        self,
        addr: str,
        mq: MessageQueue,
        offset: int,
        *,
        group: str,
        max_msgs: int,
        timeout: float,
        expression: TagExpression | str = "*",
        sql: str | None = None,
        sub_version: int = 0,
        suspend: float = 0.0,
        commit_offset: int | None = None,
        lite: bool = False,
        decode: bool = True,
    ) -> PullResult:
        """PULL_MESSAGE of up to `max_msgs` messages of `mq` from `offset` on, for `group`.

        The one place a pull header and its flags are built.  The subscription (`expression`,
        or the SQL92 selector `sql`, which the broker evaluates exactly) always travels with
        the pull, so no heartbeat is needed first; `suspend` > 0
        lets the broker hold the pull that many seconds until a message arrives (`timeout`
        must exceed it); `commit_offset` asks the broker to store the group's offset with the
        pull; `lite` marks a lite-pull consumer's pull, as Java's does.  With `decode`,
        messages are decompressed, checked against the exact tags of `expression` (the broker
        only filtered by hash) and carry MIN/MAX_OFFSET; without it only `body` is set."""
        tags = TagExpression.parse(expression) if isinstance(expression, str) else expression
        header = PullMessageRequestHeader.pulling(
            group=group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            offset=offset,
            max_msgs=max_msgs,
            suspend_ms=int(suspend * 1000),
            commit_offset=commit_offset,
            subscription=tags.expression if sql is None else sql,
            expression_type="TAG" if sql is None else "SQL92",
            sub_version=sub_version,
            lite=lite,
        )
        cmd = self._command(RequestCode.PULL_MESSAGE, header.to_ext(), broker_name=mq.broker_name)
        response = await self._call(addr, cmd, timeout, ok=_PULL_STATUS)
        try:
            rh = PullMessageResponseHeader.from_ext(response.ext_fields)
        except ProtocolError as exc:
            raise BrokerError(
                response.code, f"pull answer lacks {exc}", addr=addr, request_code=cmd.code
            ) from None
        result = PullResult(
            status=_PULL_STATUS[response.code],
            next_begin_offset=rh.nextBeginOffset,
            min_offset=rh.minOffset,
            max_offset=rh.maxOffset,
            suggest_which_broker_id=rh.suggestWhichBrokerId,
            body=response.body,
        )
        if decode and result.status is PullStatus.FOUND:
            min_s, max_s = str(rh.minOffset), str(rh.maxOffset)
            keep = result.messages.append
            every_tag = tags.matches_all
            for msg in decode_records(response.body, decompress=True):
                if every_tag or tags.matches_tag(msg.tags):
                    props = msg.properties
                    props[Prop.MIN_OFFSET] = min_s
                    props[Prop.MAX_OFFSET] = max_s
                    keep(msg)
        return result

    # ------------------------------------------------------------------ offsets

    async def query_consumer_offset(
        self,
        addr: str,
        group: str,
        mq: MessageQueue,
        *,
        set_zero_if_not_found: bool | None = None,
    ) -> int | None:
        """The group's committed offset, or None when the broker has none.

        `set_zero_if_not_found=False` asks brokers that understand it (Longboat, RocketMQ 5) not
        to answer 0 for a new group (RocketMQ #334); 4.x brokers ignore it (see
        `consume_from.committed_offset`, which tells their 0 apart).
        """
        header = QueryConsumerOffsetRequestHeader(
            group, mq.topic, mq.queue_id, set_zero_if_not_found
        )
        cmd = self._command(
            RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext(), broker_name=mq.broker_name
        )
        response = await self._call(
            addr, cmd, ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        offset = OffsetResponseHeader.from_ext(response.ext_fields).offset
        return offset if offset >= 0 else None

    async def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, *, oneway: bool = False
    ) -> None:
        header = UpdateConsumerOffsetRequestHeader(group, mq.topic, mq.queue_id, offset)
        cmd = self._command(
            RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext(), broker_name=mq.broker_name
        )
        if oneway:
            await self.invoke_oneway(addr, cmd)
        else:
            await self._call(addr, cmd)

    async def _queue_offset(
        self, addr: str, mq: MessageQueue, code: int, ext: dict[str, str]
    ) -> int:
        response = await self._call(addr, self._command(code, ext, broker_name=mq.broker_name))
        return OffsetResponseHeader.from_ext(response.ext_fields).offset

    async def get_max_offset(self, addr: str, mq: MessageQueue) -> int:
        """The offset the next message stored in the queue will get."""
        ext = QueueRequestHeader(mq.topic, mq.queue_id).to_ext()
        return await self._queue_offset(addr, mq, RequestCode.GET_MAX_OFFSET, ext)

    async def get_min_offset(self, addr: str, mq: MessageQueue) -> int:
        ext = QueueRequestHeader(mq.topic, mq.queue_id).to_ext()
        return await self._queue_offset(addr, mq, RequestCode.GET_MIN_OFFSET, ext)

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int) -> int:
        """The queue offset of the first message stored at or after `timestamp_ms` (the
        queue's end when there is none).

        Longboat's broker answers exactly that; a RocketMQ 4.x broker answers the message
        stored *closest* to the time, which may be the one just before it.  So the answer's
        store time is read (`peek`) and the offset moved one on when that message is older
        than the time."""
        ext = SearchOffsetRequestHeader(mq.topic, mq.queue_id, timestamp_ms).to_ext()
        offset = await self._queue_offset(addr, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext)
        found = await self.peek(addr, mq, offset)
        if found and found[0].store_timestamp < timestamp_ms:
            return offset + 1
        return offset

    async def peek(
        self, addr: str, mq: MessageQueue, offset: int, count: int = 1
    ) -> list[MessageExt]:
        """Up to `count` messages of `mq` from `offset`, read for a lookup: pulled as
        RocketMQ's TOOLS_CONSUMER group, committing nothing, never held."""
        result = await self.pull(
            addr,
            mq,
            offset,
            group=TOOLS_CONSUMER_GROUP,
            max_msgs=count,
            timeout=self.config.request_timeout,
        )
        return result.messages

    # ------------------------------------------------------------------ client registration

    async def heartbeat(self, addr: str, data: HeartbeatData) -> int:
        """HEART_BEAT; returns the broker's version ordinal."""
        response = await self._call(
            addr, self._command(RequestCode.HEART_BEAT, body=data.to_json())
        )
        return response.version

    async def unregister_client(
        self,
        addr: str,
        client_id: str,
        *,
        producer_group: str | None = None,
        consumer_group: str | None = None,
    ) -> None:
        header = UnregisterClientRequestHeader(client_id, producer_group, consumer_group)
        await self._call(addr, self._command(RequestCode.UNREGISTER_CLIENT, header.to_ext()))

    async def get_consumer_ids(self, addr: str, group: str) -> list[str]:
        """Client ids of the group's live members as this broker sees them ([] for none)."""
        cmd = self._command(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP, ConsumerGroupHeader(group).to_ext()
        )
        response = await self.invoke(addr, cmd)
        if response.code == ResponseCode.SUCCESS:
            return decode_consumer_id_list(response.body) if response.body else []
        if response.code == ResponseCode.SYSTEM_ERROR and _NO_CONSUMER_REMARK in (
            response.remark or ""
        ):
            return []
        raise broker_error(response.code, response.remark, addr=addr, request_code=cmd.code)

    async def get_consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        """The group's live members and subscriptions as this broker sees them (empty when
        none is online: CONSUMER_NOT_ONLINE)."""
        cmd = self._command(
            RequestCode.GET_CONSUMER_CONNECTION_LIST, ConsumerGroupHeader(group).to_ext()
        )
        response = await self._call(
            addr, cmd, ok=(ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE)
        )
        if response.code != ResponseCode.SUCCESS or not response.body:
            return ConsumerConnection()
        return ConsumerConnection.from_json(response.body)

    # ------------------------------------------------------------------ consuming helpers

    async def send_back(
        self,
        addr: str,
        msg: MessageExt,
        group: str,
        *,
        delay_level: int = 0,
        max_reconsume_times: int | None = None,
        timeout: float | None = None,
        broker_name: str | None = None,
    ) -> None:
        """CONSUMER_SEND_MSG_BACK: the broker re-delivers `msg` (of a queue of the broker
        group `broker_name`) later through %RETRY%group (or moves it to %DLQ%group); delay 0
        lets the broker pick, <0 goes to the DLQ."""
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=group,
            delayLevel=delay_level,
            originMsgId=msg.msg_id,
            originTopic=msg.topic,
            unitMode=False,
            maxReconsumeTimes=max_reconsume_times,
        )
        cmd = self._command(
            RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext(), broker_name=broker_name
        )
        await self._call(addr, cmd, timeout)

    async def lock_batch(
        self, addr: str, group: str, client_id: str, mqs: list[MessageQueue]
    ) -> list[MessageQueue]:
        """LOCK_BATCH_MQ: the subset of `mqs` this client now holds the broker's lock on."""
        body = LockBatchRequest(group, client_id, list(mqs)).to_json()
        response = await self._call(addr, self._command(RequestCode.LOCK_BATCH_MQ, body=body))
        return decode_lock_batch_response(response.body) if response.body else []

    async def unlock_batch(
        self,
        addr: str,
        group: str,
        client_id: str,
        mqs: list[MessageQueue],
        *,
        oneway: bool = False,
    ) -> None:
        body = LockBatchRequest(group, client_id, list(mqs)).to_json()
        cmd = self._command(RequestCode.UNLOCK_BATCH_MQ, body=body)
        if oneway:
            await self.invoke_oneway(addr, cmd)
        else:
            await self._call(addr, cmd)

    # ------------------------------------------------------------------ lookups

    async def view_message(self, addr: str, commit_log_offset: int) -> MessageExt:
        """VIEW_MESSAGE_BY_ID: the record at a commit-log offset of the broker at `addr`."""
        cmd = self._command(
            RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(commit_log_offset).to_ext()
        )
        response = await self._call(addr, cmd)
        return decode_record(response.body, decompress=True)

    async def query_message(
        self,
        addr: str,
        topic: str,
        key: str,
        *,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int | None = None,
        unique_key: bool = False,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE by KEYS entry (or by UNIQ_KEY with `unique_key`) on one broker.

        The broker's index is a hash table, so its answer is re-checked here: only messages
        whose key really matches are returned ([] when none)."""
        header = QueryMessageRequestHeader(
            topic=topic,
            key=key,
            maxNum=max_num,
            beginTimestamp=begin_ms,
            endTimestamp=int(time.time() * 1000) if end_ms is None else end_ms,
            uniqueKeyQuery=unique_key,
        )
        cmd = self._command(RequestCode.QUERY_MESSAGE, header.to_ext())
        response = await self._call(
            addr, cmd, ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
        )
        if response.code != ResponseCode.SUCCESS or not response.body:
            return []
        found = decode_records(response.body, decompress=True)
        if unique_key:
            return [m for m in found if m.topic == topic and m.uniq_key == key]
        return [m for m in found if m.topic == topic and key in m.key_list]

    # ------------------------------------------------------------------ admin

    async def create_subscription_group(self, addr: str, config: SubscriptionGroupConfig) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on one broker (create, or replace its settings)."""
        cmd = self._command(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.to_json())
        await self._call(addr, cmd)

    async def set_message_request_mode(self, addr: str, setting: MessageRequestModeBody) -> None:
        """SET_MESSAGE_REQUEST_MODE on one broker: whether the (topic, group) it names is
        assigned to be pulled or popped when a client lets the broker assign."""
        cmd = self._command(RequestCode.SET_MESSAGE_REQUEST_MODE, body=setting.to_json())
        await self._call(addr, cmd)

    async def create_topic(self, addr: str, config: TopicConfig) -> None:
        """UPDATE_AND_CREATE_TOPIC on one broker (create, or update queue counts and perm)."""
        header = CreateTopicRequestHeader(
            topic=config.topic_name,
            defaultTopic=AUTO_CREATE_TOPIC_KEY,
            readQueueNums=config.read_queue_nums,
            writeQueueNums=config.write_queue_nums,
            perm=config.perm,
            topicFilterType=config.topic_filter_type,
            topicSysFlag=config.topic_sys_flag,
            order=config.order,
        )
        await self._call(addr, self._command(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext()))

    async def get_topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        """GET_ALL_TOPIC_CONFIG: the broker's topic table (system topics included)."""
        response = await self._call(addr, self._command(RequestCode.GET_ALL_TOPIC_CONFIG))
        if not response.body:
            return {}
        return TopicConfigSerializeWrapper.from_json(response.body).topic_config_table

    async def get_runtime_info(self, addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO: the broker's version, disk use and TPS, under RocketMQ's
        names (`brokerVersionDesc`, `commitLogDiskRatio`, `putTps`, ...)."""
        response = await self._call(addr, self._command(RequestCode.GET_BROKER_RUNTIME_INFO))
        return decode_kv_table(response.body) if response.body else {}

    async def get_broker_config(self, addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: every setting of the broker under its broker.conf key, as
        RocketMQ writes them (`key=value` lines; its store's settings included)."""
        response = await self._call(addr, self._command(RequestCode.GET_BROKER_CONFIG))
        text = response.body.decode("utf-8", "replace") if response.body else ""
        pairs = (line.partition("=") for line in text.splitlines())
        return {key.strip(): value.strip() for key, sep, value in pairs if sep}

    async def get_sync_state_data(
        self, controller_addr: str, broker_names: list[str]
    ) -> BrokerReplicasInfo:
        """CONTROLLER_GET_SYNC_STATE_DATA: each group's master, epochs and SyncStateSet, from
        the leading controller (a follower answers CONTROLLER_NOT_LEADER: a BrokerError)."""
        cmd = self._command(
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=fastjson.dumps(broker_names)
        )
        response = await self._call(controller_addr, cmd)
        return BrokerReplicasInfo.from_json(response.body)

    async def delete_topic_in_broker(self, addr: str, topic: str) -> None:
        cmd = self._command(RequestCode.DELETE_TOPIC_IN_BROKER, TopicRequestHeader(topic).to_ext())
        await self._call(addr, cmd)

    async def delete_topic_in_namesrv(self, topic: str) -> None:
        """DELETE_TOPIC_IN_NAMESRV, on every name server (each keeps its own routes)."""
        cmd_ext = TopicRequestHeader(topic).to_ext()
        for addr in self.config.namesrv_addrs:
            await self._call(addr, self._command(RequestCode.DELETE_TOPIC_IN_NAMESRV, cmd_ext))

    async def get_consume_stats(
        self, addr: str, group: str, topic: str | None = None
    ) -> ConsumeStats:
        header = GetConsumeStatsRequestHeader(group, topic)
        response = await self._call(
            addr, self._command(RequestCode.GET_CONSUME_STATS, header.to_ext())
        )
        return ConsumeStats.from_json(response.body) if response.body else ConsumeStats()
