"""Run real kraftpy processes in tests: ports, config files, `kraftpy storage format`, start, wait, stop.

Every process is started in its own session (process group), with stdout and stderr going to a log
file, so a test can read what it printed and a finalizer can kill the whole group even when the test
fails. Typical use through the `processes` fixture pattern:

    procs = ProcessSet(tmp_path)
    request.addfinalizer(procs.stop_all)
    cfg = write_controller_config(tmp_path / "controller.properties", node_id=1, port=free_port(),
                                  metadata_dir=tmp_path / "meta")
    format_storage(cfg, cluster_id=random_cluster_id())
    ctl = procs.start_controller(cfg)
    wait_for_healthz(ctl)

For a whole cluster, `write_layout(root, {2: 3, 3: 1})` writes one controller and brokers 2 and 3
(with 3 and 1 log dirs), and `format_layout(layout, cluster_id)` formats every node.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOOPBACK = "127.0.0.1"
CONTROLLER_LISTENER = "CONTROLLER"
BROKER_LISTENER = "PLAINTEXT"


# ---- ports ---------------------------------------------------------------------------------------


def free_ports(n: int) -> list[int]:
    """`n` distinct ports free on 127.0.0.1 right now (all held open together, so never the same twice)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


# ---- config files ----------------------------------------------------------------------------------


def random_cluster_id() -> str:
    from protocol.uuid import Uuid

    return str(Uuid.random())


def voters_string(voters: Mapping[int, int]) -> str:
    """controller.quorum.voters for {node id: port} on 127.0.0.1."""
    return ",".join(f"{node}@{LOOPBACK}:{port}" for node, port in sorted(voters.items()))


def _write(path: Path, props: dict[str, str], extra: Mapping[str, object] | None) -> Path:
    for key, value in (extra or {}).items():
        props[key] = str(value).lower() if isinstance(value, bool) else str(value)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Plain `key=value` lines as people write them (colons unescaped); no value here needs escaping.
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def write_controller_config(
    path: Path,
    *,
    node_id: int,
    port: int,
    metadata_dir: Path,
    voters: Mapping[int, int] | None = None,
    extra: Mapping[str, object] | None = None,
) -> Path:
    """A controller-only node serving CONTROLLER://127.0.0.1:`port`; a single voter unless `voters` given."""
    props = {
        "process.roles": "controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters_string(voters or {node_id: port}),
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": f"{CONTROLLER_LISTENER}://{LOOPBACK}:{port}",
        "log.dirs": str(metadata_dir),
        "metadata.log.dir": str(metadata_dir),
    }
    return _write(path, props, extra)


def write_broker_config(
    path: Path,
    *,
    node_id: int,
    port: int,
    log_dirs: Sequence[Path],
    voters: Mapping[int, int],
    metadata_dir: Path | None = None,
    rack: str | None = None,
    extra: Mapping[str, object] | None = None,
) -> Path:
    """A broker-only node serving PLAINTEXT://127.0.0.1:`port` with `log_dirs` (JBOD when more than one)."""
    props = {
        "process.roles": "broker",
        "node.id": str(node_id),
        "controller.quorum.voters": voters_string(voters),
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": f"{BROKER_LISTENER}://{LOOPBACK}:{port}",
        "inter.broker.listener.name": BROKER_LISTENER,
        "log.dirs": ",".join(str(d) for d in log_dirs),
    }
    if metadata_dir is not None:
        props["metadata.log.dir"] = str(metadata_dir)
    if rack is not None:
        props["broker.rack"] = rack
    return _write(path, props, extra)


@dataclass(frozen=True)
class NodeFiles:
    """Where one node of a layout lives: its config file, listener port and directories."""

    node_id: int
    role: str  # "controller" or "broker"
    config: Path
    port: int
    log_dirs: tuple[Path, ...]
    metadata_dir: Path

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


