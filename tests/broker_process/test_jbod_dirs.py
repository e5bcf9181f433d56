"""A real controller and a broker whose three log dirs are real filesystems on loop devices.

Faults come from the test harness (tools.disk): filesystem shutdown (EIO), a shrunk loop device
(EIO, then EROFS), a full disk (ENOSPC). Every check polls the controller's own log (read-only,
from this process) or the broker's /healthz, under generous deadlines: no timed assertions.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kraftpy.log.partition_metadata import read_partition_metadata
from protocol.uuid import LOST, Uuid
from tests.broker_process.cluster import Cluster, Record, wait_until
from tests.broker_process.conftest import dir_id

pytestmark = [pytest.mark.real, pytest.mark.slow]

B = 2  # the JBOD broker
A = 3  # a plain single-dir broker, where one is needed


def jbod_broker(cluster: Cluster, real_disks: Any, tmp_path: Path, n: int = 3, **extra: object) -> list[Path]:
    disks = [real_disks(f"b{B}d{i}") for i in range(n)]
    dirs = [d.mountpoint / "kafka" for d in disks]
    cluster.add_broker(B, dirs, metadata_dir=tmp_path / "b-meta", extra=extra or None)
    return dirs


def registration_records(records: list[Record], broker: int) -> list[Record]:
    return [r for r in records if r.name == "RegisterBrokerRecord" and r.record.BrokerId == broker]


def unfence_records(records: list[Record], broker: int, after: int) -> list[Record]:
    return [
        r
        for r in records
        if r.offset > after
        and r.name == "BrokerRegistrationChangeRecord"
        and r.record.BrokerId == broker
        and r.record.Fenced == -1
    ]


def exit_code(proc: Any, timeout: float = 60.0) -> int:
    """The process's exit code once it exits; fails with its log if it does not."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{proc.name} still running after {timeout}s:\n{proc.log_tail(40)}") from None


def partition_dirs(path: Path) -> set[str]:
    return {p.name for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "lost+found"))}


def test_unfenced_only_once_the_controller_has_every_replica_in_a_real_dir(
    real_disks: Any, cluster: Cluster, tmp_path: Path
) -> None:
    dirs = jbod_broker(cluster, real_disks, tmp_path)
    ids = [dir_id(d) for d in dirs]
    cluster.add_broker(A, [tmp_path / "a-logs"])
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.start_broker(A)
    cluster.wait_running(B)
    cluster.wait_running(A)
    # B goes down; a topic is created with B as a follower of every partition. The controller
    # cannot know which of B's dirs will hold them: UNASSIGNED.
    assert cluster.stop_broker(B) == 0
    topic_id = cluster.create_topic("spread", [[A, B]] * 6)
    image = cluster.image()
    assert all(
        str(p.directory(B)) == "AAAAAAAAAAAAAAAAAAAAAQ"
        for p in image.topics.get_topic("spread").partitions.values()
    )

    cluster.start_broker(B)
    cluster.wait_running(B)
    records = cluster.records()
    reg = registration_records(records, B)[-1]
    assert sorted(reg.record.LogDirs) == sorted(ids)
    unfenced = unfence_records(records, B, after=reg.offset)
    assert unfenced, "B is running, so the controller unfenced it"
    placed: dict[int, tuple[int, Uuid]] = {}
    for r in records:
        if r.name == "PartitionChangeRecord" and r.record.TopicId == topic_id and r.record.Directories:
            d = r.record.Directories[r.record.Replicas.index(B) if r.record.Replicas else 1]
            if d in ids:
                placed.setdefault(r.record.PartitionId, (r.offset, d))
    assert sorted(placed) == list(range(6)), placed
    assert max(off for off, _ in placed.values()) < unfenced[0].offset, (
        "unfenced before every replica was placed"
    )
    # Spread over the three filesystems, two each, and each where the controller says.
    per_dir = {d: partition_dirs(path) for d, path in zip(ids, dirs, strict=True)}
    assert sorted(len(v) for v in per_dir.values()) == [2, 2, 2]
    for p, (_, d) in placed.items():
        assert f"spread-{p}" in per_dir[d]
        assert read_partition_metadata(dirs[ids.index(d)] / f"spread-{p}") == topic_id


