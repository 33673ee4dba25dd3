"""What one decode step is made of: a profiled step as a stacked bar (lesson 08's fixed cost).

One horizontal bar per `viz.perf.profile.StepProfile` (several: a model at two contexts, two
thread counts, two machines), its segments the categories of `profile_decode_step` — matrix
products, attention, norms, small ops (and, on a GPU, the wait for it) — then the gaps, in
milliseconds per step. A black tick across each bar marks the plain step, measured without
the profiler: how far the bar runs past it is what profiling itself added.
`step_profile_data` returns the numbers drawn.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

from viz.perf.profile import ATTENTION, DEVICE_WAIT, GAPS, MATRIX, NORMS, SMALL, StepProfile
from viz.views import palette
from viz.views.base import plotly_layout

COLOURS = {
    MATRIX: palette.PREFILL,
    ATTENTION: palette.DECODE,
    NORMS: palette.ACCENT,
    SMALL: palette.SKY,
    DEVICE_WAIT: palette.SPECIAL,
    GAPS: palette.MUTED,
}


def _check(profiles: Any) -> list[StepProfile]:
    items = [profiles] if isinstance(profiles, StepProfile) else profiles
    if (
        not isinstance(items, (list, tuple))
        or not items
        or not all(isinstance(p, StepProfile) for p in items)
    ):
        found = type(profiles).__name__
        raise ValueError(
            f"expected a viz StepProfile or a non-empty list of them, not {found}: "
            "measure one with viz.perf.profile.profile_decode_step(lm)"
        )
    return list(items)


def bar_labels(profiles: Sequence[StepProfile]) -> list[str]:
    """A short distinct label per bar: what differs between the profiles."""

    def label(p: StepProfile) -> str:
        return (
            f"{p.model} · {p.context} cached · {p.threads} thread{'s' * (p.threads != 1)}"
            f" · {p.device}"
        )

    labels = [label(p) for p in profiles]
    if len(set(labels)) < len(labels):  # the same settings twice: number them
        labels = [f"{i + 1}. {s}" for i, s in enumerate(labels)]
    return labels


def step_profile_data(profiles: Union[StepProfile, Sequence[StepProfile]]) -> dict[str, Any]:
    """The numbers `step_profile_figure` draws: bar labels, the categories in drawing order and
    each one's ms per step per bar, and each bar's profiled and plain step (ms)."""
    items = _check(profiles)
    order: list[str] = []
    for p in items:
        order += [part.category for part in p.parts if part.category not in order]
    return {
        "labels": bar_labels(items),
        "categories": order,
        "ms": {
            c: [next((x.seconds * 1e3 for x in p.parts if x.category == c), 0.0) for p in items]
            for c in order
        },
        "profiled_ms": [p.profiled_step_s * 1e3 for p in items],
        "plain_ms": [p.step_s * 1e3 for p in items],
    }


def step_profile_figure(profiles: Union[StepProfile, Sequence[StepProfile]]):
    """Plotly: one stacked bar per profile, one trace per category (ms per step), a tick at
    the plain step. Returned, never displayed."""
    import plotly.graph_objects as go

    d = step_profile_data(profiles)
    items = _check(profiles)
    fig = go.Figure()
    for c in d["categories"]:
        shares = [ms / total if total else 0.0 for ms, total in zip(d["ms"][c], d["profiled_ms"])]
        fig.add_trace(
            go.Bar(
                y=d["labels"],
                x=d["ms"][c],
                orientation="h",
                name=c,
                marker_color=COLOURS.get(c, palette.FORMULA),
                customdata=shares,
                hovertemplate=f"{c}: %{{x:.2f}} ms (%{{customdata:.0%}})<extra></extra>",
            )
        )
    one = items[0]
    title = (
        "what one decode step is made of (torch.profiler, ms per step)"
        if len(items) > 1
        else f"what one decode step is made of: {one.title()}"
    )
    fig.update_layout(
        **plotly_layout(
            title, height=max(220, 60 * len(items) + 150), barmode="stack", margin={"l": 20}
        )
    )
    fig.update_layout(legend_traceorder="normal")  # the legend in the bars' order
    # short enough for the narrowest notebook (~650 px); the hover says the rest
    fig.update_xaxes(title="ms per decode step (tick: without the profiler)", rangemode="tozero")
    fig.update_yaxes(automargin=True, autorange="reversed")
    for i, plain in enumerate(d["plain_ms"]):  # the plain step: a tick across its bar
        fig.add_shape(
            type="line",
            x0=plain,
            x1=plain,
            y0=i - 0.45,
            y1=i + 0.45,
            xref="x",
            yref="y",
            line={"color": palette.FORMULA, "width": 2},
        )
    return fig
