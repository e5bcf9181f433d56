"""DescribeConfigs as a broker answers it, without a broker: sources, defaults, filters and refusals."""

from __future__ import annotations

from broker.dataplane.describe_configs import describe_configs
from kraftpy.config import KafkaConfig
from protocol.errors import Errors
from protocol.rpc.describe_configs import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_DYNAMIC_TOPIC_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    TYPE_INT,
    DescribeConfigsRequest,
)

Q = DescribeConfigsRequest


def _ask(*resources: Q.DescribeConfigsResource, version: int = 4):  # type: ignore[no-untyped-def]
    cfg = KafkaConfig.from_properties(
        {"node.id": "2", "min.insync.replicas": "2", "log.retention.ms": "1000"}
    )
    own = {"orders": {"retention.ms": "60000", "custom.key": "x"}}
    return describe_configs(
        Q(Resources=list(resources)),
        version,
        node_id=2,
        cfg=cfg,
        topic_configs=lambda n: own.get(n, {}),
        topic_exists=lambda n: n in own or n == "plain",
    )


def test_a_topics_own_configs_win_over_the_brokers_defaults() -> None:
    (res,) = _ask(Q.DescribeConfigsResource(ResourceType=RESOURCE_TOPIC, ResourceName="orders")).Results
    got = {c.Name: (c.Value, c.ConfigSource) for c in res.Configs}
    assert got["retention.ms"] == ("60000", SOURCE_DYNAMIC_TOPIC_CONFIG)
    assert got["min.insync.replicas"] == ("2", SOURCE_DEFAULT_CONFIG)
    assert got["custom.key"] == ("x", SOURCE_DYNAMIC_TOPIC_CONFIG)
    assert got["cleanup.policy"][0] == "delete"
    (plain,) = _ask(Q.DescribeConfigsResource(ResourceType=RESOURCE_TOPIC, ResourceName="plain")).Results
    assert {c.Name: c.Value for c in plain.Configs}["retention.ms"] == "1000"
    assert {c.Name: c.ConfigType for c in plain.Configs}["min.insync.replicas"] == TYPE_INT


def test_keys_filter_and_unknown_topics_are_errors() -> None:
    only, missing = _ask(
        Q.DescribeConfigsResource(
            ResourceType=RESOURCE_TOPIC, ResourceName="orders", ConfigurationKeys=["retention.ms"]
        ),
        Q.DescribeConfigsResource(ResourceType=RESOURCE_TOPIC, ResourceName="nope"),
    ).Results
    assert [c.Name for c in only.Configs] == ["retention.ms"]
    assert missing.ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION and missing.Configs == []


def test_a_broker_lists_its_static_configs_and_refuses_another_brokers() -> None:
    mine, other, odd = _ask(
        Q.DescribeConfigsResource(ResourceType=RESOURCE_BROKER, ResourceName="2"),
        Q.DescribeConfigsResource(ResourceType=RESOURCE_BROKER, ResourceName="3"),
        Q.DescribeConfigsResource(ResourceType=99, ResourceName="x"),
    ).Results
    got = {c.Name: (c.Value, c.ConfigSource, c.ReadOnly) for c in mine.Configs}
    assert got["min.insync.replicas"] == ("2", SOURCE_STATIC_BROKER_CONFIG, True)
    assert got["num.partitions"][1] == SOURCE_DEFAULT_CONFIG
    assert other.ErrorCode == Errors.INVALID_REQUEST and odd.ErrorCode == Errors.INVALID_REQUEST
