"""Rate-sweep views: the pictures engineers read off a load test (`viz.serve.sweep_rates`).

- `rate_sweep_figure(sweeps)`: against the completed requests per second, three panels:
  TTFT (p50 and p90), TPOT (p50 and p90) with the objective's limits, and goodput beside
  throughput — where goodput leaves the throughput line, requests start to miss the objective.
  Each sweep's points are joined in the order of that axis, not of the loads (a saturated load
  may complete fewer requests per second than a lighter one); the hover names each load.
  A load's point is the median of its repeats; its bar, the confidence interval of the median.
  A saturated load is marked ✕.
- `pareto_figure(items)`: the throughput/latency trade-off in one picture: each user's output
  tokens per second (1 / TPOT p50, up) against everyone's together (across), one line per
  server setting — one-at-a-time and continuous batching on one chart. Up and to the right is
  better; a setting whose line lies above and right of another's beats it at every load.

Each `<view>_figure` returns a plotly figure and displays nothing; `<view>_data` returns the
numbers it draws. Lessons 09 (the Pareto view) and 10 (the rate sweep).
"""

from __future__ import annotations

from typing import Any, Optional

from viz.serve.loadgen import LoadRun
from viz.serve.sweep import LoadSweep
from viz.spread import Interval
from viz.views import palette
from viz.views.base import plotly_layout
from viz.views.serving import SYMBOLS


def _check_sweeps(sweeps: Any) -> list[LoadSweep]:
    if isinstance(sweeps, LoadSweep):
        return [sweeps]
    if (
        not isinstance(sweeps, (list, tuple))
        or not sweeps
        or not all(isinstance(s, LoadSweep) for s in sweeps)
    ):
        raise ValueError(
            "give a viz.serve.LoadSweep or a non-empty list of them: run one with "
            "viz.serve.sweep_rates(server) or load one with "
            "viz.serve.LoadSweep.load(path)"
        )
    return list(sweeps)


def _num(v: Optional[Interval], scale: float = 1.0) -> dict[str, Optional[float]]:
    if v is None:
        return {"median": None, "low": None, "high": None}
    return {"median": v.median * scale, "low": v.low * scale, "high": v.high * scale}


ROWS = (
    ("ttft_p50_s", "TTFT p50", 1e3),
    ("ttft_p90_s", "TTFT p90", 1e3),
    ("tpot_p50_s", "TPOT p50", 1e3),
    ("tpot_p90_s", "TPOT p90", 1e3),
    ("goodput_per_s", "goodput", 1.0),
    ("requests_per_s", "throughput", 1.0),
    ("output_tokens_per_s", "output tokens/s", 1.0),
    ("tokens_per_s_per_user", "tokens/s per user", 1.0),
)


def rate_sweep_data(sweep: LoadSweep) -> list[dict[str, Any]]:
    """Per load: {load, kind, rate_per_s (offered), saturated, runs, and for each figure of
    `ROWS` its median, low and high (ms for latencies, per second otherwise)}."""
    (sweep,) = _check_sweeps(sweep)
    out = []
    for p in sweep.points:
        row: dict[str, Any] = {
            "load": p.label,
            "kind": p.kind,
            "rate_per_s": p.rate_per_s,
            "saturated": p.saturated,
            "runs": len(p.runs),
        }
        for key, _, scale in ROWS:
            row[key] = _num(p.figure(key, sweep.slo), scale)
        out.append(row)
    return out


def _errors(rows: list[dict], key: str) -> dict[str, Any]:
    up = [(r[key]["high"] - r[key]["median"]) if r[key]["median"] is not None else 0 for r in rows]
    down = [(r[key]["median"] - r[key]["low"]) if r[key]["median"] is not None else 0 for r in rows]
    return {
        "type": "data",
        "symmetric": False,
        "array": up,
        "arrayminus": down,
        "visible": any(r["runs"] > 1 for r in rows),
        "thickness": 1.2,
    }


