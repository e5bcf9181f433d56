"""`kraftpy cluster up|status|down|...`: a local cluster of a controller quorum and N JBOD brokers."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from tools.cli.main import UserError

if TYPE_CHECKING:
    from tools.cluster.cluster import LocalCluster

DESCRIPTION = """\
A local cluster from generated configs (Kafka property names): a quorum of controllers (ids 3000, 3001,
...) and N brokers (ids 1..N), each broker with several log dirs plus its own metadata.log.dir.
  up       create, format and start; returns once a controller is active, every node healthy and
           every broker unfenced
  status   controllers (which is active), brokers (fenced or not), dirs (online, directory.id, used
           space), partitions
  down     stop everything (SIGTERM, then SIGKILL), destroy the disks and namespaces it created
  fail / heal                  inject a dir fault, undo it
  stop / start / kill NODE_ID  stop (SIGTERM: a broker's controlled shutdown, a controller's
                               resignation), start, or SIGKILL one node, broker or controller
By default log dirs are plain directories under the work dir (works anywhere). With --real-disks
(root) each is its own loop-device filesystem; with --multi-host (root) each node runs in its own
network namespace on a bridge (10.200.0.0/24). With --zookeeper the cluster runs in ZooKeeper mode
(KIP-112): one ZooKeeper server instead of the controllers, and one of the brokers is the controller.
With --secure every node's RPC listener is TLS with client certificates from a CA made for the cluster,
the brokers' Kafka listeners are SASL_SSL (SCRAM) and ACLs are enforced; <work dir>/security/ holds
admin.properties (--command-config for kraftpy's tools) and client.properties (kcat -F) (KRaft and
127.0.0.1 only: not with --zookeeper or --multi-host).
Work dir: --work-dir, else $KRAFTPY_WORK, else ./work/cluster.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "cluster",
        help="a local cluster: up, status, down (plain dirs or real disks, optional namespaces)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--work-dir", metavar="DIR", help="where state, configs, data and logs live")
    verbs = parser.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)

    p = verbs.add_parser("up", parents=[common], help="create, format and start the cluster")
    p.add_argument("--brokers", type=int, default=3, help="number of brokers (3)")
    p.add_argument("--dirs", type=int, default=3, help="log dirs per broker (3)")
    p.add_argument("--controllers", type=int, default=3, help="controllers in the KRaft quorum (3)")
    p.add_argument(
        "--base-port",
        type=int,
        metavar="PORT",
        help="controllers on PORT, PORT+1, ..., then the brokers (default: the same ports each time for the "
        "same --work-dir, derived from its path; free ones at random when those are taken)",
    )
    p.add_argument(
        "--zookeeper",
        action="store_true",
        help="ZooKeeper mode (KIP-112): a ZooKeeper server and ZooKeeper-mode brokers, no KRaft controllers",
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="TLS with client certificates between nodes and for kraftpy's tools, SASL_SSL (SCRAM) for Kafka "
        "clients, ACLs; files in <work dir>/security",
    )
    p.add_argument("--real-disks", action="store_true", help="each log dir on its own loop-device fs (root)")
    p.add_argument(
        "--fs", default="ext4", help="filesystems for --real-disks, cycled per dir: ext4, xfs or ext4,xfs"
    )
    p.add_argument("--disk-size", metavar="SIZE", help="disk image size, sparse (default: the disk tool's)")
    p.add_argument("--multi-host", action="store_true", help="each node in its own network namespace (root)")
    p.add_argument(
        "--restart", choices=("no", "on-failure"), default="no", help="restart nodes that die (no)"
    )
    p.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra broker property, Kafka name (repeatable)",
    )
    p.add_argument(
        "--controller-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra controller property, Kafka name (repeatable), e.g. controller.quorum.append.linger.ms=5",
    )
    p.add_argument(
        "--kafka-defaults",
        action="store_true",
        help="keep Kafka's default heartbeat/session timing (default: faster settings for a laptop)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the cluster (60)")
    p.set_defaults(func=_up)

    p = verbs.add_parser("status", parents=[common], help="show nodes, dirs and partitions")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--topic", action="append", help="only these topics' partitions")
    p.set_defaults(func=_status)

    p = verbs.add_parser("down", parents=[common], help="stop everything and remove disks and namespaces")
    p.add_argument("--timeout", type=float, default=15.0, help="seconds before SIGKILL (15)")
    p.set_defaults(func=_down)

    p = verbs.add_parser("fail", parents=[common], help="fail one broker log dir")
    p.add_argument("broker", type=int)
    p.add_argument("dir", type=int, help="index of the dir in log.dirs (0-based)")
    p.add_argument(
        "--how", choices=("fail", "yank", "fill"), default="fail", help="EIO, block-layer EIO or ENOSPC"
    )
    p.set_defaults(func=_fail)

    p = verbs.add_parser("heal", parents=[common], help="undo a dir fault (stop the broker first for a disk)")
    p.add_argument("broker", type=int)
    p.add_argument("dir", type=int)
    p.set_defaults(func=_heal)

    p = verbs.add_parser(
        "prometheus-config",
        parents=[common],
        help="print a Prometheus configuration that scrapes this cluster",
    )
    p.add_argument("--interval", default="15s", help="scrape and rule evaluation interval (15s)")
    p.set_defaults(func=_prometheus_config)

    for verb, text, func in (
        ("stop", "stop one node (SIGTERM: controlled shutdown or resignation)", _stop),
        ("start", "start one node and wait until it serves", _start),
        ("kill", "SIGKILL one node", _kill),
    ):
        p = verbs.add_parser(verb, parents=[common], help=text)
        p.add_argument(
            "node", type=int, metavar="NODE_ID", help="a broker id (1..N) or a controller id (3000..)"
        )
        p.set_defaults(func=func)


