"""`kraftpy topics`: create, list, describe and delete topics (kafka-topics.sh).

    kraftpy topics create --bootstrap-server H:P --topic T --partitions 3 --replication-factor 3
    kraftpy topics create --bootstrap-server H:P --topic T --replica-assignment 1:2:3,2:3:1
    kraftpy topics describe --bootstrap-server H:P [--topic T] [--under-replicated-partitions]
    kraftpy topics list --bootstrap-server H:P
    kraftpy topics delete --bootstrap-server H:P --topic T

Kafka's flag form works too (`kraftpy topics --describe --bootstrap-server H:P --topic T`).
`describe` prints Kafka's lines (Topic, Partition, Leader, Replicas, Isr, and Offline when a replica
cannot serve: KIP-112) plus each replica's directory id (KIP-858).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from tools.cli.errors import UserError
from tools.client.cli_support import add_bootstrap, properties, run

if TYPE_CHECKING:
    from protocol.rpc.metadata import MetadataResponse


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "topics",
        help="create, list, describe and delete topics (kafka-topics)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="topics_command", metavar="ACTION", required=True)

    p = verbs.add_parser("create", help="create a topic")
    add_bootstrap(p)
    p.add_argument("--topic", required=True)
    p.add_argument(
        "--partitions", type=int, help="number of partitions (default: the cluster's num.partitions)"
    )
    p.add_argument(
        "--replication-factor", type=int, help="replicas per partition (default: default.replication.factor)"
    )
    p.add_argument(
        "--replica-assignment",
        metavar="B:B,B:B",
        help="manual placement: partitions separated by ',', each partition's brokers by ':' (leader first)",
    )
    p.add_argument("--config", action="append", metavar="NAME=VALUE", help="topic config (repeatable)")
    p.add_argument("--if-not-exists", action="store_true", help="no error when the topic exists")
    p.set_defaults(func=lambda a: run("topics create", lambda: _create(a)))

    p = verbs.add_parser("list", help="list topic names")
    add_bootstrap(p)
    p.add_argument("--exclude-internal", action="store_true", help="leave out internal topics")
    p.set_defaults(func=lambda a: run("topics list", lambda: _list(a)))

    p = verbs.add_parser(
        "describe", help="partitions with leader, replicas, ISR, offline replicas, directories"
    )
    add_bootstrap(p)
    p.add_argument("--topic", action="append", help="topic to describe (repeatable; default: all)")
    p.add_argument(
        "--under-replicated-partitions", action="store_true", help="only partitions with ISR < replicas"
    )
    p.add_argument(
        "--unavailable-partitions", action="store_true", help="only partitions without a usable leader"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--extras",
        action="store_true",
        help="add kraftpy's fields to Kafka's lines: offline replicas and each replica's directory id",
    )
    p.set_defaults(func=lambda a: run("topics describe", lambda: _describe(a)))

    p = verbs.add_parser("delete", help="delete a topic")
    add_bootstrap(p)
    p.add_argument("--topic", required=True, action="append", help="topic to delete (repeatable)")
    p.add_argument("--if-exists", action="store_true", help="no error when the topic does not exist")
    p.set_defaults(func=lambda a: run("topics delete", lambda: _delete(a)))


def parse_assignment(text: str) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, part in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in part.split(":") if b.strip()]
        except ValueError:
            raise UserError(
                f"--replica-assignment partition {i} '{part}' is not broker ids separated by ':'"
            ) from None
        if not brokers:
            raise UserError(f"--replica-assignment partition {i} names no broker")
        if len(set(brokers)) != len(brokers):
            raise UserError(f"--replica-assignment partition {i} names a broker twice: {part}")
        out[i] = brokers
    if len({len(b) for b in out.values()}) > 1:
        raise UserError("--replica-assignment gives partitions different replication factors")
    return out


async def _create(args: argparse.Namespace) -> int:
    from protocol.errors import Errors
    from tools.client import Admin

    assignment = parse_assignment(args.replica_assignment) if args.replica_assignment else None
    if assignment and (args.partitions is not None or args.replication_factor is not None):
        raise UserError("--replica-assignment cannot be combined with --partitions or --replication-factor")
    for flag, value in (("--partitions", args.partitions), ("--replication-factor", args.replication_factor)):
        if value is not None and value < 1:
            raise UserError(f"{flag} must be at least 1, got {value}")
    configs = properties(args.config, "--config")
    async with Admin(args.bootstrap_server) as admin:
        result = await admin.create_topic(
            args.topic,
            partitions=args.partitions if args.partitions is not None else -1,
            replication_factor=args.replication_factor if args.replication_factor is not None else -1,
            assignments=assignment,
            configs=configs,
        )
    if result.error is Errors.TOPIC_ALREADY_EXISTS and args.if_not_exists:
        return 0
    if result.error is not Errors.NONE:
        print(
            f"Error while executing topic command : {result.message or result.error.name} ({result.error.name})",
            file=sys.stderr,
        )
        return 1
    print(f"Created topic {args.topic}.")
    return 0


async def _list(args: argparse.Namespace) -> int:
    from tools.client import Admin

    async with Admin(args.bootstrap_server) as admin:
        names = await admin.list_topics()
    for name in names:
        if args.exclude_internal and name.startswith("__"):
            continue
        print(name)
    return 0


async def _delete(args: argparse.Namespace) -> int:
    from protocol.errors import Errors
    from tools.client import Admin

    async with Admin(args.bootstrap_server) as admin:
        results = await admin.delete_topics(args.topic)
    failed = 0
    for r in results:
        if r.error is Errors.UNKNOWN_TOPIC_OR_PARTITION and args.if_exists:
            continue
        if r.error is not Errors.NONE:
            print(
                f"Error while executing topic command : {r.name}: {r.message or r.error.name} ({r.error.name})",
                file=sys.stderr,
            )
            failed += 1
    return 1 if failed else 0


def describe_rows(resp: MetadataResponse) -> list[dict[str, Any]]:
    """One dict per topic with its partitions, as `--json` prints them."""
    out = []
    for t in sorted(resp.Topics, key=lambda t: t.Name or ""):
        partitions = []
        for p in sorted(t.Partitions, key=lambda p: p.PartitionIndex):
            dirs = [str(d) for d in p.ReplicaDirectories]
            partitions.append(
                {
                    "partition": p.PartitionIndex,
                    "leader": p.LeaderId,
                    "leaderEpoch": p.LeaderEpoch,
                    "replicas": list(p.ReplicaNodes),
                    "isr": list(p.IsrNodes),
                    "offline": list(p.OfflineReplicas),
                    "directories": dict(zip((str(r) for r in p.ReplicaNodes), dirs, strict=False)),
                    "error": p.ErrorCode,
                }
            )
        out.append(
            {
                "topic": t.Name,
                "topicId": str(t.TopicId),
                "error": t.ErrorCode,
                "partitionCount": len(partitions),
                "replicationFactor": len(partitions[0]["replicas"]) if partitions else 0,
                "partitions": partitions,
            }
        )
    return out


def _ids(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


def format_describe(
    rows: list[dict[str, Any]],
    configs: dict[str, list[tuple[str, str | None]]] | None = None,
    reassignments: dict[tuple[str, int], Any] | None = None,
    *,
    extras: bool = False,
    topic_lines: bool = True,
) -> str:
    """kafka-topics.sh --describe's lines (Kafka 3.9): Configs holds the topic's non-default configs;
    Adding/Removing Replicas appear while a reassignment runs; Elr and LastKnownElr are N/A, as Kafka's
    tool prints them against a cluster that does not serve DescribeTopicPartitions (KIP-966).
    `extras` adds kraftpy's Offline and Directories fields at the end of each partition line; without
    `topic_lines` (a --under-replicated/--unavailable report) only partition lines are printed, as Kafka does."""
    lines = []
    for t in rows:
        cfg = ",".join(f"{k}={v}" for k, v in (configs or {}).get(t["topic"], []))
        if topic_lines:
            lines.append(
                f"Topic: {t['topic']}\tTopicId: {t['topicId']}\tPartitionCount: {t['partitionCount']}\t"
                f"ReplicationFactor: {t['replicationFactor']}\tConfigs: {cfg}"
            )
        for p in t["partitions"]:
            leader = "none" if p["leader"] < 0 else str(p["leader"])
            line = (
                f"\tTopic: {t['topic']}\tPartition: {p['partition']}\tLeader: {leader}\t"
                f"Replicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}"
            )
            moving = (reassignments or {}).get((t["topic"], p["partition"]))
            if moving is not None:
                line += f"\tAdding Replicas: {_ids(list(moving.adding))}\tRemoving Replicas: {_ids(list(moving.removing))}"
            line += "\tElr: N/A\tLastKnownElr: N/A"
            if extras:
                line += f"\tOffline: {_ids(p['offline'])}"
                line += "\tDirectories: " + ",".join(f"{b}:{d}" for b, d in p["directories"].items())
            lines.append(line)
    return "\n".join(lines)


async def _describe(args: argparse.Namespace) -> int:
    from protocol.errors import Errors, KafkaError
    from tools.client import Admin

    async with Admin(args.bootstrap_server) as admin:
        resp = await admin.describe(args.topic)
    missing = [t.Name for t in resp.Topics if t.ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION]
    rows = [r for r in describe_rows(resp) if r["topic"] not in missing]
    for r in rows:
        keep = r["partitions"]
        if args.under_replicated_partitions:
            keep = [p for p in keep if len(p["isr"]) < len(p["replicas"])]
        if args.unavailable_partitions:
            keep = [p for p in keep if p["leader"] < 0 or p["leader"] in p["offline"]]
        r["partitions"] = keep
    if args.under_replicated_partitions or args.unavailable_partitions:
        rows = [r for r in rows if r["partitions"]]
    if args.json:
        print(json.dumps(rows, indent=2))
    elif rows:
        from tools.client.reassignments import ReassignAdmin

        async with ReassignAdmin(args.bootstrap_server) as admin:
            try:
                configs = await admin.topic_configs([r["topic"] for r in rows])
            except KafkaError:
                configs = {}  # a broker that does not serve DescribeConfigs (ZooKeeper mode)
            try:
                moving = await admin.list_partition_reassignments(
                    [(r["topic"], p["partition"]) for r in rows for p in r["partitions"]]
                )
            except KafkaError:
                moving = {}  # a cluster that cannot list them: Kafka's tool leaves the fields out too
        report = args.under_replicated_partitions or args.unavailable_partitions
        print(
            format_describe(
                rows, configs, moving, extras=getattr(args, "extras", False), topic_lines=not report
            )
        )
    if missing:
        print(
            f"Error while executing topic command : Topic '{', '.join(missing)}' does not exist as expected",
            file=sys.stderr,
        )
        return 1
    return 0
