"""report.html: one self-contained page with the plots inline as SVG, readable at a glance.

Only small aggregates reach the driver: the rows of the timeline around each failure (and a
thinned timeline of the whole log), the balance per directory, the record mix per time bucket.
"""

from __future__ import annotations

import datetime as dt
import html
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.analytics.checkpoint import write_atomically
from tools.analytics.summary import DirFailure, Migration, MigrationCopy, Summary

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from pyspark.sql import SparkSession

MAX_FAILURE_PLOTS = 8
MIGRATING_POINTS = 4000  # per broker, in the MIGRATING replicas figure
MAX_MIGRATING_BROKERS = 20
OVERVIEW_POINTS = 4000
TOP_TYPES = 7
_C_OFFLINE = "#d62728"
_C_LEADERLESS = "#1f77b4"


def _fmt_ts(ms: int | None) -> str:
    if ms is None:
        return "-"
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def _fmt_ms(ms: int | None) -> str:
    if ms is None:
        return "not recovered"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 120_000:
        return f"{ms / 1000:.2f} s"
    return f"{ms / 60_000:.1f} min"


def _svg(fig: Figure) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    # Inline SVG needs no XML prologue or doctype.
    text = re.sub(r"^<\?xml[^>]*>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    return f'<div class="plot">{text}</div>'


def _steps(ax: Axes, xs: list[float], ys: list[int], color: str, label: str) -> None:
    if xs:
        ax.step(xs, ys, where="post", color=color, label=label, linewidth=1.6)


def _timeline_rows(spark: SparkSession, out: Path, lo: int, hi: int) -> list[tuple[int, int, int]]:
    from pyspark.sql import functions as F

    tl = spark.read.parquet(str(out / "timeline"))
    before = tl.filter(F.col("timestamp") < lo).orderBy(F.desc("seq")).limit(1).collect()
    inside = tl.filter(F.col("timestamp").between(lo, hi)).orderBy("seq").limit(20000).collect()
    rows = [(lo, int(r["offline_replicas"]), int(r["leaderless_partitions"])) for r in before]
    rows += [
        (int(r["timestamp"]), int(r["offline_replicas"]), int(r["leaderless_partitions"])) for r in inside
    ]
    return rows


def _failure_plot(spark: SparkSession, out: Path, f: DirFailure, log_end: int) -> str:
    import matplotlib.pyplot as plt

    end = f.timestamp + (f.recovery_latency_ms or 0)
    if f.back_online_timestamp is not None:
        end = max(end, f.back_online_timestamp)
    if f.recovery_latency_ms is None:
        end = max(end, log_end)
    pad = max(2_000, (end - f.timestamp) // 4)
    lo, hi = f.timestamp - pad, end + pad
    rows = _timeline_rows(spark, out, lo, hi)
    if rows:
        rows.append((hi, rows[-1][1], rows[-1][2]))
    xs = [(r[0] - f.timestamp) / 1000 for r in rows]
    fig, ax = plt.subplots(figsize=(8, 2.8))
    _steps(ax, xs, [r[1] for r in rows], _C_OFFLINE, "offline replicas")
    _steps(ax, xs, [r[2] for r in rows], _C_LEADERLESS, "leaderless partitions")
    ax.axvline(0, color="black", linestyle="--", linewidth=1)
    ax.annotate("dir offline", (0, 1), xycoords=("data", "axes fraction"), fontsize=8, ha="left", va="top")
    if f.recovery_latency_ms is not None:
        x = f.recovery_latency_ms / 1000
        ax.axvline(x, color="green", linestyle=":", linewidth=1.2)
        ax.annotate("all led again", (x, 0.9), xycoords=("data", "axes fraction"), fontsize=8, color="green")
    if f.back_online_timestamp is not None:
        x = (f.back_online_timestamp - f.timestamp) / 1000
        ax.axvline(x, color="grey", linestyle="-.", linewidth=1)
        ax.annotate("dir back", (x, 0.8), xycoords=("data", "axes fraction"), fontsize=8, color="grey")
    ax.set_xlabel("seconds from the failure record")
    ax.set_ylabel("count")
    ax.set_title(f"broker {f.broker_id}, dir {f.directory}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return _svg(fig)


def _dates(ms: list[int]) -> list[dt.datetime]:
    return [dt.datetime.fromtimestamp(m / 1000, tz=dt.UTC) for m in ms]


def _date_axis(ax: Axes) -> None:
    import matplotlib.dates as mdates

    loc = mdates.AutoDateLocator(tz=dt.UTC)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=dt.UTC))
    ax.set_xlabel("time (UTC)")


def _overview_plot(spark: SparkSession, out: Path, summary: Summary) -> str:
    import matplotlib.pyplot as plt
    from pyspark.sql import functions as F

    tl = spark.read.parquet(str(out / "timeline"))
    n = tl.count()
    if n == 0:
        return "<p>No partition or replica changes in this log.</p>"
    if n > OVERVIEW_POINTS:
        first, last = summary.first_timestamp or 0, summary.last_timestamp or 0
        width = max(1, (last - first) // OVERVIEW_POINTS)
        tl = tl.groupBy((F.floor(F.col("timestamp") / width) * width).alias("timestamp")).agg(
            F.max("offline_replicas").alias("offline_replicas"),
            F.max("leaderless_partitions").alias("leaderless_partitions"),
        )
    rows = tl.orderBy("timestamp").collect()
    ms = [int(r["timestamp"]) for r in rows]
    off = [int(r["offline_replicas"]) for r in rows]
    lead = [int(r["leaderless_partitions"]) for r in rows]
    if summary.first_timestamp is not None and summary.first_timestamp < ms[0]:
        ms, off, lead = [summary.first_timestamp, *ms], [0, *off], [0, *lead]
    ms.append(max(summary.last_timestamp or ms[-1], ms[-1]))
    off.append(off[-1])
    lead.append(lead[-1])
    fig, ax = plt.subplots(figsize=(10, 2.8))
    xs = _dates(ms)
    ax.step(xs, off, where="post", color=_C_OFFLINE, label="offline replicas", linewidth=1.6)
    ax.step(xs, lead, where="post", color=_C_LEADERLESS, label="leaderless partitions", linewidth=1.6)
    for f in summary.dir_failures:
        ax.axvline(_dates([f.timestamp])[0], color="black", linestyle="--", linewidth=0.8)
    _date_axis(ax)
    ax.set_ylabel("count")
    ax.set_title("whole log (dashed: dir failures)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return _svg(fig)


def _balance_plot(summary: Summary) -> str:
    import matplotlib.pyplot as plt

    rows = summary.dir_balance
    if not rows:
        return "<p>No replicas at log end.</p>"
    rows = rows[:60]
    labels = [f"broker {r['broker_id']} / {r['directory']}" for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.0))
    ys = list(range(len(rows)))
    colors = ["#2ca02c" if r["online"] else _C_OFFLINE for r in rows]
    ax.barh(ys, [r["replicas"] for r in rows], color=colors, alpha=0.55, label="replicas")
    ax.barh(ys, [r["leaders"] or 0 for r in rows], color="#333333", height=0.3, label="leaders")
    ax.set_yticks(ys, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("replicas at log end (green: dir online, red: dir offline; thin dark bar: leaders)")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def _mix_plot(spark: SparkSession, out: Path, summary: Summary) -> str:
    import matplotlib.pyplot as plt

    rows = spark.read.parquet(str(out / "record_mix")).collect()
    if not rows:
        return "<p>No segment records.</p>"
    names = list(summary.record_types)
    top = names[:TOP_TYPES]
    series: dict[str, dict[int, int]] = {}
    for r in rows:
        key = r["type_name"] if r["type_name"] in top else "other"
        per = series.setdefault(key, {})
        b = int(r["bucket_timestamp"])
        per[b] = per.get(b, 0) + int(r["records"])
    buckets = sorted({int(r["bucket_timestamp"]) for r in rows})
    totals = {b: sum(per.get(b, 0) for per in series.values()) for b in buckets}
    width_ms = (buckets[1] - buckets[0]) if len(buckets) > 1 else 1000
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1, 2.2]})
    shown = names[: TOP_TYPES + 3]
    a1.barh(range(len(shown)), [summary.record_types[n] for n in shown], color="#7f7f7f")
    a1.set_yticks(range(len(shown)), shown, fontsize=8)
    a1.invert_yaxis()
    a1.set_xscale("log")
    a1.set_title("records per type (all, log scale)", fontsize=10)
    xs = _dates(buckets)
    bottom = [0.0] * len(buckets)
    order = [n for n in top if n in series] + (["other"] if "other" in series else [])
    cmap = plt.get_cmap("tab10")
    for i, name in enumerate(order):
        share = [series[name].get(b, 0) / totals[b] if totals[b] else 0 for b in buckets]
        a2.bar(
            xs,
            share,
            bottom=bottom,
            width=dt.timedelta(milliseconds=width_ms * 0.9),
            align="edge",
            color=cmap(i % 10),
            label=name,
        )
        bottom = [x + y for x, y in zip(bottom, share, strict=True)]
    _date_axis(a2)
    a2.set_ylim(0, 1)
    a2.set_ylabel("share of records")
    a2.set_title(f"record mix over time ({_fmt_ms(width_ms)} buckets)", fontsize=10)
    a2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(fig)


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
.cards{display:flex;flex-wrap:wrap;gap:.8em}.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em}
.card b{display:block;font-size:1.4em}.bad{color:#d62728}.good{color:#2ca02c}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}
.plot svg{max-width:100%;height:auto}.note{color:#666;font-size:.9em}
"""


def render(spark: SparkSession, out: Path, summary: Summary) -> str:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller and searchable
    s = summary
    failed = [f for f in s.dir_failures if f.recovery_latency_ms is None]
    worst = max(
        (f.recovery_latency_ms for f in s.dir_failures if f.recovery_latency_ms is not None), default=None
    )
    cards = [
        ("records", f"{s.records:,}"),
        ("offsets", f"{s.first_offset}..{s.last_offset}"),
        ("brokers / topics / partitions", f"{s.brokers} / {s.topics} / {s.partitions}"),
        ("dir failures", str(len(s.dir_failures))),
        (
            "slowest recovery",
            _fmt_ms(worst)
            if s.dir_failures and not failed
            else ("-" if not s.dir_failures else f"{len(failed)} not recovered"),
        ),
        ("ever leaderless partitions", f"{s.leaderless_partitions} ({s.still_leaderless} now)"),
        ("corrupt batches skipped", str(len(s.corrupt_batches))),
    ]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>KRaft metadata log report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>KRaft metadata log report</h1>",
        f"<p class='note'>{html.escape(s.log_dir)} &middot; {_fmt_ts(s.first_timestamp)} to "
        f"{_fmt_ts(s.last_timestamp)}</p>",
        "<div class='cards'>"
        + "".join(f"<div class='card'>{html.escape(k)}<b>{html.escape(v)}</b></div>" for k, v in cards)
        + "</div>",
    ]
    if s.notices:
        parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(n)}</li>" for n in s.notices) + "</ul>")

    parts.append("<h2>Directory failures</h2>")
    if s.dir_failures:
        parts.append(
            _table(
                [
                    "broker",
                    "directory",
                    "offset",
                    "time",
                    "partitions affected",
                    "leaders lost",
                    "time to all led",
                    "dir back",
                ],
                [
                    [
                        f.broker_id,
                        f.directory,
                        f.offset,
                        _fmt_ts(f.timestamp),
                        f.affected_partitions,
                        f.leaders_lost,
                        _fmt_ms(f.recovery_latency_ms),
                        _fmt_ts(f.back_online_timestamp),
                    ]
                    for f in s.dir_failures
                ],
            )
        )
        log_end = s.last_timestamp or 0
        for f in s.dir_failures[:MAX_FAILURE_PLOTS]:
            parts.append(_failure_plot(spark, out, f, log_end))
        if len(s.dir_failures) > MAX_FAILURE_PLOTS:
            parts.append(f"<p class='note'>Plots for the first {MAX_FAILURE_PLOTS} failures only.</p>")
    else:
        parts.append("<p>No directory went offline in this log.</p>")

    if s.migration:
        parts.extend(_migration_section(spark, out, s, s.migration))

    parts.append("<h2>Offline replicas and leaderless partitions</h2>")
    parts.append(_overview_plot(spark, out, s))
    top = spark.read.parquet(str(out / "leaderless")).limit(15).collect()
    if top:
        parts.append(
            _table(
                ["topic", "partition", "leaderless intervals", "total", "longest", "still leaderless"],
                [
                    [
                        r["topic"],
                        r["partition_id"],
                        r["intervals"],
                        _fmt_ms(r["total_ms"]),
                        _fmt_ms(r["longest_ms"]),
                        "yes" if r["still_leaderless"] else "no",
                    ]
                    for r in top
                ],
            )
        )

    parts.append("<h2>Replicas per directory</h2>")
    parts.append(_balance_plot(s))
    parts.append("<h2>Record mix</h2>")
    parts.append(_mix_plot(spark, out, s))
    if s.corrupt_batches:
        parts.append("<h2>Corrupt batches (skipped)</h2>")
        parts.append(
            _table(
                ["file", "byte", "base offset", "reason", "bytes skipped"],
                [
                    [c["file"], c["position"], c["base_offset"], c["reason"], c["skipped_bytes"]]
                    for c in s.corrupt_batches[:200]
                ],
            )
        )
    parts.append(
        "<p class='note'>Tables (Parquet) in "
        + html.escape(s.out)
        + ": "
        + ", ".join(html.escape(t) for t in sorted(s.tables))
        + ".</p>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def _migration_section(spark: SparkSession, out: Path, s: Summary, m: Migration) -> list[str]:
    """KIP-866 as the log tells it: the state changes, the copy transaction(s), who registered as
    what, and each broker's MIGRATING replicas getting their real directories."""
    parts = ["<h2>ZooKeeper migration</h2>", f"<p><b>{html.escape(m.verdict)}</b></p>"]
    parts.append(
        _table(
            ["ZkMigrationState", "offset", "time"],
            [[st.state, st.offset, _fmt_ts(st.timestamp)] for st in m.states],
        )
    )
    if m.copies:
        parts.append('<p>The copy of ZooKeeper\'s metadata (BeginTransactionRecord "ZK Migration"):</p>')
        parts.append(
            _table(
                [
                    "began at offset",
                    "began",
                    "outcome",
                    "ended at offset",
                    "records",
                    "took",
                    "records by type",
                ],
                [
                    [
                        c.begin_offset,
                        _fmt_ts(c.begin_timestamp),
                        _outcome(c),
                        "-" if c.end_offset is None else c.end_offset,
                        c.records,
                        "-" if c.ms is None else _fmt_ms(c.ms),
                        _record_types(c),
                    ]
                    for c in m.copies
                ],
            )
        )
    if m.registrations:
        parts.append(
            _table(
                ["node", "registered as", "offset", "time"],
                [[r.node_id, r.registered_as, r.offset, _fmt_ts(r.timestamp)] for r in m.registrations],
            )
        )
    if m.brokers:
        parts.append("<p>Replicas copied with the MIGRATING directory, per broker:</p>")
        parts.append(
            _table(
                [
                    "broker",
                    "MIGRATING replicas",
                    "still MIGRATING",
                    "last placed in a real directory",
                    "at offset",
                ],
                [
                    [
                        b.broker_id,
                        b.replicas,
                        b.still_migrating,
                        _fmt_ts(b.last_placed_timestamp),
                        "-" if b.last_placed_offset is None else b.last_placed_offset,
                    ]
                    for b in m.brokers
                ],
            )
        )
        parts.append(_migrating_plot(spark, out, s, m))
    return parts


def _outcome(c: MigrationCopy) -> str:
    return f"{c.outcome} ({c.abort_reason})" if c.abort_reason else c.outcome


def _record_types(c: MigrationCopy) -> str:
    return ", ".join(f"{name} {n}" for name, n in c.record_types.items()) or "-"


def _migrating_series(spark: SparkSession, out: Path, s: Summary) -> dict[int, tuple[list[int], list[int]]]:
    """Per broker, (timestamps, MIGRATING replicas) at each change, thinned to the last value per time
    bucket when a large cluster placed many replicas one record at a time."""
    from pyspark.sql import functions as F

    tl = spark.read.parquet(str(out / "migrating_timeline"))
    most = tl.groupBy("broker_id").count().agg(F.max("count")).first()
    if most is not None and (most[0] or 0) > MIGRATING_POINTS:
        width = max(1, ((s.last_timestamp or 0) - (s.first_timestamp or 0)) // MIGRATING_POINTS)
        tl = tl.groupBy("broker_id", (F.floor(F.col("timestamp") / width) * width).alias("timestamp")).agg(
            F.max_by("migrating", "seq").alias("migrating"), F.max("seq").alias("seq")
        )
    series: dict[int, tuple[list[int], list[int]]] = {}
    for r in tl.orderBy("broker_id", "seq").collect():
        xs, ys = series.setdefault(int(r["broker_id"]), ([], []))
        xs.append(int(r["timestamp"]))
        ys.append(int(r["migrating"]))
    return series


def _migrating_plot(spark: SparkSession, out: Path, s: Summary, m: Migration) -> str:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    series = _migrating_series(spark, out, s)
    if not series:
        return "<p>No replica was ever MIGRATING.</p>"
    start = min([s.first_timestamp or 0, *(xs[0] for xs, _ in series.values())])
    end = max([s.last_timestamp or 0, *(xs[-1] for xs, _ in series.values())])
    fig, ax = plt.subplots(figsize=(10, 3.0))
    cmap = plt.get_cmap("tab10")
    styles = ("-", "--", ":", "-.")
    for i, (broker, (xs, ys)) in enumerate(sorted(series.items())[:MAX_MIGRATING_BROKERS]):
        # Start from 0 before the copy and hold the last count to the log's end. Brokers with the
        # same replica count draw the same line until they restart: the styles keep each visible.
        ax.step(
            _dates([start, *xs, end]),
            [0, *ys, ys[-1]],
            where="post",
            color=cmap(i % 10),
            linestyle=styles[i % len(styles)],
            label=f"broker {broker}",
            linewidth=1.6,
        )
    for st in m.states:
        x = _dates([st.timestamp])[0]
        ax.axvline(x, color="black", linestyle="--", linewidth=0.8)
        ax.annotate(
            f"{st.state} @ {st.offset}",
            (x, 1),
            xycoords=("data", "axes fraction"),
            fontsize=7,
            rotation=90,
            ha="right",
            va="top",
        )
    _date_axis(ax)
    ax.set_ylabel("MIGRATING replicas")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(
        "MIGRATING replicas per broker (black lines: ZkMigrationState changes, at their offsets)", fontsize=10
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return _svg(fig)


def write_report(spark: SparkSession, out: Path, summary: Summary) -> Path:
    path = out / "report.html"
    write_atomically(path, render(spark, out, summary).encode())
    return path
