"""`kraftpy zk`: the znodes of a ZooKeeper-mode cluster, as zookeeper-shell shows them.

    kraftpy zk [--zookeeper HOST:PORT] tree [PATH]       every znode under PATH (default /), one per line
    kraftpy zk [--zookeeper HOST:PORT] get PATH          the znode's data
    kraftpy zk [--zookeeper HOST:PORT] ls PATH           its children, as zookeeper-shell's `ls` prints them
    kraftpy zk [--zookeeper HOST:PORT] create PATH DATA  a persistent znode (zookeeper-shell's `create`)

Without --zookeeper the ZooKeeper of the local cluster in $KRAFTPY_WORK (`kraftpy cluster up
--zookeeper`) is used.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from tools.cli.errors import UserError

CONNECT_TIMEOUT_S = 10.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "zk",
        help="show the znodes of a ZooKeeper-mode cluster (zookeeper-shell)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--zookeeper", metavar="HOST:PORT", help="ZooKeeper connect string (default: the local cluster's)"
    )
    verbs = p.add_subparsers(dest="zk_command", metavar="ACTION", required=True)
    t = verbs.add_parser("tree", help="every znode under PATH")
    t.add_argument("path", nargs="?", default="/")
    g = verbs.add_parser("get", help="a znode's data")
    g.add_argument("path")
    ls = verbs.add_parser("ls", help="a znode's children")
    ls.add_argument("path")
    c = verbs.add_parser("create", help="create a persistent znode")
    c.add_argument("path")
    c.add_argument("data", nargs="?", default="")
    p.set_defaults(func=_run)


def _connect_string(given: str | None) -> str:
    if given:
        return given
    from tools.cluster.cluster import LocalCluster
    from tools.cluster.spec import default_work_dir

    cluster = LocalCluster(default_work_dir())
    connect = cluster.state.zookeeper if cluster.exists() else None
    if connect is None:
        raise UserError(f"no --zookeeper given and no ZooKeeper-mode cluster found in {cluster.work_dir}")
    return connect


def _run(args: argparse.Namespace) -> int:
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError

    connect = _connect_string(args.zookeeper)
    zk = KazooClient(hosts=connect, connection_retry={"max_tries": 3, "delay": 0.2})
    try:
        zk.start(timeout=CONNECT_TIMEOUT_S)
    except KazooTimeoutError:
        raise UserError(f"cannot connect to ZooKeeper at {connect}") from None
    except Exception as e:
        raise UserError(f"cannot connect to ZooKeeper at {connect}: {e}") from None
    try:
        if args.zk_command == "tree":
            for path in _walk(zk, _norm(args.path)):
                print(path)
        elif args.zk_command == "ls":
            print("[" + ", ".join(sorted(zk.get_children(_norm(args.path)))) + "]")
        elif args.zk_command == "get":
            data, _stat = zk.get(_norm(args.path))
            sys.stdout.write((data or b"").decode("utf-8", errors="replace") + "\n")
        else:
            zk.create(_norm(args.path), args.data.encode(), makepath=True)
    except NoNodeError:
        raise UserError(f"Node does not exist: {args.path}") from None
    except NodeExistsError:
        raise UserError(f"Node already exists: {args.path}") from None
    except KazooException as e:
        raise UserError(f"ZooKeeper error: {type(e).__name__}") from None
    finally:
        zk.stop()
        zk.close()
    return 0


def _norm(path: str) -> str:
    if not path.startswith("/"):
        raise UserError(f"Path must start with / character: {path}")
    return path.rstrip("/") or "/"


def _walk(zk: Any, path: str) -> Iterator[str]:
    yield path
    for child in sorted(zk.get_children(path)):
        yield from _walk(zk, f"{path.rstrip('/')}/{child}")
