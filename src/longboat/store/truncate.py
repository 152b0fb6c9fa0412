"""Cutting a closed store's commit log at an offset (RocketMQ 5's truncation on handshake).

A former master that rejoins its group as a slave may hold a tail its old slaves never got:
records past the point where its log and the new master's agree.  They were never
acknowledged under `allAckInSyncStateSet` and must go before it follows the new master, or its
log would hold two different records at one offset.  The cut is done on the files while the
store is closed: the log is zeroed from `offset` (later segment files deleted), and the
checkpoint is moved back to `offset`, so the next `open()` re-verifies from there and drops
every consume-queue entry past the new end (`recovery.py`); the index keeps entries for cut
records, which lookups already discard by re-reading the record.
"""

from __future__ import annotations

from longboat.store.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from longboat.store.config import StoreConfig
from longboat.store.segments import SegmentChain


def truncate_to(config: StoreConfig, offset: int) -> None:
    """Cut the closed store's commit log at `offset` (nothing changes below it; a log that
    ends before it only has its checkpoint moved back, which costs a re-verification of
    nothing at the next open)."""
    chain = SegmentChain(config.commit_log_dir, config.commit_log_segment_size)
    chain.load()
    try:
        if chain.segments and offset < chain.segments[-1].end:
            chain.truncate(max(offset, chain.min_offset))
    finally:
        chain.close()
    checkpoint = load_checkpoint(config.root_dir) or Checkpoint()
    checkpoint.commit_log_flushed = min(checkpoint.commit_log_flushed, offset)
    checkpoint.dispatched = min(checkpoint.dispatched, offset)
    save_checkpoint(config.root_dir, checkpoint)
