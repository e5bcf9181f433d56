"""Disk bookkeeping without root: sizes, names, allowed operations per state, JSON, mountinfo parsing."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tools.disk import DiskError, DiskState, format_size, parse_size
from tools.disk.errors import (
    DiskBusyError,
    DiskExistsError,
    DiskNotFoundError,
    Holder,
    InvalidTransitionError,
)
from tools.disk.mounts import parse_mountinfo
from tools.disk.state import (
    DiskRecord,
    DiskTable,
    Fault,
    Operation,
    after,
    check_allowed,
    observed_state,
    validate_geometry,
    validate_name,
)
from tools.disk.store import StateStore


def record(name: str = "d0", **kw: object) -> DiskRecord:
    base = dict(
        name=name, fs="ext4", size_bytes=256 << 20, image=f"/s/images/{name}.kraftpy.img",
        mountpoint=f"/s/mnt/{name}", creating=False,
    )  # fmt: skip
    base.update(kw)
    return DiskRecord(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("256M", 256 << 20),
        ("1G", 1 << 30),
        ("4096", 4096),
        ("64k", 64 << 10),
        ("300MiB", 300 << 20),
        (512, 512),
    ],
)
def test_parse_size(text: str | int, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "M", "12Q", "-1M", "0", "1.5G"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_format_size() -> None:
    assert format_size(256 << 20) == "256M"
    assert format_size(300 << 20) == "300M"
    assert format_size(1536 << 10) == "1.5M"
    assert format_size(12) == "12B"


@pytest.mark.parametrize("name", ["d0", "b1d2", "log.dir-3_x"])
def test_good_names(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", ["", "-x", "a/b", "..", "a b", "x" * 64])
def test_bad_names(name: str) -> None:
    with pytest.raises(DiskError, match="bad disk name"):
        validate_name(name)


def test_geometry() -> None:
    validate_geometry("ext4", 16 << 20)
    validate_geometry("xfs", 300 << 20)
    with pytest.raises(DiskError, match="xfs needs at least 300M"):
        validate_geometry("xfs", 299 << 20)
    with pytest.raises(DiskError, match="unsupported filesystem"):
        validate_geometry("btrfs", 1 << 30)


def test_state_is_derived_from_fault_and_fill() -> None:
    assert record(creating=True).state is DiskState.CREATING
    assert record().state is DiskState.HEALTHY
    assert record(full=True).state is DiskState.FULL
    assert record(full=True, fault=Fault.FAILED).state is DiskState.FAILED
    assert record(fault=Fault.YANKED).state is DiskState.YANKED


ALLOWED = {
    (Operation.FAIL, DiskState.HEALTHY),
    (Operation.FAIL, DiskState.FULL),
    (Operation.YANK, DiskState.HEALTHY),
    (Operation.YANK, DiskState.FULL),
    (Operation.FILL, DiskState.HEALTHY),
    (Operation.UNFILL, DiskState.FULL),
    (Operation.HEAL, DiskState.HEALTHY),
    (Operation.HEAL, DiskState.FAILED),
    (Operation.HEAL, DiskState.YANKED),
    (Operation.HEAL, DiskState.FULL),
}


@pytest.mark.parametrize("op", list(Operation))
@pytest.mark.parametrize("state", list(DiskState))
def test_transition_table(op: Operation, state: DiskState) -> None:
    r = record()
    if (op, state) in ALLOWED:
        check_allowed(r, op, state)
    else:
        with pytest.raises(InvalidTransitionError, match=f"cannot {op.value} disk d0: "):
            check_allowed(r, op, state)


def test_unmounted_disks_need_heal_before_faults() -> None:
    with pytest.raises(InvalidTransitionError, match="not mounted; `heal` it first"):
        check_allowed(record(), Operation.FAIL, DiskState.UNMOUNTED)


def test_after() -> None:
    r = record()
    assert after(r, Operation.FAIL).fault is Fault.FAILED
    assert after(r, Operation.YANK).fault is Fault.YANKED
    assert after(r, Operation.FILL).full
    assert not after(record(full=True), Operation.UNFILL).full
    healed = after(
        record(full=True, fault=Fault.YANKED, loop_device="/dev/loop3"),
        Operation.HEAL,
        loop_device="/dev/loop7",
    )
    assert healed.state is DiskState.HEALTHY
    assert healed.loop_device == "/dev/loop7"
    assert r.state is DiskState.HEALTHY  # records are values: the original is untouched


def test_observed_state() -> None:
    assert observed_state(record(), mounted=True, attached=True) is DiskState.HEALTHY
    assert observed_state(record(fault=Fault.FAILED), mounted=False, attached=True) is DiskState.UNMOUNTED
    assert observed_state(record(creating=True), mounted=False, attached=False) is DiskState.CREATING


def test_table_add_replace_remove() -> None:
    t = DiskTable().add(record("a")).add(record("b"))
    assert [r.name for r in t] == ["a", "b"]
    with pytest.raises(DiskExistsError, match="already exists"):
        t.add(record("a"))
    with pytest.raises(DiskExistsError, match="already mounted at /s/mnt/a"):
        t.add(record("c", mountpoint="/s/mnt/a"))
    t2 = t.replace(after(t.get("a"), Operation.FAIL))
    assert t2.get("a").state is DiskState.FAILED
    assert t.get("a").state is DiskState.HEALTHY
    assert "a" not in t2.remove("a")
    with pytest.raises(DiskNotFoundError, match="no disk named 'zz'"):
        t.get("zz")


def test_table_json_round_trip() -> None:
    t = DiskTable().add(record("a", fault=Fault.YANKED, owner=(1000, 1000), loop_device="/dev/loop2"))
    t = t.add(record("b", fs="xfs", size_bytes=300 << 20, full=True))
    text = json.dumps(t.to_json())
    assert DiskTable.from_json(json.loads(text)) == t


def test_table_json_rejects_other_versions() -> None:
    with pytest.raises(DiskError, match="format version 99"):
        DiskTable.from_json({"version": 99, "disks": {}})


def test_store_round_trip_and_damage(tmp_path) -> None:
    store = StateStore(tmp_path / "state")
    assert len(store.load()) == 0
    t = DiskTable().add(record("a"))
    with store.locked(), store.locked():  # re-entrant within one object
        store.save(t)
    assert store.load() == t
    assert [p.name for p in (tmp_path / "state").iterdir() if p.name.startswith(".disks")] == []
    store.path.write_text("{not json")
    with pytest.raises(DiskError, match="is damaged"):
        store.load()


def test_busy_error_names_pids() -> None:
    e = DiskBusyError("d0", [Holder(41, "python", "fd 3", "/m/d0/x"), Holder(7, "sh", "cwd", "/m/d0")])
    assert e.pids == [7, 41]
    assert "pid 41 (python: fd 3 /m/d0/x)" in str(e)
    assert "nothing was changed" in str(e)
    assert "\n" not in str(e)


MOUNTINFO = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
    "97 22 7:3 / /tmp/with\\040space/d0 rw,relatime - ext4 /dev/loop3 rw,emergency_ro\n"
    "98 22 7:4 / /srv/d1 rw,relatime master:5 - xfs /dev/loop4 rw,attr2,inode64\n"
)


def test_parse_mountinfo() -> None:
    entries = parse_mountinfo(MOUNTINFO)
    assert [e.mountpoint for e in entries] == ["/", "/tmp/with space/d0", "/srv/d1"]
    assert entries[1].device == (7, 3)
    assert entries[1].is_emergency_ro
    assert entries[2].fstype == "xfs"
    assert entries[2].source == "/dev/loop4"
    assert not entries[2].is_emergency_ro


def test_record_from_json_ignores_unknown_fields() -> None:
    d = record().to_json() | {"added_later": 1}
    assert DiskRecord.from_json(d) == record()
    assert dataclasses.replace(record(), full=True) != record()
