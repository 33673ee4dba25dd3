"""A quantized KV cache on the long-context wall: step time against the bytes it reads, one line
per cache precision (lesson 11).

For a `kv_quant_decode` sweep (`viz.perf.kv_quant_sweep`): across, the bytes one step must
read at least (weights + the KV cache at its precision, scales included); up, the measured
step with the middle half of its runs. Each cache's line starts at the step over an empty
cache (the weights alone, timed beside its steps) and goes through its contexts: the float
cache's goes far right (its bytes grow ×4 to ×8 faster), a quantized cache's stays left — and,
where its step rises more steeply anyway, the bytes it saved did not buy time. The memory
floor (bytes ÷ the machine's measured read bandwidth) is drawn under them when peaks are given.
"""

from __future__ import annotations

import statistics
from typing import Any, Optional

from viz.perf.kv_quant import cache_names, check_kv_quant_sweep
from viz.perf.machine.peaks import Peaks
from viz.perf.table import Sweep
from viz.views import palette
from viz.views.base import plotly_layout
from viz.views.sweeps import sweep_title

COLOURS = {
    "float32": palette.MUTED,
    "fp8": palette.PREFILL,
    "int4": palette.DECODE,
    "int2": palette.ACCENT,
}


def kv_quant_data(
    sweep: Sweep, peaks: Optional[Peaks] = None, float_sweep: Optional[Sweep] = None
) -> dict[str, Any]:
    """The numbers `kv_quant_figure` draws: per cache name, its points (the empty cache first,
    then each context): context, bytes (MB), step (ms) with the middle half of its runs; and,
    with `peaks`, the memory floor (ms) at the least and the most bytes drawn. `float_sweep`:
    a `long_decode` sweep (`viz.perf.long_decode_sweep`) drawn as the float32 line, for a
    kv_quant sweep measured without the float cache (lesson 11)."""
    check_kv_quant_sweep(sweep)
    if len(sweep) < 1:
        raise ValueError("this kv_quant_decode sweep has no rows: measure one")
    names = cache_names(sweep)
    steps = sweep.spread("decode_step_s")
    rows = sweep.rows()
    lines: dict[str, dict[str, list]] = {}
    if float_sweep is not None:
        if getattr(float_sweep, "name", None) != "long_decode":
            raise ValueError("float_sweep must be a long_decode sweep (viz.perf.long_decode_sweep)")
        if "float32" in names.values():
            raise ValueError(
                "this kv_quant sweep has its own float32 rows: draw it without float_sweep"
            )
        f_steps = float_sweep.spread("decode_step_s")
        lines["float32"] = {
            "context_tokens": float_sweep.column("context_tokens"),
            "step_mb": [b / 1e6 for b in float_sweep.column("step_bytes")],
            "step_ms": [s.median * 1e3 for s in f_steps],
            "low_ms": [s.low * 1e3 for s in f_steps],
            "high_ms": [s.high * 1e3 for s in f_steps],
        }
    for bits, name in names.items():
        mine = [(r, s) for r, s in zip(rows, steps) if r["kv_bits"] == bits]
        empty = statistics.median(r["empty_step_s"] for r, _ in mine)
        lines[name] = {
            "context_tokens": [0] + [r["context_tokens"] for r, _ in mine],
            "step_mb": [mine[0][0]["weight_bytes"] / 1e6]
            + [r["step_bytes"] / 1e6 for r, _ in mine],
            "step_ms": [empty * 1e3] + [s.median * 1e3 for _, s in mine],
            "low_ms": [empty * 1e3] + [s.low * 1e3 for _, s in mine],
            "high_ms": [empty * 1e3] + [s.high * 1e3 for _, s in mine],
        }
    every = [mb for line in lines.values() for mb in line["step_mb"]]
    floor = None
    if peaks is not None:
        floor = {
            "step_mb": [min(every), max(every)],
            "floor_ms": [
                min(every) * 1e6 / peaks.bytes_per_s * 1e3,
                max(every) * 1e6 / peaks.bytes_per_s * 1e3,
            ],
        }
    return {"lines": lines, "floor": floor}


def kv_quant_figure(
    sweep: Sweep, peaks: Optional[Peaks] = None, float_sweep: Optional[Sweep] = None
):
    """Plotly: each cache's decode step against the bytes it must read (see the module
    docstring); `float_sweep` as in `kv_quant_data`."""
    import plotly.graph_objects as go

    d = kv_quant_data(sweep, peaks, float_sweep)
    fig = go.Figure()
    if d["floor"] is not None:
        fig.add_trace(
            go.Scatter(
                x=d["floor"]["step_mb"],
                y=d["floor"]["floor_ms"],
                mode="lines",
                line={"color": palette.FORMULA, "dash": "dash"},
                name=f"memory floor (bytes ÷ {peaks.bytes_per_s / 1e9:.0f} GB/s read peak)",
            )
        )
    right = max(line["step_mb"][-1] for line in d["lines"].values())
    for i, (name, line) in enumerate(d["lines"].items()):
        colour = COLOURS.get(name, palette.CYCLE[i % len(palette.CYCLE)])
        last = len(line["step_mb"]) - 1
        # one label per line, at its longest context (the empty-cache points coincide)
        text = [""] * last + [f"{name}, {line['context_tokens'][-1]:,} cached"]
        fig.add_trace(
            go.Scatter(
                x=line["step_mb"],
                y=line["step_ms"],
                mode="lines+markers+text",
                name=name,
                # the line that reaches furthest right labelled to its left (inside the plot)
                text=text,
                textposition=(
                    "top left"
                    if line["step_mb"][-1] >= right
                    else "top right"
                    if i % 2
                    else "bottom right"
                ),
                customdata=line["context_tokens"],
                line={"color": colour},
                marker={"color": colour, "size": 8},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [h - m for h, m in zip(line["high_ms"], line["step_ms"])],
                    "arrayminus": [m - lo for m, lo in zip(line["step_ms"], line["low_ms"])],
                },
                hovertemplate=f"{name}, %{{customdata:,}} cached: %{{x:.0f}} MB to read, "
                "%{y:.1f} ms<extra></extra>",
            )
        )
    fig.update_layout(
        **plotly_layout(
            f"quantized KV cache: decode step against the bytes it reads: {sweep_title(sweep)}",
            height=440,
        )
    )
    every = [mb for line in d["lines"].values() for mb in line["step_mb"]]
    lo, hi = min(every), max(every)
    pad = 0.12 * (hi - lo) if hi > lo else 0.1 * hi
    fig.update_xaxes(
        title="bytes one step must read: weights + KV cache at its precision (MB)",
        range=[lo - pad, hi + pad],
    )
    fig.update_yaxes(title="one decode step (ms)", rangemode="tozero")
    return fig
