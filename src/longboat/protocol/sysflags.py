"""PullSysFlag and MessageSysFlag bits, and the helpers that read them."""

from __future__ import annotations

from enum import IntFlag


class PullSysFlag(IntFlag):
    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL_MESSAGE = 0x10

    @classmethod
    def build(
        cls, *, commit_offset: bool, suspend: bool, subscription: bool, lite_pull: bool = False
    ) -> int:
        flag = 0
        if commit_offset:
            flag |= cls.COMMIT_OFFSET
        if suspend:
            flag |= cls.SUSPEND
        if subscription:
            flag |= cls.SUBSCRIPTION
        if lite_pull:
            flag |= cls.LITE_PULL_MESSAGE
        return flag


class MessageSysFlag:
    COMPRESSED = 0x1
    MULTI_TAGS = 0x2
    TRANSACTION_NOT_TYPE = 0x0
    TRANSACTION_PREPARED_TYPE = 0x4
    TRANSACTION_COMMIT_TYPE = 0x8
    TRANSACTION_ROLLBACK_TYPE = 0xC
    BORNHOST_V6 = 0x10
    STOREHOSTADDRESS_V6 = 0x20
    NEED_UNWRAP = 0x40
    INNER_BATCH = 0x80
    COMPRESSION_TYPE_MASK = 0x700
    COMPRESSION_LZ4 = 0x100
    COMPRESSION_ZSTD = 0x200
    COMPRESSION_ZLIB = 0x300

    @staticmethod
    def transaction_type(sys_flag: int) -> int:
        return sys_flag & 0xC

    @staticmethod
    def is_consumable_transaction_type(sys_flag: int) -> bool:
        """Only plain and committed messages enter consume queues."""
        return sys_flag & 0xC in (0x0, 0x8)

    @staticmethod
    def clear_transaction(sys_flag: int) -> int:
        return sys_flag & ~0xC
