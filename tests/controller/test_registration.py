"""BrokerRegistration: the checks of reference 7.1 in order, and the records it writes."""

from __future__ import annotations

from protocol.errors import Errors
from protocol.metadata_records import BrokerRegistrationChangeRecord, RegisterBrokerRecord
from protocol.uuid import LOST, Uuid
from tests.controller.control_context import CLUSTER_ID, ControlTestContext


def test_registration_with_two_dirs_writes_register_broker_record_v3_and_epoch_is_its_offset() -> None:
    ctx = ControlTestContext()
    offset = ctx.next_offset
    result = ctx.register(1, ("a", "b"))
    assert result.response.ErrorCode == 0
    assert result.response.BrokerEpoch == offset
    assert result.is_atomic
    assert [(type(r.message).__name__, r.version) for r in result.records] == [("RegisterBrokerRecord", 3)]
    assert result.records[0].message == RegisterBrokerRecord(
        BrokerId=1,
        IsMigratingZkBroker=False,
        IncarnationId=ctx.incarnations[1],
        BrokerEpoch=offset,
        EndPoints=[
            RegisterBrokerRecord.BrokerEndpoint(
                Name="PLAINTEXT", Host="127.0.0.1", Port=9093, SecurityProtocol=0
            )
        ],
        Features=[
            RegisterBrokerRecord.BrokerFeature(
                Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=22
            )
        ],
        Rack=None,
        Fenced=True,
        InControlledShutdown=False,
        LogDirs=[ctx.dir("a"), ctx.dir("b")],
    )
    reg = ctx.registration(1)
    assert reg.epoch == offset and reg.fenced
    assert reg.directories == (ctx.dir("a"), ctx.dir("b"))
    assert ctx.core.m.cluster.register_broker_record_offsets[1] == offset
    assert ctx.core.m.cluster.directory_to_broker == {ctx.dir("a"): 1, ctx.dir("b"): 1}


def _refused(ctx: ControlTestContext, result, code: Errors) -> None:  # type: ignore[no-untyped-def]
    assert result.response.ErrorCode == code, result.response
    assert result.records == []


def test_empty_log_dirs_is_invalid_registration_and_writes_nothing() -> None:
    ctx = ControlTestContext()
    before = ctx.next_offset
    _refused(ctx, ctx.register(1, ()), Errors.INVALID_REGISTRATION)
    assert ctx.next_offset == before
    assert ctx.core.m.cluster.registration(1) is None


def test_reserved_duplicate_and_foreign_dirs_are_invalid_registration() -> None:
    ctx = ControlTestContext()
    _refused(ctx, ctx.register(1, ("a", "LOST")), Errors.INVALID_REGISTRATION)
    _refused(ctx, ctx.register(1, ("UNASSIGNED",)), Errors.INVALID_REGISTRATION)
    _refused(ctx, ctx.register(1, ("a", "a")), Errors.INVALID_REGISTRATION)
    assert ctx.register(1, ("a",)).response.ErrorCode == 0
    _refused(ctx, ctx.register(2, ("b", "a")), Errors.INVALID_REGISTRATION)
    assert LOST.is_reserved()


def test_checks_run_in_reference_order() -> None:
    ctx = ControlTestContext()
    # A wrong cluster id wins over bad dirs and bad features.
    _refused(ctx, ctx.register(1, (), cluster_id="other", mv_range=(1, 1)), Errors.INCONSISTENT_CLUSTER_ID)
    # Bad dirs win over bad features.
    _refused(ctx, ctx.register(1, (), mv_range=(1, 1)), Errors.INVALID_REGISTRATION)
    _refused(ctx, ctx.register(1, ("a",), mv_range=(1, 1)), Errors.UNSUPPORTED_VERSION)
    # ZooKeeper brokers are refused while migration is not enabled.
    _refused(ctx, ctx.register(1, ("a",), migrating_zk_broker=True), Errors.BROKER_ID_NOT_REGISTERED)


def test_broker_without_metadata_version_range_is_assumed_to_support_only_level_1() -> None:
    ctx = ControlTestContext()
    result = ctx.core.register_broker(
        __import__("protocol.rpc.broker_registration", fromlist=["x"]).BrokerRegistrationRequest(
            BrokerId=1, ClusterId=CLUSTER_ID, IncarnationId=Uuid.from_longs(5, 5), LogDirs=[ctx.dir("a")]
        ),
        4,
        ctx.now_ms,
        ctx.next_offset,
    )
    _refused(ctx, result, Errors.UNSUPPORTED_VERSION)


