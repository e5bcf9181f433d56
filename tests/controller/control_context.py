"""ControlTestContext: a controller core with a fake clock and an in-memory log.

Operations go through the real QuorumControllerCore; successful results are appended to `log` and
replayed at their offsets, exactly as the process shell does, so tests assert the exact records an
operation produced and then the state they leave.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from controller.core import ControllerConfig, ControllerResult, QuorumControllerCore
from controller.core.metadata_version import LATEST_PRODUCTION
from controller.core.partition_change import Election
from kraftpy.metadata import BrokerRegistration, PartitionRegistration
from protocol.framing import ApiMessageAndVersion, decode_record, encode_record
from protocol.rpc.alter_partition import AlterPartitionRequest
from protocol.rpc.assign_replicas_to_dirs import AssignReplicasToDirsRequest
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest
from protocol.rpc.broker_registration import BrokerRegistrationRequest
from protocol.rpc.create_topics import CreateTopicsRequest
from protocol.rpc.delete_topics import DeleteTopicsRequest
from protocol.uuid import LOST, MIGRATING, UNASSIGNED, Uuid

CLUSTER_ID = "kraftpy-test-cluster-0"
SESSION_TIMEOUT_MS = 9000

RESERVED_DIR_NAMES = {"UNASSIGNED": UNASSIGNED, "MIGRATING": MIGRATING, "LOST": LOST}


def dir_id(name: str) -> Uuid:
    """A stable, unreserved directory id for a short test name ("a", "b", "b1x"...)."""
    if name in RESERVED_DIR_NAMES:
        return RESERVED_DIR_NAMES[name]
    raw = name.encode().ljust(8, b"_")[:8]
    return Uuid(b"\x11dir" + b"\x00" * 4 + raw)


class ControlTestContext:
    def __init__(
        self,
        metadata_version: int = LATEST_PRODUCTION,
        *,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
        unclean_leader_election_enable: bool = False,
        seed: int = 7,
        bootstrap: bool = True,
        zk_migration_enabled: bool = False,
    ) -> None:
        self.config = ControllerConfig(
            node_id=3000,
            cluster_id=CLUSTER_ID,
            broker_session_timeout_ms=session_timeout_ms,
            unclean_leader_election_enable=unclean_leader_election_enable,
            random_seed=seed,
            zk_migration_enabled=zk_migration_enabled,
        )
        self.core = QuorumControllerCore(self.config)
        self.now_ms = 1_000_000
        self.log: list[ApiMessageAndVersion] = []
        self.incarnations: dict[int, Uuid] = {}
        self.dir_names: dict[Uuid, str] = {v: k for k, v in RESERVED_DIR_NAMES.items()}
        self.topic_names: dict[Uuid, str] = {}
        if bootstrap:
            self.apply(self.core.bootstrap_records([], metadata_version))

    # ---- the log and the clock ---------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        return len(self.log)

    def replay(self, records: Iterable[ApiMessageAndVersion]) -> None:
        for record in records:
            # Every record an operation writes must survive Kafka's wire form at its version.
            assert decode_record(encode_record(record)) == record, record
            self.core.replay(record, len(self.log))
            self.log.append(record)
            if type(record.message).__name__ == "TopicRecord":
                self.topic_names[record.message.TopicId] = record.message.Name

    def apply(self, result: ControllerResult[Any]) -> ControllerResult[Any]:
        self.replay(result.records)
        return result

    def advance(self, ms: int) -> None:
        self.now_ms += ms

    def replayed_from_empty(self) -> QuorumControllerCore:
        other = QuorumControllerCore(self.config)
        other.replay_all(self.log, 0)
        return other

    # ---- names -------------------------------------------------------------------------------

    def dir(self, name: str) -> Uuid:
        d = dir_id(name)
        self.dir_names[d] = name
        return d

    def topic_id(self, name: str) -> Uuid:
        return self.core.m.replication.topics_by_name[name]

    # ---- operations --------------------------------------------------------------------------

    def register(
        self,
        broker_id: int,
        dirs: Sequence[str] = ("a",),
        *,
        incarnation: Uuid | None = None,
        new_incarnation: bool = False,
        version: int = 4,
        rack: str | None = None,
        mv_range: tuple[int, int] = (1, 22),
        cluster_id: str = CLUSTER_ID,
        features: dict[str, tuple[int, int]] | None = None,
        migrating_zk_broker: bool = False,
    ) -> ControllerResult[Any]:
        if incarnation is None:
            if new_incarnation or broker_id not in self.incarnations:
                incarnation = Uuid.from_longs(0x1000 + broker_id, self.next_offset + 1)
            else:
                incarnation = self.incarnations[broker_id]
        feats = [
            BrokerRegistrationRequest.Feature(
                Name="metadata.version", MinSupportedVersion=mv_range[0], MaxSupportedVersion=mv_range[1]
            )
        ]
        for name, (lo, hi) in (features or {}).items():
            feats.append(
                BrokerRegistrationRequest.Feature(Name=name, MinSupportedVersion=lo, MaxSupportedVersion=hi)
            )
        req = BrokerRegistrationRequest(
            BrokerId=broker_id,
            ClusterId=cluster_id,
            IncarnationId=incarnation,
            Listeners=[
                BrokerRegistrationRequest.Listener(
                    Name="PLAINTEXT", Host="127.0.0.1", Port=9092 + broker_id, SecurityProtocol=0
                )
            ],
            Features=feats,
            Rack=rack,
            IsMigratingZkBroker=migrating_zk_broker,
            LogDirs=[self.dir(d) for d in dirs],
        )
        result = self.core.register_broker(req, version, self.now_ms, self.next_offset)
        if result.response.ErrorCode == 0:
            self.incarnations[broker_id] = incarnation
        return self.apply(result)

    def heartbeat(
        self,
        broker_id: int,
        *,
        want_fence: bool = False,
        want_shut_down: bool = False,
        offline: Sequence[str] = (),
        offset: int | None = None,
        epoch: int | None = None,
        version: int = 1,
    ) -> ControllerResult[Any]:
        reg = self.core.m.cluster.registration(broker_id)
        req = BrokerHeartbeatRequest(
            BrokerId=broker_id,
            BrokerEpoch=epoch if epoch is not None else (reg.epoch if reg else -1),
            CurrentMetadataOffset=offset if offset is not None else self.next_offset - 1,
            WantFence=want_fence,
            WantShutDown=want_shut_down,
            OfflineLogDirs=[self.dir(d) for d in offline],
        )
        return self.apply(self.core.process_broker_heartbeat(req, version, self.now_ms, self.next_offset))

    def unfence(self, broker_id: int) -> ControllerResult[Any]:
        result = self.heartbeat(broker_id)
        assert result.response.IsFenced is False, result.response
        return result

    def fence_stale(self) -> ControllerResult[Any]:
        return self.apply(self.core.maybe_fence_one_stale_broker(self.now_ms))

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        rf: int = 1,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        configs: dict[str, str] | None = None,
        version: int = 7,
    ) -> ControllerResult[Any]:
        T = CreateTopicsRequest
        topic = T.CreatableTopic(
            Name=name,
            NumPartitions=-1 if assignment else partitions,
            ReplicationFactor=-1 if assignment else rf,
            Assignments=[
                T.CreatableReplicaAssignment(PartitionIndex=i, BrokerIds=list(bs))
                for i, bs in enumerate(assignment or ())
            ],
            Configs=[T.CreatableTopicConfig(Name=k, Value=v) for k, v in (configs or {}).items()],
        )
        return self.apply(self.core.create_topics(T(Topics=[topic]), version))

    def delete_topic(self, name: str) -> ControllerResult[Any]:
        return self.apply(self.core.delete_topics(DeleteTopicsRequest(TopicNames=[name]), 5))

    def assign(
        self,
        broker_id: int,
        dir_name: str,
        partitions: Sequence[tuple[str | Uuid, int]],
        *,
        epoch: int | None = None,
    ) -> ControllerResult[Any]:
        A = AssignReplicasToDirsRequest
        by_topic: dict[Uuid, list[int]] = {}
        for topic, pid in partitions:
            tid = topic if isinstance(topic, Uuid) else self.topic_id(topic)
            by_topic.setdefault(tid, []).append(pid)
        reg = self.core.m.cluster.registration(broker_id)
        req = A(
            BrokerId=broker_id,
            BrokerEpoch=epoch if epoch is not None else (reg.epoch if reg else -1),
            Directories=[
                A.DirectoryData(
                    Id=self.dir(dir_name),
                    Topics=[
                        A.TopicData(TopicId=tid, Partitions=[A.PartitionData(PartitionIndex=p) for p in pids])
                        for tid, pids in by_topic.items()
                    ],
                )
            ],
        )
        return self.apply(self.core.assign_replicas_to_dirs(req, 0))

    def alter_partition(
        self,
        topic: str,
        pid: int,
        new_isr: Sequence[int],
        *,
        broker_id: int | None = None,
        version: int = 3,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
        leader_recovery_state: int = 0,
    ) -> ControllerResult[Any]:
        A = AlterPartitionRequest
        p = self.partition(topic, pid)
        sender = p.leader if broker_id is None else broker_id
        reg = self.core.m.cluster.registration(sender)
        part = A.PartitionData(
            PartitionIndex=pid,
            LeaderEpoch=p.leader_epoch if leader_epoch is None else leader_epoch,
            LeaderRecoveryState=leader_recovery_state,
            PartitionEpoch=p.partition_epoch if partition_epoch is None else partition_epoch,
        )
        if version >= 3:
            part.NewIsrWithEpochs = [A.BrokerState(BrokerId=b, BrokerEpoch=-1) for b in new_isr]
        else:
            part.NewIsr = list(new_isr)
        td = A.TopicData(Partitions=[part])
        if version >= 2:
            td.TopicId = self.topic_id(topic)
        else:
            td.TopicName = topic
        req = A(BrokerId=sender, BrokerEpoch=reg.epoch if reg else -1, Topics=[td])
        return self.apply(self.core.alter_partition(req, version))

    def elect_preferred(self) -> ControllerResult[Any]:
        return self.apply(self.core.elect_leaders(Election.PREFERRED))

    # ---- state -------------------------------------------------------------------------------

    def partition(self, topic: str, pid: int) -> PartitionRegistration:
        p = self.core.m.replication.partition((self.topic_id(topic), pid))
        assert p is not None
        return p

    def registration(self, broker_id: int) -> BrokerRegistration:
        r = self.core.m.cluster.registration(broker_id)
        assert r is not None
        return r

    def messages(self, result: ControllerResult[Any]) -> list[Any]:
        return [r.message for r in result.records]
