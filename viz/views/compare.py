"""Comparison: two traces side by side on the same scales — e.g. CPU vs GPU, cache on vs off,
two prompts. Top row: each step's latency; bottom row: the KV cache after each step; and the
summary figures of both with their ratio. Used in lesson 05 (cache on vs off) and lesson 07
(your CPU beside a recorded GPU trace).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Optional

from viz.trace import Trace
from viz.views import palette
from viz.views.base import (
    HTML,
    bytes_axis,
    check_trace,
    mpl_title,
    ms,
    nbytes,
    new_figure,
    per_s,
    plotly_layout,
    step_latencies_s,
    trace_title,
)
from viz.views.text import esc, reply_text


@dataclass(frozen=True)
class Side:
    """One trace's series, as the comparison draws them."""

    title: str
    latencies_ms: list[float]  # per step: TTFT, then each inter-token latency
    kv_bytes: list[int]  # per step, read from the cache tensors
    phases: list[str]


@dataclass(frozen=True)
class Comparison:
    """What the comparison draws: both sides, their shared ranges, the summary table."""

    a: Side
    b: Side
    latency_range: list[float]  # the shared y range of the latency row
    kv_range: list[float]  # the shared y range of the KV row
    steps_range: list[float]  # the shared x range
    rows: list[tuple[str, str, str, str]]  # (figure, a, b, b ÷ a)


def _side(trace: Trace, name: str) -> Side:
    return Side(
        title=f"{name}: {trace_title(trace)}",
        latencies_ms=[v * 1000 for v in step_latencies_s(trace)],
        kv_bytes=[s.kv_bytes for s in trace.steps],
        phases=[s.phase for s in trace.steps],
    )


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    return "n/a" if not a or b is None else f"{b / a:.2f}×"


def compare_data(trace: Trace, other: Trace) -> Comparison:
    """Both traces' series with shared axis ranges, and the summary table: `trace` is A,
    `other` is B. Lessons 05, 07."""
    a, b = check_trace(trace, "the first trace"), check_trace(other, "the other trace")
    sa, sb = _side(a, "A"), _side(b, "B")
    top = max(sa.latencies_ms + sb.latencies_ms) * 1.08 or 1.0
    kv_top = max(sa.kv_bytes + sb.kv_bytes) * 1.08 or 1.0
    n = max(len(a.steps), len(b.steps))
    rows = [
        ("TTFT", ms(a.ttft_s), ms(b.ttft_s), _ratio(a.ttft_s, b.ttft_s)),
        ("TPOT", ms(a.tpot_s), ms(b.tpot_s), _ratio(a.tpot_s, b.tpot_s)),
        (
            "decode speed",
            per_s(a.decode_tokens_per_s),
            per_s(b.decode_tokens_per_s),
            _ratio(a.decode_tokens_per_s, b.decode_tokens_per_s),
        ),
        (
            "prefill speed",
            per_s(a.prefill_tokens_per_s),
            per_s(b.prefill_tokens_per_s),
            _ratio(a.prefill_tokens_per_s, b.prefill_tokens_per_s),
        ),
        (
            "end to end",
            ms(a.timing.end_to_end_s),
            ms(b.timing.end_to_end_s),
            _ratio(a.timing.end_to_end_s, b.timing.end_to_end_s),
        ),
        (
            "tokens (prompt + reply)",
            f"{len(a.prompt_tokens)} + {a.n_generated}",
            f"{len(b.prompt_tokens)} + {b.n_generated}",
            "",
        ),
        (
            "KV cache at the end",
            nbytes(a.steps[-1].kv_bytes),
            nbytes(b.steps[-1].kv_bytes),
            _ratio(a.steps[-1].kv_bytes, b.steps[-1].kv_bytes),
        ),
        (
            "KV cache",
            "on" if a.settings.use_cache else "off",
            "on" if b.settings.use_cache else "off",
            "",
        ),
        ("device", a.environment.device_name, b.environment.device_name, ""),
        ("reply", repr(reply_text(a)[:60]), repr(reply_text(b)[:60]), ""),
    ]
    return Comparison(sa, sb, [0.0, top], [0.0, kv_top], [-0.6, n - 0.4], rows)


def compare_html(trace: Trace, other: Trace) -> HTML:
    """The summary figures of both traces in a table, with the ratio B ÷ A. Lessons 05, 07."""
    d = compare_data(trace, other)
    head = (
        "<tr><th></th>" + f"<th>{esc(d.a.title)}</th><th>{esc(d.b.title)}</th><th>B ÷ A</th></tr>"
    )
    body = "".join(
        "<tr>" + "".join(f'<td style="padding:2px 10px">{esc(c)}</td>' for c in r) + "</tr>"
        for r in d.rows
    )
    html = (
        f'<table class="viz-compare" style="font-family:sans-serif;font-size:13px;'
        f'border-collapse:collapse">{head}{body}</table>'
    )
    return HTML(html, f"comparison: {d.a.title} vs {d.b.title}")


