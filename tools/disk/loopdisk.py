"""Loop-device disks with real faults: `DiskSet` keeps the disks of one state dir, `LoopDisk` is one of them.

Each operation takes the state dir's lock, checks the recorded state against the kernel's view, acts,
and records the outcome, so another invocation (or another process) sees where every disk stands.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
from collections.abc import Iterator
from pathlib import Path

import tools.disk.faults as faults
from tools.disk.errors import CommandFailedError, DiskBusyError, DiskError, DiskExistsError, Holder
from tools.disk.fs import check_filesystem, make_filesystem, mount, unmount
from tools.disk.holders import find_holders
from tools.disk.janitor import cleanup_leftovers, mark_if_test_run, release
from tools.disk.live import DiskStatus, current_mounts, live_view, status_of
from tools.disk.loopdev import (
    LoopDevice,
    attach,
    attached_loop_devices,
    detach,
    set_size_limit,
    wait_detached,
)
from tools.disk.sizes import parse_size
from tools.disk.state import (
    DEFAULT_SIZE,
    FILLER_NAME,
    IMAGE_SUFFIX,
    DiskRecord,
    DiskState,
    DiskTable,
    Operation,
    after,
    check_allowed,
    observed_state,
    validate_geometry,
    validate_name,
)
from tools.disk.store import StateStore, default_state_dir
from tools.disk.tools import require_root, require_tools


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class DiskSet:
    """The disks of one state dir (default `$KRAFTPY_DISK_STATE` or /var/lib/kraftpy/disks).

    Images live in `<state_dir>/images`, default mountpoints in `<state_dir>/mnt/<name>`.
    """

    def __init__(self, state_dir: str | os.PathLike[str] | None = None) -> None:
        self.store = StateStore(state_dir if state_dir is not None else default_state_dir())

    @property
    def state_dir(self) -> Path:
        return self.store.state_dir

    @property
    def image_dir(self) -> Path:
        return self.state_dir / "images"

    @property
    def mount_dir(self) -> Path:
        return self.state_dir / "mnt"

    def __repr__(self) -> str:
        return f"DiskSet({str(self.state_dir)!r})"

    # ------------------------------------------------------------------ reading

    def names(self) -> list[str]:
        return [r.name for r in self.store.load()]

    def __iter__(self) -> Iterator[LoopDisk]:
        return iter([LoopDisk(self, n) for n in self.names()])

    def __len__(self) -> int:
        return len(self.store.load())

    def __contains__(self, name: object) -> bool:
        return name in self.store.load()

    def get(self, name: str) -> LoopDisk:
        self.store.load().get(name)  # raises DiskNotFoundError with a hint
        return LoopDisk(self, name)

    def __getitem__(self, name: str) -> LoopDisk:
        return self.get(name)

    def record(self, name: str) -> DiskRecord:
        return self.store.load().get(name)

    def list(self) -> list[DiskStatus]:
        return [status_of(r) for r in self.store.load()]

    # ------------------------------------------------------------------ create / destroy

    def create(
        self,
        name: str,
        *,
        size: str | int | None = None,
        fs: str = "ext4",
        mountpoint: str | os.PathLike[str] | None = None,
        owner: tuple[int, int] | None = None,
    ) -> LoopDisk:
        """Make a sparse image, attach it, mkfs it and mount it. On any failure nothing is left behind."""
        require_root("creating a disk")
        validate_name(name)
        fs = fs.lower()
        size_bytes = DEFAULT_SIZE.get(fs, 0) if size is None else _parse_size(size)
        validate_geometry(fs, size_bytes)
        require_tools(fs)
        mp = os.path.realpath(mountpoint if mountpoint is not None else self.mount_dir / name)
        with self.store.locked():
            mark_if_test_run(self.state_dir)
            table = self.store.load()
            image = os.path.join(os.path.realpath(self.image_dir), name + IMAGE_SUFFIX)
            record = DiskRecord(
                name=name,
                fs=fs,
                size_bytes=size_bytes,
                image=image,
                mountpoint=mp,
                owns_mountpoint=not os.path.lexists(mp),
                owner=owner,
                created_at=_now(),
            )
            table = table.add(record)  # raises if the name or mountpoint is taken
            _check_mountpoint_free(mp)
            # An image with no record is a leftover of a crash: release whatever still uses it.
            stale = [(d.path, d.device) for d in attached_loop_devices() if d.backing_file == image]
            if stale:
                release(stale)
            # Recorded before anything exists, so a crash in between still leaves a trail for destroy.
            self.store.save(table)
            try:
                os.makedirs(self.image_dir, exist_ok=True)
                with open(image, "wb") as f:
                    f.truncate(size_bytes)  # sparse: costs only what the filesystem writes
                dev = attach(image)
                record = dataclasses.replace(record, loop_device=dev)
                self.store.save(table.replace(record))
                make_filesystem(fs, dev, name)
                mount(fs, dev, mp)
                if owner is not None:
                    os.chown(mp, *owner)
                record = dataclasses.replace(record, creating=False)
                self.store.save(self.store.load().replace(record))
            except BaseException:
                self._discard(record)
                raise
        return LoopDisk(self, name)

    def _discard(self, record: DiskRecord) -> list[str]:
        """Release and remove everything of `record`, and forget it. Never raises for a broken disk."""
        image = os.path.realpath(record.image)
        devices = [(d.path, d.device) for d in attached_loop_devices() if d.backing_file == image]
        actions = release(devices)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(image)
            actions.append(f"{image}: removed")
        if record.owns_mountpoint and not any(e.mountpoint == record.mountpoint for e in current_mounts()):
            with contextlib.suppress(OSError):
                os.rmdir(record.mountpoint)  # only if empty: never delete anyone's files
        table = self.store.load()
        if record.name in table:
            self.store.save(table.remove(record.name))
        return actions

    def destroy(self, name: str) -> list[str]:
        """Unmount (lazily if busy), detach, delete the image; returns what was done."""
        require_root("destroying a disk")
        with self.store.locked():
            return self._discard(self.store.load().get(name))

    def destroy_all(self) -> list[str]:
        """Destroy every recorded disk, then sweep leftovers under the state dir (also with a lost state file)."""
        require_root("destroying disks")
        actions: list[str] = []
        with self.store.locked():
            try:
                table = self.store.load()
            except DiskError as e:
                actions.append(f"state unreadable ({e}); sweeping {self.state_dir}")
                table = DiskTable()
            for record in table:
                actions += [f"{record.name}: {a}" for a in self._discard(record)]
            actions += cleanup_leftovers(self.state_dir)
            if self.image_dir.is_dir():
                for leftover in sorted(self.image_dir.glob("*" + IMAGE_SUFFIX)):
                    leftover.unlink()
                    actions.append(f"{leftover}: removed")
            self.store.save(DiskTable())
        return actions


def _parse_size(size: str | int) -> int:
    try:
        return parse_size(size)
    except ValueError as e:
        raise DiskError(str(e)) from None


def _check_mountpoint_free(mp: str) -> None:
    if any(e.mountpoint == mp for e in current_mounts()):
        raise DiskExistsError(f"something is already mounted at {mp}")
    if os.path.lexists(mp):
        if not os.path.isdir(mp):
            raise DiskExistsError(f"mountpoint {mp} exists and is not a directory")
        if os.listdir(mp):
            raise DiskExistsError(f"mountpoint {mp} is not empty; mounting there would hide its files")


class LoopDisk:
    """One disk of a DiskSet, by name. Every property reads the current record."""

    def __init__(self, disk_set: DiskSet, name: str) -> None:
        self.disk_set = disk_set
        self.name = name

    def __repr__(self) -> str:
        return f"LoopDisk({self.name!r}, state_dir={str(self.disk_set.state_dir)!r})"

    @property
    def record(self) -> DiskRecord:
        return self.disk_set.record(self.name)

    @property
    def fs(self) -> str:
        return self.record.fs

    @property
    def size_bytes(self) -> int:
        return self.record.size_bytes

    @property
    def image(self) -> Path:
        return Path(self.record.image)

    @property
    def mountpoint(self) -> Path:
        """The mounted filesystem's root: use it (or a dir inside it) as a log dir."""
        return Path(self.record.mountpoint)

    @property
    def loop_device(self) -> str | None:
        return self.status().loop_device

    @property
    def state(self) -> DiskState:
        return self.status().state

    def status(self) -> DiskStatus:
        return status_of(self.record)

    def holders(self) -> list[Holder]:
        record = self.record
        return find_holders(record.mountpoint, live_view(record).numbers)

    # ------------------------------------------------------------------ faults

    def _prepare(self, op: Operation, action: str) -> tuple[DiskRecord, LoopDevice]:
        require_root(action)
        record = self.record
        live = live_view(record)
        dev = live.device
        check_allowed(
            record, op, observed_state(record, mounted=live.mount is not None, attached=dev is not None)
        )
        assert dev is not None  # check_allowed refuses an unmounted disk
        return record, dev

    def _commit(self, op: Operation) -> None:
        table = self.disk_set.store.load()
        self.disk_set.store.save(table.replace(after(table.get(self.name), op)))

    def fail(self, *, flush: bool = False) -> None:
        """Shut the filesystem down: every later I/O on it, on old fds too, fails with EIO.

        Without `flush` it stops at once, like a dead disk (never-fsynced data is lost); with it the
        journal is committed first.
        """
        with self.disk_set.store.locked():
            record, dev = self._prepare(Operation.FAIL, "failing a disk")
            flag = faults.SHUTDOWN_LOGFLUSH if flush else faults.SHUTDOWN_NOLOGFLUSH
            faults.shutdown_filesystem(record.mountpoint, dev.device, flag)
            self._commit(Operation.FAIL)

    def yank(self, *, drop_caches: bool = True) -> None:
        """Shrink the loop device under the mounted filesystem: the block layer fails I/O with EIO.

        ext4 then aborts its journal and turns read-only (later writes get EROFS); xfs shuts down.
        """
        with self.disk_set.store.locked():
            _, dev = self._prepare(Operation.YANK, "yanking a disk")
            faults.yank_device(dev.path, drop_caches=drop_caches)
            self._commit(Operation.YANK)

    def fill(self) -> int:
        """Allocate all free space to a filler file: writes, creates and mkdirs get ENOSPC. Returns its size."""
        with self.disk_set.store.locked():
            record, dev = self._prepare(Operation.FILL, "filling a disk")
            taken = faults.fill(record.mountpoint, dev.device)
            self._commit(Operation.FILL)
            return taken

    def unfill(self) -> None:
        with self.disk_set.store.locked():
            record, dev = self._prepare(Operation.UNFILL, "unfilling a disk")
            faults.unfill(record.mountpoint, dev.device)
            self._commit(Operation.UNFILL)

    # ------------------------------------------------------------------ recovery

    def heal(self) -> list[str]:
        """Restore size, unmount, fsck, re-attach and remount; the disk is healthy and empty of filler after.

        Refuses with DiskBusyError naming the holder PIDs, having changed nothing, while any process
        still has files, a cwd, a mapping or a private mount copy there.
        """
        require_root("healing a disk")
        with self.disk_set.store.locked():
            record = self.record
            check_allowed(record, Operation.HEAL)
            if not os.path.exists(record.image):
                raise DiskError(f"image {record.image} of disk {self.name} is gone; destroy the disk")
            live = live_view(record)
            holders = find_holders(record.mountpoint, live.numbers)
            if holders:
                raise DiskBusyError(self.name, holders)
            actions = []
            mounts = [e for e in current_mounts() if e.device in live.numbers]
            for mp in sorted({e.mountpoint for e in mounts}, key=lambda m: m.count("/"), reverse=True):
                try:
                    unmount(mp)
                except CommandFailedError as e:
                    raise DiskBusyError(
                        self.name, find_holders(record.mountpoint, live.numbers), detail=e.stderr
                    ) from None
                actions.append(f"{mp}: unmounted")
            for d in live.devices:
                with contextlib.suppress(DiskError):
                    set_size_limit(d.path, 0)
                detach(d.path)
                if not wait_detached(d.path, record.image):
                    raise DiskBusyError(
                        self.name,
                        find_holders(record.mountpoint, live.numbers),
                        detail=f"{d.path} stays attached (is it mounted elsewhere?)",
                    )
                actions.append(f"{d.path}: detached")
            actions.append(check_filesystem(record.fs, record.image))
            dev = attach(record.image)
            try:
                actions.append(f"{dev}: {mount(record.fs, dev, record.mountpoint)} at {record.mountpoint}")
            except BaseException:
                detach(dev)
                raise
            device = live_view(record).device
            if device is None:
                raise DiskError(f"{dev} did not show up mounted at {record.mountpoint}")
            if os.path.lexists(os.path.join(record.mountpoint, FILLER_NAME)):
                faults.unfill(record.mountpoint, device.device)
                actions.append("filler removed")
            table = self.disk_set.store.load()
            self.disk_set.store.save(
                table.replace(after(table.get(self.name), Operation.HEAL, loop_device=dev))
            )
            return actions

    def destroy(self) -> list[str]:
        return self.disk_set.destroy(self.name)
