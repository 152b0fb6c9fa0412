"""One order as each codec's kind of type, for the typed-payload tests."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import pydantic


@dataclass
class OrderDC:
    id: int
    item: str


class OrderStruct(msgspec.Struct):
    id: int
    item: str


class OrderModel(pydantic.BaseModel):
    id: int
    item: str
