"""LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42) over remoting: decode, ask the lock table
(`state/queue_locks.py`, where the states and invariants are), encode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.broker.state.queue_locks import QueueLockTable
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.table_bodies import LockBatchRequest, encode_lock_batch_response
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.feature_host import FeatureHost


class LockProcessor:
    """The two request handlers over one lock table."""

    def __init__(self, table: QueueLockTable) -> None:
        self.table = table

    def lock_batch(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        req = LockBatchRequest.from_json(cmd.body)
        granted = self.table.lock(req.consumer_group, req.client_id, req.mq_set)
        return cmd.make_response(body=encode_lock_batch_response(granted))

    def unlock_batch(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        req = LockBatchRequest.from_json(cmd.body)
        self.table.unlock(req.consumer_group, req.client_id, req.mq_set)
        return cmd.make_response()


# Lapsed locks are dropped from memory this often; correctness never depends on it.
_EXPIRE_EVERY_S = 60.0


def install(controller: FeatureHost) -> None:
    processor = LockProcessor(QueueLockTable())
    controller.router.register(RequestCode.LOCK_BATCH_MQ, processor.lock_batch)
    controller.router.register(RequestCode.UNLOCK_BATCH_MQ, processor.unlock_batch)
    controller.add_periodic(_EXPIRE_EVERY_S, processor.table.expire)
