"""Who the dashboard speaks as: its own clients (the credentials it was started with, if any),
or, for a browser that signed in with an access key and secret key (brokers with ACL on), that
browser's own admin client and producer.

A browser's credentials stay in this process: the browser holds only a random session token in
an HttpOnly cookie.  Signing out, or stopping the dashboard, shuts that browser's clients down.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass

from longboat.client.admin import Admin
from longboat.client.config import ClientConfig
from longboat.client.producer import Producer

COOKIE = "longboat_session"
# The producer group of test messages and resends.
PRODUCER_GROUP = "LONGBOAT_DASHBOARD_PRODUCER"


@dataclass(slots=True)
class Clients:
    admin: Admin
    producer: Producer
    access_key: str | None

    @classmethod
    async def start(cls, config: ClientConfig) -> Clients:
        admin = Admin(config=config)
        producer = Producer(PRODUCER_GROUP, config=config)
        await admin.start()
        try:
            await producer.start()
        except BaseException:
            await admin.shutdown()
            raise
        return cls(admin, producer, config.access_key)

    async def shutdown(self) -> None:
        await self.producer.shutdown()
        await self.admin.shutdown()


class Sessions:
    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._by_token: dict[str, Clients] = {}

    async def sign_in(self, access_key: str, secret_key: str) -> str:
        """A new session speaking as `access_key`; returns its token."""
        token = secrets.token_urlsafe(24)
        config = dataclasses.replace(
            self.config,
            access_key=access_key,
            secret_key=secret_key,
            # Its own client instance (connections and signing hook), not the dashboard's.
            instance_name=f"dashboard-{token[:8]}",
        )
        self._by_token[token] = await Clients.start(config)
        return token

    def get(self, token: str | None) -> Clients | None:
        return self._by_token.get(token) if token else None

    async def sign_out(self, token: str | None) -> None:
        clients = self._by_token.pop(token, None) if token else None
        if clients is not None:
            await clients.shutdown()

    async def close(self) -> None:
        for token in list(self._by_token):
            await self.sign_out(token)
