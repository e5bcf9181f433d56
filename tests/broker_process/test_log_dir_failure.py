"""One log dir failure reaches every part that reacts to it exactly once, in the order the broker's
wiring states; a dir failing twice (two I/O errors racing on its executor) is delivered once."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

from broker.log_dir_failure import LogDirFailure, LogDirFailureChannel, Subscriber
from broker.server import dir_failure_subscribers
from broker.storage import LogDirOfflineError
from broker.storage.log_dir import LogDir
from protocol.uuid import Uuid

ORDER = ["log manager", "fetchers", "replica manager", "lifecycle", "metrics", "broker"]


def wired(
    channel: LogDirFailureChannel, calls: list[tuple[str, LogDirFailure]], *, dataplane: bool = True
) -> None:
    def recorder(name: str) -> Subscriber:
        return lambda failure: calls.append((name, failure))

    for name, subscriber in dir_failure_subscribers(
        log_manager=recorder("log manager"),
        fetchers=recorder("fetchers") if dataplane else None,
        replica_manager=recorder("replica manager") if dataplane else None,
        lifecycle=recorder("lifecycle"),
        metrics=recorder("metrics"),
        broker=recorder("broker"),
    ):
        channel.subscribe(name, subscriber)
    channel.start()


def eio() -> None:
    raise OSError(errno.EIO, "Input/output error")


async def test_two_concurrent_io_errors_reach_each_subscriber_once_in_order(tmp_path: Path) -> None:
    channel = LogDirFailureChannel()
    calls: list[tuple[str, LogDirFailure]] = []
    wired(channel, calls)
    assert channel.subscribers == ORDER
    dir_id = Uuid.random()
    ld = LogDir(tmp_path, dir_id, on_failure=channel.maybe_add_offline_log_dir)
    other = LogDir(tmp_path / "other", Uuid.random(), on_failure=channel.maybe_add_offline_log_dir)
    try:
        results = await asyncio.gather(ld.run(eio), ld.run(eio), return_exceptions=True)
        assert all(isinstance(r, LogDirOfflineError) for r in results)
        ld.fail(OSError(errno.EIO, "again"))  # a late report of the same dir
        assert channel.maybe_add_offline_log_dir(ld, OSError(errno.EIO, "and again")) is False
        assert [name for name, _ in calls] == ORDER
        assert {(f.path, f.dir_id) for _, f in calls} == {(str(tmp_path), dir_id)}
        assert list(channel.failed) == [str(tmp_path)] and channel.failed[str(tmp_path)].dir_id == dir_id
        assert other.online
    finally:
        ld.close()
        other.close()


async def test_a_subscriber_that_raises_does_not_keep_the_failure_from_the_rest(tmp_path: Path) -> None:
    channel = LogDirFailureChannel()
    calls: list[str] = []

    def broken(_: LogDirFailure) -> None:
        calls.append("broken")
        raise RuntimeError("bug")

    channel.subscribe("broken", broken)
    channel.subscribe("after", lambda _: calls.append("after"))
    channel.start()
    ld = LogDir(tmp_path, Uuid.random(), on_failure=channel.maybe_add_offline_log_dir)
    try:
        with pytest.raises(LogDirOfflineError):
            await ld.run(eio)
        assert calls == ["broken", "after"]
    finally:
        ld.close()


def test_without_the_data_plane_its_parts_are_left_out_of_the_order() -> None:
    channel = LogDirFailureChannel()
    wired(channel, [], dataplane=False)
    assert channel.subscribers == ["log manager", "lifecycle", "metrics", "broker"]


def test_dirs_offline_at_start_are_recorded_but_delivered_to_no_one() -> None:
    channel = LogDirFailureChannel()
    calls: list[tuple[str, LogDirFailure]] = []
    wired(channel, calls)
    channel.record_offline_at_start("/data/gone", "not formatted")
    assert calls == [] and channel.failed["/data/gone"].dir_id is None


async def test_a_failure_before_start_is_delivered_once_at_start(tmp_path: Path) -> None:
    channel = LogDirFailureChannel()
    ld = LogDir(tmp_path, Uuid.random(), on_failure=channel.maybe_add_offline_log_dir)
    try:
        with pytest.raises(LogDirOfflineError):
            await ld.run(eio)  # while the broker scans its dirs, before the parts are wired
        calls: list[tuple[str, LogDirFailure]] = []
        wired(channel, calls)
        assert [name for name, _ in calls] == ORDER
        channel.maybe_add_offline_log_dir(ld, OSError(errno.EIO, "again"))
        assert len(calls) == len(ORDER)
    finally:
        ld.close()
