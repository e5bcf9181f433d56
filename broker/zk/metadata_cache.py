"""The metadata cache of a ZooKeeper-mode broker: UpdateMetadata requests, replayed as an image.

Kafka's ZooKeeper brokers keep a ZkMetadataCache. Here each UpdateMetadata becomes the metadata
records that say the same thing and is replayed into the one `MetadataImage` every other part of
the broker reads (the data plane's Metadata answers, ISR eligibility, topic names and ids), so the
rule for "is this replica online" stays the one in `kraftpy.metadata.replicas`:

- a live broker is registered unfenced with no log dirs (ZooKeeper brokers register none);
- a partition's replica listed in OfflineReplicas gets the directory LOST, every other replica
  MIGRATING (the id KIP-858 gives replicas whose dir the metadata does not know), which the one
  rule counts as online on a broker registered without dirs;
- a broker missing from LiveBrokers is unregistered; a partition whose leader is -2
  (LeaderDuringDelete) takes its topic out of the image;
- a topic's configs (min.insync.replicas, retention...) are not in UpdateMetadata: ZooKeeper
  holds them in `/config/topics/<t>`, which the broker reads when the topic first appears
  (Kafka reads them from there too), and they enter the image as ConfigRecords.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.storage.metadata_version import LATEST_PRODUCTION_LEVEL
from protocol import metadata_records as mr
from protocol.uuid import LOST, MIGRATING, Uuid

LEADER_DURING_DELETE = -2
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
# Kafka's SecurityProtocol ids by name.
_SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class ZkMetadataCache:
    def __init__(self) -> None:
        self.image = MetadataImage.EMPTY
        self.controller_id = -1
        self.controller_epoch = -1

    def new_topics(self, req: Any) -> list[str]:
        """Topics the request names that the image does not know yet (their configs must be read)."""
        return sorted(
            {t.TopicName for t in req.TopicStates if self.image.topics.get_topic(t.TopicName) is None}
        )

    def update(self, req: Any, configs: Mapping[str, Mapping[str, str]] | None = None) -> MetadataImage:
        """Apply one UpdateMetadata request (Kafka's field names), with `configs` (topic -> its
        `/config/topics/<t>` entries) for the topics it adds; returns the new image."""
        delta = MetadataDelta(self.image)
        if self.image.metadata_version is None:
            delta.replay(mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=LATEST_PRODUCTION_LEVEL))
        self._brokers(delta, req.LiveBrokers)
        removed: set[Uuid] = set()
        for topic in req.TopicStates:
            for ps in topic.PartitionStates:
                self._partition(delta, topic.TopicName, topic.TopicId, ps, removed)
        for topic, entries in (configs or {}).items():
            for name, value in sorted(entries.items()):
                delta.replay(
                    mr.ConfigRecord(ResourceType=TOPIC_RESOURCE, ResourceName=topic, Name=name, Value=value)
                )
        self.image = delta.apply()
        self.controller_id = req.ControllerId
        self.controller_epoch = req.ControllerEpoch
        return self.image

    def _brokers(self, delta: MetadataDelta, live: list[Any]) -> None:
        current = self.image.cluster.brokers
        seen = set()
        for b in live:
            seen.add(b.Id)
            rec = mr.RegisterBrokerRecord(
                BrokerId=b.Id,
                IncarnationId=Uuid.ZERO,
                BrokerEpoch=-1,
                EndPoints=[
                    mr.RegisterBrokerRecord.BrokerEndpoint(
                        Name=ep.Listener,
                        Host=ep.Host,
                        Port=ep.Port,
                        SecurityProtocol=ep.SecurityProtocol,
                    )
                    for ep in b.Endpoints
                ],
                Features=[],
                Rack=b.Rack,
                Fenced=False,
                LogDirs=[],
            )
            known = current.get(b.Id)
            if known is None or _endpoints(known) != _endpoints_of(rec) or known.rack != b.Rack:
                delta.replay(rec)
        for b in current:
            if b not in seen:
                delta.replay(mr.UnregisterBrokerRecord(BrokerId=b, BrokerEpoch=-1))

    def _partition(
        self, delta: MetadataDelta, name: str, topic_id: Uuid, ps: Any, removed: set[Uuid]
    ) -> None:
        topics = delta.topics
        known = self.image.topics.get_topic(name)
        if known is not None and known.id != topic_id and known.id not in removed:
            # The same name with a new id: the old topic was deleted and created again.
            delta.replay(mr.RemoveTopicRecord(TopicId=known.id))
            removed.add(known.id)
            known = None
        if ps.Leader == LEADER_DURING_DELETE:
            if known is not None and known.id not in removed:
                delta.replay(mr.RemoveTopicRecord(TopicId=known.id))
                removed.add(known.id)
            return
        if (known is None or known.id in removed) and topic_id not in topics.created_topic_ids:
            delta.replay(mr.TopicRecord(Name=name, TopicId=topic_id))
        offline = set(ps.OfflineReplicas)
        delta.replay(
            mr.PartitionRecord(
                PartitionId=ps.PartitionIndex,
                TopicId=topic_id,
                Replicas=list(ps.Replicas),
                Isr=list(ps.Isr),
                Leader=ps.Leader,
                LeaderEpoch=ps.LeaderEpoch,
                PartitionEpoch=ps.ZkVersion,
                Directories=[LOST if r in offline else MIGRATING for r in ps.Replicas],
            )
        )


def _endpoints(reg: Any) -> list[tuple[str, str, int, int]]:
    return [(e.name, e.host, e.port, e.security_protocol) for e in reg.listeners]


def _endpoints_of(rec: Any) -> list[tuple[str, str, int, int]]:
    return [(e.Name, e.Host, e.Port, e.SecurityProtocol) for e in rec.EndPoints]


def security_protocol_id(name: str) -> int:
    return _SECURITY_PROTOCOLS.get(name, 0)
