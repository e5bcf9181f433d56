"""docker-compose.yml run for real: podman and podman-compose bring the cluster up from the Dockerfile's
image, a broker's log dir is a loop-device filesystem on the host, and a real fault on it moves
leadership off that broker while every acks=all record stays readable.

No registry is needed: the base images are made from Debian's packages (tests/system/compose_support.py)
and cached in podman's storage by a hash of what went into them, so only the first run on a machine
pays for them. The time of each phase is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kraftpy.config import KafkaConfig, load_config
from tests.conftest import require_real
from tests.disk_fixtures import real_disks_available
from tests.system import compose_support as cs
from tools.cluster import launcher
from tools.cluster.configs import node_properties
from tools.cluster.spec import ClusterSpec, plan_nodes
from tools.disk import DiskSet
from tools.disk.live import current_mounts
from tools.disk.loopdev import attached_loop_devices

TOPIC = "compose-disk-fault"
PARTITIONS = 3
RECORDS_BEFORE = 300
RECORDS_AFTER = 100
HEALTHY_TIMEOUT_S = 180.0
FAILOVER_TIMEOUT_S = 30.0

# What a node's behaviour depends on beyond its addresses and dirs: every *.ms setting plus these.
TUNED_KEYS = (
    "num.partitions",
    "default.replication.factor",
    "min.insync.replicas",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
)


def _settings(cfg: KafkaConfig) -> dict[str, Any]:
    out = {}
    for name, f in KafkaConfig.model_fields.items():
        alias = f.alias or name
        if alias.endswith(".ms") or alias in TUNED_KEYS:
            out[alias] = getattr(cfg, name)
    return out


def test_compose_nodes_run_with_the_settings_of_cluster_up(tmp_path: Path) -> None:
    """Every timing (and partition default) of each compose node is what `kraftpy cluster up` gives the
    same node, defaults included."""
    spec = ClusterSpec()  # what `kraftpy cluster up` asks for without --kafka-defaults
    nodes = plan_nodes(spec, tmp_path, list(range(20000, 20000 + 10)))
    assert {n.name for n in nodes} == {f"controller-{c}" for c in cs.CONTROLLERS} | {
        f"broker-{b}" for b in cs.BROKERS
    }
    for node in nodes:
        up = KafkaConfig.from_properties(node_properties(node, nodes, spec), source=f"cluster up {node.name}")
        compose = load_config(cs.DOCKER_DIR / f"{node.name}.properties")
        assert _settings(compose) == _settings(up), node.name


def _available() -> bool:
    return real_disks_available("ext4") and not cs.missing_tools()


def _kraftpy(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launcher.kraftpy_command(*args),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cs.REPO,
    )


def _describe(bootstrap: str) -> list[dict[str, Any]] | None:
    p = _kraftpy(
        "topics", "describe", "--bootstrap-server", bootstrap, "--topic", TOPIC, "--json", timeout=30
    )
    if p.returncode != 0:
        return None
    topics = json.loads(p.stdout)
    return topics[0]["partitions"] if topics and topics[0].get("error") == 0 else None


def _dir_id(log_dir: Path) -> str | None:
    try:
        for line in (log_dir / "meta.properties").read_text().splitlines():
            if line.startswith("directory.id="):
                return line.split("=", 1)[1].strip()
    except OSError:
        return None
    return None


def _healthz(broker: int) -> dict[str, Any] | None:
    status, body = launcher.get_json(f"http://127.0.0.1:{cs.BROKER_RPC_PORTS[broker]}/healthz")
    return body if status == 200 and isinstance(body, dict) else None


def _wait(what: str | Callable[[], str], timeout: float, check: Any, interval: float = 0.5) -> Any:
    """`check()`'s first true result; `what` (or what it returns at the deadline) names it on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {what() if callable(what) else what}"
            )
        time.sleep(interval)


