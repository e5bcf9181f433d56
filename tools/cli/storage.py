"""`kraftpy storage`: format, inspect and name a node's directories (like kafka-storage.sh)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tools.cli.main import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("storage", help="format and inspect log directories (like kafka-storage.sh)")
    cmds = p.add_subparsers(dest="storage_command", metavar="SUBCOMMAND", required=True)

    f = cmds.add_parser("format", help="write meta.properties and bootstrap.checkpoint into every log dir")
    f.add_argument("-c", "--config", required=True, help="server .properties file")
    f.add_argument("-t", "--cluster-id", required=True, help="cluster id (see `kraftpy storage random-uuid`)")
    f.add_argument(
        "-g", "--ignore-formatted", action="store_true", help="skip dirs already formatted instead of failing"
    )
    f.add_argument(
        "-r", "--release-version", help="metadata.version as a release, e.g. 3.9 or 3.7-IV2 (default 3.9-IV0)"
    )
    f.add_argument(
        "-S",
        "--add-scram",
        action="append",
        default=[],
        metavar="CREDENTIAL",
        help="a SCRAM credential the cluster starts with: 'SCRAM-SHA-512=[name=alice,password=secret]' (repeatable)",
    )
    f.set_defaults(func=_format)

    i = cmds.add_parser("info", help="show each directory's identity and state")
    i.add_argument("-c", "--config", required=True, help="server .properties file")
    i.add_argument("--json", action="store_true", help="machine-readable output")
    i.set_defaults(func=_info)

    r = cmds.add_parser("random-uuid", help="print a new random cluster id")
    r.set_defaults(func=_random_uuid)


def _load(path: str) -> Any:
    from kraftpy.config import ConfigError, load_config
    from kraftpy.logging import configure_cli_logging

    configure_cli_logging()
    try:
        return load_config(path)
    except ConfigError as e:
        raise UserError(str(e)) from None


def _format(args: argparse.Namespace) -> int:
    from kraftpy.config import ConfigError
    from kraftpy.storage.format import FormatError, execute_format, plan_format

    cfg = _load(args.config)
    try:
        plan = plan_format(
            cfg,
            args.cluster_id,
            ignore_formatted=args.ignore_formatted,
            release_version=args.release_version,
            add_scram=args.add_scram,
        )
    except (FormatError, ConfigError) as e:
        raise UserError(str(e)) from None
    for m in plan.messages:
        print(m)
    lines: list[str] = []
    try:
        execute_format(plan, lines)
    except OSError as e:
        for line in lines:
            print(line)
        raise UserError(f"I/O error while formatting {e.filename or ''}: {e.strerror or e}") from None
    for line in lines:
        print(line)
    return 0


def _info(args: argparse.Namespace) -> int:
    from kraftpy.storage.bootstrap import read_bootstrap_checkpoint
    from kraftpy.storage.ensemble import EnsembleError, MetaPropertiesEnsemble
    from kraftpy.storage.metadata_version import release_for_level

    cfg = _load(args.config)
    metadata_dir = cfg.metadata_log_dir_path
    ensemble = MetaPropertiesEnsemble.load(cfg.all_dirs, metadata_dir)
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for d in ensemble.all_dirs:
        roles = [r for r, yes in (("log", d in cfg.log_dir_list), ("metadata", d == metadata_dir)) if yes]
        row: dict[str, Any] = {"dir": d, "roles": roles, "state": "formatted"}
        meta = ensemble.log_dir_props.get(d)
        if meta is not None:
            row.update(
                version=int(meta.version),
                cluster_id=meta.cluster_id,
                node_id=meta.node_id,
                directory_id=str(meta.directory_id) if meta.directory_id else None,
            )
        elif d in ensemble.error_log_dirs:
            row["state"] = "error"
            row["error"] = ensemble.error_log_dirs[d]
            problems.append(f"{d}: {ensemble.error_log_dirs[d]}")
        else:
            row["state"] = "not formatted"
            problems.append(f"{d} is not formatted.")
        rows.append(row)
    try:
        ensemble.verify(None, cfg.node_id if cfg.node_id >= 0 else None)
    except EnsembleError as e:
        problems.append(str(e))
    mv: str | None = None
    if metadata_dir in ensemble.log_dir_props:
        try:
            mv = release_for_level(read_bootstrap_checkpoint(metadata_dir).metadata_version_level)
        except FileNotFoundError:
            problems.append(f"{metadata_dir} has no bootstrap.checkpoint.")
        except Exception as e:
            problems.append(f"{metadata_dir}/bootstrap.checkpoint cannot be read: {e}")

    if args.json:
        json.dump({"dirs": rows, "metadata_version": mv, "problems": problems}, sys.stdout, indent=2)
        print()
        return 1 if problems else 0

    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 250)
    table = Table(title=f"Directories of node {cfg.node_id} ({args.config})")
    for col in ("directory", "role", "state", "directory.id", "cluster.id", "node.id", "version"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        state = r["state"] if r["state"] != "error" else f"error: {r['error']}"
        table.add_row(
            r["dir"],
            ",".join(r["roles"]),
            state,
            r.get("directory_id") or "",
            r.get("cluster_id") or "",
            "" if r.get("node_id") is None else str(r["node_id"]),
            "" if r.get("version") is None else str(r["version"]),
        )
    console.print(table)
    if mv:
        console.print(f"metadata.version in bootstrap.checkpoint: {mv}")
    if problems:
        console.print("Found problems:")
        for p in problems:
            console.print(f"  {p}", markup=False)
        return 1
    return 0


def _random_uuid(args: argparse.Namespace) -> int:
    from protocol.uuid import Uuid

    print(Uuid.random())
    return 0
