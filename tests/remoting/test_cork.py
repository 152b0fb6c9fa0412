"""The answers to the requests of one read leave in one write, up to a bound; an answer sent
outside a read is written at once."""

from __future__ import annotations

from longboat.protocol import RemotingCommand
from longboat.protocol.frames import FrameDecoder, encode_frame
from longboat.remoting import Router
from longboat.remoting.connection import CORK_LIMIT, RemotingProtocol

ECHO = 999


class RecordingTransport:
    """What the protocol writes, write call by write call (a stream transport's surface)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def writelines(self, chunks: list[bytes]) -> None:
        self.writes.append(b"".join(chunks))

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def served(body: bytes = b"") -> tuple[RemotingProtocol, RecordingTransport]:
    router = Router("test")
    router.register(ECHO, lambda conn, cmd: cmd.make_response(remark="echo", body=body))
    protocol = RemotingProtocol(router)
    transport = RecordingTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


def answers(written: bytes) -> list[RemotingCommand]:
    decoder = FrameDecoder()
    decoder.feed(written)
    return decoder.commands()


def requests(count: int) -> bytes:
    frames = []
    for opaque in range(count):
        cmd = RemotingCommand.request(ECHO)
        cmd.opaque = opaque
        frames.append(encode_frame(cmd))
    return b"".join(frames)


async def test_the_answers_to_one_read_leave_in_one_write() -> None:
    protocol, transport = served()
    protocol.data_received(requests(4))
    assert len(transport.writes) == 1
    assert [a.opaque for a in answers(transport.writes[0])] == [0, 1, 2, 3]


async def test_held_back_answers_are_written_once_they_pass_the_bound() -> None:
    protocol, transport = served(b"x" * (CORK_LIMIT // 2 + 1))
    protocol.data_received(requests(5))
    # Two answers pass the bound: written in pairs as they do, the fifth at the read's end.
    assert [len(answers(w)) for w in transport.writes] == [2, 2, 1]
    assert [a.opaque for w in transport.writes for a in answers(w)] == [0, 1, 2, 3, 4]


async def test_an_answer_outside_a_read_is_written_at_once() -> None:
    protocol, transport = served()
    assert protocol.conn is not None
    protocol.conn.send(RemotingCommand.request(ECHO).make_response(remark="later"))
    assert [a.remark for a in answers(b"".join(transport.writes))] == ["later"]
