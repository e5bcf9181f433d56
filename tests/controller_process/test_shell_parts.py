"""Small parts of the controller process that need no running process: deferred replies, snapshot policy, metrics."""

from __future__ import annotations

import asyncio

import pytest

from controller.deferred import DeferredEventQueue


async def test_deferred_replies_complete_in_offset_order_once_durable() -> None:
    loop = asyncio.get_running_loop()
    q = DeferredEventQueue()
    futs = [loop.create_future() for _ in range(3)]
    q.add(4, futs[0], "a")
    q.add(4, futs[1], "b")  # an operation without records waits for the last one written
    q.add(9, futs[2], "c")
    assert q.complete_up_to(4) == 0  # offset 4 is not below the watermark yet
    assert q.complete_up_to(5) == 2
    assert [f.result() for f in futs[:2]] == ["a", "b"] and not futs[2].done()
    q.complete_up_to(3)  # a watermark never moves back
    assert q.high_watermark == 5
    assert q.complete_up_to(10) == 1 and futs[2].result() == "c"
    late = loop.create_future()
    q.add(7, late, "durable already")  # e.g. a read that needs nothing newer than the watermark
    assert late.done() and len(q) == 0


async def test_deferred_rejects_out_of_order_and_fails_all() -> None:
    loop = asyncio.get_running_loop()
    q = DeferredEventQueue()
    f = loop.create_future()
    q.add(10, f, None)
    with pytest.raises(ValueError):
        q.add(3, loop.create_future(), None)
    q.fail_all(RuntimeError("log failed"))
    with pytest.raises(RuntimeError):
        f.result()
    assert len(q) == 0


async def test_deferred_ignores_abandoned_futures() -> None:
    loop = asyncio.get_running_loop()
    q = DeferredEventQueue()
    f = loop.create_future()
    q.add(0, f, 1)
    f.cancel()
    assert q.complete_up_to(1) == 1


def test_snapshot_policy_by_bytes_and_by_time() -> None:
    from controller.snapshot_policy import SnapshotPolicy

    p = SnapshotPolicy(max_bytes_between=1000, max_interval_ms=0, last_snapshot_ms=0)
    p.on_committed(600)
    assert p.due(10, 50) is None
    p.on_committed(600)
    assert p.due(10, 60) is not None
    p.started()
    assert p.due(10, 60) is None  # one at a time
    p.finished(20, 60, bytes_covered=1200)
    assert p.bytes_since == 0 and p.due(10_000_000, 60) is None  # time trigger off; same offset never twice

    t = SnapshotPolicy(max_bytes_between=10**9, max_interval_ms=100, last_snapshot_ms=0)
    assert t.due(99, 5) is None
    assert t.due(100, 5) is not None
    assert t.due(100, 0) is None  # nothing committed beyond the last snapshot


def test_metrics_render_cluster_gauges() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from controller.metrics import ControllerMetrics, ControllerStats

    reg = CollectorRegistry()
    m = ControllerMetrics(reg, lambda: ControllerStats(active=True, fenced_brokers=2, offline_partitions=7))
    m.count_records(["PartitionChangeRecord", "PartitionChangeRecord", "NoOpRecord"])
    text = generate_latest(reg).decode()
    assert "kraftpy_controller_active_controller_count 1.0" in text
    assert "kraftpy_controller_fenced_broker_count 2.0" in text
    assert "kraftpy_controller_offline_partitions_count 7.0" in text
    assert 'kraftpy_controller_records_appended_total{type="PartitionChangeRecord"} 2.0' in text
