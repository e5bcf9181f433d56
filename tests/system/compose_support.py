"""Running docker-compose.yml for real with podman and podman-compose, on a machine without a registry.

The images are built from Debian's own packages and cached in podman's storage under tags that hold a
hash of what went into them, so a second run on the same machine reuses them:

    localhost/kraftpy-debian:bookworm-<hash>         debootstrap --variant=minbase, `podman import`ed
    localhost/kraftpy-python:3.11-bookworm-<hash>    docker/python-base.Containerfile on top of it
    localhost/kraftpy-compose-test:node              the Dockerfile (podman's layer cache keeps it fast)
    localhost/kraftpy-compose-test:analysis          its `analysis` target (PySpark and Java)

`ComposeProject` brings the compose file up under a project name of its own, with each broker log
dir bind-mounted from a host path (the compose file reads KRAFTPY_BROKER_<N>_LOGS_<D>), and takes it
down with everything it made. `cleanup_stale_projects` removes what a crashed earlier test run left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tools.cluster import launcher

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKER_DIR = REPO / "docker"
CONTAINERS_CONF = DOCKER_DIR / "containers.conf"
SYSTEM_CONTAINERS_CONF = Path("/etc/containers/containers.conf")
PYTHON_CONTAINERFILE = DOCKER_DIR / "python-base.Containerfile"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
DEBOOTSTRAP_ARGS = ("--variant=minbase", SUITE)
BASE_REPO = "localhost/kraftpy-debian"
PYTHON_REPO = "localhost/kraftpy-python"
IMAGE_REPO = "localhost/kraftpy-compose-test"
PROJECT_IMAGE = f"{IMAGE_REPO}:node"
ANALYSIS_IMAGE = f"{IMAGE_REPO}:analysis"
NODE_TARGETS = (("build", f"{IMAGE_REPO}:build"), (None, PROJECT_IMAGE))
ANALYSIS_TARGETS = (("analysis-build", f"{IMAGE_REPO}:analysis-build"), ("analysis", ANALYSIS_IMAGE))
IMAGE_LABEL = "org.kraftpy.test=compose"
PROJECT_PREFIX = "kraftpytest"

BROKERS = (1, 2, 3)
DIRS = (0, 1, 2)
CONTROLLERS = (3000, 3001, 3002)
# What docker-compose.yml publishes on 127.0.0.1 (fixed: the EXTERNAL listeners advertise them).
CONTROLLER_PORTS = {3000: 9093, 3001: 9103, 3002: 9113}
BROKER_RPC_PORTS = {b: b * 10000 + 9091 for b in BROKERS}
BROKER_KAFKA_PORTS = {b: b * 10000 + 9094 for b in BROKERS}

TOOLS = ("podman", "podman-compose", "debootstrap", "runc")


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def _hash(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------------------- podman


@dataclass
class Podman:
    """podman and podman-compose, run with the environment (and containers.conf) the test chose."""

    env: dict[str, str] = field(default_factory=dict)
    log: Path | None = None

    def environ(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        # conmon, which watches each container, inherits this environment. Without the test-run
        # marker the crash janitor (which only kills processes) leaves it alone; a dead run's
        # containers are removed whole by `cleanup_stale_projects` instead.
        env.pop(launcher.TEST_RUN_ENV, None)
        env.update(self.env)
        env.update(extra or {})
        return env

    def run(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 600,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
        stdin: IO[bytes] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        p = subprocess.run(
            list(args),
            capture_output=True,
            input=input,
            stdin=stdin,
            timeout=timeout,
            env=self.environ(env),
            cwd=cwd,
            check=False,
        )
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        if self.log is not None:
            with self.log.open("a") as f:
                f.write(f"$ {' '.join(args)}  ({time.monotonic() - started:.1f}s, exit {p.returncode})\n")
                f.write(out[-20000:])
                f.write(err[-20000:])
        result = subprocess.CompletedProcess(list(args), p.returncode, out, err)
        if check and p.returncode != 0:
            raise AssertionError(f"`{' '.join(args)}` exited {p.returncode}\n{out[-3000:]}\n{err[-3000:]}")
        return result

    def podman(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run("podman", *args, **kw)

    def image_exists(self, ref: str) -> bool:
        return self.podman("image", "exists", ref, check=False).returncode == 0


def ensure_containers_conf() -> tuple[dict[str, str], str]:
    """The environment podman needs here, and what was done about containers.conf.

    A missing /etc/containers/containers.conf is written from docker/containers.conf (runc, cgroupfs,
    ulimits this machine accepts). One that exists and differs is left alone: the test's podman
    commands then read docker/containers.conf through CONTAINERS_CONF instead."""
    wanted = CONTAINERS_CONF.read_text()
    if not SYSTEM_CONTAINERS_CONF.exists():
        SYSTEM_CONTAINERS_CONF.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_CONTAINERS_CONF.write_text(wanted)
        return {}, f"wrote {SYSTEM_CONTAINERS_CONF} from {CONTAINERS_CONF.relative_to(REPO)}"
    if SYSTEM_CONTAINERS_CONF.read_text() == wanted:
        return {}, f"{SYSTEM_CONTAINERS_CONF} is already the one in {CONTAINERS_CONF.relative_to(REPO)}"
    return (
        {"CONTAINERS_CONF": str(CONTAINERS_CONF)},
        f"{SYSTEM_CONTAINERS_CONF} differs from {CONTAINERS_CONF.relative_to(REPO)} and was left as it is; "
        f"this test's podman commands use CONTAINERS_CONF={CONTAINERS_CONF}",
    )


# ---------------------------------------------------------------------------------------- images


def base_image_ref() -> str:
    key = _hash("debootstrap", *DEBOOTSTRAP_ARGS, MIRROR)
    return f"{BASE_REPO}:{SUITE}-{key}"


def python_image_ref(base: str) -> str:
    bundle = HOST_CA_BUNDLE.read_bytes() if HOST_CA_BUNDLE.exists() else b""
    key = _hash(base, PYTHON_CONTAINERFILE.read_bytes(), bundle)
    return f"{PYTHON_REPO}:3.11-{SUITE}-{key}"


def ensure_base_image(podman: Podman, work: Path) -> tuple[str, bool]:
    """The debootstrap image: (reference, whether it was built now)."""
    ref = base_image_ref()
    if podman.image_exists(ref):
        return ref, False
    rootfs = Path(tempfile.mkdtemp(prefix="rootfs-", dir=work))
    try:
        podman.run("debootstrap", *DEBOOTSTRAP_ARGS, str(rootfs), MIRROR, timeout=900)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        try:
            message = "debootstrap " + " ".join(DEBOOTSTRAP_ARGS)
            podman.podman("import", "--message", message, "-", ref, stdin=tar.stdout)
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            assert tar.wait() == 0, "tar of the debootstrap root failed"
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    remove_other_tags(podman, ref)
    return ref, True


def ensure_python_image(podman: Podman, base: str, work: Path) -> tuple[str, bool]:
    """The stand-in for python:3.11-slim-bookworm: (reference, whether it was built now)."""
    ref = python_image_ref(base)
    if podman.image_exists(ref):
        return ref, False
    ctx = Path(tempfile.mkdtemp(prefix="python-ctx-", dir=work))
    try:
        shutil.copy(PYTHON_CONTAINERFILE, ctx / "Containerfile")
        shutil.copy(HOST_CA_BUNDLE, ctx / "ca-certificates.crt")
        podman.podman(
            "build", "--pull=never", "--format", "docker", "--build-arg", f"BASE_IMAGE={base}",
            "--label", IMAGE_LABEL, "-t", ref, "-f", str(ctx / "Containerfile"), str(ctx),
            timeout=900,
        )  # fmt: skip
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    remove_other_tags(podman, ref)
    return ref, True


def image_id(podman: Podman, ref: str) -> str | None:
    p = podman.podman("image", "inspect", "--format", "{{.Id}}", ref, check=False)
    if p.returncode != 0:
        return None
    return p.stdout.strip() or None


CONTEXT_FILES = ("Dockerfile", ".dockerignore", "pyproject.toml", "uv.lock", "README.md")
CONTEXT_DIRS = ("protocol", "kraftpy", "tools", "controller", "broker")


def snapshot_context(dest: Path) -> Path:
    """A copy of what the Dockerfile builds from, so that every target of one test run is built from
    the same sources even while the work tree changes (and shares its cached stages)."""
    for name in CONTEXT_FILES:
        shutil.copy2(REPO / name, dest / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in CONTEXT_DIRS:
        shutil.copytree(REPO / name, dest / name, ignore=skip)
    (dest / "docker").mkdir()
    shutil.copy2(DOCKER_DIR / "healthcheck.py", dest / "docker" / "healthcheck.py")
    return dest


def build_targets(
    podman: Podman, python_image: str, context: Path, targets: Sequence[tuple[str | None, str]]
) -> None:
    """Build the Dockerfile's `targets` ((stage or None for the default, tag), in order) with podman,
    in docker format (an OCI image drops HEALTHCHECK).

    Intermediate stages get tags too: an untagged one would be pruned with the image it fed, and with
    it the cached dependency layers. What an earlier build tagged and this one replaced is removed, so
    the cache does not grow with every change of the sources."""
    common = ["--pull=never", "--format", "docker", "--build-arg", f"PYTHON_IMAGE={python_image}"]
    common += ["--label", IMAGE_LABEL]
    old = {tag: image_id(podman, tag) for _, tag in targets}
    for target, tag in targets:
        stage = ["--target", target] if target else []
        podman.podman("build", *common, *stage, "-t", tag, str(context), timeout=1800)
    for tag, before in old.items():
        if before is not None and before != image_id(podman, tag):
            podman.podman("rmi", before, check=False)


def remove_other_tags(podman: Podman, ref: str) -> None:
    """Drop the images of `ref`'s repository cached under other hashes (what they were made from changed)."""
    repo = ref.rsplit(":", 1)[0]
    refs = podman.podman("images", "--format", "{{.Repository}}:{{.Tag}}", repo, check=False).stdout.split()
    stale = [r for r in refs if r != ref and r.startswith(repo + ":")]
    if stale:
        podman.podman("rmi", *stale, check=False)


