"""CreateTopics, CreatePartitions and DeleteTopics (reference 7.12).

A new partition's replicas come from the striped placer (or the manual assignment), each with its
broker's default directory; its ISR is the replicas whose brokers are active; its leader is the
first ISR member that may lead, which under KIP-858 excludes a replica still UNASSIGNED on a
multi-dir broker. Records: TopicRecord, then ConfigRecords, then PartitionRecords, all in one batch.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

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
from protocol.rpc.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
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


def validate_manual_replicas(m: ControllerManagers, replicas: Sequence[int]) -> None:
    """One partition's replica list given by hand (a manual assignment or a reassignment target):
    not empty, each broker registered and named once (validateManualPartitionAssignment)."""
    if not replicas:
        raise KafkaError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    previous: int | None = None
    for b in sorted(replicas):
        if m.cluster.registration(b) is None:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {b}, but no such broker is registered.",
            )
        if b == previous:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {b} more than once.",
            )
        previous = b


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
        validate_manual_replicas(m, replicas)
        if len(replicas) != width:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this "
                f"is not consistent with previous partitions, which have {width} replica(s).",
            )
    return assignment


def _partition_records(
    m: ControllerManagers,
    view: OperationView,
    topic_id: Uuid,
    first_index: int,
    assignment: list[list[int]],
    manual: bool,
) -> list[ApiMessageAndVersion]:
    """PartitionRecords for new partitions `first_index`, ... placed by `assignment`."""
    mv = m.features.metadata_version
    accept = m.replication.acceptor(view)
    out = []
    for index, replicas in enumerate(assignment, start=first_index):
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
        out.append(ApiMessageAndVersion(PartitionRecord(**fields), version))
    return out


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

    topic_id = new_topic_id(m)
    partition_records = _partition_records(m, view, topic_id, 0, assignment, manual)

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


def create_partitions(
    m: ControllerManagers, req: CreatePartitionsRequest, version: int
) -> ControllerResult[CreatePartitionsResponse]:
    """Grow topics: new partitions placed like a new topic's (or as assigned), with the topic's
    replication factor; one PartitionRecord each, all in one batch."""
    R = CreatePartitionsResponse.CreatePartitionsTopicResult
    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    results = []
    duplicated = {n for n, k in Counter(t.Name for t in req.Topics).items() if k > 1}
    in_cluster = m.replication.partition_count()
    added = 0
    for topic in req.Topics:
        if topic.Name in duplicated:
            results.append(
                R(
                    Name=topic.Name,
                    ErrorCode=int(Errors.INVALID_REQUEST),
                    ErrorMessage="Duplicate topic name.",
                )
            )
            continue
        try:
            new = _grow_topic(m, topic, view, in_cluster + added)
            records.extend(new)
            added += len(new)
            results.append(R(Name=topic.Name))
        except KafkaError as e:
            results.append(R(Name=topic.Name, ErrorCode=int(e.code), ErrorMessage=e.message))
    result = ControllerResult.atomic_of(records, CreatePartitionsResponse(Results=results))
    return result.without_records() if req.ValidateOnly else result


def _grow_topic(
    m: ControllerManagers,
    topic: CreatePartitionsRequest.CreatePartitionsTopic,
    view: OperationView,
    partitions: int,
) -> list[ApiMessageAndVersion]:
    topic_id = m.replication.topics_by_name.get(topic.Name)
    if topic_id is None:
        raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic.Name}' does not exist.")
    existing = m.replication.topics[topic_id].partitions
    current = len(existing)
    if topic.Count < current:
        raise KafkaError(
            Errors.INVALID_PARTITIONS,
            f"The topic {topic.Name} currently has {current} partition(s); {topic.Count} would not be an increase.",
        )
    if topic.Count == current:
        raise KafkaError(Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    more = topic.Count - current
    cfg = m.config
    if more > cfg.max_partitions_per_request or partitions + more > cfg.max_partitions:
        raise KafkaError(
            Errors.POLICY_VIOLATION,
            f"Adding {more} partition(s) would exceed kraftpy.max.partitions.per.request="
            f"{cfg.max_partitions_per_request} or kraftpy.max.partitions={cfg.max_partitions}.",
        )
    width = len(existing[min(existing)].replicas)
    if topic.Assignments is not None:
        if len(topic.Assignments) != more:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {more} additional partition(s), but only {len(topic.Assignments)} "
                "assignment(s) were specified.",
            )
        as_creatable = CreateTopicsRequest.CreatableTopic(
            Name=topic.Name,
            Assignments=[
                CreateTopicsRequest.CreatableReplicaAssignment(PartitionIndex=i, BrokerIds=list(a.BrokerIds))
                for i, a in enumerate(topic.Assignments)
            ],
        )
        assignment = _manual_assignment(m, as_creatable)
        if len(assignment[0]) != width:
            raise KafkaError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(assignment[0])} replica(s), but "
                f"this is not consistent with previous partitions, which have {width} replica(s).",
            )
        return _partition_records(m, view, topic_id, current, assignment, True)
    assignment = StripedReplicaPlacer(m.random).place(more, width, m.cluster.usable_brokers())
    return _partition_records(m, view, topic_id, current, assignment, False)
