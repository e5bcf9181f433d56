"""`kraftpy migrate`'s pure parts: each node's config in each phase, each step's precondition, the roll
orders, reading the controller's /healthz; and the CLI's refusals on a recorded cluster whose
processes are not running. No processes, no root; these run everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

import tools.cluster.migrate.plan as plan
from kraftpy.config import load_config
from tools.cli.main import main
from tools.cluster.configs import write_config
from tools.cluster.render import render_text
from tools.cluster.spec import ClusterSpec, NodePlan, plan_nodes
from tools.cluster.state import ClusterState, MigrationRecord, StateFile
from tools.cluster.view import ClusterView, NodeView, PartitionView, build_view

ZK_PORT = 9200


def zk_state(tmp_path: Path, brokers: int = 2) -> ClusterState:
    spec = ClusterSpec(brokers=brokers, dirs=2, zookeeper=True)
    nodes = plan_nodes(spec, tmp_path, [ZK_PORT + i for i in range(brokers + 1)])
    return ClusterState(work_dir=str(tmp_path), cluster_id="abc", spec=spec, nodes=nodes, phase="up")


def with_controllers(st: ClusterState, count: int = 3) -> ClusterState:
    return plan.with_controllers(st, plan.plan_controllers(st, count, [9300 + i for i in range(count)]))


def everything_running(st: ClusterState) -> set[str]:
    return {n.name for n in st.nodes}


def at(st: ClusterState, broker_modes: str, *, migrated: bool = False) -> ClusterState:
    """`st` (with controllers) whose brokers are in the modes given by letters: z, m or k."""
    assert st.migration is not None
    letters = {"z": plan.ZK, "m": plan.MIGRATING, "k": plan.KRAFT}
    st.migration.brokers = {b.node_id: letters[c] for b, c in zip(st.brokers, broker_modes, strict=True)}
    st.migration.migrated = migrated
    return st


def load(props: dict[str, str], path: Path):  # type: ignore[no-untyped-def]
    write_config(path, props)
    return load_config(path)


# ---------------------------------------------------------------------------------- nodes


def test_controllers_are_planned_like_a_kraft_clusters(tmp_path: Path) -> None:
    st = with_controllers(zk_state(tmp_path))
    cs = st.controllers
    assert [(c.name, c.node_id, c.port) for c in cs] == [
        ("controller-3000", 3000, 9300),
        ("controller-3001", 3001, 9301),
        ("controller-3002", 3002, 9302),
    ]
    assert cs[0].metadata_dir == str(tmp_path / "controller-3000" / "meta")
    assert cs[0].config == str(tmp_path / "config" / "controller-3000.properties")
    assert st.migration == MigrationRecord(
        brokers={1: "zk", 2: "zk"}, controllers={3000: "migration", 3001: "migration", 3002: "migration"}
    )
    assert st.zookeeper == f"127.0.0.1:{ZK_PORT}" and not st.kraft_metadata


@pytest.mark.parametrize("count", [0, 10])
def test_a_bad_controller_count_is_refused(tmp_path: Path, count: int) -> None:
    with pytest.raises(plan.MigrationError, match="--controllers must be between 1 and 9"):
        plan.plan_controllers(zk_state(tmp_path), count, list(range(9300, 9310)))


def test_a_port_of_the_cluster_is_not_given_to_a_controller(tmp_path: Path) -> None:
    with pytest.raises(plan.MigrationError, match=f"port {ZK_PORT + 1} is already used"):
        plan.plan_controllers(zk_state(tmp_path), 1, [ZK_PORT + 1])


# ---------------------------------------------------------------------------------- configs


def test_controller_in_migration_mode(tmp_path: Path) -> None:
    st = with_controllers(zk_state(tmp_path))
    props = plan.controller_config(st.controllers[1], st)
    assert props["process.roles"] == "controller" and props["node.id"] == "3001"
    assert props["controller.quorum.voters"] == "3000@127.0.0.1:9300,3001@127.0.0.1:9301,3002@127.0.0.1:9302"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["zookeeper.connect"] == f"127.0.0.1:{ZK_PORT}"
    assert props["zookeeper.metadata.migration.enable"] == "true"
    cfg = load(props, tmp_path / "c.properties")
    assert cfg.is_controller and not cfg.is_broker and cfg.zookeeper_metadata_migration_enable
    assert cfg.listener("CONTROLLER").port == 9301


def test_finalized_controller_has_no_zookeeper(tmp_path: Path) -> None:
    st = with_controllers(zk_state(tmp_path))
    props = plan.controller_config(st.controllers[0], st, plan.CONTROLLER_KRAFT)
    assert "zookeeper.connect" not in props and "zookeeper.metadata.migration.enable" not in props
    assert props["controller.quorum.voters"].startswith("3000@127.0.0.1:9300,")
    assert not load(props, tmp_path / "c.properties").zookeeper_metadata_migration_enable
    # The recorded mode is the default.
    assert st.migration is not None
    st.migration.controllers[3000] = plan.CONTROLLER_KRAFT
    assert plan.controller_config(st.controllers[0], st) == props


def test_broker_in_migration_mode_keeps_its_zookeeper_config(tmp_path: Path) -> None:
    st = with_controllers(zk_state(tmp_path), 1)
    b = st.broker(2)
    before = plan.broker_config(b, st, plan.ZK)
    props = plan.broker_config(b, st, plan.MIGRATING)
    for key in ("broker.id", "zookeeper.connect", "log.dirs", "listeners"):
        assert props[key] == before[key]
    assert "process.roles" not in props and "node.id" not in props
    assert props["zookeeper.metadata.migration.enable"] == "true"
    assert props["controller.quorum.voters"] == "3000@127.0.0.1:9300"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert "CONTROLLER:PLAINTEXT" in props["listener.security.protocol.map"]
    cfg = load(props, tmp_path / "b.properties")
    assert cfg.is_zk_mode and cfg.zookeeper_metadata_migration_enable and cfg.broker_id == 2
    assert cfg.log_dir_list == [d.path for d in b.log_dirs]


def test_broker_in_kraft_mode_keeps_its_id_dirs_and_listener(tmp_path: Path) -> None:
    st = with_controllers(zk_state(tmp_path), 1)
    b = st.broker(1)
    props = plan.broker_config(b, st, plan.KRAFT)
    assert props["process.roles"] == "broker" and props["node.id"] == "1"
    assert "zookeeper.connect" not in props and "zookeeper.metadata.migration.enable" not in props
    assert "metadata.log.dir" not in props
    assert props["listeners"] == f"PLAINTEXT://127.0.0.1:{b.port}"
    cfg = load(props, tmp_path / "b.properties")
    assert cfg.is_broker and not cfg.is_zk_mode and cfg.node_id == 1
    assert cfg.log_dir_list == [d.path for d in b.log_dirs]
    assert cfg.metadata_log_dir_path == b.log_dirs[0].path
    assert cfg.controller_endpoint().port == 9300


def test_broker_configs_need_controllers(tmp_path: Path) -> None:
    st = zk_state(tmp_path)
    assert plan.broker_config(st.broker(1), st, plan.ZK)["broker.id"] == "1"
    with pytest.raises(plan.MigrationError, match="add-controllers"):
        plan.broker_config(st.broker(1), st, plan.MIGRATING)


# ---------------------------------------------------------------------------------- steps


def test_steps_of_a_zookeeper_cluster(tmp_path: Path) -> None:
    st = zk_state(tmp_path)
    assert plan.pending_steps(st) == list(plan.STEPS)
    plan.check_step(plan.ADD_CONTROLLERS, st, everything_running(st))
    for step in plan.STEPS[1:]:
        with pytest.raises(plan.MigrationError, match="run `kraftpy migrate --step add-controllers` first"):
            plan.check_step(step, st, everything_running(st))


@pytest.mark.parametrize(
    ("modes", "migrated", "runnable", "phase"),
    [
        ("zz", False, plan.ROLL_BROKERS_MIGRATION, "controllers added, brokers in ZooKeeper mode"),
        ("mz", False, plan.ROLL_BROKERS_MIGRATION, "rolling the brokers into migration mode"),
        ("mm", False, plan.WAIT_MIGRATION, "brokers in migration mode, waiting for the metadata copy"),
        ("mm", True, plan.ROLL_BROKERS_KRAFT, "dual write: metadata copied, brokers in migration mode"),
        ("km", True, plan.ROLL_BROKERS_KRAFT, "rolling the brokers into KRaft mode"),
        ("kk", True, plan.FINALIZE, "every broker in KRaft mode; controllers still in migration mode"),
    ],
)
def test_each_phase_allows_one_step(
    tmp_path: Path, modes: str, migrated: bool, runnable: str, phase: str
) -> None:
    st = at(with_controllers(zk_state(tmp_path)), modes, migrated=migrated)
    assert plan.phase(st) == phase
    assert plan.pending_steps(st)[0] == runnable
    for step in plan.STEPS:
        if step == runnable:
            plan.check_step(step, st, everything_running(st))
        else:
            with pytest.raises(plan.MigrationError, match=r"already done|cannot run yet"):
                plan.check_step(step, st, everything_running(st))


def test_finalize_is_refused_while_a_broker_is_not_a_kraft_broker(tmp_path: Path) -> None:
    st = at(with_controllers(zk_state(tmp_path)), "km", migrated=True)
    with pytest.raises(plan.MigrationError) as e:
        plan.check_step(plan.FINALIZE, st, everything_running(st))
    assert str(e.value) == (
        "step finalize cannot run yet (phase: rolling the brokers into KRaft mode); "
        "run `kraftpy migrate --step roll-brokers-kraft` first"
    )


def test_a_finalized_migration_has_no_step_left(tmp_path: Path) -> None:
    st = at(with_controllers(zk_state(tmp_path)), "kk", migrated=True)
    assert st.migration is not None
    st.migration.controllers = dict.fromkeys(st.migration.controllers, plan.CONTROLLER_KRAFT)
    assert plan.phase(st) == "finalizing: rolling the controllers without the migration flag"
    st.migration.finalized = True
    assert plan.pending_steps(st) == []
    assert plan.phase(st) == "migrated to KRaft (POST_MIGRATION)"
    with pytest.raises(plan.MigrationError, match="step finalize is already done"):
        plan.check_step(plan.FINALIZE, st, everything_running(st))


def test_every_node_must_be_running(tmp_path: Path) -> None:
    st = at(with_controllers(zk_state(tmp_path)), "mm")
    with pytest.raises(plan.MigrationError, match=r"broker-2 is not running; .*cluster start 2"):
        plan.check_step(plan.WAIT_MIGRATION, st, everything_running(st) - {"broker-2"})


def test_a_kraft_cluster_has_nothing_to_migrate(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=1, dirs=1, controllers=1)
    st = ClusterState(
        work_dir=str(tmp_path), cluster_id="x", spec=spec, nodes=plan_nodes(spec, tmp_path, [1, 2])
    )
    with pytest.raises(plan.MigrationError, match="born in KRaft mode"):
        plan.check_step(plan.ADD_CONTROLLERS, st, everything_running(st))
    assert plan.phase(st) == "KRaft cluster (born in KRaft mode)"


def test_an_unknown_step_is_refused(tmp_path: Path) -> None:
    st = zk_state(tmp_path)
    with pytest.raises(plan.MigrationError, match="unknown step 'rollout'"):
        plan.check_step("rollout", st, everything_running(st))


# ---------------------------------------------------------------------------------- orders


def test_brokers_roll_by_id_with_the_zookeeper_controller_last(tmp_path: Path) -> None:
    st = at(with_controllers(zk_state(tmp_path, brokers=4), 1), "zmzz")
    order = plan.broker_roll_order(st, plan.MIGRATING, zk_controller=1)
    assert [b.node_id for b in order] == [3, 4, 1]
    assert [b.node_id for b in plan.broker_roll_order(st, plan.MIGRATING, None)] == [1, 3, 4]


def test_controllers_roll_standbys_first_the_active_last(tmp_path: Path) -> None:
    cs = with_controllers(zk_state(tmp_path)).controllers
    assert [c.node_id for c in plan.controller_roll_order(cs, 3001)] == [3000, 3002, 3001]
    assert [c.node_id for c in plan.controller_roll_order(cs[:1], 3000)] == [3000]


# ---------------------------------------------------------------------------------- reading the cluster


def test_migration_status_from_the_controllers_healthz() -> None:
    s = plan.migration_status({"zk_migration_state": "MIGRATION", "migration_driver_state": "DUAL_WRITE"})
    assert s.copied and not s.finalized and s.describe() == "MIGRATION, driver DUAL_WRITE"
    s = plan.migration_status(
        {"zk_migration_state": "MIGRATION", "migration_driver_state": "SYNC_KRAFT_TO_ZK"}
    )
    assert not s.copied
    s = plan.migration_status({"zk_migration_state": "POST_MIGRATION", "migration_driver_state": None})
    assert s.finalized and s.describe() == "POST_MIGRATION, driver -"
    for body in ({"active": True}, None, "text"):
        s = plan.migration_status(body)  # type: ignore[arg-type]
        assert not s.reported and not s.copied and s.describe() == "not reported by the controller"


def test_cluster_id_from_zookeeper() -> None:
    assert plan.parse_cluster_id(b'{"version":"1","id":"n1BwszK6ShKyK9U3jQkfiA"}') == "n1BwszK6ShKyK9U3jQkfiA"
    for bad in (b"", b"{}", b"not json", b'{"id": 3}', None):
        with pytest.raises(plan.MigrationError, match="/cluster/id holds no cluster id"):
            plan.parse_cluster_id(bad)


def _view(partitions: list[PartitionView], registered: bool = True) -> ClusterView:
    broker = NodeView("broker-1", 1, "broker", "a", 1, "running", True, registered=registered)
    ctl = NodeView("zookeeper", 0, "zookeeper", "z", 2, "running", True)
    return ClusterView(0.0, "/w", "c", "local", ctl, (broker,), (), tuple(partitions))


def test_replicas_in_sync_wants_every_hosted_partition_in_the_isr() -> None:
    p0 = PartitionView("t", 0, 1, 3, (1, 2), (1, 2), (), ())
    p1 = PartitionView("t", 1, 2, 3, (2, 1), (2,), (), ())
    p2 = PartitionView("t", 2, 2, 3, (2, 3), (2,), (), ())
    assert plan.replicas_in_sync(_view([p0, p2]), 1)
    assert not plan.replicas_in_sync(_view([p0, p1]), 1)
    assert not plan.replicas_in_sync(_view([p0], registered=False), 1)


def test_a_broker_is_gone_once_unlisted_or_no_longer_unfenced() -> None:
    b = NodeView("broker-1", 1, "broker", "a", 1, "running", True, registered=True, state="unfenced")
    ctl = _view([]).controller
    assert not plan.broker_gone(ClusterView(0.0, "/w", "c", "local", ctl, (b,), (), ()), 1)
    for state in ("fenced", "controlled_shutdown"):
        fenced = NodeView("broker-1", 1, "broker", "a", 1, "running", True, registered=True, state=state)
        assert plan.broker_gone(ClusterView(0.0, "/w", "c", "local", ctl, (fenced,), (), ()), 1)
    assert plan.broker_gone(_view([], registered=False), 1)
    assert plan.broker_gone(ClusterView(0.0, "/w", "c", "local", ctl, (), (), ()), 1)


def test_kraft_broker_ready_reads_its_healthz() -> None:
    assert plan.kraft_broker_ready({"registered": True, "fenced": False, "broker_state": "RUNNING"})
    assert not plan.kraft_broker_ready({"registered": True, "fenced": True})
    assert not plan.kraft_broker_ready({"mode": "zookeeper", "registered": True, "fenced": False})
    assert not plan.kraft_broker_ready(None)


def test_status_shows_each_nodes_part_and_the_migration_state(tmp_path: Path) -> None:
    st = at(with_controllers(zk_state(tmp_path), 1), "km", migrated=True)
    phases = plan.node_phases(st)
    assert phases == {
        0: "ZooKeeper",
        1: "KRaft broker",
        2: "migrating ZK broker",
        3000: "controller (migration mode)",
    }
    processes = {n.name: (1, "running") for n in st.nodes}
    health = {
        "controller-3000": {
            "status": 200,
            "body": {
                "active": True,
                "zk_migration_state": "MIGRATION",
                "migration_driver_state": "DUAL_WRITE",
            },
        }
    }
    view = build_view(
        work_dir=str(tmp_path),
        cluster_id="abc",
        mode="local, ZooKeeper, migrating to KRaft",
        nodes=st.nodes,
        processes=processes,
        health=health,
        image=None,
        directory_ids={},
        faults={},
        usage={},
        migration=(plan.phase(st), phases),
    )
    assert view.migration is not None
    assert (view.migration.state, view.migration.driver) == ("MIGRATION", "DUAL_WRITE")
    text = render_text(view)
    assert (
        "ZooKeeper to KRaft migration: rolling the brokers into KRaft mode; migration state MIGRATION" in text
    )
    assert "migrating ZK broker" in text and "KRaft broker" in text
    assert view.to_json()["migration"]["node_phases"][1] == "KRaft broker"


def test_migration_record_round_trips(tmp_path: Path) -> None:
    st = at(with_controllers(zk_state(tmp_path), 1), "km", migrated=True)
    store = StateFile(tmp_path)
    with store.locked():
        store.save(st)
    again = store.load()
    assert again.migration == st.migration and again.kraft_metadata
    assert [n.name for n in again.controllers] == ["controller-3000"]
    assert again.to_json() == st.to_json()


# ---------------------------------------------------------------------------------- the CLI


def _recorded(tmp_path: Path, st: ClusterState) -> Path:
    store = StateFile(tmp_path)
    with store.locked():
        store.save(st)
    return tmp_path


def test_cli_refuses_a_step_out_of_order_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = _recorded(tmp_path, zk_state(tmp_path))
    before = (work / "cluster.json").read_text()
    assert main(["migrate", "--work-dir", str(work), "--step", "finalize"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("kraftpy migrate: step finalize cannot run yet (phase: ZooKeeper mode)")
    assert (work / "cluster.json").read_text() == before


def test_cli_refuses_when_a_node_is_down(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = _recorded(tmp_path, zk_state(tmp_path))
    assert main(["migrate", "--work-dir", str(work), "--step", "add-controllers"]) == 2
    assert capsys.readouterr().err == (
        "kraftpy migrate: zookeeper is not running; start it first (`kraftpy cluster start 0`)\n"
    )
    assert main(["migrate", "--work-dir", str(work)]) == 2
    assert "zookeeper is not running" in capsys.readouterr().err


def test_cli_refuses_controllers_with_a_later_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = _recorded(tmp_path, zk_state(tmp_path))
    assert main(["migrate", "--work-dir", str(work), "--step", "finalize", "--controllers", "1"]) == 2
    assert "--controllers goes with the add-controllers step" in capsys.readouterr().err


def test_cli_without_a_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--work-dir", str(tmp_path / "none"), "--status"]) == 2
    assert "no cluster in" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_cli_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    st = at(with_controllers(zk_state(tmp_path), 1), "mm")
    work = _recorded(tmp_path, st)
    assert main(["migrate", "--work-dir", str(work), "--status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"cluster {tmp_path}: brokers in migration mode, waiting for the metadata copy"
    assert out[1] == "migration state: unknown (no active controller answers)"
    assert [line.split()[:2] for line in out[2:6]] == [
        ["zookeeper", "0"],
        ["broker", "1"],
        ["broker", "2"],
        ["controller", "3000"],
    ]
    assert "migrating ZK broker" in out[3] and "not started" in out[3]
    assert out[-1] == "next step: wait-migration"


def test_node_plan_of_a_controller_round_trips(tmp_path: Path) -> None:
    c = with_controllers(zk_state(tmp_path), 1).controllers[0]
    assert NodePlan.from_json(c.to_json()) == c


def test_a_rollback_is_possible_only_before_finalizing_and_before_kraft_brokers(tmp_path: Path) -> None:
    st = zk_state(tmp_path)
    with pytest.raises(plan.MigrationError, match="no migration has started"):
        plan.check_rollback(st, everything_running(st))
    st = at(with_controllers(st), "mm", migrated=True)
    plan.check_rollback(st, everything_running(st) - {c.name for c in st.controllers})
    with pytest.raises(plan.MigrationError, match="broker-1 is not running"):
        plan.check_rollback(st, everything_running(st) - {"broker-1"})
    at(st, "mk", migrated=True)
    with pytest.raises(plan.MigrationError, match=r"brokers \[2\] already run in KRaft mode"):
        plan.check_rollback(st, everything_running(st))
    assert st.migration is not None
    st.migration.finalized = True
    with pytest.raises(plan.MigrationError, match="finalized"):
        plan.check_rollback(st, everything_running(st))
    back = plan.without_controllers(st)
    assert back.migration is None and not back.controllers and len(back.brokers) == 2


def test_finalize_waits_out_the_new_controllers_session_and_one_heartbeat() -> None:
    # The controllers' own session timeout counts (they fence); the brokers' heartbeat interval
    # is how soon a fencing at its end shows. Kafka's defaults where a config leaves them out.
    fast = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
    assert plan.sessions_settle_s(fast, fast) == 3.5
    assert plan.sessions_settle_s({"broker.session.timeout.ms": "7000"}, fast) == 7.5
    assert plan.sessions_settle_s({}, {}) == 11.0
