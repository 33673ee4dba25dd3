"""What a token costs, and what each user waits for it: `viz.perf.cost` as a picture.

- `cost_figure(cost, *others)`: against the batch size (or the streams, or the requests in
  flight) two panels sharing that axis: above, $ per million output tokens (solid) and input
  tokens (dotted), each point's bar the spread of its throughput; below, the latency each
  setting costs a user (TPOT p50: the time between two of its tokens). One colour per
  measurement, e.g. yours beside the shipped CPU and H200 references. Batching moves a point
  down the top panel (cheaper) and up the bottom one (slower for each user).
- `cost_data(costs)`: the numbers it draws.

Both axes of both panels are logarithmic: the course's CPU and an H200 differ a hundredfold.
Lesson 10 (what a token costs).
"""

from __future__ import annotations

from typing import Any, Optional

from viz.perf.cost import Cost, usd
from viz.spread import Spread
from viz.views import palette
from viz.views.base import LEGEND_BELOW_PX, LEGEND_ROW_PX, empty_figure, plotly_layout
from viz.views.text import esc

NAME_CHARS = 80  # a legend entry longer than this is cut at a word (the hover has it whole)


def _check(costs: Any) -> list[Cost]:
    if isinstance(costs, Cost):
        return [costs]
    if (
        not isinstance(costs, (list, tuple))
        or not costs
        or not all(isinstance(c, Cost) for c in costs)
    ):
        raise ValueError(
            "give a viz.perf.Cost or a non-empty list of them: price a "
            "measurement with viz.perf.cost(sweep_or_run, price_per_hour=0.10)"
        )
    return list(costs)


def _ends(s: Optional[Spread], scale: float = 1.0) -> Optional[dict[str, float]]:
    if s is None:
        return None
    return {"median": s.median * scale, "low": s.low * scale, "high": s.high * scale}


def series_name(cost: Cost) -> str:
    """A measurement's legend entry: its name and price, cut at a word to NAME_CHARS."""
    price = f" at {usd(cost.price_per_hour)}/h"
    name = cost.name
    if len(name) + len(price) > NAME_CHARS:
        name = name[: NAME_CHARS - len(price) - 1].rsplit(" ", 1)[0] + "…"
    return name + price


def cost_data(costs: Any) -> list[dict[str, Any]]:
    """One dict per row of each Cost: {measurement (its place in the list), series, setting,
    x, x_name, price_per_hour, output and input ($ per million: median, low, high; input None
    where not measured), output_tokens_per_s, ttft_ms, tpot_ms (median, low, high, or None)}."""
    out = []
    for k, cost in enumerate(_check(costs)):
        for r in cost.rows:
            out.append(
                {
                    "measurement": k,
                    "series": series_name(cost),
                    "setting": r.setting,
                    "x": r.x,
                    "x_name": cost.x_name,
                    "price_per_hour": cost.price_per_hour,
                    "output": _ends(r.output_per_mtok),
                    "input": _ends(r.input_per_mtok),
                    "output_tokens_per_s": _ends(r.output_tokens_per_s),
                    "ttft_ms": _ends(r.ttft_s, 1e3),
                    "tpot_ms": _ends(r.tpot_s, 1e3),
                }
            )
    return out


def _bars(points: list[dict], key: str) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "thickness": 1.2,
        "width": 4,
        "array": [p[key]["high"] - p[key]["median"] for p in points],
        "arrayminus": [p[key]["median"] - p[key]["low"] for p in points],
    }


def _hover(p: dict) -> str:
    def ms(d):
        return "n/a" if d is None else f"{d['median']:.1f} ms"

    inp = "" if p["input"] is None else f", input {usd(p['input']['median'])}"
    return esc(
        f"{p['series']}, {p['setting']}: output {usd(p['output']['median'])} per "
        f"million{inp}; {p['output_tokens_per_s']['median']:,.0f} tokens/s; "
        f"TTFT {ms(p['ttft_ms'])}, TPOT {ms(p['tpot_ms'])}"
    )


