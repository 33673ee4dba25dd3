"""Attention over the KV cache, step by step: where each new token's query looked.

At every decode step the model feeds in one token; in each layer that token's query is compared
with the keys of every earlier position — the prompt and the tokens generated so far, all held
in the KV cache — and the softmax of those scores weighs their values. `viz.record(...,
attention=True)` keeps those weights (`Trace.attention`): per step and layer, the mean over the
query heads and one chosen head. This view draws them: a strip over the tokens for one step
(where this step looked), and every step of one layer as rows of a heatmap (the strip of each
step, growing by one position per step: every step reads the whole cache).
Used in lesson 05 (the KV cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from viz.trace import Trace
from viz.views import palette
from viz.views.base import (
    check_trace,
    empty_axes,
    empty_figure,
    get_step,
    mpl_title,
    new_figure,
    plotly_layout,
    set_ticklabels,
)
from viz.views.text import esc, token_label

NO_ATTENTION = (
    "this trace has no attention weights (they are recorded only on request): "
    "record it again with viz.record(lm, prompt, attention=True)"
)
MAX_TICK_LABELS = 72  # more positions than this: label every k-th token on the x axis


@dataclass(frozen=True)
class AttentionStep:
    """Where one step's newest query looked, in one layer."""

    step: int  # 0 = prefill (the query of the last prompt token), then decode steps
    phase: str
    layer: int
    head: int  # the one head stored beside the mean
    labels: list[str]  # each position's token, made visible: the prompt's, then the reply's
    phases: list[str]  # per position: "prefill" (a prompt token) or "decode" (a generated one)
    mean: list[float]  # weight of each position, mean over the query heads (sums to ~1)
    head_weights: list[float]  # the same for head `head` alone
    query: str  # the token whose query this is (the one fed in at this step)
    chosen: str  # the token this step produced
    n_heads: int

    @property
    def seq_len(self) -> int:
        """Positions this query read: every token in the KV cache, its own included."""
        return len(self.labels)

    def top(self, k: int = 3, head: bool = False) -> list[tuple[int, str, float]]:
        """The `k` positions weighed most: (position, token, weight)."""
        w = self.head_weights if head else self.mean
        order = sorted(range(len(w)), key=lambda j: (-w[j], j))[:k]
        return [(j, self.labels[j], w[j]) for j in order]

    def title(self, head: bool = False) -> str:
        """Two lines: where, then what happened (plotly's <br> between them)."""
        return "<br>".join(esc(line) for line in self.title_lines(head))

    def title_lines(self, head: bool = False) -> list[str]:
        who = f"head {self.head}" if head else f"mean of {self.n_heads} heads"
        return [
            f"Step {self.step} ({self.phase}), layer {self.layer}, {who}:",
            f"the query of {self.query} read all {self.seq_len} positions in the KV cache "
            f"and chose {self.chosen}",
        ]


def _check_attention(trace: Trace, layer: int):
    check_trace(trace)
    a = trace.attention
    if a is None:
        raise ValueError(NO_ATTENTION)
    if (
        isinstance(layer, bool)
        or not isinstance(layer, (int, np.integer))
        or not 0 <= layer < a.n_layers
    ):
        raise ValueError(f"layer must be a layer number from 0 to {a.n_layers - 1}, not {layer!r}")
    return a


def _position_tokens(trace: Trace) -> tuple[list[str], list[str]]:
    """Every position's label and phase: prompt tokens, then generated ones."""
    labels = [token_label(t.text, t.piece) for t in trace.prompt_tokens]
    labels += [token_label(s.token_text, s.token_piece) for s in trace.steps]
    phases = ["prefill"] * len(trace.prompt_tokens) + ["decode"] * len(trace.steps)
    return labels, phases


def attention_data(trace: Trace, step: int, layer: int = 0) -> AttentionStep:
    """Where step `step`'s query looked in layer `layer` (0 = prefill: the last prompt token's
    query). A ValueError naming the fix for a trace recorded without attention. Lesson 05."""
    s = get_step(trace, step)
    a = _check_attention(trace, layer)
    rows = a.step(s.index)  # (layers, 2, seq_len)
    labels, phases = _position_tokens(trace)
    n_prompt = len(trace.prompt_tokens)
    query = labels[n_prompt - 1] if s.index == 0 else labels[n_prompt + s.index - 1]
    return AttentionStep(
        step=s.index,
        phase=s.phase,
        layer=int(layer),
        head=a.head,
        labels=labels[: s.seq_len],
        phases=phases[: s.seq_len],
        mean=[float(v) for v in rows[layer, 0]],
        head_weights=[float(v) for v in rows[layer, 1]],
        query=query,
        chosen=token_label(s.token_text, s.token_piece),
        n_heads=a.n_heads,
    )


