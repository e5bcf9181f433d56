"""Start and stop node processes by PID, so any invocation can stop what another one started.

Each node runs in its own session (its PID is its process group), with stdout and stderr appended
to its log file. A PID alone could be recycled, so a process is ours only while its start time
(/proc/PID/stat) matches the one recorded when it was started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

BIN = Path(sys.executable).parent

# Children started by this process: polled so they never linger as zombies that look alive.
_children: dict[int, subprocess.Popen[bytes]] = {}


def node_command(role: str, config: str) -> list[str]:
    """argv of `kraftpy-controller -c FILE` or `kraftpy-broker -c FILE` from this environment."""
    script = BIN / f"kraftpy-{role}"
    if script.exists():
        return [str(script), "-c", config]
    return [sys.executable, "-m", f"{role}.main", "-c", config]


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


def spawn(
    argv: Sequence[str],
    log_path: str | Path,
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int, int]:
    """Start `argv` in a new session with output appended to `log_path`; returns (pid, start time)."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ)
    full_env["PYTHONUNBUFFERED"] = "1"
    if env:
        full_env.update(env)
    with open(log_path, "ab") as out:
        popen = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            start_new_session=True,
        )
    _children[popen.pid] = popen
    start = None
    for _ in range(100):
        start = proc_start_time(popen.pid)
        if start is not None or popen.poll() is not None:
            break
        time.sleep(0.005)
    return popen.pid, start if start is not None else -1


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


def send(pid: int, start_time: int, sig: int) -> bool:
    """Signal the node's process group if the PID is still ours; False if it is gone."""
    if not is_running(pid, start_time):
        return False
    _signal_group(pid, sig)
    return True


def stop(pid: int, start_time: int, timeout: float = 15.0) -> str:
    """SIGTERM, then SIGKILL after `timeout`; returns how it ended ("gone", "terminated", "killed")."""
    if not is_running(pid, start_time):
        _reap(pid)
        return "gone"
    _signal_group(pid, signal.SIGTERM)
    if wait_gone(pid, start_time, timeout):
        _reap(pid)
        return "terminated"
    _signal_group(pid, signal.SIGKILL)
    wait_gone(pid, start_time, 10.0)
    _reap(pid)
    return "killed"


def stop_many(targets: list[tuple[int, int]], timeout: float = 15.0) -> dict[int, str]:
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


def log_tail(path: str | Path, lines: int = 20) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
