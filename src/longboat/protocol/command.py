"""The remoting command: the one value every frame carries, in both directions.

A command is a request when flag bit 0 is clear and a response when it is set; bit 1 marks a
one-way request (no answer expected).  Requests and responses share one socket in both
directions, so the flag bit — never the opaque number — tells them apart.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from longboat.protocol.codes import VERSION_4_9_8, LanguageCode, ResponseCode, SerializeType

RESPONSE_FLAG = 0x1
ONEWAY_FLAG = 0x2


@dataclass(slots=True)
class RemotingCommand:
    code: int
    opaque: int = 0
    flag: int = 0
    language: LanguageCode = LanguageCode.PYTHON
    version: int = VERSION_4_9_8
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    # The serialization the command arrived in (or will be written in).  Responses copy
    # the request's type, as the Java server does.
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        opaque: int = 0,
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        return cls(
            code=int(code),
            opaque=opaque,
            flag=ONEWAY_FLAG if oneway else 0,
            ext_fields=ext_fields if ext_fields is not None else {},
            body=body,
            serialize_type=serialize_type,
        )

    def make_response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """A response to this request: same opaque, same serialization, response flag set."""
        return RemotingCommand(
            code=int(code),
            opaque=self.opaque,
            flag=RESPONSE_FLAG,
            remark=remark,
            ext_fields=ext_fields if ext_fields is not None else {},
            body=body,
            serialize_type=self.serialize_type,
        )


class OpaqueCounter:
    """Request ids for one endpoint: positive, wrapping before 2**31 like the Java int."""

    def __init__(self, start: int = 1) -> None:
        self._counter = itertools.count(start)

    def next(self) -> int:
        return next(self._counter) % 0x7FFFFFFF
