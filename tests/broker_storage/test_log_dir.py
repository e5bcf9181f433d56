"""LogDir: one I/O thread per dir, and a failure channel that fires exactly once."""

from __future__ import annotations

import asyncio
import errno
import shutil
import threading
from pathlib import Path

import pytest

from broker.storage import LogDir, LogDirOfflineError, LogDirStallError, PartitionLog
from broker.storage.dir_names import DirKind, TopicPartition, future_dir_name
from broker.storage.errors import LogDirResourceError
from protocol.errors import Errors
from protocol.uuid import Uuid
from tests.broker_storage.batches import value_batch


class Failures:
    def __init__(self) -> None:
        self.calls: list[tuple[LogDir, BaseException]] = []

    def __call__(self, log_dir: LogDir, exc: BaseException) -> None:
        self.calls.append((log_dir, exc))


def eio() -> None:
    raise OSError(errno.EIO, "Input/output error")


@pytest.fixture
def failures() -> Failures:
    return Failures()


@pytest.fixture
def log_dir(tmp_path: Path, failures: Failures):
    d = LogDir(tmp_path, Uuid.random(), failures)
    yield d
    d.close()


async def test_runs_on_the_dirs_own_thread(log_dir: LogDir) -> None:
    name = await log_dir.run(lambda: threading.current_thread().name)
    assert name.startswith(f"logdir-{log_dir.dir_id}")
    assert await log_dir.run(pow, 2, 10) == 1024


async def test_oserror_takes_the_dir_offline_once(log_dir: LogDir, failures: Failures) -> None:
    with pytest.raises(LogDirOfflineError) as e:
        await log_dir.run(eio)
    assert e.value.code == Errors.KAFKA_STORAGE_ERROR
    assert isinstance(e.value.__cause__, OSError) and e.value.__cause__.errno == errno.EIO
    assert not log_dir.online
    ran = []
    with pytest.raises(LogDirOfflineError):
        await log_dir.run(ran.append, 1)
    assert ran == [], "nothing is submitted to an offline dir"
    assert log_dir.fail(OSError(errno.EIO, "again")) is False
    assert len(failures.calls) == 1
    assert failures.calls[0][0] is log_dir and failures.calls[0][1] is e.value.__cause__


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE])
async def test_running_out_of_descriptors_is_not_a_dir_failure(
    log_dir: LogDir, failures: Failures, code: int
) -> None:
    def emfile() -> None:
        raise OSError(code, "Too many open files")

    with pytest.raises(LogDirResourceError) as e:
        await log_dir.run(emfile)
    assert e.value.code == Errors.KAFKA_STORAGE_ERROR and "open-file limit" in str(e.value)
    assert not isinstance(e.value, LogDirOfflineError)
    assert log_dir.online and failures.calls == []
    assert await log_dir.run(lambda: 7) == 7  # the dir goes on working


async def test_concurrent_failures_report_once(log_dir: LogDir, failures: Failures) -> None:
    results = await asyncio.gather(*(log_dir.run(eio) for _ in range(5)), return_exceptions=True)
    assert all(isinstance(r, LogDirOfflineError) for r in results)
    assert len(failures.calls) == 1


async def test_other_errors_pass_through_and_keep_the_dir_online(log_dir: LogDir, failures: Failures) -> None:
    def bad_input() -> None:
        raise ValueError("not a disk problem")

    with pytest.raises(ValueError, match="not a disk problem"):
        await log_dir.run(bad_input)
    assert log_dir.online and failures.calls == []


async def test_timeout_abandons_the_call_and_fails_queued_work(log_dir: LogDir, failures: Failures) -> None:
    release = threading.Event()
    stuck = asyncio.ensure_future(log_dir.run(release.wait, timeout=0.2))
    await asyncio.sleep(0)
    queued = asyncio.ensure_future(log_dir.run(lambda: "never", timeout=60))
    try:
        with pytest.raises(LogDirOfflineError) as e:
            await stuck
        assert isinstance(e.value.__cause__, LogDirStallError)
        with pytest.raises(LogDirOfflineError):
            await queued
        assert len(failures.calls) == 1 and isinstance(failures.calls[0][1], LogDirStallError)
    finally:
        release.set()  # let the abandoned thread finish so the test process can exit


async def test_a_call_queued_behind_busy_work_is_not_a_stall(log_dir: LogDir, failures: Failures) -> None:
    """Thousands of log opens keep a dir's thread busy for longer than a probe's limit: the probe
    waits its turn, and the dir stays online, because the thread keeps finishing calls."""
    import time

    busy = [asyncio.ensure_future(log_dir.run(time.sleep, 0.05, timeout=5)) for _ in range(12)]
    await asyncio.sleep(0)
    probe = asyncio.ensure_future(log_dir.run(lambda: "probed", timeout=0.2))
    assert await probe == "probed"
    await asyncio.gather(*busy)
    assert log_dir.online and failures.calls == []