def log_ticks(values: list[float], fmt) -> dict[str, Any]:
    """Tick values and labels for a log axis over `values`: 1, 2 and 5 of each decade between
    the smallest and the largest (only the powers of ten where that makes more than 8), so
    that no minor digits crowd the axis."""
    import math

    lo, hi = min(values), max(values)
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [m * 10.0**e for e in range(first, last + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo / 1.5 <= t <= hi * 1.5]
    if len(ticks) < 3:  # a narrow range: every whole multiple of its decade
        ticks = [m * 10.0**e for e in range(first, last + 1) for m in range(1, 10)]
        ticks = [t for t in ticks if lo / 1.1 <= t <= hi * 1.1] or [10.0**first]
    if len(ticks) > 8:
        ticks = [t for t in ticks if round(t / 10 ** math.floor(math.log10(t)), 6) == 1] or ticks
    return {"tickvals": ticks, "ticktext": [fmt(t) for t in ticks]}


def _plain(v: float) -> str:
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def _money(v: float) -> str:
    return "$" + _plain(v)


X_TITLES = {
    "batch size": "batch size (requests decoded together)",
    "streams": "streams (requests kept in flight)",
    "in flight": "requests in flight (average)",
}


def cost_figure(cost: Any, *others: Cost):
    """Plotly: $ per million tokens (above) and the TPOT p50 each setting costs a user (below)
    against the batch size / streams, one colour per Cost (module docstring). Lesson 10."""
    from plotly.subplots import make_subplots

    costs = _check([cost, *others] if isinstance(cost, Cost) else list(cost) + list(others))
    rows = cost_data(costs)
    title = "what a token costs, and what each user waits for it"
    if not any(r["x"] is not None and r["x"] > 0 for r in rows):
        return empty_figure(
            title,
            "no setting to draw against: price a batch sweep or "
            "load runs (a throughput alone has no batch size)",
        )
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=(
            "$ per million tokens: output (solid), input (dotted)",
            "the wait between a user's tokens: TPOT p50",
        ),
    )
    for k, c in enumerate(costs):
        _add_series(fig, k, c, rows)
    _cost_axes(fig, title, costs, rows)
    return fig


def _add_series(fig, k: int, c: Cost, rows: list[dict]) -> None:
    """The `k`-th measurement's lines: output and input $ (above), TPOT p50 (below)."""
    import plotly.graph_objects as go

    colour = palette.CYCLE[k % len(palette.CYCLE)]
    name = series_name(c)
    points = sorted(
        (r for r in rows if r["measurement"] == k and r["x"] is not None and r["x"] > 0),
        key=lambda r: r["x"],
    )
    if not points:
        return

    def line(
        pts: list,
        key: str,
        row: int,
        label: str,
        dash: Optional[str],
        size: int,
        symbol: Optional[str],
        legend: Optional[bool],
    ) -> None:
        """One line of this measurement: `key`'s medians (with spreads) against x."""
        if pts:
            fig.add_trace(
                go.Scatter(
                    x=[p["x"] for p in pts],
                    y=[p[key]["median"] for p in pts],
                    mode="lines+markers",
                    name=esc(label),
                    legendgroup=str(k),
                    showlegend=legend,
                    line={"color": colour, "dash": dash},
                    marker={"color": colour, "size": size, "symbol": symbol},
                    error_y=_bars(pts, key),
                    text=[_hover(p) for p in pts],
                    hovertemplate="%{text}<extra></extra>",
                ),
                row,
                1,
            )

    line(points, "output", 1, name, None, 8, None, None)
    line(
        [p for p in points if p["input"] is not None],
        "input",
        1,
        f"{name}: input",
        "dot",
        6,
        "diamond",
        False,
    )
    line(
        [p for p in points if p["tpot_ms"] is not None],
        "tpot_ms",
        2,
        f"{name}: TPOT",
        None,
        8,
        None,
        False,
    )


def _cost_axes(fig, title: str, costs: list[Cost], rows: list[dict]) -> None:
    """The layout and both panels' log axes, ticked at the values drawn."""
    names = {c.x_name for c in costs if c.x_name}
    x_title = (
        X_TITLES.get(names.pop(), "")
        if len(names) == 1
        else "batch size, streams or requests in flight"
    )
    extra = LEGEND_ROW_PX * (len(costs) - 1)  # the legend: one measurement per row
    fig.update_layout(
        **plotly_layout(title, height=560 + extra, margin={"b": LEGEND_BELOW_PX + extra, "l": 70})
    )
    fig.update_layout(legend={"orientation": "v"})
    drawn = [r for r in rows if r["x"] is not None and r["x"] > 0]
    xs = sorted({r["x"] for r in drawn})
    x_ticks = (
        {"tickvals": xs, "ticktext": [f"{x:g}" if x == int(x) else f"{x:.2g}" for x in xs]}
        if len(xs) <= 6
        else log_ticks(xs, _plain)
    )
    dollars = [
        r[k][e]
        for r in drawn
        for k in ("output", "input")
        if r[k] is not None
        for e in ("low", "high")
    ]
    waits = [r["tpot_ms"][e] for r in drawn if r["tpot_ms"] is not None for e in ("low", "high")]
    fig.update_xaxes(type="log", **x_ticks)
    fig.update_xaxes(title={"text": x_title, "standoff": 8}, automargin=True, row=2, col=1)
    fig.update_yaxes(
        type="log",
        title={"text": "$ / million tokens", "standoff": 6},
        automargin=True,
        row=1,
        col=1,
        **log_ticks(dollars, _money),
    )
    fig.update_yaxes(
        type="log",
        title={"text": "ms per token", "standoff": 6},
        automargin=True,
        row=2,
        col=1,
        **(log_ticks(waits, _plain) if waits else {}),
    )
