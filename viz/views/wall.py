"""The memory-wall view: decode step time against the bytes one step reads (lesson 08).

Log-log axes: bytes read per step across, seconds per step (TPOT) up. Three lines frame the
points: the **memory floor** (bytes ÷ the measured read bandwidth: no step can sit below it
for long), the **fixed cost** (the step time of a model of the same depth and a tiny width)
and, dashed, the least-squares **fit** TPOT = fixed + bytes ÷ streaming rate. Each point
is coloured by its verdict (`WallRun.verdict`: the regime rule with every figure's spread; grey
where it is too close to call), and labelled with its MBU. A run
computed from a datasheet says so in its title. Numbers: `viz.perf.wall`.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional

from viz.perf.regime import TOO_CLOSE
from viz.perf.wall import WallRun
from viz.views import palette
from viz.views.base import LEGEND_BELOW_PX, place_labels, plotly_layout, si_text, to_pixels
from viz.views.roofline import decades

REGIME_COLOURS = {
    "overhead-bound": palette.SPECIAL,
    "memory-bound": palette.DECODE,
    "compute-bound": palette.PREFILL,
    TOO_CLOSE: palette.MUTED,
}
DTYPE_SYMBOLS = {"float32": "circle", "bfloat16": "diamond", "float16": "square"}


def _check(run: Any) -> WallRun:
    if not isinstance(run, WallRun):
        raise ValueError(
            f"expected a viz.perf.WallRun, not {type(run).__name__}: measure one "
            "with viz.perf.measure_wall(...) or load the shipped one with "
            "viz.perf.load_reference('cpu-memory-wall')"
        )
    if not run.points:
        raise ValueError("this memory-wall run has no points: measure at least one model")
    return run


def _fixed_line_depth(run: WallRun) -> int:
    """The depth whose fixed cost is drawn: the most common among the model shapes."""
    shapes = [p.n_layers for p in run.points if p.kind == "shape"] or [
        p.n_layers for p in run.points
    ]
    return Counter(shapes).most_common(1)[0][0]


def wall_data(run: WallRun, fit: bool = True) -> dict[str, Any]:
    """The numbers `wall_figure` draws: points (bytes, seconds, regime, MBU), the memory-floor
    line, the fixed-cost line of each dtype, the fitted line (None when it cannot be fitted)."""
    _check(run)
    xs = [p.step_bytes for p in run.points]
    lo = 10 ** math.floor(math.log10(min(xs) / 2))
    hi = 10 ** math.ceil(math.log10(max(xs) * 2))
    depth = _fixed_line_depth(run)
    fixed = []
    for o in run.overhead:
        try:
            fixed.append(
                {"dtype": o.dtype, "n_layers": depth, "seconds": o.at(depth), "assumed": o.assumed}
            )
        except ValueError:
            continue
    line = None
    if fit and not run.computed:  # a line through computed points would only restate them
        try:
            f = run.fit()
            grid = [lo * (hi / lo) ** (k / 40) for k in range(41)]
            line = {
                "x": grid,
                "y": [f.predict_s(x) for x in grid],
                "fixed_s": f.fixed_s,
                "bytes_per_s": f.bytes_per_s,
                "r_squared": f.r_squared,
            }
        except ValueError:
            line = None
    return {
        "title": run.title(),
        "computed": run.computed,
        "x_range": [lo, hi],
        "points": [
            {
                "label": p.label,
                "x": p.step_bytes,
                "y": p.seconds,
                "dtype": p.dtype,
                "kind": p.kind,
                "batch": p.batch,
                "regime": run.verdict(p).regime,
                "mbu": run.mbu(p),
                "memory_floor_s": run.memory_floor_s(p),
                "fixed_cost_s": p.fixed_cost_s,
                "compute_floor_s": run.compute_floor_s(p),
            }
            for p in run.points
        ],
        "memory_floor": {
            "x": [lo, hi],
            "y": [lo / run.read_bytes_per_s, hi / run.read_bytes_per_s],
            "bytes_per_s": run.read_bytes_per_s,
        },
        "fixed_cost": fixed,
        "fit": line,
    }


def _add_run(fig, data: dict[str, Any], k: int, name: str) -> None:
    """The `k`-th run (`name`: its label for the legend, "" for the first): its floors, then
    its points."""
    _add_floors(fig, data, k, name)
    _add_points(fig, data, k, name)


def _add_floors(fig, data: dict[str, Any], k: int, name: str) -> None:
    """The memory floor, each fixed cost, and (first run only) the fitted line."""
    import plotly.graph_objects as go

    dash = "solid" if k == 0 else "dot"
    mf = data["memory_floor"]
    fig.add_trace(
        go.Scatter(
            x=mf["x"],
            y=[y * 1e3 for y in mf["y"]],
            mode="lines",
            line={"color": palette.FORMULA, "dash": dash, "width": 2},
            name=f"memory floor{name}: bytes ÷ {mf['bytes_per_s'] / 1e9:,.1f} GB/s",
            showlegend=k == 0,  # a second run's floors are dotted, named in their hover text
            hovertemplate=f"memory floor{name}: " + "%{x:.3s}B at peak read bandwidth: %{y:.3g} ms"
            "<extra></extra>",
        )
    )
    for j, f in enumerate(data["fixed_cost"]):
        what = "assumed" if f["assumed"] else "measured"
        fig.add_trace(
            go.Scatter(
                x=data["x_range"],
                y=[f["seconds"] * 1e3] * 2,
                mode="lines",
                line={
                    "color": REGIME_COLOURS["overhead-bound"],
                    "width": 1.5,
                    "dash": ("dash", "longdash", "dashdot")[j % 3] if k == 0 else "dot",
                },
                name=f"fixed cost{name}, {f['n_layers']} layers, {f['dtype']} ({what})",
                showlegend=k == 0,
                hovertemplate=f"fixed cost{name}, {f['n_layers']} layers, {f['dtype']} ({what}): "
                "%{y:.3g} ms<extra></extra>",
            )
        )
    if data["fit"] is not None and k == 0:
        ft = data["fit"]
        fig.add_trace(
            go.Scatter(
                x=ft["x"],
                y=[y * 1e3 for y in ft["y"]],
                mode="lines",
                line={"color": palette.ACCENT, "dash": "dashdot", "width": 1.5},
                name=f"fit: {ft['fixed_s'] * 1e3:.1f} ms + bytes ÷ {ft['bytes_per_s'] / 1e9:.1f} GB/s",
                hoverinfo="skip",
            )
        )


def _add_points(fig, data: dict[str, Any], k: int, name: str) -> None:
    """The measured points, one trace per regime (hollow for a second run)."""
    import plotly.graph_objects as go

    for regime, colour in REGIME_COLOURS.items():
        pts = [p for p in data["points"] if p["regime"] == regime]
        if not pts:
            continue
        fig.add_trace(
            go.Scatter(
                x=[p["x"] for p in pts],
                y=[p["y"] * 1e3 for p in pts],
                mode="markers+text",
                name=f"{regime}{name}",
                # the tiny fixed-cost models crowd together, and a second run would repeat the
                # labels: their MBU is in the hover text. A bfloat16 point sits left of its float32
                # twin (half the bytes), so its label goes on the left; so does a batched point's
                # (it sits above its B=1 twin, just left of the next bigger shapes).
                text=[
                    f"MBU {p['mbu']:.0%}" if p["kind"] == "shape" and k == 0 else "" for p in pts
                ],
                textposition=[
                    "middle left" if p["dtype"] != "float32" or p["batch"] > 1 else "middle right"
                    for p in pts
                ],
                textfont={"size": 10, "color": colour},
                marker={
                    "color": colour if k == 0 else "white",
                    "size": 11,
                    "symbol": [DTYPE_SYMBOLS.get(p["dtype"], "circle") for p in pts],
                    "line": {"color": colour if k else "white", "width": 2 if k else 1},
                },
                customdata=[
                    [
                        p["label"],
                        p["memory_floor_s"] * 1e3,
                        p["fixed_cost_s"] * 1e3,
                        p["compute_floor_s"] * 1e3,
                        p["mbu"] * 100,
                    ]
                    for p in pts
                ],
                hovertemplate="%{customdata[0]}: %{x:.3s}B per step, %{y:.3g} ms, MBU "
                "%{customdata[4]:.1f}%<br>memory floor %{customdata[1]:.3g} ms · "
                "fixed cost %{customdata[2]:.3g} ms · compute floor "
                f"%{{customdata[3]:.3g}} ms<br>{regime}<extra></extra>",
            )
        )


def wall_figure(run: WallRun, *others: WallRun, fit: bool = True, height: int = 500):
    """Plotly: TPOT against bytes per step (log-log), coloured by regime, MBU beside each point.

    others: more runs on the same axes (e.g. the shipped reference beside your own run),
        drawn hollow with dotted floors. Circles are float32, diamonds bfloat16.
    fit: draw the least-squares line of the first run.
    """
    import plotly.graph_objects as go

    runs = [_check(run)] + [_check(o) for o in others]
    datas = [wall_data(r, fit=fit) for r in runs]
    fig = go.Figure()
    for k, (r, d) in enumerate(zip(runs, datas)):
        _add_run(fig, d, k, "" if k == 0 else f" ({r.label})")
    lo = min(d["x_range"][0] for d in datas)
    hi = max(d["x_range"][1] for d in datas)
    ys = [p["y"] * 1e3 for d in datas for p in d["points"]] + [
        f["seconds"] * 1e3 for d in datas for f in d["fixed_cost"] if f["seconds"] > 0
    ]
    y_lo = 10 ** math.floor(math.log10(min(ys) / 2))
    y_hi = 10 ** math.ceil(math.log10(max(ys) * 2))
    # the legend, under the axis title: plotly sets long entries in two columns
    rows = max(1, math.ceil(sum(t.showlegend is not False for t in fig.data) / 2))
    fig.update_layout(
        **plotly_layout(
            f"the memory wall: {datas[0]['title']}",
            height=height + 20 * (rows - 1),
            margin={"b": LEGEND_BELOW_PX + 20 * (rows - 1)},
        )
    )
    x_ticks = decades(lo, hi)
    fig.update_xaxes(
        type="log",
        title="bytes read per decode step",
        range=[math.log10(lo) - 0.15, math.log10(hi)],
        tickmode="array",
        tickvals=x_ticks,
        ticktext=[si_text(v, "B") for v in x_ticks],
    )
    y_ticks = [v for v in decades(y_lo, y_hi) if y_lo <= v <= y_hi]
    fig.update_yaxes(
        type="log",
        title="time per decode step (ms)",
        range=[math.log10(y_lo) - 0.15, math.log10(y_hi)],
        tickmode="array",
        tickvals=y_ticks,
        ticktext=[f"{v:g}" for v in y_ticks],
    )
    _place_labels(fig)
    return fig


# The figure is drawn as wide as its notebook output (about 650-900 px): the labels are placed
# for the narrowest, where the points sit closest together.
NARROWEST_PX = 650


def _place_labels(fig) -> None:
    """Give each MBU label a side of its point (its preferred one first) where it touches no
    other label or point and stays inside the plot (`place_labels`); a label that fits nowhere
    is left out (its MBU stays in the hover text, and `WallRun.mbu` prints it). A learner's
    points land anywhere, so fixed sides cannot be trusted."""
    lay = fig.layout
    width = (lay.width or NARROWEST_PX) - lay.margin.l - lay.margin.r
    height = lay.height - lay.margin.t - lay.margin.b
    (x0, x1), (y0, y1) = lay.xaxis.range, lay.yaxis.range

    def px(t) -> list[tuple[float, float]]:
        xs = to_pixels(list(t.x), 10**x0, 10**x1, width, log=True)
        ys = to_pixels(list(t.y), 10**y0, 10**y1, height, log=True, flip=True)
        return list(zip(xs, ys))

    labelled = [t for t in fig.data if t.mode == "markers+text" and t.text and any(t.text)]
    points = [(t, i, xy) for t in labelled for i, xy in enumerate(px(t))]
    others = [
        xy
        for t in fig.data
        if t.mode and "markers" in t.mode and all(t is not u for u in labelled)
        for xy in px(t)
    ]
    where = place_labels(
        [xy for _, _, xy in points],
        [t.text[i] for t, i, _ in points],
        (width, height),
        font_px=10,
        marker_px=7,
        obstacles=others,
        prefer=[t.textposition[i] for t, i, _ in points],
    )
    for t in labelled:
        mine = [pos for (u, _, _), pos in zip(points, where) if u is t]
        t.text = [text if pos else "" for text, pos in zip(t.text, mine)]
        t.textposition = [pos or "middle right" for pos in mine]


def wall_table(run: WallRun, other: Optional[WallRun] = None) -> str:
    """The run's numbers as text (what `print(run)` shows), optionally a second run below."""
    text = str(_check(run))
    return text if other is None else text + "\n\n" + str(_check(other))