def rate_sweep_figure(sweeps: Any):
    """Plotly: TTFT, TPOT, and goodput beside throughput, against the completed requests per
    second of each load, one colour per sweep (see the module docstring). Lesson 10."""
    from plotly.subplots import make_subplots

    sweeps = _check_sweeps(sweeps)
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=(
            "time to first token (solid p50, dotted p90)",
            "time per output token (solid p50, dotted p90)",
            "goodput (solid) and throughput (dotted)",
        ),
    )
    top = 0.0
    for k, sweep in enumerate(sweeps):
        top = max([top, *_add_sweep(fig, k, sweep)])
    fig.update_layout(
        **plotly_layout(
            "latency and goodput as the load rises (✕ saturated; "
            "bars: confidence interval of the median)",
            height=720,
        )
    )
    fig.update_xaxes(rangemode="tozero", range=[0, top * 1.08 if top else 1])
    fig.update_xaxes(
        title={"text": "completed requests per second", "standoff": 14},
        automargin=True,
        row=3,
        col=1,
    )
    fig.update_yaxes(title="ms", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title="ms", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(title="requests / s", rangemode="tozero", row=3, col=1)
    return fig


def _add_sweep(fig, k: int, sweep: LoadSweep) -> list[float]:
    """The `k`-th sweep's lines in the three panels and its objectives; its x values (the
    completed requests per second of each load)."""
    import plotly.graph_objects as go

    colour = palette.CYCLE[k % len(palette.CYCLE)]
    # joined from the fewest completed requests per second to the most: a saturated load
    # can complete fewer than a lighter one, and joined in the order of the loads the line
    # doubled back on its own axis (the hover names each point's load)
    rows = sorted(
        (r for r in _by_load(rate_sweep_data(sweep)) if r["requests_per_s"]["median"] is not None),
        key=lambda r: r["requests_per_s"]["median"],
    )
    x = [r["requests_per_s"]["median"] for r in rows]
    symbols = ["x" if r["saturated"] else "circle" for r in rows]
    names = [r["load"] for r in rows]
    for n, (panel, key, dash, what) in enumerate(
        [
            (1, "ttft_p50_s", "solid", "TTFT p50"),
            (1, "ttft_p90_s", "dot", "TTFT p90"),
            (2, "tpot_p50_s", "solid", "TPOT p50"),
            (2, "tpot_p90_s", "dot", "TPOT p90"),
            (3, "goodput_per_s", "solid", "goodput"),
            (3, "requests_per_s", "dot", "throughput"),
        ]
    ):
        unit = "ms" if panel < 3 else "requests/s"
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[r[key]["median"] for r in rows],
                mode="lines+markers",
                name=sweep.name,
                legendgroup=sweep.name,
                showlegend=n == 0,
                text=names,
                line={"color": colour, "dash": dash},
                marker={"color": colour, "size": 9, "symbol": symbols},
                error_y=_errors(rows, key),
                hovertemplate=f"{sweep.name}, %{{text}}: {what} %{{y:.2f}} {unit} at "
                "%{x:.2f} requests/s<extra></extra>",
            ),
            row=panel,
            col=1,
        )
    for panel, limit in ((1, sweep.slo.ttft_s), (2, sweep.slo.tpot_s)):
        fig.add_hline(
            y=limit * 1e3,
            line={"color": colour, "dash": "dash", "width": 1},
            annotation_text=f"objective {limit * 1e3:.0f} ms",
            annotation_position="top left" if k % 2 == 0 else "top right",
            annotation_font={"size": 10, "color": colour},
            row=panel,
            col=1,
        )
    return x


def _by_load(rows: list[dict]) -> list[dict]:
    """The loads from the lightest to the heaviest: one at a time, the Poisson rates rising,
    all at once (an unbounded rate)."""
    order = {"synchronous": 0, "rate": 1, "throughput": 2}
    return sorted(rows, key=lambda r: (order[r["kind"]], r["rate_per_s"] or 0))


