"""`LocalCluster`: a quorum of controllers and N JBOD brokers on this machine, from generated configs.

    cluster = LocalCluster.up(work_dir, ClusterSpec(brokers=3, dirs=3, real_disks=True))
    view = cluster.view()                      # controller, brokers, dirs, partitions
    cluster.fail_dir(broker_id=2, index=0)     # EIO on a real disk, ENOTDIR on a plain dir
    cluster.stop_broker(2); cluster.heal_dir(2, 0); cluster.start_broker(2)
    cluster.stop_node(cluster.wait_leader().name, kill=True)   # kill -9 of the active controller
    cluster.down()                             # processes, disks, namespaces, route: all gone

Everything is recorded in `<work dir>/cluster.json` before it is created, so another invocation
(`kraftpy cluster status|down`) or a later one after a crash finds and removes it all.

A secure cluster (`ClusterSpec(secure=True)`) is reached with its own admin certificate
(`<work dir>/security/admin.properties`) by every probe, wait and client this class runs, whatever
command config the caller has set; a plain one without TLS, likewise.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tools.cluster.disks as disk_faults
import tools.cluster.launcher as launcher
import tools.cluster.netns as netns
from tools.cluster.configs import node_properties, write_config
from tools.cluster.disks import ClusterDisks
from tools.cluster.errors import ClusterError, NodeStartError
from tools.cluster.metadata import known_leader, read_image
from tools.cluster.probe import probe_all
from tools.cluster.spec import (
    ClusterSpec,
    DirPlan,
    NodePlan,
    SecurityLayout,
    client_host_index,
    client_netns,
    plan_nodes,
)
from tools.cluster.state import ClusterState, ProcessRecord, StateFile
from tools.cluster.view import ClusterView, build_view, is_active_controller

Say = Callable[[str], None]
LEFTOVER_NAMES = ("config", "logs", "disks", "zookeeper", "security")


def _quiet(_msg: str) -> None:
    pass


class LocalCluster:
    def __init__(self, work_dir: str | os.PathLike[str]) -> None:
        self.work_dir = Path(os.path.abspath(work_dir))
        self.store = StateFile(self.work_dir)
        self._clients: list[Any] = []  # producer processes started here; `down` ends them

    # ================================================================== reading

    @property
    def state(self) -> ClusterState:
        return self.store.load()

    def exists(self) -> bool:
        return self.store.exists()

    @property
    def spec(self) -> ClusterSpec:
        return self.state.spec

    @property
    def controllers(self) -> list[NodePlan]:
        return self.state.controllers

    @property
    def security(self) -> SecurityLayout:
        """Where the TLS files of a secure cluster are (nothing is there for a plain one)."""
        return SecurityLayout.of(self.work_dir)

    @property
    def command_config(self) -> Path | None:
        """The command config (--command-config) that reaches this cluster's nodes: its admin
        certificate's when it is secure, None when its listeners are plain."""
        return self.security.admin_properties if self.spec.secure else None

    @contextlib.contextmanager
    def _tls(self, state: ClusterState | None = None) -> Iterator[None]:
        """Inside: the probes and clients reach the nodes as this cluster needs, with its admin
        certificate or plain, whatever the caller's command config."""
        from tools.client.security import command_config

        st = state or self.state
        with command_config(self.security.admin_properties if st.spec.secure else None):
            yield

    def active_controller(self, state: ClusterState | None = None) -> NodePlan:
        """The controller the voters' quorum-state files last named leader (the first controller
        while none is named). Read from files: it needs no process up and no network."""
        st = state or self.state
        known = known_leader([c.metadata_dir for c in st.controllers])
        if known is not None:
            for c in st.controllers:
                if c.node_id == known[0]:
                    return c
        return st.controllers[0]

    @property
    def brokers(self) -> list[NodePlan]:
        return self.state.brokers

    def broker(self, broker_id: int) -> NodePlan:
        return self.state.broker(broker_id)

    def bootstrap_servers(self, exclude: Sequence[int] = ()) -> str:
        return ",".join(b.bootstrap for b in self.brokers if b.node_id not in exclude)

    def kafka_bootstrap_servers(self) -> str:
        """The brokers' Kafka-protocol addresses, for Kafka's clients and tools ("" in ZooKeeper mode)."""
        return ",".join(b.kafka_bootstrap for b in self.brokers if b.kafka_bootstrap)

    @property
    def client_netns(self) -> str | None:
        """Namespace clients must run in (multi-host), None when they run right here."""
        st = self.state
        return client_netns(st.netns_prefix, st.spec) if st.netns_prefix else None

    def client_command(self, argv: Sequence[str]) -> list[str]:
        """`argv` wrapped to run where the cluster's addresses are reachable."""
        return netns.wrap(argv, self.client_netns)

    def disks(self) -> ClusterDisks | None:
        st = self.state
        return ClusterDisks(st.disk_state_dir) if st.disk_state_dir else None

    def process_state(self, name: str, state: ClusterState | None = None) -> tuple[int | None, str]:
        st = state or self.state
        rec = st.processes.get(name)
        if rec is None:
            return None, "not started"
        if launcher.is_running(rec.pid, rec.start_time):
            return rec.pid, "running"
        return rec.pid, "stopped" if rec.desired == "stopped" else "exited"

    def is_running(self, name: str) -> bool:
        return self.process_state(name)[1] == "running"

    def image(self, state: ClusterState | None = None) -> Any | None:
        """The metadata image the active controller's log ends in (in ZooKeeper mode, until a
        migration has copied the metadata into the controllers' log, a running broker's Metadata
        answer: `zk_view`)."""
        st = state or self.state
        if not st.kraft_metadata:
            return self._zk_image(st)
        return read_image(self.active_controller(st).metadata_dir)

    def _zk_image(self, st: ClusterState) -> Any | None:
        from tools.cluster.probe import METADATA_SCHEME
        from tools.cluster.zk_view import image_from_metadata

        running = [b for b in st.brokers if self.process_state(b.name, st)[1] == "running"]
        if not running:
            return None
        health = self.health([b.name for b in running])
        bodies = {n: h.get("body") if isinstance(h.get("body"), dict) else None for n, h in health.items()}
        # The controller's own cache first: it is updated first, and a broker that was cut off (a
        # frozen process, an expired session) may answer from a stale one.
        running.sort(key=lambda b: not ((bodies.get(b.name) or {}).get("controller") or {}).get("active"))
        for b in running:
            url = METADATA_SCHEME + b.url
            with self._tls(st):
                answer = probe_all([url], self.client_netns, 2.0)[url]
            if answer.get("status") == 200 and isinstance(answer.get("body"), dict):
                return image_from_metadata(answer["body"], st.brokers, bodies)
        raise ClusterError("no running broker answered Metadata")

    def zk_controller(self, state: ClusterState | None = None) -> NodePlan | None:
        """In ZooKeeper mode, the broker whose /healthz says it is the controller."""
        st = state or self.state
        health = self.health([b.name for b in st.brokers if self.process_state(b.name, st)[1] == "running"])
        for b in st.brokers:
            body = health.get(b.name, {}).get("body")
            if isinstance(body, dict) and (body.get("controller") or {}).get("active"):
                return b
        return None

    def health(self, names: Sequence[str] | None = None, timeout: float = 1.0) -> dict[str, dict[str, Any]]:
        st = self.state
        nodes = [n for n in st.nodes if names is None or n.name in names]
        urls = {(n.url if n.role == "zookeeper" else f"{n.url}/healthz"): n.name for n in nodes}
        with self._tls(st):
            results = probe_all(list(urls), self.client_netns, timeout)
        return {urls[u]: r for u, r in results.items()}

    def metrics(self, name: str, timeout: float = 1.0) -> str | None:
        node = self.state.node(name)
        with self._tls():
            r = probe_all([f"{node.url}/metrics"], self.client_netns, timeout)[f"{node.url}/metrics"]
        return r["body"] if r.get("status") == 200 and isinstance(r.get("body"), str) else None

    def view(self, *, probe: bool = True, usage: bool = True) -> ClusterView:
        st = self.state
        processes = {n.name: self.process_state(n.name, st) for n in st.nodes}
        running = [n for n, (_pid, s) in processes.items() if s == "running"]
        health = self.health(running) if probe and running else {}
        notes: list[str] = []
        try:
            image = self.image(st)
        except Exception as e:  # shown, not fatal: status must work on a broken cluster too
            image = None
            notes.append(f"cannot read the controller's metadata log: {e}")
        faults: dict[str, str | None] = {}
        use: dict[str, tuple[int | None, int | None]] = {}
        disk_status = {}
        d = self.disks()
        if d is not None:
            with contextlib.suppress(Exception):
                disk_status = {s.name: s for s in d.disk_set.list()}
        for b in st.brokers:
            for dp in b.log_dirs:
                if dp.disk is not None:
                    s = disk_status.get(dp.disk)
                    state = s.state.value if s is not None else "missing"
                    faults[dp.path] = None if state == "healthy" else state
                    use[dp.path] = (s.used_bytes, s.total_bytes) if s is not None else (None, None)
                else:
                    faults[dp.path] = "failed" if disk_faults.is_failed_plain(dp) else None
                    use[dp.path] = (disk_faults.used_bytes(dp) if usage else None, None)
        directory_ids = dict(st.directory_ids)
        if st.zookeeper is not None:
            # ZooKeeper-mode dirs have no directory.id on disk: each broker names its own in /healthz.
            from tools.cluster.zk_view import online_dirs

            for h in (health or self.health([b.name for b in st.brokers if b.name in running])).values():
                body = h.get("body") if isinstance(h.get("body"), dict) else None
                directory_ids.update(online_dirs(body))
                for path, failed in ((body or {}).get("dirs") or {}).get("offline", {}).items():
                    if isinstance(failed, dict) and failed.get("directory_id"):
                        directory_ids[path] = failed["directory_id"]
        mode = "multi-host" if st.spec.multi_host else "local"
        mode += ", ZooKeeper" if st.zookeeper is not None else ""
        migration = None
        if st.migration is not None:
            from tools.cluster.migrate.plan import node_phases, phase

            mode += ", migrated to KRaft" if st.migration.finalized else ", migrating to KRaft"
            migration = (phase(st), node_phases(st))
        mode += ", real disks" if st.spec.real_disks else ", plain dirs"
        mode += ", secure (TLS, SASL_SSL, ACLs)" if st.spec.secure else ""
        return build_view(
            work_dir=str(self.work_dir),
            cluster_id=st.cluster_id,
            mode=mode,
            nodes=st.nodes,
            processes=processes,
            health=health,
            image=image,
            directory_ids=directory_ids,
            faults=faults,
            usage=use,
            notes=tuple(notes),
            migration=migration,
        )

    # ================================================================== up

    @classmethod
    def up(
        cls,
        work_dir: str | os.PathLike[str],
        spec: ClusterSpec,
        *,
        say: Say = _quiet,
        timeout: float = 60.0,
        cluster_id: str | None = None,
    ) -> LocalCluster:
        """Create, format and start the cluster; returns once every node is healthy and every broker
        unfenced. On any failure everything created is removed again and ClusterError raised."""
        cluster = cls(work_dir)
        cluster._check_can_create(spec)
        try:
            cluster._create(spec, say, cluster_id)
            cluster.start_all(say=say, timeout=timeout)
            if spec.secure:
                cluster._grant_client_acls(say)
        except BaseException:
            say("cluster did not come up; removing what was created")
            with contextlib.suppress(Exception):
                cluster.down(say=say)
            raise
        if spec.restart == "on-failure":
            cluster._start_watcher()
        return cluster

    def _grant_client_acls(self, say: Say) -> None:
        from tools.cluster.secure import grant_client_acls
        from tools.cluster.spec import CLIENT_USER

        count = grant_client_acls(self.security, self.brokers)
        say(f"{count} ACLs let the SCRAM user {CLIENT_USER} produce to, consume and create any topic")

    def _check_can_create(self, spec: ClusterSpec) -> None:
        if self.store.exists():
            raise ClusterError(
                f"a cluster already exists in {self.work_dir}; "
                f"run `kraftpy cluster down --work-dir {self.work_dir}` first"
            )
        if spec.base_port is not None and not spec.multi_host:
            try:
                launcher.ports_from(
                    spec.base_port, spec.brokers + spec.servers + (0 if spec.zookeeper else spec.brokers)
                )
            except ValueError as e:
                raise ClusterError(str(e)) from None
        if spec.multi_host:
            why = netns.available()
            if why:
                raise ClusterError(why)
        if spec.real_disks:
            why = disk_faults.real_disks_available(spec.fs)
            if why:
                raise ClusterError(why)
        if spec.zookeeper and not launcher.zookeeper_available():
            raise ClusterError(
                "ZooKeeper mode needs java and Debian's zookeeper package "
                f"({launcher.ZOOKEEPER_CLASSPATH}); `./dev setup` installs them"
            )

    def _create(self, spec: ClusterSpec, say: Say, cluster_id: str | None) -> None:
        from protocol.uuid import Uuid

        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._remove_leftovers(say)
        prefix = f"kp{secrets.token_hex(3)}" if spec.multi_host else None
        # every node's RPC (or ZooKeeper) port, then each KRaft broker's Kafka-protocol port
        count = spec.brokers + spec.servers + (0 if spec.zookeeper else spec.brokers)
        if spec.multi_host:
            ports = None
        elif spec.base_port is not None:
            ports = list(range(spec.base_port, spec.base_port + count))  # checked free before creating
        else:
            ports = launcher.free_ports(count)
        nodes = plan_nodes(spec, self.work_dir, ports, prefix)
        state = ClusterState(
            work_dir=str(self.work_dir),
            cluster_id=cluster_id or str(Uuid.random()),
            spec=spec,
            nodes=nodes,
            netns_prefix=prefix,
            disk_state_dir=str(self.work_dir / "disks") if spec.real_disks else None,
            created_at=time.time(),
        )
        with self.store.locked():
            # Recorded before anything exists, so a crash part way still leaves a trail for `down`.
            self.store.save(state)
        if prefix is not None:
            netns.create(prefix, client_host_index(spec))
            with self.store.locked():
                st = self.store.load()
                st.route_added = netns.add_blackhole_route()
                self.store.save(st)
            say(f"network namespaces {prefix}-n1..n{client_host_index(spec)} on bridge {prefix}-sw")
        if spec.real_disks:
            ClusterDisks(self.work_dir / "disks").create(nodes, spec)
            say(f"{spec.brokers * spec.dirs} loop-device disks ({'/'.join(spec.fs)}) mounted")
        else:
            for n in nodes:
                for d in n.log_dirs:
                    Path(d.path).mkdir(parents=True, exist_ok=True)
        layout: SecurityLayout | None = None
        scram: list[str] = []
        if spec.secure:
            from tools.cluster.secure import create_files, scram_arguments

            made = create_files(self.security, nodes)
            layout, scram = made.layout, scram_arguments(made.client_password)
            say(f"a CA, node certificates and client settings in {layout.dir}")
        dir_ids: dict[str, str] = {}
        for n in nodes:
            write_config(n.config, node_properties(n, nodes, spec, layout), f"{n.name} (kraftpy cluster)")
            if n.role == "zookeeper":
                Path(n.metadata_dir).mkdir(parents=True, exist_ok=True)
            elif not spec.zookeeper:
                # ZooKeeper-mode brokers format nothing: they write meta.properties v0 at first start.
                # The client's SCRAM credential goes where the metadata log starts: the controllers'.
                add_scram = scram if n.role == "controller" else []
                dir_ids.update(_format(n, state.cluster_id, add_scram))
        with self.store.locked():
            st = self.store.load()
            st.directory_ids = dir_ids
            self.store.save(st)
        if spec.zookeeper:
            say(f"configs in {self.work_dir / 'config'} (ZooKeeper mode, cluster id {state.cluster_id})")
        else:
            say(f"configs in {self.work_dir / 'config'}, storage formatted (cluster id {state.cluster_id})")

    def _remove_leftovers(self, say: Say) -> None:
        """Data of an earlier cluster in this work dir (its state file is gone, so it is down)."""
        removed = []
        for p in sorted(self.work_dir.iterdir()):
            if p.name in LEFTOVER_NAMES or p.name.startswith(("controller-", "broker-")):
                if p.name == "disks":
                    from tools.disk import cleanup_leftovers

                    cleanup_leftovers(p)
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
                removed.append(p.name)
        if removed:
            say(f"removed an earlier cluster's files from {self.work_dir}: {', '.join(removed)}")

    # ================================================================== processes

    def start_all(self, *, say: Say = _quiet, timeout: float = 60.0) -> None:
        if self.state.zookeeper is not None:
            self._start_all_zk(say=say, timeout=timeout)
            return
        controllers = self.controllers
        for c in controllers:
            self.start_node(c.name)
        self.wait_healthy([c.name for c in controllers], timeout)
        leader = self.wait_leader(timeout)
        voters = ", ".join(f"{c.node_id}@{c.bootstrap}" for c in controllers)
        say(f"controller quorum {voters}: {leader.node_id} is the active controller")
        for b in self.brokers:
            self.start_node(b.name)
        self.wait_healthy([b.name for b in self.brokers], timeout)
        self.wait_unfenced([b.node_id for b in self.brokers], timeout)
        with self.store.locked():
            st = self.store.load()
            st.phase = "up"
            self.store.save(st)
        say(f"{len(self.brokers)} brokers healthy and unfenced: {self.bootstrap_servers()}")

    def _start_all_zk(self, *, say: Say, timeout: float) -> None:
        st = self.state
        zk = st.zookeeper_node
        assert zk is not None
        self.start_node(zk.name)
        self.wait_healthy([zk.name], timeout)
        say(f"ZooKeeper serving at {st.zookeeper}")
        if st.cluster_id:
            self._seed_cluster_id(st)
        for b in self.brokers:
            self.start_node(b.name)
        self.wait_healthy([b.name for b in self.brokers], timeout)
        self.wait_unfenced([b.node_id for b in self.brokers], timeout)
        controller = self._wait_zk_controller(timeout)
        with self.store.locked():
            st = self.store.load()
            st.phase = "up"
            self.store.save(st)
        say(
            f"{len(self.brokers)} ZooKeeper-mode brokers registered, broker {controller.node_id} is the "
            f"controller: {self.bootstrap_servers()}"
        )

    def _seed_cluster_id(self, st: ClusterState) -> None:
        """`/cluster/id` before any broker starts, so the cluster has the id the state file records
        (zookeeper-shell's `create`, run where ZooKeeper is reachable)."""
        data = json.dumps({"version": "1", "id": st.cluster_id}, separators=(",", ":"))
        argv = launcher.kraftpy_command(
            "zk", "--zookeeper", st.zookeeper or "", "create", "/cluster/id", data
        )
        out = subprocess.run(
            self.client_command(argv), capture_output=True, text=True, timeout=60, check=False
        )
        if out.returncode != 0:
            raise ClusterError(f"cannot write /cluster/id: {out.stderr.strip() or out.stdout.strip()}")

    def _wait_zk_controller(self, timeout: float) -> NodePlan:
        deadline = time.monotonic() + timeout
        while True:
            c = self.zk_controller()
            if c is not None:
                return c
            if time.monotonic() > deadline:
                raise ClusterError(f"no broker became the ZooKeeper-mode controller after {timeout:.0f}s")
            time.sleep(0.1)

    def start_node(self, name: str) -> int:
        with self.store.locked():
            st = self.store.load()
            node = st.node(name)
            rec = st.processes.get(name)
            if rec is not None and launcher.is_running(rec.pid, rec.start_time):
                raise ClusterError(f"{name} is already running (pid {rec.pid})")
            argv = netns.wrap(launcher.node_command(node.role, node.config), node.netns)
            Path(node.log).parent.mkdir(parents=True, exist_ok=True)
            with open(node.log, "ab") as f:
                f.write(_start_line(name, node.role))
            proc = launcher.spawn(argv, node.log, name=name, cwd=self.work_dir)
            restarts = rec.restarts + 1 if rec is not None else 0
            st.processes[name] = ProcessRecord(proc.pid, proc.start_time, time.time(), "running", restarts)
            self.store.save(st)
            return proc.pid

    def wait_leader(self, timeout: float = 60.0, *, other_than: int | None = None) -> NodePlan:
        """The controller that says it is active (and is not `other_than`), once there is one."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.state
            running = [c for c in st.controllers if self.process_state(c.name, st)[1] == "running"]
            health = self.health([c.name for c in running], timeout=1.0)
            for c in running:
                if is_active_controller(health.get(c.name)) and c.node_id != other_than:
                    return c
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"no active controller after {timeout:.0f}s; "
                    + "; ".join(f"end of {c.log}:\n{launcher.log_tail(c.log, 10)}" for c in st.controllers)
                )
            time.sleep(0.1)

    def start_node_id(self, node_id: int, *, wait: bool = True, timeout: float = 60.0) -> NodePlan:
        """Start a broker or a controller by its node.id; with `wait`, until it serves."""
        node = self.state.node_by_id(node_id)
        self.start_node(node.name)
        if wait:
            self.wait_healthy([node.name], timeout)
        return node

    def stop_node_id(self, node_id: int, *, timeout: float = 15.0, kill: bool = False) -> str:
        return self.stop_node(self.state.node_by_id(node_id).name, timeout=timeout, kill=kill)

    def start_broker(self, broker_id: int, *, wait: bool = True, timeout: float = 60.0) -> None:
        self.start_node_id(self.broker(broker_id).node_id, wait=wait, timeout=timeout)

    def stop_node(self, name: str, *, timeout: float = 15.0, kill: bool = False) -> str:
        """SIGTERM (controlled shutdown for a broker) then SIGKILL after `timeout`; `kill` = SIGKILL now."""
        with self.store.locked():
            st = self.store.load()
            rec = st.processes.get(name)
            if rec is None:
                return "not started"
            rec.desired = "stopped"
            self.store.save(st)
        if kill:
            launcher.kill(rec.pid, rec.start_time)
            return "killed"
        return launcher.stop(rec.pid, rec.start_time, timeout)

    def stop_broker(self, broker_id: int, *, timeout: float = 15.0, kill: bool = False) -> str:
        return self.stop_node(self.broker(broker_id).name, timeout=timeout, kill=kill)

    def wait_healthy(self, names: Sequence[str], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        pending = list(names)
        while True:
            for name in pending:
                _pid, pstate = self.process_state(name)
                if pstate != "running":
                    raise NodeStartError(self._exit_message(name))
            health = self.health(pending, timeout=1.0)
            pending = [n for n in pending if health.get(n, {}).get("status") != 200]
            if not pending:
                return
            if time.monotonic() > deadline:
                name = pending[0]
                last = health.get(name, {})
                raise NodeStartError(
                    f"{name} not healthy after {timeout:.0f}s (last answer: "
                    f"{last.get('status') or last.get('error')}); end of {self.state.node(name).log}:\n"
                    + launcher.log_tail(self.state.node(name).log)
                )
            time.sleep(0.2)

    def wait_unfenced(self, broker_ids: Sequence[int], timeout: float = 60.0) -> ClusterView:
        def done(v: ClusterView) -> bool:
            for b in broker_ids:
                if v.broker(b).process != "running":
                    raise NodeStartError(self._exit_message(self.broker(b).name))
            return set(broker_ids) <= v.unfenced

        return self.wait_until(done, timeout, f"brokers {list(broker_ids)} unfenced", probe=False)

    def wait_until(
        self,
        predicate: Callable[[ClusterView], bool],
        timeout: float,
        what: str,
        *,
        interval: float = 0.2,
        probe: bool = False,
    ) -> ClusterView:
        """Poll the view until `predicate` holds; ClusterError naming `what` (and the last view) if not."""
        deadline = time.monotonic() + timeout
        while True:
            view = self.view(probe=probe, usage=False)
            if predicate(view):
                return view
            if time.monotonic() > deadline:
                from tools.cluster.render import render_text

                raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}\n{render_text(view)}")
            time.sleep(interval)

    def _exit_message(self, name: str) -> str:
        node = self.state.node(name)
        rec = self.state.processes.get(name)
        code = launcher.exit_code(rec.pid) if rec is not None else None
        how = f"exited with status {code}" if code is not None else "is not running"
        return f"{name} {how}; end of {node.log}:\n{launcher.log_tail(node.log)}"

    def _start_watcher(self) -> None:
        argv = [sys.executable, "-m", "tools.cluster.watch", str(self.work_dir)]
        proc = launcher.spawn(argv, self.work_dir / "logs" / "watch.log", name="watch", cwd=self.work_dir)
        with self.store.locked():
            st = self.store.load()
            st.supervisor_pid, st.supervisor_start_time = proc.pid, proc.start_time
            self.store.save(st)

    # ================================================================== clients

    def _client_wrap(self) -> list[str]:
        ns = self.client_netns
        return netns.nsenter_prefix(ns) if ns else []

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        *,
        assignment: dict[int, list[int]] | None = None,
        configs: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> ClusterView:
        """Create a topic through a broker and wait until every partition has a leader."""
        import asyncio
        import json

        import tools.cluster.workload as workload

        if self.client_netns is None:
            try:
                with self._tls():
                    asyncio.run(
                        workload.create_topic(
                            self.bootstrap_servers(),
                            name,
                            partitions,
                            replication_factor,
                            assignment=assignment,
                            configs=configs,
                        )
                    )
            except RuntimeError as e:
                raise ClusterError(str(e)) from None
        else:
            argv = [sys.executable, "-m", "tools.cluster.workload", "create-topic"]
            argv += ["--bootstrap", self.bootstrap_servers(), "--topic", name]
            argv += ["--partitions", str(partitions), "--replication-factor", str(replication_factor)]
            if assignment:
                argv += ["--assignment", json.dumps(assignment)]
            for k, v in (configs or {}).items():
                argv += ["--config", f"{k}={v}"]
            proc = run_client(self, argv, timeout=60)
            if proc.returncode != 0:
                raise ClusterError(proc.stderr.strip() or f"creating topic {name} failed")
        count = len(assignment) if assignment else partitions
        return self.wait_until(
            lambda v: len(v.topic(name)) == count and all(p.leader >= 0 for p in v.topic(name)),
            timeout,
            f"every partition of {name} to have a leader",
        )

    def start_producer(
        self,
        topic: str,
        ack_file: str | os.PathLike[str],
        *,
        rate: float = 300,
        value_size: int = 100,
        bootstrap: str | None = None,
    ) -> Any:
        """A continuous acks=all idempotent producer process (tools.cluster.workload)."""
        from tools.cluster.workload import ProducerProcess

        with self._tls():
            producer = ProducerProcess(
                self._client_wrap(),
                bootstrap or self.bootstrap_servers(),
                topic,
                Path(ack_file),
                rate=rate,
                value_size=value_size,
            )
        self._clients.append(producer)
        return producer

    def consume(self, topic: str, *, bootstrap: str | None = None, timeout: float = 120.0) -> list[Any]:
        """(partition, offset, seq) of every record in `topic`, read from the beginning."""
        import asyncio

        import tools.cluster.workload as workload

        servers = bootstrap or self.bootstrap_servers()
        with self._tls():
            if self.client_netns is None:
                return asyncio.run(workload.consume(servers, topic, timeout))
            return workload.consume_in(self._client_wrap(), servers, topic, timeout)

    # ================================================================== faults

    def dir_plan(self, broker_id: int, index: int) -> DirPlan:
        dirs = self.broker(broker_id).log_dirs
        if not 0 <= index < len(dirs):
            raise ClusterError(f"broker {broker_id} has dirs 0..{len(dirs) - 1}, not {index}")
        return dirs[index]

    def fail_dir(self, broker_id: int, index: int, how: str = "fail") -> str:
        return disk_faults.inject(self.dir_plan(broker_id, index), how, self.disks())

    def metadata_dir_plan(self, broker_id: int) -> DirPlan:
        d = self.broker(broker_id).metadata_disk
        if d is None:
            raise ClusterError("the metadata.log.dir is on its own disk only with metadata_disks=True")
        return d

    def fail_metadata_dir(self, broker_id: int, how: str = "fail") -> str:
        return disk_faults.inject(self.metadata_dir_plan(broker_id), how, self.disks())

    def heal_dir(self, broker_id: int, index: int, *, timeout: float = 15.0) -> list[str]:
        """Undo a fault; a real disk can only be healed once no process holds files on it, so this
        retries while the broker closes its files on the offline dir."""
        d = self.dir_plan(broker_id, index)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return disk_faults.heal(d, self.disks())
            except ClusterError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def set_link(self, name: str, up: bool) -> None:
        """Multi-host only: cut (`up=False`) or restore a node's link at the switch."""
        st = self.state
        if st.netns_prefix is None:
            raise ClusterError("links exist only in multi-host mode (--multi-host)")
        netns.set_link(st.netns_prefix, st.node(name).host_index, up)

    # ================================================================== down

    def down(self, *, say: Say = _quiet, timeout: float = 15.0, controller_first: bool = False) -> list[str]:
        """Stop every process (brokers first: SIGTERM, then SIGKILL), destroy the disks, delete the
        namespaces and the route. Safe to repeat, and after a crash of anything.

        `controller_first` stops the controllers before the brokers, so the metadata log ends as the
        cluster stood, without the fencing and leader moves of the brokers' controlled shutdowns
        (which then give up after broker.session.timeout.ms)."""
        actions: list[str] = []
        for client in self._clients:
            if client.alive:
                client.kill()
                actions.append(f"producer (pid {client.popen.pid}) killed")
        self._clients.clear()
        if not self.store.exists():
            return actions
        with self.store.locked():
            st = self.store.load()
            st.phase = "stopping"
            self.store.save(st)
        if st.supervisor_pid and st.supervisor_start_time is not None:
            launcher.stop(st.supervisor_pid, st.supervisor_start_time, 5.0)
        # Brokers first and together (each runs a controlled shutdown, which needs the controller).
        groups = [st.servers, st.brokers] if controller_first else [st.brokers, st.servers]
        for group in groups:
            recs = [(n, st.processes[n.name]) for n in group if n.name in st.processes]
            ended = launcher.stop_many([(r.pid, r.start_time) for _n, r in recs], timeout)
            for n, r in recs:
                how = ended.get(r.pid, "gone")
                if how != "gone":
                    actions.append(f"{n.name} (pid {r.pid}) {how}")
                    say(f"{n.name} {how}")
        if st.netns_prefix:
            # Anything else still inside our namespaces (client helpers) belongs to this cluster too.
            for ns in netns.list_namespaces():
                if ns.startswith(f"{st.netns_prefix}-"):
                    for pid in netns.pids_in(ns):
                        start = launcher.proc_start_time(pid)
                        if start is not None:
                            launcher.stop(pid, start, 5.0)
                            actions.append(f"pid {pid} in {ns} stopped")
        if st.disk_state_dir:
            done = ClusterDisks(st.disk_state_dir).destroy_all()
            actions += done
            if done:
                say(f"disks destroyed ({len([a for a in done if 'removed' in a])} images)")
        if st.netns_prefix:
            actions += netns.destroy(st.netns_prefix)
            if st.route_added and netns.remove_blackhole_route(st.netns_prefix):
                actions.append("blackhole route removed")
            say(f"namespaces {st.netns_prefix}-* deleted")
        self.store.remove()
        return actions


