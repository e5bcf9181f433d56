"""One test per controller-side field bug of ../shared/reference/jbod-field-bugs.md."""

from __future__ import annotations

from controller.core import QuorumControllerCore
from controller.core.metadata_version import MV_3_7_IV2
from protocol.errors import Errors
from protocol.framing import ApiMessageAndVersion, decode_record, encode_record
from protocol.metadata_records import FeatureLevelRecord, NoOpRecord
from protocol.uuid import MIGRATING, UNASSIGNED
from tests.controller.control_context import SESSION_TIMEOUT_MS, ControlTestContext


def _bump_metadata_version(ctx: ControlTestContext, level: int) -> None:
    ctx.replay([ApiMessageAndVersion(FeatureLevelRecord(Name="metadata.version", FeatureLevel=level), 0)])


def test_field_bug_1_multiple_log_dirs_below_jbod_metadata_version_are_refused() -> None:
    ctx = ControlTestContext(MV_3_7_IV2 - 1)
    result = ctx.register(1, ("a", "b"))
    assert result.response.ErrorCode == Errors.INVALID_REGISTRATION
    assert result.records == []
    assert ctx.register(1, ("a",)).response.ErrorCode == 0
    assert ControlTestContext(MV_3_7_IV2).register(1, ("a", "b")).response.ErrorCode == 0


def test_field_bug_2_topics_created_after_the_jbod_upgrade_get_leaders() -> None:
    ctx = ControlTestContext(MV_3_7_IV2 - 1)
    for b in (1, 2):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    assert ctx.registration(1).directories == ()
    _bump_metadata_version(ctx, MV_3_7_IV2)
    result = ctx.create_topic("after", 2, 2)
    parts = ctx.messages(result)[1:]
    assert all(p.Leader in (1, 2) for p in parts)
    assert all(p.Directories == [MIGRATING, MIGRATING] for p in parts)
    # Registrations without dirs count every dir as online, so fencing one broker re-elects.
    ctx.heartbeat(1, want_fence=True)
    assert {ctx.partition("after", i).leader for i in (0, 1)} == {2}


def test_field_bug_3_same_incarnation_re_registration_keeps_the_broker_unfenced() -> None:
    ctx = ControlTestContext(MV_3_7_IV2 - 1)
    ctx.register(1, ("a",))
    ctx.unfence(1)
    ctx.register(2, ("b",))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[1, 2]])
    _bump_metadata_version(ctx, MV_3_7_IV2)
    result = ctx.register(1, ("a",))
    assert [type(m).__name__ for m in ctx.messages(result)] == ["RegisterBrokerRecord"]
    assert ctx.messages(result)[0].Fenced is False
    assert not ctx.registration(1).fenced
    assert ctx.registration(1).directories == (ctx.dir("a"),)
    assert ctx.partition("t", 0).leader == 1


def test_field_bug_4_same_incarnation_keeps_the_broker_epoch() -> None:
    ctx = ControlTestContext()
    epoch = ctx.register(1, ("a",)).response.BrokerEpoch
    ctx.unfence(1)
    ctx.core.replay_all([ApiMessageAndVersion(NoOpRecord(), 0)] * 3, ctx.next_offset)
    ctx.log.extend([ApiMessageAndVersion(NoOpRecord(), 0)] * 3)
    result = ctx.register(1, ("a",))
    assert result.response.BrokerEpoch == epoch
    assert ctx.messages(result)[0].BrokerEpoch == epoch
    assert ctx.registration(1).epoch == epoch
    assert ctx.core.m.cluster.register_broker_record_offsets[1] == ctx.next_offset - 1
    assert ctx.heartbeat(1, epoch=epoch).response.ErrorCode == 0
    # A new incarnation does get a new epoch.
    ctx.heartbeat(1, want_fence=True)
    assert ctx.register(1, ("a",), new_incarnation=True).response.BrokerEpoch == ctx.next_offset - 1 != epoch


def test_field_bug_6_partition_changes_below_jbod_metadata_version_stay_writable() -> None:
    ctx = ControlTestContext(MV_3_7_IV2 - 1)
    for b in (1, 2, 3):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    result = ctx.create_topic("old", assignment=[[1, 2, 3]])
    assert result.records[-1].version == 0
    result = ctx.heartbeat(1, want_fence=True)
    change = result.records[0]
    assert change.version == 0 and change.message.Directories is None
    # Written at version 0 it must encode and read back (Kafka failed with UnwritableMetadataException).
    assert decode_record(encode_record(change)).message == change.message
    assert ctx.partition("old", 0).directories == (MIGRATING,) * 3
    assert UNASSIGNED not in ctx.partition("old", 0).directories


