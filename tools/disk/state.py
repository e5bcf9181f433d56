"""Bookkeeping of loop-device disks, without any I/O.

A `DiskRecord` is what we remember about one disk between invocations; a `DiskTable` is all of them,
(de)serialised as JSON by `store.py`. Which operation is allowed in which state is decided here, so the
rules are tested without root, loop devices or mounts.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tools.disk.errors import DiskError, DiskExistsError, DiskNotFoundError, InvalidTransitionError
from tools.disk.sizes import format_size

STATE_FORMAT_VERSION = 1
FILESYSTEMS = ("ext4", "xfs")
# mkfs.xfs refuses anything smaller; below this ext4 has too little room for a journal worth testing.
MIN_SIZE = {"ext4": 16 << 20, "xfs": 300 << 20}
DEFAULT_SIZE = {"ext4": 256 << 20, "xfs": 300 << 20}
# Marks our images so a janitor can tell them from anyone else's loop devices.
IMAGE_SUFFIX = ".kraftpy.img"
FILLER_NAME = ".kraftpy-filler"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class DiskState(StrEnum):
    CREATING = "creating"
    HEALTHY = "healthy"
    FAILED = "failed"
    YANKED = "yanked"
    FULL = "full"
    # Only observed, never stored: the record says mounted but the mount or loop device is gone
    # (a reboot, or someone ran umount by hand). `heal` brings it back.
    UNMOUNTED = "unmounted"


class Fault(StrEnum):
    FAILED = "failed"
    YANKED = "yanked"


class Operation(StrEnum):
    FAIL = "fail"
    YANK = "yank"
    FILL = "fill"
    UNFILL = "unfill"
    HEAL = "heal"


_ALLOWED: dict[Operation, frozenset[DiskState]] = {
    Operation.FAIL: frozenset({DiskState.HEALTHY, DiskState.FULL}),
    Operation.YANK: frozenset({DiskState.HEALTHY, DiskState.FULL}),
    Operation.FILL: frozenset({DiskState.HEALTHY}),
    Operation.UNFILL: frozenset({DiskState.FULL}),
    # Heal is the way back from anything, including a half-finished create or a lost mount.
    Operation.HEAL: frozenset({DiskState.HEALTHY, DiskState.FAILED, DiskState.YANKED, DiskState.FULL}),
}

_HINTS: dict[tuple[Operation, DiskState], str] = {
    (Operation.UNFILL, DiskState.HEALTHY): "it is not full",
    (Operation.FILL, DiskState.FULL): "it is already full",
    (Operation.FAIL, DiskState.FAILED): "it has already failed; `heal` it first",
    (Operation.YANK, DiskState.YANKED): "it is already yanked; `heal` it first",
}


def validate_name(name: str) -> str:
    if not _NAME.match(name):
        raise DiskError(
            f"bad disk name {name!r}: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def validate_geometry(fs: str, size_bytes: int) -> None:
    if fs not in FILESYSTEMS:
        raise DiskError(f"unsupported filesystem {fs!r}: choose one of {', '.join(FILESYSTEMS)}")
    if size_bytes < MIN_SIZE[fs]:
        raise DiskError(
            f"{fs} needs at least {format_size(MIN_SIZE[fs])}, got {format_size(size_bytes)} "
            "(images are sparse, so a larger size costs nothing)"
        )


@dataclass(frozen=True, kw_only=True)
class DiskRecord:
    name: str
    fs: str
    size_bytes: int
    image: str
    mountpoint: str
    # Whether create made the mountpoint directory (then destroy removes it again).
    owns_mountpoint: bool = True
    loop_device: str | None = None
    fault: Fault | None = None
    full: bool = False
    creating: bool = True
    owner: tuple[int, int] | None = None
    created_at: str = ""

    @property
    def state(self) -> DiskState:
        if self.creating:
            return DiskState.CREATING
        if self.fault is not None:
            return DiskState(self.fault.value)
        return DiskState.FULL if self.full else DiskState.HEALTHY

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fault"] = self.fault.value if self.fault else None
        d["owner"] = list(self.owner) if self.owner else None
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DiskRecord:
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in known}
        if kwargs.get("fault") is not None:
            kwargs["fault"] = Fault(kwargs["fault"])
        if kwargs.get("owner") is not None:
            uid, gid = kwargs["owner"]
            kwargs["owner"] = (int(uid), int(gid))
        return cls(**kwargs)


def check_allowed(record: DiskRecord, op: Operation, state: DiskState | None = None) -> None:
    """Raise InvalidTransitionError unless `op` may run on a disk in `state` (default: the recorded one)."""
    state = state or record.state
    if state in _ALLOWED[op]:
        return
    if state is DiskState.UNMOUNTED:
        hint = "it is not mounted; `heal` it first"
    elif state is DiskState.CREATING:
        hint = "its creation never finished; `destroy` it and create it again"
    else:
        hint = _HINTS.get((op, state), f"it is {state.value}; `heal` it first")
    raise InvalidTransitionError(f"cannot {op.value} disk {record.name}: {hint}")


def after(record: DiskRecord, op: Operation, *, loop_device: str | None = None) -> DiskRecord:
    """The record once `op` has been carried out on the real disk."""
    match op:
        case Operation.FAIL:
            return dataclasses.replace(record, fault=Fault.FAILED)
        case Operation.YANK:
            return dataclasses.replace(record, fault=Fault.YANKED)
        case Operation.FILL:
            return dataclasses.replace(record, full=True)
        case Operation.UNFILL:
            return dataclasses.replace(record, full=False)
        case Operation.HEAL:
            return dataclasses.replace(
                record, fault=None, full=False, creating=False, loop_device=loop_device or record.loop_device
            )
    raise AssertionError(op)


def observed_state(record: DiskRecord, *, mounted: bool, attached: bool) -> DiskState:
    """The state to show, given what the kernel says about the record's mount and loop device."""
    state = record.state
    if state is DiskState.CREATING:
        return state
    if not (mounted and attached):
        return DiskState.UNMOUNTED
    return state


