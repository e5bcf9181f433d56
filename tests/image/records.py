"""Small builders for metadata records used across the image tests."""

from __future__ import annotations

from collections.abc import Sequence

from protocol import metadata_records as mr
from protocol.uuid import Uuid

TOPIC_A = Uuid.from_string("Wq1HUHrMS8uW6xX2TIPcwA")
TOPIC_B = Uuid.from_string("b3F6HUXmSyKbVEQ8nCdWmQ")
DIR_1A = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")
DIR_1B = Uuid.from_string("uqILiACavwjFzy-6zrtdOw")
DIR_2A = Uuid.from_string("h6pDfZcK7RCGV0SBTRYdAA")
DIR_3A = Uuid.from_string("Dr2g1aSYT8yJmS7L2uUTVQ")
INCARNATION = Uuid.from_string("7vYWwvXzQeyB6lH7hPtQdg")


def register_broker(
    broker_id: int, epoch: int, dirs: Sequence[Uuid] = (), *, fenced: bool = True, rack: str | None = None
) -> mr.RegisterBrokerRecord:
    return mr.RegisterBrokerRecord(
        BrokerId=broker_id,
        IncarnationId=INCARNATION,
        BrokerEpoch=epoch,
        EndPoints=[
            mr.RegisterBrokerRecord.BrokerEndpoint(
                Name="PLAINTEXT", Host="127.0.0.1", Port=9092 + broker_id, SecurityProtocol=0
            )
        ],
        Features=[
            mr.RegisterBrokerRecord.BrokerFeature(
                Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=21
            )
        ],
        Rack=rack,
        Fenced=fenced,
        LogDirs=list(dirs),
    )


def change(broker_id: int, epoch: int, *, fenced: int = 0, shutdown: int = 0, dirs: Sequence[Uuid] = ()):
    return mr.BrokerRegistrationChangeRecord(
        BrokerId=broker_id,
        BrokerEpoch=epoch,
        Fenced=fenced,
        InControlledShutdown=shutdown,
        LogDirs=list(dirs),
    )


def topic(name: str, topic_id: Uuid) -> mr.TopicRecord:
    return mr.TopicRecord(Name=name, TopicId=topic_id)


def partition(
    topic_id: Uuid,
    pid: int,
    replicas: Sequence[int],
    dirs: Sequence[Uuid] | None = None,
    *,
    leader: int | None = None,
    isr: Sequence[int] | None = None,
) -> mr.PartitionRecord:
    kwargs = {} if dirs is None else {"Directories": list(dirs)}
    return mr.PartitionRecord(
        PartitionId=pid,
        TopicId=topic_id,
        Replicas=list(replicas),
        Isr=list(replicas if isr is None else isr),
        Leader=replicas[0] if leader is None else leader,
        LeaderEpoch=0,
        PartitionEpoch=0,
        **kwargs,
    )


def feature(name: str, level: int) -> mr.FeatureLevelRecord:
    return mr.FeatureLevelRecord(Name=name, FeatureLevel=level)
