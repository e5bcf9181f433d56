"""Real loop-device disks: faults seen by another process, heal waiting for holders, destroy leaving nothing."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from tests.disk.helpers import HolderProcess, loops_under, mounts_under, read, wait_no_loops
from tools.disk import DiskBusyError, DiskError, DiskExistsError, DiskState, InvalidTransitionError
from tools.disk.loopdev import loop_devices_for

pytestmark = pytest.mark.real
FILESYSTEMS = ["ext4", "xfs"]


def fsync_write(path: os.PathLike[str] | str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_create_mounts_a_real_filesystem(real_disks, fs: str) -> None:
    disk = real_disks("d0", fs=fs)
    fsync_write(disk.mountpoint / "segment", b"x" * 65536)
    assert read(disk.mountpoint / "segment") == b"x" * 65536
    st = disk.status()
    assert st.state is DiskState.HEALTHY
    assert st.fs == fs
    assert st.used_bytes is not None and st.used_bytes > 0
    (line,) = mounts_under(disk.mountpoint)
    assert line.split()[:3] == [st.loop_device, str(disk.mountpoint), fs]
    assert [d.path for d in loop_devices_for(disk.image)] == [st.loop_device]
    # Sparse: the image takes far less than its size.
    assert os.stat(disk.image).st_blocks * 512 < disk.size_bytes


@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_fail_gives_eio_to_a_holder_and_heal_waits_for_it(real_disks, fs: str) -> None:
    disk = real_disks("d0", fs=fs)
    healthy_device = disk.loop_device
    with HolderProcess(disk.mountpoint / "00000000000000000000.log") as holder:
        assert holder.append() == "ok"
        disk.fail()
        assert holder.append() == "EIO"
        assert disk.state is DiskState.FAILED

        with pytest.raises(DiskBusyError) as refused:
            disk.heal()
        assert holder.pid in refused.value.pids
        assert f"pid {holder.pid} " in str(refused.value)
        # Refused means untouched: still failed, still mounted on the same device.
        assert disk.state is DiskState.FAILED
        assert disk.loop_device == healthy_device
        assert len(mounts_under(disk.mountpoint)) == 1
    disk.heal()
    assert disk.state is DiskState.HEALTHY
    # Data fsynced before the fault survives; the disk takes writes again.
    assert read(disk.mountpoint / "00000000000000000000.log").startswith(b"before\nafter\n")
    fsync_write(disk.mountpoint / "new", b"y")
    assert disk.holders() == []


@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_yank_gives_block_layer_errors(real_disks, fs: str) -> None:
    disk = real_disks("d0", fs=fs)
    fsync_write(disk.mountpoint / "kept", b"k" * 4096)
    with HolderProcess(disk.mountpoint / "log") as holder:
        disk.yank()
        assert disk.state is DiskState.YANKED
        first = holder.append()
        second = holder.append()
    assert first == "EIO"
    # ext4 aborts its journal and turns read-only; xfs shuts down.
    assert second in ({"EROFS", "EIO"} if fs == "ext4" else {"EIO"})
    disk.heal()
    assert disk.state is DiskState.HEALTHY
    assert read(disk.mountpoint / "kept") == b"k" * 4096


def test_fill_gives_enospc_and_unfill_gives_space_back(real_disks) -> None:
    disk = real_disks("d0", size="64M")
    with HolderProcess(disk.mountpoint / "log") as holder:
        taken = disk.fill()
        assert taken > 32 << 20
        assert disk.state is DiskState.FULL
        assert holder.append() == "ENOSPC"
        with pytest.raises(OSError) as e:
            fsync_write(disk.mountpoint / "new", b"z" * 65536)
        assert e.value.errno == errno.ENOSPC
        with pytest.raises(OSError) as e:
            os.mkdir(disk.mountpoint / "dir")
        assert e.value.errno == errno.ENOSPC
        disk.unfill()
        assert disk.state is DiskState.HEALTHY
        assert holder.append() == "ok"
    fsync_write(disk.mountpoint / "new", b"z" * 65536)


def test_heal_clears_fill_and_fault_together(real_disks) -> None:
    disk = real_disks("d0", size="64M")
    disk.fill()
    disk.fail()
    assert disk.state is DiskState.FAILED
    disk.heal()
    assert disk.state is DiskState.HEALTHY
    fsync_write(disk.mountpoint / "room", b"r" * 65536)


def test_operations_out_of_order_are_refused_and_change_nothing(real_disks) -> None:
    disk = real_disks("d0")
    with pytest.raises(InvalidTransitionError, match="not full"):
        disk.unfill()
    disk.fail()
    with pytest.raises(InvalidTransitionError, match="already failed"):
        disk.fail()
    with pytest.raises(InvalidTransitionError, match="it is failed; `heal` it first"):
        disk.fill()
    assert disk.state is DiskState.FAILED
    disk.heal()


def test_create_refuses_bad_input_and_leaves_nothing(real_disks, tmp_path) -> None:
    real_disks("d0")
    disks = real_disks.disk_set
    with pytest.raises(DiskError, match="xfs needs at least 300M"):
        disks.create("small", fs="xfs", size="100M")
    with pytest.raises(DiskExistsError, match="already exists"):
        disks.create("d0")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "precious").write_text("keep me")
    with pytest.raises(DiskExistsError, match="not empty"):
        disks.create("d1", mountpoint=busy)
    assert (busy / "precious").read_text() == "keep me"
    assert disks.names() == ["d0"]
    assert len(loops_under(disks.state_dir)) == 1
    assert not list(disks.image_dir.glob("d1*")) and not list(disks.image_dir.glob("small*"))


def test_heal_sees_cwd_and_private_mount_namespace_copies(real_disks) -> None:
    disk = real_disks("d0")
    disk.fail()
    # cwd on the disk, like a broker started from inside its log dir.
    with subprocess.Popen(["sleep", "600"], cwd=disk.mountpoint) as sleeper:
        try:
            holders = disk.holders()
            assert [(h.pid, h.how) for h in holders] == [(sleeper.pid, "cwd")]
            with pytest.raises(DiskBusyError):
                disk.heal()
        finally:
            sleeper.kill()
    # A private copy of the mount table (what `ip netns exec` gives a process) pins the shut-down superblock.
    with subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", "echo ready; exec sleep 600"],
        stdout=subprocess.PIPE,
        text=True,
    ) as copy:
        try:
            assert copy.stdout is not None and copy.stdout.readline().strip() == "ready"
            with pytest.raises(DiskBusyError) as refused:
                disk.heal()
            assert copy.pid in refused.value.pids
            assert "own mount namespace" in str(refused.value)
        finally:
            copy.kill()
    disk.heal()
    assert disk.state is DiskState.HEALTHY


def test_destroy_leaves_no_mount_or_loop_device(real_disks) -> None:
    root = real_disks.disk_set.state_dir
    quiet = real_disks("quiet")
    busy = real_disks("busy", fs="xfs")
    quiet.fail()
    quiet_mountpoint = quiet.mountpoint
    quiet.destroy()
    assert mounts_under(quiet_mountpoint) == []
    assert [line.split()[1] for line in mounts_under(root)] == [str(busy.mountpoint)]
    assert len(loops_under(root)) == 1
    assert not quiet_mountpoint.exists()
    with HolderProcess(busy.mountpoint / "log") as holder:
        busy.yank()
        real_disks.disk_set.destroy("busy")  # lazily: the mount is gone at once
        assert mounts_under(root) == []
        # The holder can still write into the detached filesystem, which keeps the device until it exits.
        holder.append()
        assert len(loops_under(root)) == 1
    assert wait_no_loops(root) == []  # the device detached itself when its last user exited
    assert real_disks.disk_set.names() == []
    assert not any(real_disks.disk_set.image_dir.iterdir())
