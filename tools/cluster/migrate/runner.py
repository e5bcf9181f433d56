"""The steps of `kraftpy migrate` done on a local cluster: configs written, processes rolled, the
controllers' /healthz polled. Every decision is `plan`'s; the state file is updated as each node's
config changes, so `kraftpy cluster status|stop|start|down` keep working mid-way."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import tools.cluster.launcher as launcher
import tools.cluster.migrate.plan as plan
from kraftpy.properties import load_properties
from tools.cluster.cluster import LocalCluster
from tools.cluster.configs import write_config
from tools.cluster.errors import ClusterError, NodeStartError
from tools.cluster.spec import NodePlan
from tools.cluster.state import ClusterState, MigrationRecord
from tools.cluster.view import is_active_controller

Say = Callable[[str], None]
ZK_CONNECT_TIMEOUT_S = 10.0
POLL_S = 0.2
# A broker's controlled shutdown moves its leaderships first; give it time before SIGKILL.
STOP_TIMEOUT_S = 60.0


def _quiet(_msg: str) -> None:
    pass


def read_zk_cluster_id(connect: str) -> str:
    """ZooKeeper's /cluster/id, the id the brokers carry in meta.properties."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError

    zk = KazooClient(hosts=connect, connection_retry={"max_tries": 3, "delay": 0.2})
    try:
        zk.start(timeout=ZK_CONNECT_TIMEOUT_S)
    except (KazooTimeoutError, KazooException) as e:
        raise plan.MigrationError(f"cannot connect to ZooKeeper at {connect}: {e or 'timed out'}") from None
    try:
        data, _stat = zk.get("/cluster/id")
    except NoNodeError:
        raise plan.MigrationError(
            "ZooKeeper has no /cluster/id: no broker has started against it yet"
        ) from None
    except KazooException as e:
        raise plan.MigrationError(f"cannot read /cluster/id: {type(e).__name__}") from None
    finally:
        zk.stop()
        zk.close()
    return plan.parse_cluster_id(data)