@dataclass(frozen=True)
class Layout:
    controller: NodeFiles
    brokers: dict[int, NodeFiles]

    @property
    def nodes(self) -> list[NodeFiles]:
        return [self.controller, *(self.brokers[b] for b in sorted(self.brokers))]


def write_layout(
    root: Path,
    brokers: Mapping[int, int],
    *,
    controller_id: int = 1,
    controller_extra: Mapping[str, object] | None = None,
    broker_extra: Mapping[str, object] | None = None,
) -> Layout:
    """Config files for one controller and `brokers` ({broker id: number of log dirs}) under `root`.

    Broker b's log dirs are `root/broker-b/dir-0..n-1`; its metadata log goes in its first log dir
    (Kafka's default). Nothing is formatted: call `format_layout`.
    """
    ports = free_ports(1 + len(brokers))
    cdir = root / f"controller-{controller_id}"
    controller = NodeFiles(
        controller_id,
        "controller",
        write_controller_config(
            cdir / "controller.properties",
            node_id=controller_id,
            port=ports[0],
            metadata_dir=cdir / "metadata",
            extra=controller_extra,
        ),
        ports[0],
        (cdir / "metadata",),
        cdir / "metadata",
    )
    voters = {controller_id: ports[0]}
    out: dict[int, NodeFiles] = {}
    for port, (broker_id, n_dirs) in zip(ports[1:], sorted(brokers.items()), strict=True):
        bdir = root / f"broker-{broker_id}"
        log_dirs = tuple(bdir / f"dir-{i}" for i in range(n_dirs))
        config = write_broker_config(
            bdir / "broker.properties",
            node_id=broker_id,
            port=port,
            log_dirs=log_dirs,
            voters=voters,
            extra=broker_extra,
        )
        out[broker_id] = NodeFiles(broker_id, "broker", config, port, log_dirs, log_dirs[0])
    return Layout(controller, out)


def format_layout(layout: Layout, cluster_id: str, **kw: object) -> None:
    """`kraftpy storage format` every node of `layout` with the same cluster id."""
    for node in layout.nodes:
        format_storage(node.config, cluster_id, **kw)  # type: ignore[arg-type]


# ---- commands ------------------------------------------------------------------------------------------


def kraftpy_command(*args: str) -> list[str]:
    """argv running the `kraftpy` CLI of this checkout."""
    exe = BIN / "kraftpy"
    if exe.exists():
        return [str(exe), *args]
    return [sys.executable, "-m", "tools.cli.main", *args]


def run_kraftpy(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `kraftpy ARGS`; with `check`, a non-zero exit raises with its output in the message."""
    proc = subprocess.run(
        kraftpy_command(*args), cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"`kraftpy {' '.join(args)}` exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def run_kraftpy_json(*args: str, timeout: float = 120) -> object:
    """Run a `kraftpy ... --json` command and parse its stdout."""
    return json.loads(run_kraftpy(*args, timeout=timeout).stdout)


def format_storage(
    config: Path,
    cluster_id: str,
    *,
    release_version: str | None = None,
    features: Mapping[str, int] | None = None,
    ignore_formatted: bool = False,
    extra_args: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`kraftpy storage format -c CONFIG -t CLUSTER_ID [...]`, failing loudly."""
    args = ["storage", "format", "-c", str(config), "-t", cluster_id]
    if release_version is not None:
        args += ["-r", release_version]
    for name, level in (features or {}).items():
        args += ["-f", f"{name}={level}"]
    if ignore_formatted:
        args.append("-g")
    args += list(extra_args)
    return run_kraftpy(*args)


def controller_command(config: Path) -> list[str]:
    exe = BIN / "kraftpy-controller"
    if exe.exists():
        return [str(exe), "-c", str(config)]
    return [sys.executable, "-m", "controller.main", "-c", str(config)]


def broker_command(config: Path) -> list[str]:
    exe = BIN / "kraftpy-broker"
    if exe.exists():
        return [str(exe), "-c", str(config)]
    return [sys.executable, "-m", "broker.main", "-c", str(config)]


# ---- processes -----------------------------------------------------------------------------------------


@dataclass
class ManagedProcess:
    """A started process with its own process group; output in `log_path`."""

    name: str
    argv: list[str]
    popen: subprocess.Popen[bytes]
    log_path: Path
    base_url: str | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout)

    def kill9(self) -> int:
        """SIGKILL the whole group, as a crash would; returns the exit status (-9)."""
        self.signal_group(signal.SIGKILL)
        return self.popen.wait(30)

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM, then SIGKILL if it has not exited within `timeout`; returns the exit status."""
        if self.alive:
            self.signal_group(signal.SIGTERM)
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.signal_group(signal.SIGKILL)
        return self.popen.wait(30)


def start_process(
    name: str,
    argv: Sequence[str],
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    base_url: str | None = None,
) -> ManagedProcess:
    """Start `argv` in a new session, appending its stdout and stderr to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    if env:
        full_env.update(env)
    with open(log_path, "ab") as out:
        popen = subprocess.Popen(
            list(argv),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            start_new_session=True,
        )
    return ManagedProcess(name=name, argv=list(argv), popen=popen, log_path=log_path, base_url=base_url)


