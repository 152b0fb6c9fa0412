"""Longboat's sans-IO implementation of the RocketMQ 4.x remoting protocol.

Bytes in, typed commands out: no sockets, no asyncio, no clock.  `FrameDecoder` turns a byte
stream into `RemotingCommand`s, `encode_frame` turns them back; `headers` types the ext
fields, `bodies` the JSON bodies, `message` the stored record every pull carries.
"""

from __future__ import annotations

from longboat.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from longboat.protocol.command import RemotingCommand
from longboat.protocol.errors import (
    FrameTooLarge,
    HeaderFieldError,
    MalformedHeader,
    ProtocolError,
)
from longboat.protocol.frames import DEFAULT_MAX_FRAME, FrameDecoder, encode_frame, encode_parts

__all__ = [
    "DEFAULT_MAX_FRAME",
    "FrameDecoder",
    "FrameTooLarge",
    "HeaderFieldError",
    "LanguageCode",
    "MalformedHeader",
    "ProtocolError",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "encode_frame",
    "encode_parts",
]