def _work_dir(args: argparse.Namespace) -> str:
    from kraftpy.logging import configure_cli_logging
    from tools.cluster.spec import default_work_dir

    # Library warnings (a torn tail read mid-append...) go to stderr, never into --json output.
    configure_cli_logging()
    return str(args.work_dir or default_work_dir())


def _say(msg: str) -> None:
    print(msg, flush=True)


def _existing(args: argparse.Namespace) -> LocalCluster:
    from tools.cluster.cluster import LocalCluster

    cluster = LocalCluster(_work_dir(args))
    if not cluster.exists():
        raise UserError(f"no cluster in {cluster.work_dir}; start one with `kraftpy cluster up`")
    return cluster


def _up(args: argparse.Namespace) -> int:
    from tools.client.cli_support import properties
    from tools.cluster.errors import ClusterError
    from tools.cluster.spec import FAST_BROKER_SETTINGS, ClusterSpec

    broker_config = {} if args.kafka_defaults else dict(FAST_BROKER_SETTINGS)
    broker_config.update(properties(args.broker_config, "--broker-config"))
    try:
        spec = ClusterSpec(
            brokers=args.brokers,
            dirs=args.dirs,
            controllers=args.controllers,
            base_port=args.base_port,
            real_disks=args.real_disks,
            multi_host=args.multi_host,
            fs=tuple(f.strip() for f in args.fs.split(",") if f.strip()),
            disk_size=args.disk_size,
            restart=args.restart,
            broker_config=broker_config,
            controller_config=properties(args.controller_config, "--controller-config"),
            zookeeper=args.zookeeper,
            secure=args.secure,
        )
    except ValueError as e:
        raise UserError(str(e)) from None
    if spec.base_port is None and not spec.multi_host:
        import dataclasses

        from tools.cluster.launcher import stable_base_port

        # every node's port, then each KRaft broker's Kafka-protocol port (as the cluster plans them)
        count = spec.brokers + spec.servers + (0 if spec.zookeeper else spec.brokers)
        base = stable_base_port(str(_work_dir(args)), count)
        if base is None:
            print("the usual ports of this work dir are taken: using free ports", file=sys.stderr)
        spec = dataclasses.replace(spec, base_port=base)
    from tools.cluster.cluster import LocalCluster

    try:
        cluster = LocalCluster.up(_work_dir(args), spec, say=_say, timeout=args.timeout)
    except ClusterError as e:
        raise UserError(str(e)) from None
    _print_view(cluster, None)
    print(f"bootstrap servers: {cluster.bootstrap_servers()}")
    if spec.secure:
        _print_secure_usage(cluster)
    elif kafka := cluster.kafka_bootstrap_servers():
        print(f"Kafka clients (kcat, librdkafka, kafka-python): {kafka}")
    if cluster.client_netns:
        print(f"clients run inside the namespace: nsenter --net=/run/netns/{cluster.client_netns} -- ...")
    print(f"stop with: kraftpy cluster down --work-dir {cluster.work_dir}")
    return 0