def _delete_migration_znodes(connect: str) -> None:
    """/controller, so a broker can be elected, and /migration, so a later attempt starts over
    (Kafka's rollback instructions)."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError

    zk = KazooClient(hosts=connect, connection_retry={"max_tries": 3, "delay": 0.2})
    try:
        zk.start(timeout=ZK_CONNECT_TIMEOUT_S)
    except (KazooTimeoutError, KazooException) as e:
        raise plan.MigrationError(f"cannot connect to ZooKeeper at {connect}: {e or 'timed out'}") from None
    try:
        for path in ("/controller", "/migration"):
            try:
                zk.delete(path)
            except NoNodeError:
                pass
    finally:
        zk.stop()
        zk.close()


def _format_controller(node: NodePlan, cluster_id: str) -> None:
    from kraftpy.config import ConfigError, load_config
    from kraftpy.storage.format import FormatError, execute_format, plan_format

    try:
        cfg = load_config(node.config)
        execute_format(plan_format(cfg, cluster_id, release_version=plan.MIGRATION_RELEASE))
    except (ConfigError, FormatError, OSError) as e:
        raise ClusterError(f"formatting {node.name} failed: {e}") from None


class Migration:
    """The migration of the cluster in `cluster.work_dir`, one step at a time."""

    def __init__(self, cluster: LocalCluster, *, say: Say = _quiet, timeout: float = 120.0) -> None:
        self.cluster = cluster
        self.say = say
        self.timeout = timeout

    # ------------------------------------------------------------------ running steps

    def running(self, st: ClusterState) -> set[str]:
        return {n.name for n in st.nodes if self.cluster.process_state(n.name, st)[1] == "running"}

    def check(self, step: str) -> None:
        st = self.cluster.state
        plan.check_step(step, st, self.running(st))

    def run(self, step: str | None = None, *, controllers: int = plan.DEFAULT_CONTROLLERS) -> list[str]:
        """`step`, or every step not done yet, in order; returns the steps run."""
        if step is not None:
            self.check(step)
            self._run_one(step, controllers)
            return [step]
        st = self.cluster.state
        if st.zookeeper is None:
            self.check(plan.ADD_CONTROLLERS)  # words the refusal
        done: list[str] = []
        for s in plan.STEPS:
            if plan.step_done(s, self.cluster.state):
                self.say(f"step {s}: already done")
                continue
            self.check(s)
            self._run_one(s, controllers)
            done.append(s)
        return done

    def _run_one(self, step: str, controllers: int) -> None:
        started = time.monotonic()
        if step == plan.ADD_CONTROLLERS:
            self.add_controllers(controllers)
        elif step == plan.ROLL_BROKERS_MIGRATION:
            self.roll_brokers(plan.MIGRATING)
        elif step == plan.WAIT_MIGRATION:
            self.wait_migration()
        elif step == plan.ROLL_BROKERS_KRAFT:
            self.roll_brokers(plan.KRAFT)
        else:
            self.finalize()
        self.say(f"step {step}: done in {time.monotonic() - started:.1f}s ({plan.phase(self.cluster.state)})")

    # ------------------------------------------------------------------ add-controllers

    def add_controllers(self, count: int) -> list[NodePlan]:
        st = self.cluster.state
        connect = st.zookeeper or ""
        cluster_id = read_zk_cluster_id(connect)
        nodes: list[NodePlan] = []
        for _attempt in range(5):
            try:
                nodes = plan.plan_controllers(st, count, launcher.free_ports(count))
                break
            except plan.MigrationError as e:
                if "already used" not in str(e):
                    raise
        if not nodes:
            raise plan.MigrationError("found no free ports for the controllers")
        store = self.cluster.store
        with store.locked():
            st = store.load()
            plan.check_step(plan.ADD_CONTROLLERS, st, self.running(st))
            if cluster_id != st.cluster_id:
                self.say(f"ZooKeeper's /cluster/id is {cluster_id} (the state file said {st.cluster_id})")
                st.cluster_id = cluster_id
            # Recorded before anything exists, so `kraftpy cluster down` finds whatever a crash leaves.
            store.save(plan.with_controllers(st, nodes))
        try:
            for n in nodes:
                write_config(n.config, plan.controller_config(n, st), f"{n.name} (kraftpy migrate)")
                Path(n.metadata_dir).mkdir(parents=True, exist_ok=True)
                _format_controller(n, cluster_id)
            for n in nodes:
                self.cluster.start_node(n.name)
            self.cluster.wait_healthy([n.name for n in nodes], self.timeout)
            leader = self.cluster.wait_leader(self.timeout)
        except BaseException:
            self._remove_controllers(nodes)
            raise
        voters = ", ".join(f"{n.node_id}@{n.bootstrap}" for n in nodes)
        self.say(
            f"  controllers {voters} started in migration mode (cluster id {cluster_id}, "
            f"zookeeper.connect {connect}); {leader.node_id} is active"
        )
        return nodes

    def _remove_controllers(self, nodes: list[NodePlan]) -> None:
        """Undo a failed add-controllers: the cluster is left as it was, a ZooKeeper-mode cluster.
        The logs stay, for finding out why."""
        names = {n.name for n in nodes}
        st = self.cluster.state
        for n in nodes:
            rec = st.processes.get(n.name)
            if rec is not None:
                launcher.stop(rec.pid, rec.start_time, 15.0)
            with contextlib.suppress(FileNotFoundError):
                Path(n.config).unlink()
            shutil.rmtree(Path(n.metadata_dir).parent, ignore_errors=True)
        with self.cluster.store.locked():
            st = self.cluster.store.load()
            st.nodes = [n for n in st.nodes if n.name not in names]
            st.processes = {k: v for k, v in st.processes.items() if k not in names}
            st.migration = None
            self.cluster.store.save(st)

    # ------------------------------------------------------------------ brokers

    def roll_brokers(self, target: str) -> None:
        st = self.cluster.state
        zk_controller = self.cluster.zk_controller(st) if target == plan.MIGRATING else None
        order = plan.broker_roll_order(st, target, zk_controller.node_id if zk_controller else None)
        for b in order:
            started = time.monotonic()
            self.set_broker_mode(b, target)
            self.cluster.stop_node(b.name, timeout=STOP_TIMEOUT_S)
            self.cluster.wait_until(
                lambda v, b=b: plan.broker_gone(v, b.node_id),
                self.timeout,
                f"the cluster to see broker {b.node_id} stopped",
            )
            self.cluster.start_node(b.name)
            self.cluster.wait_healthy([b.name], self.timeout)
            if target == plan.KRAFT:
                self._wait_kraft_broker(b)
            how = "in migration mode" if target == plan.MIGRATING else "as a KRaft broker"
            hosted = self._wait_in_sync(b)
            self.say(
                f"  broker {b.node_id}: restarted {how}; its {hosted} replicas in the ISR "
                f"({time.monotonic() - started:.1f}s)"
            )

    def set_broker_mode(self, b: NodePlan, mode: str) -> None:
        """Write the broker's config for `mode` and record it: the config on disk is what the broker
        runs from its next start on, whoever starts it."""
        with self._recording() as (st, m):
            write_config(b.config, plan.broker_config(b, st, mode), f"{b.name} (kraftpy migrate: {mode})")
            m.brokers[b.node_id] = mode

    def _restart(self, node: NodePlan) -> None:
        """Controlled stop (SIGTERM), start, and wait until it serves /healthz."""
        self.cluster.stop_node(node.name, timeout=STOP_TIMEOUT_S)
        self.cluster.start_node(node.name)
        self.cluster.wait_healthy([node.name], self.timeout)

    def _wait_kraft_broker(self, b: NodePlan) -> None:
        deadline = time.monotonic() + self.timeout
        last: object = None
        while True:
            if not self.cluster.is_running(b.name):
                raise NodeStartError(f"{b.name} exited; end of {b.log}:\n{launcher.log_tail(b.log)}")
            answer = self.cluster.health([b.name]).get(b.name, {})
            last = answer.get("body")
            if plan.kraft_broker_ready(answer.get("body") if isinstance(answer.get("body"), dict) else None):
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"broker {b.node_id} not registered and unfenced as a KRaft broker after "
                    f"{self.timeout:.0f}s (its /healthz: {last}); end of {b.log}:\n{launcher.log_tail(b.log)}"
                )
            time.sleep(POLL_S)

    def _wait_in_sync(self, b: NodePlan) -> int:
        view = self.cluster.wait_until(
            lambda v: plan.replicas_in_sync(v, b.node_id),
            self.timeout,
            f"broker {b.node_id} back in the ISR of every partition it hosts",
        )
        return sum(1 for p in view.partitions if b.node_id in p.replicas)

    # ------------------------------------------------------------------ controllers

    def active_status(self) -> tuple[NodePlan | None, plan.MigrationStatus]:
        """The active controller and what its /healthz says of the migration."""
        st = self.cluster.state
        running = [c for c in st.controllers if self.cluster.process_state(c.name, st)[1] == "running"]
        health = self.cluster.health([c.name for c in running])
        for c in running:
            if is_active_controller(health.get(c.name)):
                return c, plan.migration_status(health[c.name].get("body"))
        return None, plan.MigrationStatus(None, None, False)

    def _wait_status(self, done: Callable[[plan.MigrationStatus], bool], wanted: str) -> plan.MigrationStatus:
        deadline = time.monotonic() + self.timeout
        while True:
            active, status = self.active_status()
            if active is not None and done(status):
                return status
            if time.monotonic() > deadline:
                if active is None:
                    raise ClusterError(f"no active controller after {self.timeout:.0f}s waiting for {wanted}")
                if not status.reported:
                    raise ClusterError(
                        f"controller {active.node_id} does not report zk_migration_state in its /healthz: "
                        f"this controller cannot run a ZooKeeper migration (waited {self.timeout:.0f}s for "
                        f"{wanted}; see {active.log})"
                    )
                raise ClusterError(
                    f"timed out after {self.timeout:.0f}s waiting for {wanted}; controller "
                    f"{active.node_id} reports {status.describe()} (see {active.log})"
                )
            time.sleep(POLL_S)

    @contextlib.contextmanager
    def _recording(self) -> Iterator[tuple[ClusterState, MigrationRecord]]:
        """The cluster state with its migration record, saved on leaving (under the store's lock)."""
        with self.cluster.store.locked():
            st = self.cluster.store.load()
            assert st.migration is not None
            yield st, st.migration
            self.cluster.store.save(st)

    def wait_migration(self) -> None:
        status = self._wait_status(
            lambda s: s.copied, "migration state MIGRATION with the driver in DUAL_WRITE"
        )
        with self._recording() as (_, m):
            m.migrated = True
        self.say(f"  metadata copied from ZooKeeper: {status.describe()}")

    def finalize(self) -> None:
        active = self.cluster.wait_leader(self.timeout)
        taken_over = time.monotonic()
        for c in plan.controller_roll_order(self.cluster.state.controllers, active.node_id):
            started = time.monotonic()
            with self._recording() as (st, m):
                props = plan.controller_config(c, st, plan.CONTROLLER_KRAFT)
                write_config(c.config, props, f"{c.name} (kraftpy migrate: kraft)")
                m.controllers[c.node_id] = plan.CONTROLLER_KRAFT
            self._restart(c)
            leader = self.cluster.wait_leader(self.timeout)
            taken_over = time.monotonic()
            self.say(
                f"  controller {c.node_id}: restarted without the migration flag; {leader.node_id} is "
                f"active ({time.monotonic() - started:.1f}s)"
            )
        status = self._wait_status(lambda s: s.finalized, "migration state POST_MIGRATION")
        self._wait_brokers_kept_their_sessions(taken_over)
        with self._recording() as (_, m):
            m.finalized = True
        self.say(f"  migration finalized: {status.describe()}")

    def _wait_brokers_kept_their_sessions(self, taken_over: float) -> None:
        """Every broker unfenced once the sessions the new active controller gave them have run
        out (plan.sessions_settle_s), so that `done` means the brokers serve, not that they may
        be fenced a moment later."""
        st = self.cluster.state
        settle = plan.sessions_settle_s(
            load_properties(st.controllers[0].config), load_properties(st.brokers[0].config)
        )
        brokers = {b.node_id for b in st.brokers}
        self.cluster.wait_until(
            lambda v: time.monotonic() >= taken_over + settle and brokers <= v.unfenced,
            self.timeout + settle,
            f"brokers {sorted(brokers)} unfenced by the new active controller",
        )

    # ------------------------------------------------------------------ rollback

    def rollback(self) -> None:
        """KIP-866 "Rollback to ZK", as Kafka documents it for brokers still in ZooKeeper mode: stop
        the controllers, delete /controller so a broker can be elected, roll the brokers without the
        migration configs. Every change the controllers made is in ZooKeeper (dual write)."""
        st = self.cluster.state
        plan.check_rollback(st, self.running(st))
        for c in st.controllers:
            self.cluster.stop_node(c.name, timeout=STOP_TIMEOUT_S)
            self.say(f"  controller {c.node_id}: stopped")
        _delete_migration_znodes(st.zookeeper or "")
        self.say("  /controller and /migration deleted: a ZooKeeper-mode broker becomes controller")
        with self._recording() as (st, m):
            for b in st.brokers:
                m.brokers.setdefault(b.node_id, plan.ZK)
            # ZooKeeper holds the metadata again: the view reads it there, not from the stopped log.
            m.migrated = False
        for b in plan.broker_roll_order(self.cluster.state, plan.ZK, None):
            started = time.monotonic()
            self.set_broker_mode(b, plan.ZK)
            self._restart(b)
            hosted = self._wait_in_sync(b)
            self.say(
                f"  broker {b.node_id}: restarted in ZooKeeper mode; its {hosted} replicas in the ISR "
                f"({time.monotonic() - started:.1f}s)"
            )
        with self.cluster.store.locked():
            st = self.cluster.store.load()
            retired = list(st.controllers)
            self.cluster.store.save(plan.without_controllers(st))
        for c in retired:
            # Kafka's rollback deprovisions the quorum: a later attempt starts from an empty log (a
            # new PRE_MIGRATION), so the old metadata is moved aside, not deleted.
            meta = Path(c.metadata_dir)
            kept = meta.with_name(f"{meta.name}.rolled-back-{int(time.time())}")
            if meta.exists():
                meta.rename(kept)
            self.say(f"  controller {c.node_id} removed from the cluster (its metadata log kept in {kept})")
        self.say("rollback: done; the cluster runs in ZooKeeper mode, `kraftpy migrate` can start again")

    # ------------------------------------------------------------------ status

    def status_lines(self) -> list[str]:
        st = self.cluster.state
        lines = [f"cluster {st.work_dir}: {plan.phase(st)}"]
        if st.controllers:
            active, status = self.active_status()
            if active is None:
                lines.append("migration state: unknown (no active controller answers)")
            else:
                lines.append(f"migration state: {status.describe()} (active controller {active.node_id})")
        phases = plan.node_phases(st)
        for n in st.nodes:
            _pid, process = self.cluster.process_state(n.name, st)
            lines.append(f"  {f'{n.role} {n.node_id}':<16} {phases[n.node_id]:<28} {process}")
        if st.zookeeper is not None:
            pending = plan.pending_steps(st)
            lines.append(f"next step: {pending[0]}" if pending else "every step is done")
        return lines
