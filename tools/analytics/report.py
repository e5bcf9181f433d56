"""report.html: one self-contained page, readable at a glance and usable as a post-mortem.

For each dir failure: what it hit (leaders lost, counted from the partition states before the batch
that carries it), a timeline from the broker noticing (its log, when found) through the controller's
batch, the leader moves and ISR shrinks, the broker's restart, to the partitions back in sync, the
leaders per broker before and after, and the time under min.insync.replicas where a config gives it.
Dirs are named by path and `bN/dM` label where the cluster's work dir or `--dirs` tells them.

Plots: static SVG (matplotlib) everywhere, and zoomable versions with hover (plotly.js, inlined once)
of the time plots, shown instead of the SVG when scripts run. Nothing is fetched from the network.
Only small aggregates reach the driver: the rows of the timeline around each failure (and a thinned
timeline of the whole log), the balance per directory, the record mix per time bucket.
"""

from __future__ import annotations

import datetime as dt
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.analytics.checkpoint import write_atomically
from tools.analytics.summary import DirFailure, Migration, MigrationCopy, Summary

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from pyspark.sql import SparkSession

MAX_FAILURE_PLOTS = 8
MAX_TIMELINE_ROWS = 80  # per failure, in the page (the failure_events table has them all)
MIGRATING_POINTS = 4000  # per broker, in the MIGRATING replicas figure
MAX_MIGRATING_BROKERS = 20
OVERVIEW_POINTS = 4000
TOP_TYPES = 7
_C_OFFLINE = "#d62728"
_C_LEADERLESS = "#1f77b4"
_C_NOT_IN_SYNC = "#ff7f0e"
# Event lanes of a failure's plot, top to bottom.
_LANES = (
    "broker noticed",
    "dir offline",
    "controller committed",
    "leader moved",
    "leader lost",
    "ISR shrink",
    "broker controlled shutdown",
    "broker fenced",
    "broker restarted",
    "dir back",
    "broker unfenced",
    "ISR restored",
    "all led again",
    "back in sync",
)


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
    # The RDF metadata names vocabularies by URL; nothing reads it in a page.
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
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


