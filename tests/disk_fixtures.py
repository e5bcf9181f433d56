"""`real_disks`: real loop-device filesystems for tests, torn down even when the test fails.

Any test can ask for it (tests/conftest.py re-exports it):

    def test_dir_failure(real_disks):
        d0 = real_disks("d0")                          # ext4, 256M sparse, mounted
        d1 = real_disks("d1", fs="xfs")
        dirs = real_disks.log_dirs(brokers=3, dirs_per_broker=3)   # [[LoopDisk x3] x3]
        d0.fail()                                      # every I/O on d0 -> EIO
        d0.heal()                                      # once nothing holds files there

Skips (or fails under KRAFTPY_REQUIRE_REAL=1) without root, losetup, mkfs.ext4; xfs disks also need
mkfs.xfs.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tools.cluster.launcher import mark_test_run
from tools.disk import DiskSet, LoopDisk, cleanup_leftovers, have_tools

# tests/conftest.py imports this module, so the whole session is marked before any test starts a
# process, a disk or a namespace: whatever a hard-killed run leaves, the janitor can tell it from an
# operator's cluster.
mark_test_run()


def _require_real(what: str, available: bool) -> None:
    # Imported late: tests/conftest.py imports this module at its end.
    from tests.conftest import require_real

    require_real(what, available)


def real_disks_available(fs: str = "ext4") -> bool:
    return os.geteuid() == 0 and have_tools(fs) and os.path.exists("/dev/loop-control")


class RealDisks:
    """Creates disks in a private state dir; `close()` destroys them all and sweeps leftovers."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.disk_set = DiskSet(root / "state")
        self._count = 0

    def __call__(
        self,
        name: str | None = None,
        *,
        fs: str = "ext4",
        size: str | int | None = None,
        mountpoint: str | os.PathLike[str] | None = None,
        owner: tuple[int, int] | None = None,
    ) -> LoopDisk:
        if fs != "ext4":
            _require_real(f"{fs} tools (mkfs.{fs})", real_disks_available(fs))
        if name is None:
            name = f"d{self._count}"
        self._count += 1
        return self.disk_set.create(name, size=size, fs=fs, mountpoint=mountpoint, owner=owner)

    def log_dirs(
        self,
        brokers: int,
        dirs_per_broker: int,
        *,
        fs: str | Sequence[str] = "ext4",
        size: str | int | None = None,
    ) -> list[list[LoopDisk]]:
        """`brokers` x `dirs_per_broker` disks named b<broker>d<dir>; `fs` may cycle per dir, e.g. ("ext4", "xfs")."""
        kinds = [fs] if isinstance(fs, str) else list(fs)
        return [
            [self(f"b{b}d{d}", fs=kinds[d % len(kinds)], size=size) for d in range(dirs_per_broker)]
            for b in range(brokers)
        ]

    def __iter__(self) -> Iterator[LoopDisk]:
        return iter(self.disk_set)

    def close(self) -> list[str]:
        actions = self.disk_set.destroy_all()
        # Belt and braces: anything under our root that destroy_all could not see (custom mountpoints).
        actions += cleanup_leftovers(self.root)
        return actions


@pytest.fixture
def real_disks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealDisks]:
    _require_real("root with losetup and mkfs.ext4 (loop-device disks)", real_disks_available("ext4"))
    disks = RealDisks(tmp_path_factory.mktemp("disks"))
    try:
        yield disks
    finally:
        try:
            disks.close()
        except Exception as e:  # teardown must not hide the test's own failure
            warnings.warn(f"real_disks teardown: {e}", stacklevel=1)
            cleanup_leftovers(disks.root)
