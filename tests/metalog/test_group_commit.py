from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from kraftpy.metalog import GroupCommitLog, LogError, MetadataLog
from tests.metalog.helpers import noops


async def test_concurrent_appends_share_fsyncs(tmp_path: Path) -> None:
    glog = await GroupCommitLog.open(tmp_path)
    base_flushes = glog.log.flush_count
    results = await asyncio.gather(*(glog.append(noops(2), leader_epoch=1) for _ in range(50)))
    fsyncs = glog.log.flush_count - base_flushes
    assert sorted(results) == [(2 * i, 2 * i + 1) for i in range(50)]
    assert 1 <= fsyncs < 50
    assert glog.durable_end_offset == 100
    print(f"50 concurrent appends, {fsyncs} fsyncs")
    await glog.close()
    with MetadataLog.open(tmp_path) as log:
        assert log.log_end_offset == 100


async def test_append_returns_only_after_fsync(tmp_path: Path) -> None:
    glog = await GroupCommitLog.open(tmp_path)
    _first, last = await glog.append(noops(3), 1)
    assert glog.log.flushed_offset > last
    assert glog.durable_end_offset == 3
    await glog.close()


async def test_file_work_runs_off_the_event_loop(tmp_path: Path) -> None:
    glog = await GroupCommitLog.open(tmp_path)
    loop_thread = threading.get_ident()
    threads: set[int] = set()
    real_flush = glog.log.flush

    def flush() -> int:
        threads.add(threading.get_ident())
        return real_flush()

    glog.log.flush = flush  # type: ignore[method-assign]
    await asyncio.gather(*(glog.append(noops(1), 1) for _ in range(5)))
    assert threads and loop_thread not in threads
    await glog.close()


async def test_a_failed_fsync_fails_waiters_and_every_later_call(tmp_path: Path) -> None:
    glog = await GroupCommitLog.open(tmp_path)

    def broken_flush() -> int:
        raise OSError(5, "Input/output error")

    glog.log.flush = broken_flush  # type: ignore[method-assign]
    outcomes = await asyncio.gather(*(glog.append(noops(1), 1) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(o, OSError | LogError) for o in outcomes)
    with pytest.raises(LogError, match="failed earlier"):
        await glog.append(noops(1), 1)
    glog.log.flush = lambda: 0  # type: ignore[method-assign]
    await glog.close()


async def test_run_reads_on_the_log_thread(tmp_path: Path) -> None:
    glog = await GroupCommitLog.open(tmp_path)
    await glog.append(noops(4), 1)
    data = await glog.run(glog.log.read, 0, 1 << 20)
    assert len(data) > 0
    await glog.close()
    with pytest.raises(LogError, match="closed"):
        await glog.append(noops(1), 1)
