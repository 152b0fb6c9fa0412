"""Micro-benchmark of the sans-IO codec: frames/s and messages/s, median of several runs.

    python -m bench.protocol_codec [--runs 5] [--seconds 0.3] [--against REV]

Workloads are the two frames that dominate a broker's traffic: a SEND_MESSAGE_V2 request with a
256-byte body (JSON header, as every real client sends it, and the ROCKETMQ binary header) and
a PULL_MESSAGE response carrying 32 stored records; plus the record codec alone, and a large
pull answer (1,024 records, ~430 KB) reaching one long-lived decoder in 64 KiB reads, as a
connection's decoder receives what Spark's and other large pulls ask for.  Each codec row
is paired with a "floor" measured in the same run: the orjson or struct call it cannot avoid, so
the ratio shows how much of the cost is ours and stays meaningful on a noisy machine.  With
`--against REV` the large answer also runs through the frame decoder as it was at REV, and
the store's batch of records through REV's batch encoder, each imported beside this one
(`bench.revisions`) and interleaved with it in every run.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import orjson

from bench import results
from bench.revisions import module_at
from longboat.protocol import (
    FrameDecoder,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    encode_frame,
    encode_parts,
)
from longboat.protocol.header_codec import encode_json_header
from longboat.protocol.headers import PullMessageResponseHeader, SendMessageRequestHeaderV2
from longboat.protocol.message import (
    MessageExt,
    decode_records,
    encode_message,
    encode_record_batch,
)
from longboat.protocol.properties import properties_to_string

BODY = bytes(range(256))
PULL_BATCH = 32
FRAMES_PER_BUFFER = 64
LARGE_PULL = 1024
READ_SIZE = 64 * 1024


def send_request(serialize_type: SerializeType) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producerGroup="bench-producer",
        topic="BenchTopic",
        defaultTopic="TBW102",
        defaultTopicQueueNums=4,
        queueId=1,
        sysFlag=0,
        bornTimestamp=1_700_000_000_000,
        flag=0,
        properties="TAGS\x01TagA\x02KEYS\x01order-42\x02UNIQ_KEY\x017F0000010F2C18B4AAC2"
        "3C1B2D000001\x02WAIT\x01true",
        reconsumeTimes=0,
        unitMode=False,
    )
    return RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2,
        header.to_ext(),
        BODY,
        opaque=123456,
        serialize_type=serialize_type,
    )


def sample_message(i: int) -> MessageExt:
    return MessageExt(
        topic="BenchTopic",
        body=BODY,
        queue_id=1,
        queue_offset=1000 + i,
        commit_log_offset=4096 * i,
        born_timestamp=1_700_000_000_000 + i,
        born_port=50000,
        store_timestamp=1_700_000_000_001 + i,
        store_port=10911,
        properties={"TAGS": "TagA", "KEYS": f"order-{i}", "UNIQ_KEY": f"7F00000100{i:022X}"},
    )


def pull_response(records: int = PULL_BATCH) -> RemotingCommand:
    body = b"".join(encode_message(sample_message(i)) for i in range(records))
    header = PullMessageResponseHeader(
        suggestWhichBrokerId=0, nextBeginOffset=1032, minOffset=0, maxOffset=5000
    )
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, opaque=77)
    return request.make_response(ResponseCode.SUCCESS, "FOUND", header.to_ext(), body)


@dataclass(frozen=True)
class Case:
    name: str
    unit: str  # what one call of `fn` produces: "frames" or "msgs"
    per_call: int
    fn: Callable[[], object]
    floor: str | None = None  # name of the floor case this row is compared with


def _decode_stream(frames: bytes) -> Callable[[], object]:
    def run() -> object:
        decoder = FrameDecoder()
        decoder.feed(frames)
        n = 0
        while decoder.next_command() is not None:
            n += 1
        return n

    return run


def _large_answer(decoder_class: type[FrameDecoder], reads: list[bytes]) -> Callable[[], object]:
    """One decoder for every call, as a connection keeps one: what it does to its memory
    between frames is part of the cost."""
    decoder = decoder_class()

    def run() -> object:
        for data in reads:
            decoder.feed(data)
        cmd = decoder.next_command()
        assert cmd is not None
        return cmd

    return run


def _store_batch_encode(
    encode: Callable[..., tuple[bytes, list[int]]], msgs: list[MessageExt]
) -> Callable[[], object]:
    """One call of the store's batch encoder over `msgs`, all from one sender, with what the
    store hands it (`store.admission.Admitted`).  Revisions before `senders` took a 9-field
    tuple per message, which admission built per batch: built here per call too."""
    messages = [(m.body, properties_to_string(m.properties).encode(), 0) for m in msgs]
    first = msgs[0]
    sender = (0, first.born_timestamp, first.born_host, first.born_port, 0, 0)
    common = {
        "topic": first.topic.encode(),
        "queue_id": first.queue_id,
        "commit_log_offset": first.commit_log_offset,
        "store_timestamp": first.store_timestamp,
        "store_host": first.store_host,
        "store_port": first.store_port,
        "queue_offsets": [m.queue_offset for m in msgs],
    }
    if "senders" in inspect.signature(encode).parameters:
        return lambda: encode(messages=messages, senders=sender, **common)
    return lambda: encode(items=[(*parts, *sender) for parts in messages], **common)


def build_cases(against: str | None = None) -> list[Case]:
    cases: list[Case] = []
    for stype in SerializeType:
        tag = "JSON" if stype == SerializeType.JSON else "ROCKETMQ"
        cmd = send_request(stype)
        frames = encode_frame(cmd) * FRAMES_PER_BUFFER
        cases += [
            Case(
                f"send request encode ({tag})",
                "frames",
                1,
                partial(encode_parts, cmd),
                "orjson.dumps(header)" if tag == "JSON" else None,
            ),
            Case(
                f"send request decode ({tag})",
                "frames",
                FRAMES_PER_BUFFER,
                _decode_stream(frames),
                "orjson.loads(header)" if tag == "JSON" else None,
            ),
        ]
        if stype == SerializeType.JSON:
            decoder_frames = frames

            def decode_typed(data: bytes = decoder_frames) -> object:
                decoder = FrameDecoder()
                decoder.feed(data)
                while (c := decoder.next_command()) is not None:
                    SendMessageRequestHeaderV2.from_ext(c.ext_fields)
                return None

            cases.append(
                Case(
                    "send request decode + typed header (JSON)",
                    "frames",
                    FRAMES_PER_BUFFER,
                    decode_typed,
                    "orjson.loads(header)",
                )
            )

    header_bytes = encode_json_header(send_request(SerializeType.JSON))
    header_dict = orjson.loads(header_bytes)
    cases += [
        Case("orjson.dumps(header)", "frames", 1, lambda: orjson.dumps(header_dict)),
        Case("orjson.loads(header)", "frames", 1, lambda: orjson.loads(header_bytes)),
    ]

    pull = pull_response()
    pull_frame = encode_frame(pull)
    cases += [
        Case("pull response (32 records) encode", "frames", 1, lambda: encode_parts(pull)),
        Case("pull response (32 records) decode", "frames", 1, _decode_stream(pull_frame)),
    ]

    def pull_decode_records() -> object:
        decoder = FrameDecoder()
        decoder.feed(pull_frame)
        cmd = decoder.next_command()
        assert cmd is not None
        return decode_records(cmd.body)

    cases.append(Case("pull response decode + records", "msgs", PULL_BATCH, pull_decode_records))

    large = encode_frame(pull_response(LARGE_PULL))
    reads = [large[i : i + READ_SIZE] for i in range(0, len(large), READ_SIZE)]
    join_floor = "bytes.join of the same reads"
    large_name = f"pull answer of {LARGE_PULL:,} records in 64 KiB reads, frame decode"
    cases.append(Case(large_name, "frames", 1, _large_answer(FrameDecoder, reads), join_floor))
    if against is not None:
        old_decoder = module_at(against, "src/longboat/protocol/frames.py").FrameDecoder
        cases.append(
            Case(f"{large_name} at {against}", "frames", 1, _large_answer(old_decoder, reads),
                 join_floor)
        )  # fmt: skip
    cases.append(Case(join_floor, "frames", 1, lambda: b"".join(reads)))

    msgs = [sample_message(i) for i in range(PULL_BATCH)]

    def encode_messages() -> object:
        return [encode_message(m) for m in msgs]

    walk_floor = "struct: walk 32 record heads"
    store_path = "record encode (a batch as the store appends it)"
    encoders = [(store_path, encode_record_batch)]
    if against is not None:
        old = module_at(against, "src/longboat/protocol/message.py").encode_record_batch
        encoders.append((f"{store_path} at {against}", old))
    cases += [
        Case(name, "msgs", PULL_BATCH, _store_batch_encode(encode, msgs), walk_floor)
        for name, encode in encoders
    ]

    records = b"".join(encode_message(m) for m in msgs)
    head = struct.Struct(">iiiiiqqiq")

    def struct_floor() -> object:
        pos = 0
        for _ in range(PULL_BATCH):
            size = head.unpack_from(records, pos)[0]
            pos += size
        return pos

    cases += [
        Case(
            "record encode (MessageExt)",
            "msgs",
            PULL_BATCH,
            encode_messages,
            walk_floor,
        ),
        Case(
            "record decode",
            "msgs",
            PULL_BATCH,
            lambda: decode_records(records),
            walk_floor,
        ),
        Case(walk_floor, "msgs", PULL_BATCH, struct_floor),
    ]
    return cases


def measure(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second over about `seconds`, after sizing the loop on a short probe."""
    fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 10 or n >= 1 << 24:
            break
        n *= 4
    loops = max(1, int(n * seconds / max(elapsed, 1e-9)))
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return loops / (time.perf_counter() - start)