@pytest.mark.system
@pytest.mark.real
@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_compose_cluster_survives_a_failed_disk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_real(
        "root, loop devices and " + ", ".join(cs.TOOLS) + " (./dev setup installs them)",
        _available(),
    )
    # Disks made below carry this run's marker, so the crash janitor can clear them after a crash.
    launcher.mark_test_run()
    phases = cs.Phases()
    podman = cs.Podman(log=tmp_path / "podman.log")
    notes: list[str] = []
    disks = DiskSet(tmp_path / "disks")
    project: cs.ComposeProject | None = None
    passed = False
    try:
        with phases("setup: containers.conf, stale projects, ports"):
            env, note = cs.ensure_containers_conf()
            podman.env.update(env)
            notes.append(note)
            stale = cs.cleanup_stale_projects(podman)
            if stale:
                notes.append(f"removed leftovers of dead test runs: {', '.join(stale)}")
            published = [
                *cs.CONTROLLER_PORTS.values(),
                *cs.BROKER_RPC_PORTS.values(),
                *cs.BROKER_KAFKA_PORTS.values(),
            ]
            busy = cs.ports_in_use(published)
            assert not busy, f"ports docker-compose.yml publishes are taken on 127.0.0.1: {busy}"

        with phases("base image (debootstrap)") as ph:
            base, built = cs.ensure_base_image(podman, tmp_path)
            ph.note = f"{'built' if built else 'cached'} {base}"
        with phases("python base image") as ph:
            python_image, built = cs.ensure_python_image(podman, base, tmp_path)
            ph.note = f"{'built' if built else 'cached'} {python_image}"
        with phases("project image (podman build of the Dockerfile)"):
            context = tmp_path / "build-context"
            context.mkdir()
            cs.snapshot_context(context)
            cs.build_targets(podman, python_image, context, cs.NODE_TARGETS)
            image = cs.PROJECT_IMAGE

        with phases("disks: 9 loop-device ext4 filesystems"):
            log_dirs: dict[tuple[int, int], Path] = {}
            for b in cs.BROKERS:
                for d in cs.DIRS:
                    disk = disks.create(f"b{b}-d{d}", size="256M")
                    # A subdirectory: the filesystem's root holds lost+found, which is no partition.
                    data = disk.mountpoint / "data"
                    data.mkdir()
                    log_dirs[(b, d)] = data
            project = cs.ComposeProject(podman, cs.project_name(), image, log_dirs)

        with phases("podman-compose up -d"):
            project.up()
        with phases("controllers and brokers healthy, brokers unfenced"):
            pending = set(project.services())

            def all_healthy() -> bool:
                for s in sorted(pending):
                    if project.healthcheck(s):
                        pending.discard(s)
                return not pending

            _wait(lambda: f"health checks of {sorted(pending)}", HEALTHY_TIMEOUT_S, all_healthy, interval=1.0)
            for s in project.services():
                assert project.inspect(s)["State"]["Health"]["Status"] == "healthy", s
            _wait(
                "every broker unfenced",
                60,
                lambda: all((h := _healthz(b)) and h.get("fenced") is False for b in cs.BROKERS),
            )

        bootstrap = ",".join(f"127.0.0.1:{cs.BROKER_KAFKA_PORTS[b]}" for b in cs.BROKERS)
        before = [f"before-{i:05d}" for i in range(RECORDS_BEFORE)]
        with phases("create topic (RF 3) and produce acks=all"):
            created = _kraftpy(
                "topics", "create", "--bootstrap-server", f"127.0.0.1:{cs.BROKER_KAFKA_PORTS[1]}",
                "--topic", TOPIC, "--partitions", str(PARTITIONS), "--replication-factor", "3",
            )  # fmt: skip
            assert created.returncode == 0, created.stdout + created.stderr
            partitions = _wait(
                "every partition with a leader and a full ISR",
                30,
                lambda: (
                    (ps := _describe(bootstrap))
                    and len(ps) == PARTITIONS
                    and all(p["leader"] >= 0 and len(p["isr"]) == 3 for p in ps)
                    and ps
                ),
            )
            sent = _kraftpy(
                "produce", "--bootstrap-server", bootstrap, "--topic", TOPIC,
                "--request-required-acks", "all", input="\n".join(before) + "\n",
            )  # fmt: skip
            assert sent.returncode == 0, sent.stdout + sent.stderr

        # The leader of partition 0 loses the disk that holds it.
        victim = next(p for p in partitions if p["partition"] == 0)
        leader = victim["leader"]
        dir_id = victim["directories"][str(leader)]
        failed = next(d for d in cs.DIRS if _dir_id(log_dirs[(leader, d)]) == dir_id)
        assert (log_dirs[(leader, failed)] / f"{TOPIC}-0").is_dir()
        others = [b for b in cs.BROKERS if b != leader]
        survivors = ",".join(f"127.0.0.1:{cs.BROKER_KAFKA_PORTS[b]}" for b in others)

        with phases("disk fault on the host; leadership leaves the broker") as ph:
            fail = _kraftpy("disk", "fail", "--state-dir", str(disks.state_dir), f"b{leader}-d{failed}")
            assert fail.returncode == 0, fail.stdout + fail.stderr
            faulted_at = time.monotonic()

            def moved() -> list[dict[str, Any]] | None:
                ps = _describe(survivors)
                if not ps:
                    return None
                p0 = next(p for p in ps if p["partition"] == 0)
                ok = p0["leader"] not in (leader, -1) and leader in p0["offline"] and leader not in p0["isr"]
                return ps if ok else None

            after_fault = _wait(
                f"partition 0 to lead elsewhere than broker {leader}", FAILOVER_TIMEOUT_S, moved
            )
            ph.note = (
                f"broker {leader} logs-{failed} failed; partition 0 led by "
                f"{next(p for p in after_fault if p['partition'] == 0)['leader']} "
                f"after {time.monotonic() - faulted_at:.1f}s"
            )
            health = _healthz(leader)
            assert health is not None, f"broker {leader} stopped serving /healthz"
            offline = health["dirs"]["offline"]
            assert f"/var/lib/kraftpy/broker-{leader}/logs-{failed}" in offline, offline

        after = [f"after-{i:05d}" for i in range(RECORDS_AFTER)]
        with phases("produce again, consume every record"):
            sent = _kraftpy(
                "produce", "--bootstrap-server", survivors, "--topic", TOPIC,
                "--request-required-acks", "all", input="\n".join(after) + "\n",
            )  # fmt: skip
            assert sent.returncode == 0, sent.stdout + sent.stderr
            got = _kraftpy(
                "consume", "--bootstrap-server", survivors, "--topic", TOPIC, "--from-beginning",
                "--max-messages", str(len(before) + len(after)), "--timeout-ms", "15000",
            )  # fmt: skip
            assert got.returncode == 0, got.stderr
            records = got.stdout.splitlines()
            assert sorted(records) == sorted(before + after), (
                f"{len(records)} records read; missing {sorted(set(before + after) - set(records))[:10]}"
            )

        with phases("analysis image (Dockerfile target analysis: PySpark, Java)"):
            cs.build_targets(podman, python_image, context, cs.ANALYSIS_TARGETS)
        with phases("kraftpy analyze on controller-3000's metadata volume") as ph:
            out = tmp_path / "analysis"
            out.mkdir()
            os.chown(out, 10001, 10001)  # the image's kraftpy user writes there
            podman.podman(
                "run", "--rm", "-v", f"{project.volume('controller-3000-meta')}:/meta:ro",
                "-v", f"{out}:/analysis", cs.ANALYSIS_IMAGE, "kraftpy", "analyze", "/meta", "--out", "/analysis",
                timeout=600,
            )  # fmt: skip
            summary = json.loads((out / "summary.json").read_text())
            assert (out / "report.html").is_file()
            assert summary["brokers"] == len(cs.BROKERS) and summary["topics"] >= 1, summary
            seen = [f for f in summary["dir_failures"] if f["broker_id"] == leader]
            assert seen, f"no failure of broker {leader}'s dir in {summary['dir_failures']}"
            ph.note = f"{summary['records']} records, dir failure of broker {leader} found"

        restarts = {s: project.inspect(s).get("RestartCount", 0) for s in project.services()}
        notes.append(f"container restarts: {restarts}")
        passed = True
    finally:
        if project is not None and not passed:
            for s in ["format", *project.services()]:
                print(f"\n----- {s}\n{project.logs(s)}")
        with phases("teardown: podman-compose down -v, disks destroyed"):
            if project is not None:
                project.down()
            disks.destroy_all()
        with capsys.disabled():
            print(f"\ncompose test phases ({'passed' if passed else 'failed'}):\n{phases.report()}")
            for n in notes:
                print(f"  {n}")

    # Nothing of the run is left: containers, volumes, network, mounts, loop devices.
    assert project is not None
    assert project.leftovers() == {}
    images = str(disks.state_dir)
    assert not [d.path for d in attached_loop_devices() if d.backing_file.startswith(images)]
    assert not [m.mountpoint for m in current_mounts() if m.mountpoint.startswith(str(tmp_path))]