async def test_a_paused_process_is_not_a_stalled_disk(log_dir: LogDir, failures: Failures) -> None:
    """SIGSTOP freezes the loop and the dir's thread alike; once resumed, the loop is past the call's
    limit before the thread has had a moment to finish. The dir stays online."""
    import time

    resumed = threading.Event()

    def frozen_with_the_process() -> str:
        resumed.wait()
        time.sleep(0.05)
        return "done"

    call = asyncio.ensure_future(log_dir.run(frozen_with_the_process, timeout=0.2))
    await asyncio.sleep(0.01)
    time.sleep(0.5)  # the loop does not run: the process is stopped
    resumed.set()
    assert await call == "done"
    assert log_dir.online and failures.calls == []


async def test_a_call_made_just_after_a_pause_is_not_a_stall(log_dir: LogDir, failures: Failures) -> None:
    """The dir's thread last finished something before the process was stopped: that is no reason
    to fail a call made after it resumed, queued for a moment behind the call in progress."""
    import time

    release = threading.Event()
    busy = asyncio.ensure_future(log_dir.run(release.wait, timeout=5))
    await asyncio.sleep(0.01)
    time.sleep(0.5)  # the loop does not run: the process is stopped
    call = asyncio.ensure_future(log_dir.run(lambda: "now", timeout=0.2))
    await asyncio.sleep(0.05)
    release.set()
    assert await call == "now"
    await busy
    assert log_dir.online and failures.calls == []


async def test_a_call_queued_behind_a_hung_call_fails_with_the_dir(
    log_dir: LogDir, failures: Failures
) -> None:
    release = threading.Event()
    hung = asyncio.ensure_future(log_dir.run(release.wait, timeout=60))
    await asyncio.sleep(0.05)
    probe = asyncio.ensure_future(log_dir.run(lambda: "never", timeout=0.2))
    try:
        with pytest.raises(LogDirOfflineError) as e:
            await probe
        assert isinstance(e.value.__cause__, LogDirStallError), "the dir's thread made no progress for 0.2 s"
        with pytest.raises(LogDirOfflineError):
            await hung
        assert len(failures.calls) == 1
    finally:
        release.set()


async def test_probe_and_usage(log_dir: LogDir, tmp_path: Path) -> None:
    await log_dir.run(log_dir.probe)
    assert list(tmp_path.iterdir()) == []
    usage = await log_dir.run(log_dir.usage)
    assert usage.total_bytes > 0 and 0 <= usage.usable_bytes <= usage.total_bytes


async def test_probe_of_a_vanished_dir_fails_it(tmp_path: Path, failures: Failures) -> None:
    path = tmp_path / "disk"
    path.mkdir()
    d = LogDir(path, Uuid.random(), failures)
    shutil.rmtree(path)
    with pytest.raises(LogDirOfflineError):
        await d.run(d.probe)
    assert len(failures.calls) == 1 and isinstance(failures.calls[0][1], FileNotFoundError)
    d.close()


async def test_lists_partition_dirs(log_dir: LogDir, tmp_path: Path) -> None:
    tp = TopicPartition("orders", 2)
    for name in ("orders-0", "orders-2", future_dir_name(tp), "__cluster_metadata-0", "lost+found", "junk"):
        (tmp_path / name).mkdir()
    (tmp_path / "replication-offset-checkpoint").write_text("0\n0\n")
    found = await log_dir.run(log_dir.list_partition_dirs)
    assert [(p.topic_partition, p.kind) for p in found] == [
        (TopicPartition("orders", 0), DirKind.LOG),
        (tp, DirKind.LOG),
        (tp, DirKind.FUTURE),
    ]
    with_meta = log_dir.list_partition_dirs(include_metadata=True)
    assert TopicPartition("__cluster_metadata", 0) in {p.topic_partition for p in with_meta}


async def test_partition_log_through_the_dir(log_dir: LogDir, tmp_path: Path) -> None:
    log = await log_dir.run(PartitionLog.open, tmp_path / "t-0")
    r = await log_dir.run(log.append_as_leader, value_batch(3), 1)
    await log_dir.run(log.flush)
    assert r.first_offset == 0 and log.recovery_point == 3
    data = await log_dir.run(log.read, 0, 1 << 20)
    assert data.next_offset == 3
    await log_dir.run(log.close)


def test_startup_says_when_the_open_file_limit_cannot_hold_the_partitions() -> None:
    import resource

    from structlog.testing import capture_logs

    from broker.log_dirs import check_open_file_limit

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    with capture_logs() as logs:
        check_open_file_limit(0)
        check_open_file_limit(soft)  # three descriptors each: more than the limit
    assert [e["event"] for e in logs] == ["open-file limit too low for the partitions on disk"]
    assert logs[0]["partitions"] == soft and logs[0]["limit"] == soft
