"""Requests built by hand for the benchmarks that time the broker on the bare wire.

The broker benchmarks send frames through `RemotingClient` directly, so a figure holds the
broker's cost and not a client's (routes, retries, decoding).  Their requests are built here,
once, through the protocol's typed headers by field name: a new header field then fails here,
loudly, instead of shifting the meaning of a positional argument in five scripts; a pull and
its flags come from `PullMessageRequestHeader.pulling`, as the client's do.
"""

from __future__ import annotations

import time

from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2


def bare_send(topic: str, queue_id: int, body: bytes, *, batch: bool) -> RemotingCommand:
    """A send request built once and re-sent (the remoting layer sets a fresh opaque)."""
    header = SendMessageRequestHeaderV2(
        producerGroup="bench_pg",
        topic=topic,
        defaultTopic="TBW102",
        defaultTopicQueueNums=8,
        queueId=queue_id,
        sysFlag=0,
        bornTimestamp=int(time.time() * 1000),
        flag=0,
        properties="TAGS\x01TagA\x02",
        batch=batch or None,
    )
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    return RemotingCommand.request(code, header.to_ext(), body)


def bare_pull(header: PullMessageRequestHeader) -> RemotingCommand:
    """The PULL_MESSAGE request of `header` (built with `PullMessageRequestHeader.pulling`)."""
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext())
