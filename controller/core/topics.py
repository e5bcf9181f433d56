"""CreateTopics and DeleteTopics (reference 7.12).

A new partition's replicas come from the striped placer (or the manual assignment), each with its
broker's default directory; its ISR is the replicas whose brokers are active; its leader is the
first ISR member that may lead, which under KIP-858 excludes a replica still UNASSIGNED on a
multi-dir broker. Records: TopicRecord, then ConfigRecords, then PartitionRecords, all in one batch.
"""

from __future__ import annotations

import re
from collections import Counter

from controller.core.configuration_control import validate_topic_config
from controller.core.context import ControllerManagers
from controller.core.metadata_version import partition_record_version
from controller.core.placement import StripedReplicaPlacer, default_dir
from controller.core.replication_control import OperationView
from controller.core.result import ControllerResult
from kraftpy.metadata import NO_LEADER, ConfigResourceType, LeaderRecoveryState
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.rpc.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from protocol.uuid import Uuid

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    if not name:
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, topic name: {name}",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise KafkaError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'",
        )


def new_topic_id(m: ControllerManagers) -> Uuid:
    while True:
        raw = bytearray(m.random.randbytes(16))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        topic_id = Uuid(bytes(raw))
        if (
            not topic_id.is_reserved()
            and not str(topic_id).startswith("-")
            and topic_id not in m.replication.topics
        ):
            return topic_id


def _manual_assignment(m: ControllerManagers, topic: CreateTopicsRequest.CreatableTopic) -> list[list[int]]:
    if topic.NumPartitions != -1 or topic.ReplicationFactor != -1:
        raise KafkaError(
            Errors.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions or replicationFactor was not set to -1.",
        )
    by_index = {}
    for a in topic.Assignments:
        if a.PartitionIndex in by_index:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT, f"Partition {a.PartitionIndex} is assigned twice."
            )
        by_index[a.PartitionIndex] = list(a.BrokerIds)
    if sorted(by_index) != list(range(len(by_index))):
        raise KafkaError(
            Errors.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
        )
    assignment = [by_index[i] for i in range(len(by_index))]
    width = len(assignment[0])
    for replicas in assignment:
        if not replicas:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        seen: set[int] = set()
        for b in replicas:
            if b in seen:
                raise KafkaError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {b} more than once.",
                )
            seen.add(b)
            if m.cluster.registration(b) is None:
                raise KafkaError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {b}, but no such broker is registered.",
                )
        if len(replicas) != width:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this "
                f"is not consistent with previous partitions, which have {width} replica(s).",
            )
    return assignment


def _create_topic(
    m: ControllerManagers,
    topic: CreateTopicsRequest.CreatableTopic,
    records: list[ApiMessageAndVersion],
    view: OperationView,
) -> CreateTopicsResponse.CreatableTopicResult:
    validate_topic_name(topic.Name)
    if topic.Name in m.replication.topics_by_name:
        raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic.Name}' already exists.")
    configs: dict[str, str] = {}
    for c in topic.Configs:
        validate_topic_config(c.Name, c.Value)
        assert c.Value is not None
        configs[c.Name] = c.Value
    manual = bool(topic.Assignments)
    if manual:
        assignment = _manual_assignment(m, topic)
    else:
        num_partitions = m.config.default_num_partitions if topic.NumPartitions == -1 else topic.NumPartitions
        replication_factor = (
            m.config.default_replication_factor if topic.ReplicationFactor == -1 else topic.ReplicationFactor
        )
        if num_partitions <= 0:
            raise KafkaError(
                Errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        if replication_factor <= 0:
            raise KafkaError(
                Errors.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        placer = StripedReplicaPlacer(m.random)
        assignment = placer.place(num_partitions, replication_factor, m.cluster.usable_brokers())

    mv = m.features.metadata_version
    accept = m.replication.acceptor(view)
    partition_records = []
    topic_id = new_topic_id(m)
    for index, replicas in enumerate(assignment):
        directories = [default_dir(m.cluster.registration(b), mv) for b in replicas]
        isr = [b for b in replicas if m.cluster.is_active(b)]
        if not isr:
            if manual:
                raise KafkaError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"All brokers specified in the manual partition assignment for partition {index} are fenced or in controlled shutdown.",
                )
            raise KafkaError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {len(replicas)} time(s): All brokers are currently fenced or in controlled shutdown.",
            )
        by_broker = dict(zip(replicas, directories, strict=True))
        leader = next((b for b in isr if accept(b, by_broker[b])), NO_LEADER)
        fields: dict[str, object] = {
            "PartitionId": index,
            "TopicId": topic_id,
            "Replicas": list(replicas),
            "Isr": isr,
            "RemovingReplicas": [],
            "AddingReplicas": [],
            "Leader": leader,
            "LeaderRecoveryState": LeaderRecoveryState.RECOVERED.value,
            "LeaderEpoch": 0,
            "PartitionEpoch": 0,
        }
        version = partition_record_version(mv)
        if version >= 1:
            fields["Directories"] = directories
        partition_records.append(ApiMessageAndVersion(PartitionRecord(**fields), version))

    records.append(ApiMessageAndVersion(TopicRecord(Name=topic.Name, TopicId=topic_id), 0))
    for name, value in configs.items():
        record = ConfigRecord(
            ResourceType=int(ConfigResourceType.TOPIC), ResourceName=topic.Name, Name=name, Value=value
        )
        records.append(ApiMessageAndVersion(record, 0))
    records.extend(partition_records)
    return CreateTopicsResponse.CreatableTopicResult(
        Name=topic.Name,
        TopicId=topic_id,
        ErrorCode=0,
        NumPartitions=len(assignment),
        ReplicationFactor=len(assignment[0]),
    )


