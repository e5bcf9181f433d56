"""`kraftpy cluster up`: controllers count with the session timeout and heartbeat interval the brokers are given."""

from __future__ import annotations

from pathlib import Path

from kraftpy.config import KafkaConfig
from tools.cluster.configs import node_properties
from tools.cluster.spec import FAST_BROKER_SETTINGS, ClusterSpec, NodePlan, SecurityLayout, plan_nodes


def configs(tmp_path: Path, spec: ClusterSpec) -> list[tuple[NodePlan, KafkaConfig]]:
    nodes = plan_nodes(spec, tmp_path, list(range(30000, 30010)))
    return [
        (
            node,
            KafkaConfig.from_properties(
                node_properties(node, nodes, spec, SecurityLayout.of(tmp_path)), f"{node.name}.properties"
            ),
        )
        for node in nodes
    ]


def test_controllers_and_brokers_read_the_same_session_timeout_and_heartbeat_interval(tmp_path: Path) -> None:
    found = configs(tmp_path, ClusterSpec(brokers=2, dirs=1, controllers=1))
    timeouts = {cfg.broker_session_timeout_ms for _, cfg in found}
    assert timeouts == {int(FAST_BROKER_SETTINGS["broker.session.timeout.ms"])}
    intervals = {cfg.broker_heartbeat_interval_ms for _, cfg in found}
    assert intervals == {int(FAST_BROKER_SETTINGS["broker.heartbeat.interval.ms"])}
    assert sorted(tuple(cfg.process_roles) for _, cfg in found) == [("broker",), ("broker",), ("controller",)]


def test_a_controller_setting_of_its_own_wins(tmp_path: Path) -> None:
    spec = ClusterSpec(
        brokers=1, dirs=1, controllers=1, controller_config={"broker.session.timeout.ms": "7000"}
    )
    by_role = {tuple(cfg.process_roles): cfg.broker_session_timeout_ms for _, cfg in configs(tmp_path, spec)}
    assert by_role == {("controller",): 7000, ("broker",): 3000}
