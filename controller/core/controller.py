"""QuorumControllerCore: the controller as a deterministic state machine with no I/O.

How the process shell drives it:

1. On start, replay the log (latest snapshot, then the records after it) with `replay(record,
   offset)`, then `activate(now_ms)`. If `activation_records()` returns records (an empty log, or
   a metadata transaction left open by a crash), append them first.
2. Run operations one at a time (the event queue). Each returns a ControllerResult and changes
   nothing in the replicated state. Append `result.records` at the log's next write offset (in one
   batch when `is_atomic`), replay each one with its offset, and send `result.response` once the
   batch is durable. `register_broker` and `process_broker_heartbeat` take that next write offset:
   the broker epoch and the controlled-shutdown offset are derived from it.
3. Timers: every `metadata.max.idle.interval.ms` append `noop()`; at `next_session_expiry_ms()`
   (and after every heartbeat) call `maybe_fence_one_stale_broker(now_ms)` until it answers None.

A KafkaError raised inside an operation becomes that error in the response and no records;
any other exception is a bug: the shell reports UNKNOWN_SERVER_ERROR and treats it as fatal.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import controller.core.acls as _acls
import controller.core.alter_partition as _alter_partition
import controller.core.assign_replicas as _assign
import controller.core.bootstrap as _bootstrap
import controller.core.broker_lifecycle as _lifecycle
import controller.core.elections as _elections
import controller.core.producer_ids as _producer_ids
import controller.core.queries as _queries
import controller.core.reassignment as _reassignment
import controller.core.scram as _scram
import controller.core.topics as _topics
from controller.core.context import ControllerConfig, ControllerManagers
from controller.core.metadata_version import FEATURE_NAME
from controller.core.partition_change import Election
from controller.core.replication_control import TopicIdPartition
from controller.core.result import ControllerResult
from controller.core.revertible import Revertible
from kraftpy.heap import collector_paused
from protocol import metadata_records as mr
from protocol.errors import KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.rpc import API_SPECS
from protocol.rpc.allocate_producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse
from protocol.rpc.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from protocol.rpc.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from protocol.rpc.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from protocol.rpc.assign_replicas_to_dirs import AssignReplicasToDirsRequest, AssignReplicasToDirsResponse
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse
from protocol.rpc.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.rpc.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from protocol.rpc.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from protocol.rpc.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.rpc.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from protocol.rpc.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from protocol.rpc.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from protocol.rpc.metadata import MetadataRequest, MetadataResponse

__all__ = ["ControllerConfig", "QuorumControllerCore"]

R = TypeVar("R")

# Areas the controller does not act on; their records are accepted so any log replays.
_IGNORED_RECORDS = (
    mr.NoOpRecord,
    mr.ClientQuotaRecord,
    mr.DelegationTokenRecord,
    mr.RemoveDelegationTokenRecord,
)


class QuorumControllerCore:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.m = ControllerManagers.create(config)
        self._transaction_start: tuple[int, list[tuple[Revertible[Any], Any]]] | None = None
        self.last_replayed_offset = -1
        m = self.m
        handlers: dict[type, Callable[[Any, int], None]] = {
            mr.RegisterBrokerRecord: m.cluster.replay_register_broker,
            mr.UnregisterBrokerRecord: lambda r, _o: m.cluster.replay_unregister_broker(r),
            mr.BrokerRegistrationChangeRecord: lambda r, _o: m.cluster.replay_broker_registration_change(r),
            mr.FenceBrokerRecord: lambda r, _o: m.cluster.replay_fence_broker(r),
            mr.UnfenceBrokerRecord: lambda r, _o: m.cluster.replay_unfence_broker(r),
            mr.RegisterControllerRecord: lambda r, _o: m.cluster.replay_register_controller(r),
            mr.TopicRecord: lambda r, _o: m.replication.replay_topic(r),
            # Bound methods, not lambdas: these two are most of every large replay.
            mr.PartitionRecord: m.replication.replay_partition,
            mr.PartitionChangeRecord: m.replication.replay_partition_change,
            mr.RemoveTopicRecord: lambda r, _o: m.configs.delete_topic_configs(
                m.replication.replay_remove_topic(r)
            ),
            mr.ConfigRecord: lambda r, _o: m.configs.replay_config(r),
            mr.FeatureLevelRecord: lambda r, _o: m.features.replay_feature_level(r),
            mr.ZkMigrationStateRecord: lambda r, _o: m.features.replay_zk_migration_state(r),
            mr.ProducerIdsRecord: lambda r, _o: m.producer_ids.replay_producer_ids(r),
            mr.AccessControlEntryRecord: lambda r, _o: m.acls.replay_acl(r),
            mr.RemoveAccessControlEntryRecord: lambda r, _o: m.acls.replay_remove_acl(r),
            mr.UserScramCredentialRecord: lambda r, _o: m.scram.replay_credential(r),
            mr.RemoveUserScramCredentialRecord: lambda r, _o: m.scram.replay_remove_credential(r),
            mr.BeginTransactionRecord: self._replay_begin_transaction,
            mr.EndTransactionRecord: self._replay_end_transaction,
            mr.AbortTransactionRecord: self._replay_abort_transaction,
        }
        for cls in _IGNORED_RECORDS:
            handlers[cls] = lambda _r, _o: None
        self._replay_handlers = handlers

    # ---- replay ------------------------------------------------------------------------------

    def replay(self, record: ApiMessageAndVersion | Any, offset: int) -> None:
        """Apply one committed (or about to be committed) record; the only way state changes."""
        message = record.message if isinstance(record, ApiMessageAndVersion) else record
        handler = self._replay_handlers.get(type(message))
        if handler is None:
            raise ValueError(
                f"cannot replay record {type(message).__name__} at offset {offset}: unknown record type"
            )
        handler(message, offset)
        self.last_replayed_offset = offset

    def replay_all(self, records: Iterable[ApiMessageAndVersion | Any], base_offset: int) -> int:
        """Replay records at consecutive offsets from `base_offset`; returns the next offset."""
        # `replay` inlined: a dir failure or a snapshot replays hundreds of thousands of records.
        handlers = self._replay_handlers
        offset = base_offset
        with collector_paused():
            try:
                for record in records:
                    message = record.message if type(record) is ApiMessageAndVersion else record
                    handler = handlers.get(type(message))
                    if handler is None:
                        self.replay(record, offset)  # raises, naming the record
                    else:
                        handler(message, offset)
                    offset += 1
            finally:
                if offset > base_offset:
                    self.last_replayed_offset = offset - 1
        return offset

    # Metadata transactions: an aborted one leaves the state as it was at its Begin record.
    def _replicated(self) -> tuple[Revertible[Any], ...]:
        """Every manager whose state records build; heartbeat sessions are not among them."""
        m = self.m
        return (m.features, m.cluster, m.configs, m.replication, m.producer_ids, m.acls, m.scram)

    def _replay_begin_transaction(self, record: Any, offset: int) -> None:
        if self._transaction_start is not None:
            raise ValueError(
                f"BeginTransactionRecord at offset {offset} inside the transaction begun at {self._transaction_start[0]}"
            )
        self._transaction_start = (offset, [(mgr, mgr.snapshot()) for mgr in self._replicated()])

    def _replay_end_transaction(self, record: Any, offset: int) -> None:
        if self._transaction_start is None:
            raise ValueError(f"EndTransactionRecord at offset {offset} without a transaction")
        self._transaction_start = None

    def _replay_abort_transaction(self, record: Any, offset: int) -> None:
        if self._transaction_start is None:
            raise ValueError(f"AbortTransactionRecord at offset {offset} without a transaction")
        for mgr, snapshot in self._transaction_start[1]:
            mgr.restore(snapshot)
        self._transaction_start = None

    @property
    def in_transaction(self) -> bool:
        return self._transaction_start is not None

    def activate(self, now_ms: int) -> None:
        """Becoming the active controller: every registered broker gets a fresh session (field bug 25)."""
        self.m.heartbeats.observe(now_ms)
        self.m.heartbeats.track_all(self.m.cluster.registrations)

    def activation_records(
        self, bootstrap: Sequence[ApiMessageAndVersion], metadata_version: int
    ) -> ControllerResult[None]:
        """What a newly active controller writes first: the bootstrap records on an empty log, an
        AbortTransactionRecord for a transaction a crash left open, else nothing."""
        if self.last_replayed_offset < 0:
            return self.bootstrap_records(bootstrap, metadata_version)
        records: list[ApiMessageAndVersion] = []
        finalized, migration_state = self.m.features.snapshot()
        if self._transaction_start is not None:
            reason = (
                f"Controller failover: aborting the transaction begun at offset {self._transaction_start[0]}"
            )
            records.append(_bootstrap.abort_transaction_record(reason))
            # What the abort leaves: the state as of the transaction's Begin (an interrupted
            # migration copy goes back to PRE_MIGRATION and starts over).
            finalized, migration_state = next(
                snap for mgr, snap in self._transaction_start[1] if mgr is self.m.features
            )
        if FEATURE_NAME in finalized:
            records += _bootstrap.migration_activation_records(
                migration_state, self.config.zk_migration_enabled, finalized[FEATURE_NAME]
            )
        return ControllerResult.atomic_of(records, None) if records else ControllerResult.of([], None)

    # ---- operations --------------------------------------------------------------------------

    def _run(self, api: str, op: Callable[[], ControllerResult[R]]) -> ControllerResult[R]:
        # collector_paused spelled out: every heartbeat comes through here, and the process shell has
        # usually paused the collector already.
        enabled = gc.isenabled()
        if enabled:
            gc.disable()
        try:
            return op()
        except KafkaError as e:
            return ControllerResult.of([], self._error_response(api, e))
        finally:
            if enabled:
                gc.enable()

    @staticmethod
    def _error_response(api: str, e: KafkaError) -> Any:
        response = API_SPECS[api].error_response(e.code)
        if "ErrorMessage" in type(response).model_fields and e.message:
            response.ErrorMessage = e.message
        return response

    def register_broker(
        self, req: BrokerRegistrationRequest, version: int, now_ms: int, next_write_offset: int
    ) -> ControllerResult[BrokerRegistrationResponse]:
        return self._run(
            "BrokerRegistration",
            lambda: _lifecycle.register_broker(self.m, req, version, now_ms, next_write_offset),
        )

    def process_broker_heartbeat(
        self, req: BrokerHeartbeatRequest, version: int, now_ms: int, next_write_offset: int
    ) -> ControllerResult[BrokerHeartbeatResponse]:
        """Also refreshes the broker's session (runtime state, not in the log)."""
        return self._run(
            "BrokerHeartbeat",
            lambda: _lifecycle.process_broker_heartbeat(self.m, req, version, now_ms, next_write_offset),
        )

    def maybe_fence_one_stale_broker(self, now_ms: int) -> ControllerResult[int | None]:
        with collector_paused():
            return _lifecycle.maybe_fence_one_stale_broker(self.m, now_ms)

    def next_session_expiry_ms(self) -> int | None:
        """When the staleness check next has something to do (None: no unfenced broker)."""
        return self.m.heartbeats.next_expiry_ms(self.m.cluster.unfenced_broker_ids())

    def assign_replicas_to_dirs(
        self, req: AssignReplicasToDirsRequest, version: int
    ) -> ControllerResult[AssignReplicasToDirsResponse]:
        return self._run(
            "AssignReplicasToDirs", lambda: _assign.assign_replicas_to_dirs(self.m, req, version)
        )

    def create_topics(self, req: CreateTopicsRequest, version: int) -> ControllerResult[CreateTopicsResponse]:
        return self._run("CreateTopics", lambda: _topics.create_topics(self.m, req, version))

    def create_partitions(
        self, req: CreatePartitionsRequest, version: int
    ) -> ControllerResult[CreatePartitionsResponse]:
        return self._run("CreatePartitions", lambda: _topics.create_partitions(self.m, req, version))

    def delete_topics(self, req: DeleteTopicsRequest, version: int) -> ControllerResult[DeleteTopicsResponse]:
        return self._run("DeleteTopics", lambda: _topics.delete_topics(self.m, req, version))

    def alter_partition(
        self, req: AlterPartitionRequest, version: int
    ) -> ControllerResult[AlterPartitionResponse]:
        return self._run("AlterPartition", lambda: _alter_partition.alter_partition(self.m, req, version))

    def alter_partition_reassignments(
        self, req: AlterPartitionReassignmentsRequest, version: int
    ) -> ControllerResult[AlterPartitionReassignmentsResponse]:
        return self._run(
            "AlterPartitionReassignments",
            lambda: _reassignment.alter_partition_reassignments(self.m, req, version),
        )

    def allocate_producer_ids(
        self, req: AllocateProducerIdsRequest, version: int
    ) -> ControllerResult[AllocateProducerIdsResponse]:
        return self._run(
            "AllocateProducerIds",
            lambda: _producer_ids.allocate_producer_ids(self.m.cluster, self.m.producer_ids, req, version),
        )

    def create_acls(self, req: CreateAclsRequest, version: int) -> ControllerResult[CreateAclsResponse]:
        return self._run("CreateAcls", lambda: _acls.create_acls(self.m.acls, self.m.random, req, version))

    def delete_acls(self, req: DeleteAclsRequest, version: int) -> ControllerResult[DeleteAclsResponse]:
        return self._run("DeleteAcls", lambda: _acls.delete_acls(self.m.acls, req, version))

    def alter_user_scram_credentials(
        self, req: AlterUserScramCredentialsRequest, version: int
    ) -> ControllerResult[AlterUserScramCredentialsResponse]:
        return self._run(
            "AlterUserScramCredentials",
            lambda: _scram.alter_user_scram_credentials(self.m.scram, self.metadata_version, req, version),
        )

    def elect_leaders(
        self,
        election: Election,
        partitions: Iterable[TopicIdPartition] | None = None,
        *,
        only_unclean_topics: bool = False,
    ) -> ControllerResult[dict[TopicIdPartition, int]]:
        with collector_paused():
            return _elections.elect_leaders(
                self.m, election, partitions, only_unclean_topics=only_unclean_topics
            )

    def maybe_elect_unclean_leaders(self) -> ControllerResult[dict[TopicIdPartition, int]]:
        """Leaderless partitions of topics that allow unclean election get any live replica."""
        return self.elect_leaders(Election.UNCLEAN, None, only_unclean_topics=True)

    def bootstrap_records(
        self, bootstrap: Sequence[ApiMessageAndVersion], metadata_version: int
    ) -> ControllerResult[None]:
        return _bootstrap.bootstrap_records(
            bootstrap, metadata_version, zk_migration_enabled=self.config.zk_migration_enabled
        )

    def noop(self) -> ControllerResult[None]:
        return ControllerResult.of([ApiMessageAndVersion(mr.NoOpRecord(), 0)], None)

    # ---- reads -------------------------------------------------------------------------------

    def describe_cluster(
        self, req: DescribeClusterRequest, version: int, listener_name: str | None = None
    ) -> DescribeClusterResponse:
        return _queries.describe_cluster(self.m, req, version, listener_name)

    def metadata(
        self, req: MetadataRequest, version: int, listener_name: str | None = None
    ) -> MetadataResponse:
        return _queries.metadata(self.m, req, version, listener_name)

    def metadata_answer(
        self, req: MetadataRequest, version: int, listener_name: str | None = None
    ) -> _queries.MetadataAnswer:
        """What `metadata` answers, before its models are built (see MetadataAnswer)."""
        return _queries.metadata_answer(self.m, req, version, listener_name)

    def list_partition_reassignments(
        self, req: ListPartitionReassignmentsRequest, version: int
    ) -> ListPartitionReassignmentsResponse:
        return _reassignment.list_partition_reassignments(self.m, req)

    def describe_acls(self, req: DescribeAclsRequest, version: int) -> DescribeAclsResponse:
        return _acls.describe_acls(self.m.acls, req, version)

    def describe_user_scram_credentials(
        self, req: DescribeUserScramCredentialsRequest, version: int
    ) -> DescribeUserScramCredentialsResponse:
        return _scram.describe_user_scram_credentials(self.m.scram, req)

    @property
    def metadata_version(self) -> int:
        return self.m.features.metadata_version

    def fenced_broker_count(self) -> int:
        return self.m.cluster.fenced_broker_count()

    def offline_partition_count(self) -> int:
        return self.m.replication.offline_partition_count()

    def state(self) -> tuple[object, ...]:
        """Everything replay builds, comparable with ==: a log replayed from empty must give the
        same state as the live controller that wrote it."""
        m = self.m
        return (
            m.features.state(),
            m.cluster.state(),
            m.configs.state(),
            m.replication.state(),
            m.producer_ids.next_producer_id,
            m.acls.state(),
            m.scram.state(),
        )
