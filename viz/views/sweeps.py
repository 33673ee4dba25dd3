"""Sweep views: what one measured table (`viz.perf.Sweep`) says, as a plotly figure.

One function per sweep kind, and `sweep_figure` that picks the right one. Each takes an
optional `other` sweep of the same kind (e.g. a shipped GPU or CPU one, see
`viz.perf.load_reference`) drawn beside it in a second colour on the same axes.
`sweep_data` returns the numbers a figure draws (for tests and exercises).
Lessons 03 (prompt length), 04 (context length), 05 (cache), 06 (batch size), 10 (long
prefill, long decode, prefix cache, chat turns).
"""

from __future__ import annotations

import textwrap
from typing import Any, Optional

from viz.perf.machine.peaks import Peaks
from viz.perf.table import Sweep
from viz.spread import Spread
from viz.views import palette
from viz.views.base import (
    LEGEND_BELOW_PX,
    LEGEND_ROW_PX,
    device_text,
    finite,
    plotly_layout,
    title_text,
)
from viz.views.text import esc

# For each kind: the panels drawn, each (title, y axis title, [(column, scale, name)]).
PANELS: dict[str, list[tuple[str, str, list[tuple[str, float, str]]]]] = {
    "prompt_length": [
        (
            "time to first token",
            "ms",
            [("ttft_s", 1e3, "TTFT"), ("prefill_forward_s", 1e3, "prefill forward pass")],
        ),
        ("prefill speed", "prompt tokens / s", [("prefill_tokens_per_s", 1, "prefill tokens/s")]),
        ("arithmetic done", "GFLOP/s", [("achieved_flops_per_s", 1e-9, "achieved GFLOP/s")]),
    ],
    "context_length": [
        (
            "one decode step",
            "ms",
            [
                ("decode_step_s", 1e3, "step (forward + choose)"),
                ("decode_forward_s", 1e3, "forward pass"),
            ],
        ),
        ("KV cache", "MB", [("kv_bytes", 1e-6, "KV cache")]),
        ("memory traffic", "GB/s", [("achieved_bytes_per_s", 1e-9, "achieved GB/s")]),
    ],
    "cache": [
        (
            "cost of each token",
            "ms",
            [("cached_step_s", 1e3, "with KV cache"), ("uncached_step_s", 1e3, "without")],
        ),
        (
            "time since the request",
            "s",
            [("cached_elapsed_s", 1, "with KV cache"), ("uncached_elapsed_s", 1, "without")],
        ),
        (
            "work per token",
            "GFLOP",
            [("cached_flops", 1e-9, "with KV cache"), ("uncached_flops", 1e-9, "without")],
        ),
    ],
    "batch_size": [
        (
            "throughput: all requests together",
            "tokens / s",
            [
                ("aggregate_decode_tokens_per_s", 1, "decode tokens/s"),
                ("aggregate_tokens_per_s", 1, "end to end tokens/s"),
            ],
        ),
        ("latency: each request", "ms per token", [("decode_step_s", 1e3, "decode step")]),
    ],
    "long_prefill": [
        (
            "one prefill, split",
            "s",
            [
                ("prefill_s", 1, "whole pass"),
                ("attention_s", 1, "attention (grows ∝ n²)"),
                ("rest_s", 1, "the rest (grows ∝ n)"),
            ],
        ),
        ("time per prompt token", "ms", [("prefill_s_per_token", 1e3, "ms per token")]),
        (
            "attention's share",
            "%",
            [
                ("attention_share", 100, "measured (time)"),
                ("counted_attention_share", 100, "counted (FLOPs)"),
            ],
        ),
    ],
    "long_decode": [
        (
            "one decode step",
            "ms",
            [("decode_step_s", 1e3, "decode step"), ("attention_s", 1e3, "of it, attention")],
        ),
        (
            "bytes a step reads",
            "MB",
            [("step_bytes", 1e-6, "weights + KV cache"), ("kv_bytes", 1e-6, "KV cache")],
        ),
    ],
    "prefix_cache": [
        (
            "time to first token",
            "ms",
            [("ttft_full_s", 1e3, "prefix recomputed"), ("ttft_cached_s", 1e3, "prefix reused")],
        ),
        ("speed-up from the cached prefix", "×", [("speedup", 1, "recomputed ÷ reused")]),
    ],
    "chat_turns": [
        (
            "time to first token",
            "ms",
            [
                ("ttft_full_s", 1e3, "history recomputed"),
                ("ttft_cached_s", 1e3, "history's KV kept"),
            ],
        ),
        (
            "tokens per turn",
            "tokens",
            [
                ("prompt_tokens", 1, "sent (the whole history)"),
                ("new_tokens", 1, "computed with the kept KV"),
            ],
        ),
    ],
}
X_TITLES = {
    "prompt_length": "prompt length (tokens)",
    "long_prefill": "prompt length (tokens)",
    "long_decode": "tokens already in the KV cache",
    "prefix_cache": "share of the prompt already cached",
    "chat_turns": "turn of the conversation",
    "context_length": "tokens already in the KV cache",
    "cache": "sequence length (tokens)",
    "batch_size": "batch size (requests)",
}
# A rate column computed from a timed one (amount ÷ seconds, row by row): its spread follows
# from the timed column's (`viz.spread.Spread.rate`). Amount: a column, or 1.
RATES: dict[str, tuple[Optional[str], str]] = {
    "prefill_tokens_per_s": ("prompt_tokens", "prefill_forward_s"),
    "achieved_flops_per_s": ("prefill_flops", "prefill_forward_s"),
    "decode_tokens_per_s": (None, "decode_step_s"),
    "request_tokens_per_s": (None, "decode_step_s"),
    "aggregate_decode_tokens_per_s": ("batch_size", "decode_step_s"),
}
SERIES_COLOURS = [palette.PREFILL, palette.DECODE, palette.SKY]
KIND_COLOUR = {
    "prompt_length": palette.PREFILL,
    "context_length": palette.DECODE,
    "long_prefill": palette.PREFILL,
    "long_decode": palette.DECODE,
    "prefix_cache": palette.PREFILL,
    "chat_turns": palette.PREFILL,
    "batch_size": palette.DECODE,
}
CACHE_COLOURS = {"cached": palette.DECODE, "uncached": palette.MUTED}


