"""`kraftpy consume`: print a topic's records (kafka-console-consumer.sh).

    kraftpy consume --bootstrap-server H:P --topic T --from-beginning --max-messages 10
    kraftpy consume --bootstrap-server H:P --topic T --partition 0 --offset 42 --property print.offset=true

Reads the partitions it is given (default: all) without a consumer group. Without --from-beginning or
--offset it starts at the end. Stops after --max-messages, or when nothing arrives for --timeout-ms,
or on Ctrl-C; then prints "Processed a total of N messages" to stderr, as Kafka does.
"""

from __future__ import annotations

import argparse
import sys

from tools.cli.errors import UserError
from tools.client.cli_support import add_bootstrap, properties, run

PRINT_FLAGS = ("print.key", "print.offset", "print.partition", "print.timestamp", "print.headers")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "consume",
        help="print a topic's records (kafka-console-consumer)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bootstrap(p)
    p.add_argument("--topic", required=True)
    p.add_argument(
        "--partition", type=int, action="append", help="partition to read (repeatable; default all)"
    )
    p.add_argument(
        "--offset", default=None, help="earliest, latest or an offset (an offset needs --partition)"
    )
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    p.add_argument("--max-messages", type=int, help="stop after this many records")
    p.add_argument("--timeout-ms", type=int, help="stop when no record arrives for this long")
    p.add_argument(
        "--property",
        action="append",
        metavar="NAME=VALUE",
        help="print.key, print.offset, print.partition, print.timestamp, print.headers (true/false), key.separator",
    )
    p.set_defaults(func=lambda a: run("consume", lambda: _consume(a)))


def _start_position(args: argparse.Namespace) -> str | int:
    if args.offset is None:
        return "earliest" if args.from_beginning else "latest"
    if args.from_beginning:
        raise UserError("--offset and --from-beginning cannot be used together")
    if args.offset in ("earliest", "latest"):
        return str(args.offset)
    try:
        offset = int(args.offset)
    except ValueError:
        raise UserError(f"--offset must be earliest, latest or a number, not '{args.offset}'") from None
    if offset < 0:
        raise UserError("--offset must not be negative")
    if not args.partition:
        raise UserError("--offset with a number needs --partition")
    return offset


def format_record(rec: object, flags: dict[str, bool], separator: str) -> str:
    parts = []
    if flags["print.timestamp"]:
        parts.append(f"CreateTime:{rec.timestamp_ms}")  # type: ignore[attr-defined]
    if flags["print.partition"]:
        parts.append(f"Partition:{rec.partition}")  # type: ignore[attr-defined]
    if flags["print.offset"]:
        parts.append(f"Offset:{rec.offset}")  # type: ignore[attr-defined]
    if flags["print.headers"]:
        hs = rec.headers  # type: ignore[attr-defined]
        parts.append(",".join(f"{k}:{(v or b'').decode(errors='replace')}" for k, v in hs) or "NO_HEADERS")
    if flags["print.key"]:
        key = rec.key  # type: ignore[attr-defined]
        parts.append("null" if key is None else key.decode(errors="replace"))
    value = rec.value  # type: ignore[attr-defined]
    parts.append("null" if value is None else value.decode(errors="replace"))
    return separator.join(parts)


async def _consume(args: argparse.Namespace) -> int:
    import asyncio
    import signal
    import time

    from protocol.errors import Errors
    from tools.client import Consumer

    start = _start_position(args)
    props = properties(args.property, "--property")
    separator = props.pop("key.separator", "\t")
    flags = {name: props.pop(name, "false").lower() == "true" for name in PRINT_FLAGS}
    if props:
        raise UserError(f"unknown --property {', '.join(sorted(props))}")
    count = 0
    async with Consumer(args.bootstrap_server) as consumer:
        await consumer.metadata.refresh([args.topic])
        n = consumer.metadata.partition_count(args.topic)
        if n is None:
            print(
                f"kraftpy consume: topic {args.topic} does not exist ({Errors.UNKNOWN_TOPIC_OR_PARTITION.name})",
                file=sys.stderr,
            )
            return 1
        partitions = args.partition or list(range(n))
        bad = [p for p in partitions if not 0 <= p < n]
        if bad:
            raise UserError(f"topic {args.topic} has partitions 0-{n - 1}, not {bad}")
        tps = [(args.topic, p) for p in partitions]
        consumer.assign(tps)
        if start == "earliest":
            await consumer.seek_to_beginning()
        elif start == "latest":
            await consumer.seek_to_end()
        else:
            for tp in tps:
                consumer.seek(tp, int(start))
        last_record = time.monotonic()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            while (args.max_messages is None or count < args.max_messages) and not stop.is_set():
                wait = 1000 if args.timeout_ms is None else max(1, min(1000, args.timeout_ms))
                want = None if args.max_messages is None else args.max_messages - count
                records = await consumer.poll(timeout_ms=wait, max_records=want)
                for rec in records:
                    print(format_record(rec, flags, separator))
                count += len(records)
                if records:
                    sys.stdout.flush()
                    last_record = time.monotonic()
                elif (
                    args.timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= args.timeout_ms
                ):
                    break
        except BrokenPipeError:
            sys.stderr.close()
            return 0
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0
