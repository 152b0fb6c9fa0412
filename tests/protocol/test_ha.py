"""The replication stream's framing, fed in arbitrary pieces."""

from __future__ import annotations

import pytest

from longboat.protocol import ProtocolError
from longboat.protocol.ha import (
    Frame,
    FrameDecoder,
    ReportDecoder,
    encode_frame_header,
    encode_report,
)


def test_a_report_is_an_eight_byte_big_endian_offset() -> None:
    assert encode_report(0x0102) == b"\0\0\0\0\0\0\x01\x02"


def test_the_master_takes_the_latest_whole_report() -> None:
    decoder = ReportDecoder()
    stream = encode_report(10) + encode_report(20) + encode_report(30)
    assert decoder.feed(stream[:5]) is None
    assert decoder.feed(stream[5:20]) == 20  # 10 superseded, 30 not whole yet
    assert decoder.feed(stream[20:]) == 30
    with pytest.raises(ProtocolError):
        decoder.feed(encode_report(-1))


def test_frames_come_out_whole_however_the_stream_is_cut() -> None:
    stream = (
        encode_frame_header(0, 5) + b"hello" + encode_frame_header(5, 0) + encode_frame_header(5, 3)
    ) + b"abc"
    for step in (1, 2, 7, len(stream)):
        decoder = FrameDecoder()
        frames: list[Frame] = []
        for i in range(0, len(stream), step):
            frames += decoder.feed(stream[i : i + step])
        assert frames == [Frame(0, b"hello"), Frame(5, b""), Frame(5, b"abc")]


def test_a_garbage_header_is_refused() -> None:
    with pytest.raises(ProtocolError):
        FrameDecoder().feed(encode_frame_header(0, -5))
