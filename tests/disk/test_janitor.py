"""After a crash nothing of a disk may stay behind: destroy --all and cleanup_leftovers work without help."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, require_real
from tests.disk.helpers import loops_under, mounts_under, wait_no_loops
from tests.disk_fixtures import real_disks_available
from tools.disk import DiskError, DiskSet, cleanup_leftovers
from tools.disk.janitor import select_leftovers
from tools.disk.loopdev import LoopDevice

pytestmark = pytest.mark.real

# A process that makes disks, keeps a file open on one of them and is then killed with SIGKILL.
CRASHER = r"""
import os, sys
from tools.disk import DiskSet
disks = DiskSet(sys.argv[1])
a = disks.create("a", size="64M")
disks.create("b", fs="xfs")
fd = os.open(a.mountpoint / "held", os.O_CREAT | os.O_WRONLY)
a.fail()
os.chdir(disks.get("b").mountpoint)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def root(tmp_path: Path):
    require_real("root, losetup, mkfs.ext4 and mkfs.xfs (loop-device disks)", real_disks_available("xfs"))
    try:
        yield tmp_path
    finally:
        cleanup_leftovers(tmp_path)


def crash(state: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", CRASHER, str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    ) as p:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGKILL)
    assert len(mounts_under(state)) == 2
    assert len(loops_under(state)) == 2


def test_destroy_all_after_a_crash(root: Path) -> None:
    state = root / "state"
    crash(state)
    p = subprocess.run(
        [sys.executable, "-c", "import sys; from tools.cli.main import main; sys.exit(main())",
         "disk", "destroy", "--all", "--state-dir", str(state)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert mounts_under(state) == []
    assert wait_no_loops(state) == []
    assert json.loads((state / "disks.json").read_text())["disks"] == {}
    assert list((state / "images").iterdir()) == []


def test_destroy_all_with_a_damaged_state_file(root: Path) -> None:
    state = root / "state"
    crash(state)
    (state / "disks.json").write_text('{"version": 1, "disks": {"a": ')  # torn by hand
    actions = DiskSet(state).destroy_all()
    assert any("state unreadable" in a for a in actions)
    assert mounts_under(state) == []
    assert wait_no_loops(state) == []


def test_cleanup_leftovers_with_the_state_lost(root: Path) -> None:
    state = root / "state"
    crash(state)
    (state / "disks.json").unlink()
    actions = cleanup_leftovers(root)
    assert len([a for a in actions if a.endswith("detached")]) == 2
    assert mounts_under(root) == []
    assert wait_no_loops(root) == []


def test_janitor_without_prefix_takes_kraftpy_images_only() -> None:
    # Pure selection: running the real sweep here would take disks of tests running in parallel.
    devices = [
        LoopDevice("/dev/loop3", (7, 3), "/var/lib/kraftpy/disks/images/d0.kraftpy.img"),
        LoopDevice("/dev/loop4", (7, 4), "/home/me/vm.img"),
        LoopDevice("/dev/loop5", (7, 5), "/tmp/run1/state/images/b0d1.kraftpy.img"),
    ]
    assert [d.path for d in select_leftovers(devices, None)] == ["/dev/loop3", "/dev/loop5"]
    assert [d.path for d in select_leftovers(devices, "/tmp/run1")] == ["/dev/loop5"]
    assert [d.path for d in select_leftovers(devices, "/home/me")] == ["/dev/loop4"]
    assert select_leftovers(devices, "/tmp/run") == []


def test_destroy_reaches_into_private_mount_namespaces(root: Path) -> None:
    disks = DiskSet(root / "state")
    disk = disks.create("d0", size="64M")
    with subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", "echo ready; exec sleep 600"],
        stdout=subprocess.PIPE,
        text=True,
    ) as copy:
        try:
            assert copy.stdout is not None and copy.stdout.readline().strip() == "ready"
            actions = disk.destroy()
            assert any(f"mount namespace of pid {copy.pid}" in a for a in actions)
            # Only the copy's mount held the device; with it gone the device is released.
            assert wait_no_loops(root) == []
        finally:
            copy.kill()


def test_cleanup_refuses_the_whole_machine() -> None:
    with pytest.raises(DiskError, match="refusing"):
        cleanup_leftovers("/")
