"""`kraftpy migrate`: move a local ZooKeeper-mode cluster (`kraftpy cluster up --zookeeper`) to KRaft."""

from __future__ import annotations

import argparse

from tools.cli.errors import UserError

DESCRIPTION = """\
Migrate the local ZooKeeper-mode cluster in the work dir to KRaft (KIP-866), as Kafka's guide does it:
  add-controllers          start KRaft controllers (ids 3000, ...) with zookeeper.connect and
                           zookeeper.metadata.migration.enable=true, formatted with ZooKeeper's cluster id
  roll-brokers-migration   restart each broker with the migration flag and the quorum's address, one at a
                           time, each back in the ISR before the next
  wait-migration           wait until the active controller reports MIGRATION, its driver DUAL_WRITE
  roll-brokers-kraft       restart each broker as a KRaft broker (node.id = broker.id, same log dirs)
  finalize                 roll the controllers without the migration flag (standbys first, the active
                           one last) and wait for POST_MIGRATION
Without --step every step not done yet runs, in order. `kraftpy cluster status|stop|start|down` keep
working on the cluster at any point. Work dir: --work-dir, else $KRAFTPY_WORK, else ./work/cluster.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from tools.cluster.migrate.plan import STEPS

    p = sub.add_parser(
        "migrate",
        help="migrate a local ZooKeeper-mode cluster to KRaft (KIP-866)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--work-dir", metavar="DIR", help="the cluster's work dir")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--step", choices=STEPS, help="run this one step")
    what.add_argument(
        "--status", action="store_true", help="show the phase of every node and the migration state"
    )
    what.add_argument(
        "--rollback",
        action="store_true",
        help="go back to ZooKeeper mode before finalizing (KIP-866): stop the controllers, delete /controller, "
        "roll the brokers without the migration configs",
    )
    p.add_argument(
        "--controllers", type=int, metavar="N", help="controllers add-controllers starts (default 3)"
    )
    p.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for each node or state (120)"
    )
    p.set_defaults(func=_migrate)


def _say(msg: str) -> None:
    print(msg, flush=True)


def _migrate(args: argparse.Namespace) -> int:
    from kraftpy.logging import configure_cli_logging
    from tools.cluster.cluster import LocalCluster
    from tools.cluster.errors import ClusterError
    from tools.cluster.migrate.plan import ADD_CONTROLLERS, DEFAULT_CONTROLLERS, step_done
    from tools.cluster.migrate.runner import Migration
    from tools.cluster.spec import default_work_dir

    configure_cli_logging()
    if args.timeout <= 0:
        raise UserError(f"--timeout must be positive, not {args.timeout}")
    cluster = LocalCluster(args.work_dir or default_work_dir())
    if not cluster.exists():
        raise UserError(f"no cluster in {cluster.work_dir}; start one with `kraftpy cluster up --zookeeper`")
    migration = Migration(cluster, say=_say, timeout=args.timeout)
    try:
        if args.status:
            if args.controllers is not None:
                raise UserError("--controllers goes with the add-controllers step, not with --status")
            for line in migration.status_lines():
                print(line)
            return 0
        if args.rollback:
            if args.controllers is not None:
                raise UserError("--controllers goes with the add-controllers step, not with --rollback")
            migration.rollback()
            return 0
        if args.controllers is not None and (
            args.step not in (None, ADD_CONTROLLERS) or step_done(ADD_CONTROLLERS, cluster.state)
        ):
            raise UserError("--controllers goes with the add-controllers step, and it is not going to run")
        migration.run(args.step, controllers=args.controllers or DEFAULT_CONTROLLERS)
    except ClusterError as e:
        raise UserError(str(e)) from None
    return 0
