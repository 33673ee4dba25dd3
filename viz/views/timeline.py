"""Timeline: prefill as one bar, each decode step its own, TTFT marked; latency per step; and a
summary card of TTFT, TPOT and tokens/s.

All times come from the trace's clock (see `viz.trace.Timing`). A step's latency is what the
reader waits for it: TTFT for the first token, then the gap since the previous token.
Used in lesson 03 (prefill), lesson 04 (decode) and lesson 07 (capstone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from viz.trace import Trace
from viz.views import palette
from viz.views.base import (
    HTML,
    check_trace,
    mpl_title,
    ms,
    new_figure,
    per_s,
    plotly_layout,
    step_latencies_s,
    trace_title,
)
from viz.views.text import esc, token_label


@dataclass(frozen=True)
class Segment:
    """One bar on the time axis."""

    name: str  # "tokenize", "prefill" or "step k"
    phase: str  # "tokenize", "prefill" or "decode"
    start_s: float  # from the start of `record`
    duration_s: float
    token: str  # the token chosen at its end ("" for tokenize)


@dataclass(frozen=True)
class Timeline:
    """What the timeline and the summary card show."""

    segments: list[Segment]
    latencies_s: list[float]  # per step: TTFT, then each inter-token latency
    forward_s: list[float]  # per step: the forward pass alone
    sample_s: list[float]  # per step: choosing the token
    ttft_s: float
    tpot_s: Optional[float]  # None for a one-token reply
    decode_tokens_per_s: Optional[float]
    prefill_tokens_per_s: float
    end_to_end_s: float
    n_prompt: int
    n_generated: int


def timeline_data(trace: Trace) -> Timeline:
    """The segments of the time axis, each step's latency, and the summary figures.
    Lessons 03 and 04."""
    check_trace(trace)
    t = trace.timing
    emitted = [s.emitted_at_s for s in trace.steps]
    segments = [
        Segment("tokenize", "tokenize", 0.0, t.tokenize_s, ""),
        Segment(
            "prefill",
            "prefill",
            t.tokenize_s,
            emitted[0] - t.tokenize_s,
            token_label(trace.steps[0].token_text, trace.steps[0].token_piece),
        ),
    ]
    for s, before in zip(trace.steps[1:], emitted):
        segments.append(
            Segment(
                f"step {s.index}",
                "decode",
                before,
                s.emitted_at_s - before,
                token_label(s.token_text, s.token_piece),
            )
        )
    return Timeline(
        segments=segments,
        latencies_s=step_latencies_s(trace),
        forward_s=[s.forward_s for s in trace.steps],
        sample_s=[s.sample_s for s in trace.steps],
        ttft_s=trace.ttft_s,
        tpot_s=trace.tpot_s,
        decode_tokens_per_s=trace.decode_tokens_per_s,
        prefill_tokens_per_s=trace.prefill_tokens_per_s,
        end_to_end_s=t.end_to_end_s,
        n_prompt=len(trace.prompt_tokens),
        n_generated=trace.n_generated,
    )


def card_rows(trace: Trace) -> list[tuple[str, str, str]]:
    """(name, value, what it means) for the summary card."""
    d = timeline_data(trace)
    one = " (one token: nothing to time after the first)" if d.tpot_s is None else ""
    return [
        ("TTFT", ms(d.ttft_s), f"time to first token: tokenize + prefill of {d.n_prompt} tokens"),
        ("TPOT", ms(d.tpot_s), "time per output token after the first" + one),
        ("decode", per_s(d.decode_tokens_per_s), "tokens per second while streaming = 1 / TPOT"),
        ("prefill", per_s(d.prefill_tokens_per_s), "prompt tokens per second of the prefill pass"),
        ("total", ms(d.end_to_end_s), f"{d.n_generated} tokens, start to last token"),
    ]


def summary_html(trace: Trace) -> HTML:
    """TTFT, TPOT, tokens/s and end-to-end time as a small HTML card. Lessons 03, 04, 07."""
    rows = card_rows(trace)
    cells = "".join(
        f'<div style="display:inline-block;margin:4px 18px 4px 0;vertical-align:top">'
        f'<div style="font-size:12px;color:#555">{esc(name)}</div>'
        f'<div style="font-size:20px;font-weight:bold">{esc(value)}</div>'
        f'<div style="font-size:11px;color:#555;max-width:16em">{esc(note)}</div></div>'
        for name, value, note in rows
    )
    head = esc(trace_title(trace))
    html = (
        f'<div class="viz-card" style="font-family:sans-serif;border:1px solid #ccc;'
        f'border-radius:6px;padding:8px 12px;display:inline-block">'
        f'<div style="font-size:12px;color:#555">{head}</div>{cells}</div>'
    )
    return HTML(html, "summary card: " + ", ".join(f"{n} {v}" for n, v, _ in rows))


def _colour(phase: str) -> str:
    return palette.PHASE.get(phase, palette.MUTED)


def timeline_figure(trace: Trace):
    """Plotly: the time axis (tokenize, prefill, each decode step), TTFT marked; latency per
    step with the TPOT line; the summary figures in the title. Lessons 03 and 04."""
    from plotly.subplots import make_subplots

    d = timeline_data(trace)
    fig = make_subplots(
        rows=2,
        cols=1,
        row_heights=[0.28, 0.72],
        vertical_spacing=0.24,
        subplot_titles=["", "latency of each step: what the reader waits for each token"],
    )
    _phase_bars(fig, d)
    _latency_bars(fig, trace, d)
    _ttft_mark(fig, trace, d)
    card = " · ".join(f"{n} {v}" for n, v, _ in card_rows(trace))
    fig.update_layout(
        **plotly_layout(
            f"{trace_title(trace)}: {card}",
            height=500,
            barmode="overlay",
            uniformtext={"mode": "hide", "minsize": 8},
        )
    )
    fig.update_yaxes(showticklabels=False, row=1, col=1)
    fig.update_xaxes(title="time since the request (ms)", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(
        title="step (0 = prefill)", dtick=1 if len(d.latencies_s) <= 40 else None, row=2, col=1
    )
    fig.update_yaxes(title="latency (ms)", rangemode="tozero", row=2, col=1)
    return fig


def _phase_bars(fig, d: Timeline) -> None:
    """The upper panel: one bar per tokenize, prefill and decode segment, on the time axis."""
    import plotly.graph_objects as go

    for phase in ("tokenize", "prefill", "decode"):
        segs = [s for s in d.segments if s.phase == phase]
        if not segs:
            continue
        fig.add_trace(
            go.Bar(
                x=[s.duration_s * 1000 for s in segs],
                base=[s.start_s * 1000 for s in segs],
                y=["reply"] * len(segs),
                orientation="h",
                name=phase,
                marker={"color": _colour(phase), "line": {"color": "white", "width": 1}},
                text=[esc(s.token) for s in segs],
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,
                customdata=[[esc(s.name), esc(s.token), s.start_s * 1000] for s in segs],
                hovertemplate="%{customdata[0]}: %{customdata[1]}<br>from %{customdata[2]:.1f} ms, "
                "%{x:.1f} ms long<extra></extra>",
                legendgroup=phase,
            ),
            1,
            1,
        )


def _latency_bars(fig, trace: Trace, d: Timeline) -> None:
    """The lower panel: each step's latency, and the TPOT line (none for one token)."""
    import plotly.graph_objects as go

    steps = list(range(len(d.latencies_s)))
    fig.add_trace(
        go.Bar(
            x=steps,
            y=[v * 1000 for v in d.latencies_s],
            marker={"color": [_colour(s.phase) for s in trace.steps]},
            name="step latency",
            showlegend=False,
            customdata=[[f * 1000, s * 1000] for f, s in zip(d.forward_s, d.sample_s)],
            hovertemplate="step %{x}: %{y:.1f} ms (forward %{customdata[0]:.1f} ms, "
            "sampling %{customdata[1]:.2f} ms)<extra></extra>",
        ),
        2,
        1,
    )
    if d.tpot_s is not None:
        fig.add_trace(
            go.Scatter(
                x=[0.5, len(steps) - 0.5],
                y=[d.tpot_s * 1000] * 2,
                mode="lines",
                name=f"TPOT {ms(d.tpot_s)}",
                line={"color": palette.FORMULA, "dash": "dash"},
            ),
            2,
            1,
        )


