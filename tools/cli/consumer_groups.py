"""`kraftpy consumer-groups`: list consumer groups and describe their offsets, lag and members
(kafka-consumer-groups.sh --list / --describe), over Kafka's protocol.

--bootstrap-server takes brokers' Kafka-protocol (PLAINTEXT) addresses, as Kafka's tool does; without
it, the local `kraftpy cluster`'s. --describe prints Kafka's columns: GROUP TOPIC PARTITION
CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID (a partition no member holds shows "-").
"""

from __future__ import annotations

import argparse
import struct
import sys
from dataclasses import dataclass

from tools.cli.errors import UserError
from tools.client.cli_support import run


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "consumer-groups",
        help="list consumer groups, describe their offsets and lag (kafka-consumer-groups)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # its own dest: the other commands' --bootstrap-server defaults to the brokers' HTTP RPC addresses
    p.add_argument(
        "--bootstrap-server",
        dest="kafka_bootstrap_server",
        metavar="HOST:PORT[,...]",
        help="brokers' Kafka-protocol addresses",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="every group of the cluster")
    what.add_argument("--describe", action="store_true", help="offsets, lag and members of --group")
    p.add_argument("--group", metavar="GROUP", help="the group to describe")
    p.add_argument("--state", action="store_true", help="with --describe: the group's state and coordinator")
    p.set_defaults(func=lambda a: run("consumer-groups", lambda: _main(a)))


def kafka_bootstrap(given: str | None) -> str:
    if given:
        return given
    from tools.cluster.cluster import LocalCluster
    from tools.cluster.spec import default_work_dir

    cluster = LocalCluster(default_work_dir())
    if not cluster.exists():
        raise UserError(
            f"--bootstrap-server is needed: there is no cluster in {cluster.work_dir} "
            "(set $KRAFTPY_WORK to a `kraftpy cluster` work dir, or name a broker)"
        )
    if cluster.spec.secure:
        raise UserError(f"{PLAIN_ONLY} (the cluster in {cluster.work_dir})")
    servers = [b.kafka_bootstrap for b in cluster.brokers if b.kafka_bootstrap]
    if not servers:
        raise UserError(f"the cluster in {cluster.work_dir} has no Kafka-protocol listeners (ZooKeeper mode)")
    return ",".join(servers)


PLAIN_ONLY = (
    "consumer-groups speaks Kafka's protocol without TLS or SASL, so it cannot reach the SASL_SSL listeners "
    "of a secure cluster"
)


async def _main(args: argparse.Namespace) -> int:
    from tools.client.security import command_config_path

    if command_config_path() is not None:
        raise UserError(f"{PLAIN_ONLY} (a command config is set)")
    bootstrap = kafka_bootstrap(args.kafka_bootstrap_server)
    if args.list:
        for group in sorted(await list_groups(bootstrap)):
            print(group)
        return 0
    if not args.group:
        raise UserError("--describe needs --group")
    d = await describe_group(bootstrap, args.group)
    if d.state == "Dead" and not d.rows:
        print(f"Error: Consumer group '{d.group}' does not exist.", file=sys.stderr)
        return 1
    if args.state:
        print(f"\n{'GROUP':<24} {'COORDINATOR (ID)':<28} {'ASSIGNMENT-STRATEGY':<20} {'STATE':<20} #MEMBERS")
        coordinator = f"{d.coordinator[1]}:{d.coordinator[2]} ({d.coordinator[0]})"
        print(f"{d.group:<24} {coordinator:<28} {d.protocol or '':<20} {d.state:<20} {len(d.members)}")
        return 0
    if not d.members:
        print(f"\nConsumer group '{d.group}' has no active members.", file=sys.stderr)
    print(
        f"\n{'GROUP':<16} {'TOPIC':<16} {'PARTITION':<10} {'CURRENT-OFFSET':<15} {'LOG-END-OFFSET':<15} "
        f"{'LAG':<8} {'CONSUMER-ID':<50} {'HOST':<16} CLIENT-ID"
    )
    for row in d.rows:
        print(
            f"{d.group:<16} {row.topic:<16} {row.partition:<10} {_n(row.current):<15} {_n(row.log_end):<15} "
            f"{_n(row.lag):<8} {row.member or '-':<50} {row.host or '-':<16} {row.client or '-'}"
        )
    return 0


def _n(v: int | None) -> str:
    return "-" if v is None or v < 0 else str(v)


@dataclass
class Row:
    topic: str
    partition: int
    current: int | None
    log_end: int | None
    lag: int | None
    member: str | None = None
    host: str | None = None
    client: str | None = None


@dataclass
class GroupDescription:
    group: str
    state: str
    protocol: str
    coordinator: tuple[int, str, int]
    members: list[tuple[str, str, str, list[tuple[str, int]]]]
    rows: list[Row]


def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    """The partitions of a consumer's assignment (ConsumerProtocolAssignment); [] if unreadable."""
    try:
        pos = 2
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out = []
        for _ in range(max(n, 0)):
            (ln,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2 : pos + 2 + ln].decode()
            pos += 2 + ln
            (k,) = struct.unpack_from(">i", data, pos)
            parts = struct.unpack_from(f">{k}i", data, pos + 4)
            pos += 4 + 4 * k
            out += [(topic, p) for p in parts]
        return out
    except (struct.error, UnicodeDecodeError):
        return []


