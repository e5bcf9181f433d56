"""`kraftpy demo`: a local cluster survives the death of a disk under a partition leader (the README's main command)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tools.cli.main import UserError

DESCRIPTION = """\
Brings up a local cluster (a quorum of 3 controllers, 3 brokers x 3 log dirs; real loop-device filesystems when
run as root with loop devices, plain directories otherwise), produces to a 6-partition RF=3 topic
with acks=all and idempotence, fails the log dir under a leader, shows the failover live, heals the
disk and restarts the broker, checks that every acknowledged message is read back exactly once,
and runs the Spark analysis of the controller's metadata log into an HTML report.
Cleans up everything it started. Work dir: --work-dir, else $KRAFTPY_WORK/demo, else ./work/demo.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="watch a local cluster survive a disk failure, then a Spark report of its metadata log",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--work-dir", metavar="DIR", help="where the cluster, acks, logs and report go")
    disks = p.add_mutually_exclusive_group()
    disks.add_argument("--real-disks", action="store_true", default=None, help="require loop-device disks")
    disks.add_argument(
        "--plain-dirs", action="store_false", dest="real_disks", help="use plain directories even as root"
    )
    p.add_argument("--rate", type=float, default=200.0, help="messages per second to produce (200)")
    p.add_argument("--no-analysis", action="store_true", help="skip the Spark analysis and report")
    p.add_argument(
        "--zookeeper",
        action="store_true",
        help="the same story in ZooKeeper mode (KIP-112): a ZooKeeper instead of the controllers, no Spark step",
    )
    p.add_argument(
        "--story",
        choices=("disk-failure", "migration"),
        default="disk-failure",
        help="disk-failure (default): a dir dies under a leader; migration: a ZooKeeper-mode cluster moves to "
        "KRaft under load (KIP-866), with a dir failure midway",
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="the cluster of `kraftpy cluster up --secure`: TLS between nodes, SASL_SSL for clients, ACLs on",
    )
    p.add_argument("--no-live", action="store_true", help="plain line output even on a terminal")
    p.set_defaults(func=_demo)


def _work_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("KRAFTPY_WORK")
    return Path(env) / "demo" if env else Path("work") / "demo"


def _demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kraftpy.logging import configure_cli_logging
    from tools.cluster.demo import Demo, DemoOptions
    from tools.cluster.demo_migration import MigrationDemo
    from tools.cluster.errors import ClusterError

    configure_cli_logging("ERROR")
    if args.rate <= 0:
        raise UserError("--rate must be positive")
    if args.secure and (args.zookeeper or args.story == "migration"):
        raise UserError("--secure runs the KRaft disk-failure story only (no ZooKeeper mode, no migration)")
    if args.story == "migration" and args.zookeeper:
        raise UserError("--story migration starts in ZooKeeper mode already; leave out --zookeeper")
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # CI logs: no wrapping at 80 columns
    options = DemoOptions(
        work_dir=_work_dir(args.work_dir),
        real_disks=args.real_disks,
        rate=args.rate,
        analysis=not args.no_analysis,
        zookeeper=args.zookeeper,
        secure=args.secure,
        live=False if args.no_live else None,
    )
    try:
        story = MigrationDemo if args.story == "migration" else Demo
        result = story(options, console).run()
    except ClusterError as e:
        raise UserError(str(e)) from None
    console.print()
    if result.error:
        console.print(f"[red]demo failed:[/red] {result.error}", highlight=False)
    console.print(f"log dirs: {result.mode}", highlight=False)
    if result.verdict:
        console.print(f"consumer check: {result.verdict}", highlight=False)
    f = result.failover
    if f and "halted" in f:
        console.print(
            f"dir failure during the migration: broker {f['broker']}'s dir {f['dir']}; the broker "
            f"{'halted, as a migrating broker does' if f['halted'] else 'did not halt'}, and came back healed",
            highlight=False,
            soft_wrap=True,
        )
    elif f and "leaders_moved_ms" not in f:
        console.print(
            f"failover of broker {f['broker']}'s dir {f['dir']}: noticed by the broker +{f['detected_ms']} ms, "
            f"offline replicas known to the ZooKeeper-mode controller +{f['reported_ms']} ms",
            highlight=False,
            soft_wrap=True,
        )
    elif f:
        console.print(
            f"failover of broker {f['broker']}'s dir {f['dir']}: noticed by the broker +{f['detected_ms']} ms, "
            f"committed by the controller +{f['reported_ms']} ms, leaders moved +{f['leaders_moved_ms']} ms",
            highlight=False,
            soft_wrap=True,
        )
    if result.report:
        console.print(f"report: {Path(result.report).resolve()}", highlight=False)
    console.print(f"logs: {options.work_dir.resolve() / 'cluster' / 'logs'}", highlight=False)
    console.print(f"{'demo OK' if result.ok else 'demo FAILED'} in {result.seconds:.0f} s", highlight=False)
    return 0 if result.ok else 1
