"""AssignReplicasToDirs (reference 7.4; KIP-858 "Handling replica assignments").

Every assignment is recorded as a PartitionChangeRecord carrying the new Directories. An
assignment into a directory that is not online on the broker (failed, LOST, or never registered)
makes that replica offline: the broker leaves the ISR and any leadership in the same record. An
assignment into an online dir lets a leaderless partition elect again, so a replica that just got
its place may lead right away.

When the replica placed for the first time (it was UNASSIGNED) is the partition's preferred one,
the same record runs a preferred election: under our stricter online rule a new partition on
multi-dir brokers has no leader until the first assignment arrives, and that broker would otherwise
keep every such leadership until the imbalance timer. Kafka counts UNASSIGNED online and so elects
the preferred replica at creation; this gives the same leaders (docs/kip-deviations.md).
"""

from __future__ import annotations

from controller.core.context import ControllerManagers
from controller.core.metadata_version import is_directory_assignment_supported
from controller.core.partition_change import Election, LeaderAcceptor
from controller.core.replication_control import OperationView
from controller.core.result import ControllerResult
from kraftpy.metadata import PartitionRegistration
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.rpc.assign_replicas_to_dirs import AssignReplicasToDirsRequest, AssignReplicasToDirsResponse
from protocol.uuid import UNASSIGNED, Uuid

Resp = AssignReplicasToDirsResponse


def assign_replicas_to_dirs(
    m: ControllerManagers, req: AssignReplicasToDirsRequest, version: int
) -> ControllerResult[AssignReplicasToDirsResponse]:
    if not is_directory_assignment_supported(m.features.metadata_version):
        raise KafkaError(Errors.UNSUPPORTED_VERSION, "Directory assignment is not supported yet.")
    broker_id = req.BrokerId
    registration = m.cluster.registration(broker_id)
    if registration is None:
        raise KafkaError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered")
    m.cluster.check_broker_epoch(broker_id, req.BrokerEpoch)

    replication = m.replication
    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    accept_online = replication.acceptor(view)
    accept_without_broker = replication.acceptor(view, broker_to_remove=broker_id)
    out_dirs: list[Resp.DirectoryData] = []
    for dir_data in req.Directories:
        directory = dir_data.Id
        online = registration.directory_online(directory)
        out_topics: list[Resp.TopicData] = []
        for topic_data in dir_data.Topics:
            topic = replication.topics.get(topic_data.TopicId)
            out_partitions: list[Resp.PartitionData] = []
            for p in topic_data.Partitions:
                error = Errors.NONE
                tp = (topic_data.TopicId, p.PartitionIndex)
                partition = replication.partition(tp, view) if topic is not None else None
                if topic is None:
                    error = Errors.UNKNOWN_TOPIC_ID
                elif partition is None:
                    error = Errors.UNKNOWN_TOPIC_OR_PARTITION
                elif broker_id not in partition.replicas:
                    # Field bug 7: the broker learns it was reassigned away and drops the assignment.
                    error = Errors.NOT_LEADER_OR_FOLLOWER
                else:
                    accept = accept_online if online else accept_without_broker
                    builder = replication.builder(tp, partition, accept, view).set_directory(
                        broker_id, directory
                    )
                    if not online and broker_id in partition.isr:
                        builder.set_target_isr([b for b in partition.isr if b != broker_id])
                    elif _first_placement_of_preferred(partition, broker_id, directory, accept):
                        builder.set_election(Election.PREFERRED)
                    record = builder.build()
                    if record is not None:
                        replication.apply(tp, partition, record, records, view)
                out_partitions.append(
                    Resp.PartitionData(PartitionIndex=p.PartitionIndex, ErrorCode=int(error))
                )
            out_topics.append(Resp.TopicData(TopicId=topic_data.TopicId, Partitions=out_partitions))
        out_dirs.append(Resp.DirectoryData(Id=directory, Topics=out_topics))
    return ControllerResult.of(records, Resp(ErrorCode=0, Directories=out_dirs))


def _first_placement_of_preferred(
    partition: PartitionRegistration, broker_id: int, directory: Uuid, accept: LeaderAcceptor
) -> bool:
    """Whether this assignment is what first lets the preferred replica lead.

    Only a first placement: a replica moving between dirs or placed again after a failure leaves
    leadership where it is, as Kafka does, for auto.leader.rebalance to restore. The ISR and
    acceptor checks keep an unclean election (which PREFERRED does not fall back to) for partitions
    whose preferred replica cannot lead anyway.
    """
    replicas = partition.replicas
    return (
        bool(replicas)
        and replicas[0] == broker_id
        and partition.leader != broker_id
        and bool(partition.directories)
        and partition.directories[0] == UNASSIGNED
        and broker_id in partition.isr
        and accept(broker_id, directory)
    )
