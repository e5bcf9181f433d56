"""Multi-host mode: every node in its own network namespace on a bridge, clients in one more.

KIP-858's log.dir.failure.timeout.ms: a broker whose dir just failed but which cannot tell the
controller (its link is cut) shuts itself down after the timeout, rather than keep leading partitions
whose data it can no longer write. When the link is back and the broker restarted on the healed
disk, every partition heals and no acknowledged message is lost or duplicated.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.system.conftest import require_netns
from tests.system.helpers import (
    dir_index_of,
    log_lines,
    more_acks,
    start_traffic,
    validate_clients,
    wait_exit,
)
from tools.cluster import netns

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC = "orders"
FAILURE_TIMEOUT_MS = 3000
WAIT_S = 60.0


def _in_sync(v) -> bool:  # type: ignore[no-untyped-def]
    parts = v.topic(TOPIC)
    return bool(parts) and all(
        len(p.isr) == len(p.replicas) and not p.offline and p.leader >= 0 for p in parts
    )


def test_cut_off_broker_with_a_failed_dir_shuts_down_then_partitions_heal(
    make_cluster, tmp_path: Path
) -> None:
    require_netns()
    cluster = make_cluster(
        brokers=3,
        dirs=2,
        multi_host=True,
        broker_config={"log.dir.failure.timeout.ms": str(FAILURE_TIMEOUT_MS)},
    )
    st = cluster.state
    prefix = st.netns_prefix
    assert prefix is not None and cluster.client_netns == f"{prefix}-n5"
    assert f"{prefix}-sw" in netns.list_namespaces()
    route = subprocess.run(["ip", "route", "show", "10.200.0.0/24"], capture_output=True, text=True).stdout
    assert "blackhole" in route
    # Nodes really are apart: a node's address answers from the client namespace only.
    assert all(n.netns and n.host.startswith("10.200.0.") for n in st.nodes)

    cluster.create_topic(TOPIC, 3, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
    view = cluster.view(probe=False)
    victim = view.partition(TOPIC, 0).leader
    bad = dir_index_of(view, TOPIC, 0, victim)
    name = cluster.broker(victim).name

    cluster.set_link(name, up=False)
    cluster.fail_dir(victim, bad)
    wait_exit(cluster, victim, timeout=FAILURE_TIMEOUT_MS / 1000 + 30)
    reasons = [d.get("reason", "") for d in log_lines(cluster, victim, "broker shutting down")]
    assert any("log.dir.failure.timeout.ms" in r for r in reasons), reasons
    cluster.wait_until(
        lambda v: all(p.leader not in (-1, victim) for p in v.topic(TOPIC)),
        WAIT_S,
        "the partitions to get leaders on the brokers still reachable",
    )
    more_acks(producer)

    cluster.set_link(name, up=True)
    cluster.heal_dir(victim, bad)
    cluster.start_broker(victim)
    cluster.wait_until(_in_sync, WAIT_S, "every partition back to a full ISR")
    more_acks(producer)
    validate_clients(cluster, TOPIC, producer)

    cluster.down()
    assert not [ns for ns in netns.list_namespaces() if ns.startswith(prefix)]
    route = subprocess.run(["ip", "route", "show", "10.200.0.0/24"], capture_output=True, text=True).stdout
    others = [ns for ns in netns.list_namespaces() if ns.endswith("-sw")]
    assert others or "blackhole" not in route
