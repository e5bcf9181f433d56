"""kraftpy's client library: an async producer and consumer, and an admin client.

from kraftpy.client import Admin, Consumer, Producer
"""

from kraftpy.client.admin import Admin, BrokerLogDirs, TopicResult
from kraftpy.client.cluster import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from kraftpy.client.consumer import Consumer, consume_all
from kraftpy.client.errors import ClientError, DeliveryError
from kraftpy.client.producer import Producer, ProducerConfig, RecordMetadata
from kraftpy.client.records import ConsumerRecord

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