def bytes_whatif_data(run: WallRun, bytes_per_weight: float) -> dict[str, Any]:
    """The numbers `bytes_whatif_figure` draws (`viz.perf.wall.bytes_whatif`)."""
    from viz.perf.wall import bytes_whatif

    rows = bytes_whatif(_check(run), bytes_per_weight)
    widest = max(r["predicted_s"] for r in bytes_whatif(run, 4))  # fixed axis across the slider
    return {"bytes_per_weight": bytes_per_weight, "rows": rows, "x_max_s": widest * 1.05}


def bytes_whatif_figure(run: WallRun, bytes_per_weight: float, height: int = 360):
    """Plotly: each model's step split into its fixed cost and the rest, predicted at
    `bytes_per_weight` bytes per weight by scaling the rest of its measured step with the
    bytes (`viz.perf.bytes_whatif`: a prediction, not a measurement)."""
    import plotly.graph_objects as go

    d = bytes_whatif_data(run, bytes_per_weight)
    names = [f"{r['model']} ({r['n_params'] / 1e6:,.0f} M)" for r in d["rows"]]
    per = "byte" if bytes_per_weight == 1 else "bytes"
    fig = go.Figure(
        [
            go.Bar(
                y=names,
                x=[r["fixed_s"] * 1e3 for r in d["rows"]],
                orientation="h",
                name="fixed cost (measured at its depth)",
                marker_color=REGIME_COLOURS["overhead-bound"],
                hovertemplate="fixed cost %{x:.1f} ms<extra></extra>",
            ),
            go.Bar(
                y=names,
                x=[r["read_s"] * 1e3 for r in d["rows"]],
                orientation="h",
                name="the rest of the measured step, scaled with the bytes",
                marker_color=REGIME_COLOURS["memory-bound"],
                customdata=[r["fixed_share"] * 100 for r in d["rows"]],
                hovertemplate="the rest %{x:.1f} ms; the fixed cost is %{customdata:.0f}% of "
                "the step<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        **plotly_layout(
            f"{bytes_per_weight:g} {per} per weight: predicted if only the bytes change, not "
            "measured",
            height=height,
            barmode="stack",
            xaxis={
                "title": "predicted time per decode step (ms)",
                "range": [0, d["x_max_s"] * 1e3],
            },
            legend={"orientation": "h", "y": -0.3},
        )
    )
    fig.update_yaxes(automargin=True)
    return fig
