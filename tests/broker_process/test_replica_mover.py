"""Intra-broker moves on real directories (the ReplicaMover beside a LogManager, no sockets):
the copy, the controller's acceptance, the swap with the leader-epoch history, the refusals, and a
future log that must be caught up before it is promoted at startup."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.replica_mover import ReplicaMover
from broker.storage import LogConfig, PartitionLog
from broker.storage.dir_names import TopicPartition, future_dir_name
from kraftpy.log.partition_metadata import write_partition_metadata
from protocol.errors import Errors
from protocol.rpc.alter_replica_log_dirs import AlterReplicaLogDirsRequest
from protocol.uuid import UNASSIGNED
from tests.broker_core.helpers import BROKER, TOPIC_A, image_of, partition, topic
from tests.broker_process.test_log_manager import IDS, Rig
from tests.broker_storage.batches import value_batch


def _image(dirs: list) -> object:  # type: ignore[type-arg]
    return image_of(topic("a", TOPIC_A), *[partition(TOPIC_A, p, [BROKER], [d]) for p, d in enumerate(dirs)])


def _mover(rig: Rig, **kw: int) -> ReplicaMover:
    m = ReplicaMover(
        rig.log_manager,
        rig.assignments,
        LogConfig(),
        now_ms=lambda: 0,
        bytes_per_second=kw.get("rate", 2**63 - 1),
        round_bytes=kw.get("round", 4096),
    )
    rig.log_manager.mover = m
    rig.log_manager.configured_paths = {str(p) for p in rig.paths}
    return m


async def _until(check, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def _batches(log: PartitionLog) -> list[bytes]:
    return [b for _, b in log.iter_batches()]


async def _moving_with_five_records(rig: Rig, mover: ReplicaMover):  # type: ignore[no-untyped-def]
    """a-0 in d0 holding five records, asked to move to d1, caught up: its assignment is queued."""
    rig.publish(_image([IDS[0]]))
    await rig.log_manager.wait_settled()
    hl = rig.log_manager.get_partition(TOPIC_A, 0)
    current = await hl.log()
    await hl.log_dir.run(current.append_as_leader, value_batch(5), 1)
    assert await mover.request_move("a", 0, str(rig.paths[1])) is Errors.NONE
    key = (TOPIC_A, 0)
    await _until(lambda: key in rig.assignments.ready)
    return hl, current, key


@pytest.fixture
async def rig(tmp_path: Path):  # type: ignore[no-untyped-def]
    r = Rig(tmp_path)
    r.log_manager.start()
    yield r
    await r.log_manager.stop()
    r.close()


async def test_a_replica_moves_after_the_controller_accepts_and_keeps_its_epoch_history(rig: Rig) -> None:
    mover = _mover(rig)
    rig.publish(_image([IDS[0]]))
    await rig.log_manager.wait_settled()
    hl = rig.log_manager.get_partition(TOPIC_A, 0)
    current = await hl.log()
    for epoch in (1, 1, 3):
        await hl.log_dir.run(current.append_as_leader, value_batch(5), epoch)
    # Leader at epoch 7 with nothing appended yet: only the epoch cache knows (field bug 17).
    await hl.log_dir.run(current.assign_epoch_start_offset, 7, current.log_end_offset)
    before = (_batches(current), current.epoch_cache.entries)

    code = await mover.request_move("a", 0, str(rig.paths[1]))
    assert code is Errors.NONE
    key = (TOPIC_A, 0)
    await _until(lambda: key in rig.assignments.ready)
    assignment = rig.assignments.ready[key]
    assert assignment.directory_id == IDS[1] and assignment.reason == "Future replica promotion"
    assert hl.log_dir.dir_id == IDS[0]  # nothing swaps before the controller accepts
    [(_tp, size, lag)] = mover.future_replicas(IDS[1])
    assert size > 0 and lag == 0
    await hl.log_dir.run(current.append_as_leader, value_batch(2), 7)  # appends go on meanwhile
    assignment.on_success()
    await _until(lambda: not mover.moves)

    assert hl.log_dir.dir_id == IDS[1]
    moved = await hl.log()
    assert moved is not current and moved.dir == rig.paths[1] / "a-0"
    assert _batches(moved)[: len(before[0])] == before[0] and len(_batches(moved)) == len(before[0]) + 1
    assert moved.epoch_cache.entries == before[1]
    assert rig.hosted.get(TOPIC_A, 0).location == IDS[1]
    await _until(lambda: not (rig.paths[0] / "a-0").exists() and not list(rig.paths[0].iterdir()))
    assert not [p for p in rig.paths[1].iterdir() if p.name.endswith("-future")]


async def test_bad_moves_get_kafkas_error_codes_and_change_nothing(rig: Rig, tmp_path: Path) -> None:
    mover = _mover(rig)
    rig.publish(_image([IDS[0]]))
    await rig.log_manager.wait_settled()
    await rig.log_manager.get_partition(TOPIC_A, 0).log()
    listing = {p: sorted(x.name for x in p.iterdir()) for p in rig.paths}

    assert await mover.request_move("a", 0, str(tmp_path / "elsewhere")) is Errors.LOG_DIR_NOT_FOUND
    assert await mover.request_move("nope", 0, str(rig.paths[1])) is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert await mover.request_move("a", 9, str(rig.paths[1])) is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert await mover.request_move("a" * 250, 0, str(rig.paths[1])) is Errors.INVALID_TOPIC_EXCEPTION
    assert await mover.request_move("a", 0, str(rig.paths[0])) is Errors.NONE  # already there
    rig.log_manager.fail_dir(IDS[2])
    rig.dirs[IDS[2]].fail(OSError(5, "gone"))
    assert await mover.request_move("a", 0, str(rig.paths[2])) is Errors.KAFKA_STORAGE_ERROR
    assert not mover.moves and not rig.assignments.ready
    assert {p: sorted(x.name for x in p.iterdir()) for p in rig.paths} == listing

    resp = await mover.alter_replica_log_dirs(
        AlterReplicaLogDirsRequest(
            Dirs=[
                AlterReplicaLogDirsRequest.AlterReplicaLogDir(
                    Path=str(tmp_path / "elsewhere"),
                    Topics=[AlterReplicaLogDirsRequest.AlterReplicaLogDirTopic(Name="a", Partitions=[0])],
                )
            ]
        ),
        2,
    )
    assert resp.Results[0].TopicName == "a"
    assert resp.Results[0].Partitions[0].ErrorCode == Errors.LOG_DIR_NOT_FOUND


async def test_a_replica_not_hosted_yet_is_created_where_it_was_asked_to_go(rig: Rig) -> None:
    mover = _mover(rig)
    rig.publish(image_of(topic("a", TOPIC_A), partition(TOPIC_A, 0, [BROKER + 1], [IDS[0]])))
    await rig.log_manager.wait_settled()
    assert await mover.request_move("a", 0, str(rig.paths[2])) is Errors.REPLICA_NOT_AVAILABLE

    rig.publish(image_of(topic("a", TOPIC_A), partition(TOPIC_A, 0, [BROKER], [UNASSIGNED])))
    await rig.log_manager.wait_settled()
    assert rig.hosted.get(TOPIC_A, 0).location == IDS[2]
    assert (rig.paths[2] / "a-0").is_dir()


async def test_a_failed_destination_cancels_the_move_and_reverts_the_assignment(rig: Rig) -> None:
    mover = _mover(rig)
    hl, current, key = await _moving_with_five_records(rig, mover)
    rig.dirs[IDS[1]].fail(OSError(5, "gone"))
    mover.on_dir_failure(IDS[1])
    await _until(lambda: not mover.moves)
    reverted = rig.assignments.ready[key]
    assert reverted.directory_id == IDS[0] and "Reverting" in reverted.reason
    assert hl.log_dir.dir_id == IDS[0] and hl.online and (await hl.log()) is current


def _prepare_half_moved(paths: list[Path]) -> None:
    """`a-0` in d0 with 4 batches, its future log in d1 with the first 2 (a broker killed after the
    controller accepted the move, while appends were still reaching the current log)."""
    tp = TopicPartition("a", 0)
    cur = PartitionLog.open(paths[0] / "a-0", topic_id=TOPIC_A)
    for i in range(4):
        cur.append_as_leader(value_batch(3, tag=i), 2)
    fut_dir = paths[1] / future_dir_name(tp)
    fut_dir.mkdir()
    write_partition_metadata(fut_dir, TOPIC_A)
    fut = PartitionLog.open(fut_dir, topic_id=TOPIC_A)
    for _, b in list(cur.iter_batches())[:2]:
        fut.append_as_follower(b)
    cur.close()
    fut.close()


async def test_a_future_log_behind_its_current_one_is_caught_up_before_it_is_promoted(tmp_path: Path) -> None:
    rig = Rig(tmp_path, prepare=_prepare_half_moved)
    _mover(rig)
    rig.log_manager.start()
    try:
        rig.publish(_image([IDS[1]]))  # the metadata already names the future's dir
        await rig.log_manager.wait_settled()
        hl = rig.log_manager.get_partition(TOPIC_A, 0)
        assert hl.log_dir.dir_id == IDS[1]
        promoted = await hl.log()
        assert promoted.log_end_offset == 12 and len(_batches(promoted)) == 4
        assert not (rig.paths[0] / "a-0").exists()
    finally:
        await rig.log_manager.stop()
        rig.close()


def _prepare_swapped_but_not_retired(paths: list[Path]) -> None:
    """A broker killed inside the swap: the future log already renamed `a-0` in d1, the source `a-0`
    in d0 not yet renamed `-delete`."""
    for p in paths[:2]:
        log = PartitionLog.open(p / "a-0", topic_id=TOPIC_A)
        for i in range(3):
            log.append_as_leader(value_batch(2, tag=i), 4)
        log.close()


async def test_a_broker_killed_inside_the_swap_serves_the_copy_the_metadata_names(tmp_path: Path) -> None:
    rig = Rig(tmp_path, prepare=_prepare_swapped_but_not_retired)
    _mover(rig)
    rig.log_manager.start()
    try:
        rig.publish(_image([IDS[1]]))
        await rig.log_manager.wait_settled()
        hl = rig.log_manager.get_partition(TOPIC_A, 0)
        assert hl.log_dir.dir_id == IDS[1]
        assert (await hl.log()).log_end_offset == 6
        # The other copy is moved aside (kept for the operator), never served and never deleted unseen.
        assert not (rig.paths[0] / "a-0").exists()
        assert [p.name.endswith("-stray") for p in rig.paths[0].iterdir()] == [True]
    finally:
        await rig.log_manager.stop()
        rig.close()


async def test_a_destination_failing_after_the_controller_accepted_reverts_to_the_source(rig: Rig) -> None:
    """Field bug 15 (KAFKA-16297): the dir fails between the controller's acceptance and the swap."""
    mover = _mover(rig)
    entered, release = asyncio.Event(), asyncio.Event()

    @contextlib.asynccontextmanager
    async def held(_tp: object) -> AsyncIterator[None]:
        entered.set()
        await release.wait()
        yield

    mover.pause_writes = held
    hl, current, key = await _moving_with_five_records(rig, mover)
    rig.assignments.ready[key].on_success()
    await entered.wait()  # swapping: appends would be paused now
    rig.dirs[IDS[1]].fail(OSError(5, "gone"))
    mover.on_dir_failure(IDS[1])
    release.set()
    await _until(lambda: not mover.moves)
    reverted = rig.assignments.ready[key]
    assert reverted.directory_id == IDS[0] and "Reverting" in reverted.reason
    assert hl.log_dir.dir_id == IDS[0] and (await hl.log()) is current and current.log_end_offset == 5
    assert rig.hosted.get(TOPIC_A, 0).location == IDS[0]