# ---------------------------------------------------------------------------------------- compose


def project_name() -> str:
    """A compose project name naming the test run that owns it (see `cleanup_stale_projects`)."""
    run_id = launcher.mark_test_run()
    return f"{PROJECT_PREFIX}-{run_id.replace('.', '-')}"


def _run_id_of(project: str) -> str | None:
    m = re.fullmatch(rf"{PROJECT_PREFIX}-(\d+)-(\d+)", project)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def project_resources(podman: Podman, project: str | None = None) -> dict[str, list[str]]:
    """Containers, volumes and networks of test projects (all of them, or `project`'s)."""
    label = "io.podman.compose.project"
    ps = podman.podman("ps", "-a", "--format", "json", check=False)
    containers = []
    for c in json.loads(ps.stdout or "[]") if ps.returncode == 0 else []:
        p = (c.get("Labels") or {}).get(label, "")
        if p.startswith(PROJECT_PREFIX) and (project is None or p == project):
            containers.append(c["Names"][0])
    vols = podman.podman("volume", "ls", "--format", "{{.Name}}", check=False).stdout.split()
    nets = podman.podman("network", "ls", "--format", "{{.Name}}", check=False).stdout.split()

    def ours(name: str) -> bool:
        return name.startswith(f"{project}_") if project else name.startswith(PROJECT_PREFIX)

    return {
        "containers": containers,
        "volumes": [v for v in vols if ours(v)],
        "networks": [n for n in nets if ours(n)],
    }


