"""The steps of a ZooKeeper to KRaft migration (KIP-866) of a local cluster, as pure decisions.

Kafka's documented procedure, and its system test (zookeeper_migration_test.py), in five steps:

    add-controllers          KRaft controllers with zookeeper.connect and the migration flag
    roll-brokers-migration   each ZooKeeper broker restarted with the flag and the quorum's address
    wait-migration           the active controller reports MIGRATION, its driver DUAL_WRITE
    roll-brokers-kraft       each broker restarted as a KRaft broker (node.id = broker.id)
    finalize                 the controllers rolled without the flag: POST_MIGRATION

Which config each node gets in each phase, when each step may run and in which order nodes are
rolled are decided here from the recorded `ClusterState`; `runner` does the I/O.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.cluster.configs import (
    controller_properties,
    migrated_broker_properties,
    migrating_zk_broker_properties,
    migration_controller_properties,
    quorum_voters,
    zk_broker_properties,
)
from tools.cluster.errors import ClusterError
from tools.cluster.spec import CONTROLLER_ID, MAX_CONTROLLERS, NodePlan
from tools.cluster.state import ClusterState, MigrationRecord
from tools.cluster.view import ClusterView

ADD_CONTROLLERS = "add-controllers"
ROLL_BROKERS_MIGRATION = "roll-brokers-migration"
WAIT_MIGRATION = "wait-migration"
ROLL_BROKERS_KRAFT = "roll-brokers-kraft"
FINALIZE = "finalize"
STEPS: tuple[str, ...] = (
    ADD_CONTROLLERS,
    ROLL_BROKERS_MIGRATION,
    WAIT_MIGRATION,
    ROLL_BROKERS_KRAFT,
    FINALIZE,
)

# Broker modes, as MigrationRecord.brokers holds them.
ZK = "zk"
MIGRATING = "migrating"
KRAFT = "kraft"
# Controller modes, as MigrationRecord.controllers holds them.
CONTROLLER_MIGRATION = "migration"
CONTROLLER_KRAFT = "kraft"

DEFAULT_CONTROLLERS = 3
# The controllers' quorum check counts ZkMigrationReady registrations only from 3.7-IV0 on; below
# it the migration could start before every controller is able to run it.
MIGRATION_RELEASE = "3.9-IV0"

# zk_migration_state values of the controller's /healthz (Kafka's ZkMigrationState).
MIGRATION_STATES = ("NONE", "PRE_MIGRATION", "MIGRATION", "POST_MIGRATION")


class MigrationError(ClusterError):
    """A step cannot run in the cluster's present phase; the message says why and what to run."""


@dataclass(frozen=True)
class MigrationStatus:
    """What the active controller's /healthz says of the migration."""

    state: str | None  # zk_migration_state
    driver: str | None  # migration_driver_state; None when the driver is not running
    reported: bool  # the body carried zk_migration_state at all

    @property
    def copied(self) -> bool:
        """The copy of ZooKeeper's metadata committed and every write is mirrored back to ZooKeeper."""
        return self.state == "MIGRATION" and self.driver == "DUAL_WRITE"

    @property
    def finalized(self) -> bool:
        return self.state == "POST_MIGRATION"

    def describe(self) -> str:
        if not self.reported:
            return "not reported by the controller"
        return f"{self.state}, driver {self.driver or '-'}"


def migration_status(body: Mapping[str, Any] | None) -> MigrationStatus:
    """The migration keys of a controller's /healthz body; absent keys read as not reported."""
    if not isinstance(body, Mapping) or "zk_migration_state" not in body:
        return MigrationStatus(None, None, False)
    state = body.get("zk_migration_state")
    driver = body.get("migration_driver_state")
    return MigrationStatus(
        str(state) if state is not None else None, str(driver) if driver is not None else None, True
    )


# ---------------------------------------------------------------------------------- phases


def _modes(st: ClusterState) -> set[str]:
    m = st.migration
    return {m.brokers.get(b.node_id, ZK) for b in st.brokers} if m is not None else {ZK}