def _requested_partitions(m: ControllerManagers, topic: CreateTopicsRequest.CreatableTopic) -> int:
    if topic.Assignments:
        return len(topic.Assignments)
    return m.config.default_num_partitions if topic.NumPartitions == -1 else topic.NumPartitions


def create_topics(
    m: ControllerManagers, req: CreateTopicsRequest, version: int
) -> ControllerResult[CreateTopicsResponse]:
    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    results = []
    duplicated = {n for n, k in Counter(t.Name for t in req.Topics).items() if k > 1}
    cfg = m.config
    in_request = 0
    in_cluster = m.replication.partition_count()
    for topic in req.Topics:
        if topic.Name in duplicated:
            results.append(
                CreateTopicsResponse.CreatableTopicResult(
                    Name=topic.Name,
                    ErrorCode=int(Errors.INVALID_REQUEST),
                    ErrorMessage="Found multiple entries for this topic.",
                )
            )
            continue
        try:
            # The caps come before any placement or record, so a huge count costs nothing.
            wanted = _requested_partitions(m, topic)
            if wanted > cfg.max_partitions_per_request:
                raise KafkaError(
                    Errors.INVALID_PARTITIONS,
                    f"NumPartitions {wanted} exceeds kraftpy.max.partitions.per.request="
                    f"{cfg.max_partitions_per_request}.",
                )
            if in_request + wanted > cfg.max_partitions_per_request:
                raise KafkaError(
                    Errors.POLICY_VIOLATION,
                    f"This request would create {in_request + wanted} partitions, more than "
                    f"kraftpy.max.partitions.per.request={cfg.max_partitions_per_request}.",
                )
            if in_cluster + in_request + wanted > cfg.max_partitions:
                raise KafkaError(
                    Errors.POLICY_VIOLATION,
                    f"The cluster would have {in_cluster + in_request + wanted} partitions, more than "
                    f"kraftpy.max.partitions={cfg.max_partitions}.",
                )
            result = _create_topic(m, topic, records, view)
            results.append(result)
            in_request += result.NumPartitions
        except KafkaError as e:
            results.append(
                CreateTopicsResponse.CreatableTopicResult(
                    Name=topic.Name, ErrorCode=int(e.code), ErrorMessage=e.message
                )
            )
    result = ControllerResult.atomic_of(records, CreateTopicsResponse(Topics=results))
    return result.without_records() if req.ValidateOnly else result


def delete_topics(
    m: ControllerManagers, req: DeleteTopicsRequest, version: int
) -> ControllerResult[DeleteTopicsResponse]:
    R = DeleteTopicsResponse.DeletableTopicResult
    wanted: list[tuple[str | None, Uuid | None]]
    if version >= 6:
        wanted = [(t.Name, None if t.TopicId == Uuid.ZERO else t.TopicId) for t in req.Topics]
    else:
        wanted = [(name, None) for name in req.TopicNames]
    records: list[ApiMessageAndVersion] = []
    results: list[DeleteTopicsResponse.DeletableTopicResult] = []
    removed: set[Uuid] = set()
    for name, topic_id in wanted:
        if name is not None and topic_id is not None:
            results.append(
                R(
                    Name=name,
                    TopicId=topic_id,
                    ErrorCode=int(Errors.INVALID_REQUEST),
                    ErrorMessage="Either the topic name or the topic id must be set, not both.",
                )
            )
            continue
        if topic_id is not None:
            info = m.replication.topics.get(topic_id)
            if info is None:
                results.append(R(Name=None, TopicId=topic_id, ErrorCode=int(Errors.UNKNOWN_TOPIC_ID)))
                continue
        else:
            found = m.replication.topics_by_name.get(name or "")
            if found is None:
                results.append(R(Name=name, ErrorCode=int(Errors.UNKNOWN_TOPIC_OR_PARTITION)))
                continue
            info = m.replication.topics[found]
        if info.id not in removed:
            removed.add(info.id)
            records.append(ApiMessageAndVersion(RemoveTopicRecord(TopicId=info.id), 0))
        results.append(R(Name=info.name, TopicId=info.id, ErrorCode=0))
    return ControllerResult.atomic_of(records, DeleteTopicsResponse(Responses=results))