def _check(sweep: Any, kind: Optional[str] = None) -> Sweep:
    if not isinstance(sweep, Sweep):
        raise ValueError(
            f"expected a viz.perf.Sweep, not {type(sweep).__name__}: run a sweep "
            "such as viz.perf.prompt_length_sweep(lm) or load one with "
            "viz.perf.load_reference(name)"
        )
    if kind and sweep.name != kind:
        raise ValueError(
            f"this view draws a {kind} sweep, not a {sweep.name} one: "
            "use viz.views.sweeps.sweep_figure, which picks the right view"
        )
    if sweep.name not in PANELS:
        raise ValueError(f"no view for sweeps of kind {sweep.name!r}")
    if len(sweep) == 0:
        raise ValueError("this sweep has no rows: run it with at least one setting")
    return sweep


def sweep_title(sweep: Sweep) -> str:
    parts = [sweep.label] if sweep.label else []
    parts += [
        sweep.model.name + (" (random weights)" if sweep.model.random_weights else ""),
        device_text(sweep.environment),
    ]
    if str(sweep.settings.get("cache", "")).startswith("synthetic"):
        parts.append("KV cache of random keys and values")
    return " · ".join(parts)


RUN_TITLE_CHARS = 44  # a run's name above its legend column, wrapped: two columns fit 900 px


def run_title_lines(sweep: Sweep, dash: str) -> list[str]:
    """The name of one run of a two-run figure, for its legend column: label and device, and
    how its lines are drawn; wrapped so that two columns sit side by side."""
    name = " · ".join(p for p in (sweep.label, device_text(sweep.environment)) if p)
    return textwrap.wrap(f"{name} ({'solid' if dash == 'solid' else 'dashed'})", RUN_TITLE_CHARS)


def column_spreads(sweep: Sweep, column: str) -> Optional[list[Optional[Spread]]]:
    """One spread per row of `column` (None where the sweep kept none): a timed column's own
    (`Sweep.spreads`), or a rate's, from the timed column it divides by (`RATES`)."""
    if column in sweep.spreads:
        return list(sweep.spreads[column])
    if column not in RATES or RATES[column][1] not in sweep.spreads:
        return None
    amount, timed = RATES[column]
    amounts = sweep.column(amount) if amount else [1] * len(sweep)
    out: list[Optional[Spread]] = []
    for a, s in zip(amounts, sweep.spreads[timed]):
        out.append(s.rate(a) if a is not None and a > 0 and s.low > 0 else None)
    return out


