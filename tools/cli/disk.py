"""`kraftpy disk`: loop-device filesystems to use as log dirs, and real faults to inject into them."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tools.cli.main import UserError

if TYPE_CHECKING:
    from tools.disk import DiskSet

DESCRIPTION = """\
Loop-device-backed ext4 or xfs filesystems mounted as log dirs, with real faults:
  fail     filesystem shutdown ioctl: every later I/O, on open fds too, gets EIO
  yank     shrink the loop device under the filesystem: block-layer EIO (ext4 then EROFS)
  fill     allocate all free space: writes get ENOSPC (unfill removes the filler)
  heal     restore size, unmount, fsck, remount; refuses, naming the PIDs, while files are held open
State lives in --state-dir (default $KRAFTPY_DISK_STATE or /var/lib/kraftpy/disks). Needs root.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "disk",
        help="loop-device disks with real faults (create, list, fail, yank, fill, heal, destroy)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where disk state, images and default mountpoints live "
        "(default: $KRAFTPY_DISK_STATE or /var/lib/kraftpy/disks)",
    )
    verbs = parser.add_subparsers(dest="disk_command", metavar="ACTION", required=True)

    p = verbs.add_parser("create", parents=[common], help="make, attach, format and mount a new disk")
    p.add_argument("name")
    p.add_argument("--size", help="image size, sparse (default 256M for ext4, 300M for xfs, the minimum)")
    p.add_argument("--fs", default="ext4", choices=("ext4", "xfs"))
    p.add_argument("--mount", metavar="DIR", help="mountpoint (default: <state-dir>/mnt/<name>)")
    p.add_argument(
        "--owner", metavar="UID[:GID]", help="chown the mounted root, for a broker not run as root"
    )
    p.set_defaults(func=_run(_create))

    p = verbs.add_parser("list", parents=[common], help="show every disk and its state")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_run(_list, root=False))

    p = verbs.add_parser("fail", parents=[common], help="shut the filesystem down: every I/O gets EIO")
    p.add_argument("name")
    p.add_argument("--flush", action="store_true", help="commit the journal first (default: stop at once)")
    p.set_defaults(func=_run(_fail))

    p = verbs.add_parser(
        "yank", parents=[common], help="shrink the device under the filesystem: block-layer EIO"
    )
    p.add_argument("name")
    p.add_argument("--keep-caches", action="store_true", help="do not drop the page cache afterwards")
    p.set_defaults(func=_run(_yank))

    for verb, fn, text in (
        ("fill", _fill, "take all free space: writes get ENOSPC"),
        ("unfill", _unfill, "give the space back"),
        ("heal", _heal, "unmount, fsck and remount once nothing holds files there"),
        ("holders", _holders, "list the processes keeping the disk busy"),
    ):
        p = verbs.add_parser(verb, parents=[common], help=text)
        p.add_argument("name")
        p.set_defaults(func=_run(fn, root=verb != "holders"))

    p = verbs.add_parser(
        "destroy", parents=[common], help="unmount, detach and delete disks (never leaves a mount)"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("names", nargs="*", default=[], metavar="NAME")
    which.add_argument(
        "--all", action="store_true", help="every disk of the state dir, and any leftovers there"
    )
    p.set_defaults(func=_run(_destroy))

    p = verbs.add_parser(
        "cleanup",
        help="crash janitor: unmount and detach leftovers (under PREFIX, or every kraftpy image)",
    )
    p.add_argument("prefix", nargs="?", metavar="PREFIX", help="a directory; default: every *.kraftpy.img")
    p.set_defaults(func=_run(_cleanup))


def _run(
    fn: Callable[[argparse.Namespace, DiskSet], int], *, root: bool = True
) -> Callable[[argparse.Namespace], int]:
    """Wrap a handler: root check first, library errors become one-line user errors."""

    def call(args: argparse.Namespace) -> int:
        from tools.disk import DiskError, DiskSet
        from tools.disk.tools import require_root

        try:
            if root:
                require_root(f"`kraftpy disk {args.disk_command}`")
            return fn(args, DiskSet(getattr(args, "state_dir", None)))
        except DiskError as e:
            raise UserError(str(e)) from None

    return call


def _parse_owner(text: str) -> tuple[int, int]:
    import grp
    import pwd

    user, _, group = text.partition(":")
    try:
        uid = int(user) if user.isdigit() else pwd.getpwnam(user).pw_uid
        if group:
            gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
        else:
            gid = pwd.getpwuid(uid).pw_gid if not user.isdigit() else uid
    except KeyError:
        raise UserError(f"unknown user or group in --owner {text!r}") from None
    return uid, gid


def _create(args: argparse.Namespace, disks: DiskSet) -> int:
    from tools.disk import format_size

    owner = _parse_owner(args.owner) if args.owner else None
    disk = disks.create(args.name, size=args.size, fs=args.fs, mountpoint=args.mount, owner=owner)
    st = disk.status()
    print(f"{st.name}: {st.fs} {format_size(st.size_bytes)} on {st.loop_device}, mounted at {st.mountpoint}")
    return 0


def _list(args: argparse.Namespace, disks: DiskSet) -> int:
    from tools.disk import format_size

    rows = disks.list()
    if args.json:
        json.dump([r.to_json() for r in rows], sys.stdout, indent=2)
        print()
        return 0
    if not rows:
        print(f"no disks in {disks.state_dir}")
        return 0
    from rich.console import Console
    from rich.table import Table

    colour = {"healthy": "green", "full": "yellow", "creating": "cyan"}
    table = Table(box=None, header_style="bold")
    for col in ("NAME", "FS", "SIZE", "LOOP", "MOUNTPOINT", "STATE", "USED"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        used = "-" if r.used_bytes is None else f"{format_size(r.used_bytes)} ({_percent(r)})"
        state = f"[{colour.get(r.state.value, 'red')}]{r.state.value}[/]"
        table.add_row(
            r.name, r.fs, format_size(r.size_bytes), r.loop_device or "-", r.mountpoint, state, used
        )
    console = Console() if sys.stdout.isatty() else Console(width=240, no_color=True)
    console.print(table)
    return 0


def _percent(r: object) -> str:
    used, total = getattr(r, "used_bytes", None), getattr(r, "total_bytes", None)
    return f"{100 * used / total:.0f}%" if used is not None and total else "?"


def _fail(args: argparse.Namespace, disks: DiskSet) -> int:
    disk = disks.get(args.name)
    disk.fail(flush=args.flush)
    print(f"{args.name}: failed (filesystem at {disk.mountpoint} shut down; every I/O on it now gets EIO)")
    return 0


def _yank(args: argparse.Namespace, disks: DiskSet) -> int:
    disk = disks.get(args.name)
    disk.yank(drop_caches=not args.keep_caches)
    print(f"{args.name}: yanked (device under {disk.mountpoint} shrunk to one block; I/O gets EIO)")
    return 0


def _fill(args: argparse.Namespace, disks: DiskSet) -> int:
    from tools.disk import format_size

    taken = disks.get(args.name).fill()
    print(f"{args.name}: full ({format_size(taken)} taken by a filler file; writes get ENOSPC)")
    return 0


def _unfill(args: argparse.Namespace, disks: DiskSet) -> int:
    disks.get(args.name).unfill()
    print(f"{args.name}: filler removed")
    return 0


def _heal(args: argparse.Namespace, disks: DiskSet) -> int:
    actions = disks.get(args.name).heal()
    print(f"{args.name}: healthy ({'; '.join(actions)})")
    return 0


def _holders(args: argparse.Namespace, disks: DiskSet) -> int:
    holders = disks.get(args.name).holders()
    for h in holders:
        print(h.describe())
    if not holders:
        print(f"{args.name}: nothing holds it")
    return 0


def _destroy(args: argparse.Namespace, disks: DiskSet) -> int:
    if args.all:
        actions = disks.destroy_all()
    else:
        for name in args.names:
            disks.get(name)  # every name checked before anything is destroyed
        actions = [f"{name}: {a}" for name in args.names for a in disks.destroy(name)]
    for a in actions:
        print(a)
    if not actions:
        print(f"nothing to destroy in {disks.state_dir}")
    return 0


def _cleanup(args: argparse.Namespace, disks: DiskSet) -> int:
    from tools.disk import cleanup_leftovers

    actions = cleanup_leftovers(args.prefix)
    for a in actions:
        print(a)
    if not actions:
        print("no leftovers")
    return 0
