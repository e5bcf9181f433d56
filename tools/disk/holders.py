"""Which processes keep a filesystem busy: open fds, cwd/root/exe, memory mappings, and private copies
of the mount in other mount namespaces (e.g. a process started with `ip netns exec`), which keep a
shut-down superblock alive after we unmount ours."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from tools.disk.errors import Holder
from tools.disk.mounts import is_under, parse_mountinfo

_PROC = Path("/proc")


def _command(pid: str) -> str:
    try:
        return (_PROC / pid / "comm").read_text().strip() or "?"
    except OSError:
        return "?"


def _strip_deleted(target: str) -> str:
    return target.removesuffix(" (deleted)")


def _path_hit(pid: str, path: str) -> tuple[str, str] | None:
    """(how, what) if this process uses something under `path` in our mount namespace."""
    base = _PROC / pid
    for how in ("cwd", "root", "exe"):
        try:
            target = _strip_deleted(os.readlink(base / how))
        except OSError:
            continue
        if is_under(target, path) and not (how == "root" and target == "/"):
            return how, target
    try:
        fds = os.listdir(base / "fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            target = _strip_deleted(os.readlink(base / "fd" / fd))
        except OSError:
            continue
        if is_under(target, path):
            return f"fd {fd}", target
    try:
        with open(base / "maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6:
                    target = _strip_deleted(parts[5].rstrip("\n"))
                    if is_under(target, path):
                        return "mapped", target
    except OSError:
        pass
    return None


def find_holders(
    mountpoint: str | os.PathLike[str], devices: Collection[tuple[int, int]] = ()
) -> list[Holder]:
    """Every process using the filesystem mounted at `mountpoint`, or holding a copy of one of
    `devices` mounted in another mount namespace."""
    path = os.path.realpath(mountpoint)
    try:
        my_ns = os.readlink("/proc/self/ns/mnt")
    except OSError:
        my_ns = ""
    foreign_ns_hits: dict[str, str | None] = {}  # mount namespace -> mountpoint of our device there
    holders: list[Holder] = []
    for pid in filter(str.isdigit, os.listdir(_PROC)):
        try:
            ns = os.readlink(_PROC / pid / "ns" / "mnt")
        except OSError:
            continue  # exited, or a kernel thread
        if ns != my_ns and devices:
            if ns not in foreign_ns_hits:
                foreign_ns_hits[ns] = _device_mountpoint_in(pid, devices)
            where = foreign_ns_hits[ns]
            if where is not None:
                holders.append(Holder(int(pid), _command(pid), "own mount namespace with a copy at", where))
                continue
        hit = _path_hit(pid, path)
        if hit is not None:
            holders.append(Holder(int(pid), _command(pid), hit[0], hit[1]))
    return sorted(holders, key=lambda h: h.pid)


def _device_mountpoint_in(pid: str, devices: Collection[tuple[int, int]]) -> str | None:
    try:
        entries = parse_mountinfo((_PROC / pid / "mountinfo").read_text())
    except OSError:
        return None
    for e in entries:
        if e.device in devices:
            return e.mountpoint
    return None
