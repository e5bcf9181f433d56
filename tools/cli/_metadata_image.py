"""`kraftpy metadata image PATH [--json]`: replay a metadata log and print the cluster it ends in.

PATH is a metadata log directory (the metadata dir or its __cluster_metadata-0: the latest
snapshot, then the segments after it), a single segment, a snapshot or bootstrap.checkpoint.
Shows features, brokers with their log dirs and state, and every partition with its leader, ISR,
replicas, offline replicas and each replica's directory (reserved ids by name).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.cli.main import UserError


def add_image_parser(msub: argparse._SubParsersAction) -> None:
    p = msub.add_parser(
        "image",
        help="replay the log and print the final cluster: brokers, log dirs, partitions, directories",
        description="Replay a metadata log (latest snapshot, then segments) or one segment/snapshot "
        "file, and print the cluster it describes.",
    )
    p.add_argument("path", type=Path, metavar="PATH")
    p.add_argument("--json", action="store_true", help="one stable JSON document instead of tables")
    p.set_defaults(func=_image)


@dataclass
class Loaded:
    image: Any
    sources: list[str]
    unknown_records: dict[tuple[int, int], int] = field(default_factory=dict)
    open_transaction: bool = False
    torn_bytes: int = 0


def load(path: Path) -> Loaded:
    """Replay PATH into an image; bad input raises UserError naming the file and position."""
    from kraftpy.image import MetadataDelta, MetadataImage, MetadataReplayError
    from kraftpy.metalog import LogError, MetadataLog
    from protocol.log_files import FileKind, LogFileError, classify, iter_entries

    delta = MetadataDelta(MetadataImage.EMPTY, strict=False)
    try:
        if path.is_dir():
            with MetadataLog.open(path, read_only=True) as log:
                sources = [str(s.path) for s in log.segments]
                latest = log.latest_snapshot()
                if latest is not None:
                    sources.insert(0, str(log.snapshot_path(latest)))
                log.replay_into(delta)
                torn = log.recovery.truncated_bytes
        elif path.is_file():
            log_file = classify(path)
            if log_file is None:
                raise UserError(
                    f"{path}: not a segment (.log), snapshot (.checkpoint) or bootstrap.checkpoint"
                )
            sources, torn = [str(path)], 0
            snapshot = log_file.kind is FileKind.SNAPSHOT
            for e in iter_entries(log_file):
                if e.control:
                    continue
                # a snapshot's records all stand at the offset just below its id
                offset = log_file.offset - 1 if snapshot else e.offset
                delta.replay(e.message, offset, epoch=e.leader_epoch, timestamp_ms=e.timestamp)
        else:
            raise UserError(f"{path}: no such file or directory")
    except (LogError, LogFileError, MetadataReplayError) as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    return Loaded(delta.apply(), sources, dict(delta.unknown_records), delta.in_transaction, torn)


def _image(args: argparse.Namespace) -> int:
    from kraftpy.image.describe import image_to_dict
    from kraftpy.logging import configure_cli_logging

    configure_cli_logging()  # warnings (a torn tail) to stderr, never into the output
    loaded = load(args.path)
    doc = image_to_dict(loaded.image)
    doc["sources"] = loaded.sources
    doc["openTransaction"] = loaded.open_transaction
    doc["unknownRecords"] = [
        {"apiKey": k, "version": v, "count": n} for (k, v), n in sorted(loaded.unknown_records.items())
    ]
    doc["tornTailBytes"] = loaded.torn_bytes
    try:
        if args.json:
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            _print_tables(doc)
    except BrokenPipeError:
        sys.stderr.close()
    return 0


def _print_tables(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 250, highlight=False)
    console.print(
        f"Metadata image at offset {doc['offset']} (leader epoch {doc['epoch']}), "
        f"replayed from {', '.join(doc['sources'])}",
        markup=False,
        soft_wrap=True,
    )
    if doc["tornTailBytes"]:
        console.print(
            f"warning: the last segment ends in {doc['tornTailBytes']} bytes of a torn batch (ignored)"
        )
    if doc["openTransaction"]:
        console.print("note: the log ends inside a metadata transaction; its records are not shown")
    for u in doc["unknownRecords"]:
        console.print(f"note: {u['count']} record(s) of unknown type {u['apiKey']} v{u['version']} skipped")

    features = Table(title="Features")
    features.add_column("feature")
    features.add_column("level", justify="right")
    for name, level in doc["features"].items():
        features.add_row(name, str(level))
    features.add_row("(zk migration state)", doc["zkMigrationState"])
    console.print(features)

    brokers = Table(title="Brokers")
    for col in ("id", "epoch", "state", "rack", "log dirs", "listeners"):
        brokers.add_column(col)
    for b in doc["brokers"]:
        brokers.add_row(
            str(b["brokerId"]),
            str(b["brokerEpoch"]),
            b["state"],
            b["rack"] or "",
            "\n".join(b["logDirs"]) or "(none registered: all online)",
            "\n".join(f"{e['name']}://{e['host']}:{e['port']}" for e in b["listeners"]),
        )
    console.print(brokers)

    if doc["controllers"]:
        controllers = Table(title="Controllers")
        controllers.add_column("id")
        controllers.add_column("listeners")
        for c in doc["controllers"]:
            controllers.add_row(
                str(c["controllerId"]),
                "\n".join(f"{e['name']}://{e['host']}:{e['port']}" for e in c["listeners"]),
            )
        console.print(controllers)

    parts = Table(title="Partitions")
    for col in ("topic", "partition", "leader", "leader epoch", "ISR", "replicas", "offline", "directories"):
        parts.add_column(col)
    for t in doc["topics"]:
        for p in t["partitions"]:
            parts.add_row(
                t["name"],
                str(p["partition"]),
                "none" if p["leader"] == -1 else str(p["leader"]),
                str(p["leaderEpoch"]),
                ",".join(map(str, p["isr"])),
                ",".join(map(str, p["replicas"])),
                ",".join(map(str, p["offlineReplicas"])),
                " ".join(f"{r}:{d}" for r, d in zip(p["replicas"], p["directories"], strict=True)),
            )
    console.print(parts)
    console.print(
        f"{len(doc['brokers'])} broker(s), {len(doc['topics'])} topic(s), "
        f"{sum(len(t['partitions']) for t in doc['topics'])} partition(s)"
    )