def step_done(step: str, st: ClusterState) -> bool:
    m = st.migration
    if m is None:
        return False
    if step == ADD_CONTROLLERS:
        return True
    if step == ROLL_BROKERS_MIGRATION:
        return ZK not in _modes(st)
    if step == WAIT_MIGRATION:
        return m.migrated
    if step == ROLL_BROKERS_KRAFT:
        return _modes(st) == {KRAFT}
    if step == FINALIZE:
        return m.finalized
    raise MigrationError(f"unknown step {step!r}; the steps are {', '.join(STEPS)}")


def phase(st: ClusterState) -> str:
    """One phrase for where the migration stands."""
    m = st.migration
    if st.zookeeper is None:
        return "KRaft cluster (born in KRaft mode)"
    if m is None:
        return "ZooKeeper mode"
    if m.finalized:
        return "migrated to KRaft (POST_MIGRATION)"
    modes = _modes(st)
    if CONTROLLER_KRAFT in m.controllers.values():
        return "finalizing: rolling the controllers without the migration flag"
    if modes == {KRAFT}:
        return "every broker in KRaft mode; controllers still in migration mode"
    if KRAFT in modes:
        return "rolling the brokers into KRaft mode"
    if m.migrated:
        return "dual write: metadata copied, brokers in migration mode"
    if modes == {MIGRATING}:
        return "brokers in migration mode, waiting for the metadata copy"
    if MIGRATING in modes:
        return "rolling the brokers into migration mode"
    return "controllers added, brokers in ZooKeeper mode"


def pending_steps(st: ClusterState) -> list[str]:
    return [s for s in STEPS if not step_done(s, st)]


def check_step(step: str, st: ClusterState, running: Collection[str]) -> None:
    """MigrationError unless `step` may run now; `running`: names of the nodes whose process runs."""
    if step not in STEPS:
        raise MigrationError(f"unknown step {step!r}; the steps are {', '.join(STEPS)}")
    if st.zookeeper is None:
        raise MigrationError("this cluster was born in KRaft mode: there is nothing to migrate")
    if st.spec.multi_host:
        raise MigrationError("migrating a multi-host cluster is not supported; use a local one")
    where = f"(phase: {phase(st)})"
    if step_done(step, st):
        raise MigrationError(f"step {step} is already done {where}")
    index = STEPS.index(step)
    if index > 0 and not step_done(STEPS[index - 1], st):
        before = next(s for s in STEPS if not step_done(s, st))
        raise MigrationError(
            f"step {step} cannot run yet {where}; run `kraftpy migrate --step {before}` first"
        )
    for n in st.nodes:
        if n.name not in running:
            raise MigrationError(
                f"{n.name} is not running; start it first (`kraftpy cluster start {n.node_id}`)"
            )


def check_rollback(st: ClusterState, running: Collection[str]) -> None:
    """MigrationError unless the migration can go back to ZooKeeper mode (KIP-866 "Rollback to ZK"):
    only before the controllers are rolled without the migration flag, since from then on nothing
    writes ZooKeeper any more, and (here) only while no broker runs in KRaft mode yet."""
    if st.zookeeper is None:
        raise MigrationError("this cluster was born in KRaft mode: there is no ZooKeeper to go back to")
    m = st.migration
    if m is None:
        raise MigrationError("no migration has started: the cluster runs in ZooKeeper mode")
    if m.finalized or CONTROLLER_KRAFT in m.controllers.values():
        raise MigrationError(
            "the migration is finalized (or being finalized): ZooKeeper is no longer written, so there is no "
            "way back to ZooKeeper mode"
        )
    kraft = sorted(b for b, mode in m.brokers.items() if mode == KRAFT)
    if kraft:
        raise MigrationError(
            f"brokers {kraft} already run in KRaft mode; rolling back from there is not supported here: "
            "finish the migration, or restore those brokers' ZooKeeper-mode configs by hand first"
        )
    for n in st.nodes:
        if n.role != "controller" and n.name not in running:
            raise MigrationError(
                f"{n.name} is not running; start it first (`kraftpy cluster start {n.node_id}`)"
            )


