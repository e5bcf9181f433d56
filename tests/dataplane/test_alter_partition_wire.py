"""AlterPartition v3 as the leader sends it and reads the answer."""

from __future__ import annotations

from broker.dataplane.alter_partition import build_request, read_response
from broker.dataplane.partition import IsrChange
from kraftpy.image import TopicIdPartition
from protocol.errors import Errors
from protocol.rpc.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from protocol.uuid import Uuid


def test_request_carries_epochs_and_members_with_their_broker_epochs() -> None:
    tid = Uuid.random()
    change = IsrChange(TopicIdPartition(tid, "t", 3), 4, 7, (1, 3), (10, 30))
    req = build_request(1, 10, [change])
    wire = req.to_wire(3, "msgpack")
    back = AlterPartitionRequest.from_wire(wire, 3)
    (topic,) = back.Topics
    (p,) = topic.Partitions
    assert topic.TopicId == tid
    assert (p.PartitionIndex, p.LeaderEpoch, p.PartitionEpoch) == (3, 4, 7)
    assert [(s.BrokerId, s.BrokerEpoch) for s in p.NewIsrWithEpochs] == [(1, 10), (3, 30)]


def test_response_per_partition() -> None:
    tid = Uuid.random()
    R = AlterPartitionResponse
    resp = R(
        Topics=[
            R.TopicData(
                TopicId=tid,
                Partitions=[
                    R.PartitionData(
                        PartitionIndex=0, LeaderId=1, LeaderEpoch=2, Isr=[1, 2], PartitionEpoch=5
                    ),
                    R.PartitionData(PartitionIndex=1, ErrorCode=int(Errors.INELIGIBLE_REPLICA)),
                ],
            )
        ]
    )
    answers = read_response(resp)
    assert answers[(tid, 0)] == (Errors.NONE, (1, 2, 5, [1, 2]))
    assert answers[(tid, 1)] == (Errors.INELIGIBLE_REPLICA, None)
