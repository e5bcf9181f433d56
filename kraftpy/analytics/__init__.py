"""The Spark job over a KRaft metadata log: Parquet tables, analyses and an HTML report.

`run_analysis(logdir, out, master=None, skip_corrupt=False) -> Summary` is the entry point; the
`kraftpy analyze` command and `spark-submit kraftpy/analytics/job.py` both call it.
"""

from kraftpy.analytics.errors import AnalysisError, CorruptLogError, CorruptSpot, LogDirError
from kraftpy.analytics.job import run_analysis
from kraftpy.analytics.summary import DirFailure, Summary

__all__ = [
    "AnalysisError",
    "CorruptLogError",
    "CorruptSpot",
    "DirFailure",
    "LogDirError",
    "Summary",
    "run_analysis",
]