@dataclass(frozen=True)
class DiskTable:
    """All disks of one state dir, immutable: every change returns a new table."""

    disks: Mapping[str, DiskRecord] = field(default_factory=dict)

    def __iter__(self) -> Iterator[DiskRecord]:
        return iter(sorted(self.disks.values(), key=lambda r: r.name))

    def __len__(self) -> int:
        return len(self.disks)

    def __contains__(self, name: object) -> bool:
        return name in self.disks

    def get(self, name: str) -> DiskRecord:
        try:
            return self.disks[name]
        except KeyError:
            raise DiskNotFoundError(f"no disk named {name!r} (see `kraftpy disk list`)") from None

    def add(self, record: DiskRecord) -> DiskTable:
        if record.name in self.disks:
            raise DiskExistsError(f"a disk named {record.name!r} already exists")
        for other in self.disks.values():
            if other.mountpoint == record.mountpoint:
                raise DiskExistsError(f"disk {other.name} is already mounted at {record.mountpoint}")
        return DiskTable({**self.disks, record.name: record})

    def replace(self, record: DiskRecord) -> DiskTable:
        self.get(record.name)
        return DiskTable({**self.disks, record.name: record})

    def remove(self, name: str) -> DiskTable:
        return DiskTable({k: v for k, v in self.disks.items() if k != name})

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_FORMAT_VERSION, "disks": {r.name: r.to_json() for r in self}}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DiskTable:
        version = d.get("version")
        if version != STATE_FORMAT_VERSION:
            raise DiskError(
                f"disk state has format version {version!r}; this kraftpy reads {STATE_FORMAT_VERSION}"
            )
        disks = d.get("disks")
        if not isinstance(disks, dict):
            raise DiskError("disk state has no 'disks' object")
        return cls({name: DiskRecord.from_json(rec) for name, rec in disks.items()})
