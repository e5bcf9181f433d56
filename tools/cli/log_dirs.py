"""`kraftpy log-dirs describe`: every configured log dir of each broker (kafka-log-dirs.sh --describe).

Prints Kafka's JSON (`{"version":1,"brokers":[{"broker":..,"logDirs":[...]}]}`) with, per dir, the
directory.id, whether it is online (an offline dir has error KafkaStorageException and no
partitions), its total and usable bytes, and its partitions with size and offset lag; a replica
being moved into the dir appears there as a future replica (`isFuture`, its lag behind the current
log). `--table` prints the same as tables.

`kraftpy log-dirs balance --broker N [--dry-run] [--wait]`: plans moves that even out the bytes
across broker N's online dirs (tools.client.dir_balance) and runs them with AlterReplicaLogDirs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from tools.client.cli_support import add_bootstrap, int_list, run

if TYPE_CHECKING:
    from tools.client import BrokerLogDirs

# The exception kafka-log-dirs names for an error code: the class's full name, as Kafka prints it.
ERROR_NAMES = {
    56: "org.apache.kafka.common.errors.KafkaStorageException",
    57: "org.apache.kafka.common.errors.LogDirNotFoundException",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "log-dirs",
        help="describe brokers' log dirs (kafka-log-dirs)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="log_dirs_command", metavar="ACTION", required=True)
    p = verbs.add_parser("describe", help="each log dir: path, directory.id, state, space, partitions")
    add_bootstrap(p)
    p.add_argument("--broker-list", metavar="1,2", help="brokers to ask (default: every live broker)")
    p.add_argument("--topic-list", metavar="T1,T2", help="only these topics' partitions (default: all)")
    p.add_argument("--table", action="store_true", help="tables instead of Kafka's JSON")
    p.set_defaults(func=lambda a: run("log-dirs describe", lambda: _describe(a)))

    b = verbs.add_parser("balance", help="move replicas between one broker's dirs to even out their bytes")
    add_bootstrap(b)
    b.add_argument("--broker", type=int, required=True, metavar="N", help="the broker whose dirs to balance")
    b.add_argument("--dry-run", action="store_true", help="print the plan, move nothing")
    b.add_argument(
        "--min-move-mb",
        type=float,
        default=1.0,
        metavar="MB",
        help="skip moves that narrow the gap between two dirs by less than this (default 1)",
    )
    b.add_argument("--wait", action="store_true", help="after starting the moves, wait until they are done")
    b.add_argument(
        "--timeout", type=float, default=600.0, metavar="S", help="how long --wait waits (default 600)"
    )
    b.set_defaults(func=lambda a: run("log-dirs balance", lambda: _balance(a)))


def to_json(results: list[BrokerLogDirs]) -> dict[str, Any]:
    brokers = []
    for r in results:
        entry: dict[str, Any] = {"broker": r.broker.node_id, "logDirs": []}
        if r.error is not None:
            entry["error"] = str(r.error)
        elif r.response is not None:
            for d in r.response.Results:
                entry["logDirs"].append(
                    {
                        "logDir": d.LogDir,
                        "directoryId": str(d.DirectoryId),
                        "online": d.ErrorCode == 0,
                        "error": None
                        if d.ErrorCode == 0
                        else ERROR_NAMES.get(d.ErrorCode, f"error {d.ErrorCode}"),
                        "totalBytes": d.TotalBytes,
                        "usableBytes": d.UsableBytes,
                        "partitions": [
                            {
                                "partition": f"{t.Name}-{p.PartitionIndex}",
                                "size": p.PartitionSize,
                                "offsetLag": p.OffsetLag,
                                "isFuture": p.IsFutureKey,
                            }
                            for t in d.Topics
                            for p in t.Partitions
                        ],
                    }
                )
        brokers.append(entry)
    return {"version": 1, "brokers": brokers}


def _print_tables(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    for b in doc["brokers"]:
        if "error" in b:
            console.print(f"[bold]broker {b['broker']}[/]: [red]{b['error']}[/]")
            continue
        table = Table(title=f"broker {b['broker']}", title_justify="left")
        for col in ("log dir", "directory.id", "state", "total", "usable", "partitions (size, lag)"):
            table.add_column(col)
        for d in b["logDirs"]:
            parts = ", ".join(
                f"{p['partition']} ({'future, ' if p['isFuture'] else ''}{p['size']} B, lag {p['offsetLag']})"
                for p in d["partitions"]
            )
            table.add_row(
                d["logDir"],
                d["directoryId"],
                "online" if d["online"] else f"[red]offline ({str(d['error']).rsplit('.', 1)[-1]})[/]",
                _bytes(d["totalBytes"]),
                _bytes(d["usableBytes"]),
                parts or "-",
            )
        console.print(table)


def _bytes(n: int) -> str:
    if n < 0:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


async def _describe(args: argparse.Namespace) -> int:
    from tools.client import Admin

    brokers = int_list(args.broker_list, "--broker-list") if args.broker_list else None
    topics = None
    if args.topic_list:
        async with Admin(args.bootstrap_server) as admin:
            meta = await admin.describe([t for t in args.topic_list.split(",") if t])
        topics = {
            t.Name: [p.PartitionIndex for p in t.Partitions]
            for t in meta.Topics
            if t.Name and t.ErrorCode == 0
        }
    async with Admin(args.bootstrap_server) as admin:
        print("Querying brokers for log directories information", file=sys.stderr)
        results = await admin.describe_log_dirs(brokers, topics)
    answered = [r.broker.node_id for r in results if r.error is None]
    print(f"Received log directory information from brokers {','.join(map(str, answered))}", file=sys.stderr)
    doc = to_json(results)
    if args.table:
        _print_tables(doc)
    else:
        print(json.dumps(doc, separators=(",", ":")))  # compact, as Kafka's Json.encodeAsString
    return 0 if len(answered) == len(results) else 1


async def _balance(args: argparse.Namespace) -> int:
    import asyncio
    import time

    from protocol.errors import Errors
    from tools.client import Admin
    from tools.client.dir_balance import Replica, plan_balance, spread
    from tools.client.errors import ClientError

    async with Admin(args.bootstrap_server) as admin:
        [result] = await admin.describe_log_dirs([args.broker])
        if result.error is not None or result.response is None:
            raise ClientError(Errors.BROKER_NOT_AVAILABLE, f"broker {args.broker}: {result.error}")
        dirs: dict[str, list[Replica]] = {}
        moving: set[tuple[str, int]] = set()
        offline = []
        for d in result.response.Results:
            if d.ErrorCode != 0:
                offline.append(d.LogDir)
                continue
            dirs[d.LogDir] = []
            for t in d.Topics:
                for p in t.Partitions:
                    if p.IsFutureKey:
                        moving.add((t.Name, p.PartitionIndex))
                    else:
                        dirs[d.LogDir].append(Replica(t.Name, p.PartitionIndex, p.PartitionSize))
        moves = plan_balance(
            dirs, pinned=frozenset(moving), min_gain_bytes=int(args.min_move_mb * 1024 * 1024)
        )
        before, after = spread(dirs), spread(dirs, moves)
        for path in offline:
            print(f"{path}: offline, left out")
        for path in dirs:
            print(f"{path}: {_bytes(before[path])} -> {_bytes(after[path])}")
        if moving:
            print(f"{len(moving)} replica(s) already being moved, left where they are")
        if not moves:
            print(f"Broker {args.broker}'s log dirs are balanced; nothing to move.")
            return 0
        for m in moves:
            print(f"move {m.topic}-{m.partition} ({_bytes(m.size)}) from {m.source} to {m.destination}")
        if args.dry_run:
            print(f"Dry run: {len(moves)} move(s) planned, none started.")
            return 0
        results = await admin.alter_replica_log_dirs(
            args.broker, {(m.topic, m.partition): m.destination for m in moves}
        )
        failed = {tp: e for tp, e in results.items() if e is not Errors.NONE}
        for (topic, partition), e in sorted(failed.items()):
            print(f"could not move {topic}-{partition}: {e.name}", file=sys.stderr)
        started = len(moves) - len(failed)
        print(f"Started {started} move(s) on broker {args.broker}.")
        if not args.wait or not started:
            return 1 if failed else 0
        wanted = {
            (m.topic, m.partition): m.destination for m in moves if (m.topic, m.partition) not in failed
        }
        deadline = time.monotonic() + args.timeout
        while True:
            [now] = await admin.describe_log_dirs([args.broker])
            done = _moves_done(now, wanted)
            if done:
                print(f"All {started} move(s) completed.")
                return 1 if failed else 0
            if time.monotonic() > deadline:
                print(f"Moves still under way after {args.timeout:.0f}s.", file=sys.stderr)
                return 1
            await asyncio.sleep(1.0)


def _moves_done(result: BrokerLogDirs, wanted: dict[tuple[str, int], str]) -> bool:
    if result.response is None:
        return False
    where: dict[tuple[str, int], str] = {}
    for d in result.response.Results:
        for t in d.Topics:
            for p in t.Partitions:
                key = (t.Name, p.PartitionIndex)
                if p.IsFutureKey:
                    if key in wanted:
                        return False
                    continue
                where[key] = d.LogDir
    return all(where.get(k) == dest for k, dest in wanted.items())
