"""`kraftpy topics describe` prints kafka-topics.sh --describe's lines (Kafka 3.9's TopicCommand)."""

from __future__ import annotations

from tools.cli.topics import format_describe
from tools.client.reassignments import Ongoing

ROWS = [
    {
        "topic": "orders",
        "topicId": "Wq1HUHrMS8uW6xX2TIPcwA",
        "partitionCount": 2,
        "replicationFactor": 3,
        "partitions": [
            {"partition": 0, "leader": 1, "replicas": [1, 2, 3], "isr": [1, 2], "offline": [3],
             "directories": {"1": "AAAAAAAAAAAAAAAAAAAAAQ", "2": "AAAAAAAAAAAAAAAAAAAAAg", "3": "AAAAAAAAAAAAAAAAAAAAAw"}},
            {"partition": 1, "leader": -1, "replicas": [2, 3, 1], "isr": [], "offline": [], "directories": {}},
        ],
    }
]  # fmt: skip


def test_kafkas_lines_with_configs_and_elr_not_available() -> None:
    text = format_describe(ROWS, {"orders": [("min.insync.replicas", "2"), ("retention.ms", "60000")]})
    assert text.splitlines() == [
        "Topic: orders\tTopicId: Wq1HUHrMS8uW6xX2TIPcwA\tPartitionCount: 2\tReplicationFactor: 3\t"
        "Configs: min.insync.replicas=2,retention.ms=60000",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tElr: N/A\tLastKnownElr: N/A",
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,3,1\tIsr: \tElr: N/A\tLastKnownElr: N/A",
    ]


def test_a_reassignment_and_kraftpys_extras_come_where_asked() -> None:
    moving = {("orders", 0): Ongoing((1, 2, 3, 4), (4,), (3,))}
    line = format_describe(ROWS, {}, moving, extras=True).splitlines()[1]
    assert line == (
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tAdding Replicas: 4\t"
        "Removing Replicas: 3\tElr: N/A\tLastKnownElr: N/A\tOffline: 3\t"
        "Directories: 1:AAAAAAAAAAAAAAAAAAAAAQ,2:AAAAAAAAAAAAAAAAAAAAAg,3:AAAAAAAAAAAAAAAAAAAAAw"
    )
    assert (
        format_describe(ROWS, topic_lines=False).splitlines()[0].startswith("\tTopic: orders\tPartition: 0")
    )
    assert format_describe(ROWS).splitlines()[0].endswith("\tConfigs: ")