SIDE_TITLE_PX = 13  # font size of each side's title
SIDE_TITLE_CHARS = 44  # its lines: half of a 900-px notebook output holds ~48 characters
SIDE_LINE_PX = 17  # the height of one of its lines


def side_title_lines(title: str) -> list[str]:
    """One side's title in lines that fit its column (a long word is broken too)."""
    return textwrap.wrap(title, SIDE_TITLE_CHARS) or [""]


def compare_figure(trace: Trace, other: Trace):
    """Plotly: latency per step and KV cache per step, A (`trace`) left and B (`other`)
    right, same scales, with the summary table below. Lessons 05 and 07."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    d = compare_data(trace, other)
    fig = make_subplots(
        rows=3,
        cols=2,
        row_heights=[0.3, 0.3, 0.4],
        vertical_spacing=0.08,
        horizontal_spacing=0.06,
        specs=[[{}, {}], [{}, {}], [{"type": "table", "colspan": 2}, None]],
    )
    lines = _side_titles(fig, d)
    for col, side in ((1, d.a), (2, d.b)):
        colours = [palette.PHASE[p] for p in side.phases]
        steps = list(range(len(side.phases)))
        fig.add_trace(
            go.Bar(
                x=steps,
                y=side.latencies_ms,
                marker={"color": colours},
                name="latency",
                showlegend=False,
                hovertemplate="step %{x}: %{y:.1f} ms<extra></extra>",
            ),
            1,
            col,
        )
        fig.add_trace(
            go.Bar(
                x=steps,
                y=side.kv_bytes,
                marker={"color": colours},
                name="KV cache",
                showlegend=False,
                hovertemplate="step %{x}: %{y:,} bytes<extra></extra>",
            ),
            2,
            col,
        )
    cols = list(zip(*d.rows))
    fig.add_trace(
        go.Table(
            header={"values": ["", "A", "B", "B ÷ A"], "align": "left"},
            cells={"values": [[esc(c) for c in col] for col in cols], "align": "left"},
        ),
        3,
        1,
    )
    _same_scales(fig, d)
    fig.update_layout(
        **plotly_layout(
            "Two traces, same scales (blue: prefill, orange: decode)",
            height=1000 + SIDE_LINE_PX * (lines - 1),
            showlegend=False,
            margin={"t": 70 + SIDE_LINE_PX * lines},
        )
    )
    return fig


def _side_titles(fig, d: Comparison) -> int:
    """Each side's title above its column; the lines the longer one takes."""
    # Each side's title above its own column, left-aligned and wrapped to the column's width:
    # labels and device names of any length stay inside their half of the figure.
    titles = [side_title_lines(side.title) for side in (d.a, d.b)]
    lines = max(len(t) for t in titles)
    for col, text in ((1, titles[0]), (2, titles[1])):
        left = fig.get_subplot(1, col).xaxis.domain[0]
        fig.add_annotation(
            text="<br>".join(esc(line) for line in text),
            x=left,
            y=1.0,
            xref="paper",
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            align="left",
            showarrow=False,
            font={"size": SIDE_TITLE_PX},
        )
    return lines


def _same_scales(fig, d: Comparison) -> None:
    """Both columns on the same ranges: latency, KV bytes and steps."""
    for col in (1, 2):
        fig.update_yaxes(
            range=d.latency_range, row=1, col=col, title="latency (ms)" if col == 1 else None
        )
        fig.update_yaxes(range=d.kv_range, row=2, col=col, title="KV bytes" if col == 1 else None)
        fig.update_xaxes(range=d.steps_range, row=1, col=col)
        fig.update_xaxes(range=d.steps_range, row=2, col=col, title="step (0 = prefill)")


def compare_static(trace: Trace, other: Trace):
    """Matplotlib: latency and KV cache per step, A left and B right, same scales, with the
    summary figures under them. Lessons 05 and 07."""
    d = compare_data(trace, other)
    fig, axes = new_figure(2, 2, figsize=(12, 6.6), sharex=True, sharey="row")
    for col, side in enumerate((d.a, d.b)):
        colours = [palette.PHASE[p] for p in side.phases]
        steps = range(len(side.phases))
        axes[0][col].bar(steps, side.latencies_ms, color=colours)
        axes[1][col].bar(steps, side.kv_bytes, color=colours)
        mpl_title(axes[0][col], side.title, loc="left", fontsize=9)
        axes[1][col].set_xlabel("step (0 = prefill)")
    axes[0][0].set_ylim(*d.latency_range)
    axes[1][0].set_ylim(*d.kv_range)
    axes[0][0].set_xlim(*d.steps_range)
    axes[0][0].set_ylabel("latency (ms)")
    axes[1][0].set_ylabel("KV cache")
    bytes_axis(axes[1][0])
    table = "\n".join(f"{r[0]:<24} A {r[1]:<18} B {r[2]:<18} {r[3]}" for r in d.rows[:7])
    fig.text(0.01, 0.01, table, family="DejaVu Sans Mono", fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    return fig
