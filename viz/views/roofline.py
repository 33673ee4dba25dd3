"""The roofline view: this device's measured ceilings and the measured passes beneath them.

Log-log axes: arithmetic intensity (FLOPs per byte moved) across, FLOP/s up. The roof is
min(peak FLOP/s, intensity × peak bytes/s): a memory slope meeting a compute ceiling at the
ridge. Prefill points sit far right (each weight reused by every prompt token); decode points
sit far left at batch 1 and walk right as the batch grows. Formulas: `viz.perf.roofline`.
Lesson 06 (and 07 for a reference device beside yours).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, Optional

from viz.perf.roofline import Roofline
from viz.runtime import short_device_name
from viz.views import palette
from viz.views.base import (
    LEGEND_BELOW_PX,
    LEGEND_CHAR_PX,
    LEGEND_ROW_PX,
    LEGEND_SYMBOL_PX,
    NARROWEST_FIGURE_PX,
    new_figure,
    place_labels,
    plotly_layout,
    si_text,
    to_pixels,
)
from viz.views.text import esc

HEIGHT_PX = 460
MARGIN_LEFT_PX = 115  # room for "100 GFLOP/s" and the axis title
# The plot area's width for placing point labels: a notebook output's plot area is 650-820 px
# wide; assume the narrow end (points are then closest), so labels placed here never collide
# (wider, every distance across grows). Its height is the figure's own (`_plot_px`).
PLOT_WIDTH_PX = 640


def flops_text(value: float) -> str:
    """FLOP/s in words: "10 GFLOP/s", "1.5 TFLOP/s"."""
    return si_text(value, "FLOP/s")


def decades(lo: float, hi: float) -> list[float]:
    """Powers of ten from below `lo` to above `hi`."""
    return [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def _check(roofline: Any) -> Roofline:
    if not isinstance(roofline, Roofline):
        raise ValueError(
            f"expected a viz.perf.Roofline, not {type(roofline).__name__}: "
            "measure one with viz.perf.measure_roofline(lm) or load one with "
            "viz.perf.load_reference(name)"
        )
    return roofline


def _title(r: Roofline) -> str:
    parts = [r.label] if r.label else []
    parts += [short_device_name(r.peaks.device_name or r.peaks.device), r.peaks.dtype]
    return " · ".join(parts)


def roofline_data(roofline: Roofline, others: tuple = ()) -> dict[str, Any]:
    """The numbers the view draws: for each roofline, the roof's corner points and each
    measured point's (intensity, achieved FLOP/s, MFU, MBU)."""
    rs = [_check(roofline)] + [_check(o) for o in others]
    intensities = [p.intensity for r in rs for p in r.points] + [
        r.peaks.ridge_intensity for r in rs
    ]
    lo = 10 ** math.floor(math.log10(min(intensities) / 2))
    hi = 10 ** math.ceil(math.log10(max(intensities) * 2))
    out = []
    for r in rs:
        ridge = r.peaks.ridge_intensity
        out.append(
            {
                "title": _title(r),
                "roof_x": [lo, ridge, hi],
                "roof_y": [lo * r.peaks.bytes_per_s, r.peaks.flops_per_s, r.peaks.flops_per_s],
                "ridge": ridge,
                "points": [
                    {
                        "label": p.label,
                        "phase": p.phase,
                        "x": p.intensity,
                        "y": p.achieved_flops_per_s,
                        "mfu": r.mfu(p),
                        "mbu": r.mbu(p),
                        "seconds": p.seconds,
                        "bound": r.bound(p),
                    }
                    for p in r.points
                ],
            }
        )
    ys = [p["y"] for r in out for p in r["points"]] + [v for r in out for v in r["roof_y"][1:]]
    positive = [v for v in ys if v > 0]
    return {
        "x_range": [lo, hi],
        "y_range": [min(positive) / 2, max(positive) * 2],
        "rooflines": out,
    }


def _point_colour(phase: str) -> str:
    return palette.PHASE.get(phase, palette.MUTED)


def legend_title_lines(title: str, k: int, n: int) -> list[str]:
    """Roofline k's name (of n) above its legend column, and how its roof is drawn; wrapped so
    that n columns sit side by side under the plot of the narrowest figure."""
    room = (NARROWEST_FIGURE_PX - MARGIN_LEFT_PX - 20) / n - LEGEND_SYMBOL_PX
    return textwrap.wrap(
        f"{title} ({'solid' if k == 0 else 'dashed'})",
        max(16, int(room / LEGEND_CHAR_PX)),
        break_long_words=True,
    )


def roofline_figure(roofline: Roofline, *others: Roofline):
    """Plotly: the roof(s) and the measured points; hover shows time, MFU and MBU.

    others: more rooflines (e.g. a shipped GPU one) drawn on the same axes, dashed.
    The legend sits under the plot: one row ("roof", "prefill", "decode") for one roofline,
    one column per roofline under its name for several; the figure grows by the rows it
    needs, so that a long label or machine name never runs it into the axis.
    """
    import plotly.graph_objects as go

    data = roofline_data(roofline, others)
    n = len(data["rooflines"])
    titles = [legend_title_lines(r["title"], k, n) for k, r in enumerate(data["rooflines"])]
    rows = (
        1
        if n == 1
        else max(
            len(lines) + 1 + len({p["phase"] for p in r["points"]})
            for lines, r in zip(titles, data["rooflines"])
        )
    )
    extra = LEGEND_ROW_PX * (rows - 1)
    layout = plotly_layout(
        f"roofline: {data['rooflines'][0]['title']}",
        height=HEIGHT_PX + extra,
        margin={"l": MARGIN_LEFT_PX, "b": LEGEND_BELOW_PX + extra},
    )
    positions = _label_positions(data, _plot_px(layout))
    fig = go.Figure()
    for k, r in enumerate(data["rooflines"]):
        group: dict[str, Any] = {}
        if n > 1:  # one legend column per roofline, under its name
            group = {
                "legendgroup": f"roofline {k}",
                "legendgrouptitle": {"text": "<br>".join(esc(s) for s in titles[k])},
            }
        _add_roof(fig, k, r, group)
        _add_points(fig, k, r, positions, group)
    fig.update_layout(**layout)
    _roofline_axes(fig, data, n)
    return fig


def _add_roof(fig, k: int, r: dict, group: dict[str, Any]) -> None:
    """The `k`-th roofline's roof (solid for the first, dashed for the others) and its ridge."""
    import plotly.graph_objects as go

    dash = "solid" if k == 0 else "dash"
    roof_colour = palette.FORMULA if k == 0 else palette.ACCENT
    fig.add_trace(
        go.Scatter(
            x=r["roof_x"],
            y=r["roof_y"],
            mode="lines",
            name="roof",
            **group,
            line={"color": roof_colour, "dash": dash, "width": 2},
            hovertemplate="%{x:.3g} FLOP/byte → at most %{y:.3g} FLOP/s<extra></extra>",
        )
    )
    fig.add_annotation(
        x=math.log10(r["ridge"]),
        y=math.log10(r["roof_y"][1]),
        text=_ridge_text(r),
        showarrow=True,
        arrowhead=0,
        ax=0,
        ay=-_ridge_lift(k),
        font={"size": RIDGE_FONT_PX, "color": roof_colour},
    )


def _add_points(fig, k: int, r: dict, positions: dict, group: dict[str, Any]) -> None:
    """The `k`-th roofline's measured passes, one trace per phase, labelled where a label
    fits (`positions`, from `_label_positions`; the hover names every point)."""
    import plotly.graph_objects as go

    index = {id(p): i for i, p in enumerate(r["points"])}

    def where(p, k=k, index=index):
        return positions[(k, index[id(p)])] or "bottom center"

    def label(p, k=k, index=index):
        return p["label"] if positions[(k, index[id(p)])] else ""

    for phase in ("prefill", "decode"):
        pts = [p for p in r["points"] if p["phase"] == phase]
        if not pts:
            continue
        colour = _point_colour(phase)
        fig.add_trace(
            go.Scatter(
                x=[p["x"] for p in pts],
                y=[p["y"] for p in pts],
                mode="markers+text",
                name=phase,
                **group,
                text=[label(p) for p in pts],
                textposition=[where(p) for p in pts],
                textfont={"size": 11},
                marker={
                    "color": colour,
                    "size": 11,
                    "symbol": "circle" if k == 0 else "diamond",
                    "line": {"color": "white", "width": 1},
                },
                customdata=[
                    [p["seconds"] * 1e3, p["mfu"] * 100, p["mbu"] * 100, p["bound"], p["label"]]
                    for p in pts
                ],
                hovertemplate="%{customdata[4]}: %{customdata[0]:.2f} ms, %{x:.3g} FLOP/byte, "
                "%{y:.3g} FLOP/s<br>MFU %{customdata[1]:.1f}% · MBU "
                "%{customdata[2]:.1f}% · %{customdata[3]}-bound<extra></extra>",
            )
        )


def _roofline_axes(fig, data: dict, n: int) -> None:
    """Log axes ticked at decades (FLOP/s named as G and T), and the legend's columns for
    several rooflines."""
    y_lo, y_hi = data["y_range"]
    if n > 1:
        fig.update_layout(legend={"groupclick": "toggleitem", "tracegroupgap": 0, "valign": "top"})
    x_ticks = decades(*data["x_range"])
    y_ticks = [v for v in decades(y_lo, y_hi) if y_lo <= v <= y_hi]
    fig.update_xaxes(
        type="log",
        title="arithmetic intensity (FLOPs per byte moved)",
        range=[math.log10(v) for v in data["x_range"]],
        tickmode="array",
        tickvals=x_ticks,
        ticktext=[f"{v:g}" for v in x_ticks],
    )
    fig.update_yaxes(
        type="log",
        title="work done per second",
        range=[math.log10(y_lo), math.log10(y_hi)],
        tickmode="array",
        tickvals=y_ticks,
        ticktext=[flops_text(v) for v in y_ticks],
    )


