"""kafka-reassign-partitions.sh's JSON, read and written as Kafka's tool does, and its --generate.

A reassignment file: `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],
"log_dirs":["any","/data/d1"]}]}`; `log_dirs` (optional) names, per replica, the absolute log dir
to put it in on that broker ("any": wherever the broker likes). A topics file for --generate:
`{"version":1,"topics":[{"topic":"t"}]}`. Everything here is pure: no cluster is asked.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.zk.placement import PlacementError, assign_replicas
from tools.cli.errors import UserError

ANY_LOG_DIR = "any"

TopicPartition = tuple[str, int]
Replica = tuple[str, int, int]
"""(topic, partition, broker): Kafka's TopicPartitionReplica, printed `t-0-1`."""


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def replica_name(r: Replica) -> str:
    return f"{r[0]}-{r[1]}-{r[2]}"


@dataclass(frozen=True)
class ReassignmentPlan:
    """The partitions to move, in file order, and the log dir wanted for some of their replicas."""

    partitions: list[tuple[TopicPartition, list[int]]] = field(default_factory=list)
    log_dirs: dict[Replica, str] = field(default_factory=dict)

    @property
    def targets(self) -> dict[TopicPartition, list[int]]:
        return dict(self.partitions)


def _load(text: str, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{what} is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise UserError(f"{what} must be a JSON object, not {type(doc).__name__}")
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise UserError(f"{what}: Not supported version field value {version}")
    return doc


def _list_of(doc: dict[str, Any], key: str, what: str) -> list[Any]:
    items = doc.get(key, [])
    if not isinstance(items, list):
        raise UserError(f'{what}: "{key}" must be a list')
    return items


def _int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise UserError(f"{where} must be an integer, not {json.dumps(value)}")
    return value


def parse_reassignment(text: str, what: str = "the reassignment JSON") -> ReassignmentPlan:
    """Kafka's parsePartitionReassignmentData: every entry read, nothing deduplicated (the checks
    for --execute come after, in `check_for_execute`)."""
    doc = _load(text, what)
    plan = ReassignmentPlan()
    for i, entry in enumerate(_list_of(doc, "partitions", what)):
        where = f"{what}: partitions[{i}]"
        if not isinstance(entry, dict):
            raise UserError(f"{where} must be an object")
        for key in ("topic", "partition", "replicas"):
            if key not in entry:
                raise UserError(f'{where} has no "{key}"')
        topic = entry["topic"]
        if not isinstance(topic, str) or not topic:
            raise UserError(f"{where}.topic must be a topic name, not {json.dumps(topic)}")
        partition = _int(entry["partition"], f"{where}.partition")
        replicas = entry["replicas"]
        if not isinstance(replicas, list):
            raise UserError(f"{where}.replicas must be a list of broker ids")
        replicas = [_int(b, f"{where}.replicas") for b in replicas]
        dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            raise UserError(f'{where}.log_dirs must be a list of paths or "any"')
        tp = (topic, partition)
        if len(dirs) != len(replicas):
            raise UserError(
                f"Size of replicas list {replicas} is different from size of log dirs list {dirs} "
                f"for partition {tp_name(tp)}"
            )
        plan.partitions.append((tp, replicas))
        for broker, d in zip(replicas, dirs, strict=True):
            if d != ANY_LOG_DIR:
                plan.log_dirs[(topic, partition, broker)] = d
    return plan


def check_for_execute(plan: ReassignmentPlan) -> None:
    """Kafka's parseExecuteAssignmentArgs: something to do, no empty replica list, no partition
    twice, no broker twice in one partition."""
    if not plan.partitions:
        raise UserError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in plan.partitions):
        raise UserError("Partition replica list cannot be empty")
    twice = [tp for tp, n in Counter(tp for tp, _ in plan.partitions).items() if n > 1]
    if twice:
        raise UserError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(tp_name(tp) for tp in twice)
        )
    dups = []
    for tp, replicas in plan.partitions:
        again = [b for b, n in Counter(replicas).items() if n > 1]
        if again:
            dups.append(f"{tp_name(tp)} contains multiple entries for {','.join(map(str, again))}")
    if dups:
        raise UserError("Partition replica lists may not contain duplicate entries: " + ". ".join(dups))


def parse_topics(text: str, what: str = "the topics-to-move JSON") -> list[str]:
    """Kafka's parseTopicsData, and --generate's check that no topic is named twice."""
    doc = _load(text, what)
    topics = []
    for i, entry in enumerate(_list_of(doc, "topics", what)):
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str) or not entry["topic"]:
            raise UserError(f'{what}: topics[{i}] must be an object with a "topic" name')
        topics.append(entry["topic"])
    twice = sorted(t for t, n in Counter(topics).items() if n > 1)
    if twice:
        raise UserError(f"List of topics to reassign contains duplicate entries: {', '.join(twice)}")
    return topics


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise UserError(f"--broker-list must be comma-separated broker ids, got '{text}'") from None
    if not brokers:
        raise UserError("--broker-list names no broker")
    twice = sorted(b for b, n in Counter(brokers).items() if n > 1)
    if twice:
        raise UserError(f"Broker list contains duplicate entries: {', '.join(map(str, twice))}")
    return brokers


def format_reassignment(
    partitions: Mapping[TopicPartition, Sequence[int]], log_dirs: Mapping[Replica, str] | None = None
) -> str:
    """Kafka's formatAsReassignmentJson: sorted by topic then partition, compact."""
    out = []
    for tp in sorted(partitions):
        replicas = list(partitions[tp])
        dirs = [(log_dirs or {}).get((tp[0], tp[1], b), ANY_LOG_DIR) for b in replicas]
        out.append({"topic": tp[0], "partition": tp[1], "replicas": replicas, "log_dirs": dirs})
    return json.dumps({"version": 1, "partitions": out}, separators=(",", ":"))


def propose(
    current: Mapping[TopicPartition, Sequence[int]], brokers: Iterable[int], rng: random.Random
) -> dict[TopicPartition, list[int]]:
    """--generate: each topic's partitions placed afresh on `brokers` with the topic's replication
    factor, by Kafka's rack-unaware AdminUtils.assignReplicasToBrokers."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in current:
        by_topic.setdefault(tp[0], []).append(tp)
    pool = list(brokers)
    out: dict[TopicPartition, list[int]] = {}
    for topic in sorted(by_topic):
        tps = sorted(by_topic[topic])
        rf = len(current[tps[0]])
        try:
            placed = assign_replicas(pool, len(tps), rf, rng=rng)
        except PlacementError as e:
            raise UserError(f"topic {topic}: {e}") from None
        for p, replicas in placed.items():
            out[(topic, p)] = replicas
    return out
