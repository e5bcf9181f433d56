"""`kraftpy metadata quorum`: the controller quorum as kafka-metadata-quorum.sh shows it.

    kraftpy metadata quorum --bootstrap-controller HOST:PORT[,...] describe --status
    kraftpy metadata quorum --bootstrap-controller HOST:PORT[,...] describe --replication

Any one controller will do: every controller answers DescribeCluster for the controllers with the
leader's id and the voters' endpoints, and the leader answers DescribeQuorum. `--status` prints the
leader, its epoch and high watermark, how far the slowest voter lags (in offsets and in time) and
who votes and who observes; `--replication` one row per replica: leader, followers, then observers.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tools.cli.errors import UserError
from tools.client.cli_support import run

if TYPE_CHECKING:
    from protocol.rpc.describe_quorum import ReplicaState

DESCRIBE_QUORUM_VERSION = 1
DESCRIBE_CLUSTER_VERSION = 1
REPLICATION_HEADERS = (
    "NodeId",
    "LogEndOffset",
    "Lag",
    "LastFetchTimestamp",
    "LastCaughtUpTimestamp",
    "Status",
)


def add_parser(msub: argparse._SubParsersAction) -> None:
    p = msub.add_parser(
        "quorum",
        help="describe the KRaft controller quorum (kafka-metadata-quorum)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--bootstrap-controller",
        required=True,
        metavar="HOST:PORT[,...]",
        help="one or more controllers (any of them: the leader is found from there)",
    )
    verbs = p.add_subparsers(dest="quorum_command", metavar="ACTION", required=True)
    d = verbs.add_parser("describe", help="the quorum's status or each replica's replication")
    what = d.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="leader, epoch, high watermark, lag, voters")
    what.add_argument("--replication", action="store_true", help="one row per voter and observer")
    d.set_defaults(func=lambda a: run("metadata quorum", lambda: _describe(a)))


@dataclass(frozen=True)
class Replica:
    node_id: int
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass(frozen=True)
class QuorumInfo:
    """Kafka's QuorumInfo: what DescribeQuorum's leader said, with the cluster id beside it."""

    cluster_id: str
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]

    def leader(self) -> Replica:
        for v in self.voters:
            if v.node_id == self.leader_id:
                return v
        raise ValueError(f"the leader {self.leader_id} is not among the voters")


def parse_addresses(text: str) -> list[tuple[str, int]]:
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(f"--bootstrap-controller '{item}' is not of the form HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise UserError("--bootstrap-controller names no controller")
    return out


def status_text(info: QuorumInfo) -> str:
    """`describe --status`: Kafka's labels, values from column 25."""
    leader = info.leader()
    slowest = min(info.voters, key=lambda v: v.log_end_offset)
    lag = leader.log_end_offset - slowest.log_end_offset
    if slowest is leader or slowest.log_end_offset == leader.log_end_offset:
        lag_ms = 0
    elif leader.last_caught_up_ms >= 0 and slowest.last_caught_up_ms >= 0:
        lag_ms = leader.last_caught_up_ms - slowest.last_caught_up_ms
    else:
        lag_ms = -1
    rows = [
        ("ClusterId", info.cluster_id),
        ("LeaderId", info.leader_id),
        ("LeaderEpoch", info.leader_epoch),
        ("HighWatermark", info.high_watermark),
        ("MaxFollowerLag", lag),
        ("MaxFollowerLagTimeMs", lag_ms),
        ("CurrentVoters", _ids(v.node_id for v in info.voters)),
        ("CurrentObservers", _ids(o.node_id for o in info.observers)),
    ]
    return "\n".join(f"{label + ':':<24}{value}" for label, value in rows)


def replication_rows(info: QuorumInfo) -> list[tuple[str, ...]]:
    leader = info.leader()
    ordered = [(leader, "Leader")]
    ordered += [(v, "Follower") for v in info.voters if v.node_id != info.leader_id]
    ordered += [(o, "Observer") for o in info.observers]
    return [
        (
            str(r.node_id),
            str(r.log_end_offset),
            str(leader.log_end_offset - r.log_end_offset),
            str(r.last_fetch_ms),
            str(r.last_caught_up_ms),
            status,
        )
        for r, status in ordered
    ]


def table_text(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns as wide as their widest cell, separated by a tab, as Kafka's tools print tables."""
    widths = [max(len(headers[i]), *(len(r[i]) for r in rows)) for i in range(len(headers))]
    lines = [headers, *rows]
    return "\n".join(
        "\t".join(f"{cell:<{w}}" for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _ids(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


async def describe_quorum(addresses: Sequence[tuple[str, int]], timeout: float = 5.0) -> QuorumInfo:
    """Ask the bootstrap controllers for the leader, then the leader for DescribeQuorum."""
    from protocol.errors import Errors, KafkaError
    from protocol.rpc.describe_cluster import ENDPOINT_TYPE_CONTROLLER, DescribeClusterRequest
    from protocol.rpc.describe_quorum import DescribeQuorumRequest
    from protocol.transport.client import NO_RETRIES, RpcClient
    from tools.client.security import client_context

    problems: list[str] = []
    tls = client_context()

    async def ask(where: str, api: str, request: Any, version: int) -> Any | None:
        """The answer, or None with the problem noted (no answer, or an error code)."""
        try:
            async with RpcClient(f"http://{where}", timeout=timeout, retry=NO_RETRIES, ssl=tls) as client:
                answer = await client.call(api, request, version)
        except KafkaError as e:
            problems.append(f"{api} to {where}: {e.message or e.code.name}")
            return None
        if answer.ErrorCode != 0:
            problems.append(f"{api} to {where}: {Errors(answer.ErrorCode).name}")
            return None
        return answer

    for host, port in addresses:
        where = f"{host}:{port}"
        cluster = await ask(
            where,
            "DescribeCluster",
            DescribeClusterRequest(EndpointType=ENDPOINT_TYPE_CONTROLLER),
            DESCRIBE_CLUSTER_VERSION,
        )
        if cluster is None:
            continue
        leader = next((c for c in cluster.Brokers if c.BrokerId == cluster.ControllerId), None)
        if leader is None:
            problems.append(f"{where}: no leader known yet (an election may be under way)")
            continue
        quorum = await ask(
            f"{leader.Host}:{leader.Port}", "DescribeQuorum", DescribeQuorumRequest(), DESCRIBE_QUORUM_VERSION
        )
        if quorum is None:
            continue
        return QuorumInfo(
            cluster_id=cluster.ClusterId,
            leader_id=quorum.LeaderId,
            leader_epoch=quorum.LeaderEpoch,
            high_watermark=quorum.HighWatermark,
            voters=tuple(_replica(r) for r in quorum.CurrentVoters),
            observers=tuple(_replica(r) for r in quorum.Observers),
        )
    raise KafkaError(
        Errors.NETWORK_EXCEPTION, "no controller could describe the quorum: " + "; ".join(problems)
    )


def _replica(r: ReplicaState) -> Replica:
    return Replica(
        node_id=r.ReplicaId,
        log_end_offset=r.LogEndOffset,
        last_fetch_ms=r.LastFetchTimestamp,
        last_caught_up_ms=r.LastCaughtUpTimestamp,
    )


async def _describe(args: argparse.Namespace) -> int:
    info = await describe_quorum(parse_addresses(args.bootstrap_controller))
    if args.status:
        print(status_text(info))
    else:
        print(table_text(REPLICATION_HEADERS, replication_rows(info)))
    return 0
