"""Loop-device-backed filesystems used as log dirs, with real faults: shutdown (EIO), a vanished device
(block-layer EIO, then EROFS on ext4), a full disk (ENOSPC), and recovery once nothing holds them.

    disks = DiskSet("/tmp/state")                 # default: $KRAFTPY_DISK_STATE or /var/lib/kraftpy/disks
    d0 = disks.create("d0", size="256M", fs="ext4")
    d0.fail(); ...; d0.heal(); disks.destroy_all()
"""

from tools.disk.errors import (
    CommandFailedError,
    DiskBusyError,
    DiskError,
    DiskExistsError,
    DiskNotFoundError,
    Holder,
    InvalidTransitionError,
    MissingToolError,
    NotRootError,
)
from tools.disk.holders import find_holders
from tools.disk.janitor import cleanup_leftovers
from tools.disk.live import DiskStatus
from tools.disk.loopdisk import DiskSet, LoopDisk
from tools.disk.sizes import format_size, parse_size
from tools.disk.state import DiskRecord, DiskState
from tools.disk.store import default_state_dir
from tools.disk.tools import have_tools

__all__ = [
    "CommandFailedError",
    "DiskBusyError",
    "DiskError",
    "DiskExistsError",
    "DiskNotFoundError",
    "DiskRecord",
    "DiskSet",
    "DiskState",
    "DiskStatus",
    "Holder",
    "InvalidTransitionError",
    "LoopDisk",
    "MissingToolError",
    "NotRootError",
    "cleanup_leftovers",
    "default_state_dir",
    "find_holders",
    "format_size",
    "have_tools",
    "parse_size",
]
