"""Importing the controller's Raft layer leaves the process's `socket` module whole: pysyncobj
replaces `socket.inet_ntop` with a Windows-only shim when imported, and every `longboat`
command imports the controller (psutil's connection listing, for one, formats addresses
through it)."""

from __future__ import annotations

import socket

import longboat.controller.raft  # noqa: F401


def test_addresses_still_format_after_the_raft_layer_is_imported() -> None:
    assert socket.inet_ntop(socket.AF_INET, b"\x7f\x00\x00\x01") == "127.0.0.1"
    assert socket.inet_ntop(socket.AF_INET6, b"\x00" * 15 + b"\x01") == "::1"