# ---- the Pareto front ---------------------------------------------------------------------------
def pareto_data(items: Any) -> list[dict[str, Any]]:
    """Per load: {series, load, total_tokens_per_s, tokens_per_s_per_user, and their lows and
    highs (intervals over repeats; equal to the median for a single run)}. `items`: a
    LoadSweep, a list of LoadSweeps, or lists of LoadRuns (each list one series, e.g. the
    1/4/8-stream runs of one server) — or a mix."""
    if isinstance(items, (LoadSweep, LoadRun)):
        items = [items]
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError("give LoadSweeps, or lists of LoadRuns (one list per server setting)")
    if all(isinstance(i, LoadRun) for i in items):
        items = [list(items)]
    out = []
    for item in items:
        if isinstance(item, LoadSweep):
            for p in item.points:
                total = p.figure("output_tokens_per_s", item.slo)
                user = p.figure("tokens_per_s_per_user", item.slo)
                if total is None or user is None:
                    continue
                out.append(
                    {
                        "series": item.name,
                        "load": p.label,
                        "total_tokens_per_s": _num(total),
                        "tokens_per_s_per_user": _num(user),
                    }
                )
        elif isinstance(item, (list, tuple)) and item and all(isinstance(r, LoadRun) for r in item):
            for run in item:
                s = run.summary()
                if not s.output_tokens_per_s or not s.tpot_s["p50"]:
                    continue
                one = lambda v: {"median": v, "low": v, "high": v}  # noqa: E731
                out.append(
                    {
                        "series": run.label or run.target.server_label or run.target.model,
                        "load": run.load_label,
                        "total_tokens_per_s": one(s.output_tokens_per_s),
                        "tokens_per_s_per_user": one(1 / s.tpot_s["p50"]),
                    }
                )
        else:
            raise ValueError(
                "each item must be a LoadSweep or a non-empty list of LoadRuns, "
                f"not {type(item).__name__}"
            )
    return out


def pareto_figure(items: Any):
    """Plotly: each user's output tokens per second against all users' together, one line per
    server setting, ordered by total throughput (see the module docstring). Lesson 09."""
    import plotly.graph_objects as go

    points = pareto_data(items)
    series: dict[str, list[dict]] = {}
    for p in points:
        series.setdefault(p["series"], []).append(p)
    fig = go.Figure()
    loads = list(dict.fromkeys(p["load"] for p in points))  # in order of first appearance
    symbol = {load: SYMBOLS[i % len(SYMBOLS)] for i, load in enumerate(loads)}
    for k, (name, pts) in enumerate(series.items()):
        _add_front(fig, k, name, pts, symbol)
    for load in loads:  # what each marker shape means
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=load,
                marker={"color": palette.MUTED, "size": 10, "symbol": symbol[load]},
            )
        )
    xmax = max((p["total_tokens_per_s"]["high"] for p in points), default=1)
    ymax = max((p["tokens_per_s_per_user"]["high"] for p in points), default=1)
    fig.update_layout(
        **plotly_layout(
            "each user's speed against everyone's: the "
            "throughput/latency trade-off (up and right is better)",
            height=440,
            margin={"l": 70, "r": 40},
        )
    )
    fig.update_xaxes(title="all users: output tokens / s", range=[0, xmax * 1.1])
    fig.update_yaxes(title="each user: output tokens / s (1 / TPOT p50)", range=[0, ymax * 1.15])
    return fig


def _add_front(fig, k: int, name: str, pts: list[dict], symbol: dict[str, str]) -> None:
    """The `k`-th series' line, ordered by total throughput, one marker shape per load, bars
    for each point's interval both ways."""
    import plotly.graph_objects as go

    pts = sorted(pts, key=lambda p: p["total_tokens_per_s"]["median"])
    colour = palette.CYCLE[k % len(palette.CYCLE)]
    tx = lambda key, end: [p[key][end] for p in pts]  # noqa: E731
    fig.add_trace(
        go.Scatter(
            x=tx("total_tokens_per_s", "median"),
            y=tx("tokens_per_s_per_user", "median"),
            mode="lines+markers",
            name=name,
            text=[p["load"] for p in pts],
            line={"color": colour},
            marker={"color": colour, "size": 11, "symbol": [symbol[p["load"]] for p in pts]},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [
                    h - m
                    for h, m in zip(
                        tx("total_tokens_per_s", "high"), tx("total_tokens_per_s", "median")
                    )
                ],
                "arrayminus": [
                    m - lo
                    for m, lo in zip(
                        tx("total_tokens_per_s", "median"), tx("total_tokens_per_s", "low")
                    )
                ],
                "thickness": 1.2,
            },
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [
                    h - m
                    for h, m in zip(
                        tx("tokens_per_s_per_user", "high"), tx("tokens_per_s_per_user", "median")
                    )
                ],
                "arrayminus": [
                    m - lo
                    for m, lo in zip(
                        tx("tokens_per_s_per_user", "median"), tx("tokens_per_s_per_user", "low")
                    )
                ],
                "thickness": 1.2,
            },
            hovertemplate=f"{name}, %{{text}}: %{{x:.1f}} tokens/s in all, %{{y:.1f}} tokens/s "
            "for each user<extra></extra>",
        )
    )