def without_controllers(st: ClusterState) -> ClusterState:
    """`st` as a ZooKeeper-mode cluster again: no controllers, no migration record."""
    st.nodes = [n for n in st.nodes if n.role != "controller"]
    st.migration = None
    return st


# ---------------------------------------------------------------------------------- nodes and configs


def plan_controllers(st: ClusterState, count: int, ports: Sequence[int]) -> list[NodePlan]:
    """Controllers 3000.. on 127.0.0.1:`ports`, laid out as `kraftpy cluster up` lays out a KRaft cluster's."""
    if not 1 <= count <= MAX_CONTROLLERS:
        raise MigrationError(f"--controllers must be between 1 and {MAX_CONTROLLERS}, not {count}")
    if len(ports) < count:
        raise MigrationError(f"need {count} ports for {count} controllers, got {len(ports)}")
    taken = {n.port for n in st.nodes}
    clash = sorted(taken & set(ports[:count]))
    if clash:
        raise MigrationError(f"port {clash[0]} is already used by a node of this cluster")
    zk = st.zookeeper_node
    host = zk.host if zk is not None else "127.0.0.1"
    work = Path(st.work_dir)
    nodes = []
    for i in range(count):
        node_id = CONTROLLER_ID + i
        name = f"controller-{node_id}"
        nodes.append(
            NodePlan(
                name=name,
                node_id=node_id,
                role="controller",
                host=host,
                port=ports[i],
                config=str(work / "config" / f"{name}.properties"),
                log=str(work / "logs" / f"{name}.log"),
                metadata_dir=str(work / name / "meta"),
            )
        )
    return nodes


def with_controllers(st: ClusterState, controllers: Sequence[NodePlan]) -> ClusterState:
    """`st` with `controllers` added, each in migration mode, every broker still a ZooKeeper broker."""
    if st.controllers:
        raise MigrationError("this cluster already has controllers")
    st.nodes = [*st.nodes, *controllers]
    st.migration = MigrationRecord(
        brokers={b.node_id: ZK for b in st.brokers},
        controllers={c.node_id: CONTROLLER_MIGRATION for c in controllers},
    )
    return st


def _record(st: ClusterState) -> MigrationRecord:
    if st.migration is None:
        raise MigrationError("no controllers yet; run `kraftpy migrate --step add-controllers` first")
    return st.migration


def _connect(st: ClusterState) -> str:
    if st.zookeeper is None:
        raise MigrationError("this cluster was born in KRaft mode: there is nothing to migrate")
    return st.zookeeper


def controller_config(node: NodePlan, st: ClusterState, mode: str | None = None) -> dict[str, str]:
    """The controller's properties in `mode` (default: its recorded one)."""
    mode = mode or _record(st).controllers.get(node.node_id, CONTROLLER_MIGRATION)
    voters = quorum_voters(st.nodes)
    if mode == CONTROLLER_MIGRATION:
        return migration_controller_properties(node, voters, _connect(st), st.spec)
    if mode == CONTROLLER_KRAFT:
        return controller_properties(node, voters, st.spec)
    raise MigrationError(f"unknown controller mode {mode!r}")


def broker_config(node: NodePlan, st: ClusterState, mode: str) -> dict[str, str]:
    """The broker's properties in `mode`: zk, migrating or kraft."""
    if mode == ZK:
        return zk_broker_properties(node, _connect(st), st.spec)
    voters = quorum_voters(st.nodes)
    if not st.controllers:
        raise MigrationError("no controllers yet; run `kraftpy migrate --step add-controllers` first")
    if mode == MIGRATING:
        return migrating_zk_broker_properties(node, _connect(st), voters, st.spec)
    if mode == KRAFT:
        return migrated_broker_properties(node, voters, st.spec)
    raise MigrationError(f"unknown broker mode {mode!r}")