def run(
    runs: int, seconds: float, against: str | None = None
) -> list[tuple[Case, float, float, float]]:
    """(case, median, min, max) in items per second; runs interleave the cases."""
    cases = build_cases(against)
    samples: dict[str, list[float]] = {c.name: [] for c in cases}
    for _ in range(runs):
        for case in cases:
            samples[case.name].append(measure(case.fn, seconds) * case.per_call)
    return [
        (c, statistics.median(samples[c.name]), min(samples[c.name]), max(samples[c.name]))
        for c in cases
    ]


def show(measured: list[tuple[Case, float, float, float]], title: str) -> results.Page:
    """The table of (case, median, min, max) rows, printed and kept for the result."""
    medians = {c.name: med for c, med, _, _ in measured}
    page = results.Page()
    page.table(title, ["workload", "median", "unit", "min .. max", "vs floor"],
               ["---", "---:", "---", "---:", "---:"])  # fmt: skip
    for case, med, lo, hi in measured:
        ratio = f"{med / medians[case.floor]:.2f}x of {case.floor}" if case.floor else ""
        page.row(case.name, f"{med:,.0f}", f"{case.unit}/s", f"{lo:,.0f} .. {hi:,.0f}", ratio)
    return page


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per case (median reported)")
    parser.add_argument("--seconds", type=float, default=0.3, help="time per case per run")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="also decode the large answer and encode the store's batch as REV did",
    )
    results.add_json_option(parser, "protocol_codec")
    args = parser.parse_args(argv)
    measured = run(args.runs, args.seconds, args.against)
    page = show(
        measured, f"protocol codec, median of {args.runs} runs of ~{args.seconds}s per case"
    )
    sizes = {"runs": args.runs, "seconds": args.seconds, "against": args.against}
    runs = [{"case": c.name, "median": med, "min": lo, "max": hi} for c, med, lo, hi in measured]
    result = results.record("protocol_codec", sizes=sizes, runs=runs, page=page.as_dict())
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
