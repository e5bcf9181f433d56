"""The cluster's log dirs as disks: real loop-device filesystems (tools.disk), or plain directories.

With real disks every fault is the kernel's own (filesystem shutdown: EIO; shrunk device: block-layer
EIO; full disk: ENOSPC). Plain directories cannot be broken that way without root, so their failure
is made by swapping the directory for a regular file: every path under it then fails with ENOTDIR,
an OSError the broker meets on its next open, create or probe, exactly as it would meet EIO. Files
the broker already holds open keep working until it closes them, as they do on a dying disk whose
page cache still answers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from tools.cluster.errors import ClusterError
from tools.cluster.spec import ClusterSpec, DirPlan, NodePlan

FAILED_SUFFIX = ".failed"
FAULT_NOTE = (
    "kraftpy cluster: this log dir is failed on purpose (the directory was swapped for this file);\n"
    "`heal` puts it back.\n"
)
FAULTS = ("fail", "yank", "fill")


def real_disks_available(fs: tuple[str, ...] = ("ext4",)) -> str | None:
    """None when loop-device disks can be made here, else why not."""
    from tools.disk import have_tools

    if os.geteuid() != 0:
        return "real disks need root (loop devices, mounts)"
    if not os.path.exists("/dev/loop-control"):
        return "real disks need loop devices (/dev/loop-control is missing)"
    for kind in set(fs):
        if not have_tools(kind):
            return f"real {kind} disks need losetup and mkfs.{kind}"
    return None


class ClusterDisks:
    """Disks of one cluster, kept in `<work dir>/disks` so `down` finds them from any invocation."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        from tools.disk import DiskSet

        self.state_dir = Path(state_dir)
        self.disk_set = DiskSet(self.state_dir)

    def create(self, nodes: list[NodePlan], spec: ClusterSpec) -> None:
        for node in nodes:
            wanted = [*node.log_dirs, *([node.metadata_disk] if node.metadata_disk else [])]
            for d in wanted:
                if d.disk is None or d.mountpoint is None:
                    continue
                if d.disk in self.disk_set:
                    continue
                self.disk_set.create(d.disk, fs=d.fs or "ext4", size=spec.disk_size, mountpoint=d.mountpoint)
                # The log dir is a subdirectory, so the filesystem's own lost+found never looks like a
                # partition dir to the broker.
                Path(d.path).mkdir(exist_ok=True)

    def disk(self, d: DirPlan):  # type: ignore[no-untyped-def]
        if d.disk is None:
            raise ClusterError(f"{d.path} is a plain directory, not a disk")
        return self.disk_set.get(d.disk)

    def destroy_all(self) -> list[str]:
        from tools.disk import cleanup_leftovers

        actions = self.disk_set.destroy_all()
        actions += cleanup_leftovers(self.state_dir.parent)
        return actions


def inject(d: DirPlan, how: str, disks: ClusterDisks | None) -> str:
    """Break log dir `d`: "fail" (EIO), "yank" (block-layer EIO) or "fill" (ENOSPC); returns what was done."""
    if how not in FAULTS:
        raise ClusterError(f"unknown fault {how!r}; one of {', '.join(FAULTS)}")
    if d.disk is not None:
        if disks is None:
            raise ClusterError("this cluster's disks are not known")
        disk = disks.disk(d)
        if how == "fail":
            disk.fail()
            return f"{d.path}: filesystem shut down ({disk.loop_device}): every I/O now fails with EIO"
        if how == "yank":
            disk.yank()
            return f"{d.path}: loop device shrunk under the filesystem: block-layer EIO"
        taken = disk.fill()
        return f"{d.path}: filled ({taken} bytes taken): writes now fail with ENOSPC"
    if how != "fail":
        raise ClusterError(f"'{how}' needs a real disk; plain directories only support 'fail'")
    path = Path(d.path)
    moved = Path(str(path) + FAILED_SUFFIX)
    if moved.exists():
        raise ClusterError(f"{path} is already failed")
    os.rename(path, moved)
    path.write_text(FAULT_NOTE)
    return f"{d.path}: directory swapped for a file: every path under it now fails with ENOTDIR"


def is_failed_plain(d: DirPlan) -> bool:
    return d.disk is None and os.path.exists(str(d.path) + FAILED_SUFFIX)


def heal(d: DirPlan, disks: ClusterDisks | None) -> list[str]:
    """Undo a fault. A real disk is unmounted, checked and remounted, which needs nothing holding it
    (stop the broker first, or let it close its files on the offline dir)."""
    if d.disk is not None:
        if disks is None:
            raise ClusterError("this cluster's disks are not known")
        disk = disks.disk(d)
        from tools.disk import DiskBusyError

        try:
            actions = disk.heal()
        except DiskBusyError as e:
            raise ClusterError(f"cannot heal {d.path} yet: {e}") from None
        Path(d.path).mkdir(exist_ok=True)
        return actions
    path = Path(d.path)
    moved = Path(str(path) + FAILED_SUFFIX)
    if not moved.exists():
        return []
    if path.is_file() or path.is_symlink():
        path.unlink()
    elif path.is_dir():
        # Something recreated it meanwhile: keep its content beside, never delete data silently.
        shutil.move(str(path), str(path) + ".recreated")
    os.rename(moved, path)
    return [f"{d.path}: directory restored"]


def used_bytes(d: DirPlan) -> int | None:
    """Bytes used by the dir: the filesystem's use for a disk (statvfs works even on a dead one),
    the files' sizes for a plain directory."""
    if d.mountpoint is not None:
        try:
            st = os.statvfs(d.mountpoint)
        except OSError:
            return None
        return (st.f_blocks - st.f_bfree) * st.f_frsize
    total = 0
    for root, _dirs, files in os.walk(d.path, onerror=lambda e: None):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_size
    return total


def size_bytes(d: DirPlan) -> int | None:
    if d.mountpoint is None:
        return None
    try:
        st = os.statvfs(d.mountpoint)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize
