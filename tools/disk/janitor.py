"""Releasing mounts and loop devices, also when the state that described them is lost (a crash).

Disks a test run creates carry a marker: a `test-run` file in their state dir holding the run's id
(tools/cluster/launcher.py's KRAFTPY_TEST_RUN). A janitor clearing a dead test run's leftovers takes
only those state dirs, never the disks of a cluster an operator has up.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection
from pathlib import Path

from tools.disk.errors import DiskError
from tools.disk.fs import unmount_lazy
from tools.disk.live import current_mounts
from tools.disk.loopdev import LoopDevice, attached_loop_devices, detach, set_size_limit, wait_detached
from tools.disk.mounts import is_under, parse_mountinfo
from tools.disk.state import IMAGE_SUFFIX
from tools.disk.tools import run, which


def release(
    devices: Collection[tuple[str, tuple[int, int]]], extra_mountpoints: Collection[str] = ()
) -> list[str]:
    """Unmount every mount of `devices` ((path, major:minor) pairs) and detach them. Never raises.

    Busy mounts are unmounted lazily: gone from the tree at once, freed by the kernel when the last
    user exits; a loop device still in use then detaches itself at that moment (autoclear).
    """
    actions: list[str] = []
    numbers = {num for _, num in devices}
    for path, _ in devices:
        with contextlib.suppress(DiskError, OSError):
            set_size_limit(path, 0)  # a yanked fs flushes its last writes to a whole device
    for _ in range(8):  # stacked mounts of the same device come off one per pass
        entries = [e for e in current_mounts() if e.device in numbers or e.mountpoint in extra_mountpoints]
        if not entries:
            break
        # Deepest first, so a mount inside another is not hidden by its parent's lazy unmount.
        for mp in sorted({e.mountpoint for e in entries}, key=lambda m: m.count("/"), reverse=True):
            actions.append(f"{mp}: {unmount_lazy(mp)}")
    actions += _release_foreign_copies(numbers)
    for path, _ in devices:
        detach(path)
        backing = _backing_of(path)
        if backing is not None and not wait_detached(path, backing, timeout=0.5):
            actions.append(f"{path}: still in use; it detaches by itself when its last user exits")
        else:
            actions.append(f"{path}: detached")
    return actions


def _backing_of(dev: str) -> str | None:
    for d in attached_loop_devices():
        if d.path == dev:
            return d.backing_file
    return None


def _release_foreign_copies(numbers: Collection[tuple[int, int]]) -> list[str]:
    """Unmount copies kept by processes in other mount namespaces, which would pin the old superblock."""
    if not numbers or which("nsenter") is None:
        return []
    actions = []
    try:
        my_ns = os.readlink("/proc/self/ns/mnt")
    except OSError:
        return []
    seen: set[str] = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ns = os.readlink(f"/proc/{pid}/ns/mnt")
            if ns == my_ns or ns in seen:
                continue
            seen.add(ns)
            entries = parse_mountinfo(Path(f"/proc/{pid}/mountinfo").read_text())
        except OSError:
            continue
        for mp in sorted({e.mountpoint for e in entries if e.device in numbers}, key=len, reverse=True):
            p = run("nsenter", f"--mount=/proc/{pid}/ns/mnt", "--", "umount", "--lazy", mp, check=False)
            if p.returncode == 0:
                actions.append(f"{mp}: unmounted lazily in the mount namespace of pid {pid}")
    return actions


# The launcher's name; repeated so the disk tool does not depend on the cluster tool.
TEST_RUN_ENV = "KRAFTPY_TEST_RUN"
TEST_RUN_MARKER = "test-run"


def mark_if_test_run(state_dir: str | os.PathLike[str]) -> None:
    """Tag a state dir as a test run's when this process belongs to one; the first run to use it owns it."""
    run_id = os.environ.get(TEST_RUN_ENV)
    marker = Path(state_dir) / TEST_RUN_MARKER
    if run_id and not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(run_id + "\n")


def marked_state_dirs() -> dict[Path, str]:
    """State dirs of attached kraftpy disks that a test run created, with that run's id.

    Images live in `<state_dir>/images`, so the marker is looked for two levels above each image.
    """
    out: dict[Path, str] = {}
    for d in attached_loop_devices():
        if not d.backing_file.endswith(IMAGE_SUFFIX):
            continue
        state_dir = Path(d.backing_file).parent.parent
        with contextlib.suppress(OSError):
            out[state_dir] = (state_dir / TEST_RUN_MARKER).read_text().strip()
    return out


def select_leftovers(devices: Collection[LoopDevice], base: str | None) -> list[LoopDevice]:
    """Loop devices a janitor may take: backed by a file under `base`, or else by a kraftpy image."""
    if base is not None:
        return [d for d in devices if is_under(d.backing_file, base)]
    return [d for d in devices if d.backing_file.endswith(IMAGE_SUFFIX)]


def cleanup_leftovers(prefix: str | os.PathLike[str] | None = None) -> list[str]:
    """Crash janitor: unmount and detach what earlier runs left behind; returns what it did.

    With `prefix` (a directory), everything mounted under it and every loop device whose image lies
    under it. Without, every loop device backed by a kraftpy image (`*.kraftpy.img`) anywhere, and
    their mounts. Other loop devices and mounts on the machine are never touched.
    """
    base = None
    if prefix is not None:
        base = os.path.realpath(prefix)
        if base == "/":
            raise DiskError("refusing to clean up under / : give the directory your disks live in")
    devices = [(d.path, d.device) for d in select_leftovers(attached_loop_devices(), base)]
    extra = {e.mountpoint for e in current_mounts() if base and is_under(e.mountpoint, base)}
    if not devices and not extra:
        return []
    return release(devices, extra)
