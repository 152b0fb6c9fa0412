"""Message lookups for the admin: by id and by key.

They say why they found nothing (`MessageNotFoundError`), and `message_by_id` accepts both ids
a user may hold: the producer's UNIQ_KEY (needs the topic) and the broker's offset id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from longboat.client.admin_cluster import ClusterReader
from longboat.client.errors import BrokerError, MessageNotFoundError, TransportError
from longboat.protocol import ProtocolError
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.message import MessageExt
from longboat.protocol.topic_names import is_system_topic


class MessageLookup(ClusterReader):
    """What `Admin` finds by message id or key, on every broker of a topic."""

    async def message_by_id(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """The message with this id: the producer's UNIQ_KEY (searched in `topic`, or in every
        non-system topic when the id cannot be an offset id) or the broker's offset id (which
        names the broker and position itself)."""
        if topic is not None:
            found = await self._by_unique_key(topic, msg_id)
            if found:
                return min(found, key=lambda m: m.store_timestamp)
        try:
            host, port, offset = decode_offset_msg_id(msg_id)
        except ProtocolError:
            if topic is not None:
                raise MessageNotFoundError(
                    f"no message with UNIQ_KEY {msg_id} in topic {topic}"
                ) from None
            return await self._search_unique_key(msg_id)
        # A UNIQ_KEY is as long as an offset id; its bytes seldom make a port and an offset.
        if not 0 < port <= 0xFFFF or offset < 0:
            if topic is not None:
                raise MessageNotFoundError(f"no message with UNIQ_KEY {msg_id} in topic {topic}")
            return await self._search_unique_key(msg_id)
        addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            return await self.instance.api.view_message(addr, offset)
        except (BrokerError, TransportError) as exc:
            where = f"UNIQ_KEY in topic {topic}, nor " if topic else ""
            raise MessageNotFoundError(
                f"no message {msg_id} as {where}offset id (broker {addr}, offset {offset}): {exc}"
            ) from exc

    async def _search_unique_key(self, msg_id: str) -> MessageExt:
        topics = [t for t in await self.topics() if not is_system_topic(t)]
        batches = await asyncio.gather(
            *(self._by_unique_key(t, msg_id) for t in topics),
            return_exceptions=True,
        )
        found = [m for batch in batches if isinstance(batch, list) for m in batch]
        if not found:
            raise MessageNotFoundError(
                f"{msg_id} is not an offset id, and no message has it as UNIQ_KEY in any of "
                f"{len(topics)} topic(s)"
            )
        return min(found, key=lambda m: m.store_timestamp)

    async def messages_by_key(
        self,
        topic: str,
        key: str,
        *,
        begin_ms: int = 0,
        end_ms: int | None = None,
        max_num: int = 64,
    ) -> list[MessageExt]:
        """Messages of `topic` carrying `key` in KEYS, from every broker, oldest first."""
        api = self.instance.api
        found = await self._on_masters(
            topic,
            lambda addr: api.query_message(
                addr, topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms
            ),
        )
        return sorted(found, key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))

    async def _by_unique_key(self, topic: str, msg_id: str) -> list[MessageExt]:
        """The messages of `topic` whose UNIQ_KEY is `msg_id`, from every master."""
        api = self.instance.api
        return await self._on_masters(
            topic, lambda addr: api.query_message(addr, topic, msg_id, max_num=32, unique_key=True)
        )

    async def _on_masters(
        self, topic: str, query: Callable[[str], Awaitable[list[MessageExt]]]
    ) -> list[MessageExt]:
        """`query(addr)` asked of every master of `topic` at once; what they found, together."""
        addrs = await self._master_addrs(topic)
        batches = await asyncio.gather(*(query(addr) for addr in addrs))
        return [m for batch in batches for m in batch]