RIDGE_FONT_PX = 10
LABEL_BOX_FONT_PX = 12.5  # the point labels are drawn at 11 px


def _ridge_text(r: dict) -> str:
    return f"ridge {r['ridge']:.3g} FLOP/byte"


def _ridge_lift(k: int) -> float:
    """Pixels from the ridge's corner up to its annotation's text (k: which roofline)."""
    return 25 + 20 * k


def _plot_px(layout: dict) -> tuple[float, float]:
    """The plot area (width, height) in pixels the labels are placed in: the narrow end of a
    notebook's width, and the figure's own height less its margins (the height is exact, so a
    label placed beside a ridge annotation is beside it in the browser too)."""
    margin = layout["margin"]
    return PLOT_WIDTH_PX, layout["height"] - margin["t"] - margin["b"]


def _ridge_boxes(
    data: dict, size_px: tuple[float, float]
) -> list[tuple[float, float, float, float]]:
    """Each ridge annotation's area in plot pixels: its text and the line down to the corner
    (where the measured points' labels must not go). Plotly centres an arrow's text on the
    arrow's tail, `_ridge_lift` above the corner; the box is a little larger than the text."""
    (x_lo, x_hi), (y_lo, y_hi) = data["x_range"], data["y_range"]
    w, h = size_px
    out = []
    for k, r in enumerate(data["rooflines"]):
        x = to_pixels([r["ridge"]], x_lo, x_hi, w, log=True)[0]
        y = to_pixels([r["roof_y"][1]], y_lo, y_hi, h, log=True, flip=True)[0]
        half_w = (0.62 * RIDGE_FONT_PX * len(_ridge_text(r)) + 8) / 2
        half_h = 0.9 * RIDGE_FONT_PX
        tail = y - _ridge_lift(k)
        out.append((x - half_w, tail - half_h, x + half_w, tail + half_h))
        out.append((x - 3, tail, x + 3, y))  # the line from the text down to the corner
    return out


def _label_positions(
    data: dict, size_px: tuple[float, float]
) -> dict[tuple[int, int], Optional[str]]:
    """Where each measured point's label goes (None: left out, named on hover), placed so
    that no two labels collide: the roofs' corners, every point and the ridge annotations
    are obstacles. size_px: the plot area (`_plot_px`)."""
    pts = [(k, i, p) for k, r in enumerate(data["rooflines"]) for i, p in enumerate(r["points"])]
    (x_lo, x_hi), (y_lo, y_hi) = data["x_range"], data["y_range"]
    w, h = size_px
    xs = to_pixels([p["x"] for _, _, p in pts], x_lo, x_hi, w, log=True)
    ys = to_pixels([p["y"] for _, _, p in pts], y_lo, y_hi, h, log=True, flip=True)
    # boxes for 12.5-px text round the 11-px labels: a margin for the browser's own text
    # metrics (two rooflines' "decode B=2", placed a pixel apart, touched in Chromium)
    where = place_labels(
        list(zip(xs, ys)),
        [p["label"] for _, _, p in pts],
        (w, h),
        font_px=LABEL_BOX_FONT_PX,
        boxes=_ridge_boxes(data, size_px),
    )
    return {(k, i): pos for (k, i, _), pos in zip(pts, where)}


def roofline_static(roofline: Roofline, *others: Roofline):
    """Matplotlib: the same roofline as `roofline_figure`, for static pages (MFU and MBU of
    each point: `roofline_table`)."""
    data = roofline_data(roofline, others)
    fig, ax = new_figure(figsize=(7.5, 4.8))
    for k, r in enumerate(data["rooflines"]):
        roof_colour = palette.FORMULA if k == 0 else palette.ACCENT
        ax.plot(
            r["roof_x"],
            r["roof_y"],
            color=roof_colour,
            ls="-" if k == 0 else "--",
            label=f"roof: {r['title']}",
        )
        placed: list[tuple[float, float]] = []
        for p in r["points"]:
            ax.scatter(
                [p["x"]],
                [p["y"]],
                color=_point_colour(p["phase"]),
                zorder=3,
                marker="o" if k == 0 else "D",
                edgecolor="white",
            )
            # labels of points close together are stacked, not printed over each other
            near = sum(
                abs(math.log10(p["x"] / x)) < 0.3 and abs(math.log10(p["y"] / y)) < 0.15
                for x, y in placed
            )
            placed.append((p["x"], p["y"]))
            ax.annotate(
                p["label"],
                (p["x"], p["y"]),
                textcoords="offset points",
                xytext=(6, -4 - 9 * near),
                fontsize=7,
                color=_point_colour(p["phase"]),
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*data["x_range"])
    ax.set_xlabel("arithmetic intensity (FLOPs per byte moved)")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: flops_text(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("work done per second")
    ax.set_title(f"roofline: {data['rooflines'][0]['title']}", fontsize=10, loc="left")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def roofline_table(roofline: Roofline, other: Optional[Roofline] = None) -> str:
    """The roofline's numbers as text (what `print(roofline)` shows), optionally two of them."""
    text = str(_check(roofline))
    return text if other is None else text + "\n\n" + str(_check(other))
