"""kraftpy's client library: an async producer and consumer, and an admin client.

    from tools.client import Admin, Consumer, Producer

Names load on first use, so `tools.client.cli_support` (imported by every CLI parser) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Admin": "admin",
    "BrokerLogDirs": "admin",
    "TopicResult": "admin",
    "BrokerInfo": "cluster",
    "ClusterMetadata": "cluster",
    "PartitionInfo": "cluster",
    "TopicInfo": "cluster",
    "Consumer": "consumer",
    "consume_all": "consumer",
    "ClientError": "errors",
    "DeliveryError": "errors",
    "Producer": "producer",
    "ProducerConfig": "producer",
    "RecordMetadata": "producer",
    "ConsumerRecord": "records",
}

__all__ = [
    "Admin",
    "BrokerInfo",
    "BrokerLogDirs",
    "ClientError",
    "ClusterMetadata",
    "Consumer",
    "ConsumerRecord",
    "DeliveryError",
    "PartitionInfo",
    "Producer",
    "ProducerConfig",
    "RecordMetadata",
    "TopicInfo",
    "TopicResult",
    "consume_all",
]

if TYPE_CHECKING:
    from tools.client.admin import Admin, BrokerLogDirs, TopicResult
    from tools.client.cluster import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
    from tools.client.consumer import Consumer, consume_all
    from tools.client.errors import ClientError, DeliveryError
    from tools.client.producer import Producer, ProducerConfig, RecordMetadata
    from tools.client.records import ConsumerRecord


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tools.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tools.client.{module}"), name)
    globals()[name] = value
    return value
