"""The controller's Metadata answer and a broker's give the same OfflineReplicas, by one rule.

The same records go into a controller core and into a broker's image; every kind of directory a
replica can be assigned (LOST, UNASSIGNED, MIGRATING, an online dir, a dir reported offline, an id
nobody registered) on every kind of broker (several dirs, one dir, none, fenced, not registered)
must come out the same on both sides, and as docs/kip-deviations.md says.
"""

from __future__ import annotations

import pytest

from broker.dataplane.metadata_response import metadata_response
from controller.core import ControllerConfig, QuorumControllerCore
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metadata import BrokerRegistration, PartitionRegistration, is_replica_online
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.rpc.metadata import MetadataRequest
from protocol.uuid import LOST, MIGRATING, UNASSIGNED, Uuid

MULTI, SINGLE, NO_DIRS, FENCED, GONE = 1, 2, 3, 4, 9
M_A, M_B, M_FAILED = (Uuid.from_longs(800, i) for i in (1, 2, 3))
S_A = Uuid.from_longs(801, 1)
F_A, F_B = Uuid.from_longs(804, 1), Uuid.from_longs(804, 2)
UNKNOWN = Uuid.from_longs(899, 9)
TOPIC = Uuid.from_longs(900, 1)
JBOD_MV = 21

# (assigned dir, whether it counts as online) per live unfenced broker kind
EXPECTED: dict[int, list[tuple[Uuid, bool]]] = {
    MULTI: [
        (M_A, True),
        (M_B, True),
        (M_FAILED, False),
        (LOST, False),
        (UNASSIGNED, False),
        (MIGRATING, False),
        (UNKNOWN, False),
    ],
    SINGLE: [(S_A, True), (LOST, False), (UNASSIGNED, True), (MIGRATING, True), (UNKNOWN, False)],
    NO_DIRS: [(UNKNOWN, True), (LOST, False), (UNASSIGNED, True), (MIGRATING, True)],
}


def _register(broker_id: int, dirs: list[Uuid], fenced: bool = False) -> mr.RegisterBrokerRecord:
    return mr.RegisterBrokerRecord(
        BrokerId=broker_id,
        BrokerEpoch=100 + broker_id,
        IncarnationId=Uuid.from_longs(0x1000 + broker_id, 1),
        EndPoints=[
            mr.RegisterBrokerRecord.BrokerEndpoint(
                Name="PLAINTEXT", Host="127.0.0.1", Port=9000 + broker_id, SecurityProtocol=0
            )
        ],
        Features=[],
        Fenced=fenced,
        LogDirs=dirs,
    )


def _records() -> list[ApiMessageAndVersion]:
    recs: list[tuple[object, int]] = [
        (mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=JBOD_MV), 0),
        (_register(MULTI, [M_A, M_B, M_FAILED]), 3),
        (_register(SINGLE, [S_A]), 3),
        (_register(NO_DIRS, []), 3),
        (_register(FENCED, [F_A, F_B], fenced=True), 3),
        # M_FAILED reported offline: still registered, no longer online
        (
            mr.BrokerRegistrationChangeRecord(
                BrokerId=MULTI, BrokerEpoch=100 + MULTI, Fenced=0, InControlledShutdown=0, LogDirs=[M_A, M_B]
            ),
            2,
        ),
        (mr.TopicRecord(Name="t", TopicId=TOPIC), 0),
    ]
    # One partition per (broker, dir) pair, the broker alone with a partner that is always online,
    # so each answer isolates one case.
    cases = [(b, d) for b, pairs in EXPECTED.items() for d, _ in pairs]
    cases += [(FENCED, F_A), (GONE, UNASSIGNED)]
    for pid, (broker_id, directory) in enumerate(cases):
        partner, partner_dir = (SINGLE, S_A) if broker_id != SINGLE else (MULTI, M_A)
        recs.append(
            (
                mr.PartitionRecord(
                    PartitionId=pid,
                    TopicId=TOPIC,
                    Replicas=[partner, broker_id],
                    Isr=[partner],
                    Leader=partner,
                    LeaderEpoch=0,
                    PartitionEpoch=0,
                    Directories=[partner_dir, directory],
                ),
                2,
            )
        )
    return [ApiMessageAndVersion(m, v) for m, v in recs]


def _controller_offline() -> dict[int, list[int]]:
    core = QuorumControllerCore(ControllerConfig(node_id=3000, cluster_id="c", random_seed=1))
    core.replay_all(_records(), 0)
    resp = core.metadata(MetadataRequest(Topics=None), 12, "PLAINTEXT")
    return {p.PartitionIndex: p.OfflineReplicas for t in resp.Topics for p in t.Partitions}


def _image() -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    for offset, rec in enumerate(_records()):
        delta.replay(rec.message, offset)
    return delta.apply()


def _broker_offline() -> dict[int, list[int]]:
    resp = metadata_response(
        _image(),
        MetadataRequest(Topics=None),
        12,
        listener="PLAINTEXT",
        cluster_id="c",
        local_broker_id=SINGLE,
    )
    return {p.PartitionIndex: p.OfflineReplicas for t in resp.Topics for p in t.Partitions}


def _expected() -> dict[int, list[int]]:
    out = {}
    pid = 0
    for broker_id, pairs in EXPECTED.items():
        for _, online in pairs:
            out[pid] = [] if online else [broker_id]
            pid += 1
    out[pid] = [FENCED]
    out[pid + 1] = [GONE]
    return out


def test_controller_and_broker_report_the_same_offline_replicas_as_documented() -> None:
    expected = _expected()
    assert _controller_offline() == expected
    assert _broker_offline() == expected


def test_controller_and_image_hold_the_same_registrations() -> None:
    core = QuorumControllerCore(ControllerConfig(node_id=3000, cluster_id="c", random_seed=1))
    core.replay_all(_records(), 0)
    image = _image()
    assert dict(image.cluster.brokers) == core.m.cluster.registrations
    assert dict(image.topics.get_topic("t").partitions) == core.m.replication.topics[TOPIC].partitions


@pytest.mark.parametrize(("broker_id", "pairs"), list(EXPECTED.items()))
def test_is_replica_online_is_the_registration_rule(broker_id: int, pairs: list[tuple[Uuid, bool]]) -> None:
    brokers: dict[int, BrokerRegistration] = dict(_image().cluster.brokers)
    for directory, online in pairs:
        p = PartitionRegistration(replicas=(broker_id,), directories=(directory,), isr=())
        assert is_replica_online(brokers, p, broker_id) is online
        assert brokers[broker_id].directory_online(directory) is online
