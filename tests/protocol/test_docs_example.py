"""The example in docs/protocol.md runs and does what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

from longboat.protocol import FrameDecoder, ResponseCode

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_protocol_doc_example_runs() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    scope: dict[str, object] = {}
    exec(compile(code, str(DOC), "exec"), scope)
    decoder = FrameDecoder()
    decoder.feed(scope["out"])  # type: ignore[arg-type]
    reply = decoder.next_command()
    assert reply is not None and reply.is_response
    assert reply.opaque == 7
    assert reply.code == ResponseCode.TOPIC_NOT_EXIST
    assert reply.remark == "No topic route info for T"