def test_idle_dir_failure_is_reported_at_once_and_a_restart_keeps_its_replicas_offline(
    real_disks: Any, cluster: Cluster, tmp_path: Path
) -> None:
    # The default probe interval: an idle dir must still be noticed within about a second.
    dirs = jbod_broker(cluster, real_disks, tmp_path, **{"log.dir.probe.interval.ms": 1000})
    ids = [dir_id(d) for d in dirs]
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    topic_id = cluster.create_topic("led", [[B]] * 6)

    def all_led() -> dict[int, Uuid] | None:
        parts = cluster.image().topics.get_topic("led").partitions
        ok = all(p.leader == B and p.directory(B) in ids for p in parts.values())
        return {i: p.directory(B) for i, p in parts.items()} if ok else None

    where = wait_until("B leading all six partitions from placed dirs", all_led)
    failed = ids[1]
    in_failed = sorted(p for p, d in where.items() if d == failed)
    elsewhere = sorted(p for p, d in where.items() if d != failed)
    assert len(in_failed) == 2
    before = cluster.records()[-1].offset

    failed_at = time.monotonic()
    real_disks.disk_set.get(f"b{B}d1").fail()  # EIO on every call, the dir is idle

    def reported() -> list[Record] | None:
        recs = [r for r in cluster.records() if r.offset > before]
        change = [
            r
            for r in recs
            if r.name == "BrokerRegistrationChangeRecord" and r.record.BrokerId == B and r.record.LogDirs
        ]
        moved = {
            r.record.PartitionId
            for r in recs
            if r.name == "PartitionChangeRecord" and r.record.TopicId == topic_id
        }
        if change and set(in_failed) <= moved:
            return change
        return None

    change = wait_until(
        "BrokerRegistrationChangeRecord and PartitionChangeRecords for the failed dir", reported, 30
    )
    # Measured for the record (speed goals belong to benchmarks, not assertions).
    print(f"idle dir failure in the controller's log after {time.monotonic() - failed_at:.2f}s")
    assert sorted(change[-1].record.LogDirs) == sorted([ids[0], ids[2]])
    image = cluster.image()
    parts = image.topics.get_topic("led").partitions
    assert all(parts[p].leader == -1 for p in in_failed)
    assert all(parts[p].leader == B for p in elsewhere), "partitions in the good dirs keep their leader"
    node = cluster.brokers[B]
    assert node.proc is not None and node.proc.alive
    health = wait_until(
        "health showing the dir offline and acknowledged",
        lambda: h if (h := node.health()) and h["offline_log_dirs_acknowledged"].get(str(failed)) else None,
    )
    assert str(dirs[1]) in health["dirs"]["offline"]
    assert health["replicas"]["offline_replicas"] == 2
    metrics = node.metrics()
    assert "kafka_log_logmanager_offlinelogdirectorycount 1.0" in metrics
    assert "kafka_server_replicamanager_offlinereplicacount 2.0" in metrics
    assert (
        f'kafka_log_logmanager_logdirectoryoffline{{directory_id="{failed}",logDirectory="{dirs[1]}"}} 1.0'
        in metrics
    )

    # Its files are closed, so the dead filesystem could be unmounted while the broker runs on.
    dead = real_disks.disk_set.get(f"b{B}d1")
    wait_until(
        "the broker holding nothing on the failed filesystem",
        lambda: all(h.pid != node.proc.pid for h in dead.holders()) or None,
    )

    # Restart with the filesystem still dead: the dir cannot be read, so it is not registered,
    # and its replicas are not created again in the good dirs.
    assert cluster.stop_broker(B) == 0
    good_before = [partition_dirs(dirs[0]), partition_dirs(dirs[2])]
    cluster.start_broker(B)
    health = cluster.wait_running(B)
    assert str(dirs[1]) in health["dirs"]["offline"]
    records = cluster.records()
    reg = registration_records(records, B)[-1]
    assert sorted(reg.record.LogDirs) == sorted([ids[0], ids[2]])
    assert [partition_dirs(dirs[0]), partition_dirs(dirs[2])] == good_before
    for p in in_failed:
        assert f"led-{p}" not in good_before[0] | good_before[1]
    image = cluster.image()
    parts = image.topics.get_topic("led").partitions
    # Reported as LOST (in a dir this broker cannot identify), and still without a leader.
    assert all(parts[p].directory(B) == LOST and parts[p].leader == -1 for p in in_failed)
    assert all(parts[p].leader == B for p in elsewhere)


