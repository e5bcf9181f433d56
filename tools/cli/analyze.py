"""`kraftpy analyze`: ingest a metadata log with Spark into Parquet tables, a summary and a report."""

from __future__ import annotations

import argparse

from tools.cli.main import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    from tools.analytics.job import add_arguments

    p = sub.add_parser(
        "analyze",
        help="ingest a KRaft metadata log (ours or Kafka's) with Spark: tables, analyses, report.html",
        description="Read a metadata log directory in parallel with Spark and write Parquet tables "
        "(records, brokers, partitions, replica_dirs, dir_failures, leadership, ...), summary.json and "
        "report.html. Re-running on a grown log reads only what is new.",
    )
    add_arguments(p)
    p.set_defaults(func=_analyze)


def _analyze(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tools.analytics.errors import AnalysisError
    from tools.analytics.job import describe, run_from_args

    try:
        summary = run_from_args(args)
    except AnalysisError as e:
        raise UserError(str(e)) from None
    console = Console(highlight=False, soft_wrap=True)
    for line in describe(summary):
        console.print(line, markup=False)
    return 0
