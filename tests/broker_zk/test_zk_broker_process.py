"""ZooKeeper-mode brokers as real processes on plain dirs against a real ZooKeeper: bad input never
stops them, a deposed controller cannot steer them, and they tell an operator what is wrong."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from protocol.errors import Errors
from protocol.rpc.leader_and_isr import LeaderAndIsrRequest
from protocol.transport import RpcClient
from tests.support.zk_server import ZkServer
from tools.cluster.configs import write_config, zk_broker_props
from tools.cluster.launcher import ProcessSet, free_ports, node_command, run_kraftpy
from tools.cluster.layout import wait_until
from tools.cluster.probe import parse_metrics
from tools.cluster.zk_layout import ZkProcessCluster

pytestmark = [pytest.mark.real, pytest.mark.slow]


@pytest.fixture
def zk_cluster(tmp_path: Path, zk_server: ZkServer) -> Iterator[ZkProcessCluster]:
    procs = ProcessSet(tmp_path / "brokers")
    dirs = {b: [tmp_path / f"b{b}" / "d0", tmp_path / f"b{b}" / "d1"] for b in (1, 2)}
    cluster = ZkProcessCluster.build(tmp_path / "brokers", procs, zk_server.connect, dirs)
    try:
        cluster.start()
        yield cluster
    finally:
        procs.stop_all()


def _zk(zk_server: ZkServer) -> KazooClient:
    zk = KazooClient(hosts=zk_server.connect)
    zk.start(timeout=10)
    return zk


def test_malformed_znodes_are_skipped_and_the_controller_goes_on(
    zk_cluster: ZkProcessCluster, zk_server: ZkServer
) -> None:
    zk = _zk(zk_server)
    try:
        zk.create("/brokers/topics/garbage", b"{not json")
        zk.create("/brokers/topics/future", b'{"version":99,"partitions":{"0":[1]}}')
        zk.create("/log_dir_event_notification/log_dir_event_", b"\xff\xfe", sequence=True)
    finally:
        zk.stop()
        zk.close()
    out = run_kraftpy(
        "topics",
        "create",
        "--bootstrap-server",
        zk_cluster.bootstrap,
        "--topic",
        "fine",
        "--partitions",
        "2",
        "--replication-factor",
        "2",
    )
    assert "Created topic fine." in out.stdout
    controller = zk_cluster.wait_controller()
    log_path = zk_cluster.brokers[controller].proc.log_path  # type: ignore[union-attr]
    # The two children watches fire independently of the topic the create waited on: the bad log dir
    # event may still be in the controller's queue when the create returns.
    for line in ("ignoring an unreadable topic znode", "ignoring an unreadable log dir event"):
        wait_until(
            f"the controller to log {line!r}", lambda line=line: line in log_path.read_text(), timeout=30
        )
    assert all(b.proc is not None and b.proc.alive for b in zk_cluster.brokers.values())


def test_a_stale_controller_epoch_is_refused(zk_cluster: ZkProcessCluster) -> None:
    import asyncio
    import json
    import time
    import urllib.request

    # A broker that is not the controller: on the controller, /healthz shows the epoch it won, which
    # its own broker side learns only when its first request to itself arrives.
    controller = zk_cluster.wait_controller()
    target = next(b for b in sorted(zk_cluster.brokers) if b != controller)

    def known_epoch() -> int:
        try:
            with urllib.request.urlopen(f"{zk_cluster.brokers[target].url}/healthz", timeout=2) as r:
                return int(json.load(r)["controller"]["controller_epoch"])
        except OSError:  # not serving yet (503 while starting)
            return -1

    # Until a controller's first request arrives, the broker knows no epoch that 0 would be older than.
    deadline = time.monotonic() + 60
    while known_epoch() < 1:
        assert time.monotonic() < deadline, f"broker {target} never heard from a controller"
        time.sleep(0.1)

    async def send() -> int:
        client = RpcClient(zk_cluster.brokers[target].url, timeout=10)
        try:
            req = LeaderAndIsrRequest(ControllerId=2, ControllerEpoch=0, BrokerEpoch=-1)
            resp = await client.call("LeaderAndIsr", req)
            return int(resp.ErrorCode)
        finally:
            await client.close()

    assert asyncio.run(send()) == Errors.STALE_CONTROLLER_EPOCH


def test_the_controller_reports_kafkas_gauges(zk_cluster: ZkProcessCluster) -> None:
    controller = zk_cluster.wait_controller()
    for b, node in zk_cluster.brokers.items():
        metrics = parse_metrics(node.metrics())
        active = metrics["kafka_controller_kafkacontroller_activecontrollercount"][0][1]
        assert active == (1.0 if b == controller else 0.0)
        if b == controller:
            assert metrics["kafka_controller_kafkacontroller_zkmigrationstate"][0][1] == 4.0
            assert metrics["kafka_controller_kafkacontroller_offlinepartitionscount"][0][1] == 0.0
        assert metrics["kafka_log_logmanager_offlinelogdirectorycount"][0][1] == 0.0


def test_zookeeper_unreachable_at_start_is_one_clear_line(tmp_path: Path) -> None:
    port, zk_port = free_ports(2)
    props = zk_broker_props(
        broker_id=1, port=port, log_dirs=[tmp_path / "d0"], zookeeper=f"127.0.0.1:{zk_port}"
    )
    props["zookeeper.connection.timeout.ms"] = "1500"
    cfg = write_config(tmp_path / "broker.properties", props)
    out = subprocess.run(node_command("broker", cfg), capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 1
    assert f"cannot connect to ZooKeeper at 127.0.0.1:{zk_port} within 1.5s" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "d0" / "meta.properties").exists()


def test_a_broker_of_another_cluster_is_refused(zk_cluster: ZkProcessCluster, tmp_path: Path) -> None:
    node = zk_cluster.brokers[1]
    meta = node.log_dirs[0] / "meta.properties"
    zk_cluster.stop_broker(1)
    text = meta.read_text()
    meta.write_text(
        "\n".join(
            "cluster.id=SomeOtherClusterIdxxxx" if line.startswith("cluster.id=") else line
            for line in text.splitlines()
        )
        + "\n"
    )
    proc = zk_cluster.launch_broker(1)
    wait_until("the broker to exit", lambda: not proc.alive, 60)
    assert proc.returncode == 1
    assert "doesn't match stored clusterId Some(SomeOtherClusterIdxxxx)" in proc.log_tail(5)
