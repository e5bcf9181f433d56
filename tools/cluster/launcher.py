"""Start and stop kraftpy processes: the one launcher behind `kraftpy cluster`, the demo, the tests and
the benchmarks.

Each process runs in its own session (its PID is its process group) with stdout and stderr appended
to a log file, so signalling the group reaches anything it started and its output outlives it. A
process is held in one of two ways:

- a `ManagedProcess`, by the invocation that started it (a test, a benchmark, `LocalCluster.up`);
  `ProcessSet` collects them so one finalizer stops them all;
- a (PID, start time) pair, by any later invocation (`kraftpy cluster down`, the restart watcher). A
  PID alone could be recycled, so a process is ours only while its start time (/proc/PID/stat)
  matches the one recorded when it was started.

What a test or benchmark starts carries `KRAFTPY_TEST_RUN=<pid>.<start time>` of the run that owns
it (`mark_test_run`), inherited by everything it starts in turn. The crash janitor ends only marked
processes whose owning run is gone, so a `kraftpy cluster` someone has up, and a test run still in
progress beside it, are never its business.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
LOOPBACK = "127.0.0.1"
PR_SET_PDEATHSIG = 1

TEST_RUN_ENV = "KRAFTPY_TEST_RUN"

# Children started by this process: polled so they never linger as zombies that look alive.
_children: dict[int, subprocess.Popen[bytes]] = {}


# ---- commands --------------------------------------------------------------------------------------


ZOOKEEPER_CLASSPATH = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"


def zookeeper_command(config: str | os.PathLike[str]) -> list[str]:
    """argv of Debian's ZooKeeper run standalone from `config` (zoo.cfg), logging warnings to stderr
    (the jar has no logging binding of its own: slf4j-simple gives it one)."""
    return [
        "java",
        "-Xmx256m",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        ZOOKEEPER_CLASSPATH,
        "org.apache.zookeeper.server.ZooKeeperServerMain",
        os.fspath(config),
    ]


def zookeeper_available() -> bool:
    import shutil

    return shutil.which("java") is not None and all(os.path.exists(j) for j in ZOOKEEPER_CLASSPATH.split(":"))


def node_command(role: str, config: str | os.PathLike[str], *args: str) -> list[str]:
    """argv of `kraftpy-controller -c FILE` or `kraftpy-broker -c FILE` from this environment (or of
    the ZooKeeper server of a ZooKeeper-mode cluster)."""
    if role == "zookeeper":
        return zookeeper_command(config)
    script = BIN / f"kraftpy-{role}"
    if script.exists():
        return [str(script), "-c", os.fspath(config), *args]
    return [sys.executable, "-m", f"{role}.main", "-c", os.fspath(config), *args]


def kraftpy_command(*args: str) -> list[str]:
    """argv running the `kraftpy` CLI of this environment."""
    exe = BIN / "kraftpy"
    if exe.exists():
        return [str(exe), *args]
    return [sys.executable, "-m", "tools.cli.main", *args]


def run_kraftpy(
    *args: str, check: bool = True, timeout: float = 120, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `kraftpy ARGS`; with `check`, a non-zero exit raises with its output in the message."""
    proc = subprocess.run(
        kraftpy_command(*args), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"`kraftpy {' '.join(args)}` exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def format_storage(
    config: str | os.PathLike[str],
    cluster_id: str,
    *,
    release_version: str | None = None,
    features: Mapping[str, int] | None = None,
    ignore_formatted: bool = False,
    extra_args: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`kraftpy storage format -c CONFIG -t CLUSTER_ID [...]` as an operator runs it, failing loudly."""
    args = ["storage", "format", "-c", os.fspath(config), "-t", cluster_id]
    if release_version is not None:
        args += ["-r", release_version]
    for name, level in (features or {}).items():
        args += ["-f", f"{name}={level}"]
    if ignore_formatted:
        args.append("-g")
    args += list(extra_args)
    return run_kraftpy(*args)


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


def ports_from(base: int, n: int) -> list[int]:
    """`n` consecutive ports from `base`, each checked free on 127.0.0.1; ValueError naming a taken one."""
    if not 1024 <= base <= 65535 - n + 1:
        raise ValueError(f"--base-port must leave room for {n} ports between 1024 and 65535, not {base}")
    for port in range(base, base + n):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                raise ValueError(f"port {port} ({base}..{base + n - 1} asked for) is in use") from None
    return list(range(base, base + n))


def stable_base_port(work_dir: str, n: int) -> int | None:
    """The first of `n` consecutive ports derived from the cluster's work dir, so that the same
    cluster gets the same addresses every time it is brought up (and two work dirs most likely
    different ones); None when any of them is taken. Kept below Linux's ephemeral range (32768+),
    where outgoing connections would take them at random."""
    digest = int(hashlib.sha256(os.path.abspath(work_dir).encode()).hexdigest(), 16)
    base = 20000 + (digest % 1200) * 10
    try:
        ports_from(base, n)
    except ValueError:
        return None
    return base


def free_port() -> int:
    return free_ports(1)[0]


# ---- processes by PID --------------------------------------------------------------------------------


def proc_start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks), None if there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; fields after it follow the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    if rest and rest[0] == b"Z":
        return None
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU time the processes have used (fields 14 and 15 of /proc/PID/stat), 0 for one
    that is gone."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            raw = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        rest = raw[raw.rfind(b")") + 2 :].split()
        total += (int(rest[11]) + int(rest[12])) / tick
    return total


def is_running(pid: int, start_time: int) -> bool:
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        _children.pop(pid, None)
        return False
    return proc_start_time(pid) == start_time


def exit_code(pid: int) -> int | None:
    """The exit status of a child this process started and that has exited, else None."""
    child = _children.get(pid)
    return None if child is None else child.poll()


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def wait_gone(pid: int, start_time: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(pid, start_time):
            return True
        time.sleep(0.02)
    return not is_running(pid, start_time)


def stop(pid: int, start_time: int, timeout: float = 15.0) -> str:
    """SIGTERM, then SIGKILL after `timeout`; returns how it ended ("gone", "terminated", "killed")."""
    return stop_many([(pid, start_time)], timeout)[pid]


def stop_many(targets: Sequence[tuple[int, int]], timeout: float = 15.0) -> dict[int, str]:
    """`stop` for several processes at once: all get SIGTERM together, then SIGKILL if still there."""
    out: dict[int, str] = {}
    live = []
    for pid, start in targets:
        if is_running(pid, start):
            _signal_group(pid, signal.SIGTERM)
            live.append((pid, start))
        else:
            out[pid] = "gone"
    deadline = time.monotonic() + timeout
    for pid, start in live:
        if wait_gone(pid, start, max(0.0, deadline - time.monotonic())):
            out[pid] = "terminated"
        else:
            _signal_group(pid, signal.SIGKILL)
            wait_gone(pid, start, 10.0)
            out[pid] = "killed"
    for pid, _start in targets:
        _reap(pid)
    return out


def kill(pid: int, start_time: int) -> None:
    """SIGKILL at once, as a crash would."""
    if is_running(pid, start_time):
        _signal_group(pid, signal.SIGKILL)
        wait_gone(pid, start_time, 10.0)
    _reap(pid)


def _reap(pid: int) -> None:
    child = _children.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(5)


# ---- test-run markers -----------------------------------------------------------------------------


def mark_test_run() -> str:
    """This process's test-run id, set in its environment so every child (including the nodes of a
    `kraftpy cluster` or disks a test brings up) inherits it. A run started from inside another
    keeps the outer id: the outer run owns the leftovers."""
    run_id = os.environ.get(TEST_RUN_ENV)
    if not run_id:
        run_id = f"{os.getpid()}.{proc_start_time(os.getpid())}"
        os.environ[TEST_RUN_ENV] = run_id
    return run_id


def owning_run_alive(run_id: str) -> bool:
    """Whether the run that wrote `run_id` still runs. A malformed id counts as alive: the janitor
    must never take something it cannot prove is a dead run's."""
    pid, _, start = run_id.partition(".")
    if not (pid.isdigit() and start.isdigit()):
        return True
    return proc_start_time(int(pid)) == int(start)


