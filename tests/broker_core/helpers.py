"""Builders for broker-core tests: metadata images from records, a fake clock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from broker.core.log_placement import LogPlacement, Plan
from broker.core.partition_state import local_partition_states, partition_states
from kraftpy.image import MetadataDelta, MetadataImage, TopicIdPartition
from protocol import metadata_records as mr
from protocol.uuid import Uuid

BROKER = 1
TOPIC_A = Uuid.from_string("Wq1HUHrMS8uW6xX2TIPcwA")
TOPIC_B = Uuid.from_string("b3F6HUXmSyKbVEQ8nCdWmQ")
D1 = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")
D2 = Uuid.from_string("uqILiACavwjFzy-6zrtdOw")
D3 = Uuid.from_string("h6pDfZcK7RCGV0SBTRYdAA")
GONE = Uuid.from_string("Dr2g1aSYT8yJmS7L2uUTVQ")
PATHS = {D1: "/data/d1", D2: "/data/d2", D3: "/data/d3"}


@dataclass
class FakeClock:
    now_ms: int = 1_000_000

    def advance(self, ms: int) -> int:
        self.now_ms += ms
        return self.now_ms


def topic(name: str, topic_id: Uuid) -> mr.TopicRecord:
    return mr.TopicRecord(Name=name, TopicId=topic_id)


def partition(
    topic_id: Uuid,
    pid: int,
    replicas: Sequence[int],
    dirs: Sequence[Uuid],
    *,
    leader: int | None = None,
) -> mr.PartitionRecord:
    return mr.PartitionRecord(
        PartitionId=pid,
        TopicId=topic_id,
        Replicas=list(replicas),
        Isr=list(replicas),
        Leader=replicas[0] if leader is None else leader,
        LeaderEpoch=0,
        PartitionEpoch=0,
        Directories=list(dirs),
    )


def dir_change(topic_id: Uuid, pid: int, dirs: Sequence[Uuid]) -> mr.PartitionChangeRecord:
    return mr.PartitionChangeRecord(TopicId=topic_id, PartitionId=pid, Directories=list(dirs))


def replicas_change(
    topic_id: Uuid, pid: int, replicas: Sequence[int], dirs: Sequence[Uuid]
) -> mr.PartitionChangeRecord:
    return mr.PartitionChangeRecord(
        TopicId=topic_id,
        PartitionId=pid,
        Replicas=list(replicas),
        Isr=list(replicas),
        Directories=list(dirs),
        Leader=replicas[0],
    )


def image_of(*records: object, base: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    delta = MetadataDelta(base)
    for i, r in enumerate(records):
        delta.replay(r, base.offset + 1 + i)
    return delta.apply()


def delta_of(base: MetadataImage, *records: object) -> MetadataDelta:
    delta = MetadataDelta(base)
    for i, r in enumerate(records):
        delta.replay(r, base.offset + 1 + i)
    return delta


def apply_image(
    hosted: LogPlacement,
    image: MetadataImage,
    changed: Iterable[TopicIdPartition] | None = None,
    removed: Iterable[TopicIdPartition] = (),
) -> Plan:
    """Feed `image` to `hosted` as the broker's metadata publisher does: every partition on BROKER
    (`changed` None), or the partitions given."""
    if changed is None:
        return hosted.apply(local_partition_states(image, BROKER), removed, full=True)
    states, gone = partition_states(image, BROKER, changed)
    return hosted.apply(states, [*removed, *gone])