def test_replica_moved_by_hand_while_down_is_reported_in_its_new_dir(
    real_disks: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """KIP-858 footnote 4, plus field bug 20: a partition dir without partition.metadata."""
    dirs = jbod_broker(cluster, real_disks, tmp_path)
    ids = [dir_id(d) for d in dirs]
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    topic_id = cluster.create_topic("moved", [[B]] * 3)
    wait_until(
        "replicas placed",
        lambda: all(
            p.directory(B) in ids for p in cluster.image().topics.get_topic("moved").partitions.values()
        ),
    )
    assert cluster.stop_broker(B) == 0
    src_id = cluster.image().topics.get_topic("moved").partitions[0].directory(B)
    src = dirs[ids.index(src_id)]
    dst_index = (ids.index(src_id) + 1) % 3
    shutil.move(str(src / "moved-0"), str(dirs[dst_index] / "moved-0"))
    (dirs[0] / "orphan-7").mkdir()  # no partition.metadata: a stray, not a reason to crash
    (dirs[0] / "orphan-7" / "00000000000000000000.log").write_bytes(b"")

    cluster.start_broker(B)
    cluster.wait_running(B)
    records = cluster.records()
    reg = registration_records(records, B)[-1]
    moves = [
        r
        for r in records
        if r.offset > reg.offset
        and r.name == "PartitionChangeRecord"
        and r.record.TopicId == topic_id
        and r.record.PartitionId == 0
        and r.record.Directories
    ]
    assert moves and moves[-1].record.Directories == [ids[dst_index]]
    unfenced = unfence_records(records, B, after=reg.offset)
    assert unfenced and unfenced[0].offset > moves[-1].offset
    assert not (dirs[0] / "orphan-7").exists()
    assert any(n.startswith("orphan-7.") and n.endswith("-stray") for n in partition_dirs(dirs[0]))
    assert "moved-0" in partition_dirs(dirs[dst_index]) and "moved-0" not in partition_dirs(src)


def test_full_disk_and_vanished_device_are_dir_failures(
    real_disks: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """ENOSPC (decided: a dir failure, as Kafka treats it) and a shrunk loop device (EIO, then EROFS)."""
    dirs = jbod_broker(cluster, real_disks, tmp_path)
    ids = [dir_id(d) for d in dirs]
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)

    def registered_dirs() -> list[Uuid]:
        reg = cluster.image().cluster.brokers[B]
        return sorted(reg.directories)

    real_disks.disk_set.get(f"b{B}d2").fill()
    wait_until("full dir reported offline", lambda: registered_dirs() == sorted(ids[:2]), 30)
    real_disks.disk_set.get(f"b{B}d0").yank()
    wait_until("vanished dir reported offline", lambda: registered_dirs() == [ids[1]], 30)
    node = cluster.brokers[B]
    assert node.proc is not None and node.proc.alive
    health = node.health()
    assert set(health["dirs"]["offline"]) == {str(dirs[0]), str(dirs[2])}
    assert "No space left" in health["dirs"]["offline"][str(dirs[2])]["reason"]


def test_failed_metadata_dir_stops_the_broker(real_disks: Any, cluster: Cluster, tmp_path: Path) -> None:
    meta_disk = real_disks(f"b{B}meta")
    logs = [tmp_path / "l1", tmp_path / "l2"]
    cluster.add_broker(B, logs, metadata_dir=meta_disk.mountpoint / "meta")
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    meta_disk.fail()
    proc = cluster.brokers[B].proc
    assert proc is not None
    assert exit_code(proc) == 1
    assert "metadata.log.dir" in proc.log_text() and "broker shutting down" in proc.log_text()


def test_all_log_dirs_failed_stops_the_broker(real_disks: Any, cluster: Cluster, tmp_path: Path) -> None:
    dirs = jbod_broker(cluster, real_disks, tmp_path, n=2)
    assert len(dirs) == 2
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    real_disks.disk_set.get(f"b{B}d0").fail()
    real_disks.disk_set.get(f"b{B}d1").fail()
    proc = cluster.brokers[B].proc
    assert proc is not None
    assert exit_code(proc) == 1
    assert "all log dirs are offline" in proc.log_text()


def test_unreported_failure_under_a_led_partition_stops_the_broker(
    real_disks: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """Field bug 11: the controller cannot be told within log.dir.failure.timeout.ms."""
    dirs = jbod_broker(cluster, real_disks, tmp_path, **{"log.dir.failure.timeout.ms": 3000})
    ids = [dir_id(d) for d in dirs]
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    cluster.create_topic("led", [[B]] * 3)

    def led_dirs() -> set[Uuid] | None:
        parts = cluster.image().topics.get_topic("led").partitions.values()
        if all(p.leader == B and p.directory(B) in ids for p in parts):
            return {p.directory(B) for p in parts}
        return None

    where = wait_until("B leading from placed dirs", led_dirs)
    victim = ids.index(next(iter(where)))
    # The controller's log showing B as leader is not B knowing it: on a busy machine the broker
    # may not have applied those records yet, and with the controller killed it never would, so it
    # rightly would not stop. Wait until it has.
    last = cluster.records()[-1].offset
    node = cluster.brokers[B]
    wait_until(
        "B applying its leadership",
        lambda: h if (h := node.health()) and h["metadata_offset"] >= last else None,
    )
    assert cluster.controller is not None
    cluster.controller.kill9()
    real_disks.disk_set.get(f"b{B}d{victim}").fail()
    proc = cluster.brokers[B].proc
    assert proc is not None
    assert exit_code(proc) == 1
    assert "log.dir.failure.timeout.ms" in proc.log_text()
