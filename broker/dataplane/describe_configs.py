"""DescribeConfigs as a broker answers it: a topic's configs (its own over the broker's defaults) and
this broker's static configs, each with Kafka's ConfigSource and ConfigType.

Topic configs listed are the ones kraftpy's logs honour (the LogConfig keys, min.insync.replicas,
cleanup.policy); a topic's ConfigRecords win over the broker's defaults, as in Kafka. A broker lists
every config it knows by Kafka's name: STATIC_BROKER_CONFIG when its file set it, DEFAULT_CONFIG otherwise.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import Errors
from protocol.rpc.describe_configs import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_DYNAMIC_TOPIC_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_STRING,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)

R = DescribeConfigsResponse

# topic config -> (the broker config giving its default, Kafka's type)
TOPIC_CONFIGS: dict[str, tuple[str | None, int]] = {
    "cleanup.policy": ("log.cleanup.policy", TYPE_LIST),
    "max.message.bytes": ("message.max.bytes", TYPE_INT),
    "min.insync.replicas": ("min.insync.replicas", TYPE_INT),
    "retention.bytes": ("log.retention.bytes", TYPE_LONG),
    "retention.ms": ("log.retention.ms", TYPE_LONG),
    "segment.bytes": ("log.segment.bytes", TYPE_INT),
    "segment.index.bytes": ("log.index.size.max.bytes", TYPE_INT),
    "segment.ms": ("log.roll.ms", TYPE_LONG),
    "index.interval.bytes": ("log.index.interval.bytes", TYPE_INT),
}


def _kafka_type(value: Any) -> int:
    if isinstance(value, bool):
        return TYPE_BOOLEAN
    if isinstance(value, int):
        return TYPE_LONG if abs(value) > 2**31 - 1 else TYPE_INT
    if isinstance(value, float):
        return TYPE_DOUBLE
    if isinstance(value, list):
        return TYPE_LIST
    return TYPE_STRING


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def broker_configs(cfg: Any) -> dict[str, tuple[str | None, int, int]]:
    """Kafka name -> (value, ConfigSource, ConfigType) of every config a KafkaConfig knows."""
    out: dict[str, tuple[str | None, int, int]] = {}
    fields = getattr(type(cfg), "model_fields", {})
    explicit = getattr(cfg, "model_fields_set", set())
    for name, info in fields.items():
        if info.alias is None:
            continue
        value = getattr(cfg, name)
        source = SOURCE_STATIC_BROKER_CONFIG if name in explicit else SOURCE_DEFAULT_CONFIG
        out[info.alias] = (_text(value), source, _kafka_type(value))
    return out


def describe_configs(
    req: DescribeConfigsRequest,
    version: int,
    *,
    node_id: int,
    cfg: Any,
    topic_configs: Any,
    topic_exists: Any,
) -> DescribeConfigsResponse:
    """`topic_configs(name)`: a topic's own configs; `topic_exists(name)`: whether the topic is known."""
    statics = broker_configs(cfg)
    results = []
    for res in req.Resources:
        wanted = set(res.ConfigurationKeys) if res.ConfigurationKeys is not None else None
        if res.ResourceType == RESOURCE_TOPIC:
            if not topic_exists(res.ResourceName):
                results.append(
                    _error(res, Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {res.ResourceName} does not exist")
                )
                continue
            own = topic_configs(res.ResourceName)
            entries = []
            for name, (broker_name, kind) in sorted(TOPIC_CONFIGS.items()):
                if name in own:
                    value, source = own[name], SOURCE_DYNAMIC_TOPIC_CONFIG
                elif broker_name in statics:
                    value, source = statics[broker_name][0], SOURCE_DEFAULT_CONFIG
                else:
                    value, source = ("delete" if name == "cleanup.policy" else None), SOURCE_DEFAULT_CONFIG
                entries.append((name, value, source, kind))
            entries += [
                (n, v, SOURCE_DYNAMIC_TOPIC_CONFIG, TYPE_STRING)
                for n, v in own.items()
                if n not in TOPIC_CONFIGS
            ]
        elif res.ResourceType == RESOURCE_BROKER:
            if res.ResourceName not in ("", str(node_id)):
                results.append(
                    _error(
                        res,
                        Errors.INVALID_REQUEST,
                        f"this is broker {node_id}; ask broker {res.ResourceName}",
                    )
                )
                continue
            entries = [(n, v, s, k) for n, (v, s, k) in sorted(statics.items())]
        else:
            results.append(
                _error(res, Errors.INVALID_REQUEST, f"resource type {res.ResourceType} is not served")
            )
            continue
        results.append(
            R.DescribeConfigsResult(
                ResourceType=res.ResourceType,
                ResourceName=res.ResourceName,
                Configs=[
                    R.DescribeConfigsResourceResult(
                        Name=name,
                        Value=value,
                        ReadOnly=res.ResourceType == RESOURCE_BROKER,
                        ConfigSource=source,
                        ConfigType=kind if version >= 3 else 0,
                    )
                    for name, value, source, kind in entries
                    if wanted is None or name in wanted
                ],
            )
        )
    return R(Results=results)


def _error(
    res: DescribeConfigsRequest.DescribeConfigsResource, code: Errors, message: str
) -> R.DescribeConfigsResult:
    return R.DescribeConfigsResult(
        ErrorCode=int(code),
        ErrorMessage=message,
        ResourceType=res.ResourceType,
        ResourceName=res.ResourceName,
    )
