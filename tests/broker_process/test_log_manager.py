"""The LogManager on real directories (no sockets): plans carried out, lookups, dir failure."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from broker.core.assignments import AssignmentsManager
from broker.core.local_logs import classify
from broker.core.log_placement import LogPlacement
from broker.core.partition_state import local_partition_states, partition_states
from broker.log_manager import LogManager
from broker.partition_dirs import read_found
from broker.storage import LogConfig
from broker.storage.log_dir import LogDir
from kraftpy.image import MetadataImage, TopicIdPartition
from kraftpy.log.partition_metadata import read_partition_metadata, write_partition_metadata
from protocol.errors import Errors, KafkaError
from protocol.uuid import UNASSIGNED, Uuid
from tests.broker_core.helpers import BROKER, TOPIC_A, delta_of, image_of, partition, replicas_change, topic

IDS = [Uuid.from_longs(1000 + i, 77) for i in range(3)]


class Rig:
    def __init__(self, root: Path, *, prepare: Callable[[list[Path]], None] | None = None) -> None:
        self.paths = [root / f"d{i}" for i in range(3)]
        for p in self.paths:
            p.mkdir()
        if prepare is not None:
            prepare(self.paths)
        self.failed: list[Uuid] = []
        self.dirs = {d: LogDir(p, d, on_failure=self._failed) for d, p in zip(IDS, self.paths, strict=True)}
        found = [f for ld in self.dirs.values() for f in read_found(ld, ld.list_partition_dirs())]
        self.hosted = LogPlacement(
            BROKER, {d: str(ld.path) for d, ld in self.dirs.items()}, inventory=classify(found)
        )
        self.assignments = AssignmentsManager(BROKER)
        self.log_manager = LogManager(
            BROKER, self.dirs, self.hosted, self.assignments, LogConfig(), now_ms=lambda: 0
        )

    def publish(
        self,
        image: MetadataImage,
        changed: list[TopicIdPartition] | None = None,
        removed: Iterable[TopicIdPartition] = (),
    ) -> None:
        """As the broker's metadata publisher does."""
        self.log_manager.update_metadata(image)
        if changed is None:
            self.log_manager.publish(local_partition_states(image, BROKER), removed, full=True)
        else:
            states, gone = partition_states(image, BROKER, changed)
            self.log_manager.publish(states, [*removed, *gone])

    def _failed(self, ld: LogDir, exc: BaseException) -> None:
        self.failed.append(ld.dir_id)
        self.log_manager.fail_dir(ld.dir_id)

    def close(self) -> None:
        for ld in self.dirs.values():
            ld.close()


@pytest.fixture
async def rig(tmp_path: Path):  # type: ignore[no-untyped-def]
    r = Rig(tmp_path)
    r.log_manager.start()
    yield r
    await r.log_manager.stop()
    r.close()


def six() -> object:
    return image_of(topic("a", TOPIC_A), *[partition(TOPIC_A, p, [BROKER], [UNASSIGNED]) for p in range(6)])


async def test_new_replicas_are_created_spread_and_queued_for_assignment(rig: Rig) -> None:
    rig.publish(six())  # type: ignore[arg-type]
    await rig.log_manager.wait_settled()
    created = {p.name: i for i, path in enumerate(rig.paths) for p in path.iterdir()}
    assert sorted(created) == [f"a-{p}" for p in range(6)]
    assert sorted(list(created.values()).count(i) for i in range(3)) == [2, 2, 2]
    for name, i in created.items():
        assert read_partition_metadata(rig.paths[i] / name) == TOPIC_A
    queued = {a.partition: a.directory_id for a in rig.assignments.ready.values()}
    assert queued == {int(name.split("-")[1]): IDS[i] for name, i in created.items()}


