"""A decode step eager and compiled: three bars per measurement (`viz.perf.compiled`).

One panel per `viz.perf.compiled.CompiledStep` (lesson 08's fixed-cost model measured here,
the course model from a shipped reference...), each with its own millisecond axis (a 64-wide
model's step is ~20× shorter than the course model's). Three horizontal bars: eager with a
growing cache (the decode loop `viz.record` runs), eager with the static cache, and compiled
with the static cache; each with its spread (the middle half of the steps) as an error bar.
The panel's title gives the compile time. `compiled_data` returns the numbers drawn.

On a GPU an eager step's wall time is the host's (`viz.perf.gpu`), so lesson 13 draws the GPU's
steps with `graph_step_figure` instead: per model the memory floor, the eager step's kernels
summed (the GPU's own time) and the step replayed as a CUDA graph; no eager wall.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

from viz.perf.compiled import CompiledStep
from viz.perf.gpu import GraphStep
from viz.views import palette
from viz.views.base import plotly_layout

WAYS = ("recorded", "eager", "compiled")
WAY_LABELS = {
    "recorded": "eager, growing cache",
    "eager": "eager, static cache",
    "compiled": "compiled, static cache",
}
COLOURS = {"recorded": palette.MUTED, "eager": palette.DECODE, "compiled": palette.PREFILL}


def _check(runs: Any) -> list[CompiledStep]:
    items = [runs] if isinstance(runs, CompiledStep) else runs
    if (
        not isinstance(items, (list, tuple))
        or not items
        or not all(isinstance(r, CompiledStep) for r in items)
    ):
        raise ValueError(
            f"expected a viz CompiledStep or a non-empty list of them, not "
            f"{type(runs).__name__}: measure one with "
            "viz.perf.measure_compiled_step(lm)"
        )
    return list(items)


def panel_title(run: CompiledStep) -> str:
    where = "reference" if run.source else "measured here"
    return (
        f"{run.n_layers} layers × {run.hidden_size} ({where}): compiled in "
        f"{run.compile_s:.0f} s, ×{run.speedup.median:.2f}"
    )


def compiled_data(runs: Union[CompiledStep, Sequence[CompiledStep]]) -> dict[str, Any]:
    """What `compiled_figure` draws: per panel its title, and per way the step's median, low
    and high (ms)."""
    items = _check(runs)
    return {
        "ways": [WAY_LABELS[w] for w in WAYS],
        "panels": [
            {
                "title": panel_title(r),
                "ms": [getattr(r, w).median * 1e3 for w in WAYS],
                "low_ms": [getattr(r, w).low * 1e3 for w in WAYS],
                "high_ms": [getattr(r, w).high * 1e3 for w in WAYS],
            }
            for r in items
        ],
    }


def compiled_figure(runs: Union[CompiledStep, Sequence[CompiledStep]]):
    """Plotly: one panel per run, three bars each (ms per decode step, with the spread).
    Returned, never displayed."""
    d = compiled_data(runs)
    return _panels_of_bars(
        d["panels"],
        d["ways"],
        [COLOURS[w] for w in WAYS],
        "a decode step, eager and compiled (torch.compile)",
    )


def _panels_of_bars(panels: list[dict], names: Sequence[str], colours: Sequence[str], title: str):
    """One panel per entry of `panels` (its title; per bar its ms, low and high), the same
    horizontal bars `names` in each, with their spreads: `compiled_figure` and
    `graph_step_figure`."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=len(panels),
        cols=1,
        subplot_titles=[p["title"] for p in panels],
        vertical_spacing=0.5 / len(panels) if len(panels) > 1 else 0.1,
    )
    for i, p in enumerate(panels, start=1):
        for k, name in enumerate(names):
            fig.add_trace(
                go.Bar(
                    y=[name],
                    x=[p["ms"][k]],
                    orientation="h",
                    name=name,
                    marker_color=colours[k],
                    showlegend=False,
                    error_x={
                        "type": "data",
                        "symmetric": False,
                        "array": [p["high_ms"][k] - p["ms"][k]],
                        "arrayminus": [p["ms"][k] - p["low_ms"][k]],
                    },
                    hovertemplate=f"{name}: %{{x:.2f}} ms<extra></extra>",
                ),
                row=i,
                col=1,
            )
        fig.update_xaxes(
            title="ms per decode step" if i == len(panels) else None,
            rangemode="tozero",
            row=i,
            col=1,
        )
        fig.update_yaxes(automargin=True, autorange="reversed", row=i, col=1)
    fig.update_layout(
        **plotly_layout(title, height=150 + 170 * len(panels), showlegend=False, margin={"l": 20})
    )
    for annotation in fig.layout.annotations:  # the panel titles: the figure's font, smaller
        annotation.font = {"size": 12}
    return fig


GRAPH_BARS = (
    "memory floor (counted bytes ÷ measured read)",
    "GPU busy, eager (its kernels summed)",
    "CUDA-graph step (launched at once)",
)
GRAPH_COLOURS = (palette.MUTED, palette.DECODE, palette.PREFILL)


def graph_step_data(steps: Sequence[GraphStep]) -> dict[str, Any]:
    """What `graph_step_figure` draws: per model its title and three bars (ms, low, high)."""
    if (
        not isinstance(steps, (list, tuple))
        or not steps
        or not all(isinstance(s, GraphStep) for s in steps)
    ):
        raise ValueError(
            f"expected a non-empty list of viz.perf.GraphStep, not "
            f"{type(steps).__name__}: viz.perf.graph_steps() gives the shipped ones"
        )
    panels = []
    for s in steps:
        figures = (s.memory_floor, s.busy, s.graph)
        panels.append(
            {
                "title": f"{s.model}: {s.kernels:,} eager kernels; graph step ÷ their "
                f"sum ×{s.graph_over_busy.median:.2f}",
                "ms": [f.median * 1e3 for f in figures],
                "low_ms": [f.low * 1e3 for f in figures],
                "high_ms": [f.high * 1e3 for f in figures],
            }
        )
    return {"bars": list(GRAPH_BARS), "panels": panels}


def graph_step_figure(steps: Sequence[GraphStep]):
    """Plotly: one panel per model (`viz.perf.graph_steps()`), three bars each: the memory
    floor, the GPU's busy time in the eager step and the CUDA-graph step (ms, with spreads).
    Lesson 13. Returned, never displayed."""
    d = graph_step_data(steps)
    return _panels_of_bars(
        d["panels"],
        d["bars"],
        GRAPH_COLOURS,
        "a decode step on the GPU without the host: its kernels eager, and as a CUDA graph",
    )