def sweep_data(sweep: Sweep) -> list[dict[str, Any]]:
    """The series a sweep figure draws: [{panel, name, column, x, y, low, high}] with y in
    the panel's unit (ms, MB, GFLOP/s ...), in drawing order. low/high: each row's spread
    (the middle half of its runs) in the same unit, or None where the sweep kept none."""
    _check(sweep)
    x = sweep.column(sweep.x)
    out = []
    for p, (title, _, series) in enumerate(PANELS[sweep.name]):
        for column, scale, name in series:
            y = [None if v is None else v * scale for v in sweep.column(column)]
            spreads = column_spreads(sweep, column)
            low = high = None
            if spreads is not None:
                low = [None if s is None else s.low * scale for s in spreads]
                high = [None if s is None else s.high * scale for s in spreads]
            out.append(
                {
                    "panel": p,
                    "title": title,
                    "name": name,
                    "column": column,
                    "x": x,
                    "y": y,
                    "low": low,
                    "high": high,
                }
            )
    return out


def error_bars(series: dict[str, Any]) -> Optional[dict[str, Any]]:
    """Plotly's error_y for a series of `sweep_data`: from each point down to its spread's low
    end and up to its high end (None when the series has no spreads)."""
    if series["low"] is None:
        return None
    up, down = [], []
    for y, lo, hi in zip(series["y"], series["low"], series["high"]):
        ok = None not in (y, lo, hi)
        up.append(max(hi - y, 0.0) if ok else 0.0)
        down.append(max(y - lo, 0.0) if ok else 0.0)
    return {
        "type": "data",
        "symmetric": False,
        "array": up,
        "arrayminus": down,
        "thickness": 1.2,
        "width": 4,
    }


def _colour(sweep: Sweep, column: str, index: int) -> str:
    if sweep.name == "cache":
        return CACHE_COLOURS["uncached" if column.startswith("uncached") else "cached"]
    if index == 0:
        return KIND_COLOUR.get(sweep.name, palette.PREFILL)
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def sweep_figure(sweep: Sweep, other: Optional[Sweep] = None, *, peaks: Optional[Peaks] = None):
    """Plotly: one panel per measured quantity against the swept setting.

    other: a second sweep of the same kind, drawn dashed in another colour (e.g. a
        shipped GPU sweep beside the learner's CPU one); its x values may differ.
    peaks: draw the measured peak (FLOP/s for a prompt-length sweep, bytes/s for a
        context-length sweep) as a line on the last panel: how far from the ceiling.
    Where a sweep kept its spreads (`Sweep.spread`), each point has error bars: the middle
    half of its runs (a rate's, from the time it divides).
    """
    from plotly.subplots import make_subplots

    _check(sweep)
    if other is not None:
        _check(other, sweep.name)
    panels = PANELS[sweep.name]
    fig = make_subplots(
        rows=1, cols=len(panels), horizontal_spacing=0.09, subplot_titles=[t for t, _, _ in panels]
    )
    runs = [(sweep, "solid")] + ([(other, "dash")] if other else [])
    _add_series(fig, sweep, other, runs)
    if peaks is not None and sweep.name in ("prompt_length", "context_length"):
        _add_peak(fig, sweep, other, peaks, len(panels))
    # The legend sits in its own rows under the x axis titles: one row, or with two runs one
    # column per run (its name, then its series), as tall as the longer column.
    rows = 1
    if other is not None:
        rows = max(
            sum(t.showlegend is not False for t in fig.data if t.legendgroup == g)
            + len(run_title_lines(s, dash))
            for g, (s, dash) in zip(("run 0", "run 1"), runs)
        )
    extra = LEGEND_ROW_PX * (rows - 1)
    title = f"{sweep.name.replace('_', ' ')} sweep: {sweep_title(sweep)}"
    # A wrapped title (long labels) needs more room above the panels' own titles.
    above = 36 * (title_text(title)[1] - 1)
    fig.update_layout(
        **plotly_layout(
            title,
            height=400 + extra + above,
            margin={"b": LEGEND_BELOW_PX + extra, "t": 60 + above},
        )
    )
    if other is not None:
        fig.update_layout(legend={"groupclick": "toggleitem", "tracegroupgap": 0, "valign": "top"})
    for c, (_, unit, _) in enumerate(panels, start=1):
        fig.update_xaxes(title=X_TITLES[sweep.name], row=1, col=c)
        # the title placed past the tick labels, however wide (0.0006 s: six characters)
        fig.update_yaxes(
            title={"text": unit, "standoff": 6}, automargin=True, rangemode="tozero", row=1, col=c
        )
    return fig


