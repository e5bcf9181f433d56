"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455, as Kafka's KRaft controller
does them: ReplicationControlManager, PartitionReassignmentReplicas, PartitionReassignmentRevert).

Starting a reassignment writes one PartitionChangeRecord: Replicas become the target followed by
the current replicas the target drops, RemovingReplicas those dropped ones, AddingReplicas the
target's new ones (each with its broker's default directory). The new replicas then fetch from
the leader like any follower; once the leader's AlterPartition leaves every target replica in the
ISR, the partition-change builder completes the reassignment in that same record (reference 7.9).
A target that adds nothing can complete at once. Cancelling (Replicas null) goes back to the
replicas from before it: the current ones minus those being added, the ISR minus them too.

Per partition, a refusal writes nothing and does not stop the others; all records of one
request go in one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.core.context import ControllerManagers
from controller.core.partition_change import Election, PartitionChangeBuilder
from controller.core.replication_control import OperationView, TopicIdPartition
from controller.core.result import ControllerResult
from controller.core.topics import validate_manual_replicas
from kraftpy.metadata import PartitionRegistration
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.rpc.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from protocol.rpc.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from protocol.uuid import Uuid

Alter = AlterPartitionReassignmentsResponse
Listed = ListPartitionReassignmentsResponse

NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."


def alter_partition_reassignments(
    m: ControllerManagers, req: AlterPartitionReassignmentsRequest, version: int
) -> ControllerResult[AlterPartitionReassignmentsResponse]:
    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    responses = []
    for topic in req.Topics:
        out = Alter.ReassignableTopicResponse(Name=topic.Name)
        for target in topic.Partitions:
            try:
                _alter_one(m, topic.Name, target, records, view)
                out.Partitions.append(
                    Alter.ReassignablePartitionResponse(PartitionIndex=target.PartitionIndex)
                )
            except KafkaError as e:
                out.Partitions.append(
                    Alter.ReassignablePartitionResponse(
                        PartitionIndex=target.PartitionIndex, ErrorCode=int(e.code), ErrorMessage=e.message
                    )
                )
        responses.append(out)
    return ControllerResult.atomic_of(records, Alter(Responses=responses))


def _alter_one(
    m: ControllerManagers,
    topic_name: str,
    target: AlterPartitionReassignmentsRequest.ReassignablePartition,
    records: list[ApiMessageAndVersion],
    view: OperationView,
) -> None:
    replication = m.replication
    topic_id = replication.topics_by_name.get(topic_name)
    if topic_id is None:
        raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic_name}.")
    tp = (topic_id, target.PartitionIndex)
    partition = replication.partition(tp, view)
    if partition is None:
        raise KafkaError(
            Errors.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {topic_name}:{target.PartitionIndex}.",
        )
    if target.Replicas is None:
        builder = _cancel(m, topic_name, tp, partition, view)
    else:
        builder = _change(m, tp, partition, target.Replicas, view)
    record = builder.build()
    if record is not None:
        replication.apply(tp, partition, record, records, view)


def _change(
    m: ControllerManagers,
    tp: TopicIdPartition,
    partition: PartitionRegistration,
    target: Sequence[int],
    view: OperationView,
) -> PartitionChangeBuilder:
    validate_manual_replicas(m, target)
    current = partition.replicas
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    replicas = [*target, *removing]
    replication = m.replication
    # Kafka elects cleanly here whatever the topic allows: only a cancel may need an unclean leader.
    builder = replication.builder(tp, partition, replication.acceptor(view), view).set_election(
        Election.ONLINE
    )
    if tuple(replicas) != current:
        builder.set_target_replicas(replicas)
    # An empty list leaves the partition's own as they are (Kafka's changePartitionReassignment):
    # a new target over a reassignment under way keeps what that one was adding until it completes.
    if removing:
        builder.set_target_removing(removing)
    if adding:
        builder.set_target_adding(adding)
    return builder


def _cancel(
    m: ControllerManagers,
    topic_name: str,
    tp: TopicIdPartition,
    partition: PartitionRegistration,
    view: OperationView,
) -> PartitionChangeBuilder:
    adding = partition.adding_replicas
    if not adding and not partition.removing_replicas:
        raise KafkaError(Errors.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT_MESSAGE)
    original = [b for b in partition.replicas if b not in adding]
    isr = [b for b in partition.isr if b not in adding]
    replication = m.replication
    if not isr:
        # Only replicas being added are in sync: going back means an original replica leads
        # without being in sync, which only a topic allowing unclean elections accepts.
        if not original:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                "Invalid replica assignment: addingReplicas contains all replicas.",
            )
        if not replication.unclean_allowed(tp[0], view):
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {topic_name}:{tp[1]} because it would require an "
                "unclean leader election.",
            )
        isr = [original[0]]
    return (
        replication.builder(tp, partition, replication.acceptor(view), view)
        .set_target_isr(isr)
        .set_target_replicas(original)
        .set_target_removing(())
        .set_target_adding(())
    )


def list_partition_reassignments(
    m: ControllerManagers, req: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    """The reassignments under way: all of them (Topics null), or those among the partitions named;
    unknown topics and partitions, and those not being reassigned, are left out."""
    replication = m.replication
    wanted: dict[Uuid, list[int]] = {}
    if req.Topics is None:
        for topic_id, pid in replication.reassigning_partitions():
            wanted.setdefault(topic_id, []).append(pid)
        asked = list(wanted.items())
    else:
        asked = [
            (topic_id, list(t.PartitionIndexes))
            for t in req.Topics
            if (topic_id := replication.topics_by_name.get(t.Name)) is not None
        ]
    out = Listed()
    for topic_id, pids in asked:
        topic = replication.topics[topic_id]
        ongoing = []
        for pid in pids:
            p = topic.partitions.get(pid)
            if p is None or not (p.adding_replicas or p.removing_replicas):
                continue
            ongoing.append(
                Listed.OngoingPartitionReassignment(
                    PartitionIndex=pid,
                    Replicas=list(p.replicas),
                    AddingReplicas=list(p.adding_replicas),
                    RemovingReplicas=list(p.removing_replicas),
                )
            )
        if ongoing:
            out.Topics.append(Listed.OngoingTopicReassignment(Name=topic.name, Partitions=ongoing))
    return out
