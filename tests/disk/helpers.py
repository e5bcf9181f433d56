"""Processes that hold files on a disk, and checks that nothing of a disk is left in the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# A separate process, as a broker would be: it opens a file on the disk, appends and fsyncs, and reports
# the errno name of each later append, so faults are seen through fds opened before them.
_HOLDER = r"""
import errno, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
os.write(fd, b"before\n")
os.fsync(fd)
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "append":
        try:
            os.write(fd, b"after\n" + b"." * 65530)  # spills into new blocks, so ENOSPC can show
            os.fsync(fd)
            print("ok", flush=True)
        except OSError as e:
            print(errno.errorcode[e.errno], flush=True)
    elif cmd == "close":
        os.close(fd)
        print("closed", flush=True)
"""


class HolderProcess:
    """A child process appending to `path` on command; exits when its stdin closes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, os.fspath(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._reply() == "ready"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _send(self, cmd: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def _reply(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def append(self) -> str:
        """ "ok", or the errno name the append + fsync failed with (e.g. "EIO")."""
        return self._send("append")

    def close_file(self) -> None:
        assert self._send("close") == "closed"

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> HolderProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def mounts_under(root: str | os.PathLike[str]) -> list[str]:
    root = os.path.realpath(root)
    with open("/proc/mounts") as f:
        return [line for line in f if line.split()[1].startswith(root)]


def loops_under(root: str | os.PathLike[str]) -> list[str]:
    root = os.path.realpath(root)
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if root in line]


def wait_no_loops(root: str | os.PathLike[str], timeout: float = 10.0) -> list[str]:
    """Loop devices detach asynchronously once their last user is gone: wait for that, return what stays."""
    deadline = time.monotonic() + timeout
    while (left := loops_under(root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def read(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read()
