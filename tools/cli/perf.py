"""`kraftpy perf produce|consume`: throughput tests (kafka-producer-perf-test / kafka-consumer-perf-test).

    kraftpy perf produce --bootstrap-server H:P --topic T --num-records 100000 --record-size 100 \\
        --throughput -1 --producer-props acks=all linger.ms=5 batch.size=262144
    kraftpy perf consume --bootstrap-server H:P --topic T --messages 100000

A live progress line shows records acknowledged, records/s, MB/s and latency percentiles so far;
the last line is Kafka's summary.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tools.cli.errors import UserError
from tools.client.cli_support import add_bootstrap, producer_overrides, properties, run


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "perf",
        help="producer and consumer throughput tests (kafka-*-perf-test)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="perf_command", metavar="ACTION", required=True)

    p = verbs.add_parser("produce", help="send records as fast as possible (or at --throughput)")
    add_bootstrap(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--num-records", type=int, required=True)
    p.add_argument(
        "--record-size",
        type=int,
        required=True,
        help="bytes per record: random capital letters, as kafka-producer-perf-test sends",
    )
    p.add_argument("--throughput", type=float, default=-1, help="records/s to aim for; -1: no limit")
    p.add_argument(
        "--producer-props",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="acks=all linger.ms=5 batch.size=...",
    )
    p.add_argument("--no-progress", action="store_true", help="no live progress line")
    p.set_defaults(func=lambda a: run("perf produce", lambda: _produce(a)))

    p = verbs.add_parser("consume", help="read records from the beginning")
    add_bootstrap(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--messages", type=int, required=True)
    p.add_argument("--timeout", type=int, default=10000, help="ms without records before giving up")
    p.add_argument("--no-progress", action="store_true", help="no live progress line")
    p.set_defaults(func=lambda a: run("perf consume", lambda: _consume(a)))


def _live(enabled: bool) -> Any:
    if not enabled:
        return None
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True, highlight=False)
    return Live("", console=console, refresh_per_second=8, transient=True)


async def _produce(args: argparse.Namespace) -> int:
    from tools.client import Producer
    from tools.client.perf import ProduceStats, produce_perf

    if args.num_records < 1 or args.record_size < 0:
        raise UserError("--num-records must be positive and --record-size not negative")
    overrides = producer_overrides(properties(args.producer_props, "--producer-props"))
    live = _live(not args.no_progress and sys.stderr.isatty())

    def progress(s: ProduceStats) -> None:
        line = (
            f"[bold]{s.acked:>10,}[/] / {s.target:,} acked  {s.records_per_sec:>10,.0f} rec/s  "
            f"{s.mb_per_sec:7.2f} MB/s  p50 {s.percentile(0.5):6.1f} ms  p99 {s.percentile(0.99):6.1f} ms  "
            f"max {s.max_latency_ms:6.1f} ms  in flight {s.sent - s.acked - s.failed:,}"
        )
        if live is not None:
            live.update(line)

    async with Producer(args.bootstrap_server, **overrides) as producer:
        if live is not None:
            live.start()
        try:
            stats = await produce_perf(
                producer,
                args.topic,
                args.num_records,
                args.record_size,
                throughput=args.throughput,
                on_progress=progress,
            )
        finally:
            if live is not None:
                live.stop()
    print(stats.summary())
    if stats.failed:
        print(f"{stats.failed} records failed; first error: {stats.first_error}", file=sys.stderr)
        return 1
    return 0


async def _consume(args: argparse.Namespace) -> int:
    from tools.client import Consumer
    from tools.client.perf import ConsumeStats, consume_perf

    live = _live(not args.no_progress and sys.stderr.isatty())

    def progress(s: ConsumeStats) -> None:
        if live is not None:
            live.update(
                f"[bold]{s.records:>10,}[/] / {args.messages:,} records  "
                f"{s.records / max(s.elapsed, 1e-9):>10,.0f} rec/s  {s.bytes / max(s.elapsed, 1e-9) / 1048576:7.2f} MB/s"
            )

    async with Consumer(args.bootstrap_server) as consumer:
        if live is not None:
            live.start()
        try:
            stats = await consume_perf(
                consumer, args.topic, args.messages, timeout_ms=args.timeout, on_progress=progress
            )
        finally:
            if live is not None:
                live.stop()
    print(stats.summary())
    if stats.records < args.messages:
        print(
            f"only {stats.records} of {args.messages} records arrived within --timeout {args.timeout} ms",
            file=sys.stderr,
        )
        return 1
    return 0
