"""The state dir: one JSON file describing every disk, replaced atomically under an exclusive lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from tools.disk.errors import DiskError
from tools.disk.state import DiskTable

STATE_ENV = "KRAFTPY_DISK_STATE"
DEFAULT_STATE_DIR = Path("/var/lib/kraftpy/disks")
STATE_FILE = "disks.json"
LOCK_FILE = ".lock"


def default_state_dir() -> Path:
    return Path(os.environ.get(STATE_ENV) or DEFAULT_STATE_DIR)


class StateStore:
    """Reads and writes `disks.json` in `state_dir`.

    Mutations run inside `locked()`: an flock shared by every kraftpy process using the same state dir,
    made re-entrant within this object so nested library calls do not deadlock on their own lock.
    """

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.state_dir = Path(state_dir).absolute()
        self.path = self.state_dir / STATE_FILE
        self._mutex = threading.RLock()
        self._depth = 0
        self._lock_fd: int | None = None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._mutex:
            if self._depth == 0:
                self._ensure_dir()
                fd = os.open(self.state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._lock_fd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._lock_fd is not None:
                    os.close(self._lock_fd)  # closing releases the flock
                    self._lock_fd = None

    def load(self) -> DiskTable:
        try:
            raw = self.path.read_text()
        except FileNotFoundError:
            return DiskTable()
        except OSError as e:
            raise DiskError(f"cannot read disk state {self.path}: {e.strerror}") from None
        try:
            return DiskTable.from_json(json.loads(raw))
        except (ValueError, TypeError, KeyError) as e:
            raise DiskError(
                f"disk state {self.path} is damaged ({e}); `kraftpy disk cleanup {self.state_dir}` "
                "releases its mounts and loop devices"
            ) from None

    def save(self, table: DiskTable) -> None:
        """Write-to-temp, fsync, rename, fsync dir: a reader sees the old or the new file, never a torn one."""
        self._ensure_dir()
        data = json.dumps(table.to_json(), indent=2, sort_keys=True) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{STATE_FILE}.", dir=self.state_dir)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        dir_fd = os.open(self.state_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _ensure_dir(self) -> None:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DiskError(f"cannot create disk state dir {self.state_dir}: {e.strerror}") from None
