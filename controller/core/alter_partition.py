"""AlterPartition: ISR changes proposed by partition leaders (reference 7.9).

Beyond Kafka's checks, a broker may only join an ISR while its replica's directory is online
(KIP-858: such a replica is never counted as online); members already in the ISR are not rechecked.
"""

from __future__ import annotations

from controller.core.context import ControllerManagers
from controller.core.replication_control import OperationView
from controller.core.result import ControllerResult
from kraftpy.metadata import NO_LEADER_CHANGE, LeaderRecoveryState, PartitionRegistration
from protocol.errors import Errors
from protocol.framing import ApiMessageAndVersion
from protocol.rpc.alter_partition import AlterPartitionRequest, AlterPartitionResponse

Resp = AlterPartitionResponse


def _ineligible(
    m: ControllerManagers, partition: PartitionRegistration, new_isr: list[tuple[int, int]]
) -> int | None:
    for broker_id, broker_epoch in new_isr:
        r = m.cluster.registration(broker_id)
        if r is None or r.fenced or r.in_controlled_shutdown:
            return broker_id
        if broker_epoch != -1 and broker_epoch != r.epoch:
            return broker_id
        if (
            broker_id not in partition.isr
            and broker_id in partition.replicas
            and not r.directory_online(partition.directory(broker_id))
        ):
            return broker_id
    return None


def _check(
    m: ControllerManagers,
    req: AlterPartitionRequest,
    version: int,
    p: AlterPartitionRequest.PartitionData,
    partition: PartitionRegistration,
    new_isr: list[tuple[int, int]],
) -> Errors:
    if p.LeaderEpoch > partition.leader_epoch or p.PartitionEpoch > partition.partition_epoch:
        # The leader knows a newer state than we do: we cannot be the active controller.
        return Errors.NOT_CONTROLLER
    if p.LeaderEpoch < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if req.BrokerId != partition.leader:
        return Errors.INVALID_REQUEST
    if p.PartitionEpoch < partition.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    members = [b for b, _ in new_isr]
    if any(b not in partition.replicas for b in members) or partition.leader not in members:
        return Errors.INVALID_REQUEST
    if p.LeaderRecoveryState == LeaderRecoveryState.RECOVERING and len(members) > 1:
        return Errors.INVALID_REQUEST
    if (
        partition.leader_recovery_state == LeaderRecoveryState.RECOVERED
        and p.LeaderRecoveryState == LeaderRecoveryState.RECOVERING
    ):
        return Errors.INVALID_REQUEST
    if _ineligible(m, partition, new_isr) is not None:
        return Errors.INELIGIBLE_REPLICA if version > 1 else Errors.OPERATION_NOT_ATTEMPTED
    return Errors.NONE


def alter_partition(
    m: ControllerManagers, req: AlterPartitionRequest, version: int
) -> ControllerResult[AlterPartitionResponse]:
    m.cluster.check_broker_epoch(req.BrokerId, req.BrokerEpoch)
    replication = m.replication
    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    accept = replication.acceptor(view)
    out_topics: list[Resp.TopicData] = []
    for topic_data in req.Topics:
        if version > 1:
            topic = replication.topics.get(topic_data.TopicId)
        else:
            found = replication.topics_by_name.get(topic_data.TopicName)
            topic = replication.topics.get(found) if found is not None else None
        out = Resp.TopicData(TopicName=topic_data.TopicName, TopicId=topic_data.TopicId)
        out_topics.append(out)
        if topic is None:
            code = Errors.UNKNOWN_TOPIC_ID if version > 1 else Errors.UNKNOWN_TOPIC_OR_PARTITION
            out.Partitions = [
                Resp.PartitionData(PartitionIndex=p.PartitionIndex, ErrorCode=int(code))
                for p in topic_data.Partitions
            ]
            continue
        for p in topic_data.Partitions:
            tp = (topic.id, p.PartitionIndex)
            partition = replication.partition(tp, view)
            if partition is None:
                out.Partitions.append(
                    Resp.PartitionData(
                        PartitionIndex=p.PartitionIndex, ErrorCode=int(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                    )
                )
                continue
            if version >= 3:
                new_isr = [(s.BrokerId, s.BrokerEpoch) for s in p.NewIsrWithEpochs]
            else:
                new_isr = [(b, -1) for b in p.NewIsr]
            error = _check(m, req, version, p, partition, new_isr)
            if error is not Errors.NONE:
                out.Partitions.append(
                    Resp.PartitionData(PartitionIndex=p.PartitionIndex, ErrorCode=int(error))
                )
                continue
            builder = replication.builder(tp, partition, accept, view).set_target_isr([b for b, _ in new_isr])
            if version >= 1:
                builder.set_target_leader_recovery_state(p.LeaderRecoveryState)
            record = builder.build()
            if record is not None:
                replication.apply(tp, partition, record, records, view)
                partition = view.partition(tp) or partition
                leader = record.message.Leader
                if leader != NO_LEADER_CHANGE and leader != req.BrokerId:
                    code = Errors.NEW_LEADER_ELECTED if version > 1 else Errors.FENCED_LEADER_EPOCH
                    out.Partitions.append(
                        Resp.PartitionData(PartitionIndex=p.PartitionIndex, ErrorCode=int(code))
                    )
                    continue
            out.Partitions.append(
                Resp.PartitionData(
                    PartitionIndex=p.PartitionIndex,
                    ErrorCode=0,
                    LeaderId=partition.leader,
                    LeaderEpoch=partition.leader_epoch,
                    Isr=list(partition.isr),
                    LeaderRecoveryState=partition.leader_recovery_state,
                    PartitionEpoch=partition.partition_epoch,
                )
            )
    return ControllerResult.of(records, Resp(ErrorCode=0, Topics=out_topics))
