"""Decode step explorer: one control moves through the steps; four linked panels follow it —
the text so far with the new token marked, the distribution it was chosen from, the KV-cache
size, and the step's latency.

Three forms: `explorer_figure` (plotly, a slider and play button that need no kernel: saved
notebooks and the HTML report), `explorer_widget` (ipywidgets, for a live kernel) and
`explorer_static` (matplotlib, one step). Used in lesson 04 (decode) and lesson 07 (capstone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from viz.trace import Trace
from viz.views import palette
from viz.views.base import (
    blank_figure,
    bytes_axis,
    check_trace,
    get_step,
    mpl_text,
    mpl_title,
    ms,
    nbytes,
    plotly_layout,
    step_latencies_s,
)
from viz.views.distribution import (
    Distribution,
    bar_axes,
    bar_trace,
    distribution_data,
    draw_bars,
    step_controls,
)
from viz.views.text import PARTIAL, esc, token_label, visible

PROMPT_TAIL = 60  # characters of the prompt shown before the reply, for context
TEXT_WIDTH = 80  # characters per line in the text panel
TEXT_LINES = 7  # lines kept (the newest) in the text panel


@dataclass(frozen=True)
class ExplorerStep:
    """Everything the explorer's panels show at one step."""

    step: int
    phase: str
    prompt_tail: str  # the end of the prompt, for context
    before: str  # the reply on screen before this step's token
    new: str  # characters this token completes ("" when it holds only part of one)
    token: str  # the chosen token, made visible
    partial: bool  # the token is part of a character (its text appears with a later token)
    latency_s: float  # TTFT for step 0, else the gap since the previous token
    forward_s: float
    kv_bytes: int
    seq_len: int
    distribution: Distribution

    def caption(self) -> str:
        what = (
            "prefill: the whole prompt in one pass"
            if self.phase == "prefill"
            else "decode: one new token in, one out"
        )
        return (
            f"step {self.step} ({what}) · latency {ms(self.latency_s)} · "
            f"KV cache {nbytes(self.kv_bytes)} for {self.seq_len} tokens"
        )


def explorer_data(trace: Trace, step: int) -> ExplorerStep:
    """The explorer's data at `step` (0 = prefill). Lesson 04."""
    s = get_step(trace, step)
    prev_end = trace.steps[s.index - 1].text_end if s.index > 0 else 0
    tail = trace.prompt_text[-PROMPT_TAIL:]
    return ExplorerStep(
        step=s.index,
        phase=s.phase,
        prompt_tail=("…" if len(trace.prompt_text) > PROMPT_TAIL else "") + tail,
        before=trace.output_text[:prev_end],
        new=trace.output_text[prev_end : s.text_end],
        token=token_label(s.token_text, s.token_piece),
        partial=PARTIAL in s.token_text,
        latency_s=step_latencies_s(trace)[s.index],
        forward_s=s.forward_s,
        kv_bytes=s.kv_bytes,
        seq_len=s.seq_len,
        distribution=distribution_data(trace, s.index),
    )


def _runs(e: ExplorerStep) -> list[tuple[str, str]]:
    """The text panel as (text, style) runs: prompt (muted), reply so far, the new token. A
    token that completes no character (or leaves the reply cut mid-character) shows its
    bytes."""
    new = (
        e.new
        if e.new and not (e.partial and PARTIAL in e.new)
        else f"[{e.token}: part of a character]"
    )
    return [(e.prompt_tail, "prompt"), (e.before, "reply"), (new, "new")]


