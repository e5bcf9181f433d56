"""KIP-951 in kraftpy's producer: a NOT_LEADER_OR_FOLLOWER answer naming the new leader (CurrentLeader
and NodeEndpoints) moves the client's cached leader, so it sends again at once."""

from __future__ import annotations

from protocol.rpc.metadata import MetadataResponse
from protocol.rpc.produce import ProduceResponse
from protocol.uuid import Uuid
from tools.client.cluster import BrokerInfo, ClusterMetadata, ConnectionPool, topics_from

M = MetadataResponse


def _metadata() -> ClusterMetadata:
    md = ClusterMetadata("127.0.0.1:1", ConnectionPool())
    resp = M(
        Brokers=[M.MetadataResponseBroker(NodeId=1, Host="h1", Port=1)],
        Topics=[
            M.MetadataResponseTopic(
                Name="t",
                TopicId=Uuid.from_longs(1, 1),
                Partitions=[
                    M.MetadataResponsePartition(
                        PartitionIndex=0, LeaderId=1, LeaderEpoch=4, ReplicaNodes=[1, 2]
                    )
                ],
            )
        ],
    )
    md.brokers = {1: BrokerInfo(1, "h1", 1, None)}
    md.topics = topics_from(resp)
    return md


def test_a_newer_leader_with_its_endpoint_moves_the_cached_leader() -> None:
    md = _metadata()
    ep = ProduceResponse.NodeEndpoint(NodeId=2, Host="h2", Port=2)
    assert md.apply_leader_hint("t", 0, 2, 5, [ep])
    assert md.partition("t", 0).leader == 2 and md.partition("t", 0).leader_epoch == 5
    assert md.leader_url("t", 0) == "http://h2:2"


def test_stale_or_unreachable_hints_change_nothing() -> None:
    md = _metadata()
    assert not md.apply_leader_hint("t", 0, 2, 4, [ProduceResponse.NodeEndpoint(NodeId=2, Host="h2", Port=2)])
    assert not md.apply_leader_hint("t", 0, 3, 9, [])  # no address for broker 3
    assert not md.apply_leader_hint("t", 0, -1, 9, [])
    assert not md.apply_leader_hint("u", 0, 1, 9, [])
    assert md.partition("t", 0).leader == 1 and md.partition("t", 0).leader_epoch == 4
