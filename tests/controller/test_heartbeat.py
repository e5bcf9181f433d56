"""BrokerHeartbeat: the FENCED / UNFENCED / CONTROLLED_SHUTDOWN / SHUTDOWN_NOW state machine,
catch-up, epochs and session expiry (reference 7.2)."""

from __future__ import annotations

from protocol.errors import Errors
from protocol.metadata_records import BrokerRegistrationChangeRecord, PartitionChangeRecord
from tests.controller.control_context import SESSION_TIMEOUT_MS, ControlTestContext


def _resp(result) -> tuple[int, bool, bool, bool]:  # type: ignore[no-untyped-def]
    r = result.response
    return (r.ErrorCode, r.IsCaughtUp, r.IsFenced, r.ShouldShutDown)


def test_heartbeat_before_registration_or_with_wrong_epoch_is_stale_broker_epoch() -> None:
    ctx = ControlTestContext()
    result = ctx.heartbeat(1, epoch=0)
    assert _resp(result) == (Errors.STALE_BROKER_EPOCH, False, True, False)
    assert result.records == []
    epoch = ctx.register(1).response.BrokerEpoch
    assert ctx.heartbeat(1, epoch=epoch + 1).response.ErrorCode == Errors.STALE_BROKER_EPOCH


def test_fenced_broker_is_unfenced_once_caught_up_and_not_wanting_fence() -> None:
    ctx = ControlTestContext()
    register_offset = ctx.next_offset
    epoch = ctx.register(1).response.BrokerEpoch
    # Behind the registration record: stays fenced, not caught up.
    assert _resp(ctx.heartbeat(1, offset=register_offset - 1)) == (0, False, True, False)
    # Caught up but wanting to stay fenced.
    assert _resp(ctx.heartbeat(1, want_fence=True)) == (0, True, True, False)
    result = ctx.heartbeat(1, offset=register_offset)
    assert _resp(result) == (0, True, False, False)
    assert ctx.messages(result) == [BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=epoch, Fenced=-1)]
    assert result.records[0].version == 0
    assert not ctx.registration(1).fenced


def test_unfenced_broker_wanting_fence_is_fenced_and_leaves_isrs() -> None:
    ctx = ControlTestContext()
    for b in (1, 2):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    ctx.create_topic("t", assignment=[[1, 2]])
    tid = ctx.topic_id("t")
    epoch = ctx.registration(1).epoch
    result = ctx.heartbeat(1, want_fence=True)
    assert _resp(result)[2] is True
    assert ctx.messages(result) == [
        PartitionChangeRecord(PartitionId=0, TopicId=tid, Isr=[2], Leader=2),
        BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=epoch, Fenced=1),
    ]
    p = ctx.partition("t", 0)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (2, (2,), 1, 1)


def test_unfencing_elects_leaders_for_leaderless_partitions_it_hosts() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("a",))
    ctx.unfence(1)
    ctx.create_topic("t", assignment=[[1]])
    ctx.heartbeat(1, want_fence=True)
    assert ctx.partition("t", 0).leader == -1 and ctx.partition("t", 0).isr == (1,)
    result = ctx.heartbeat(1)
    tid = ctx.topic_id("t")
    assert ctx.messages(result)[1:] == [PartitionChangeRecord(PartitionId=0, TopicId=tid, Leader=1)]
    assert ctx.partition("t", 0).leader == 1 and ctx.partition("t", 0).leader_epoch == 2


def test_want_shut_down_without_leaderships_is_shutdown_now() -> None:
    ctx = ControlTestContext()
    ctx.register(1)
    ctx.unfence(1)
    result = ctx.heartbeat(1, want_shut_down=True)
    assert _resp(result) == (0, True, True, True)
    assert [type(m).__name__ for m in ctx.messages(result)] == ["BrokerRegistrationChangeRecord"]
    assert ctx.registration(1).fenced


def test_fenced_broker_wanting_shut_down_is_told_to_shut_down_without_records() -> None:
    ctx = ControlTestContext()
    ctx.register(1)
    result = ctx.heartbeat(1, want_shut_down=True)
    assert _resp(result) == (0, True, True, True)
    assert result.records == []


def test_controlled_shutdown_moves_leadership_then_waits_for_active_brokers_to_catch_up() -> None:
    ctx = ControlTestContext()
    for b in (1, 2):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    ctx.create_topic("t", assignment=[[1, 2]])
    tid = ctx.topic_id("t")
    epoch = ctx.registration(1).epoch
    result = ctx.heartbeat(1, want_shut_down=True)
    assert _resp(result) == (0, True, False, False)
    cs_end = ctx.next_offset - 1
    assert ctx.messages(result) == [
        BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=epoch, InControlledShutdown=1),
        PartitionChangeRecord(PartitionId=0, TopicId=tid, Isr=[2], Leader=2),
    ]
    assert result.records[0].version == 1
    # Broker 2 has not read past the controlled-shutdown batch yet.
    ctx.heartbeat(2, offset=cs_end - 1)
    assert _resp(ctx.heartbeat(1, want_shut_down=True)) == (0, True, False, False)
    ctx.heartbeat(2, offset=cs_end)
    result = ctx.heartbeat(1, want_shut_down=True)
    assert _resp(result) == (0, True, True, True)
    assert ctx.messages(result) == [BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=epoch, Fenced=1)]


def test_unfenced_broker_wanting_fence_and_shut_down_is_shutdown_now() -> None:
    ctx = ControlTestContext()
    ctx.register(1)
    ctx.unfence(1)
    assert _resp(ctx.heartbeat(1, want_fence=True, want_shut_down=True))[2:] == (True, True)


def test_session_expiry_fences_one_stale_broker_at_a_time_oldest_first() -> None:
    ctx = ControlTestContext()
    for b in (1, 2, 3):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
        ctx.advance(10)
    ctx.heartbeat(3)
    # Broker 1 was last heard from 30 ms ago: its session lasts to exactly now.
    ctx.advance(SESSION_TIMEOUT_MS - 30)
    assert ctx.fence_stale().response is None
    assert ctx.core.next_session_expiry_ms() == ctx.now_ms + 1
    ctx.advance(1)
    assert ctx.fence_stale().response == 1
    assert ctx.fence_stale().response is None
    ctx.advance(10)
    assert ctx.fence_stale().response == 2
    assert ctx.fence_stale().response is None
    assert ctx.registration(1).fenced and ctx.registration(2).fenced and not ctx.registration(3).fenced


def test_heartbeats_keep_the_session_alive() -> None:
    ctx = ControlTestContext()
    ctx.register(1)
    ctx.unfence(1)
    for _ in range(5):
        ctx.advance(SESSION_TIMEOUT_MS - 1)
        ctx.heartbeat(1)
        assert ctx.fence_stale().response is None
