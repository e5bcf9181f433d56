"""The broker's Metadata answer: offline replicas by KIP-112 / reference 7.8, and replica directories."""

from __future__ import annotations

from broker.dataplane.metadata_response import metadata_response, min_insync_replicas
from kraftpy.image import MetadataDelta, MetadataImage
from protocol import metadata_records as mr
from protocol.errors import Errors
from protocol.rpc.metadata import MetadataRequest
from protocol.uuid import LOST, Uuid

DIRS = {b: (Uuid.random(), Uuid.random()) for b in (1, 2, 3)}
TOPIC_ID = Uuid.random()


def _broker(
    b: int, *, listener: str = "PLAINTEXT", dirs: tuple[Uuid, ...] | None = None
) -> mr.RegisterBrokerRecord:
    return mr.RegisterBrokerRecord(
        BrokerId=b,
        BrokerEpoch=100 + b,
        IncarnationId=Uuid.random(),
        EndPoints=[
            mr.RegisterBrokerRecord.BrokerEndpoint(
                Name=listener, Host="127.0.0.1", Port=9000 + b, SecurityProtocol=0
            )
        ],
        Fenced=False,
        LogDirs=list(DIRS[b] if dirs is None else dirs),
    )


def image(*records: object) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    for offset, rec in enumerate(records):
        delta.replay(rec, offset)
    return delta.apply()


def cluster(*extra: object) -> MetadataImage:
    return image(
        mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=21),
        _broker(1),
        _broker(2),
        _broker(3),
        mr.TopicRecord(Name="t", TopicId=TOPIC_ID),
        mr.PartitionRecord(
            PartitionId=0,
            TopicId=TOPIC_ID,
            Replicas=[1, 2, 3],
            Isr=[1, 2, 3],
            Leader=1,
            Directories=[DIRS[1][0], DIRS[2][1], DIRS[3][0]],
        ),
        *extra,
    )


def describe(img: MetadataImage, topics: list[str] | None = None, version: int = 12):
    req = MetadataRequest(
        Topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(Name=t) for t in topics]
    )
    return metadata_response(img, req, version, listener="PLAINTEXT", cluster_id="c", local_broker_id=2)


def test_all_replicas_online() -> None:
    resp = describe(cluster())
    assert [b.NodeId for b in resp.Brokers] == [1, 2, 3]
    assert resp.ControllerId == 2 and resp.ClusterId == "c"
    (t,) = resp.Topics
    assert t.Name == "t" and t.TopicId == TOPIC_ID
    (p,) = t.Partitions
    assert (p.ErrorCode, p.LeaderId, p.ReplicaNodes, p.IsrNodes, p.OfflineReplicas) == (
        0,
        1,
        [1, 2, 3],
        [1, 2, 3],
        [],
    )
    assert p.ReplicaDirectories == [DIRS[1][0], DIRS[2][1], DIRS[3][0]]


def test_replica_in_a_failed_dir_is_offline() -> None:
    # Broker 2 reported its second dir offline: its registration no longer lists it.
    change = mr.BrokerRegistrationChangeRecord(BrokerId=2, BrokerEpoch=102, LogDirs=[DIRS[2][0]])
    (p,) = describe(cluster(change)).Topics[0].Partitions
    assert p.OfflineReplicas == [2]


def test_fenced_broker_and_missing_listener_and_lost_dir() -> None:
    fence = mr.FenceBrokerRecord(Id=3, Epoch=103)
    (p,) = describe(cluster(fence)).Topics[0].Partitions
    assert p.OfflineReplicas == [3]
    lost = mr.PartitionChangeRecord(
        PartitionId=0, TopicId=TOPIC_ID, Directories=[LOST, DIRS[2][1], DIRS[3][0]]
    )
    (p,) = describe(cluster(lost)).Topics[0].Partitions
    assert p.OfflineReplicas == [1]
    other = cluster(_broker(3, listener="OTHER"))
    resp = describe(other)
    assert resp.Topics[0].Partitions[0].OfflineReplicas == [3]
    assert [b.NodeId for b in resp.Brokers] == [1, 2]


def test_leaderless_partition_and_unknown_topic() -> None:
    no_leader = mr.PartitionChangeRecord(PartitionId=0, TopicId=TOPIC_ID, Leader=-1)
    resp = describe(cluster(no_leader), ["t", "nope"])
    assert resp.Topics[0].Partitions[0].ErrorCode == Errors.LEADER_NOT_AVAILABLE
    assert resp.Topics[1].ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_replica_directories_travel_tagged_and_only_from_v9() -> None:
    resp = describe(cluster())
    assert "ReplicaDirectories" in resp.to_wire(12, "json")["Topics"][0]["Partitions"][0]
    assert "ReplicaDirectories" not in resp.to_wire(8, "json")["Topics"][0]["Partitions"][0]


def test_topic_min_insync_replicas_overrides_the_broker_default() -> None:
    cfg = mr.ConfigRecord(ResourceType=2, ResourceName="t", Name="min.insync.replicas", Value="2")
    assert min_insync_replicas(cluster(cfg), "t", 1) == 2
    assert min_insync_replicas(cluster(), "t", 1) == 1
