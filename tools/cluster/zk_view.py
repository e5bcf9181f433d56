"""The metadata image of a ZooKeeper-mode cluster, as `kraftpy cluster status` and the tests see it.

A ZooKeeper-mode cluster has no metadata log to read. Its truth is split: ZooKeeper holds leaders
and ISRs, the controller's memory which replicas sit in failed dirs, each broker where its logs live.
What a Kafka operator would look at is a broker's Metadata answer (as `kafka-topics --describe`
does), so the image is built from one: the brokers it lists, registered with the online dirs their
own `/healthz` reports; each partition with its replicas, ISR and leader, and per replica the
directory it lives in, found on disk, or LOST when Metadata lists it offline. The one replica rule
(`kraftpy.metadata.replicas`) then reads it like a KRaft image.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.storage.metadata_version import LATEST_PRODUCTION_LEVEL
from protocol import metadata_records as mr
from protocol.uuid import LOST, MIGRATING, Uuid
from tools.cluster.spec import NodePlan


def online_dirs(health: Mapping[str, Any] | None) -> dict[str, str]:
    """path -> directory id of the online dirs a ZooKeeper-mode broker's /healthz reports."""
    dirs = (health or {}).get("dirs") or {}
    return dict(dirs.get("online") or {})


def image_from_metadata(
    metadata: Mapping[str, Any], brokers: list[NodePlan], health: Mapping[str, Mapping[str, Any] | None]
) -> MetadataImage:
    """`metadata`: a Metadata response body (JSON); `health`: broker name -> its /healthz body."""
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay(mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=LATEST_PRODUCTION_LEVEL))
    plans = {b.node_id: b for b in brokers}
    dirs_of = {b.node_id: online_dirs(health.get(b.name)) for b in brokers}
    for b in metadata.get("Brokers") or []:
        node_id = int(b["NodeId"])
        delta.replay(
            mr.RegisterBrokerRecord(
                BrokerId=node_id,
                IncarnationId=Uuid.ZERO,
                BrokerEpoch=-1,
                EndPoints=[
                    mr.RegisterBrokerRecord.BrokerEndpoint(
                        Name="PLAINTEXT", Host=b["Host"], Port=int(b["Port"]), SecurityProtocol=0
                    )
                ],
                Features=[],
                Rack=b.get("Rack"),
                Fenced=False,
                LogDirs=sorted(Uuid.from_string(d) for d in dirs_of.get(node_id, {}).values()),
            )
        )
    for t in metadata.get("Topics") or []:
        if t.get("ErrorCode"):
            continue
        topic_id = Uuid.from_string(t["TopicId"]) if isinstance(t.get("TopicId"), str) else Uuid.ZERO
        name = t["Name"]
        delta.replay(mr.TopicRecord(Name=name, TopicId=topic_id))
        for p in t.get("Partitions") or []:
            offline = set(p.get("OfflineReplicas") or [])
            index = int(p["PartitionIndex"])
            directories = []
            for r in p["ReplicaNodes"]:
                if r in offline:
                    directories.append(LOST)
                    continue
                found = _dir_holding(plans.get(r), dirs_of.get(r, {}), f"{name}-{index}")
                directories.append(found or MIGRATING)
            delta.replay(
                mr.PartitionRecord(
                    PartitionId=index,
                    TopicId=topic_id,
                    Replicas=list(p["ReplicaNodes"]),
                    Isr=list(p["IsrNodes"]),
                    Leader=int(p["LeaderId"]),
                    LeaderEpoch=int(p.get("LeaderEpoch", -1)),
                    PartitionEpoch=0,
                    Directories=directories,
                )
            )
    return delta.apply()


def _dir_holding(plan: NodePlan | None, online: Mapping[str, str], name: str) -> Uuid | None:
    if plan is None:
        return None
    for path, dir_id in online.items():
        if os.path.isdir(os.path.join(path, name)):
            return Uuid.from_string(dir_id)
    return None
