"""The local cluster's pure parts: planning, configs, state, the exactly-once check, metrics parsing,
view diffs. No processes, no root; these run everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftpy.config import load_config
from tools.cluster.configs import node_properties, write_config
from tools.cluster.events import diff_views
from tools.cluster.probe import parse_metrics
from tools.cluster.spec import ClusterSpec, client_netns, plan_nodes
from tools.cluster.state import ClusterState, ProcessRecord, StateFile
from tools.cluster.view import ClusterView, DirView, NodeView, PartitionView
from tools.cluster.workload import AckLog, AckTail, decode_seq, encode_value, read_acks, verify


def test_plan_local_cluster(tmp_path: Path) -> None:
    nodes = plan_nodes(ClusterSpec(brokers=3, dirs=3, controllers=1), tmp_path, [9000, 9001, 9002, 9003])
    assert [n.name for n in nodes] == ["controller-3000", "broker-1", "broker-2", "broker-3"]
    assert [n.port for n in nodes] == [9000, 9001, 9002, 9003]
    assert all(n.host == "127.0.0.1" and n.netns is None for n in nodes)
    b1 = nodes[1]
    assert [d.path for d in b1.log_dirs] == [str(tmp_path / "broker-1" / f"logs-{i}") for i in range(3)]
    assert b1.metadata_dir == str(tmp_path / "broker-1" / "meta")
    assert b1.metadata_dir not in [d.path for d in b1.log_dirs]


def test_plan_real_disks_use_a_subdir_of_each_mount(tmp_path: Path) -> None:
    spec = ClusterSpec(
        brokers=2, dirs=2, controllers=1, real_disks=True, fs=("ext4", "xfs"), metadata_disks=True
    )
    nodes = plan_nodes(spec, tmp_path, [1, 2, 3])
    d = nodes[2].log_dirs[1]
    assert d.disk == "b2d1" and d.fs == "xfs"
    assert d.path == str(Path(d.mountpoint or "") / "data")
    meta = nodes[2].metadata_disk
    assert meta is not None and nodes[2].metadata_dir == meta.path and meta.path.endswith("/data")


def test_plan_multi_host_gives_every_node_its_namespace_and_address(tmp_path: Path) -> None:
    nodes = plan_nodes(ClusterSpec(brokers=3, controllers=1, multi_host=True), tmp_path, netns_prefix="kpabc")
    assert [(n.netns, n.host, n.port) for n in nodes] == [
        ("kpabc-n1", "10.200.0.11", 9093),
        ("kpabc-n2", "10.200.0.12", 9091),
        ("kpabc-n3", "10.200.0.13", 9091),
        ("kpabc-n4", "10.200.0.14", 9091),
    ]
    assert [n.host_index for n in nodes] == [1, 2, 3, 4]
    # each broker's Kafka-protocol listener on Kafka's usual port, its HTTP RPC beside it
    assert [n.kafka_bootstrap for n in nodes] == [
        None,
        "10.200.0.12:9092",
        "10.200.0.13:9092",
        "10.200.0.14:9092",
    ]


def test_plan_a_quorum_of_three_controllers(tmp_path: Path) -> None:
    nodes = plan_nodes(ClusterSpec(brokers=2, dirs=1), tmp_path, [9000, 9001, 9002, 9003, 9004])
    assert [(n.name, n.node_id, n.port) for n in nodes] == [
        ("controller-3000", 3000, 9000),
        ("controller-3001", 3001, 9001),
        ("controller-3002", 3002, 9002),
        ("broker-1", 1, 9003),
        ("broker-2", 2, 9004),
    ]
    assert len({n.metadata_dir for n in nodes}) == 5
    spec = ClusterSpec(brokers=2, multi_host=True)
    hosts = plan_nodes(spec, tmp_path, netns_prefix="kpabc")
    assert [(n.netns, n.host_index) for n in hosts] == [(f"kpabc-n{i}", i) for i in range(1, 6)]
    assert client_netns("kpabc", spec) == "kpabc-n6"


def test_every_node_names_every_voter(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=2, dirs=1)
    nodes = plan_nodes(spec, tmp_path, [9100, 9101, 9102, 9103, 9104])
    for n in nodes:
        write_config(n.config, node_properties(n, nodes, spec), n.name)
    voters = "3000@127.0.0.1:9100,3001@127.0.0.1:9101,3002@127.0.0.1:9102"
    for n in nodes:
        cfg = load_config(n.config)
        assert ",".join(cfg.controller_quorum_voters) == voters, n.name
    assert (
        ClusterSpec.from_json({"brokers": 1, "dirs": 1, "real_disks": False, "multi_host": False}).controllers
        == 1
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"brokers": 0},
        {"dirs": 0},
        {"controllers": 0},
        {"controllers": 10},
        {"restart": "always"},
        {"fs": ("zfs",)},
    ],
)
def test_bad_spec_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ClusterSpec(**kwargs)  # type: ignore[arg-type]


def test_generated_configs_are_valid_kafka_configs(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=2, dirs=3, controllers=1, broker_config={"log.dir.failure.timeout.ms": "3000"})
    nodes = plan_nodes(spec, tmp_path, [9100, 9101, 9102])
    for n in nodes:
        write_config(n.config, node_properties(n, nodes, spec), n.name)
    ctl = load_config(nodes[0].config)
    assert ctl.is_controller and not ctl.is_broker and ctl.node_id == 3000
    assert ctl.listener("CONTROLLER").port == 9100
    b = load_config(nodes[2].config)
    assert b.is_broker and b.node_id == 2
    assert b.log_dir_list == [d.path for d in nodes[2].log_dirs]
    assert b.metadata_log_dir == nodes[2].metadata_dir
    assert b.controller_endpoint().port == 9100
    assert b.log_dir_failure_timeout_ms == 3000
    assert b.min_insync_replicas == 2 and b.default_replication_factor == 2


def test_state_round_trip(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=1, dirs=2, controllers=1)
    nodes = plan_nodes(spec, tmp_path, [1, 2])
    store = StateFile(tmp_path)
    state = ClusterState(work_dir=str(tmp_path), cluster_id="abc", spec=spec, nodes=nodes)
    state.processes["broker-1"] = ProcessRecord(pid=42, start_time=7, started_at=1.5, desired="stopped")
    state.directory_ids = {nodes[1].log_dirs[0].path: "dirid"}
    with store.locked():
        store.save(state)
    again = store.load()
    assert again.to_json() == state.to_json()
    assert again.broker(1).log_dirs == nodes[1].log_dirs
    assert json.loads((tmp_path / "cluster.json").read_text())["version"] == 1


def test_sequence_numbers_round_trip() -> None:
    assert decode_seq(encode_value(123456, 100)) == 123456
    assert len(encode_value(5, 100)) == 100
    assert decode_seq(b"garbage") is None and decode_seq(None) is None


def test_exactly_once_check_catches_loss_duplicates_and_moves() -> None:
    acks = AckLog(acked={1: (0, 10, 0), 2: (0, 11, 0), 3: (1, 5, 0)}, failed={4: "REQUEST_TIMED_OUT"})
    good = [(0, 10, 1), (0, 11, 2), (1, 5, 3), (1, 6, 4)]  # 4 was written though its ack failed: fine
    v = verify(acks, good)
    assert v.ok, v.describe()
    assert "exactly once" in v.describe()
    lost = verify(acks, [(0, 10, 1), (1, 5, 3)])
    assert not lost.ok and lost.missing == [2]
    twice = verify(acks, [*good, (1, 7, 4)])
    assert not twice.ok and twice.duplicates == [4]
    moved = verify(acks, [(0, 10, 1), (0, 12, 2), (1, 5, 3)])
    assert not moved.ok and moved.misplaced == [2]


def test_ack_file_reading_ignores_a_line_being_written(tmp_path: Path) -> None:
    f = tmp_path / "acks.txt"
    f.write_text("1 0 10 1000\nF 2 REQUEST_TIMED_OUT\n3 1 5 10")
    log = read_acks(f)
    assert log.acked == {1: (0, 10, 1000)} and log.failed == {2: "REQUEST_TIMED_OUT"}
    tail = AckTail(f)
    tail.poll()
    assert (tail.acked, tail.failed, tail.last_ack_ms) == (1, 1, 1000)
    with open(f, "a") as out:
        out.write('02\n# done {"sent": 3}\n')
    tail.poll()
    assert tail.acked == 2 and tail.last_ack_ms == 1002 and tail.done == {"sent": 3}


def test_parse_prometheus_text() -> None:
    text = (
        "# HELP x y\n"
        "kafka_log_logmanager_offlinelogdirectorycount 1.0\n"
        'kafka_log_logmanager_logdirectoryoffline{directory_id="a-b",logDirectory="/x/y, z"} 1.0\n'
    )
    m = parse_metrics(text)
    assert m["kafka_log_logmanager_offlinelogdirectorycount"] == [({}, 1.0)]
    assert m["kafka_log_logmanager_logdirectoryoffline"] == [
        ({"directory_id": "a-b", "logDirectory": "/x/y, z"}, 1.0)
    ]


def _view(leader: int, isr: tuple[int, ...], offline: tuple[int, ...], dir_status: str) -> ClusterView:
    node = NodeView("broker-1", 1, "broker", "h:1", 1, "running", True, state="unfenced")
    ctl = NodeView("controller-3000", 3000, "controller", "h:0", 2, "running", True)
    d = DirView(1, 0, "/d", "id", "b1/d0", dir_status, None, 0, None, None)
    p = PartitionView("t", 0, leader, 1, (1, 2), isr, offline, ("b1/d0", "b2/d0"))
    return ClusterView(0.0, "/w", "c", "local", ctl, (node,), (d,), (p,))


def test_view_diff_names_each_change() -> None:
    before = _view(1, (1, 2), (), "online")
    after = _view(2, (2,), (1,), "offline")
    events = diff_views(before, after)
    assert "dir b1/d0: online -> offline in the controller's metadata" in events
    assert "t-0: leader 1 -> 2 (epoch 1)" in events
    assert "t-0: ISR [1,2] -> [2]" in events
    assert "t-0: offline replicas [] -> [1]" in events
    assert diff_views(None, after) == [] and diff_views(after, after) == []


def test_base_port_gives_consecutive_ports_and_refuses_taken_ones() -> None:
    import socket

    from tools.cluster.launcher import free_port, ports_from

    for _ in range(20):  # a free port may be taken again by someone else before the check
        base = free_port()
        try:
            assert ports_from(base, 1) == [base]
            break
        except ValueError:
            continue
    else:
        raise AssertionError("no free port stayed free long enough to check it")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {taken} .* is in use"):
            ports_from(taken, 1)
    with pytest.raises(ValueError, match="between 1024 and 65535"):
        ports_from(80, 3)
    assert ClusterSpec.from_json({**ClusterSpec(base_port=19000).to_json()}).base_port == 19000


def test_a_taken_base_port_creates_nothing(tmp_path: Path) -> None:
    import socket

    from tools.cluster.cluster import LocalCluster
    from tools.cluster.errors import ClusterError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        with pytest.raises(ClusterError, match="in use"):
            LocalCluster.up(tmp_path / "c", ClusterSpec(brokers=1, dirs=1, controllers=1, base_port=taken))
    assert not (tmp_path / "c").exists()


def test_client_commands_find_the_clusters_brokers_from_the_work_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.cli.errors import UserError
    from tools.client.cli_support import cluster_bootstrap

    monkeypatch.setenv("KRAFTPY_WORK", str(tmp_path / "none"))
    with pytest.raises(UserError, match="--bootstrap-server is needed"):
        cluster_bootstrap()
    spec = ClusterSpec(brokers=2, dirs=1, controllers=1)
    nodes = plan_nodes(spec, tmp_path, [9300, 9301, 9302])
    with StateFile(tmp_path).locked():
        StateFile(tmp_path).save(ClusterState(work_dir=str(tmp_path), cluster_id="c", spec=spec, nodes=nodes))
    monkeypatch.setenv("KRAFTPY_WORK", str(tmp_path))
    assert cluster_bootstrap() == "127.0.0.1:9301,127.0.0.1:9302"