def test_field_bug_7_assignment_for_a_replica_moved_away_is_not_leader_or_follower() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b"))
    ctx.create_topic("t", assignment=[[1]])
    before = ctx.core.state()
    for _ in range(2):
        result = ctx.assign(2, "a", [("t", 0)])
        assert result.response.ErrorCode == 0
        assert (
            result.response.Directories[0].Topics[0].Partitions[0].ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER
        )
        assert result.records == []
    assert ctx.core.state() == before


def test_field_bug_10_offline_dirs_repeated_in_every_heartbeat_act_once() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b", "c"))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[2, 1], [2, 1], [2, 1]])
    for i, d in enumerate("abc"):
        ctx.assign(2, d, [("t", i)])
    first = ctx.heartbeat(2, offline=["a"])
    assert [type(m).__name__ for m in ctx.messages(first)] == [
        "PartitionChangeRecord",
        "BrokerRegistrationChangeRecord",
    ]
    for _ in range(3):
        assert ctx.heartbeat(2, offline=["a"]).records == []
    more = ctx.heartbeat(2, offline=["a", "c"])
    msgs = ctx.messages(more)
    assert [(type(m).__name__, getattr(m, "PartitionId", None)) for m in msgs] == [
        ("PartitionChangeRecord", 2),
        ("BrokerRegistrationChangeRecord", None),
    ]
    assert msgs[1].LogDirs == [ctx.dir("b")]


def test_field_bug_13_topic_deleted_and_recreated_while_a_dir_is_offline() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b"))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[2, 1]])
    old_id = ctx.topic_id("t")
    ctx.assign(2, "a", [("t", 0)])
    ctx.heartbeat(2, offline=["a"])
    ctx.delete_topic("t")
    assert ctx.core.m.replication.partitions_on(2, ctx.dir("a")) == []
    ctx.create_topic("t", assignment=[[2, 1]])
    new_id = ctx.topic_id("t")
    assert new_id != old_id
    # With one dir left online the new replica goes straight there (Kafka's defaultDir), and leads.
    p = ctx.partition("t", 0)
    assert p.directories == (ctx.dir("b"), ctx.dir("s")) and p.leader == 2
    # The broker keeps reporting dir a; the new topic is not touched by it.
    assert ctx.heartbeat(2, offline=["a"]).records == []
    assert ctx.assign(2, "b", [("t", 0)]).records == []
    # An assignment naming the old topic id is refused.
    result = ctx.assign(2, "b", [(old_id, 0)])
    assert result.response.Directories[0].Topics[0].Partitions[0].ErrorCode == Errors.UNKNOWN_TOPIC_ID


def test_field_bug_24_noop_records_never_keep_a_broker_from_catching_up() -> None:
    ctx = ControlTestContext()
    register_offset = ctx.next_offset
    ctx.register(1, ("a",))
    for _ in range(50):
        ctx.apply(ctx.core.noop())
    # The broker has read up to its registration but not the NoOps written since.
    result = ctx.heartbeat(1, offset=register_offset)
    assert result.response.IsCaughtUp is True
    assert result.response.IsFenced is False


def test_field_bug_25_brokers_that_never_heartbeat_the_new_controller_are_fenced_after_a_session() -> None:
    ctx = ControlTestContext()
    for b in (1, 2):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    # A new controller replays the log and becomes active; neither broker ever heartbeats to it.
    new = QuorumControllerCore(ctx.config)
    new.replay_all(ctx.log, 0)
    now = ctx.now_ms + 60_000
    new.activate(now)
    assert new.maybe_fence_one_stale_broker(now + SESSION_TIMEOUT_MS).response is None
    fenced = []
    offset = len(ctx.log)
    for _ in range(3):
        result = new.maybe_fence_one_stale_broker(now + SESSION_TIMEOUT_MS + 1)
        offset = new.replay_all(result.records, offset)
        fenced.append(result.response)
    assert fenced == [1, 2, None]
    assert new.fenced_broker_count() == 2


def test_field_bug_25_also_without_an_explicit_activation() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("a",))
    ctx.unfence(1)
    new = QuorumControllerCore(ctx.config)
    new.replay_all(ctx.log, 0)
    now = ctx.now_ms + 3_600_000
    # The first look starts the session rather than fencing at once.
    assert new.maybe_fence_one_stale_broker(now).response is None
    assert new.maybe_fence_one_stale_broker(now + SESSION_TIMEOUT_MS + 1).response == 1