def _window(f: DirFailure, log_end: int) -> tuple[int, int]:
    end = f.timestamp + max(f.recovery_latency_ms or 0, f.back_in_sync_ms or 0)
    if f.back_online_timestamp is not None:
        end = max(end, f.back_online_timestamp)
    if f.recovery_latency_ms is None or (f.isr_shrunk and f.back_in_sync_ms is None):
        end = max(end, log_end)
    start = min(f.timestamp, f.detected_timestamp or f.timestamp)
    pad = max(2_000, (end - start) // 4)
    return start - pad, end + pad


def _not_in_sync_rows(
    spark: SparkSession, out: Path, f: DirFailure, lo: int, hi: int
) -> list[tuple[int, int]]:
    """(timestamp, partitions hit whose failed replica is out of their ISR) at each change."""
    from pyspark.sql import functions as F

    rp = spark.read.parquet(str(out / "recovery_partitions"))
    if "shrunk_timestamp" not in rp.columns:
        return []
    mine = rp.filter(
        (F.col("failure_offset") == f.offset)
        & (F.col("directory") == f.directory)
        & F.col("shrunk_timestamp").isNotNull()
    )
    steps = (
        mine.select(F.col("shrunk_timestamp").alias("t"), F.lit(1).alias("d"))
        .unionByName(
            mine.filter(F.col("in_sync_timestamp").isNotNull()).select(
                F.col("in_sync_timestamp").alias("t"), F.lit(-1).alias("d")
            )
        )
        .groupBy("t")
        .agg(F.sum("d").alias("d"))
        .orderBy("t")
        .collect()
    )
    rows, n = [(lo, 0)], 0
    for r in steps:
        n += int(r["d"])
        rows.append((max(lo, int(r["t"])), n))
    rows.append((hi, n))
    return rows


@dataclass
class _FailureData:
    f: DirFailure
    name: str
    lo: int
    hi: int
    timeline: list[tuple[int, int, int]]
    not_in_sync: list[tuple[int, int]]


def _failure_data(spark: SparkSession, out: Path, s: Summary, f: DirFailure, log_end: int) -> _FailureData:
    lo, hi = _window(f, log_end)
    rows = _timeline_rows(spark, out, lo, hi)
    if rows:
        rows.append((hi, rows[-1][1], rows[-1][2]))
    return _FailureData(f, _dir_short(s, f.directory), lo, hi, rows, _not_in_sync_rows(spark, out, f, lo, hi))


def _failure_plot(d: _FailureData) -> str:
    import matplotlib.pyplot as plt

    f, rows = d.f, d.timeline
    xs = [(r[0] - f.timestamp) / 1000 for r in rows]
    fig, ax = plt.subplots(figsize=(8, 2.8))
    _steps(ax, xs, [r[1] for r in rows], _C_OFFLINE, "offline replicas")
    _steps(ax, xs, [r[2] for r in rows], _C_LEADERLESS, "leaderless partitions")
    if d.not_in_sync:
        _steps(
            ax,
            [(t - f.timestamp) / 1000 for t, _ in d.not_in_sync],
            [n for _, n in d.not_in_sync],
            _C_NOT_IN_SYNC,
            "partitions hit, replica out of ISR",
        )
    ax.axvline(0, color="black", linestyle="--", linewidth=1)
    ax.annotate("dir offline", (0, 1), xycoords=("data", "axes fraction"), fontsize=8, ha="left", va="top")
    marks = [
        (f.recovery_latency_ms, "all led again", "green", ":", 0.9),
        (f.back_in_sync_ms if f.affected_partitions else None, "back in sync", _C_NOT_IN_SYNC, ":", 0.7),
        (
            None if f.back_online_timestamp is None else f.back_online_timestamp - f.timestamp,
            "dir back",
            "grey",
            "-.",
            0.8,
        ),
    ]
    for e in f.events:
        if e["kind"] == "broker restarted":
            marks.append((e["ms"], "broker restarted", "purple", "-", 0.6))
    for ms, text, color, style, y in marks:
        if ms is None:
            continue
        ax.axvline(ms / 1000, color=color, linestyle=style, linewidth=1.1)
        ax.annotate(text, (ms / 1000, y), xycoords=("data", "axes fraction"), fontsize=8, color=color)
    ax.set_xlabel("seconds from the failure record")
    ax.set_ylabel("count")
    ax.set_title(f"broker {f.broker_id}, dir {d.name}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return _svg(fig)


def _failure_figure(d: _FailureData) -> Any:
    from tools.analytics.interactive import EventPlot, Marker, Series, event_figure

    f = d.f

    def x(t: int) -> float:
        return (t - f.timestamp) / 1000

    p = EventPlot(
        x_title=f"seconds from the failure record (offset {f.offset}, {_fmt_ts(f.timestamp)})",
        lanes=list(_LANES),
        vlines=[(0, "black")],
    )
    if d.timeline:
        xs = [x(r[0]) for r in d.timeline]
        p.series.append(Series("offline replicas", xs, [r[1] for r in d.timeline], _C_OFFLINE))
        p.series.append(Series("leaderless partitions", xs, [r[2] for r in d.timeline], _C_LEADERLESS))
    if d.not_in_sync:
        p.series.append(
            Series(
                "partitions hit, replica out of ISR",
                [x(t) for t, _ in d.not_in_sync],
                [n for _, n in d.not_in_sync],
                _C_NOT_IN_SYNC,
            )
        )
    for e in f.events:
        where = "" if e["offset"] is None else f"offset {e['offset']}, "
        p.markers.append(
            Marker(
                lane=e["kind"],
                x=x(e["timestamp"]),
                text=f"{e['kind']}: {e['detail']}\n{where}{_fmt_ts(e['timestamp'])}\n{_fmt_delta(e['ms'])} "
                f"from the failure record ({e['source']})",
            )
        )
    return event_figure(p)


def _fmt_delta(ms: int) -> str:
    return f"+{ms} ms" if ms >= 0 else f"{ms} ms"


def _dates(ms: list[int]) -> list[dt.datetime]:
    return [dt.datetime.fromtimestamp(m / 1000, tz=dt.UTC) for m in ms]


def _date_axis(ax: Axes) -> None:
    import matplotlib.dates as mdates

    loc = mdates.AutoDateLocator(tz=dt.UTC)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=dt.UTC))
    ax.set_xlabel("time (UTC)")


def _overview_rows(
    spark: SparkSession, out: Path, summary: Summary
) -> tuple[list[int], list[int], list[int]]:
    from pyspark.sql import functions as F

    tl = spark.read.parquet(str(out / "timeline"))
    n = tl.count()
    if n == 0:
        return [], [], []
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
    return ms, off, lead