def _format(node: NodePlan, cluster_id: str, add_scram: Sequence[str] = ()) -> dict[str, str]:
    """`kraftpy storage format` (with `--add-scram` for each of `add_scram`) for one node, in
    process; returns log dir -> directory.id."""
    from kraftpy.config import ConfigError, load_config
    from kraftpy.storage.format import FormatError, execute_format, plan_format

    try:
        cfg = load_config(node.config)
        plan = plan_format(cfg, cluster_id, add_scram=add_scram)
        execute_format(plan)
    except (ConfigError, FormatError, OSError) as e:
        raise ClusterError(f"formatting {node.name} failed: {e}") from None
    return {d: str(m.directory_id) for d, m in plan.to_format.items() if m.directory_id is not None}


def run_client(
    cluster: LocalCluster, argv: Sequence[str], timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run a client command where the cluster's addresses are reachable, with the cluster's
    command config."""
    from tools.client.security import child_env

    with cluster._tls():
        env = {**os.environ, **child_env()}
    return subprocess.run(
        cluster.client_command(argv), capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def _start_line(name: str, role: str) -> bytes:
    """Where each (re)start begins in a node's log: a JSON line like the server's own, so that
    `jq` and the log readers take the whole file."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    line = {
        "event": "node starting",
        "node": name,
        "role": role,
        "level": "info",
        "logger": "kraftpy.cluster",
        "timestamp": stamp,
    }
    return (json.dumps(line) + "\n").encode()
