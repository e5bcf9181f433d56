"""Kafka-style .properties for each planned node, with Kafka's property names."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tools.cluster.spec import (
    BROKER_LISTENER,
    CONTROLLER_LISTENER,
    ClusterSpec,
    NodePlan,
)


def controller_properties(node: NodePlan, spec: ClusterSpec) -> dict[str, str]:
    props = {
        "process.roles": "controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": f"{node.node_id}@{node.host}:{node.port}",
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": node.listener,
        "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT",
        "log.dirs": node.metadata_dir,
        "metadata.log.dir": node.metadata_dir,
    }
    props.update(spec.controller_config)
    return props


def broker_properties(node: NodePlan, controller: NodePlan, spec: ClusterSpec) -> dict[str, str]:
    props = {
        "process.roles": "broker",
        "node.id": str(node.node_id),
        "controller.quorum.voters": f"{controller.node_id}@{controller.host}:{controller.port}",
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": node.listener,
        "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT",
        "inter.broker.listener.name": BROKER_LISTENER,
        "log.dirs": ",".join(d.path for d in node.log_dirs),
        "metadata.log.dir": node.metadata_dir,
        "num.partitions": "3",
        "default.replication.factor": str(min(3, spec.brokers)),
        "min.insync.replicas": str(min(2, spec.brokers)),
    }
    props.update(spec.broker_config)
    return props


def node_properties(node: NodePlan, nodes: list[NodePlan], spec: ClusterSpec) -> dict[str, str]:
    if node.role == "controller":
        return controller_properties(node, spec)
    controller = next(n for n in nodes if n.role == "controller")
    return broker_properties(node, controller, spec)


def write_config(path: str | Path, props: Mapping[str, str], title: str) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # Plain `key=value` lines as people write them; Java's reader takes ':' in a value as is.
    lines = [f"# {title}"] + [f"{k}={v.replace(chr(92), chr(92) * 2)}" for k, v in props.items()]
    p.write_text("\n".join(lines) + "\n")
    return p