def _lines(runs: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Split runs into lines of at most TEXT_WIDTH characters at newlines and by length;
    keep the newest TEXT_LINES."""
    lines: list[list[tuple[str, str]]] = [[]]
    width = 0
    for text, style in runs:
        for ch in text:
            if ch == "\n" or width >= TEXT_WIDTH:
                if ch == "\n" and style == "new":
                    lines[-1].append(("↵", style))
                lines.append([])
                width = 0
                if ch == "\n":
                    continue
            shown = visible(ch) if ch != " " else " "
            if lines[-1] and lines[-1][-1][1] == style:
                lines[-1][-1] = (lines[-1][-1][0] + shown, style)
            else:
                lines[-1].append((shown, style))
            width += 1
    return lines[-TEXT_LINES:]


_STYLE = {
    "prompt": f"color:{palette.MUTED}",
    "reply": "color:#000000",
    "new": f"color:{palette.CHOSEN};font-weight:bold",
}


def text_panel(e: ExplorerStep) -> str:
    """The text so far as plotly's pseudo-HTML (lines joined with <br>)."""
    out = []
    for line in _lines(_runs(e)):
        out.append(
            "".join(
                f'<span style="{_STYLE[style]}">{"<b>" if style == "new" else ""}'
                f"{esc(text)}{'</b>' if style == 'new' else ''}</span>"
                for text, style in line
            )
        )
    return "<br>".join(out)


# ---- plotly -------------------------------------------------------------------------------------
# Trace order in the figure. Frames replace only the moving ones (text, bars, two markers).
TEXT, BARS, KV_BARS, KV_NOW, LAT_BARS, LAT_NOW = range(6)
MOVING = [TEXT, BARS, KV_NOW, LAT_NOW]


def _moving_traces(e: ExplorerStep, limit: Optional[int]):
    import plotly.graph_objects as go

    marker = {
        "color": palette.CHOSEN,
        "size": 13,
        "symbol": "diamond",
        "line": {"color": palette.FORMULA, "width": 1},
    }
    return [
        go.Scatter(
            x=[0],
            y=[1],
            mode="text",
            text=[text_panel(e)],
            textposition="bottom right",
            textfont={"family": "DejaVu Sans Mono, monospace", "size": 12},
            hoverinfo="skip",
            showlegend=False,
            xaxis="x",
            yaxis="y",
        ),
        bar_trace(e.distribution, limit, xaxis="x2", yaxis="y2"),
        go.Scatter(
            x=[e.step],
            y=[e.kv_bytes],
            mode="markers",
            marker=marker,
            name="this step",
            showlegend=False,
            hovertemplate="%{y:,} bytes<extra>this step</extra>",
            xaxis="x3",
            yaxis="y3",
        ),
        go.Scatter(
            x=[e.step],
            y=[e.latency_s * 1000],
            mode="markers",
            marker=marker,
            name="this step",
            showlegend=False,
            hovertemplate="%{y:.1f} ms<extra>this step</extra>",
            xaxis="x4",
            yaxis="y4",
        ),
    ]


def first_step(trace: Trace) -> int:
    """Where the explorer opens: the first decode step (1), or the prefill (0) of a
    one-token reply. The slider still reaches the prefill at 0."""
    return 1 if len(trace.steps) > 1 else 0


def explorer_figure(trace: Trace, step: Optional[int] = None, limit: Optional[int] = 10):
    """Plotly explorer. step=None: a slider and play button over every step (no kernel
    needed), opening at the first decode step (step 0, the prefill, is one notch left);
    step=k: the panels at step k alone. `limit`: candidates shown. Lesson 04."""
    import plotly.graph_objects as go

    check_trace(trace)
    first = explorer_data(trace, first_step(trace) if step is None else step)
    n = len(trace.steps)
    fig = go.Figure(data=_panels(trace, first, limit))
    _explorer_layout(fig, trace, limit)
    fig.add_annotation(
        text=esc(first.caption()),
        xref="paper",
        yref="paper",
        x=0,
        y=0.655,
        xanchor="left",
        showarrow=False,
        font={"size": 12},
    )
    if step is None and n > 1:
        fig.frames = _explorer_frames(trace, fig.layout.annotations[0].to_plotly_json(), limit)
        fig.update_layout(**step_controls(trace, active=first.step))
    return fig


def _panels(trace: Trace, first: ExplorerStep, limit: Optional[int]) -> list:
    """The figure's traces, in the order `MOVING`'s indices name: the text and the candidates
    at `first`, the KV bytes and latency of every step with `first`'s marked."""
    import plotly.graph_objects as go

    n = len(trace.steps)
    steps = list(range(n))
    colours = [palette.PHASE[s.phase] for s in trace.steps]
    latencies = [v * 1000 for v in step_latencies_s(trace)]
    moving = _moving_traces(first, limit)
    return [
        moving[0],
        moving[1],
        go.Bar(
            x=steps,
            y=[s.kv_bytes for s in trace.steps],
            marker={"color": colours},
            name="KV cache",
            showlegend=False,
            xaxis="x3",
            yaxis="y3",
            customdata=[s.seq_len for s in trace.steps],
            hovertemplate="step %{x}: %{y:,} bytes for %{customdata} tokens<extra></extra>",
        ),
        moving[2],
        go.Bar(
            x=steps,
            y=latencies,
            marker={"color": colours},
            name="latency",
            showlegend=False,
            xaxis="x4",
            yaxis="y4",
            hovertemplate="step %{x}: %{y:.1f} ms<extra></extra>",
        ),
        moving[3],
    ]


def _explorer_layout(fig, trace: Trace, limit: Optional[int]) -> None:
    """The four panels' places: the text above, the candidates left, KV bytes and latency
    right (sharing the step axis)."""
    n = len(trace.steps)
    steps = list(range(n))
    n_bars = max(len(distribution_data(trace, i).bars(limit)) for i in steps)
    bx, by = bar_axes(n_bars)
    hidden = {"visible": False, "range": [0, 1], "fixedrange": True}
    step_axis = {"title": "step", "range": [-0.6, n - 0.4], "dtick": 1 if n <= 30 else None}
    fig.update_layout(
        **plotly_layout(
            f"Decode step explorer: {len(trace.prompt_tokens)} prompt tokens, {n} generated",
            height=700,
            showlegend=False,
            xaxis={**hidden, "domain": [0, 1]},
            yaxis={**hidden, "domain": [0.72, 0.97]},
            xaxis2={**bx, "domain": [0, 0.5], "anchor": "y2"},
            yaxis2={**by, "domain": [0, 0.6], "anchor": "x2", "title": "next-token candidates"},
            xaxis3={
                **step_axis,
                "domain": [0.62, 1],
                "anchor": "y3",
                "title": None,
                "showticklabels": False,
            },
            yaxis3={
                "domain": [0.34, 0.6],
                "anchor": "x3",
                "title": "KV bytes",
                "rangemode": "tozero",
            },
            xaxis4={
                **step_axis,
                "domain": [0.62, 1],
                "anchor": "y4",
                "title": "step (0 = prefill)",
            },
            yaxis4={
                "domain": [0, 0.26],
                "anchor": "x4",
                "title": "latency (ms)",
                "rangemode": "tozero",
            },
            margin={"l": 60, "r": 20, "t": 60, "b": 60},
        )
    )


def _explorer_frames(trace: Trace, caption: dict, limit: Optional[int]) -> list:
    """One frame per step: the moving traces and the caption (`caption`: the annotation's
    place and style)."""
    import plotly.graph_objects as go

    steps = list(range(len(trace.steps)))
    frames = []
    for i in steps:
        e = explorer_data(trace, i)
        frames.append(
            go.Frame(
                name=str(i),
                data=_moving_traces(e, limit),
                traces=MOVING,
                layout={"annotations": [{**caption, "text": esc(e.caption())}]},
            )
        )
    return frames


# ---- ipywidgets ---------------------------------------------------------------------------------
def explorer_widget(trace: Trace, limit: Optional[int] = 10):
    """ipywidgets explorer for a live kernel: a play button and a step slider (opening at the
    first decode step; 0 is the prefill) drive the plotly panels of `explorer_figure(trace, step)`. Returns a `viz.views.widgets.LinkedView`
    (`.controls["step"]`, `.figure`). Lesson 04."""
    import ipywidgets as widgets

    from viz.views.widgets import LinkedView

    check_trace(trace)
    last = len(trace.steps) - 1
    start = first_step(trace)
    slider = widgets.IntSlider(
        value=start,
        min=0,
        max=last,
        description="step",
        continuous_update=True,
        disabled=last == 0,
        layout={"width": "420px"},
    )
    play = widgets.Play(
        value=start, min=0, max=last, interval=700, description="play", disabled=last == 0
    )
    widgets.jslink((play, "value"), (slider, "value"))
    view = LinkedView(
        {"step": slider},
        [widgets.HBox([play, slider])],
        lambda v: explorer_figure(trace, v["step"], limit),
    )
    view.controls["play"] = play
    return view


# ---- matplotlib ---------------------------------------------------------------------------------
def _draw_runs(ax, lines: list[list[tuple[str, str]]]) -> None:
    """Draw styled runs line by line, each run placed right after the one before it."""
    colours = {"prompt": palette.MUTED, "reply": "#000000", "new": palette.CHOSEN}
    for i, line in enumerate(lines):
        prev = None
        for text, style in line:
            kw = dict(
                fontsize=9,
                color=colours[style],
                va="bottom",
                ha="left",
                fontweight="bold" if style == "new" else "normal",
                **mpl_text(text),
            )
            label = kw.pop("s")
            if prev is None:
                prev = ax.text(
                    0, 1 - (i + 1) / (TEXT_LINES + 1), label, transform=ax.transAxes, **kw
                )
            else:
                prev = ax.annotate(label, xy=(1, 0), xycoords=prev, **kw)


def explorer_static(trace: Trace, step: Optional[int] = None, limit: Optional[int] = 10):
    """Matplotlib: the explorer's four panels at one step (default: the first decode step).
    Lesson 04."""
    e = explorer_data(trace, first_step(check_trace(trace)) if step is None else step)
    fig = blank_figure(figsize=(12, 8), layout="constrained")
    grid = fig.add_gridspec(3, 2, height_ratios=[0.9, 1.3, 1.3])
    text_ax = fig.add_subplot(grid[0, :])
    text_ax.set_axis_off()
    _draw_runs(text_ax, _lines(_runs(e)))
    mpl_title(
        text_ax,
        f"{e.caption()}\ntext so far (grey: the prompt's end; vermillion: the new token {e.token})",
        loc="left",
        fontsize=10,
    )
    dist_ax = fig.add_subplot(grid[1:, 0])
    draw_bars(dist_ax, e.distribution, limit)
    mpl_title(
        dist_ax,
        f"chose {e.token} (p = {e.distribution.chosen_prob:.3f}, "
        f"entropy {e.distribution.entropy_bits:.2f} bits)",
        loc="left",
        fontsize=9,
    )
    steps = range(len(trace.steps))
    colours = [palette.PHASE[s.phase] for s in trace.steps]
    kv_ax = fig.add_subplot(grid[1, 1])
    lat_ax = fig.add_subplot(grid[2, 1], sharex=kv_ax)
    for ax, values, label in (
        (kv_ax, [s.kv_bytes for s in trace.steps], "KV cache"),
        (lat_ax, [v * 1000 for v in step_latencies_s(trace)], "latency (ms)"),
    ):
        ax.bar(steps, values, color=colours)
        ax.plot([e.step], [values[e.step]], marker="D", color=palette.CHOSEN, ms=9, mec="black")
        ax.set_ylabel(label)
    bytes_axis(kv_ax)
    lat_ax.set_xlabel("step (0 = prefill)")
    return fig
