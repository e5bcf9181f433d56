"""The admin calls partition reassignment needs (what Kafka's Admin does for its reassign tool):
AlterPartitionReassignments and ListPartitionReassignments through any broker (it forwards them
to the controller), AlterReplicaLogDirs to the broker holding the replica, and where each
replica's log lives (current and future dir, from DescribeLogDirs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from protocol.errors import Errors
from protocol.rpc.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from protocol.rpc.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from tools.client.admin import Admin
from tools.client.errors import ClientError, as_error

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Ongoing:
    """A reassignment under way, as ListPartitionReassignments tells it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReplicaLogDirs:
    """Where a replica's log is on its broker: the current dir and, while it moves, the future one
    (None: not there)."""

    current: str | None
    future: str | None


class ReassignAdmin(Admin):
    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, tuple[Errors, str | None]]:
        """Start (a replica list) or cancel (None) each partition's reassignment; each one's outcome."""
        A = AlterPartitionReassignmentsRequest
        by_topic: dict[str, list[A.ReassignablePartition]] = {}
        for (topic, partition), replicas in targets.items():
            by_topic.setdefault(topic, []).append(
                A.ReassignablePartition(
                    PartitionIndex=partition, Replicas=None if replicas is None else list(replicas)
                )
            )
        req = A(
            TimeoutMs=self.timeout_ms,
            Topics=[A.ReassignableTopic(Name=t, Partitions=ps) for t, ps in by_topic.items()],
        )
        resp = await self._call_any("AlterPartitionReassignments", req, 0)
        assert isinstance(resp, AlterPartitionReassignmentsResponse)
        if resp.ErrorCode:
            raise ClientError(as_error(resp.ErrorCode), resp.ErrorMessage or as_error(resp.ErrorCode).name)
        return {
            (t.Name, p.PartitionIndex): (as_error(p.ErrorCode), p.ErrorMessage)
            for t in resp.Responses
            for p in t.Partitions
        }

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, Ongoing]:
        """The reassignments under way: all of them, or those among `partitions`."""
        L = ListPartitionReassignmentsRequest
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = [
                L.ListPartitionReassignmentsTopics(Name=t, PartitionIndexes=ps) for t, ps in by_topic.items()
            ]
        resp = await self._call_any(
            "ListPartitionReassignments", L(TimeoutMs=self.timeout_ms, Topics=topics), 0
        )
        assert isinstance(resp, ListPartitionReassignmentsResponse)
        if resp.ErrorCode:
            raise ClientError(as_error(resp.ErrorCode), resp.ErrorMessage or as_error(resp.ErrorCode).name)
        return {
            (t.Name, p.PartitionIndex): Ongoing(
                tuple(p.Replicas), tuple(p.AddingReplicas), tuple(p.RemovingReplicas)
            )
            for t in resp.Topics
            for p in t.Partitions
        }

    async def replica_log_dirs(
        self, replicas: Iterable[tuple[str, int, int]]
    ) -> dict[tuple[str, int, int], ReplicaLogDirs]:
        """Each replica's current and future log dir (Kafka's describeReplicaLogDirs); a replica
        whose broker did not answer is left out."""
        wanted: dict[int, dict[str, list[int]]] = {}
        for topic, partition, broker in replicas:
            wanted.setdefault(broker, {}).setdefault(topic, []).append(partition)
        found: dict[tuple[str, int, int], ReplicaLogDirs] = {}

        async def one(broker_id: int, topics: dict[str, list[int]]) -> None:
            [result] = await self.describe_log_dirs([broker_id], topics)
            if result.response is None:
                return
            for topic, partitions in topics.items():
                for partition in partitions:
                    found[(topic, partition, broker_id)] = ReplicaLogDirs(None, None)
            for d in result.response.Results:
                if d.ErrorCode:
                    continue
                for t in d.Topics:
                    for p in t.Partitions:
                        key = (t.Name, p.PartitionIndex, broker_id)
                        if key not in found:
                            continue
                        was = found[key]
                        found[key] = (
                            ReplicaLogDirs(was.current, d.LogDir)
                            if p.IsFutureKey
                            else ReplicaLogDirs(d.LogDir, was.future)
                        )

        await asyncio.gather(*(one(b, ts) for b, ts in wanted.items()))
        return found
