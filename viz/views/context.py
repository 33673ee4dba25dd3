"""Long contexts on the memory wall: decode step time against the bytes a step reads (lesson 11).

One chart for a `long_decode` sweep (`viz.perf.long_decode_sweep`): across, the bytes one
step must read (weights + the KV cache at that context); up, the measured step time. Three
things frame the points, each labelled with its context length:

- the **memory floor**, bytes ÷ the machine's measured read bandwidth (`viz.perf.Peaks`):
  no step can sit below it;
- the **bytes prediction**, the step over an empty cache (timed beside every step) scaled by
  the bytes: what the step would take if time followed bytes alone, at the speed the weights
  were read;
- the measured points, with the middle half of their runs as error bars.

The gap between the measured points and the bytes prediction is what the cache costs beyond
being read once (lesson 11 takes it apart: attention's own time, the cache's copy).
"""

from __future__ import annotations

import statistics
from typing import Any, Optional

from viz.perf.machine.peaks import Peaks
from viz.perf.table import Sweep
from viz.views import palette
from viz.views.base import plotly_layout
from viz.views.sweeps import sweep_title

MAX_LABELS = 5  # points of the long-decode chart that carry their label as text


def _check(sweep: Any) -> Sweep:
    if not isinstance(sweep, Sweep) or sweep.name != "long_decode":
        raise ValueError(
            "expected a long_decode sweep: measure one with viz.perf.long_decode_sweep(lm)"
        )
    if len(sweep) < 2:
        raise ValueError("this long_decode sweep has one context: measure two or more")
    return sweep


def long_decode_data(sweep: Sweep, peaks: Optional[Peaks] = None) -> dict[str, Any]:
    """The numbers `long_decode_figure` draws: per context, bytes (MB), step (ms) and its
    spread, the bytes prediction (ms) and, with `peaks`, the memory floor (ms)."""
    _check(sweep)
    contexts = sweep.column("context_tokens")
    moved = sweep.column("step_bytes")
    steps = sweep.spread("decode_step_s")
    base_bytes = moved[0]
    # the baseline: the step over an empty cache, timed beside every step (older sweeps: the
    # first row's step)
    empty = sweep.columns.get("empty_step_s")
    base_step = statistics.median(empty) if empty else steps[0].median
    return {
        "context_tokens": contexts,
        "step_mb": [b / 1e6 for b in moved],
        "step_ms": [s.median * 1e3 for s in steps],
        "low_ms": [s.low * 1e3 for s in steps],
        "high_ms": [s.high * 1e3 for s in steps],
        "bytes_prediction_ms": [base_step * b / base_bytes * 1e3 for b in moved],
        "floor_ms": (None if peaks is None else [b / peaks.bytes_per_s * 1e3 for b in moved]),
    }


