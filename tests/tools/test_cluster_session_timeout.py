"""`kraftpy cluster up`'s quick session timeout reaches the controllers, which are what fence a broker."""

from __future__ import annotations

from pathlib import Path

from kraftpy.config import KafkaConfig
from tools.cluster.configs import node_properties
from tools.cluster.spec import FAST_BROKER_SETTINGS, ClusterSpec, plan_nodes

SESSION = "broker.session.timeout.ms"


def loaded(spec: ClusterSpec, tmp_path: Path) -> dict[str, KafkaConfig]:
    nodes = plan_nodes(spec, tmp_path, list(range(30000, 30010)))
    return {
        n.role + str(n.node_id): KafkaConfig.from_properties(node_properties(n, nodes, spec), n.name)
        for n in nodes
    }


def test_controllers_fence_after_the_brokers_session_timeout(tmp_path: Path) -> None:
    configs = loaded(ClusterSpec(brokers=2, dirs=1, controllers=1), tmp_path)
    controllers = [c for name, c in configs.items() if name.startswith("controller")]
    assert controllers
    for cfg in configs.values():
        assert cfg.broker_session_timeout_ms == int(FAST_BROKER_SETTINGS[SESSION])


def test_an_explicit_controller_setting_wins(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=1, dirs=1, controllers=1, controller_config={SESSION: "7000"})
    configs = loaded(spec, tmp_path)
    by_role = {name.rstrip("0123456789"): cfg.broker_session_timeout_ms for name, cfg in configs.items()}
    assert by_role == {"controller": 7000, "broker": 3000}
