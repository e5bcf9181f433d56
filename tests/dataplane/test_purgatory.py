"""Parked acks=all produces and long-polling fetches."""

from __future__ import annotations

import asyncio

from broker.dataplane.purgatory import FetchWaiters, ProducePurgatory, wait_for_status
from protocol.errors import Errors


async def test_a_moving_high_watermark_completes_a_prefix() -> None:
    purgatory = ProducePurgatory()
    futs = {req: purgatory.watch("p", req) for req in (5, 2, 9)}
    hw = 5

    def status(required: int) -> Errors | None:
        return Errors.NONE if hw >= required else None

    assert purgatory.check("p", status) == 2
    assert futs[2].result() is Errors.NONE and futs[5].result() is Errors.NONE
    assert not futs[9].done()
    assert len(purgatory) == 1
    assert purgatory.fail_all("p", Errors.KAFKA_STORAGE_ERROR) == 1
    assert futs[9].result() is Errors.KAFKA_STORAGE_ERROR
    assert purgatory.keys() == []


async def test_timeout_answers_request_timed_out_and_leaves_nothing_behind() -> None:
    purgatory = ProducePurgatory()
    fut = purgatory.watch("p", 3)
    assert await wait_for_status(fut, 0.01) is Errors.REQUEST_TIMED_OUT
    assert purgatory.check("p", lambda r: Errors.NONE) == 0
    assert len(purgatory) == 0


async def test_fetch_waiters_wake_on_any_partition() -> None:
    waiters = FetchWaiters()

    async def wait_any(keys: list[str], timeout_s: float) -> bool:
        with waiters.watch(keys) as watch:
            return await watch.wait(timeout_s)

    task = asyncio.create_task(wait_any(["a", "b"], 5))
    await asyncio.sleep(0)
    waiters.notify("b")
    assert await task
    assert not await wait_any(["a"], 0.01)


async def test_a_watch_keeps_a_notify_that_came_before_its_wait() -> None:
    waiters = FetchWaiters()
    with waiters.watch(["a", "b"]) as watch:
        waiters.notify("a")  # while the fetch is still reading
        assert watch.notified
        assert await watch.wait(0)
    with waiters.watch(["a"]) as quiet:
        assert not await quiet.wait(0.01)
    assert waiters._waiting == {}  # closed watches leave nothing behind


async def test_timed_out_waiters_on_a_stuck_partition_are_swept() -> None:
    purgatory = ProducePurgatory(purge_interval=10)
    # The HW never moves: waiters time out behind one that still waits, so `check` never reaches them.
    keeper = purgatory.watch("stuck", 1)
    for offset in range(2, 102):
        assert await wait_for_status(purgatory.watch("stuck", offset), 0) is Errors.REQUEST_TIMED_OUT
        assert purgatory.check("stuck", lambda r: None) == 0
    assert len(purgatory._waiting["stuck"]) <= 10  # 101 without the sweeps
    assert len(purgatory) == 1
    assert purgatory.check("stuck", lambda r: Errors.NONE) == 1
    assert keeper.result() is Errors.NONE
    assert purgatory.keys() == []
