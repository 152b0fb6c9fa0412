"""PullSysFlag and MessageSysFlag bits, and the helpers that read them."""

from __future__ import annotations


class PullSysFlag:
    """Plain ints, not an IntFlag: every pull sets these on the client and tests two or three
    on the broker, and each operation on an IntFlag runs the enum module's Python code."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL_MESSAGE = 0x10

    @staticmethod
    def build(
        *, commit_offset: bool, suspend: bool, subscription: bool, lite_pull: bool = False
    ) -> int:
        return (
            commit_offset * PullSysFlag.COMMIT_OFFSET
            | suspend * PullSysFlag.SUSPEND
            | subscription * PullSysFlag.SUBSCRIPTION
            | lite_pull * PullSysFlag.LITE_PULL_MESSAGE
        )


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
