"""What the broker's own request handling needs from the composition root: the protocol
adapters (`handlers/`, `grpc/`) and the services install against `CoreHost`, which adds the
core's machinery to a feature's `FeatureHost` (`feature_host.py`): the append path
(`appender`), the consumer and producer tables, the hold service, connection-closed
listeners.  The core itself (`core/`) never sees a host this wide: its modules take what they
use, so the core sits below this protocol and the import graph has no cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from longboat.broker.core.admission import Admission
from longboat.broker.core.append import Appender
from longboat.broker.core.message_filter import MessageFilter
from longboat.broker.core.pop import PopService
from longboat.broker.core.pull import Deliveries, PullRequest
from longboat.broker.core.timers import Timers
from longboat.broker.core.transactions import TransactionService
from longboat.broker.feature_host import FeatureHost
from longboat.broker.state.consumers import ConsumerManager
from longboat.broker.state.hold import HoldService
from longboat.broker.state.producers import ProducerTable
from longboat.broker.state.topics import TopicManager
from longboat.remoting import Connection, RemotingClient
from longboat.store.message_store import ArrivalListener

if TYPE_CHECKING:
    from longboat.acl import AccessControl


class CoreHost(FeatureHost, Protocol):
    """What the protocol adapters and the services use besides a feature's members."""

    @property
    def topics(self) -> TopicManager: ...
    @property
    def consumers(self) -> ConsumerManager: ...
    @property
    def hold(self) -> HoldService[PullRequest, MessageFilter]: ...
    @property
    def deliveries(self) -> Deliveries:
        """Hear what every pull answer delivers: `deliveries.add(listener)`."""
        ...

    @property
    def broker_addr(self) -> str:
        """`host:port` this broker is reached at (the port it bound, not the configured 0)."""
        ...

    @property
    def client(self) -> RemotingClient:
        """The broker's outgoing connections (to the name servers), signed and under TLS as
        its config says."""
        ...

    @property
    def producers(self) -> ProducerTable: ...
    @property
    def access_control(self) -> AccessControl | None:
        """plain_acl.yml's rules when ACL is on, else None."""
        ...

    @property
    def transactions(self) -> TransactionService: ...
    @property
    def pop(self) -> PopService:
        """Pop consumption's state, one for both protocols."""
        ...

    @property
    def timers(self) -> Timers | None:
        """Timer messages and their recall; None on a slave (its master delivers them)."""
        ...

    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock (seconds) of the store."""
        ...

    @property
    def admission(self) -> Admission:
        """The checks a request passes before the core serves it."""
        ...

    @property
    def appender(self) -> Appender:
        """The append path: append now (on the loop), await durability, the backlog refusal."""
        ...

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """Hear every append, in-line on the appending thread."""
        ...

    def add_connection_closed_listener(self, listener: Callable[[Connection], None]) -> None:
        """Forget per-connection state when a client's connection closes."""
        ...
