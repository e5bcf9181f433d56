"""What the kernel says about a recorded disk right now: its loop devices, its mount, its used space."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from tools.disk.loopdev import LoopDevice, attached_loop_devices
from tools.disk.mounts import MountEntry, read_mountinfo
from tools.disk.state import DiskRecord, DiskState, observed_state


@dataclass(frozen=True)
class DiskStatus:
    """One line of `kraftpy disk list`: the record as the kernel sees it now."""

    name: str
    fs: str
    size_bytes: int
    loop_device: str | None
    mountpoint: str
    state: DiskState
    used_bytes: int | None
    total_bytes: int | None
    image: str

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["state"] = self.state.value
        return d


@dataclass(frozen=True)
class LiveView:
    """The disk's loop device and mount right now, if both are there."""

    devices: list[LoopDevice]
    mount: MountEntry | None

    @property
    def numbers(self) -> set[tuple[int, int]]:
        return {d.device for d in self.devices}

    @property
    def device(self) -> LoopDevice | None:
        if self.mount is None:
            return None
        return next((d for d in self.devices if d.device == self.mount.device), None)


def current_mounts() -> list[MountEntry]:
    try:
        return read_mountinfo()
    except OSError:
        return []


def live_view(record: DiskRecord) -> LiveView:
    image = os.path.realpath(record.image)
    devices = [d for d in attached_loop_devices() if d.backing_file == image]
    numbers = {d.device for d in devices}
    mount_entry = next(
        (e for e in current_mounts() if e.device in numbers and e.mountpoint == record.mountpoint), None
    )
    return LiveView(devices, mount_entry)


def status_of(record: DiskRecord) -> DiskStatus:
    live = live_view(record)
    dev = live.device
    state = observed_state(record, mounted=live.mount is not None, attached=dev is not None)
    used = total = None
    if dev is not None:
        with contextlib.suppress(OSError):
            # statvfs answers even on a shut-down filesystem.
            st = os.statvfs(record.mountpoint)
            total = st.f_blocks * st.f_frsize
            used = (st.f_blocks - st.f_bfree) * st.f_frsize
    return DiskStatus(
        name=record.name,
        fs=record.fs,
        size_bytes=record.size_bytes,
        loop_device=dev.path if dev else (live.devices[0].path if live.devices else None),
        mountpoint=record.mountpoint,
        state=state,
        used_bytes=used,
        total_bytes=total,
        image=record.image,
    )