def test_finalized_feature_the_broker_does_not_support_is_refused() -> None:
    from protocol.framing import ApiMessageAndVersion
    from protocol.metadata_records import FeatureLevelRecord

    ctx = ControlTestContext()
    ctx.replay([ApiMessageAndVersion(FeatureLevelRecord(Name="kraft.version", FeatureLevel=1), 0)])
    _refused(ctx, ctx.register(1, ("a",)), Errors.UNSUPPORTED_VERSION)
    assert ctx.register(1, ("a",), features={"kraft.version": (0, 1)}).response.ErrorCode == 0


def test_duplicate_registration_while_the_old_session_is_alive() -> None:
    ctx = ControlTestContext()
    old_epoch = ctx.register(1, ("a",)).response.BrokerEpoch
    ctx.unfence(1)
    ctx.advance(5000)
    _refused(ctx, ctx.register(1, ("a",), new_incarnation=True), Errors.DUPLICATE_BROKER_REGISTRATION)
    # Once the session has run out the new incarnation replaces the old one; it was still
    # unfenced, so it is fenced first and the new registration gets the offset after that.
    ctx.advance(5000)
    offset = ctx.next_offset
    result = ctx.register(1, ("a",), new_incarnation=True)
    assert result.response.ErrorCode == 0
    assert ctx.messages(result)[0] == BrokerRegistrationChangeRecord(
        BrokerId=1, BrokerEpoch=old_epoch, Fenced=1
    )
    assert type(ctx.messages(result)[1]).__name__ == "RegisterBrokerRecord"
    assert result.response.BrokerEpoch == offset + 1
    assert ctx.registration(1).epoch == offset + 1 and ctx.registration(1).fenced


def test_a_fenced_old_registration_never_blocks_a_new_incarnation() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("a",))
    result = ctx.register(1, ("a",), new_incarnation=True)
    assert result.response.ErrorCode == 0
    assert [type(m).__name__ for m in ctx.messages(result)] == ["RegisterBrokerRecord"]


def test_same_incarnation_resend_keeps_epoch_fencing_and_controlled_shutdown() -> None:
    ctx = ControlTestContext()
    epoch = ctx.register(1, ("a",)).response.BrokerEpoch
    ctx.unfence(1)
    ctx.register(2, ("b",))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[1, 2]])
    ctx.heartbeat(1, want_shut_down=True)
    assert ctx.registration(1).in_controlled_shutdown
    result = ctx.register(1, ("a",))
    assert result.response.BrokerEpoch == epoch
    rec = ctx.messages(result)[-1]
    assert (rec.BrokerEpoch, rec.Fenced, rec.InControlledShutdown) == (epoch, False, True)
    assert ctx.registration(1).epoch == epoch
    assert not ctx.registration(1).fenced and ctx.registration(1).in_controlled_shutdown


def test_register_broker_record_version_follows_metadata_version() -> None:
    for mv, version, has_dirs in [(16, 2, False), (8, 2, False), (7, 1, False), (6, 0, False), (17, 3, True)]:
        ctx = ControlTestContext(mv)
        result = ctx.register(1, ("a",))
        assert result.response.ErrorCode == 0, (mv, result.response)
        assert result.records[0].version == version
        assert result.records[0].message.LogDirs == ([ctx.dir("a")] if has_dirs else [])
        assert ctx.registration(1).directories == ((ctx.dir("a"),) if has_dirs else ())


def test_re_registration_with_fewer_dirs_takes_replicas_on_dropped_dirs_offline() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("a", "b"))
    ctx.unfence(1)
    ctx.register(2, ("c",))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[1, 2], [1, 2]])
    ctx.create_topic("u", assignment=[[1]])
    ctx.assign(1, "a", [("t", 0), ("u", 0)])
    ctx.assign(1, "b", [("t", 1)])
    assert ctx.partition("t", 0).isr == (1, 2) and ctx.partition("u", 0).leader == 1
    # Same incarnation, now without dir a: its replicas leave ISRs and leadership first.
    result = ctx.register(1, ("b",))
    assert [type(m).__name__ for m in ctx.messages(result)] == [
        "PartitionChangeRecord",
        "PartitionChangeRecord",
        "RegisterBrokerRecord",
    ]
    assert ctx.partition("t", 0).isr == (2,)
    assert ctx.partition("u", 0).leader == -1 and ctx.partition("u", 0).isr == (1,)
    assert ctx.partition("t", 1).isr == (1, 2)
