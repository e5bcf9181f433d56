"""A ZooKeeper-mode broker that finds a partition's log in two dirs keeps the copy holding all the
other's records (by leader epochs, as a follower truncates) and moves the other aside as a stray;
copies that diverged, or one it cannot read, leave the replica offline with both untouched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.core.log_placement import LogPlacement
from broker.core.partition_state import PartitionState
from broker.log_dir_failure import LogDirFailureChannel
from broker.log_dirs import take_inventory
from broker.storage import LogDir, PartitionLog
from broker.zk.duplicate_logs import choose, past_end, read_extent, settle_duplicates, shares_history
from protocol.uuid import MIGRATING, Uuid
from tests.broker_storage.batches import value_batch

TOPIC_ID = Uuid.random()


def leader_log(path: Path, epochs: list[tuple[int, int]]) -> PartitionLog:
    """A log written as a leader: for each (epoch, batches), that many batches of 4 records."""
    path.parent.mkdir(exist_ok=True)
    log = PartitionLog.open(path, topic_id=TOPIC_ID)
    for epoch, batches in epochs:
        for i in range(batches):
            log.append_as_leader(value_batch(4, tag=epoch * 100 + i), leader_epoch=epoch, now_ms=1_000)
    return log


def follow(leader: PartitionLog, path: Path, upto: int | None = None, start: int = 0) -> PartitionLog:
    """A follower's copy of `leader` from `start` (its log start) to `upto` (default: the end)."""
    path.parent.mkdir(exist_ok=True)
    log = PartitionLog.open(path, topic_id=TOPIC_ID)
    if start:
        log.truncate_fully_and_start_at(start)
    data = leader.read(start, 1 << 24, upto).records
    log.append_as_follower(data)
    return log


def state() -> PartitionState:
    """What LeaderAndIsr with IsNew false says of t-0 on broker 1 (a follower of broker 2)."""
    return PartitionState(TOPIC_ID, "t", 0, (2, 1), (2, 1), 2, 2, 0, MIGRATING)


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[dict[Uuid, LogDir], Path, Path]]:
    channel = LogDirFailureChannel()
    a, b = tmp_path / "a", tmp_path / "b"
    log_dirs = {}
    for path in (a, b):
        path.mkdir()
        d = Uuid.random()
        log_dirs[d] = LogDir(path, d, on_failure=channel.maybe_add_offline_log_dir)
    yield log_dirs, a, b
    for ld in log_dirs.values():
        ld.close()


def test_the_copy_that_kept_following_holds_all_of_the_old_one(tmp_path: Path) -> None:
    leader = leader_log(tmp_path / "leader" / "t-0", [(0, 3), (2, 2)])
    old = follow(leader, tmp_path / "old" / "t-0", upto=12)  # the copy in the dir that was dropped
    new = follow(leader, tmp_path / "new" / "t-0")  # made again, followed the leader on
    for log in (leader, old, new):
        log.close()
    o, n = read_extent(tmp_path / "old" / "t-0"), read_extent(tmp_path / "new" / "t-0")
    assert (o.epochs, o.log_end_offset) == (((0, 0),), 12)
    assert (n.epochs, n.log_end_offset) == (((0, 0), (2, 12)), 20)
    assert shares_history(n, o) and not shares_history(o, n) and past_end(n, o) == 0
    assert choose([o, n]) is n and choose([n, o]) is n


def test_diverged_copies_are_not_decided(tmp_path: Path) -> None:
    leader = leader_log(tmp_path / "leader" / "t-0", [(0, 3), (2, 2)])
    # This broker led epoch 1 alone in the old dir and took records the leader of epoch 2 never had.
    old = follow(leader, tmp_path / "old" / "t-0", upto=12)
    old.append_as_leader(value_batch(4, tag=7), leader_epoch=1, now_ms=1_000)
    new = follow(leader, tmp_path / "new" / "t-0")
    # The log made again empty while this broker leads (epoch 3 from offset 0): the old copy may
    # hold every acknowledged record, the new one those acknowledged since.
    remade = leader_log(tmp_path / "remade" / "t-0", [(3, 1)])
    for log in (leader, old, new, remade):
        log.close()
    o, n, r = (read_extent(tmp_path / d / "t-0") for d in ("old", "new", "remade"))
    assert o.latest_epoch == 1
    assert choose([o, n]) is None
    assert choose([r, n]) is None and choose([o, r]) is None


