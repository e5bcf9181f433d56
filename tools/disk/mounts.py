"""The mount table as /proc/<pid>/mountinfo tells it (parsing is pure; reading is one small helper)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    # The kernel escapes space, tab, newline and backslash in paths as \ooo.
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


@dataclass(frozen=True)
class MountEntry:
    mount_id: int
    parent_id: int
    device: tuple[int, int]  # major, minor of the filesystem (== st_rdev of its loop device)
    root: str
    mountpoint: str
    options: str
    fstype: str
    source: str
    super_options: str

    @property
    def is_emergency_ro(self) -> bool:
        return "emergency_ro" in self.super_options.split(",")


def parse_mountinfo(text: str) -> list[MountEntry]:
    entries = []
    for line in text.splitlines():
        if not line.strip():
            continue
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        head = left.split()
        tail = right.split()
        if len(head) < 6 or len(tail) < 2:
            continue
        major, _, minor = head[2].partition(":")
        entries.append(
            MountEntry(
                mount_id=int(head[0]),
                parent_id=int(head[1]),
                device=(int(major), int(minor)),
                root=_unescape(head[3]),
                mountpoint=_unescape(head[4]),
                options=head[5],
                fstype=tail[0],
                source=_unescape(tail[1]),
                super_options=tail[2] if len(tail) > 2 else "",
            )
        )
    return entries


def read_mountinfo(pid: int | str = "self") -> list[MountEntry]:
    return parse_mountinfo(Path(f"/proc/{pid}/mountinfo").read_text())


def is_under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")