async def _brokers(bootstrap: str) -> list[tuple[int, str, int]]:
    from protocol.rpc.metadata import MetadataRequest
    from tools.client.wire import connect_any

    conn = await connect_any(bootstrap)
    try:
        meta = await conn.call("Metadata", MetadataRequest(Topics=[]))
    finally:
        await conn.close()
    return [(b.NodeId, b.Host, b.Port) for b in meta.Brokers]


async def list_groups(bootstrap: str) -> list[str]:
    from protocol.rpc.list_groups import ListGroupsRequest
    from tools.client.wire import KafkaRpcClient

    groups: list[str] = []
    for _, host, port in await _brokers(bootstrap):
        async with KafkaRpcClient(host, port) as conn:
            resp = await conn.call("ListGroups", ListGroupsRequest())
        groups += [g.GroupId for g in resp.Groups]
    return groups


async def describe_group(bootstrap: str, group: str) -> GroupDescription:
    from protocol.errors import Errors, KafkaError
    from protocol.rpc.describe_groups import DescribeGroupsRequest
    from protocol.rpc.find_coordinator import FindCoordinatorRequest
    from protocol.rpc.offset_fetch import OffsetFetchRequest
    from tools.client.wire import KafkaRpcClient, connect_any

    conn = await connect_any(bootstrap)
    try:
        v = conn.version_for("FindCoordinator")
        fc = await conn.call(
            "FindCoordinator",
            FindCoordinatorRequest(Key=group if v < 4 else "", CoordinatorKeys=[group] if v >= 4 else []),
        )
    finally:
        await conn.close()
    found = fc.Coordinators[0] if v >= 4 else fc
    if found.ErrorCode:
        raise KafkaError(
            Errors(found.ErrorCode), f"no coordinator for group {group}: {found.ErrorMessage or ''}"
        )
    coordinator = (found.NodeId, found.Host, found.Port)
    async with KafkaRpcClient(found.Host, found.Port) as c:
        described = (await c.call("DescribeGroups", DescribeGroupsRequest(Groups=[group]))).Groups[0]
        if described.ErrorCode:
            raise KafkaError(Errors(described.ErrorCode), f"describing group {group}")
        fv = c.version_for("OffsetFetch")
        if fv >= 8:
            req = OffsetFetchRequest(
                Groups=[OffsetFetchRequest.OffsetFetchRequestGroup(GroupId=group, Topics=None)]
            )
            resp = await c.call("OffsetFetch", req, fv)
            g = resp.Groups[0]
            if g.ErrorCode:
                raise KafkaError(Errors(g.ErrorCode), f"offsets of group {group}")
            committed = {
                (t.Name, p.PartitionIndex): p.CommittedOffset for t in g.Topics for p in t.Partitions
            }
        else:
            resp = await c.call("OffsetFetch", OffsetFetchRequest(GroupId=group, Topics=None), fv)
            if resp.ErrorCode:
                raise KafkaError(Errors(resp.ErrorCode), f"offsets of group {group}")
            committed = {
                (t.Name, p.PartitionIndex): p.CommittedOffset for t in resp.Topics for p in t.Partitions
            }
    members = [
        (m.MemberId, m.ClientHost, m.ClientId, decode_assignment(m.MemberAssignment))
        for m in described.Members
    ]
    owner = {tp: (mid, host, client) for mid, host, client, tps in members for tp in tps}
    wanted = sorted(set(committed) | set(owner))
    ends = await _log_end_offsets(bootstrap, wanted)
    rows = []
    for tp in wanted:
        cur = committed.get(tp)
        end = ends.get(tp)
        lag = end - cur if cur is not None and cur >= 0 and end is not None and end >= 0 else None
        mid, host, client = owner.get(tp, (None, None, None))
        rows.append(Row(tp[0], tp[1], cur, end, lag, mid, host, client))
    return GroupDescription(group, described.GroupState, described.ProtocolData, coordinator, members, rows)


async def _log_end_offsets(bootstrap: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    from protocol.rpc.list_offsets import ListOffsetsRequest as L
    from protocol.rpc.metadata import MetadataRequest
    from tools.client.wire import KafkaRpcClient, connect_any

    if not tps:
        return {}
    topics = sorted({t for t, _ in tps})
    conn = await connect_any(bootstrap)
    try:
        meta = await conn.call(
            "Metadata", MetadataRequest(Topics=[MetadataRequest.MetadataRequestTopic(Name=t) for t in topics])
        )
    finally:
        await conn.close()
    where = {b.NodeId: (b.Host, b.Port) for b in meta.Brokers}
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for t in meta.Topics:
        for p in t.Partitions:
            if (t.Name, p.PartitionIndex) in tps and p.LeaderId in where:
                by_leader.setdefault(p.LeaderId, []).append((t.Name or "", p.PartitionIndex))
    out: dict[tuple[str, int], int] = {}
    for leader, parts in by_leader.items():
        by_topic: dict[str, list[int]] = {}
        for t, p in parts:
            by_topic.setdefault(t, []).append(p)
        req = L(
            ReplicaId=-1,
            Topics=[
                L.ListOffsetsTopic(
                    Name=t, Partitions=[L.ListOffsetsPartition(PartitionIndex=p, Timestamp=-1) for p in ps]
                )
                for t, ps in by_topic.items()
            ],
        )
        async with KafkaRpcClient(*where[leader]) as c:
            resp = await c.call("ListOffsets", req)
        for t in resp.Topics:
            for p in t.Partitions:
                if p.ErrorCode == 0:
                    out[(t.Name, p.PartitionIndex)] = p.Offset
    return out
