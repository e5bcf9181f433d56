"""The faults themselves: filesystem shutdown, a vanished block device, a full disk.

Every function that acts through a mountpoint first checks that the path really is the disk's
filesystem: if the mount is gone, the same path names the parent filesystem, and shutting that
down would take the whole machine's root disk with it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct

from tools.disk.errors import DiskError
from tools.disk.loopdev import set_size_limit
from tools.disk.state import FILLER_NAME

# _IOR('X', 125, __u32): EXT4_IOC_SHUTDOWN and XFS_IOC_GOINGDOWN share the number.
FS_IOC_SHUTDOWN = 0x8004587D
SHUTDOWN_DEFAULT = 0  # freeze and sync first
SHUTDOWN_LOGFLUSH = 1  # commit the journal, then stop
SHUTDOWN_NOLOGFLUSH = 2  # stop at once: what a dead disk does
YANKED_SIZE = 4096  # keep one block so the device still exists; all else is "beyond end of device"


def _open_checked(mountpoint: str, device: tuple[int, int]) -> int:
    fd = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    st = os.fstat(fd)
    if (os.major(st.st_dev), os.minor(st.st_dev)) != device:
        os.close(fd)
        raise DiskError(
            f"{mountpoint} is not the disk's filesystem (device {os.major(st.st_dev)}:{os.minor(st.st_dev)}, "
            f"expected {device[0]}:{device[1]}); refusing to touch it"
        )
    return fd


def shutdown_filesystem(mountpoint: str, device: tuple[int, int], flag: int = SHUTDOWN_NOLOGFLUSH) -> None:
    """Every later syscall on the filesystem fails with EIO, also on fds opened before."""
    fd = _open_checked(mountpoint, device)
    try:
        fcntl.ioctl(fd, FS_IOC_SHUTDOWN, struct.pack("I", flag))
    except OSError as e:
        raise DiskError(f"filesystem shutdown of {mountpoint} failed: {e.strerror}") from None
    finally:
        os.close(fd)


def yank_device(dev: str, drop_caches: bool = True) -> None:
    set_size_limit(dev, YANKED_SIZE)
    if drop_caches:
        # Otherwise reads of cached pages keep succeeding; this is global but only costs re-reads.
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")


def fill(mountpoint: str, device: tuple[int, int]) -> int:
    """Allocate every free block to a filler file (ENOSPC for everyone after); returns bytes taken."""
    fd = _open_checked(mountpoint, device)
    try:
        filler = os.open(FILLER_NAME, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            block = os.fstatvfs(filler).f_frsize
            want = os.fstatvfs(filler).f_bavail * block
            # One big fallocate fails when its own extent metadata no longer fits: halve until single blocks.
            while want >= block:
                try:
                    os.posix_fallocate(filler, os.fstat(filler).st_size, want)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise DiskError(f"filling {mountpoint} failed: {e.strerror}") from None
                    want //= 2
            os.fsync(filler)
            return os.fstat(filler).st_size
        finally:
            os.close(filler)
    finally:
        os.close(fd)


def unfill(mountpoint: str, device: tuple[int, int]) -> None:
    fd = _open_checked(mountpoint, device)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(FILLER_NAME, dir_fd=fd)
        os.fsync(fd)
    except OSError as e:
        raise DiskError(f"removing the filler from {mountpoint} failed: {e.strerror}") from None
    finally:
        os.close(fd)
