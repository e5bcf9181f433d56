"""A ZooKeeper-mode broker's metadata cache: UpdateMetadata replayed into the one image, read with
the one replica rule (OfflineReplicas come back as offline replicas)."""

from __future__ import annotations

from broker.zk.metadata_cache import ZkMetadataCache
from kraftpy.metadata.replicas import offline_replicas
from protocol.rpc.update_metadata import UpdateMetadataRequest
from protocol.uuid import Uuid

TID = Uuid.from_string("cMr3GpVESX2L3byPGf93lQ")


def request(
    *, leader: int = 1, offline: list[int] | None = None, live: tuple[int, ...] = (1, 2, 3)
) -> UpdateMetadataRequest:
    return UpdateMetadataRequest.model_validate(
        {
            "ControllerId": 1,
            "ControllerEpoch": 3,
            "TopicStates": [
                {
                    "TopicName": "t",
                    "TopicId": TID,
                    "PartitionStates": [
                        {
                            "PartitionIndex": 0,
                            "ControllerEpoch": 3,
                            "Leader": leader,
                            "LeaderEpoch": 4,
                            "Isr": [1, 2],
                            "ZkVersion": 7,
                            "Replicas": [1, 2, 3],
                            "OfflineReplicas": offline or [],
                        }
                    ],
                }
            ],
            "LiveBrokers": [
                {
                    "Id": b,
                    "Endpoints": [
                        {"Port": 9090 + b, "Host": "h", "Listener": "PLAINTEXT", "SecurityProtocol": 0}
                    ],
                }
                for b in live
            ],
        }
    )


def test_update_metadata_becomes_an_image_with_offline_replicas() -> None:
    cache = ZkMetadataCache()
    image = cache.update(request(offline=[3]))
    reg = image.partition("t", 0)
    assert reg is not None
    assert (reg.leader, reg.leader_epoch, reg.partition_epoch, tuple(reg.isr)) == (1, 4, 7, (1, 2))
    assert offline_replicas(image.cluster, reg) == [3]
    assert sorted(image.cluster.brokers) == [1, 2, 3]
    assert image.cluster.brokers[2].endpoint("PLAINTEXT").port == 9092

    image = cache.update(request(leader=2, live=(1, 2)))
    reg = image.partition("t", 0)
    assert reg is not None and reg.leader == 2
    assert sorted(image.cluster.brokers) == [1, 2]
    assert offline_replicas(image.cluster, reg) == [3]  # broker 3 is gone
    assert cache.controller_epoch == 3


def test_leader_during_delete_takes_the_topic_out() -> None:
    cache = ZkMetadataCache()
    cache.update(request())
    image = cache.update(request(leader=-2))
    assert image.topics.get_topic("t") is None
