"""Loop devices: attach and detach with losetup, look them up in sysfs, resize with LOOP_SET_STATUS64."""

from __future__ import annotations

import fcntl
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from tools.disk.errors import CommandFailedError, DiskError
from tools.disk.tools import run

LOOP_SET_STATUS64 = 0x4C04
LOOP_GET_STATUS64 = 0x4C05
# struct loop_info64: device, inode, rdevice, offset, sizelimit (u64 each), number, encrypt_type,
# encrypt_key_size, flags (u32 each), file_name[64], crypt_name[64], encrypt_key[32], init[2] (u64).
_LOOP_INFO64 = struct.Struct("=5Q4I64s64s32s2Q")
_SIZELIMIT_FIELD = 4
_SYS_BLOCK = Path("/sys/block")


@dataclass(frozen=True)
class LoopDevice:
    path: str  # /dev/loopN
    device: tuple[int, int]
    backing_file: str


def _backing_file(raw: str) -> str:
    raw = raw.rstrip("\n")
    # The kernel appends this when the image was unlinked while attached; it is still ours.
    return raw.removesuffix(" (deleted)")


def attached_loop_devices() -> list[LoopDevice]:
    """Every attached loop device, from sysfs (what `losetup -l` itself reads)."""
    found = []
    for entry in sorted(_SYS_BLOCK.glob("loop*")):
        try:
            backing = (entry / "loop" / "backing_file").read_text()
            major, minor = (entry / "dev").read_text().strip().split(":")
        except (OSError, ValueError):
            continue  # not attached, or detached while we looked
        found.append(LoopDevice(f"/dev/{entry.name}", (int(major), int(minor)), _backing_file(backing)))
    return found


def loop_devices_for(image: str | os.PathLike[str]) -> list[LoopDevice]:
    target = os.path.realpath(image)
    return [d for d in attached_loop_devices() if d.backing_file == target]


def is_attached_to(dev: str, image: str | os.PathLike[str]) -> bool:
    return any(d.path == dev for d in loop_devices_for(image))


def attach(image: str | os.PathLike[str]) -> str:
    """Attach `image` to a free loop device and return its path."""
    last: CommandFailedError | None = None
    # `losetup --find` picks a free device and then claims it: two callers can pick the same one.
    for _ in range(40):
        try:
            return run("losetup", "--find", "--show", os.fspath(image)).stdout.strip()
        except CommandFailedError as e:
            last = e
            time.sleep(0.05)
    assert last is not None
    raise last


def detach(dev: str) -> None:
    """`losetup -d`; on a device still in use this only sets autoclear, so callers check afterwards."""
    run("losetup", "--detach", dev, check=False)


def wait_detached(dev: str, image: str | os.PathLike[str], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while is_attached_to(dev, image):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def set_size_limit(dev: str, nbytes: int) -> None:
    """Make the device end after `nbytes` (0 = the whole backing file); accepted while mounted.

    Shrinking it under a mounted filesystem is a disk that vanished: the block layer fails every
    access past the limit ("attempt to access beyond end of device") with EIO.
    """
    try:
        fd = os.open(dev, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        raise DiskError(f"cannot open {dev}: {e.strerror}") from None
    try:
        buf = bytearray(_LOOP_INFO64.size)
        fcntl.ioctl(fd, LOOP_GET_STATUS64, buf)
        fields = list(_LOOP_INFO64.unpack(buf))
        fields[_SIZELIMIT_FIELD] = nbytes
        fcntl.ioctl(fd, LOOP_SET_STATUS64, _LOOP_INFO64.pack(*fields))
    except OSError as e:
        raise DiskError(f"cannot resize {dev}: {e.strerror}") from None
    finally:
        os.close(fd)
