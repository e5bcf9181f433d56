"""The system commands disks are made of (losetup, mkfs, mount, fsck), and the checks before using them."""

from __future__ import annotations

import os
import shutil
import subprocess

from tools.disk.errors import CommandFailedError, MissingToolError, NotRootError

# Which package provides each command, for the error message when it is missing.
_PACKAGES = {
    "losetup": "util-linux",
    "mount": "mount",
    "umount": "mount",
    "nsenter": "util-linux",
    "mkfs.ext4": "e2fsprogs",
    "e2fsck": "e2fsprogs",
    "mkfs.xfs": "xfsprogs",
    "xfs_repair": "xfsprogs",
}
_NEEDED = {
    "ext4": ("losetup", "mount", "umount", "mkfs.ext4", "e2fsck"),
    "xfs": ("losetup", "mount", "umount", "mkfs.xfs", "xfs_repair"),
}
COMMAND_TIMEOUT = 300.0
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def search_path() -> str:
    # sudo and `env -i` shells often lack the sbin dirs where losetup and mkfs live.
    parts = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    return os.pathsep.join(parts + [d for d in _SBIN if d not in parts])


def which(tool: str) -> str | None:
    return shutil.which(tool, path=search_path())


def run(*argv: str, check: bool = True, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess[str]:
    # C locale: error text we show or match must not depend on the user's language.
    env = {**os.environ, "LC_ALL": "C", "PATH": search_path()}
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except FileNotFoundError:
        raise MissingToolError(_missing_message(argv[0])) from None
    except subprocess.TimeoutExpired:
        raise CommandFailedError(argv, -1, f"no answer after {timeout:.0f}s") from None
    if check and p.returncode != 0:
        raise CommandFailedError(argv, p.returncode, p.stderr or p.stdout)
    return p


def _missing_message(tool: str) -> str:
    package = _PACKAGES.get(tool)
    hint = f" (apt-get install {package})" if package else ""
    return f"{tool} not found{hint}"


def require_root(action: str = "this") -> None:
    if os.geteuid() != 0:
        raise NotRootError(
            f"{action} needs root (loop devices, mounts and fs ioctls): run it as root, e.g. with sudo"
        )


def require_tools(fs: str) -> None:
    for tool in _NEEDED.get(fs, _NEEDED["ext4"]):
        if which(tool) is None:
            raise MissingToolError(_missing_message(tool))


def have_tools(fs: str) -> bool:
    return all(which(t) for t in _NEEDED.get(fs, ()))
