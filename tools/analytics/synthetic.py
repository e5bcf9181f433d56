"""Metadata logs written with our codec, for tests, demos and the ingest benchmark.

`LogWriter` appends KRaft batches to `<base offset>.log` segments the way a controller's log grows.
`dir_failure_batches` is a small cluster story with one directory failure and its recovery;
`write_large_log` a long log with a realistic mix (mostly NoOps, bursts of partition changes);
`migration_batches` a ZooKeeper → KRaft migration (KIP-866) from PRE_MIGRATION to POST_MIGRATION;
`failover_batches` a dir failure written the way our controller writes it (leaders and ISRs moved off
the dir in the batch of the registration change, before it), with the broker's restart and catch-up,
and `write_cluster_work_dir` what `kraftpy cluster` leaves around such a log (configs, brokers' logs).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftpy.log.segment import segment_file_name
from kraftpy.metalog.files import PARTITION_DIR, SnapshotId, snapshot_file_name
from protocol.control_records import SnapshotFooterRecord, SnapshotHeaderRecord
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from protocol.record_batch import build_control_batch, build_metadata_batch
from protocol.uuid import MIGRATING, Uuid

MV_3_9 = 21  # metadata.version 3.9-IV0: RegisterBrokerRecord v3, Partition(Change)Record v1


def amv(message: Any, version: int = 0) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(message, version)


class LogWriter:
    """Appends metadata batches to segments in `directory` (created if missing)."""

    def __init__(self, directory: Path, *, leader_epoch: int = 1, segment_bytes: int = 1 << 30) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.leader_epoch = leader_epoch
        self.segment_bytes = segment_bytes
        existing = sorted(directory.glob("*.log"))
        self.next_offset = 0
        self._segment: Path | None = existing[-1] if existing else None
        if self._segment is not None:
            from tools.analytics.splitting import SEGMENT, scan_file

            last = -1
            for seg in existing:
                scan = scan_file(seg, SEGMENT, range_bytes=1 << 40)
                if scan.last_offset is not None:
                    last = scan.last_offset
            self.next_offset = last + 1

    def roll(self) -> None:
        """Start a new segment at the next offset."""
        self._segment = self.directory / segment_file_name(self.next_offset)
        self._segment.touch()

    def append(self, timestamp_ms: int, records: Sequence[ApiMessageAndVersion]) -> int:
        """Write one batch; returns its base offset."""
        if self._segment is None or self._segment.stat().st_size >= self.segment_bytes:
            self.roll()
        assert self._segment is not None
        base = self.next_offset
        data = build_metadata_batch(base, self.leader_epoch, timestamp_ms, list(records))
        with self._segment.open("ab") as f:
            f.write(data)
        self.next_offset += len(records)
        return base

    def append_all(self, batches: Iterable[tuple[int, Sequence[ApiMessageAndVersion]]]) -> None:
        for ts, records in batches:
            self.append(ts, records)


def uuid_of(name: str) -> Uuid:
    """A stable, non-reserved id for a name, so tests can spell out expected directories."""
    import hashlib

    raw = bytearray(hashlib.sha256(name.encode()).digest()[:16])
    raw[0] = (raw[0] & 0x3F) | 0x40  # never reserved, never printed with a leading '-'
    return Uuid(bytes(raw))


@dataclass(frozen=True)
class DirFailureStory:
    """What `dir_failure_batches` writes, for assertions."""

    t0: int
    failed_broker: int
    failed_dir: Uuid
    failure_ms: int  # timestamp of the BrokerRegistrationChangeRecord
    back_ms: int  # timestamp of the re-registration listing the dir again
    recovered_ms: int  # when the last affected partition had a leader again
    affected_partitions: int
    leaders_lost: int
    topic: str
    topic_id: Uuid


def _register(broker: int, epoch: int, dirs: list[Uuid]) -> ApiMessageAndVersion:
    return amv(
        RegisterBrokerRecord(
            BrokerId=broker,
            IncarnationId=uuid_of(f"incarnation-{broker}-{epoch}"),
            BrokerEpoch=epoch,
            Rack=None,
            Fenced=True,
            InControlledShutdown=False,
            LogDirs=dirs,
        ),
        3,
    )


def dir_failure_batches(
    t0: int = 1_700_000_000_000,
) -> tuple[list[list[tuple[int, list[ApiMessageAndVersion]]]], DirFailureStory]:
    """Three phases of batches: setup, the failure of dir A on broker 1, and broker 1 coming back.

    Brokers 1-3 have dirs A<n> and B<n>. Topic "orders" has four partitions:
    p0 [1,2] on (A1,A2) led by 1; p1 [1,3] on (B1,A3) led by 1; p2 [2,1] on (B2,A1) led by 2;
    p3 [1] on A1 led by 1. A1 fails at t0+10s: p0's leadership moves to 2, p2 drops 1 from its ISR,
    p3 has no other replica and stays leaderless until broker 1 re-registers with A1 at t0+40s and
    is unfenced at t0+41s. So three partitions are affected, two lose their leader, and all have a
    leader again 31 s after the failure.
    """
    dirs = {b: (uuid_of(f"A{b}"), uuid_of(f"B{b}")) for b in (1, 2, 3)}
    topic_id = uuid_of("topic-orders")
    setup: list[tuple[int, list[ApiMessageAndVersion]]] = [
        (t0, [amv(FeatureLevelRecord(Name="metadata.version", FeatureLevel=MV_3_9))]),
    ]
    for b in (1, 2, 3):
        setup.append((t0 + 100 * b, [_register(b, 10 + b, list(dirs[b]))]))
    for b in (1, 2, 3):
        setup.append(
            (
                t0 + 1000 + b,
                [amv(BrokerRegistrationChangeRecord(BrokerId=b, BrokerEpoch=10 + b, Fenced=-1), 2)],
            )
        )
    a = {b: dirs[b][0] for b in dirs}
    bb = {b: dirs[b][1] for b in dirs}
    layout = [
        (0, [1, 2], [a[1], a[2]], 1),
        (1, [1, 3], [bb[1], a[3]], 1),
        (2, [2, 1], [bb[2], a[1]], 2),
        (3, [1], [a[1]], 1),
    ]
    setup.append(
        (
            t0 + 2000,
            [amv(TopicRecord(Name="orders", TopicId=topic_id))]
            + [
                amv(
                    PartitionRecord(
                        PartitionId=p,
                        TopicId=topic_id,
                        Replicas=r,
                        Isr=list(r),
                        Leader=lead,
                        LeaderEpoch=0,
                        PartitionEpoch=0,
                        Directories=d,
                    ),
                    1,
                )
                for p, r, d, lead in layout
            ],
        )
    )
    for i in range(5):
        setup.append((t0 + 3000 + 1000 * i, [amv(NoOpRecord())]))

    fail_ms = t0 + 10_000
    failure = [
        (
            fail_ms,
            [
                amv(BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=11, LogDirs=[bb[1]]), 2),
                amv(PartitionChangeRecord(PartitionId=0, TopicId=topic_id, Leader=2, Isr=[2]), 1),
                amv(PartitionChangeRecord(PartitionId=2, TopicId=topic_id, Isr=[2]), 1),
                amv(PartitionChangeRecord(PartitionId=3, TopicId=topic_id, Leader=-1), 1),
            ],
        ),
    ]
    failure += [(fail_ms + 5000 * i, [amv(NoOpRecord())]) for i in range(1, 6)]

    back_ms = t0 + 40_000
    recovered_ms = t0 + 41_000
    recovery = [
        (back_ms, [_register(1, 50, list(dirs[1]))]),
        (
            recovered_ms,
            [
                amv(BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=50, Fenced=-1), 2),
                amv(PartitionChangeRecord(PartitionId=3, TopicId=topic_id, Leader=1), 1),
            ],
        ),
        (recovered_ms + 1000, [amv(PartitionChangeRecord(PartitionId=0, TopicId=topic_id, Isr=[2, 1]), 1)]),
    ]
    recovery += [(recovered_ms + 1000 + 2000 * i, [amv(NoOpRecord())]) for i in range(1, 4)]
    story = DirFailureStory(
        t0=t0,
        failed_broker=1,
        failed_dir=a[1],
        failure_ms=fail_ms,
        back_ms=back_ms,
        recovered_ms=recovered_ms,
        affected_partitions=3,
        leaders_lost=2,
        topic="orders",
        topic_id=topic_id,
    )
    return [setup, failure, recovery], story


def write_snapshot(
    directory: Path, end_offset: int, epoch: int, timestamp_ms: int, records: Sequence[ApiMessageAndVersion]
) -> Path:
    """A snapshot file as Kafka lays it out: header control batch, data batches from offset 0, footer."""
    header = SnapshotHeaderRecord(Version=0, LastContainedLogTimestamp=timestamp_ms)
    parts = [build_control_batch(0, epoch, timestamp_ms, [header])]
    offset = 1
    for i in range(0, len(records), 50):
        chunk = list(records[i : i + 50])
        parts.append(build_metadata_batch(offset, epoch, timestamp_ms, chunk))
        offset += len(chunk)
    parts.append(build_control_batch(offset, epoch, timestamp_ms, [SnapshotFooterRecord(Version=0)]))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / snapshot_file_name(SnapshotId(end_offset, epoch))
    path.write_bytes(b"".join(parts))
    return path


def write_dir_failure_log(metadata_dir: Path, t0: int = 1_700_000_000_000) -> DirFailureStory:
    """The whole story in `metadata_dir/__cluster_metadata-0`, recovery in a second segment."""
    phases, story = dir_failure_batches(t0)
    w = LogWriter(metadata_dir / PARTITION_DIR)
    w.append_all(phases[0])
    w.append_all(phases[1])
    w.roll()
    w.append_all(phases[2])
    return story


def write_dir_failure_log_from_snapshot(metadata_dir: Path, t0: int = 1_700_000_000_000) -> DirFailureStory:
    """The same story, but the setup lives only in a snapshot: its segment was deleted, as retention does."""
    phases, story = dir_failure_batches(t0)
    part = metadata_dir / PARTITION_DIR
    setup = [r for _, batch in phases[0] for r in batch]
    write_snapshot(part, len(setup), 1, phases[0][-1][0], setup)
    w = LogWriter(part)
    w.next_offset = len(setup)
    w.roll()
    w.append_all(phases[1])
    w.append_all(phases[2])
    return story


def write_large_log(
    directory: Path,
    records: int,
    *,
    brokers: int = 6,
    dirs_per_broker: int = 2,
    topics: int = 20,
    partitions_per_topic: int = 12,
    segment_bytes: int = 128 << 20,
    seed: int = 1,
    t0: int = 1_700_000_000_000,
) -> int:
    """At least `records` records: setup, then NoOp batches and bursts of ISR and leader changes.

    Returns the number of records written.
    """
    rng = random.Random(seed)
    w = LogWriter(directory, segment_bytes=segment_bytes)
    ts = t0
    dirs = {b: [uuid_of(f"d{b}-{i}") for i in range(dirs_per_broker)] for b in range(1, brokers + 1)}
    written = 0

    def put(batch: list[ApiMessageAndVersion]) -> None:
        nonlocal written, ts
        ts += rng.randint(1, 500)
        w.append(ts, batch)
        written += len(batch)

    put([amv(FeatureLevelRecord(Name="metadata.version", FeatureLevel=MV_3_9))])
    for b in range(1, brokers + 1):
        put([_register(b, b, dirs[b])])
        put([amv(BrokerRegistrationChangeRecord(BrokerId=b, BrokerEpoch=b, Fenced=-1), 2)])
    parts: list[tuple[Uuid, int, list[int]]] = []
    for t in range(topics):
        tid = uuid_of(f"topic-{t}")
        batch = [amv(TopicRecord(Name=f"topic-{t}", TopicId=tid))]
        for p in range(partitions_per_topic):
            replicas = rng.sample(range(1, brokers + 1), min(3, brokers))
            directories = [rng.choice(dirs[b]) for b in replicas]
            batch.append(
                amv(
                    PartitionRecord(
                        PartitionId=p,
                        TopicId=tid,
                        Replicas=replicas,
                        Isr=list(replicas),
                        Leader=replicas[0],
                        LeaderEpoch=0,
                        PartitionEpoch=0,
                        Directories=directories,
                    ),
                    1,
                )
            )
            parts.append((tid, p, replicas))
        put(batch)
    noop = [amv(NoOpRecord())]
    while written < records:
        if rng.random() < 0.6:
            put(noop)
            continue
        burst = []
        for _ in range(min(rng.randint(1, 40), records - written)):
            tid, p, replicas = rng.choice(parts)
            if rng.random() < 0.5:
                isr = rng.sample(replicas, rng.randint(1, len(replicas)))
                burst.append(amv(PartitionChangeRecord(PartitionId=p, TopicId=tid, Isr=isr), 1))
            else:
                burst.append(
                    amv(PartitionChangeRecord(PartitionId=p, TopicId=tid, Leader=rng.choice(replicas)), 1)
                )
        put(burst)
    return written


@dataclass(frozen=True)
class MigrationStory:
    """What `migration_batches` writes, for assertions."""

    t0: int
    copy_begin_offset: int
    copy_end_offset: int
    copy_records: int  # between the markers of the committed copy
    copy_record_types: dict[str, int]
    aborted_copies: int
    aborted_record_types: dict[str, int]
    placed_ms: dict[int, int]  # broker -> when its last MIGRATING replica got a real directory
    post_migration_ms: int
    controller_id: int = 3000


Batches = list[tuple[int, list[ApiMessageAndVersion]]]

# topic-migrated's partitions: (partition, replicas, leader)
_MIGRATED_LAYOUT = [(0, [1, 2], 1), (1, [2, 1], 2), (2, [1, 2], 1)]


def _end_offset(batches: Batches) -> int:
    return sum(len(r) for _, r in batches)


def _type_counts(records: Sequence[ApiMessageAndVersion]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[type(r.message).NAME] = out.get(type(r.message).NAME, 0) + 1
    return out


def _migrated_partitions(
    topic_id: Uuid, layout: list[tuple[int, list[int], int]]
) -> list[ApiMessageAndVersion]:
    # Version 0, as the copy writes them: no Directories, so replay makes every replica MIGRATING.
    return [
        amv(
            PartitionRecord(
                PartitionId=p,
                TopicId=topic_id,
                Replicas=r,
                Isr=list(r),
                Leader=lead,
                LeaderEpoch=3,
                PartitionEpoch=5,
            ),
            0,
        )
        for p, r, lead in layout
    ]


def _migration_start(t0: int, dirs: dict[int, list[Uuid]], controller_id: int) -> Batches:
    """Bootstrap with PRE_MIGRATION, the controller ready to migrate, both ZooKeeper brokers registered."""
    from protocol.metadata_records import RegisterControllerRecord, ZkMigrationStateRecord

    out: Batches = [
        (
            t0,
            [
                amv(FeatureLevelRecord(Name="metadata.version", FeatureLevel=MV_3_9)),
                amv(ZkMigrationStateRecord(ZkMigrationState=2)),
            ],
        ),
        (
            t0 + 50,
            [
                amv(
                    RegisterControllerRecord(
                        ControllerId=controller_id,
                        IncarnationId=uuid_of(f"controller-{controller_id}"),
                        ZkMigrationReady=True,
                    )
                )
            ],
        ),
    ]
    for b in (1, 2):
        reg = _register(b, 10 + b, dirs[b])
        reg.message.IsMigratingZkBroker = True
        out.append((t0 + 100 * b, [reg]))
        out.append(
            (
                t0 + 150 * b,
                [amv(BrokerRegistrationChangeRecord(BrokerId=b, BrokerEpoch=10 + b, Fenced=-1), 2)],
            )
        )
    return out


def _aborted_copy(t0: int, topic_id: Uuid) -> tuple[Batches, dict[str, int]]:
    """A copy cut by a controller failover: the next controller aborts it."""
    from protocol.metadata_records import AbortTransactionRecord, BeginTransactionRecord

    held = [
        amv(TopicRecord(Name="migrated", TopicId=topic_id)),
        *_migrated_partitions(topic_id, _MIGRATED_LAYOUT[:1]),
    ]
    batches: Batches = [
        (t0 + 1000, [amv(BeginTransactionRecord(Name="ZK Migration")), *held]),
        (t0 + 1100, [amv(AbortTransactionRecord(Reason="Controller failover"))]),
    ]
    return batches, _type_counts(held)


def _committed_copy(t0: int, topic_id: Uuid) -> tuple[Batches, list[ApiMessageAndVersion]]:
    """The copy in three batches, as the driver writes it: topics and configs, the producer id block,
    then MIGRATION with the end of the transaction."""
    from protocol.metadata_records import (
        BeginTransactionRecord,
        ConfigRecord,
        EndTransactionRecord,
        ProducerIdsRecord,
        ZkMigrationStateRecord,
    )

    topics = [
        amv(TopicRecord(Name="migrated", TopicId=topic_id)),
        *_migrated_partitions(topic_id, _MIGRATED_LAYOUT),
        amv(ConfigRecord(ResourceType=2, ResourceName="migrated", Name="retention.ms", Value="86400000")),
    ]
    producer_ids = [amv(ProducerIdsRecord(BrokerId=-1, BrokerEpoch=-1, NextProducerId=5000))]
    state = amv(ZkMigrationStateRecord(ZkMigrationState=1))
    batches: Batches = [
        (t0 + 2000, [amv(BeginTransactionRecord(Name="ZK Migration"))]),
        (t0 + 2001, topics),
        (t0 + 2002, producer_ids),
        (t0 + 2003, [state, amv(EndTransactionRecord())]),
    ]
    return batches, [*topics, *producer_ids, state]


def _brokers_back_in_kraft(
    t0: int, dirs: dict[int, list[Uuid]], topic_id: Uuid
) -> tuple[Batches, dict[int, int]]:
    """Broker 1, then broker 2, registers as a KRaft broker and places its replicas (AssignReplicasToDirs)."""
    out: Batches = []
    placed: dict[int, int] = {}
    for i, b in enumerate((1, 2)):
        ts = t0 + 10_000 * (i + 1)
        out.append((ts, [_register(b, 100 + b, dirs[b])]))
        placed[b] = ts + 500
        # A broker still in ZooKeeper mode keeps MIGRATING; one back in KRaft mode has placed its own.
        changes = [
            amv(
                PartitionChangeRecord(
                    PartitionId=p,
                    TopicId=topic_id,
                    Directories=[dirs[x][p % 2] if x in placed else MIGRATING for x in r],
                ),
                1,
            )
            for p, r, _ in _MIGRATED_LAYOUT
        ]
        out.append((ts + 500, changes))
    return out, placed


def migration_batches(t0: int = 1_700_000_000_000) -> tuple[Batches, MigrationStory]:
    """A migration of two JBOD ZooKeeper brokers: PRE_MIGRATION at bootstrap, the controller ready, both
    brokers registering as migrating, a copy cut by a failover (aborted), the copy committed (MIGRATION,
    replicas MIGRATING), broker 1 then broker 2 back as KRaft brokers placing their replicas, POST_MIGRATION."""
    from protocol.metadata_records import ZkMigrationStateRecord

    dirs = {b: [uuid_of(f"M{b}a"), uuid_of(f"M{b}b")] for b in (1, 2)}
    topic_id = uuid_of("topic-migrated")
    out = _migration_start(t0, dirs, 3000)
    aborted, aborted_types = _aborted_copy(t0, topic_id)
    out += aborted
    begin_offset = _end_offset(out)
    copy, held = _committed_copy(t0, topic_id)
    out += copy
    end_offset = _end_offset(out) - 1
    back, placed = _brokers_back_in_kraft(t0, dirs, topic_id)
    out += back
    post = t0 + 40_000
    out.append((post, [amv(ZkMigrationStateRecord(ZkMigrationState=3))]))
    story = MigrationStory(
        t0=t0,
        copy_begin_offset=begin_offset,
        copy_end_offset=end_offset,
        copy_records=len(held),
        copy_record_types=_type_counts(held),
        aborted_copies=1,
        aborted_record_types=aborted_types,
        placed_ms=placed,
        post_migration_ms=post,
    )
    return out, story


def write_migration_log(metadata_dir: Path, t0: int = 1_700_000_000_000) -> MigrationStory:
    batches, story = migration_batches(t0)
    LogWriter(metadata_dir / PARTITION_DIR).append_all(batches)
    return story


@dataclass(frozen=True)
class FailoverStory:
    """What `failover_batches` writes, for assertions."""

    t0: int
    failed_broker: int
    failed_dir: Uuid
    dirs: dict[int, tuple[Uuid, Uuid]]  # broker -> (d0, d1)
    batch_offset: int  # first offset of the failure's batch
    failure_offset: int  # the BrokerRegistrationChangeRecord, last in that batch
    failure_ms: int
    second_move_ms: int  # p0's leader moves again
    restart_ms: int  # broker 1 registers again (new epoch and incarnation)
    in_sync_ms: int  # the failed replicas back in their ISRs
    creation_wait_ms: int  # the orders partitions' wait for their first leader
    stuck_created_ms: int  # "stuck"'s partition: created leaderless, never led
    topic_id: Uuid


def failover_batches(t0: int = 1_700_000_000_000) -> tuple[Batches, FailoverStory]:
    """Brokers 1-3 with dirs d0 and d1; topic "orders" (min.insync.replicas=2) created leaderless, led
    124 ms later: p0 [1,2,3] led by 1 on b1/d0, p1 [2,1] led by 2 (1 on b1/d0), p2 [3,2,1] (1 on b1/d1).
    b1/d0 fails: in one batch the controller moves p0's leadership to 2 and takes 1 out of p0's and p1's
    ISRs, then writes the BrokerRegistrationChangeRecord. p0's leader moves on to 3 half a second later;
    broker 1 goes through a controlled shutdown, is fenced, registers again with both dirs, is unfenced,
    and its replicas rejoin the ISRs 6 s after the failure. p1 (RF 2) is under min ISR for those 6 s.
    Topic "stuck" has a partition created without a leader that never gets one (over the grace)."""
    dirs = {b: (uuid_of(f"b{b}d0"), uuid_of(f"b{b}d1")) for b in (1, 2, 3)}
    orders, stuck = uuid_of("topic-orders"), uuid_of("topic-stuck")
    out: Batches = [(t0, [amv(FeatureLevelRecord(Name="metadata.version", FeatureLevel=MV_3_9))])]
    for b in (1, 2, 3):
        out.append((t0 + 100 * b, [_register(b, 10 + b, list(dirs[b]))]))
        out.append(
            (
                t0 + 100 * b + 50,
                [amv(BrokerRegistrationChangeRecord(BrokerId=b, BrokerEpoch=10 + b, Fenced=-1), 2)],
            )
        )
    out.append(
        (
            t0 + 1000,
            [amv(ConfigRecord(ResourceType=2, ResourceName="orders", Name="min.insync.replicas", Value="2"))],
        )
    )
    layout = [
        (0, [1, 2, 3], [dirs[1][0], dirs[2][0], dirs[3][0]], 1),
        (1, [2, 1], [dirs[2][1], dirs[1][0]], 2),
        (2, [3, 2, 1], [dirs[3][0], dirs[2][0], dirs[1][1]], 3),
    ]
    created = t0 + 2000
    out.append(
        (
            created,
            [amv(TopicRecord(Name="orders", TopicId=orders))]
            + [
                amv(
                    PartitionRecord(
                        PartitionId=p,
                        TopicId=orders,
                        Replicas=r,
                        Isr=list(r),
                        Leader=-1,
                        LeaderEpoch=0,
                        PartitionEpoch=0,
                        Directories=d,
                    ),
                    1,
                )
                for p, r, d, _ in layout
            ],
        )
    )
    wait = 124
    out.append(
        (
            created + wait,
            [
                amv(PartitionChangeRecord(PartitionId=p, TopicId=orders, Leader=lead), 1)
                for p, _, _, lead in layout
            ],
        )
    )
    stuck_ms = t0 + 3000
    out.append(
        (
            stuck_ms,
            [
                amv(TopicRecord(Name="stuck", TopicId=stuck)),
                amv(
                    PartitionRecord(
                        PartitionId=0,
                        TopicId=stuck,
                        Replicas=[3],
                        Isr=[3],
                        Leader=-1,
                        LeaderEpoch=0,
                        PartitionEpoch=0,
                        Directories=[dirs[3][1]],
                    ),
                    1,
                ),
            ],
        )
    )
    out += [(t0 + 4000 + 1000 * i, [amv(NoOpRecord())]) for i in range(5)]
    batch_offset = _end_offset(out)
    fail = t0 + 10_000
    out.append(
        (
            fail,
            [
                amv(PartitionChangeRecord(PartitionId=0, TopicId=orders, Leader=2, Isr=[2, 3]), 1),
                amv(PartitionChangeRecord(PartitionId=1, TopicId=orders, Isr=[2]), 1),
                amv(BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=11, LogDirs=[dirs[1][1]]), 2),
            ],
        )
    )
    failure_offset = _end_offset(out) - 1
    move = fail + 500
    out.append((move, [amv(PartitionChangeRecord(PartitionId=0, TopicId=orders, Leader=3), 1)]))
    out += [(fail + 1000 * i, [amv(NoOpRecord())]) for i in (1, 2)]
    out.append(
        (
            fail + 3000,
            [
                amv(BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=11, InControlledShutdown=1), 2),
                amv(PartitionChangeRecord(PartitionId=2, TopicId=orders, Isr=[3, 2]), 1),
            ],
        )
    )
    out.append((fail + 3500, [amv(BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=11, Fenced=1), 2)]))
    restart = fail + 5000
    out.append((restart, [_register(1, 50, list(dirs[1]))]))
    out.append((fail + 5500, [amv(BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=50, Fenced=-1), 2)]))
    in_sync = fail + 6000
    out.append(
        (
            in_sync,
            [
                amv(PartitionChangeRecord(PartitionId=0, TopicId=orders, Isr=[3, 2, 1]), 1),
                amv(PartitionChangeRecord(PartitionId=1, TopicId=orders, Isr=[2, 1]), 1),
                amv(PartitionChangeRecord(PartitionId=2, TopicId=orders, Isr=[3, 2, 1]), 1),
            ],
        )
    )
    out += [(in_sync + 1000 * i, [amv(NoOpRecord())]) for i in (1, 2, 3)]
    story = FailoverStory(
        t0=t0,
        failed_broker=1,
        failed_dir=dirs[1][0],
        dirs=dirs,
        batch_offset=batch_offset,
        failure_offset=failure_offset,
        failure_ms=fail,
        second_move_ms=move,
        restart_ms=restart,
        in_sync_ms=in_sync,
        creation_wait_ms=wait,
        stuck_created_ms=stuck_ms,
        topic_id=orders,
    )
    return out, story


def write_failover_log(metadata_dir: Path, t0: int = 1_700_000_000_000) -> FailoverStory:
    batches, story = failover_batches(t0)
    LogWriter(metadata_dir / PARTITION_DIR).append_all(batches)
    return story


def write_cluster_work_dir(work: Path, story: FailoverStory, *, noticed_before_ms: int = 40) -> Path:
    """The story's log where `kraftpy cluster` keeps the active controller's (controller-3000/meta), with
    what `cluster down` leaves beside it: each broker's config (log.dirs, min.insync.replicas) and log
    ("broker started" with its dirs' paths and ids; broker 1's "log dir failed" `noticed_before_ms`
    before the controller's batch). Returns the metadata dir."""
    import datetime as dt
    import json

    def iso(ms: int) -> str:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"

    (work / "config").mkdir(parents=True, exist_ok=True)
    (work / "logs").mkdir(parents=True, exist_ok=True)
    for b, ids in story.dirs.items():
        paths = [str(work / f"broker-{b}" / f"logs-{i}") for i in range(len(ids))]
        (work / "config" / f"broker-{b}.properties").write_text(
            f"node.id={b}\nprocess.roles=broker\nlog.dirs={','.join(paths)}\nmin.insync.replicas=2\n"
        )
        lines = [
            {
                "broker_id": b,
                "log_dirs": {p: str(i) for p, i in zip(paths, ids, strict=True)},
                "event": "broker started",
                "level": "info",
                "timestamp": iso(story.t0 + 100 * b - 20),
            }
        ]
        if b == story.failed_broker:
            lines.append(
                {
                    "path": paths[0],
                    "dir_id": str(story.failed_dir),
                    "error": "OSError(5, 'Input/output error')",
                    "event": "log dir failed",
                    "level": "error",
                    "timestamp": iso(story.failure_ms - noticed_before_ms),
                }
            )
        (work / "logs" / f"broker-{b}.log").write_text("".join(json.dumps(x) + "\n" for x in lines))
    meta = work / "controller-3000" / "meta"
    LogWriter(meta / PARTITION_DIR).append_all(failover_batches(story.t0)[0])
    return meta
