"""Replay: the one dispatch table, metadata transactions, bootstrap and activation records."""

from __future__ import annotations

import pytest

from controller.core import ControllerConfig, QuorumControllerCore
from controller.core.metadata_version import MV_3_3_IV0, MV_3_4_IV0, MV_3_6_IV1, MV_3_9_IV0
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    ClientQuotaRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    NoOpRecord,
    RegisterControllerRecord,
    UnknownRecord,
    ZkMigrationStateRecord,
)
from protocol.rpc.allocate_producer_ids import AllocateProducerIdsRequest
from protocol.rpc.describe_cluster import DescribeClusterRequest
from protocol.uuid import Uuid
from tests.controller.control_context import CLUSTER_ID, ControlTestContext


def amv(message: object, version: int = 0) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(message, version)


def core() -> QuorumControllerCore:
    return QuorumControllerCore(ControllerConfig(node_id=1, cluster_id=CLUSTER_ID, random_seed=1))


def test_records_the_controller_does_not_act_on_are_accepted() -> None:
    c = core()
    before = c.state()
    c.replay_all(
        [
            amv(NoOpRecord()),
            amv(ClientQuotaRecord()),
        ],
        0,
    )
    assert c.state() == before
    c.replay(amv(RegisterControllerRecord(ControllerId=3000, IncarnationId=Uuid.from_longs(9, 9))), 5)
    assert 3000 in c.m.cluster.controllers


def test_unknown_record_types_fail_loudly() -> None:
    with pytest.raises(ValueError, match="unknown record type"):
        core().replay(amv(UnknownRecord(api_key=99, version=0, raw=b"")), 5)


@pytest.mark.parametrize(
    ("mv", "names"),
    [
        (
            MV_3_9_IV0,
            [
                "BeginTransactionRecord",
                "FeatureLevelRecord",
                "ZkMigrationStateRecord",
                "EndTransactionRecord",
            ],
        ),
        (
            MV_3_6_IV1,
            [
                "BeginTransactionRecord",
                "FeatureLevelRecord",
                "ZkMigrationStateRecord",
                "EndTransactionRecord",
            ],
        ),
        (MV_3_6_IV1 - 1, ["FeatureLevelRecord", "ZkMigrationStateRecord"]),
        (MV_3_4_IV0 - 1, ["FeatureLevelRecord"]),
    ],
)
def test_bootstrap_records_by_metadata_version(mv: int, names: list[str]) -> None:
    result = core().bootstrap_records([], mv)
    assert result.is_atomic
    assert [type(r.message).__name__ for r in result.records] == names
    fl = next(r.message for r in result.records if isinstance(r.message, FeatureLevelRecord))
    assert fl == FeatureLevelRecord(Name="metadata.version", FeatureLevel=mv)
    zk = [r.message for r in result.records if isinstance(r.message, ZkMigrationStateRecord)]
    assert zk in ([], [ZkMigrationStateRecord(ZkMigrationState=0)])
    begin = [r.message for r in result.records if isinstance(r.message, BeginTransactionRecord)]
    assert begin in ([], [BeginTransactionRecord(Name="Bootstrap records")])


def test_bootstrap_keeps_given_records_and_their_metadata_version() -> None:
    given = [
        amv(FeatureLevelRecord(Name="metadata.version", FeatureLevel=MV_3_9_IV0)),
        amv(FeatureLevelRecord(Name="kraft.version", FeatureLevel=1)),
    ]
    records = core().bootstrap_records(given, MV_3_9_IV0).records
    assert records[1:3] == given
    with pytest.raises(ValueError):
        core().bootstrap_records([], MV_3_3_IV0 - 1)


def test_activation_records() -> None:
    c = core()
    assert (
        next(type(r.message).__name__ for r in c.activation_records([], MV_3_9_IV0).records)
        == "BeginTransactionRecord"
    )
    offset = c.replay_all(c.bootstrap_records([], MV_3_9_IV0).records[:-1], 0)
    assert c.in_transaction
    aborted = c.activation_records([], MV_3_9_IV0).records
    assert [type(r.message) for r in aborted] == [AbortTransactionRecord]
    c.replay_all(aborted, offset)
    assert not c.in_transaction
    assert not c.m.features.metadata_version_known
    assert c.activation_records([], MV_3_9_IV0).records == []


def test_an_aborted_transaction_leaves_the_state_as_it_was() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("a",))
    ctx.unfence(1)
    ctx.create_topic("keep")
    before = ctx.core.state()
    ctx.replay([amv(BeginTransactionRecord(Name="x"))])
    ctx.create_topic("drop")
    ctx.heartbeat(1, want_fence=True)
    assert ctx.core.state() != before
    ctx.replay([amv(AbortTransactionRecord(Reason="test"))])
    assert ctx.core.state() == before
    # Heartbeat sessions are runtime state and survive the abort.
    assert ctx.core.m.heartbeats.state(1) is not None
    ctx.replay([amv(BeginTransactionRecord()), amv(EndTransactionRecord())])
    with pytest.raises(ValueError):
        ctx.replay([amv(EndTransactionRecord())])


def test_replaying_the_log_from_empty_rebuilds_the_same_state() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b"))
    ctx.unfence(2)
    ctx.create_topic("t", 4, 2, configs={"retention.ms": "7"})
    ctx.assign(2, "a", [("t", i) for i in range(4)])
    ctx.heartbeat(2, offline=["a"])
    ctx.delete_topic("t")
    ctx.create_topic("u", 2, 2)
    assert ctx.replayed_from_empty().state() == ctx.core.state()


def test_allocate_producer_ids_hands_out_consecutive_blocks() -> None:
    ctx = ControlTestContext()
    epoch = ctx.register(1, ("a",)).response.BrokerEpoch
    starts = []
    for _ in range(3):
        result = ctx.apply(
            ctx.core.allocate_producer_ids(AllocateProducerIdsRequest(BrokerId=1, BrokerEpoch=epoch), 0)
        )
        assert result.response.ErrorCode == 0 and result.response.ProducerIdLen == 1000
        starts.append(result.response.ProducerIdStart)
        assert ctx.messages(result)[0].NextProducerId == starts[-1] + 1000
    assert starts == [0, 1000, 2000]
    bad = ctx.core.allocate_producer_ids(AllocateProducerIdsRequest(BrokerId=1, BrokerEpoch=epoch + 1), 0)
    assert bad.response.ErrorCode == 77 and bad.records == []


def test_describe_cluster_lists_unfenced_brokers() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("a",), rack="r1")
    ctx.unfence(1)
    ctx.register(2, ("b",))
    d = ctx.core.describe_cluster(DescribeClusterRequest(), 1)
    assert (d.ErrorCode, d.ClusterId, d.ControllerId) == (0, CLUSTER_ID, 3000)
    assert [(b.BrokerId, b.Host, b.Port, b.Rack) for b in d.Brokers] == [(1, "127.0.0.1", 9093, "r1")]