def test_records_no_later_leader_had_do_not_keep_the_old_copy(tmp_path: Path) -> None:
    """The old copy has epoch 0 records past where epoch 0 ends on the leader (appended by the old
    leader, never copied): as a follower it would truncate them, so the followed copy is kept."""
    leader = leader_log(tmp_path / "leader" / "t-0", [(0, 3), (2, 2)])
    longer = follow(leader, tmp_path / "longer" / "t-0", upto=12)
    longer.append_as_follower(value_batch(4, tag=8, base_offset=12, leader_epoch=0))
    new = follow(leader, tmp_path / "new" / "t-0")
    for log in (leader, longer, new):
        log.close()
    lo, n = (read_extent(tmp_path / d / "t-0") for d in ("longer", "new"))
    assert lo.log_end_offset == 16 and choose([lo, n]) is n and past_end(n, lo) == 4


def test_a_copy_cut_by_retention_still_holds_all_the_other_keeps(tmp_path: Path) -> None:
    leader = leader_log(tmp_path / "leader" / "t-0", [(0, 3), (2, 2)])
    old = follow(leader, tmp_path / "old" / "t-0", upto=12)
    new = follow(leader, tmp_path / "new" / "t-0", start=4)  # the leader's log started at 4 by then
    (tmp_path / "empty").mkdir()
    empty = PartitionLog.open(tmp_path / "empty" / "t-0", topic_id=TOPIC_ID)
    for log in (leader, old, new, empty):
        log.close()
    o, n, e = (read_extent(tmp_path / d / "t-0") for d in ("old", "new", "empty"))
    assert n.first_offset == 4 and o.first_offset == 0
    assert choose([o, n]) is n
    assert choose([e, o]) is o and choose([e, n, o]) is n


async def test_startup_keeps_the_full_copy_and_strays_the_other(
    dirs: tuple[dict[Uuid, LogDir], Path, Path], tmp_path: Path
) -> None:
    log_dirs, a, b = dirs
    leader = leader_log(tmp_path / "leader" / "t-0", [(0, 3), (2, 2)])
    for log in (follow(leader, a / "t-0", upto=12), follow(leader, b / "t-0"), leader):
        log.close()
    inventory = await take_inventory(log_dirs)
    files = inventory.files("t", 0)
    assert files is not None and files.duplicates  # found in both

    await settle_duplicates(inventory, log_dirs)
    ids = {ld.path: d for d, ld in log_dirs.items()}
    assert files.current is not None and files.current.dir_id == ids[b] and not files.duplicates
    assert [(s.dir_id, s.name) for s in inventory.strays] == [(ids[a], "t-0")]

    # The first LeaderAndIsr (IsNew false: MIGRATING) serves the kept copy and moves the other aside.
    placement = LogPlacement(1, {d: str(ld.path) for d, ld in log_dirs.items()}, inventory=inventory)
    plan = placement.apply([state()], full=True)
    assert placement.replicas[(TOPIC_ID, 0)].location == ids[b]
    assert [(s.dir_id, s.name) for s in plan.strays] == [(ids[a], "t-0")]
    assert placement.offline_count() == 0


async def test_diverged_copies_stay_offline_untouched(
    dirs: tuple[dict[Uuid, LogDir], Path, Path], tmp_path: Path
) -> None:
    log_dirs, a, b = dirs
    leader = leader_log(tmp_path / "leader" / "t-0", [(0, 3), (2, 2)])
    old = follow(leader, a / "t-0", upto=12)
    old.append_as_leader(value_batch(4, tag=7), leader_epoch=1, now_ms=1_000)
    for log in (old, follow(leader, b / "t-0"), leader):
        log.close()
    inventory = await take_inventory(log_dirs)
    await settle_duplicates(inventory, log_dirs)
    files = inventory.files("t", 0)
    assert files is not None and len(files.currents()) == 2 and not inventory.strays

    placement = LogPlacement(1, {d: str(ld.path) for d, ld in log_dirs.items()}, inventory=inventory)
    plan = placement.apply([state()], full=True)
    r = placement.replicas[(TOPIC_ID, 0)]
    assert r.location is None and str(a) in r.offline_reason and str(b) in r.offline_reason
    assert not plan.strays and (a / "t-0").is_dir() and (b / "t-0").is_dir()


async def test_a_copy_that_cannot_be_read_decides_nothing(
    dirs: tuple[dict[Uuid, LogDir], Path, Path], tmp_path: Path
) -> None:
    log_dirs, a, b = dirs
    leader = leader_log(tmp_path / "leader" / "t-0", [(0, 3), (2, 2)])
    for log in (follow(leader, a / "t-0", upto=12), follow(leader, b / "t-0"), leader):
        log.close()
    segment = b / "t-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[16] = 9  # the first batch's magic byte: the header cannot be read
    segment.write_bytes(bytes(data))
    inventory = await take_inventory(log_dirs)
    await settle_duplicates(inventory, log_dirs)
    files = inventory.files("t", 0)
    assert files is not None and len(files.currents()) == 2 and not inventory.strays
    assert all(ld.online for ld in log_dirs.values())  # bad bytes are not a failed disk