def attention_matrix(trace: Trace, layer: int = 0, head: bool = False) -> np.ndarray:
    """Every step's weights in one layer as a (steps, positions) array; NaN where a step could
    not look yet (positions after it). Lesson 05."""
    a = _check_attention(trace, layer)
    n = max(a.lengths)
    out = np.full((len(a.lengths), n), np.nan)
    for i, length in enumerate(a.lengths):
        out[i, :length] = a.step(i)[layer, 1 if head else 0]
    return out


def _tick_step(n: int) -> int:
    return max(1, -(-n // MAX_TICK_LABELS))


def _round(values) -> list[Optional[float]]:
    """To 0.001 (the stored weights hold 8 bits of the row's largest anyway); NaN as None."""
    return [None if not np.isfinite(v) else round(float(v), 3) for v in values]


# ---- plotly -------------------------------------------------------------------------------------
def _strip_y(d: AttentionStep, head: bool, width: int) -> list[Optional[float]]:
    """The step's weights over `width` positions, None after the last one it could read."""
    w = d.head_weights if head else d.mean
    return _round(w) + [None] * (width - len(w))


def _strip_trace(d: AttentionStep, head: bool, labels: list[str], phases: list[str]):
    """Bars over every position of the longest step (later positions empty at earlier steps),
    so that frames only replace the heights."""
    import plotly.graph_objects as go

    return go.Bar(
        x=list(range(len(labels))),
        y=_strip_y(d, head, len(labels)),
        marker={"color": [palette.PHASE[p] for p in phases]},
        customdata=[esc(lab) for lab in labels],
        name="this step",
        hovertemplate="position %{x} %{customdata}: weight %{y:.3f}<extra></extra>",
        showlegend=False,
        xaxis="x",
        yaxis="y",
    )


def _row_marker(step: int, width: int):
    import plotly.graph_objects as go

    return go.Scatter(
        x=[-0.5, width - 0.5],
        y=[step, step],
        mode="lines",
        line={"color": palette.CHOSEN, "width": 3},
        name="this step",
        hoverinfo="skip",
        showlegend=False,
        xaxis="x2",
        yaxis="y2",
    )


def attention_figure(trace: Trace, step: Optional[int] = None, layer: int = 0, head: bool = False):
    """Plotly: top, where one step's query looked (a bar per position: prompt tokens blue,
    generated ones orange); below, every step of the layer as a row (the cache each step read
    grows by one position). step=None: a slider and play button over the steps (no kernel),
    opening at the first decode step; step=k: that step alone. head=True: the one recorded
    head instead of the mean over heads. Lesson 05."""
    import plotly.graph_objects as go

    if check_trace(trace).attention is None:
        return empty_figure("Attention over the KV cache", NO_ATTENTION)
    start = (1 if len(trace.steps) > 1 else 0) if step is None else step
    first = attention_data(trace, start, layer)
    matrix = attention_matrix(trace, layer, head)
    n_steps, width = matrix.shape
    labels, phases = _position_tokens(trace)
    labels, phases = labels[:width], phases[:width]
    every = _tick_step(width)
    ticks = list(range(0, width, every))
    fig = go.Figure(
        data=[
            _strip_trace(first, head, labels, phases),
            go.Heatmap(
                z=[_round(row) for row in matrix],
                x=list(range(width)),
                y=list(range(n_steps)),
                colorscale=palette.SEQUENTIAL,
                zmin=0,
                zmax=float(np.nanmax(matrix)) or 1.0,
                xaxis="x2",
                yaxis="y2",
                name="every step",
                hovertemplate="step %{y} → position %{x}: weight %{z:.3f}<extra></extra>",
                colorbar={
                    "title": {"text": "weight", "side": "right"},
                    "len": 0.55,
                    "y": 0,
                    "yanchor": "bottom",
                    "thickness": 12,
                },
            ),
            _row_marker(first.step, width),
        ]
    )
    axis = {
        "range": [-0.5, width - 0.5],
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [esc(labels[j]) for j in ticks],
        "tickangle": -90,
        "tickfont": {"size": 10, "family": "DejaVu Sans Mono, monospace"},
    }
    height = 620 + (100 if step is None and n_steps > 1 else 0)
    fig.update_layout(
        **plotly_layout(
            "",
            height=height,
            showlegend=False,
            xaxis={**axis, "domain": [0, 1], "anchor": "y", "showticklabels": False},
            yaxis={"domain": [0.68, 1], "anchor": "x", "title": "weight", "rangemode": "tozero"},
            xaxis2={**axis, "domain": [0, 1], "anchor": "y2"},
            yaxis2={
                "domain": [0, 0.55],
                "anchor": "x2",
                "title": "step (0 = prefill)",
                "autorange": "reversed",
                "dtick": 1 if n_steps <= 24 else None,
            },
            margin={"l": 70, "r": 20, "t": 80, "b": 150},
        )
    )
    fig.update_layout(title_text=first.title(head))
    if step is None and n_steps > 1:
        _add_player(fig, trace, first, (layer, head), (n_steps, width))
    return fig


def _add_player(
    fig, trace: Trace, first: AttentionStep, view: tuple[int, bool], shape: tuple[int, int]
) -> None:
    """One frame per step (the strip and the row marker move), and the slider and play
    button under the matrix, opening at `first`. `view`: (layer, head) as `attention_figure`
    takes them; `shape`: the matrix's (steps, positions)."""
    import plotly.graph_objects as go

    from viz.views.distribution import step_controls

    layer, head = view
    n_steps, width = shape
    frames = []
    for i in range(n_steps):
        d = attention_data(trace, i, layer)
        frames.append(
            go.Frame(
                name=str(i),
                data=[go.Bar(y=_strip_y(d, head, width)), _row_marker(i, width)],
                traces=[0, 2],
                layout={"title": {"text": d.title(head)}},
            )
        )
    fig.frames = frames
    controls = step_controls(trace, active=first.step)
    controls["margin"] = {"l": 70, "r": 20, "t": 80, "b": 260}
    controls["sliders"][0]["pad"] = {"t": 150, "l": 110}
    controls["updatemenus"][0]["pad"] = {"t": 155}
    fig.update_layout(**controls)


# ---- ipywidgets ---------------------------------------------------------------------------------
def attention_widget(trace: Trace, layer: int = 0):
    """ipywidgets: a step slider, a layer slider and a mean/one-head switch redraw
    `attention_figure(trace, step, layer, head)`. Returns a `viz.views.widgets.LinkedView`.
    Lesson 05."""
    import ipywidgets as widgets

    from viz.views.widgets import LinkedView

    a = _check_attention(trace, layer)
    last = len(trace.steps) - 1
    style = {"description_width": "initial"}
    controls = {
        "step": widgets.IntSlider(
            value=1 if last else 0,
            min=0,
            max=last,
            description="step (0 = prefill)",
            disabled=last == 0,
            style=style,
        ),
        "layer": widgets.IntSlider(
            value=int(layer), min=0, max=a.n_layers - 1, description="layer", style=style
        ),
        "head": widgets.ToggleButtons(
            options=[("mean of all heads", False), (f"head {a.head} alone", True)],
            value=False,
            style={"button_width": "140px"},
        ),
    }
    return LinkedView(
        controls,
        [widgets.HBox([controls["step"], controls["layer"]]), controls["head"]],
        lambda v: attention_figure(trace, v["step"], v["layer"], v["head"]),
    )


# ---- matplotlib ---------------------------------------------------------------------------------
def attention_static(trace: Trace, step: Optional[int] = None, layer: int = 0, head: bool = False):
    """Matplotlib: the same two panels as `attention_figure` at one step (default: the first
    decode step). Lesson 05."""
    if check_trace(trace).attention is None:
        fig, ax = new_figure(figsize=(10, 1.5))
        empty_axes(ax, NO_ATTENTION)
        return fig
    d = attention_data(trace, (1 if len(trace.steps) > 1 else 0) if step is None else step, layer)
    matrix = attention_matrix(trace, layer, head)
    n_steps, width = matrix.shape
    labels, _ = _position_tokens(trace)
    fig, (top, bottom) = new_figure(
        2,
        1,
        figsize=(12, 7.5),
        sharex=True,
        layout="constrained",
        gridspec_kw={"height_ratios": [1, 1.6]},
    )
    w = d.head_weights if head else d.mean
    top.bar(range(d.seq_len), w, color=[palette.PHASE[p] for p in d.phases])
    top.set_ylabel("weight")
    mpl_title(top, "\n".join(d.title_lines(head)), loc="left", fontsize=9)
    im = bottom.imshow(
        np.ma.masked_invalid(matrix),
        aspect="auto",
        cmap="viridis",
        interpolation="nearest",
        vmin=0,
        extent=(-0.5, width - 0.5, n_steps - 0.5, -0.5),
    )
    bottom.axhline(d.step, color=palette.CHOSEN, lw=2)
    bottom.set_ylabel("step (0 = prefill)")
    every = _tick_step(width)
    ticks = list(range(0, width, every))
    set_ticklabels(bottom, "x", ticks, [labels[j] for j in ticks], fontsize=7, rotation=90)
    fig.colorbar(im, ax=[top, bottom], fraction=0.03, label="weight")
    return fig
