"""MetadataDelta: records replayed on top of an image, then applied into a new image.

Sub-deltas are made on first use, so `apply` rebuilds only the areas records touched and
reuses the rest. Metadata transactions (Begin/End/AbortTransactionRecord) are handled here:
records after a Begin are held back, replayed at End and dropped at Abort, so no image ever
shows half a transaction. An open transaction can be carried into the next delta.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from kraftpy.image.cluster import ClusterDelta
from kraftpy.image.configs import ConfigResource, ConfigurationsDelta
from kraftpy.image.errors import MetadataReplayError, UnknownMetadataRecordError
from kraftpy.image.features import FeaturesDelta
from kraftpy.image.image import MetadataImage, MetadataProvenance
from kraftpy.image.opaque import (
    RecordStoreDelta,
    acl_key,
    client_quota_key,
    delegation_token_key,
    scram_key,
)
from kraftpy.image.producer_ids import ProducerIdsDelta
from kraftpy.image.topics import LocalReplicaChanges, TopicsDelta
from kraftpy.metadata import ConfigResourceType

TRANSACTION_RECORDS = frozenset({"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"})


class OpenTransaction:
    """Records held back since a BeginTransactionRecord."""

    def __init__(self, name: str | None, begin_offset: int | None) -> None:
        self.name = name
        self.begin_offset = begin_offset
        self.records: list[tuple[Any, int | None]] = []


class MetadataDelta:
    def __init__(
        self,
        image: MetadataImage,
        *,
        strict: bool = True,
        transaction: OpenTransaction | None = None,
    ) -> None:
        """`strict`: an unknown record type raises (the controller's choice); otherwise it is
        counted in `unknown_records` and skipped (the tools' choice)."""
        self.image = image
        self.strict = strict
        self.transaction = transaction
        self.unknown_records: dict[tuple[int, int], int] = {}
        self.last_offset: int | None = None
        self.last_epoch: int | None = None
        self.last_timestamp_ms: int | None = None
        self._features: FeaturesDelta | None = None
        self._cluster: ClusterDelta | None = None
        self._topics: TopicsDelta | None = None
        self._configs: ConfigurationsDelta | None = None
        self._producer_ids: ProducerIdsDelta | None = None
        self._stores: dict[str, RecordStoreDelta] = {}

    # -- sub-deltas -------------------------------------------------------------------------

    @property
    def features(self) -> FeaturesDelta:
        if self._features is None:
            self._features = FeaturesDelta(self.image.features)
        return self._features

    @property
    def cluster(self) -> ClusterDelta:
        if self._cluster is None:
            self._cluster = ClusterDelta(self.image.cluster)
        return self._cluster

    @property
    def topics(self) -> TopicsDelta:
        if self._topics is None:
            self._topics = TopicsDelta(self.image.topics)
        return self._topics

    @property
    def configs(self) -> ConfigurationsDelta:
        if self._configs is None:
            self._configs = ConfigurationsDelta(self.image.configs)
        return self._configs

    @property
    def producer_ids(self) -> ProducerIdsDelta:
        if self._producer_ids is None:
            self._producer_ids = ProducerIdsDelta(self.image.producer_ids)
        return self._producer_ids

    def _store(self, area: str, key: Callable[[Any], Any]) -> RecordStoreDelta:
        delta = self._stores.get(area)
        if delta is None:
            delta = RecordStoreDelta(getattr(self.image, area), key)
            self._stores[area] = delta
        return delta

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        return LocalReplicaChanges() if self._topics is None else self._topics.local_changes(broker_id)

    @property
    def in_transaction(self) -> bool:
        return self.transaction is not None

    # -- replay -----------------------------------------------------------------------------

    def replay(
        self,
        record: Any,
        offset: int | None = None,
        *,
        epoch: int | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        """Replay one record (a metadata record or an ApiMessageAndVersion carrying one)."""
        rec = getattr(record, "message", record)  # an ApiMessageAndVersion carries it in `message`
        name = getattr(rec, "NAME", None)
        try:
            handler = _HANDLERS.get(name) if self.transaction is None else None
            if handler is not None:
                handler(self, rec)
            elif name in TRANSACTION_RECORDS:
                self._replay_transaction_marker(name, rec, offset)
                if name == "BeginTransactionRecord":
                    # the image must not claim the Begin: a reader resuming after it would
                    # miss the start of the transaction
                    return
            elif self.transaction is not None:
                self.transaction.records.append((rec, offset))
                return
            else:
                self._replay_now(rec, name)
        except MetadataReplayError as e:
            if e.offset is None and offset is not None:
                raise type(e)(str(e), offset) from None
            raise
        if offset is not None:
            self.last_offset = offset
        if epoch is not None:
            self.last_epoch = epoch
        if timestamp_ms is not None:
            self.last_timestamp_ms = timestamp_ms

    def replay_all(self, records: Iterable[Any], offset: int | None = None) -> None:
        for r in records:
            self.replay(r, offset)

    def _replay_transaction_marker(self, name: str, rec: Any, offset: int | None) -> None:
        if name == "BeginTransactionRecord":
            if self.transaction is not None:
                raise MetadataReplayError(
                    f"BeginTransactionRecord while transaction {self.transaction.name!r} "
                    f"(begun at offset {self.transaction.begin_offset}) is still open"
                )
            self.transaction = OpenTransaction(getattr(rec, "Name", None), offset)
            return
        if self.transaction is None:
            raise MetadataReplayError(f"{name} without an open transaction")
        held, self.transaction = self.transaction, None
        if name == "EndTransactionRecord":
            for r, off in held.records:
                try:
                    self._replay_now(r, getattr(r, "NAME", None))
                except MetadataReplayError as e:
                    raise type(e)(str(e), off) from None

    def _replay_now(self, rec: Any, name: str | None) -> None:
        handler = _HANDLERS.get(name) if name is not None else None
        if handler is None:
            if self.strict:
                raise UnknownMetadataRecordError(f"cannot replay record type {name or type(rec).__name__}")
            key = (getattr(rec, "api_key", getattr(rec, "API_KEY", -1)), getattr(rec, "version", -1))
            self.unknown_records[key] = self.unknown_records.get(key, 0) + 1
            return
        handler(self, rec)

    # -- apply ------------------------------------------------------------------------------

    def apply(self, provenance: MetadataProvenance | None = None) -> MetadataImage:
        """The new image. Held-back transaction records are not in it (see `transaction`)."""
        image = self.image
        if provenance is None:
            p = image.provenance
            provenance = MetadataProvenance(
                p.offset if self.last_offset is None else self.last_offset,
                p.epoch if self.last_epoch is None else self.last_epoch,
                p.last_contained_log_time_ms if self.last_timestamp_ms is None else self.last_timestamp_ms,
            )
        changes: dict[str, Any] = {"provenance": provenance}
        if self._features is not None:
            changes["features"] = self._features.apply()
        if self._cluster is not None:
            changes["cluster"] = self._cluster.apply()
        if self._topics is not None:
            changes["topics"] = self._topics.apply()
        if self._configs is not None:
            changes["configs"] = self._configs.apply()
        if self._producer_ids is not None:
            changes["producer_ids"] = self._producer_ids.apply()
        for area, delta in self._stores.items():
            changes[area] = delta.apply()
        return replace(image, **changes)

    def next_delta(self, image: MetadataImage) -> MetadataDelta:
        """A delta on `image` (normally this delta's `apply()`) that keeps an open transaction going."""
        return MetadataDelta(image, strict=self.strict, transaction=self.transaction)


def _remove_topic(d: MetadataDelta, rec: Any) -> None:
    name = d.topics.replay_remove_topic(rec)
    d.configs.delete_resource(ConfigResource(ConfigResourceType.TOPIC, name))


def _client_quota(d: MetadataDelta, rec: Any) -> None:
    store = d._store("client_quotas", client_quota_key)
    if rec.Remove:
        store.remove(rec)
    else:
        store.put(rec)


def _noop(d: MetadataDelta, rec: Any) -> None:
    return None


_HANDLERS: dict[str, Callable[[MetadataDelta, Any], None]] = {
    "RegisterBrokerRecord": lambda d, r: d.cluster.replay_register_broker(r),
    "UnregisterBrokerRecord": lambda d, r: d.cluster.replay_unregister_broker(r),
    "FenceBrokerRecord": lambda d, r: d.cluster.replay_fence_broker(r),
    "UnfenceBrokerRecord": lambda d, r: d.cluster.replay_unfence_broker(r),
    "BrokerRegistrationChangeRecord": lambda d, r: d.cluster.replay_registration_change(r),
    "RegisterControllerRecord": lambda d, r: d.cluster.replay_register_controller(r),
    "TopicRecord": lambda d, r: d.topics.replay_topic(r),
    "PartitionRecord": lambda d, r: d.topics.replay_partition(r),
    "PartitionChangeRecord": lambda d, r: d.topics.replay_partition_change(r),
    "RemoveTopicRecord": _remove_topic,
    "ConfigRecord": lambda d, r: d.configs.replay_config(r),
    "FeatureLevelRecord": lambda d, r: d.features.replay_feature_level(r),
    "ZkMigrationStateRecord": lambda d, r: d.features.replay_zk_migration_state(r),
    "ProducerIdsRecord": lambda d, r: d.producer_ids.replay_producer_ids(r),
    "ClientQuotaRecord": _client_quota,
    "AccessControlEntryRecord": lambda d, r: d._store("acls", acl_key).put(r),
    "RemoveAccessControlEntryRecord": lambda d, r: d._store("acls", acl_key).remove(r),
    "UserScramCredentialRecord": lambda d, r: d._store("scram", scram_key).put(r),
    "RemoveUserScramCredentialRecord": lambda d, r: d._store("scram", scram_key).remove(r),
    "DelegationTokenRecord": lambda d, r: d._store("delegation_tokens", delegation_token_key).put(r),
    "RemoveDelegationTokenRecord": lambda d, r: d._store("delegation_tokens", delegation_token_key).remove(r),
    "NoOpRecord": _noop,
}
