"""`kraftpy disk` as a user runs it: one process per command, state carried by the state dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO, require_real
from tests.disk.helpers import HolderProcess, loops_under, mounts_under
from tests.disk_fixtures import real_disks_available

pytestmark = pytest.mark.real

# The console script's own code path; `-m tools.cli.main` would load main.py twice.
ENTRY = "import sys; from tools.cli.main import main; sys.exit(main())"


def kraftpy(
    *args: str, python: str = sys.executable, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    # The venv's packages by path too, for an interpreter other than the venv's own (the non-root test).
    path = [str(REPO), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [*prefix, python, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def ok(*args: str) -> str:
    p = kraftpy(*args)
    assert p.returncode == 0, p.stderr
    return p.stdout


def listed(state: Path) -> dict[str, dict]:
    return {d["name"]: d for d in json.loads(ok("disk", "list", "--json", "--state-dir", str(state)))}


def assert_user_error(p: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    for phrase in phrases:
        assert phrase in p.stderr


@pytest.fixture
def state(tmp_path: Path):
    require_real("root with losetup and mkfs.ext4 (loop-device disks)", real_disks_available("ext4"))
    state = tmp_path / "state"
    try:
        yield state
    finally:
        kraftpy("disk", "destroy", "--all", "--state-dir", str(state))
        kraftpy("disk", "cleanup", str(tmp_path))


def test_state_carries_across_invocations(state: Path) -> None:
    s = ("--state-dir", str(state))
    out = ok("disk", "create", "d0", "--size", "64M", *s)
    assert "d0: ext4 64M on /dev/loop" in out
    ok("disk", "create", "d1", "--fs", "xfs", *s)
    disks = listed(state)
    assert {n: (d["fs"], d["state"]) for n, d in disks.items()} == {
        "d0": ("ext4", "healthy"),
        "d1": ("xfs", "healthy"),
    }
    assert disks["d1"]["size_bytes"] == 300 << 20

    ok("disk", "fail", "d0", *s)
    ok("disk", "yank", "d1", *s)
    assert {n: d["state"] for n, d in listed(state).items()} == {"d0": "failed", "d1": "yanked"}
    table = ok("disk", "list", *s)
    assert "failed" in table and "yanked" in table and str(state / "mnt" / "d0") in table

    ok("disk", "heal", "d0", *s)
    ok("disk", "heal", "d1", *s)
    ok("disk", "fill", "d0", *s)
    d0 = listed(state)["d0"]
    assert d0["state"] == "full"
    assert d0["used_bytes"] > d0["total_bytes"] * 0.9
    ok("disk", "unfill", "d0", *s)
    assert {n: d["state"] for n, d in listed(state).items()} == {"d0": "healthy", "d1": "healthy"}

    ok("disk", "destroy", "d0", "d1", *s)
    assert listed(state) == {}
    assert mounts_under(state) == []
    assert loops_under(state) == []


def test_heal_names_the_holder_and_changes_nothing(state: Path) -> None:
    s = ("--state-dir", str(state))
    ok("disk", "create", "d0", *s)
    with HolderProcess(state / "mnt" / "d0" / "log") as holder:
        ok("disk", "fail", "d0", *s)
        assert holder.append() == "EIO"
        p = kraftpy("disk", "heal", "d0", *s)
        assert_user_error(p, f"pid {holder.pid} ", "nothing was changed")
        assert listed(state)["d0"]["state"] == "failed"
        holders = ok("disk", "holders", "d0", *s)
        assert f"pid {holder.pid} " in holders
    ok("disk", "heal", "d0", *s)
    assert listed(state)["d0"]["state"] == "healthy"


def test_bad_input_is_one_line_and_changes_nothing(state: Path) -> None:
    s = ("--state-dir", str(state))
    assert_user_error(
        kraftpy("disk", "create", "x", "--fs", "xfs", "--size", "100M", *s), "xfs needs at least 300M"
    )
    assert_user_error(kraftpy("disk", "create", "a/b", *s), "bad disk name")
    assert_user_error(kraftpy("disk", "create", "x", "--size", "lots", *s), "not a size")
    assert_user_error(kraftpy("disk", "fail", "nope", *s), "no disk named 'nope'")
    ok("disk", "create", "d0", *s)
    assert_user_error(kraftpy("disk", "unfill", "d0", *s), "not full")
    assert_user_error(kraftpy("disk", "destroy", "d0", "nope", *s), "no disk named 'nope'")
    assert list(listed(state)) == ["d0"]
    assert len(mounts_under(state)) == 1


def test_non_root_gets_a_clear_error(tmp_path: Path) -> None:
    # The venv's interpreter may live in root's home, out of nobody's reach; the system one of the same
    # minor version runs the same code with the venv's packages on PYTHONPATH.
    system_python = "/usr/bin/python3"
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.access(system_python, os.X_OK):
        pytest.skip("needs root, setpriv and /usr/bin/python3 to run a command as nobody")
    probe = [system_python, "-c", "import sys; print(sys.version_info[:2])"]
    version = subprocess.run(probe, capture_output=True, text=True, check=False).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip(f"/usr/bin/python3 is Python {version}, the venv's is {sys.version_info[:2]}")
    state = tmp_path / "state"
    # Only the right to read files is kept (a checkout may sit in a dir only root can enter, such as a
    # fresh `mktemp -d`): the user is still not root, which is what the command must notice.
    read_anywhere = ("--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search")
    nobody = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *read_anywhere)
    p = kraftpy("disk", "create", "d0", "--state-dir", str(state), python=system_python, prefix=nobody)
    assert_user_error(p, "needs root")
    assert not state.exists()
