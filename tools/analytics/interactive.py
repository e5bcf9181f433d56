"""Zoomable plots with hover for report.html, drawn by plotly.js inlined once in the page (no network).

Each figure goes in a `.fig` block beside the static SVG of the same data: a script hides the SVG
once plotly.js has drawn the interactive one, so a viewer that blocks scripts still shows the SVG
(and the empty interactive block takes no room).
"""

from __future__ import annotations

import datetime as dt
import html
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_CONFIG = {
    "displaylogo": False,  # the logo links to plotly's site
    "responsive": True,
    "scrollZoom": False,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}
_ids = itertools.count(1)
# Hides the static twin of a figure plotly.js has drawn.
_SWAP = (
    "<script>(function(s){var f=s.parentNode;if(window.Plotly&&f.querySelector('.plotly-graph-div')){"
    "var st=f.querySelector('.fig-static');if(st){st.style.display='none';}}})(document.currentScript);"
    "</script>"
)


def plotly_script() -> str:
    """plotly.js, inline, for the page's head."""
    from plotly.offline import get_plotlyjs

    return f"<script>{get_plotlyjs()}</script>"


def figure_block(static_html: str, fig: Any | None, height: int | None = None) -> str:
    """The static SVG block, and the interactive figure that replaces it when scripts run."""
    if fig is None:
        return static_html
    if height is not None:
        fig.update_layout(height=height)
    live = fig.to_html(full_html=False, include_plotlyjs=False, config=_CONFIG, div_id=f"fig{next(_ids)}")
    return (
        f"<div class='fig'><div class='fig-static'>{static_html}</div>"
        f"<div class='fig-live'>{live}</div>{_SWAP}</div>"
    )


@dataclass
class Series:
    name: str
    xs: Sequence[Any]
    ys: Sequence[int]
    color: str


@dataclass
class Marker:
    lane: str
    x: Any
    text: str  # hover text (plain; escaped here)


@dataclass
class EventPlot:
    """Step series over time above lanes of event markers, sharing one zoomable time axis."""

    x_title: str
    series: list[Series] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    lanes: list[str] = field(default_factory=list)  # top to bottom
    vlines: list[tuple[Any, str]] = field(default_factory=list)  # (x, color)


def event_figure(p: EventPlot) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lanes = [lane for lane in p.lanes if any(m.lane == lane for m in p.markers)]
    lanes += sorted({m.lane for m in p.markers} - set(lanes))
    rows = 2 if lanes else 1
    lanes_px, series_px = 26 * len(lanes) + 30, 260
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.04,
        row_heights=[series_px, lanes_px] if rows == 2 else [1.0],
    )
    for s in p.series:
        fig.add_trace(
            go.Scatter(
                x=list(s.xs),
                y=list(s.ys),
                name=s.name,
                mode="lines",
                line={"shape": "hv", "color": s.color, "width": 2},
                hovertemplate="%{y} " + html.escape(s.name) + "<extra></extra>",
            ),
            row=1,
            col=1,
        )
    symbols = ("circle", "diamond", "square", "triangle-up", "x", "star", "triangle-down", "cross")
    for i, lane in enumerate(lanes):
        ms = [m for m in p.markers if m.lane == lane]
        fig.add_trace(
            go.Scatter(
                x=[m.x for m in ms],
                y=[lane] * len(ms),
                name=lane,
                mode="markers",
                marker={"size": 10, "symbol": symbols[i % len(symbols)], "line": {"width": 1}},
                hovertext=[html.escape(m.text).replace("\n", "<br>") for m in ms],
                hoverinfo="text",
                showlegend=False,
            ),
            row=2,
            col=1,
        )
    for x, color in p.vlines:
        fig.add_vline(x=x, line={"color": color, "dash": "dash", "width": 1})
    fig.update_yaxes(title_text="count", rangemode="tozero", row=1, col=1)
    if lanes:
        fig.update_yaxes(
            type="category",
            categoryorder="array",
            categoryarray=list(reversed(lanes)),
            range=[-0.5, len(lanes) - 0.5],
            dtick=1,
            row=2,
            col=1,
        )
    fig.update_xaxes(title_text=p.x_title, row=rows, col=1)
    fig.update_layout(
        height=series_px + (lanes_px if lanes else 0) + 120,
        template="plotly_white",
        hovermode="closest",
        margin={"l": 60, "r": 20, "t": 40, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "x": 0},
    )
    return fig


def utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
