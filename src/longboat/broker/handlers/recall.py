"""RECALL_MESSAGE (370, RocketMQ 5.3) over remoting: decode, ask the timer service
(`services/delivery_timer.py`, shared with gRPC's RecallMessage), encode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.broker.core.refusal import Refusal
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import RecallMessageRequestHeader, RecallMessageResponseHeader
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost


class RecallProcessor:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller

    def handle(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = RecallMessageRequestHeader.from_ext(cmd.ext_fields)
        timers = self.controller.timers
        if timers is None:  # a slave: its master holds the timers
            return cmd.make_response(
                ResponseCode.SLAVE_NOT_AVAILABLE, "recall failed, broker service not available"
            )
        try:
            message_id = timers.recall(header.topic, header.recallHandle)
        except Refusal as refused:
            return cmd.make_response(refused.code, refused.remark)
        return cmd.make_response(ext_fields=RecallMessageResponseHeader(msgId=message_id).to_ext())


def install(controller: CoreHost) -> None:
    controller.router.register(RequestCode.RECALL_MESSAGE, RecallProcessor(controller).handle)