def _add_series(fig, sweep: Sweep, other: Optional[Sweep], runs: list[tuple[Sweep, str]]) -> None:
    """`sweep_figure`'s lines: every series of every run (`runs`: each sweep and its dash), in
    its panel, with its error bars."""
    import plotly.graph_objects as go

    named: set[tuple[int, str]] = set()  # one legend entry per series and run, though a
    #   series may span several panels
    for k, (s, dash) in enumerate(runs):
        counts: dict[int, int] = {}
        group = {}
        if other is not None:  # the legend in one column per run, under the run's name
            group = {
                "legendgroup": f"run {k}",
                "legendgrouptitle": {
                    "text": "<br>".join(esc(line) for line in run_title_lines(s, dash))
                },
            }
        for series in sweep_data(s):
            i = counts.get(series["panel"], 0)
            counts[series["panel"]] = i + 1
            colour = palette.ACCENT if k else _colour(s, series["column"], i)
            name = series["name"]
            fig.add_trace(
                go.Scatter(
                    x=series["x"],
                    y=finite(series["y"]),
                    mode="lines+markers",
                    name=name,
                    line={"color": colour, "dash": "dot" if i else dash},
                    marker={"color": colour, "size": 7},
                    error_y=error_bars(series),
                    customdata=(
                        None
                        if series["low"] is None
                        else [[lo, hi] for lo, hi in zip(series["low"], series["high"])]
                    ),
                    legendgroup=group.get("legendgroup", name),
                    legendgrouptitle=group.get("legendgrouptitle"),
                    showlegend=(k, name) not in named,
                    hovertemplate=f"{series['name']}<br>{sweep.x} %{{x}}: %{{y:.4g}}"
                    + (
                        " (middle half of the runs: %{customdata[0]:.4g}–%{customdata[1]:.4g})"
                        if series["low"] is not None
                        else ""
                    )
                    + "<extra></extra>",
                ),
                1,
                series["panel"] + 1,
            )
            named.add((k, name))


def _add_peak(fig, sweep: Sweep, other: Optional[Sweep], peaks: Peaks, panel: int) -> None:
    """The measured peak as a dashed line across panel `panel` (the last): FLOP/s for a
    prompt-length sweep, bytes/s for a context-length one."""
    import plotly.graph_objects as go

    value, what = (
        (peaks.flops_per_s * 1e-9, "measured peak GFLOP/s")
        if sweep.name == "prompt_length"
        else (peaks.bytes_per_s * 1e-9, "measured peak GB/s")
    )
    x = sweep.column(sweep.x)
    fig.add_trace(
        go.Scatter(
            x=[min(x), max(x)],
            y=[value, value],
            mode="lines",
            name=what,
            line={"color": palette.FORMULA, "dash": "dash"},
            legendgroup="run 0" if other is not None else what,
        ),
        1,
        panel,
    )


def throughput_latency_figure(sweep: Sweep, other: Optional[Sweep] = None):
    """Plotly: the throughput/latency trade-off of a batch-size sweep — each request's time
    per token (x) against all requests' tokens per second (y), one point per batch size."""
    import plotly.graph_objects as go

    _check(sweep, "batch_size")
    if other is not None:
        _check(other, "batch_size")
    fig = go.Figure()
    for k, s in enumerate([sweep] + ([other] if other else [])):
        colour = palette.ACCENT if k else palette.DECODE
        b = s.column("batch_size")
        fig.add_trace(
            go.Scatter(
                x=[v * 1e3 for v in s.column("decode_step_s")],
                y=s.column("aggregate_decode_tokens_per_s"),
                mode="lines+markers+text",
                text=[f"B={v}" for v in b],
                textposition="top left",
                name=s.label or device_text(s.environment),
                line={"color": colour},
                marker={"color": colour, "size": 8},
                hovertemplate="batch %{text}: %{x:.1f} ms per token each, %{y:.1f} tokens/s in all"
                "<extra></extra>",
            )
        )
    fig.update_layout(**plotly_layout(f"throughput vs latency: {sweep_title(sweep)}", height=420))
    fig.update_xaxes(title="each request: ms per token (lower is better)", rangemode="tozero")
    fig.update_yaxes(title="all requests: tokens / s (higher is better)", rangemode="tozero")
    return fig
