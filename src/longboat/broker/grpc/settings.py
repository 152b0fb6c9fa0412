"""The Telemetry settings exchange: what the broker answers to a client's `Settings`.

Every client opens one Telemetry stream per broker endpoint and writes its settings first;
the broker answers `{status OK, settings}`, echoing the client's and merging in its own, as
RocketMQ's proxy does.  What the clients take from the answer:

* a producer copies `publishing.max_body_size` and `validate_message_type` verbatim (without
  them every send fails client-side with "max size=0");
* a push consumer waits for the answer (10 s, or its start fails) and takes
  `subscription.long_polling_timeout`, `subscription.fifo` and the backoff policy;
* a simple consumer only notes that the answer came.

A consumer's backoff is the broker's delay-level ladder (`messageDelayLevel`), with the group's
`retryMaxTimes + 1` attempts, which is what a push consumer waits between retries of a failed
message; a producer's is RocketMQ's default (3 attempts, 10 ms to 1 s, doubling).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from longboat.broker.grpc.schema import pb

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

RECEIVE_BATCH_SIZE = 32
LONG_POLLING_TIMEOUT_S = 20
PRODUCER_MAX_ATTEMPTS = 3


def settings_reply(controller: CoreHost, client: Any) -> Any:
    """The `Settings` to answer a client's `client` settings with."""
    reply = pb.Settings()
    reply.CopyFrom(client)
    cfg = controller.config
    if client.HasField("publishing"):
        reply.publishing.max_body_size = cfg.max_message_size
        reply.publishing.validate_message_type = True
        policy = reply.backoff_policy
        policy.max_attempts = PRODUCER_MAX_ATTEMPTS
        policy.exponential_backoff.initial.FromMilliseconds(10)
        policy.exponential_backoff.max.FromMilliseconds(1000)
        policy.exponential_backoff.multiplier = 2.0
    elif client.HasField("subscription"):
        group = client.subscription.group.name
        settings = controller.subscription_groups.get(group)
        sub = reply.subscription
        sub.fifo = settings.consume_message_orderly
        sub.receive_batch_size = RECEIVE_BATCH_SIZE
        sub.long_polling_timeout.FromSeconds(LONG_POLLING_TIMEOUT_S)
        policy = reply.backoff_policy
        policy.max_attempts = settings.retry_max_times + 1
        for delay_ms in controller.delay_levels.delays_ms:
            policy.customized_backoff.next.add().FromMilliseconds(delay_ms)
    reply.metric.on = False
    reply.metric.ClearField("endpoints")
    return reply