def run_marker_of(pid: int) -> str | None:
    """The test-run id in a process's initial environment, None when unmarked or unreadable."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = TEST_RUN_ENV.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def log_tail(path: str | os.PathLike[str], lines: int = 20) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# ---- processes this invocation holds ------------------------------------------------------------------


@dataclass
class ManagedProcess:
    """A started process with its own process group; output in `log_path`."""

    name: str
    argv: list[str]
    popen: subprocess.Popen[bytes]
    log_path: Path
    start_time: int
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
        return self._reaped(self.popen.wait(30))

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM, then SIGKILL if it has not exited within `timeout`; returns the exit status."""
        if self.alive:
            self.signal_group(signal.SIGTERM)
            try:
                return self._reaped(self.popen.wait(timeout))
            except subprocess.TimeoutExpired:
                pass
        self.signal_group(signal.SIGKILL)
        return self._reaped(self.popen.wait(30))

    def _reaped(self, status: int) -> int:
        _children.pop(self.popen.pid, None)
        return status


def _die_with(parent: int) -> Callable[[], None]:
    def pre_exec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        # The parent may have died between fork and prctl; then no signal would ever come.
        if os.getppid() != parent:
            os._exit(1)

    return pre_exec


def spawn(
    argv: Sequence[str],
    log_path: str | os.PathLike[str],
    *,
    name: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    base_url: str | None = None,
    die_with_parent: bool = False,
) -> ManagedProcess:
    """Start `argv` in a new session with stdout and stderr appended to `log_path`.

    `die_with_parent`: the kernel SIGKILLs the process when this one dies, even without running its
    finalizers (a test run killed or timed out hard). Only a process started from the main thread gets
    it: the kernel ties the signal to the thread that forked, and a worker thread ending is no death.
    Nodes of `kraftpy cluster up` must outlive the command that started them, so they do without.
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    pre_exec = None
    if die_with_parent and threading.current_thread() is threading.main_thread():
        pre_exec = _die_with(os.getpid())
    with open(log_path, "ab") as out:
        popen = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            start_new_session=True,
            preexec_fn=pre_exec,
        )
    _children[popen.pid] = popen
    start = None
    for _ in range(100):
        start = proc_start_time(popen.pid)
        if start is not None or popen.poll() is not None:
            break
        time.sleep(0.005)
    return ManagedProcess(
        name=name or Path(argv[0]).name,
        argv=list(argv),
        popen=popen,
        log_path=log_path,
        start_time=start if start is not None else -1,
        base_url=base_url,
    )


def url_of(config: str | os.PathLike[str], listener: str | None = None) -> str:
    """Base URL of a node's listener (the controller listener for a controller, else the first one)."""
    from kraftpy.config import load_config

    cfg = load_config(Path(config))
    if listener is None:
        names = cfg.controller_listener_names or []
        own = [e for e in cfg.listener_list if (e.name in names) == cfg.is_controller]
        endpoint = (own or cfg.listener_list)[0]
    else:
        endpoint = cfg.listener(listener)
    return endpoint.url


