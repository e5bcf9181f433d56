"""`kraftpy produce`: send lines from stdin to a topic (kafka-console-producer.sh).

    echo hello | kraftpy produce --bootstrap-server H:P --topic T
    kraftpy produce --bootstrap-server H:P --topic T --property parse.key=true --property key.separator=:

Idempotence is on and acks=all by default, as in Kafka 3.x. `--report` prints where each record
landed (`topic-partition@offset`). Exits 1 if any record was not delivered.
"""

from __future__ import annotations

import argparse
import sys

from tools.cli.errors import UserError
from tools.client.cli_support import add_bootstrap, parse_acks, producer_overrides, properties, run

READ_CHUNK = 1 << 16


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "produce",
        help="send lines from stdin to a topic (kafka-console-producer)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bootstrap(p)
    p.add_argument("--topic", required=True)
    p.add_argument(
        "--partition", type=int, help="send every record to this partition (default: by key, else sticky)"
    )
    p.add_argument("--request-required-acks", metavar="ACKS", help="all, -1, 1 or 0 (default all)")
    p.add_argument(
        "--property",
        action="append",
        metavar="NAME=VALUE",
        help="parse.key=true, key.separator=<sep> (default tab)",
    )
    p.add_argument(
        "--producer-property",
        action="append",
        metavar="NAME=VALUE",
        help="producer config, e.g. linger.ms=5 batch.size=65536 enable.idempotence=false",
    )
    p.add_argument("--sync", action="store_true", help="wait for each record before reading the next line")
    p.add_argument("--report", action="store_true", help="print topic-partition@offset for each record")
    p.set_defaults(func=lambda a: run("produce", lambda: _produce(a)))


async def _produce(args: argparse.Namespace) -> int:
    import asyncio
    import contextlib

    from protocol.errors import KafkaError
    from tools.client import Producer
    from tools.client.producer import RecordFuture

    props = properties(args.property, "--property")
    parse_key = props.pop("parse.key", "false").lower() == "true"
    separator = props.pop("key.separator", "\t").encode()
    if props:
        raise UserError(f"unknown --property {', '.join(sorted(props))} (known: parse.key, key.separator)")
    overrides = producer_overrides(properties(args.producer_property, "--producer-property"))
    if args.request_required_acks is not None:
        overrides["acks"] = parse_acks(args.request_required_acks)
        if overrides["acks"] != -1:
            overrides.setdefault("enable_idempotence", False)
    failures = 0
    pending: list[RecordFuture] = []

    def report(fut: RecordFuture) -> None:
        nonlocal failures
        exc = fut.exception()
        if exc is not None:
            failures += 1
            print(f"kraftpy produce: {exc}", file=sys.stderr)
        elif args.report:
            m = fut.result()
            print(f"{m.topic}-{m.partition}@{m.offset}")

    loop = asyncio.get_running_loop()
    stdin = sys.stdin.buffer
    async with Producer(args.bootstrap_server, **overrides) as producer:
        while True:
            lines = await loop.run_in_executor(None, stdin.readlines, READ_CHUNK)
            if not lines:
                break
            for raw in lines:
                line = raw.rstrip(b"\r\n")
                key = None
                if parse_key:
                    if separator not in line:
                        raise UserError(f"no key separator {separator.decode()!r} in line: {line[:80]!r}")
                    key, line = line.split(separator, 1)
                try:
                    fut = await producer.send(args.topic, line, key, partition=args.partition)
                except KafkaError as e:
                    raise UserError(str(e)) from None
                fut.add_done_callback(report)
                pending.append(fut)
                if args.sync:
                    with contextlib.suppress(KafkaError):
                        await fut
        await producer.flush()
    return 1 if failures else 0