def url_of(config: Path, listener: str | None = None) -> str:
    """Base URL of a node's listener (the controller listener for a controller, else the first one)."""
    from kraftpy.config import load_config

    cfg = load_config(config)
    if listener is None:
        names = cfg.controller_listener_names or []
        own = [e for e in cfg.listener_list if (e.name in names) == cfg.is_controller]
        endpoint = (own or cfg.listener_list)[0]
    else:
        endpoint = cfg.listener(listener)
    return endpoint.url


def get_json(url: str, timeout: float = 2.0) -> tuple[int, object]:
    """GET a JSON document; returns (HTTP status, parsed body or text)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            body = resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        body, status = e.read(), e.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode(errors="replace")


def wait_for_healthz(
    proc: ManagedProcess, timeout: float = 30.0, url: str | None = None
) -> dict[str, object]:
    """Poll `/healthz` until it answers 200; fail with the process log if it exits or never gets there."""
    base = url or proc.base_url
    if base is None:
        raise ValueError(f"{proc.name}: no URL to poll")
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if not proc.alive:
            raise AssertionError(
                f"{proc.name} exited with {proc.returncode} before becoming healthy; log:\n{proc.log_tail()}"
            )
        try:
            status, body = get_json(f"{base}/healthz", timeout=1.0)
            if status == 200 and isinstance(body, dict):
                return body
            last = (status, body)
        except (OSError, urllib.error.URLError) as e:
            last = e
        time.sleep(0.05)
    raise AssertionError(
        f"{proc.name} not healthy after {timeout}s (last: {last!r}); log:\n{proc.log_tail()}"
    )


def stop_process(proc: ManagedProcess, timeout: float = 15.0) -> int:
    return proc.terminate(timeout)


@dataclass
class ProcessSet:
    """Processes started by one test; `stop_all` (register it as a finalizer) ends every one of them."""

    workdir: Path
    started: list[ManagedProcess] = field(default_factory=list)

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        base_url: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ManagedProcess:
        log_path = self.workdir / "logs" / f"{name}.log"
        proc = start_process(name, argv, log_path, env=env, base_url=base_url)
        self.started.append(proc)
        return proc

    def start_controller(self, config: Path, *, name: str | None = None) -> ManagedProcess:
        return self.start(
            name or f"controller-{config.stem}", controller_command(config), base_url=url_of(config)
        )

    def start_broker(self, config: Path, *, name: str | None = None) -> ManagedProcess:
        return self.start(name or f"broker-{config.stem}", broker_command(config), base_url=url_of(config))

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            if proc.alive:
                proc.terminate(timeout=10)
