"""Filesystem commands: make, check/repair, mount and unmount."""

from __future__ import annotations

import os

from tools.disk.errors import CommandFailedError, DiskError
from tools.disk.tools import run


def make_filesystem(fs: str, dev: str, label: str) -> None:
    if fs == "ext4":
        # -m 0: no blocks reserved for root, so a broker running as root also meets ENOSPC.
        # No lazy init: no kernel thread keeps writing inode tables in the background after mount.
        run(
            "mkfs.ext4", "-q", "-F", "-m", "0", "-L", label[:16],
            "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0", dev,
        )  # fmt: skip
    elif fs == "xfs":
        run("mkfs.xfs", "-q", "-f", "-K", "-L", label[:12], dev)
    else:
        raise DiskError(f"unsupported filesystem {fs!r}")


def check_filesystem(fs: str, image: str) -> str:
    """Repair the unmounted image; returns what was done. xfs repairs itself by replaying its log at mount."""
    if fs != "ext4":
        return "xfs log replays at mount"
    p = run("e2fsck", "-f", "-y", image, check=False)
    # 0: clean, 1: errors corrected; anything with bit 4 or more set means it could not fix it.
    if p.returncode not in (0, 1):
        raise CommandFailedError(["e2fsck", "-f", "-y", image], p.returncode, p.stderr or p.stdout)
    return "e2fsck: clean" if p.returncode == 0 else "e2fsck: errors corrected"


def mount(fs: str, dev: str, mountpoint: str) -> str:
    os.makedirs(mountpoint, exist_ok=True)
    try:
        run("mount", "-t", fs, dev, mountpoint)
        return "mounted"
    except CommandFailedError:
        if fs != "xfs":
            raise
    # An xfs log that cannot be replayed: zero it and repair (what survives is what was on disk).
    run("xfs_repair", "-L", dev, check=False)
    run("mount", "-t", fs, dev, mountpoint)
    return "mounted after xfs_repair -L"


def unmount(mountpoint: str) -> None:
    """Strict unmount: raises CommandFailedError if the filesystem is busy."""
    run("umount", mountpoint)


def unmount_lazy(mountpoint: str) -> str:
    """Detach the mount from the tree now; the kernel frees it when its last user goes."""
    if run("umount", mountpoint, check=False).returncode == 0:
        return "unmounted"
    run("umount", "--lazy", mountpoint, check=False)
    return "unmounted lazily (still in use)"