def _print_secure_usage(cluster: LocalCluster) -> None:
    from tools.client.security import COMMAND_CONFIG_ENV
    from tools.cluster.spec import CLIENT_USER

    sec = cluster.security
    first = cluster.brokers[0].bootstrap
    rf = min(3, len(cluster.brokers))
    print(f"kraftpy's tools (TLS, the admin certificate): --command-config {sec.admin_properties}")
    print(
        f"  kraftpy topics create --command-config {sec.admin_properties} --bootstrap-server {first} "
        f"--topic t --partitions 3 --replication-factor {rf}"
    )
    print(f"  or: export {COMMAND_CONFIG_ENV}={sec.admin_properties}")
    print(
        f"Kafka clients (SASL_SSL, SCRAM user {CLIENT_USER}, password in the file): "
        f"{cluster.kafka_bootstrap_servers()}"
    )
    print(f"  kcat -F {sec.client_properties} -L")


def _print_view(cluster: LocalCluster, topics: list[str] | None) -> None:
    from rich.console import Console

    from tools.cluster.render import render

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(render(cluster.view(), topics))


def _prometheus_config(args: argparse.Namespace) -> int:
    import re

    from tools.cluster.prometheus import scrape_config

    if not re.fullmatch(r"[1-9][0-9]*(ms|s|m|h)", args.interval):
        raise UserError(
            f"--interval must be a Prometheus duration such as 500ms, 15s or 1m, not '{args.interval}'"
        )
    cluster = _existing(args)
    if cluster.client_netns:
        # Node addresses are only reachable from inside the cluster's network namespace.
        print(
            f"run Prometheus inside the namespace: nsenter --net=/run/netns/{cluster.client_netns} -- prometheus ...",
            file=sys.stderr,
        )
    security = cluster.security if cluster.spec.secure else None
    print(scrape_config(list(cluster.state.nodes), interval=args.interval, security=security), end="")
    return 0


def _status(args: argparse.Namespace) -> int:
    from tools.cluster.errors import ClusterError

    cluster = _existing(args)
    try:
        if args.json:
            out = cluster.view().to_json()
            out["zookeeper"] = cluster.state.zookeeper
            json.dump(out, sys.stdout, indent=2, default=str)
            print()
        else:
            _print_view(cluster, args.topic)
    except ClusterError as e:
        raise UserError(str(e)) from None
    return 0


def _down(args: argparse.Namespace) -> int:
    from tools.cluster.cluster import LocalCluster

    cluster = LocalCluster(_work_dir(args))
    if not cluster.exists():
        print(f"no cluster in {cluster.work_dir}; nothing to do")
        return 0
    cluster.down(say=_say, timeout=args.timeout)
    print(f"cluster in {cluster.work_dir} is down (logs kept in {cluster.work_dir / 'logs'})")
    return 0


def _guard(fn):  # type: ignore[no-untyped-def]
    from tools.cluster.errors import ClusterError

    try:
        return fn()
    except ClusterError as e:
        raise UserError(str(e)) from None


def _fail(args: argparse.Namespace) -> int:
    cluster = _existing(args)
    print(_guard(lambda: cluster.fail_dir(args.broker, args.dir, args.how)))
    return 0


def _heal(args: argparse.Namespace) -> int:
    cluster = _existing(args)
    lines = _guard(lambda: cluster.heal_dir(args.broker, args.dir, timeout=0))
    for line in lines:
        print(line)
    if lines:
        print(_after_heal(cluster, args.broker))
    return 0


def _after_heal(cluster: LocalCluster, broker_id: int) -> str:
    """What is left to do: like Kafka's, a broker never takes back a log dir it marked offline."""
    where = f"--work-dir {cluster.work_dir}"
    _pid, state = cluster.process_state(cluster.broker(broker_id).name)
    if state == "running":
        return (
            f"broker {broker_id} keeps this dir offline until it restarts: "
            f"kraftpy cluster stop {broker_id} {where} && kraftpy cluster start {broker_id} {where}"
        )
    return f"broker {broker_id} is not running; it uses the dir again once started: kraftpy cluster start {broker_id} {where}"


def _node_name(cluster: LocalCluster, node_id: int) -> str:
    node = _guard(lambda: cluster.state.node_by_id(node_id))
    return f"{node.role} {node.node_id}"


def _stop(args: argparse.Namespace) -> int:
    cluster = _existing(args)
    name = _node_name(cluster, args.node)
    print(f"{name}: {_guard(lambda: cluster.stop_node_id(args.node))}")
    return 0


def _kill(args: argparse.Namespace) -> int:
    cluster = _existing(args)
    name = _node_name(cluster, args.node)
    print(f"{name}: {_guard(lambda: cluster.stop_node_id(args.node, kill=True))}")
    return 0


def _start(args: argparse.Namespace) -> int:
    cluster = _existing(args)
    name = _node_name(cluster, args.node)
    _guard(lambda: cluster.start_node_id(args.node))
    print(f"{name} started and serving")
    return 0
