"""PULL_MESSAGE (11) over remoting: decode the header into the core's `PullRequest`, check
and read it through the core (`core/pull.py`, where the decision table is), encode the answer;
park it in the hold service when there is nothing new and the client allows suspending.

The pull path is built here, whole: `install` makes the one `PullReads` both the immediate
path and the held pulls' re-runs use, and the hold service answered by this module's
`HeldPullReader`, which it returns for the controller to keep as `host.hold`.  A held pull
keeps the same `PullRequest` and filter it was parked with; its re-run encodes the answer to
the command it came in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.broker.core.message_filter import MessageFilter
from longboat.broker.core.pull import PullAnswer, PullReads, PullRequest
from longboat.broker.core.refusal import Refusal
from longboat.broker.state.hold import RECHECK_INTERVAL_S, HeldPull, HoldService
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

PullHold = HoldService[PullRequest, MessageFilter]


def decode(cmd: RemotingCommand) -> PullRequest:
    """The request of a PULL_MESSAGE command."""
    header = PullMessageRequestHeader.from_ext(cmd.ext_fields)
    return PullRequest(
        group=header.consumerGroup,
        topic=header.topic,
        queue_id=header.queueId,
        queue_offset=header.queueOffset,
        max_msgs=header.maxMsgNums,
        sys_flag=header.sysFlag,
        commit_offset=header.commitOffset,
        suspend_timeout_ms=header.suspendTimeoutMillis,
        sub_version=header.subVersion,
        subscription=header.subscription,
        expression_type=header.expressionType,
    )


def encode(cmd: RemotingCommand, answer: PullAnswer) -> RemotingCommand:
    ext = PullMessageResponseHeader(
        suggestWhichBrokerId=answer.suggested_broker,
        nextBeginOffset=answer.next_begin_offset,
        minOffset=answer.min_offset,
        maxOffset=answer.max_offset,
    ).to_ext()
    return cmd.make_response(answer.code, answer.remark, ext_fields=ext, body=answer.body)


class HeldPullReader:
    """The hold service's answerer: re-runs a released pull without suspend."""

    def __init__(self, reads: PullReads) -> None:
        self.reads = reads

    def __call__(self, held: HeldPull[PullRequest, MessageFilter]) -> RemotingCommand:
        return encode(held.command, self.reads.reread(held.pull, held.filter))


class PullProcessor:
    def __init__(self, reads: PullReads, hold: PullHold) -> None:
        self.reads = reads
        self.hold = hold

    def handle(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        request = decode(cmd)
        reads = self.reads
        try:
            flt = reads.check(request)
        except Refusal as refused:
            return cmd.make_response(refused.code, refused.remark)
        reads.commit_carried_offset(request)
        read = reads.read(request, flt)
        if read.nothing_new and request.may_suspend:
            hold = self.hold
            if hold.full:
                # Answered now, the pull would come straight back: a busy answer makes every
                # client wait (ours backs off from 20 ms doubling, Java 3 s) while the table
                # drains.
                return cmd.make_response(
                    ResponseCode.SYSTEM_BUSY,
                    f"[PULL] {hold.held_pulls} pulls are held (maxHeldPullRequests); "
                    "retry after a short delay",
                )
            if hold.hold(conn, cmd, request, flt):
                return None
        return encode(cmd, reads.answer(request, read))


def install(host: CoreHost) -> PullHold:
    """Register PULL_MESSAGE and start the hold service its suspended pulls park in; the
    controller keeps it as `host.hold` (observers, shutdown)."""
    cfg = host.config
    reads = PullReads(
        cfg,
        host.store,
        host.admission,
        host.consumers,
        host.offsets,
        host.subscription_groups,
        host.deliveries,
    )
    hold: PullHold = HoldService(
        host.store.max_offset,
        HeldPullReader(reads),
        long_polling=cfg.long_polling_enable,
        short_polling_ms=cfg.short_polling_time_mills,
        max_held=cfg.max_held_pull_requests,
    )
    hold.start()
    host.add_arrival_listener(hold.on_arrival)
    if cfg.long_polling_enable:
        host.add_periodic(RECHECK_INTERVAL_S, hold.recheck)
    if cfg.enable_controller_mode:  # the role changes while running: the reads follow it
        host.add_master_hooks(
            lambda: reads.role_changed(host.config), lambda: reads.role_changed(host.config)
        )
    host.router.register(RequestCode.PULL_MESSAGE, PullProcessor(reads, hold).handle)
    return hold
