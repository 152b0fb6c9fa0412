"""The message request mode an operator set per (topic, group) with SET_MESSAGE_REQUEST_MODE:
whether QUERY_ASSIGNMENT assigns the group's queues to be pulled or popped.

Persisted as RocketMQ's `config/messageRequestMode.json`
(`{"messageRequestModeMap": {topic: {group: SetMessageRequestModeRequestBody}}}`), rewritten
whole on each change, so a restart keeps every setting.  A pair never set has no entry:
QUERY_ASSIGNMENT then answers the default (PULL, as RocketMQ's `defaultMessageRequestMode`).
"""

from __future__ import annotations

import threading
from pathlib import Path

from longboat.protocol.assignment_bodies import MessageRequestModeBody
from longboat.store.json_file import read_json, write_json_atomic


class MessageRequestModeTable:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._modes: dict[tuple[str, str], MessageRequestModeBody] = {}

    def load(self) -> None:
        """Read the file if there is one; ValueError when it exists but is damaged."""
        data = read_json(self.path) or {}
        table = data.get("messageRequestModeMap") or {}
        try:
            modes = {
                (topic, group): MessageRequestModeBody.from_dict(body)
                for topic, groups in table.items()
                for group, body in groups.items()
            }
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{self.path}: {exc!r}") from None
        with self._lock:
            self._modes = modes

    def get(self, topic: str, group: str) -> MessageRequestModeBody | None:
        """The setting for (topic, group), None when no operator set one."""
        return self._modes.get((topic, group))

    def put(self, setting: MessageRequestModeBody) -> None:
        """Set (or replace) the mode of (setting.topic, setting.consumer_group), durably
        (raises OSError on I/O failure)."""
        with self._lock:
            self._modes[setting.topic, setting.consumer_group] = setting
            table: dict[str, dict[str, object]] = {}
            for (topic, group), body in sorted(self._modes.items()):
                table.setdefault(topic, {})[group] = body.to_dict()
            write_json_atomic(self.path, {"messageRequestModeMap": table})
