"""The controller event queue: one event at a time, speculative replay, replies only once durable.

The log here is a list whose durability the test moves by hand, so every interleaving is explicit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.event_queue import ControllerEventQueue, EventTimeoutError, QueueClosedError, WriteContext
from protocol.errors import Errors, KafkaError


@dataclass
class ListLog:
    records: list[Any] = field(default_factory=list)
    appends: list[tuple[int, bool]] = field(default_factory=list)

    @property
    def next_offset(self) -> int:
        return len(self.records)

    def prepare(self, records: Sequence[Any], atomic: bool) -> tuple[list[Any], bool]:
        if "too-big" in records:
            raise KafkaError(Errors.RECORD_LIST_TOO_LARGE, "does not fit one batch")
        return list(records), atomic

    def schedule(self, prepared: tuple[list[Any], bool]) -> int:
        records, atomic = prepared
        self.records.extend(records)
        self.appends.append((len(records), atomic))
        return len(self.records) - 1


@dataclass
class Result:
    records: list[Any]
    response: Any
    is_atomic: bool = False


class Env:
    def __init__(self) -> None:
        self.log = ListLog()
        self.state: list[tuple[Any, int]] = []
        self.fatal: list[str] = []
        self.q = ControllerEventQueue(
            replay=lambda r, off: self.state.append((r, off)),
            sink=self.log,
            on_fatal=lambda msg, exc: self.fatal.append(msg),
        )
        self.q.start()

    def commit(self) -> None:
        self.q.on_committed(self.log.next_offset)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
async def env():
    e = Env()
    yield e
    e.commit()
    await e.q.close()


async def test_reply_waits_for_durability_and_state_is_replayed_at_once(env: Env) -> None:
    seen: list[WriteContext] = []

    def op(ctx: WriteContext) -> Result:
        seen.append(ctx)
        return Result(["a", "b"], response=f"epoch={ctx.next_write_offset}", is_atomic=True)

    fut = asyncio.ensure_future(env.q.write("registerBroker", op))
    await settle()
    assert env.state == [("a", 0), ("b", 1)] and env.log.appends == [(2, True)]
    assert not fut.done()
    env.commit()
    assert await fut == "epoch=0"
    assert seen[0].next_write_offset == 0


async def test_a_write_on_an_idle_queue_runs_in_the_callers_turn(env: Env) -> None:
    # Nothing queued or running: the write does not wait for the queue's task to be scheduled.
    await settle()
    fut = asyncio.ensure_future(env.q.write("w", lambda ctx: Result(["x"], "one")))
    await asyncio.sleep(0)
    assert env.state == [("x", 0)] and env.q.size() == 0
    env.commit()
    assert await fut == "one"


async def test_empty_result_waits_for_earlier_records(env: Env) -> None:
    first = asyncio.ensure_future(env.q.write("w1", lambda ctx: Result(["x"], "one")))
    second = asyncio.ensure_future(env.q.write("w2", lambda ctx: Result([], "two")))
    await settle()
    assert not first.done() and not second.done()
    env.commit()
    assert await first == "one" and await second == "two"


async def test_read_sees_only_committed_state(env: Env) -> None:
    w = asyncio.ensure_future(env.q.write("w", lambda ctx: Result(["x"], None)))
    r = asyncio.ensure_future(env.q.read("describe", lambda: len(env.state)))
    later = asyncio.ensure_future(env.q.write("w2", lambda ctx: Result(["y"], None)))
    await settle()
    assert not r.done() and len(env.state) == 1  # the later write has not run: the read holds the queue
    env.commit()
    assert await r == 1
    await settle()
    env.commit()
    await w
    await later
    assert len(env.state) == 2


async def test_refusal_reaches_caller_and_changes_nothing(env: Env) -> None:
    def refuse(ctx: WriteContext) -> Result:
        raise KafkaError(Errors.INVALID_REGISTRATION, "No directories specified in request")

    with pytest.raises(KafkaError) as ei:
        await env.q.write("registerBroker", refuse)
    assert ei.value.code is Errors.INVALID_REGISTRATION
    assert env.log.records == [] and env.state == []


async def test_log_refusal_before_replay_changes_nothing(env: Env) -> None:
    with pytest.raises(KafkaError) as ei:
        await env.q.write("createTopics", lambda ctx: Result(["a", "too-big"], None, is_atomic=True))
    assert ei.value.code is Errors.RECORD_LIST_TOO_LARGE
    assert env.state == [] and env.log.records == []


async def test_deadline_passed_in_queue_is_not_run(env: Env) -> None:
    ran: list[str] = []
    timed_out: list[str] = []
    w = asyncio.ensure_future(env.q.write("w", lambda ctx: Result(["x"], None)))
    blocker = asyncio.ensure_future(
        env.q.read("describe", lambda: None)
    )  # holds the queue until x is durable
    hb = asyncio.ensure_future(
        env.q.write(
            "heartbeat",
            lambda ctx: ran.append("hb") or Result([], None),
            deadline_s=0.01,
            on_timeout=lambda: timed_out.append("hb"),
        )
    )
    await asyncio.sleep(0.05)
    env.commit()
    await blocker
    await w
    with pytest.raises(EventTimeoutError):
        await hb
    assert ran == [] and timed_out == ["hb"]


async def test_close_drains_and_refuses_new_events() -> None:
    e = Env()
    fut = asyncio.ensure_future(e.q.write("w", lambda ctx: Result(["x"], "done")))
    await settle()
    closing = asyncio.ensure_future(e.q.close())
    await settle()
    with pytest.raises(QueueClosedError):
        await e.q.write("late", lambda ctx: Result([], None))
    assert not closing.done()  # the promised reply is not durable yet
    e.commit()
    await closing
    assert await fut == "done"


async def test_replay_failure_is_fatal() -> None:
    log = ListLog()
    fatal: list[str] = []

    def bad_replay(r: Any, off: int) -> None:
        raise ValueError("BUG")

    q = ControllerEventQueue(replay=bad_replay, sink=log, on_fatal=lambda m, e: fatal.append(m))
    q.start()
    fut = asyncio.ensure_future(q.write("w", lambda ctx: Result(["x"], None)))
    await settle()
    assert fatal and "replaying" in fatal[0] and log.records == []
    with pytest.raises(QueueClosedError):
        await q.write("after", lambda ctx: Result([], None))
    fut.cancel()


async def test_a_write_without_records_on_a_durable_log_is_answered_at_once() -> None:
    log = ListLog()
    seen: list[tuple[str, float]] = []
    q = ControllerEventQueue(
        replay=lambda r, off: None,
        sink=log,
        on_fatal=lambda m, e: None,
        observe=lambda name, queued, ran: seen.append((name, queued)),
    )
    q.start()
    await settle()
    assert await q.write("heartbeat", lambda ctx: Result([], "alive")) == "alive"
    with pytest.raises(KafkaError):
        await q.write("refused", lambda ctx: (_ for _ in ()).throw(KafkaError(Errors.STALE_BROKER_EPOCH)))
    first = asyncio.ensure_future(q.write("w", lambda ctx: Result(["x"], "one")))
    await asyncio.sleep(0)
    # Its answer rests on a record not yet durable: it waits like any other.
    later = asyncio.ensure_future(q.write("heartbeat", lambda ctx: Result([], "after")))
    await settle()
    assert not first.done() and not later.done()
    q.on_committed(log.next_offset)
    assert await first == "one" and await later == "after"
    assert seen[:2] == [("heartbeat", 0.0), ("refused", 0.0)]
    await q.close()


@pytest.mark.parametrize("report_fails", [False, True])
async def test_a_queued_write_whose_replay_fails_stops_the_queue(report_fails: bool) -> None:
    """The write waits behind a read, so it runs on the queue's own task, not the caller's. The
    fatal error is reported once and the queue stops, even when the report itself raises."""
    log = ListLog()
    fatal: list[str] = []

    def bad_replay(r: Any, off: int) -> None:
        if r == "bad":
            raise ValueError("BUG")

    def on_fatal(m: str, e: BaseException) -> None:
        fatal.append(m)
        if report_fails:
            raise OSError("the log pipe is closed")

    q = ControllerEventQueue(replay=bad_replay, sink=log, on_fatal=on_fatal)
    q.start()
    first = asyncio.ensure_future(q.write("first", lambda ctx: Result(["ok"], None)))
    await settle()
    reading = asyncio.ensure_future(q.read("r", lambda: "read"))
    await settle()
    bad = asyncio.ensure_future(q.write("bad", lambda ctx: Result(["bad"], None)))
    await settle()
    assert not bad.done() and fatal == []
    q.on_committed(log.next_offset)
    await settle()
    assert await reading == "read"
    assert len(fatal) == 1 and "replaying" in fatal[0]
    assert log.records == ["ok"]
    with pytest.raises(QueueClosedError):
        # Bounded: a queue that failed to stop would leave this write waiting for good.
        await asyncio.wait_for(q.write("after", lambda ctx: Result(["x"], None)), 10)
    assert log.records == ["ok"]
    for fut in (first, bad):
        fut.cancel()