def _ttft_mark(fig, trace: Trace, d: Timeline) -> None:
    """The TTFT line across the time axis, labelled."""
    fig.add_vline(x=d.ttft_s * 1000, line={"color": palette.FORMULA, "width": 2}, row=1, col=1)
    # the label sits left of the line, unless the prefill is a sliver of the axis (a short
    # prompt and slow steps): then on its right, where there is room
    left = d.ttft_s >= 0.2 * max(trace.timing.end_to_end_s, d.ttft_s)
    fig.add_annotation(
        x=d.ttft_s * 1000,
        y=1,
        yref="y domain",
        text=f"TTFT {ms(d.ttft_s)}",
        showarrow=False,
        xanchor="right" if left else "left",
        yanchor="bottom",
        row=1,
        col=1,
    )


def timeline_static(trace: Trace):
    """Matplotlib: the time axis with TTFT marked, latency per step, and the summary card.
    Lessons 03 and 04."""
    from matplotlib.patches import Patch

    d = timeline_data(trace)
    fig, (ax1, ax2) = new_figure(2, 1, figsize=(10, 5.2), gridspec_kw={"height_ratios": [1, 2.4]})
    for s in d.segments:
        ax1.barh(
            0,
            s.duration_s * 1000,
            left=s.start_s * 1000,
            color=_colour(s.phase),
            edgecolor="white",
            height=0.6,
        )
    ax1.axvline(d.ttft_s * 1000, color=palette.FORMULA, lw=1.5)
    ax1.text(d.ttft_s * 1000, 0.42, f" TTFT {ms(d.ttft_s)}", va="bottom", fontsize=8)
    ax1.set_yticks([])
    ax1.set_xlim(left=0)
    ax1.set_ylim(-0.5, 0.9)
    ax1.set_xlabel("time since the request (ms)")
    ax1.legend(
        handles=[Patch(color=_colour(p), label=p) for p in ("tokenize", "prefill", "decode")],
        loc="upper right",
        fontsize=7,
        ncol=3,
    )
    steps = range(len(d.latencies_s))
    ax2.bar(steps, [v * 1000 for v in d.latencies_s], color=[_colour(s.phase) for s in trace.steps])
    if d.tpot_s is not None:
        ax2.axhline(
            d.tpot_s * 1000, color=palette.FORMULA, ls="--", lw=1, label=f"TPOT {ms(d.tpot_s)}"
        )
        ax2.legend(fontsize=8)
    ax2.set_xlabel("step (0 = prefill)")
    ax2.set_ylabel("latency (ms)")
    card = "   ".join(f"{n} {v}" for n, v, _ in card_rows(trace))
    mpl_title(fig, f"{trace_title(trace)}\n{card}", x=0.01, ha="left", fontsize=9)
    fig.tight_layout()
    return fig