def long_decode_figure(sweep: Sweep, peaks: Optional[Peaks] = None):
    """Plotly: the measured step against the bytes it reads, the bytes prediction and the
    memory floor (see the module docstring)."""
    import plotly.graph_objects as go

    d = long_decode_data(sweep, peaks)
    fig = go.Figure()
    labels = [f"{c:,} cached" for c in d["context_tokens"]]
    # Past MAX_LABELS points (lesson 11's slider adds them) the labels would run into each
    # other: only the two ends keep theirs; every point still names itself on hover.
    shown = (
        labels
        if len(labels) <= MAX_LABELS
        else [t if i in (0, len(labels) - 1) else "" for i, t in enumerate(labels)]
    )
    if d["floor_ms"] is not None:
        fig.add_trace(
            go.Scatter(
                x=d["step_mb"],
                y=d["floor_ms"],
                mode="lines",
                name=f"memory floor (bytes ÷ {peaks.bytes_per_s / 1e9:.0f} GB/s read peak)",
                line={"color": palette.FORMULA, "dash": "dash"},
            )
        )
    fig.add_trace(
        go.Scatter(
            x=d["step_mb"],
            y=d["bytes_prediction_ms"],
            mode="lines",
            name="if time followed bytes (the empty-cache step × the bytes ratio)",
            line={"color": palette.MUTED, "dash": "dot"},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=d["step_mb"],
            y=d["step_ms"],
            mode="lines+markers+text",
            name="measured step",
            text=shown,
            customdata=labels,
            line={"color": palette.DECODE},
            # the first label to the right of its point (clear of the y axis), the last to the left
            textposition=["top right"] + ["top center"] * (len(labels) - 2) + ["top left"],
            marker={"color": palette.DECODE, "size": 8},
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [h - m for h, m in zip(d["high_ms"], d["step_ms"])],
                "arrayminus": [m - lo for m, lo in zip(d["step_ms"], d["low_ms"])],
            },
            hovertemplate="%{customdata}: %{x:.0f} MB read, %{y:.1f} ms<extra></extra>",
        )
    )
    fig.update_layout(
        **plotly_layout(f"decode step against the bytes it reads: {sweep_title(sweep)}", height=420)
    )
    lo, hi = min(d["step_mb"]), max(d["step_mb"])
    pad = 0.08 * (hi - lo)  # room for the end labels inside the plot
    fig.update_xaxes(
        title="bytes one step must read: weights + KV cache (MB)", range=[lo - pad, hi + pad]
    )
    fig.update_yaxes(title="one decode step (ms)", rangemode="tozero")
    return fig


def long_decode_parts(sweep: Sweep, context_tokens: int) -> dict[str, float]:
    """One row of a long_decode sweep taken apart (seconds): the step over an empty cache
    beside it, attention's growth over the empty step's, the cache's concatenation timed
    alone, and what is left of the step in neither."""
    _check(sweep)
    contexts = sweep.column("context_tokens")
    if context_tokens not in contexts:
        raise ValueError(f"no row for {context_tokens} cached tokens; this sweep has {contexts}")
    i, first = contexts.index(context_tokens), 0
    step, empty = sweep.column("decode_step_s")[i], sweep.column("empty_step_s")[i]
    attention = sweep.column("attention_s")[i] - sweep.column("attention_s")[first]
    copy = sweep.column("cache_copy_s")[i]
    return {
        "empty step": empty,
        "attention's growth": max(attention, 0.0),
        "the copy, timed alone": copy,
        "left over": max(step - empty - max(attention, 0.0) - copy, 0.0),
        "step": step,
    }


def long_decode_widget(sweep: Sweep):
    """A slider over the sweep's contexts; for each, the step taken apart as a stacked bar
    (`long_decode_parts`) beside the step over an empty cache. Lesson 11."""
    import ipywidgets as widgets
    import plotly.graph_objects as go

    from viz.views.widgets import LinkedView

    _check(sweep)
    colours = {
        "empty step": palette.MUTED,
        "attention's growth": palette.DECODE,
        "the copy, timed alone": palette.SPECIAL,
        "left over": palette.SKY,
    }

    def render(values):
        c = values["cached tokens"]
        parts = long_decode_parts(sweep, c)
        fig = go.Figure(
            [
                go.Bar(
                    y=["step"], x=[parts[k] * 1e3], orientation="h", name=k, marker_color=colours[k]
                )
                for k in colours
            ]
        )
        kv = sweep.column("kv_bytes")[sweep.column("context_tokens").index(c)]
        return fig.update_layout(
            **plotly_layout(
                f"{c:,} cached tokens ({kv / 1e6:,.0f} MB of keys and values): "
                f"step {parts['step'] * 1e3:.1f} ms",
                height=260,
                barmode="stack",
                xaxis={"title": "ms"},
            )
        )

    slider = widgets.SelectionSlider(
        options=sweep.column("context_tokens"),
        value=sweep.column("context_tokens")[-1],
        description="cached tokens",
        style={"description_width": "initial"},
    )
    return LinkedView({"cached tokens": slider}, [slider], render)
