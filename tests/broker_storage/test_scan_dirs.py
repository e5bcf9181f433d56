"""Startup takes stock of the log dirs one after another while their reads are CPU-bound, and all at
once as soon as one dir's reads wait on its disk."""

from __future__ import annotations

import asyncio

import pytest

from broker.core.local_logs import FoundLog, LogKind
from broker.log_dirs import scan_dirs
from protocol.uuid import Uuid


class Dirs:
    def __init__(self, waits_on_disk: set[int] | None = None) -> None:
        self.waits_on_disk = waits_on_disk or set()
        self.running = 0
        self.most_at_once = 0
        self.started: list[int] = []

    async def scan_one(self, d: int, io_bound: asyncio.Event) -> list[FoundLog]:
        self.started.append(d)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            for _ in range(3):  # three hops
                await asyncio.sleep(0.01)
                if d in self.waits_on_disk:
                    io_bound.set()
            return [FoundLog(Uuid.from_longs(d + 1, 1), f"t-{d}", "t", d, LogKind.LOG, None)]
        finally:
            self.running -= 1


async def test_cpu_bound_dirs_are_read_one_after_another_in_order() -> None:
    dirs = Dirs()
    found = await scan_dirs([0, 1, 2, 3], dirs.scan_one)
    assert dirs.most_at_once == 1
    assert [f.partition for f in found] == [0, 1, 2, 3]


async def test_a_dir_waiting_on_its_disk_starts_every_dir_left() -> None:
    dirs = Dirs(waits_on_disk={1})
    found = await scan_dirs([0, 1, 2, 3], dirs.scan_one)
    assert dirs.started == [0, 1, 2, 3]
    assert dirs.most_at_once == 3, "dirs 1, 2 and 3 read at once once dir 1 waited on its disk"
    assert [f.partition for f in found] == [0, 1, 2, 3]


async def test_a_failing_scan_stops_the_others() -> None:
    class Broken(Dirs):
        async def scan_one(self, d: int, io_bound: asyncio.Event) -> list[FoundLog]:
            if d == 2:
                raise ValueError("bad partition dir")
            return await super().scan_one(d, io_bound)

    dirs = Broken(waits_on_disk={0})
    with pytest.raises(ValueError, match="bad partition dir"):
        await scan_dirs([0, 1, 2, 3], dirs.scan_one)
    assert dirs.running == 0, "the scans still running were cancelled and awaited"
