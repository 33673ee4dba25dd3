"""The memory wall across hardware generations: each device's peak FLOP/s against its
memory bandwidth, on log-log axes (numbers: `viz.perf.machine.datasheets`).

One marker per row of `generations_table`: GPUs and CPUs from their datasheets (a CPU's FLOP/s
computed from its datasheet), and this machine, measured, drawn as a star. Dashed diagonals
are lines of constant **ridge** (FLOP/s ÷ bytes/s = 10, 100, 1,000 FLOP per byte): a device
above a diagonal needs more FLOPs per byte read than that to use its arithmetic, and batch-1
decode does about one. Newer GPUs move up faster than right: the wall gets higher.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from viz.views import palette
from viz.views.base import plotly_layout, si_text
from viz.views.roofline import decades

RIDGES = (10, 100, 1000)  # FLOP per byte: the diagonals drawn
GROUPS = (  # (which rows, legend name, colour, symbol)
    ("gpu", "GPU (datasheet)", palette.PREFILL, "circle"),
    ("cpu", "CPU (datasheet; FLOP/s computed from it)", palette.DECODE, "diamond"),
    ("measured", "this machine (measured)", palette.CHOSEN, "star"),
)


def _group(row: dict[str, Any]) -> str:
    return "measured" if row.get("figures") == "measured" else row.get("kind", "gpu")


def _check(rows: Any) -> list[dict[str, Any]]:
    if not isinstance(rows, (list, tuple)) or not rows:
        raise ValueError(
            "expected the rows of viz.perf.generations_table() (a "
            f"non-empty list of dicts), not {type(rows).__name__}"
        )
    for r in rows:
        if not isinstance(r, dict) or not all(
            isinstance(r.get(k), (int, float)) and r[k] > 0 for k in ("bytes_per_s", "flops_per_s")
        ):
            raise ValueError(
                "every row needs bytes_per_s and flops_per_s > 0: pass the rows of "
                "viz.perf.generations_table()"
            )
    return list(rows)


def _positions(points: list[dict[str, Any]]) -> list[str]:
    """A label above its marker, or below when a labelled neighbour within 0.35 decades on
    both axes already sits above (H100 and H200 share their FLOP/s)."""
    placed: list[tuple[float, float, str]] = []
    for p in points:
        x, y = math.log10(p["x"]), math.log10(p["y"])
        crowded = any(
            abs(x - a) < 0.35 and abs(y - b) < 0.35 and pos == "top center" for a, b, pos in placed
        )
        placed.append((x, y, "bottom center" if crowded else "top center"))
    return [pos for _, _, pos in placed]


def generations_data(
    table_rows: Sequence[dict[str, Any]], ridges: Sequence[float] = RIDGES
) -> dict[str, Any]:
    """The numbers `generations_figure` draws: one point per row (bandwidth x, FLOP/s y, its
    group and label) and the ridge lines across the x range."""
    rows = _check(table_rows)
    points = [
        {
            "label": r.get("key") or r.get("name", ""),
            "name": r.get("name", ""),
            "x": float(r["bytes_per_s"]),
            "y": float(r["flops_per_s"]),
            "ridge": float(r["flops_per_s"]) / float(r["bytes_per_s"]),
            "year": r.get("year"),
            "format": r.get("flops_format", ""),
            "group": _group(r),
        }
        for r in sorted(rows, key=lambda r: r["bytes_per_s"])
    ]
    for p, pos in zip(points, _positions(points)):
        p["textposition"] = pos
    xs, ys = [p["x"] for p in points], [p["y"] for p in points]
    x_lo, x_hi = 10 ** math.floor(math.log10(min(xs) / 2)), 10 ** math.ceil(math.log10(max(xs) * 2))
    y_lo, y_hi = 10 ** math.floor(math.log10(min(ys) / 2)), 10 ** math.ceil(math.log10(max(ys) * 2))
    lines = [{"ridge": float(k), "x": [x_lo, x_hi], "y": [k * x_lo, k * x_hi]} for k in ridges]
    return {"points": points, "ridges": lines, "x_range": [x_lo, x_hi], "y_range": [y_lo, y_hi]}


def generations_figure(
    table_rows: Sequence[dict[str, Any]], *, ridges: Sequence[float] = RIDGES, height: int = 480
):
    """Plotly, log-log: peak FLOP/s (up) against memory bandwidth (across), one marker per row
    of `viz.perf.generations_table(...)`, with dashed lines of constant ridge.
    The measured row (if any) is a star. Returns the figure; nothing is displayed."""
    import plotly.graph_objects as go

    d = generations_data(table_rows, ridges)
    (x_lo, x_hi), (y_lo, y_hi) = d["x_range"], d["y_range"]
    fig = go.Figure()
    for line in d["ridges"]:
        # where the diagonal leaves the plot: its label sits there, inside the axes
        x_end = max(x_lo, min(x_hi, y_hi / line["ridge"]))
        fig.add_trace(
            go.Scatter(
                x=[line["x"][0], x_end],
                y=[line["ridge"] * line["x"][0], line["ridge"] * x_end],
                mode="lines+text",
                text=["", f"ridge {line['ridge']:,.0f} FLOP/byte"],
                textposition="bottom left",
                textfont={"size": 10, "color": palette.MUTED},
                line={"color": palette.MUTED, "dash": "dash", "width": 1},
                showlegend=False,
                name=f"ridge {line['ridge']:,.0f} FLOP/byte",
                hovertemplate=f"{line['ridge']:,.0f} FLOP per byte<extra></extra>",
            )
        )
    for group, name, colour, symbol in GROUPS:
        pts = [p for p in d["points"] if p["group"] == group]
        if not pts:
            continue
        fig.add_trace(
            go.Scatter(
                x=[p["x"] for p in pts],
                y=[p["y"] for p in pts],
                mode="markers+text",
                name=name,
                text=[p["label"] for p in pts],
                textposition=[p["textposition"] for p in pts],
                textfont={"size": 10, "color": colour},
                marker={
                    "color": colour,
                    "size": 16 if group == "measured" else 11,
                    "symbol": symbol,
                    "line": {"color": "white", "width": 1},
                },
                customdata=[[p["name"], p["year"] or "", p["format"], p["ridge"]] for p in pts],
                hovertemplate="%{customdata[0]} (%{customdata[1]})<br>%{y:.3s}FLOP/s "
                "%{customdata[2]}<br>%{x:.3s}B/s · ridge %{customdata[3]:,.0f} "
                "FLOP/byte<extra></extra>",
            )
        )
    fig.update_layout(
        **plotly_layout(
            "the memory wall across generations: peak arithmetic against memory bandwidth",
            height=height,
            margin={"l": 120},
        )
    )  # room for "100 TFLOP/s"
    x_ticks = decades(x_lo, x_hi)
    fig.update_xaxes(
        type="log",
        title="peak memory bandwidth",
        range=[math.log10(x_lo) - 0.15, math.log10(x_hi)],
        tickmode="array",
        tickvals=x_ticks,
        ticktext=[si_text(v, "B/s") for v in x_ticks],
    )
    y_ticks = decades(y_lo, y_hi)
    fig.update_yaxes(
        type="log",
        title="peak FLOP/s (dense)",
        range=[math.log10(y_lo) - 0.15, math.log10(y_hi)],
        tickmode="array",
        tickvals=y_ticks,
        ticktext=[si_text(v, "FLOP/s") for v in y_ticks],
    )
    return fig