def remove_resources(podman: Podman, res: Mapping[str, Sequence[str]]) -> None:
    if res["containers"]:
        podman.podman("rm", "-f", "-t", "5", *res["containers"], check=False)
    if res["volumes"]:
        podman.podman("volume", "rm", "-f", *res["volumes"], check=False)
    if res["networks"]:
        podman.podman("network", "rm", "-f", *res["networks"], check=False)


def cleanup_stale_projects(podman: Podman) -> list[str]:
    """Remove the containers, volumes and networks of test projects whose test run is gone."""
    res = project_resources(podman)
    projects = {name.split("_", 1)[0] for kind in res.values() for name in kind}
    # Only a project whose name proves its run is gone: never one of a run still going, or a stranger's.
    stale = sorted(
        p for p in projects if (rid := _run_id_of(p)) is not None and not launcher.owning_run_alive(rid)
    )
    for p in stale:
        remove_resources(podman, project_resources(podman, p))
    return stale


@dataclass
class ComposeProject:
    podman: Podman
    name: str
    image: str
    log_dirs: Mapping[tuple[int, int], Path]  # (broker, dir index) -> host path

    def env(self) -> dict[str, str]:
        env = {"KRAFTPY_IMAGE": self.image}
        for (b, d), path in self.log_dirs.items():
            env[f"KRAFTPY_BROKER_{b}_LOGS_{d}"] = str(path)
        return env

    def compose(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return self.podman.run(
            "podman-compose", "-p", self.name, "-f", str(COMPOSE_FILE), *args,
            check=check, timeout=timeout, env=self.env(), cwd=REPO,
        )  # fmt: skip

    def container(self, service: str) -> str:
        return f"{self.name}_{service}_1"

    def volume(self, name: str) -> str:
        return f"{self.name}_{name}"

    def up(self) -> None:
        self.compose("up", "-d", "--no-build")

    def services(self) -> list[str]:
        return [f"controller-{c}" for c in CONTROLLERS] + [f"broker-{b}" for b in BROKERS]

    def healthcheck(self, service: str) -> bool:
        """Run the container's health check now (without systemd podman runs none by itself)."""
        return self.podman.podman("healthcheck", "run", self.container(service), check=False).returncode == 0

    def inspect(self, service: str) -> dict:
        out = self.podman.podman("inspect", self.container(service), check=False).stdout
        return (json.loads(out or "[]") or [{}])[0]

    def logs(self, service: str, tail: int = 40) -> str:
        p = self.podman.podman("logs", "--tail", str(tail), self.container(service), check=False)
        return p.stdout + p.stderr

    def down(self) -> None:
        """Stop every container at once (podman-compose stops them one by one), then `down -v`, then
        the network, which podman-compose 1.0 leaves behind."""
        names = project_resources(self.podman, self.name)["containers"]
        if names:
            self.podman.podman("stop", "-t", "10", *names, check=False, timeout=120)
        self.compose("down", "-v", check=False)
        remove_resources(self.podman, project_resources(self.podman, self.name))

    def leftovers(self) -> dict[str, list[str]]:
        return {k: v for k, v in project_resources(self.podman, self.name).items() if v}


# ---------------------------------------------------------------------------------------- timing


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    note: str = ""


@dataclass
class Phases:
    """Wall-clock time of each named phase of a test, in order, with a note each may add."""

    done: list[Phase] = field(default_factory=list)

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[Phase]:
        phase = Phase(name)
        started = time.monotonic()
        try:
            yield phase
        finally:
            phase.seconds = time.monotonic() - started
            self.done.append(phase)

    def report(self) -> str:
        width = max((len(p.name) for p in self.done), default=0)
        lines = [f"  {p.name:<{width}}  {p.seconds:6.1f} s  {p.note}".rstrip() for p in self.done]
        lines.append(f"  {'total':<{width}}  {sum(p.seconds for p in self.done):6.1f} s")
        return "\n".join(lines)


def ports_in_use(ports: Sequence[int]) -> list[int]:
    import socket

    busy = []
    for port in ports:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    return busy
