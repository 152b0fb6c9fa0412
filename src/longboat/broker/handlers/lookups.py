"""Message lookups: VIEW_MESSAGE_BY_ID (33) by commit-log offset and QUERY_MESSAGE (12) by key.

Both answer with stored records, exactly the bytes a pull carries.  A client finds a message
by its offset id (broker address + commit-log offset, so VIEW goes straight to the record) or
by a business key / UNIQ_KEY through the store's key index.  The index is a hash table: the
store re-checks every candidate's topic, key and time, so a reply never carries strangers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from longboat.remoting import Connection
from longboat.store import MessageStore

if TYPE_CHECKING:
    from longboat.broker.feature_host import FeatureHost

# RocketMQ's defaultQueryMaxNum: what a unique-key query gets whatever it asked, and the cap
# on a key query (the store's maxMsgsNumBatch is 64; a reply of 32 whole records is plenty).
DEFAULT_QUERY_MAX_NUM = 32


class LookupProcessor:
    def __init__(self, store: MessageStore, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._clock = clock

    def view_by_id(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = ViewMessageRequestHeader.from_ext(cmd.ext_fields)
        record = self.store.read_record(header.offset)
        if record is None:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {header.offset}"
            )
        return cmd.make_response(body=bytes(record))

    def query_by_key(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = QueryMessageRequestHeader.from_ext(cmd.ext_fields)
        max_num = DEFAULT_QUERY_MAX_NUM
        if not header.uniqueKeyQuery and header.maxNum > 0:
            max_num = min(header.maxNum, DEFAULT_QUERY_MAX_NUM)
        records = self.store.query_by_key(
            header.topic, header.key, max_num, header.beginTimestamp, header.endTimestamp
        )
        # The index is written in-line with every append, so it is current as of now.
        ext = QueryMessageResponseHeader(
            indexLastUpdateTimestamp=int(self._clock() * 1000),
            indexLastUpdatePhyoffset=self.store.dispatched_physical_offset,
        ).to_ext()
        if not records:
            return cmd.make_response(
                ResponseCode.QUERY_NOT_FOUND,
                f"no message of topic {header.topic} has key {header.key!r} stored between "
                f"{header.beginTimestamp} and {header.endTimestamp}",
                ext_fields=ext,
            )
        return cmd.make_response(ext_fields=ext, body=b"".join(records))


def install(controller: FeatureHost) -> None:
    processor = LookupProcessor(controller.store)
    controller.router.register(RequestCode.VIEW_MESSAGE_BY_ID, processor.view_by_id)
    controller.router.register(RequestCode.QUERY_MESSAGE, processor.query_by_key)