def _overview_plot(spark: SparkSession, out: Path, summary: Summary) -> str:
    import matplotlib.pyplot as plt

    from tools.analytics.interactive import EventPlot, Marker, Series, event_figure, figure_block

    ms, off, lead = _overview_rows(spark, out, summary)
    if not ms:
        return "<p>No partition or replica changes in this log.</p>"
    fig, ax = plt.subplots(figsize=(10, 2.8))
    xs = _dates(ms)
    ax.step(xs, off, where="post", color=_C_OFFLINE, label="offline replicas", linewidth=1.6)
    ax.step(xs, lead, where="post", color=_C_LEADERLESS, label="leaderless partitions", linewidth=1.6)
    for f in summary.dir_failures:
        ax.axvline(_dates([f.timestamp])[0], color="black", linestyle="--", linewidth=0.8)
    for r in summary.broker_restarts:
        ax.axvline(_dates([r["timestamp"]])[0], color="purple", linestyle=":", linewidth=0.8)
    _date_axis(ax)
    ax.set_ylabel("count")
    ax.set_title("whole log (dashed: dir failures; dotted: broker restarts)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    static = _svg(fig)

    p = EventPlot(
        x_title="time (UTC)",
        lanes=["dir failure", "broker restarted"],
    )
    when = [_plotly_time(m) for m in ms]
    p.series += [
        Series("offline replicas", when, off, _C_OFFLINE),
        Series("leaderless partitions", when, lead, _C_LEADERLESS),
    ]
    for f in summary.dir_failures:
        p.markers.append(
            Marker(
                "dir failure",
                _plotly_time(f.timestamp),
                f"broker {f.broker_id} dir {_dir_long(summary, f.directory)} offline at offset {f.offset}\n"
                f"{f.affected_partitions} partitions hit, {f.leaders_lost} leaders lost\n{_fmt_ts(f.timestamp)}",
            )
        )
        p.vlines.append((_plotly_time(f.timestamp), "black"))
    for r in summary.broker_restarts:
        p.markers.append(Marker("broker restarted", _plotly_time(r["timestamp"]), _restart_text(summary, r)))
    return figure_block(static, event_figure(p))


def _plotly_time(ms: int) -> str:
    # Plain UTC text: plotly.js reads no time zone.
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def _restart_text(s: Summary, r: dict[str, Any]) -> str:
    how = "restarted (new incarnation)" if r.get("new_incarnation") else "registered again"
    text = f"broker {r['broker_id']} {how} at offset {r['offset']}: epoch {r.get('previous_epoch')} -> {r.get('epoch')}"
    if r.get("state_before"):
        text += f", was {r['state_before']}"
    if r.get("dirs_missing"):
        text += "; came back without " + ", ".join(_dir_short(s, d) for d in r["dirs_missing"])
    if r.get("dirs_added"):
        text += "; lists again " + ", ".join(_dir_short(s, d) for d in r["dirs_added"])
    return text


def _balance_plot(summary: Summary) -> str:
    import matplotlib.pyplot as plt

    rows = summary.dir_balance
    if not rows:
        return "<p>No replicas at log end.</p>"
    rows = rows[:60]
    labels = [f"broker {r['broker_id']} / {_dir_short(summary, r['directory'], full_id=True)}" for r in rows]
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


class Raw(str):
    """A table cell that is HTML already."""


def _cell(c: Any) -> str:
    return c if isinstance(c, Raw) else html.escape(str(c))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _dir_short(s: Summary, dir_id: str, full_id: bool = False) -> str:
    """The dir's label (b1/d0) or path when known, else its id."""
    d = s.dirs.get(dir_id) or {}
    name = d.get("label") or d.get("path")
    if name:
        return name
    return dir_id if full_id or len(dir_id) <= 12 else dir_id[:8] + "…"


def _dir_long(s: Summary, dir_id: str) -> str:
    d = s.dirs.get(dir_id) or {}
    bits = [b for b in (d.get("label"), d.get("path")) if b]
    return " ".join([*bits, f"(id {dir_id})"]) if bits else dir_id


def _dir_cell(s: Summary, dir_id: str) -> Raw:
    d = s.dirs.get(dir_id) or {}
    parts = []
    if d.get("label"):
        parts.append(f"<b>{html.escape(d['label'])}</b>")
    if d.get("path"):
        parts.append(f"<span class='path'>{html.escape(d['path'])}</span>")
    parts.append(f"<code>{html.escape(dir_id)}</code>")
    return Raw("<br>".join(parts))


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1150px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}h3{font-size:1.05em;margin-top:1.4em}
.cards{display:flex;flex-wrap:wrap;gap:.8em}.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em}
.card b{display:block;font-size:1.4em}.card small{display:block;color:#666}.bad{color:#d62728}.good{color:#2ca02c}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
.plot svg{max-width:100%;height:auto}.note{color:#666;font-size:.9em}.path{color:#555;font-size:.9em}
code{font-size:.85em;color:#555}td.num{text-align:right}
"""


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _cards(s: Summary) -> list[tuple[str, str, str]]:
    fs = s.dir_failures
    unled = [f for f in fs if f.recovery_latency_ms is None]
    out_of_sync = [f for f in fs if f.back_in_sync_ms is None]
    worst_led = max((f.recovery_latency_ms for f in fs if f.recovery_latency_ms is not None), default=None)
    worst_sync = max((f.back_in_sync_ms for f in fs if f.back_in_sync_ms is not None), default=None)
    return [
        ("records", f"{s.records:,}", ""),
        ("offsets", f"{s.first_offset}..{s.last_offset}", ""),
        ("brokers / topics / partitions", f"{s.brokers} / {s.topics} / {s.partitions}", ""),
        ("dir failures", str(len(fs)), ""),
        ("leaders lost", str(sum(f.leaders_lost for f in fs)), "led from a failed dir before its batch"),
        (
            "slowest to all led",
            "-" if not fs else (_fmt_ms(worst_led) if not unled else f"{len(unled)} never led again"),
            "failure record to every partition hit led",
        ),
        (
            "slowest back in sync",
            "-"
            if not fs
            else (_fmt_ms(worst_sync) if not out_of_sync else f"{len(out_of_sync)} not in sync"),
            "failure record to the last leader move or ISR restoration",
        ),
        (
            "ever leaderless partitions",
            f"{s.leaderless_partitions} ({s.still_leaderless} now)",
            "a new partition's first wait aside",
        ),
        (
            "waiting for first leader",
            str(s.waiting_for_first_leader)
            + ("" if s.first_leader_longest_ms is None else f" (≤ {_fmt_ms(s.first_leader_longest_ms)})"),
            "partitions created leaderless",
        ),
        ("broker restarts", str(len(s.broker_restarts)), ""),
        ("corrupt batches skipped", str(len(s.corrupt_batches)), ""),
    ]


def _failure_sentence(s: Summary, f: DirFailure) -> str:
    name = _dir_long(s, f.directory)
    group = f" (from offset {f.group_start_offset})" if f.group_start_offset is not None else ""
    bits = [
        f"Broker {f.broker_id} reported dir {name} offline at offset {f.offset}, {_fmt_ts(f.timestamp)}.",
        f"{_plural(f.affected_partitions, 'partition')} had a replica there; "
        f"{_plural(f.leaders_lost, 'was', 'were')} led from it before the batch{group} that carries the failure.",
    ]
    if f.detected_timestamp is not None:
        gap = f.detected_timestamp - f.timestamp
        when = f"{-gap} ms before" if gap <= 0 else f"{gap} ms after"
        bits.append(
            f"The broker logged the failure {when} the controller's batch (clocks of different hosts may differ)."
        )
    moved = f.partitions_with_new_leader
    bits.append(
        f"{_plural(moved, 'partition')} got a new leader"
        + ("" if f.last_leader_move_ms is None else f" (the last at {_fmt_delta(f.last_leader_move_ms)})")
        + f"; {_plural(f.isr_shrunk, 'ISR')} lost the failed replica."
    )
    if f.affected_partitions:
        bits.append(
            "Every partition hit had a leader "
            + ("never again" if f.recovery_latency_ms is None else f"after {_fmt_ms(f.recovery_latency_ms)}")
            + "; "
            + (
                f"all were back in sync after {_fmt_ms(f.back_in_sync_ms)}."
                if f.back_in_sync_ms is not None
                else f"{_plural(f.not_in_sync, 'partition')} not back in sync at log end."
            )
        )
    if not f.affected_partitions:
        return " ".join(bits)
    if not f.min_isr_known:
        bits.append(
            "Time under min.insync.replicas: unknown (no config in the log or the cluster's files gives it)."
        )
    elif f.under_min_isr_partitions:
        bits.append(
            f"{_plural(f.under_min_isr_partitions, 'partition')} went under min.insync.replicas, "
            f"the longest for {_fmt_ms(f.under_min_isr_ms)}."
        )
    else:
        bits.append("No partition went under min.insync.replicas.")
    return " ".join(bits)


def _leaders_table(f: DirFailure) -> str:
    points = [("before", "before the failure's batch"), ("after", "after it")]
    points.append(("recovered", "back in sync" if f.back_in_sync_ms is not None else "at log end"))
    per = f.leaders_per_broker
    brokers = sorted({int(b) for p in per.values() for b in p}, key=lambda b: (b < 0, b))
    if not brokers:
        return ""
    rows = []
    for b in brokers:
        row: list[Any] = ["no leader" if b < 0 else f"broker {b}"]
        for key, _ in points:
            row.append(per.get(key, {}).get(str(b), 0))
        rows.append(row)
    return "<p>Leaders per broker (every partition):</p>" + _table(
        ["", *[title for _, title in points]], rows
    )


def _timeline_table(s: Summary, f: DirFailure) -> str:
    rows = []
    for e in f.events[:MAX_TIMELINE_ROWS]:
        rows.append(
            [
                _fmt_delta(e["ms"]),
                _fmt_ts(e["timestamp"]),
                "-" if e["offset"] is None else e["offset"],
                e["kind"],
                e["detail"],
                e["source"],
            ]
        )
    more = ""
    if len(f.events) > MAX_TIMELINE_ROWS:
        more = f"<p class='note'>{len(f.events) - MAX_TIMELINE_ROWS} more events in the failure_events table.</p>"
    return _table(["from the failure record", "time", "offset", "event", "detail", "from"], rows) + more


def _failure_section(spark: SparkSession, out: Path, s: Summary, f: DirFailure, plot: bool) -> list[str]:
    from tools.analytics.interactive import figure_block

    title = f"Broker {f.broker_id}, dir {_dir_short(s, f.directory)} at offset {f.offset}"
    parts = [f"<h3>{html.escape(title)}</h3>", f"<p>{html.escape(_failure_sentence(s, f))}</p>"]
    if plot:
        d = _failure_data(spark, out, s, f, s.last_timestamp or 0)
        parts.append(figure_block(_failure_plot(d), _failure_figure(d)))
    parts.append(_timeline_table(s, f))
    parts.append(_leaders_table(f))
    return parts


def render(spark: SparkSession, out: Path, summary: Summary) -> str:
    import matplotlib

    from tools.analytics.interactive import plotly_script

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller and searchable
    s = summary
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>KRaft metadata log report</title>",
        f"<style>{_CSS}</style>",
        plotly_script(),
        "</head><body>",
        "<h1>KRaft metadata log report</h1>",
        f"<p class='note'>{html.escape(s.log_dir)} &middot; {_fmt_ts(s.first_timestamp)} to "
        f"{_fmt_ts(s.last_timestamp)}</p>",
        "<div class='cards'>"
        + "".join(
            f"<div class='card'>{html.escape(k)}<b>{html.escape(v)}</b>"
            + (f"<small>{html.escape(n)}</small>" if n else "")
            + "</div>"
            for k, v, n in _cards(s)
        )
        + "</div>",
    ]
    if s.notices:
        parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(n)}</li>" for n in s.notices) + "</ul>")

    parts.append("<h2>Directory failures</h2>")
    if s.dir_failures:
        parts.append(
            "<p class='note'>A failure is a BrokerRegistrationChangeRecord that drops a dir from the "
            "broker's registration (the controller writes it when the broker's heartbeat reports the dir "
            "offline). Leaders lost are counted from the partition states before the batch that carries "
            "it: the controller writes the PartitionChangeRecords that move leadership and ISR off the dir "
            "in the same batch, before the registration change. <i>All led</i>: until every partition with "
            "a replica in the dir had a leader; <i>back in sync</i>: until the last leader move or ISR "
            "restoration it caused (the failed replica in the ISR again). Times are the controller's "
            "append times of the batches; the broker's own notice comes from its log when found. "
            "In the plots, drag to zoom, double-click to zoom out, and hover a marker for its record.</p>"
        )
        parts.append(
            _table(
                [
                    "broker",
                    "directory",
                    "offset",
                    "time",
                    "noticed by the broker",
                    "partitions affected",
                    "leaders lost",
                    "ISRs shrunk",
                    "time to all led",
                    "back in sync",
                    "under min ISR",
                    "dir back",
                ],
                [
                    [
                        f.broker_id,
                        _dir_cell(s, f.directory),
                        f.offset,
                        _fmt_ts(f.timestamp),
                        "-"
                        if f.detected_timestamp is None
                        else _fmt_delta(f.detected_timestamp - f.timestamp),
                        f.affected_partitions,
                        f.leaders_lost,
                        f.isr_shrunk,
                        _fmt_ms(f.recovery_latency_ms),
                        "not in sync" if f.back_in_sync_ms is None else _fmt_ms(f.back_in_sync_ms),
                        _under_min_isr(f),
                        _fmt_ts(f.back_online_timestamp),
                    ]
                    for f in s.dir_failures
                ],
            )
        )
        for i, f in enumerate(s.dir_failures):
            parts.extend(_failure_section(spark, out, s, f, plot=i < MAX_FAILURE_PLOTS))
        if len(s.dir_failures) > MAX_FAILURE_PLOTS:
            parts.append(f"<p class='note'>Plots for the first {MAX_FAILURE_PLOTS} failures only.</p>")
    else:
        parts.append("<p>No directory went offline in this log.</p>")

    if s.broker_restarts:
        parts.append("<h2>Broker restarts</h2>")
        parts.append(
            "<p class='note'>A RegisterBrokerRecord of a broker registered before: with a new incarnation "
            "id, the process restarted.</p>"
        )
        parts.append(
            _table(
                ["broker", "offset", "time", "epoch", "restart", "state before", "dirs"],
                [
                    [
                        r["broker_id"],
                        r["offset"],
                        _fmt_ts(r["timestamp"]),
                        f"{r.get('previous_epoch')} → {r.get('epoch')}",
                        "new incarnation" if r.get("new_incarnation") else "same incarnation",
                        r.get("state_before") or "-",
                        _restart_dirs(s, r),
                    ]
                    for r in s.broker_restarts
                ],
            )
        )

    if s.migration:
        parts.extend(_migration_section(spark, out, s, s.migration))

    parts.append("<h2>Offline replicas and leaderless partitions</h2>")
    parts.append(_overview_plot(spark, out, s))
    parts.append(
        f"<p class='note'>Leaderless partitions leave out a new partition's wait for its first leader "
        f"(created with leader -1 until a broker has placed its replica) unless it lasted over "
        f"{_fmt_ms(s.first_leader_grace_ms)}: {_plural(s.waiting_for_first_leader, 'partition')} waited "
        + ("" if s.first_leader_longest_ms is None else f"at most {_fmt_ms(s.first_leader_longest_ms)} ")
        + "(the first_leader_waits table).</p>"
    )
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
    parts.append("<h2>Where the names and numbers come from</h2><ul class='note'>")
    parts.append(
        "<li>Directory names: "
        + html.escape(
            s.dir_names_source
            or "none found (no --dirs file, no kraftpy cluster work dir above the log): dirs are shown by id"
        )
        + ".</li>"
    )
    parts.append(
        "<li>min.insync.replicas: "
        + html.escape(s.min_isr_source or "unknown (no ConfigRecord sets it and no broker config was found)")
        + ".</li>"
    )
    parts.append(
        "<li>Tables (Parquet) in "
        + html.escape(s.out)
        + ": "
        + ", ".join(html.escape(t) for t in sorted(s.tables))
        + ".</li></ul>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def _under_min_isr(f: DirFailure) -> str:
    if not f.affected_partitions:
        return "-"
    if not f.min_isr_known:
        return "unknown"
    if not f.under_min_isr_partitions:
        return "none"
    return f"{_plural(f.under_min_isr_partitions, 'partition')}, longest {_fmt_ms(f.under_min_isr_ms)}"


def _restart_dirs(s: Summary, r: dict[str, Any]) -> str:
    bits = []
    if r.get("dirs_missing"):
        bits.append("without " + ", ".join(_dir_short(s, d) for d in r["dirs_missing"]))
    if r.get("dirs_added"):
        bits.append("again with " + ", ".join(_dir_short(s, d) for d in r["dirs_added"]))
    return "; ".join(bits) or "as before"


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
