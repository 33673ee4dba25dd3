"""Batch timeline: when each request of one batch got each of its tokens.

`viz.perf.generate_batch` runs B requests through the decode loop together: one prefill pass
over every prompt, then one forward pass per step that gives every request its next token. So
all B requests receive their k-th token at the same moment, and each step takes longer the
bigger the batch. Beside another run (e.g. the same prompt alone, a batch of 1), the view also
shows when each request would have finished had the requests been served one after another.
Used in lesson 06 (batching).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from viz.views import palette
from viz.views.base import new_figure, plotly_layout


@dataclass(frozen=True)
class BatchTimeline:
    """Token arrival times of one batch (ms from the start of the prefill)."""

    batch_size: int
    prefill_ms: float  # the prefill forward pass (all prompts at once)
    ttft_ms: float  # every request's first token
    token_ms: list[float]  # when the k-th token of every request arrived (k = 0, 1, ...):
    #   TTFT, then + each step's duration (the clock reads between steps are left out)
    step_ms: list[float]  # each decode step's duration (forward + choosing)
    end_ms: float  # every request's last token
    alone_end_ms: Optional[float]  # one request alone, start to last token (from `other`)
    alone_batch: Optional[int]  # the batch size `other` ran with (1 for "alone")

    def one_after_another_ms(self) -> list[float]:
        """When request r would get its last token if the B requests were served one after
        another at the speed of `other` ((r + 1) × its end-to-end time); [] without `other`."""
        if self.alone_end_ms is None:
            return []
        return [(r + 1) * self.alone_end_ms for r in range(self.batch_size)]

    def title(self) -> str:
        t = (
            f"Batch of {self.batch_size}: all {self.batch_size} requests get token k at the same "
            f"moment; the last arrives at {self.token_ms[-1]:.0f} ms"
        )
        if self.alone_end_ms is not None and self.batch_size > 1:
            t += (
                f" (one after another: the last request would finish at "
                f"{self.one_after_another_ms()[-1]:.0f} ms)"
            )
        return t


def _check(run: Any, name: str = "run"):
    from viz.perf.batch import BatchRun

    if not isinstance(run, BatchRun):
        raise ValueError(
            f"{name} must be a viz.perf.BatchRun from viz.perf.generate_batch(lm, "
            f"prompts, max_new_tokens), not {type(run).__name__}"
        )
    return run


def batch_timeline_data(run, other=None) -> BatchTimeline:
    """Token arrival times of `run` (a `viz.perf.BatchRun`); `other`: a run to compare
    with (usually the batch of 1), for the one-after-another finishing times. Lesson 06."""
    _check(run)
    if other is not None:
        _check(other, "other")
    times = [run.ttft_s]
    for s in run.step_s:
        times.append(times[-1] + s)
    return BatchTimeline(
        batch_size=run.batch_size,
        prefill_ms=run.prefill_forward_s * 1e3,
        ttft_ms=run.ttft_s * 1e3,
        token_ms=[t * 1e3 for t in times],
        step_ms=[s * 1e3 for s in run.step_s],
        end_ms=run.end_to_end_s * 1e3,
        alone_end_ms=None if other is None else other.end_to_end_s * 1e3,
        alone_batch=None if other is None else other.batch_size,
    )


def batch_timeline_figure(run, other=None):
    """Plotly: one row per request — the prefill bar, then a mark at each token's arrival — and,
    with `other`, a grey bar to when each request would have finished served one after another.
    Lesson 06."""
    import plotly.graph_objects as go

    d = batch_timeline_data(run, other)
    rows = [f"request {r}" for r in range(d.batch_size)]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=[d.ttft_ms] * d.batch_size,
            y=rows,
            base=[0] * d.batch_size,
            orientation="h",
            name="prefill, then the first token",
            marker={"color": palette.PREFILL},
            width=0.5,
            hovertemplate="%{y}: prefill + first token, %{x:.1f} ms<extra></extra>",
        )
    )
    xs, ys, ks = [], [], []
    for r in rows:
        for k, t in enumerate(d.token_ms[1:], start=1):
            xs.append(t)
            ys.append(r)
            ks.append(k)
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            name="a decode token arrives",
            marker={
                "color": palette.DECODE,
                "size": 9,
                "symbol": "line-ns",
                "line": {"width": 3, "color": palette.DECODE},
            },
            customdata=ks,
            hovertemplate="%{y}: token %{customdata} at %{x:.1f} ms<extra></extra>",
        )
    )
    if d.alone_end_ms is not None and d.batch_size > 1:
        seq = d.one_after_another_ms()
        fig.add_trace(
            go.Bar(
                x=[d.alone_end_ms] * d.batch_size,
                y=rows,
                base=[e - d.alone_end_ms for e in seq],
                orientation="h",
                width=0.2,
                offset=0.28,
                name="served one after another",
                marker={"color": palette.MUTED},
                hovertemplate="%{y}: one after another, done at %{x:.0f} ms<extra></extra>",
            )
        )
    fig.update_layout(
        **plotly_layout(
            d.title(),
            height=max(260, 34 * d.batch_size + 190),
            barmode="overlay",
            margin={"l": 90, "r": 20},
        )
    )
    fig.update_xaxes(title="time since the batch started (ms)", rangemode="tozero")
    fig.update_yaxes(autorange="reversed", title=None)
    return fig


def batch_timeline_static(run, other=None):
    """Matplotlib: the same rows as `batch_timeline_figure`. Lesson 06."""
    d = batch_timeline_data(run, other)
    fig, ax = new_figure(figsize=(9, 0.45 * d.batch_size + 1.8))
    for r in range(d.batch_size):
        ax.barh(
            r,
            d.ttft_ms,
            color=palette.PREFILL,
            height=0.5,
            label="prefill, then the first token" if r == 0 else None,
        )
        ax.scatter(
            d.token_ms[1:],
            [r] * (len(d.token_ms) - 1),
            marker="|",
            s=120,
            color=palette.DECODE,
            label="a decode token arrives" if r == 0 else None,
        )
        if d.alone_end_ms is not None and d.batch_size > 1:
            end = d.one_after_another_ms()[r]
            ax.barh(
                r + 0.3,
                d.alone_end_ms,
                left=end - d.alone_end_ms,
                height=0.15,
                color=palette.MUTED,
                label="served one after another" if r == 0 else None,
            )
    ax.set_yticks(range(d.batch_size), [f"request {r}" for r in range(d.batch_size)])
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel("time since the batch started (ms)")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(d.title(), loc="left", fontsize=9, wrap=True)
    fig.tight_layout()
    return fig