def broker_roll_order(st: ClusterState, target: str, zk_controller: int | None) -> list[NodePlan]:
    """The brokers still to be rolled into `target`, by id, the ZooKeeper-mode controller last: each
    time the controller stops another broker is elected, so rolling it last moves it once."""
    modes = _record(st).brokers
    todo = [b for b in st.brokers if modes.get(b.node_id, ZK) != target]
    return sorted(todo, key=lambda b: (b.node_id == zk_controller, b.node_id))


def controller_roll_order(controllers: Sequence[NodePlan], active: int | None) -> list[NodePlan]:
    """Standbys first, the active controller last: a standby's restart costs no election, and the
    active one then hands over to a controller that already runs the new config."""
    return sorted(controllers, key=lambda c: (c.node_id == active, c.node_id))


# ---------------------------------------------------------------------------------- reading the cluster


def node_phases(st: ClusterState) -> dict[int, str]:
    """node id -> what the node is in the migration, for status output."""
    m = st.migration
    out: dict[int, str] = {}
    for n in st.nodes:
        if n.role == "zookeeper":
            out[n.node_id] = "ZooKeeper"
        elif n.role == "controller":
            mode = m.controllers.get(n.node_id) if m is not None else CONTROLLER_KRAFT
            out[n.node_id] = "controller (migration mode)" if mode == CONTROLLER_MIGRATION else "controller"
        else:
            mode = m.brokers.get(n.node_id, ZK) if m is not None else (ZK if st.zookeeper else KRAFT)
            out[n.node_id] = {ZK: "ZK broker", MIGRATING: "migrating ZK broker", KRAFT: "KRaft broker"}[mode]
    return out


def parse_cluster_id(data: bytes | None) -> str:
    """The id in ZooKeeper's /cluster/id (`{"version":"1","id":"..."}`)."""
    try:
        doc = json.loads((data or b"").decode())
        cluster_id = doc["id"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise MigrationError(f"/cluster/id holds no cluster id: {data!r}") from None
    if not isinstance(cluster_id, str) or not cluster_id:
        raise MigrationError(f"/cluster/id holds no cluster id: {data!r}")
    return cluster_id


def replicas_in_sync(view: ClusterView, broker_id: int) -> bool:
    """Every partition with a replica on `broker_id` has it back in its ISR, and the broker is listed."""
    if not any(b.node_id == broker_id and b.registered for b in view.brokers):
        return False
    return all(broker_id in p.isr for p in view.partitions if broker_id in p.replicas)


def broker_gone(view: ClusterView, broker_id: int) -> bool:
    """The cluster has seen the broker stop: unlisted (ZooKeeper mode, its znode gone) or no longer
    unfenced (KRaft). Waiting for it before the restart means an in-sync view seen afterwards is news,
    not a cached answer from before the stop."""
    b = next((b for b in view.brokers if b.node_id == broker_id), None)
    return b is None or not b.registered or b.state != "unfenced"


def kraft_broker_ready(body: Mapping[str, Any] | None) -> bool:
    """A KRaft broker's /healthz says it is registered and unfenced."""
    return (
        isinstance(body, Mapping)
        and body.get("mode") != "zookeeper"
        and body.get("registered") is True
        and body.get("fenced") is False
    )


KAFKA_SESSION_TIMEOUT_MS = 9000
KAFKA_HEARTBEAT_INTERVAL_MS = 2000


def sessions_settle_s(controller_props: Mapping[str, str], broker_props: Mapping[str, str]) -> float:
    """How long after a controller takes over a broker unfenced in its view is known to have
    heartbeated it. The new active controller gives every broker a new session
    (broker.session.timeout.ms from its start); a broker whose heartbeats were backing off while the
    controllers restarted may miss it, be fenced, and be unfenced again at its next heartbeat. One
    heartbeat interval past the session lets that fencing show."""
    session = int(controller_props.get("broker.session.timeout.ms", KAFKA_SESSION_TIMEOUT_MS))
    interval = int(broker_props.get("broker.heartbeat.interval.ms", KAFKA_HEARTBEAT_INTERVAL_MS))
    return (session + interval) / 1000
