"""docs/client.md lists every field a send returns, and nothing else."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from longboat.client.message import SendResult

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def test_the_send_result_table_lists_every_field() -> None:
    text = DOC.read_text()
    table = text[text.index("What a send returns, a `SendResult`") :].split("\n\n")[1]
    documented = re.findall(r"^\| `(\w+)` \|", table, re.M)
    properties = [n for n, v in vars(SendResult).items() if isinstance(v, property)]
    fields = [f.name for f in dataclasses.fields(SendResult)]
    assert sorted(documented) == sorted(fields + properties)