async def test_lookups_answer_with_kafka_error_codes(rig: Rig) -> None:
    image = image_of(
        topic("a", TOPIC_A),
        partition(TOPIC_A, 0, [BROKER], [UNASSIGNED]),
        partition(TOPIC_A, 1, [9], [UNASSIGNED]),
    )
    rig.publish(image)  # type: ignore[arg-type]
    await rig.log_manager.wait_settled()
    hp = rig.log_manager.get_partition_or_error("a", 0)
    log = await hp.log()
    assert log.log_end_offset == 0
    for topic_name, p, code in (
        ("a", 1, Errors.NOT_LEADER_OR_FOLLOWER),
        ("a", 7, Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ("nope", 0, Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ):
        with pytest.raises(KafkaError) as e:
            rig.log_manager.get_partition_or_error(topic_name, p)
        assert e.value.code == code


async def test_dir_failure_takes_partitions_offline_and_closes_their_files(rig: Rig) -> None:
    rig.publish(six())  # type: ignore[arg-type]
    await rig.log_manager.wait_settled()
    logs = {p: await rig.log_manager.get_partition_or_error("a", p).log() for p in range(6)}
    victim = rig.log_manager.get_partition_or_error("a", 0).log_dir
    assert victim is not None
    victim.fail(OSError(errno.EIO, "Input/output error"))
    assert rig.failed == [victim.dir_id]
    lost = [p for p in range(6) if rig.hosted.get(TOPIC_A, p).location is None]  # type: ignore[union-attr]
    assert len(lost) == 2 and rig.hosted.offline_count() == 2
    for p in lost:
        with pytest.raises(KafkaError) as e:
            rig.log_manager.get_partition_or_error("a", p)
        assert e.value.code == Errors.KAFKA_STORAGE_ERROR
        with pytest.raises(KafkaError) as e:
            await rig.log_manager.get_partition(TOPIC_A, p).log()  # type: ignore[union-attr]
        assert e.value.code == Errors.KAFKA_STORAGE_ERROR
    for _ in range(200):
        if all(logs[p]._closed for p in lost):
            break
        await asyncio.sleep(0.01)
    assert all(logs[p]._closed for p in lost), "files of the failed dir are closed"
    assert not any(logs[p]._closed for p in range(6) if p not in lost)


async def test_strays_are_moved_aside_and_unhosted_replicas_deleted(tmp_path: Path) -> None:
    def prepare(paths: list[Path]) -> None:
        (
            paths[0] / "a-0"
        ).mkdir()  # no partition.metadata (field bug 20): adopted, the metadata places it here
        (paths[0] / "b-1").mkdir()  # no partition.metadata, and nothing places it here: a stray
        (paths[1] / "old-3").mkdir()  # a topic the metadata does not know
        write_partition_metadata(paths[1] / "old-3", Uuid.from_longs(5, 5))

    rig = Rig(tmp_path, prepare=prepare)
    rig.log_manager.start()
    try:
        image = image_of(topic("a", TOPIC_A), partition(TOPIC_A, 0, [BROKER], [UNASSIGNED]))
        rig.publish(image)  # type: ignore[arg-type]
        await rig.log_manager.wait_settled()
        names = {i: sorted(p.name for p in path.iterdir()) for i, path in enumerate(rig.paths)}
        assert "a-0" in names[0] and not any(n.startswith("a-0.") for n in names[0]), names
        assert any(n.startswith("b-1.") and n.endswith("-stray") for n in names[0]), names
        assert any(n.startswith("old-3.") and n.endswith("-stray") for n in names[1]), names
        where = rig.hosted.get(TOPIC_A, 0).location  # type: ignore[union-attr]
        assert where is not None and rig.dirs[where].path == rig.paths[0]
        assert read_partition_metadata(rig.paths[0] / "a-0") == TOPIC_A
        # The replica moves to other brokers: its log is deleted.
        delta = delta_of(image, replicas_change(TOPIC_A, 0, [7, 8], [UNASSIGNED, UNASSIGNED]))
        changes = delta.local_changes(BROKER)
        rig.publish(delta.apply(), [], changes.deletes)
        await rig.log_manager.wait_settled()
        assert not (rig.dirs[where].path / "a-0").exists()
        assert rig.log_manager.get_partition(TOPIC_A, 0) is None
    finally:
        await rig.log_manager.stop()
        rig.close()


async def test_a_dir_failing_while_it_creates_logs_answers_those_waiting_for_them(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first read (or a LeaderAndIsr answer) waits for its log to be created; when the dir fails
    under the create, it hears KAFKA_STORAGE_ERROR at once instead of waiting for ever."""
    from broker import partition_dirs

    victim = rig.paths[0]
    create = partition_dirs.create_partitions

    def create_or_fail(path: Path, *args: object) -> object:
        if path == victim:
            raise OSError(errno.EIO, "Input/output error")
        return create(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(partition_dirs, "create_partitions", create_or_fail)
    rig.publish(six())  # type: ignore[arg-type]
    hosted = [rig.log_manager.get_partition(TOPIC_A, p) for p in range(6)]
    assert all(hp is not None and not hp.created.is_set() for hp in hosted)
    reads = [asyncio.ensure_future(hp.log()) for hp in hosted]  # type: ignore[union-attr]
    _, pending = await asyncio.wait(reads, timeout=5)
    assert not pending, "every read of a log being created is answered"
    assert rig.failed == [IDS[0]]
    failed = [r for r in reads if r.exception() is not None]
    assert len(failed) == 2
    for r in failed:
        e = r.exception()
        assert isinstance(e, KafkaError) and e.code == Errors.KAFKA_STORAGE_ERROR
    assert all(r.result().log_end_offset == 0 for r in reads if r.exception() is None)


async def test_a_created_flag_cleared_for_a_new_dir_keeps_its_waiters() -> None:
    """A replica placed in another dir is created again there: who waited for the first create
    waits for the second; a wake releases them unset."""
    from broker.hosted_log import Flag

    flag = Flag()
    waiting = asyncio.ensure_future(flag.wait())
    await asyncio.sleep(0)
    flag.clear()
    await asyncio.sleep(0.01)
    assert not waiting.done()
    flag.set()
    assert await asyncio.wait_for(waiting, 5) is True
    flag.clear()
    waiting = asyncio.ensure_future(flag.wait())
    await asyncio.sleep(0)
    flag.wake()
    assert await asyncio.wait_for(waiting, 5) is False and not flag.is_set()
