"""`kraftpy metadata`: read KRaft metadata logs (ours or Kafka's).

- `dump PATH [--format kafka|kraftpy|json] [--json] [--from-offset N]`: every record; by default the
  lines `kafka-dump-log.sh --cluster-metadata-decoder --files PATH` prints (tools.cli._dump_log_format),
  `--format kraftpy` our shorter lines, `--json` (= `--format json`) one JSON object per record;
- `verify PATH`: CRCs, decoding and byte-exact re-encoding of every record and batch;
- `quorum --bootstrap-controller HOST:PORT describe --status|--replication`: the controller quorum
  (tools.cli.quorum), as kafka-metadata-quorum.sh prints it.

PATH is a segment (.log), a snapshot (.checkpoint), bootstrap.checkpoint, or a directory (the
metadata dir or its __cluster_metadata-0), whose segments are read in base-offset order.
An `image` subcommand is added by tools.cli._metadata_image when that module is present.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from tools.cli.main import UserError

DUMP_FORMATS = ("kafka", "kraftpy", "json")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metadata",
        help="read KRaft metadata logs: dump records, verify bytes, replay into an image",
        description="Tools for the __cluster_metadata log: segments, snapshots and bootstrap.checkpoint.",
    )
    msub = p.add_subparsers(dest="metadata_command", metavar="SUBCOMMAND", required=True)

    dump = msub.add_parser(
        "dump",
        help="print every record (batch headers, records, control records)",
        description="Print the records of a segment, a snapshot or a log directory (segments in offset "
        "order). By default the output is what Kafka's `kafka-dump-log.sh --cluster-metadata-decoder "
        "--files PATH` prints, file by file.",
    )
    dump.add_argument("path", type=Path, metavar="PATH")
    dump.add_argument(
        "--format",
        choices=DUMP_FORMATS,
        default=None,
        help="kafka (default): kafka-dump-log.sh's lines; kraftpy: one short line per batch and record; "
        "json: as --json",
    )
    dump.add_argument("--json", action="store_true", help="one JSON object per record and line")
    dump.add_argument("--from-offset", type=int, default=0, metavar="N", help="skip records before offset N")
    dump.set_defaults(func=_dump)

    verify = msub.add_parser(
        "verify",
        help="check CRCs and that every record and batch re-encodes to identical bytes",
        description="Check every batch CRC, decode every record, re-encode every record and batch and "
        "compare bytes. Exits 1 naming the file and offset of the first problem.",
    )
    verify.add_argument("path", type=Path, metavar="PATH")
    verify.set_defaults(func=_verify)

    from tools.cli.quorum import add_parser as add_quorum_parser

    add_quorum_parser(msub)

    if importlib.util.find_spec("tools.cli._metadata_image") is not None:
        image_module = importlib.import_module("tools.cli._metadata_image")
        image_module.add_image_parser(msub)


def _files(path: Path, include_snapshots: bool) -> list[Any]:
    from protocol.log_files import LogFileError, resolve

    try:
        return resolve(path, include_snapshots)
    except LogFileError as e:
        raise UserError(str(e)) from None


def _dump(args: argparse.Namespace) -> int:
    from protocol.log_files import LogFileError

    if args.from_offset < 0:
        raise UserError("--from-offset must be 0 or more")
    if args.json and args.format not in (None, "json"):
        raise UserError(f"--json and --format {args.format} ask for different outputs: give one")
    fmt = "json" if args.json else args.format or "kafka"
    out = sys.stdout
    try:
        for log_file in _files(args.path, include_snapshots=False):
            if fmt == "json":
                _dump_json(log_file, args.from_offset, out)
            elif fmt == "kraftpy":
                _dump_text(log_file, args.from_offset, out)
            else:
                from tools.cli._dump_log_format import dump_file

                dump_file(log_file, args.from_offset, out)
    except LogFileError as e:
        out.flush()
        print(f"kraftpy metadata dump: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        sys.stderr.close()  # `| head` closed the pipe: not an error worth a traceback
    return 0


def _entry_fields(message: Any) -> tuple[str, int | None, dict[str, Any]]:
    from protocol.control_records import UnknownControlRecord, control_record_name
    from protocol.metadata_records import record_name

    inner = getattr(message, "message", message)
    version = getattr(message, "version", None)
    name = control_record_name(inner) if isinstance(inner, UnknownControlRecord) else record_name(inner)
    return name, version, inner.to_json_dict(version)


def _dump_json(log_file: Any, from_offset: int, out: TextIO) -> None:
    from protocol.log_files import iter_entries

    for e in iter_entries(log_file, from_offset):
        name, version, data = _entry_fields(e.message)
        obj: dict[str, Any] = {
            "offset": e.offset,
            "timestamp": e.timestamp,
            "leaderEpoch": e.leader_epoch,
            "type": name,
            "version": version,
            "data": data,
        }
        if e.control:
            obj["control"] = True
        out.write(json.dumps(obj, separators=(",", ":")) + "\n")


def _dump_text(log_file: Any, from_offset: int, out: TextIO) -> None:
    from protocol.log_files import iter_entries

    out.write(f"Dumping {log_file.path} ({log_file.kind.value})\n")
    last_position = -1
    for e in iter_entries(log_file, from_offset):
        if e.position != last_position:
            last_position = e.position
            kind = "control batch" if e.control else "batch"
            out.write(
                f"{kind} at position {e.position}: leaderEpoch {e.leader_epoch} timestamp {e.timestamp}\n"
            )
        name, version, data = _entry_fields(e.message)
        payload = json.dumps(data, separators=(",", ":"))
        out.write(f"| offset {e.offset} {name} v{version} {payload}\n")


def _verify(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from protocol.log_files import LogFileError
    from protocol.log_verify import FileReport, verify_file

    console = Console(highlight=False)
    reports: list[FileReport] = []
    for log_file in _files(args.path, include_snapshots=True):
        try:
            report = verify_file(log_file.path)
        except LogFileError as e:
            raise UserError(str(e)) from None
        reports.append(report)
        status = "ok" if report.ok else "FAILED"
        console.print(
            f"{log_file.path}: {report.batches} batches ({report.control_batches} control), "
            f"{report.records} records, {report.size} bytes: {status}",
            markup=False,
            soft_wrap=True,
        )
        if not report.ok:
            break
    totals: dict[str, int] = {}
    for report in reports:
        for name, count in report.by_type.items():
            totals[name] = totals.get(name, 0) + count
    table = Table(title="records by type")
    table.add_column("type")
    table.add_column("count", justify="right")
    for name, count in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(name, str(count))
    table.add_row("batches", str(sum(r.batches for r in reports)), style="bold")
    table.add_row("records", str(sum(r.records for r in reports)), style="bold")
    console.print(table)
    failed = next((r for r in reports if not r.ok), None)
    if failed is not None:
        print(f"kraftpy metadata verify: {failed.failure}", file=sys.stderr)
        return 1
    return 0