def get_json(url: str, timeout: float = 2.0) -> tuple[int, object]:
    """GET a JSON document; returns (HTTP status, parsed body or text). Over TLS with the command
    config's client certificate when there is one (tools.client.security)."""
    from tools.client.security import urlopen

    try:
        with urlopen(url, timeout) as resp:
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


@dataclass
class ProcessSet:
    """Processes started by one test or benchmark, logs in `workdir/logs`; `stop_all` (a finalizer)
    ends every one of them, and with `die_with_parent` the kernel ends them if this process dies first."""

    workdir: Path
    die_with_parent: bool = True
    started: list[ManagedProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        # A hard-killed run's leftovers must be recognisable as a test's, not an operator's.
        mark_test_run()

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        base_url: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ManagedProcess:
        proc = spawn(
            argv,
            self.workdir / "logs" / f"{name}.log",
            name=name,
            env=env,
            base_url=base_url,
            die_with_parent=self.die_with_parent,
        )
        self.started.append(proc)
        return proc

    def start_node(
        self, role: str, config: Path, *, name: str | None = None, args: Sequence[str] = ()
    ) -> ManagedProcess:
        argv = node_command(role, config, *args)
        return self.start(name or f"{role}-{config.stem}", argv, base_url=url_of(config))

    def start_controller(self, config: Path, *, name: str | None = None) -> ManagedProcess:
        return self.start_node("controller", config, name=name)

    def start_broker(
        self, config: Path, *, name: str | None = None, args: Sequence[str] = ()
    ) -> ManagedProcess:
        return self.start_node("broker", config, name=name, args=args)

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            if proc.alive:
                proc.terminate(timeout=10)
            # Exited on their own: no longer this process's children to track.
            _children.pop(proc.pid, None)
