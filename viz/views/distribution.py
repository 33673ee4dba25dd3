"""Next-token distribution: at one step, the top candidates, the chosen one, and the entropy.

The bars are the recorded probabilities (softmax over the whole vocabulary, temperature 1) of
the `log_top` most likely tokens; one grey bar holds all the other tokens together. The chosen
token is vermillion; when sampling picked a token outside the recorded candidates, it gets a
bar of its own. Used in lesson 02 (predicting the next token) and inside the decode explorer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from viz.trace import Trace
from viz.views import palette
from viz.views.base import (
    check_trace,
    get_step,
    mpl_title,
    new_figure,
    plotly_layout,
    set_ticklabels,
    title_text,
)
from viz.views.text import esc, token_label


@dataclass(frozen=True)
class Bar:
    """One bar of a distribution chart."""

    label: str  # the token, made visible
    prob: float  # its probability (0-1)
    colour: str
    kind: str  # "candidate", "chosen" or "rest"
    hover: str  # plain text


@dataclass(frozen=True)
class Distribution:
    """One step's recorded next-token distribution."""

    step: int
    phase: str  # "prefill" or "decode"
    ids: list[int]  # the recorded candidates, most likely first
    labels: list[str]
    probs: list[float]  # their probabilities (recorded `top_probs`)
    logits: list[float]  # their raw scores (recorded `top_logits`)
    chosen_id: int
    chosen_label: str
    chosen_prob: float
    chosen_rank: int  # 0 = most likely
    rest: float  # probability of every token not recorded (1 − Σ probs)
    entropy_bits: float  # of the whole distribution, as recorded
    vocab_size: int  # tokens the model chooses among

    @property
    def chosen_index(self) -> Optional[int]:
        """Where the chosen token sits among the candidates (None: outside them)."""
        return self.ids.index(self.chosen_id) if self.chosen_id in self.ids else None

    def bars(self, limit: Optional[int] = None) -> list[Bar]:
        """Bars to draw: up to `limit` candidates, the chosen one if not among them, the rest."""
        n = len(self.ids) if limit is None else min(limit, len(self.ids))
        colour = palette.PHASE[self.phase]
        out = []
        for i in range(n):
            chosen = self.ids[i] == self.chosen_id
            out.append(
                Bar(
                    self.labels[i],
                    self.probs[i],
                    palette.CHOSEN if chosen else colour,
                    "chosen" if chosen else "candidate",
                    f"rank {i}: id {self.ids[i]}, logit {self.logits[i]:.3f}, "
                    f"p = {self.probs[i]:.4f}" + (" (chosen)" if chosen else ""),
                )
            )
        shown = sum(self.probs[:n])
        if self.chosen_index is None or self.chosen_index >= n:
            out.append(
                Bar(
                    self.chosen_label,
                    self.chosen_prob,
                    palette.CHOSEN,
                    "chosen",
                    f"rank {self.chosen_rank}: id {self.chosen_id}, "
                    f"p = {self.chosen_prob:.4f} (chosen)",
                )
            )
            shown += self.chosen_prob
        rest = max(0.0, 1.0 - shown)
        others = self.vocab_size - (len(out))
        out.append(
            Bar(
                f"the other {others:,} tokens",
                rest,
                palette.MUTED,
                "rest",
                f"{others:,} tokens not shown, together p = {rest:.4f}",
            )
        )
        return out

    def title(self) -> str:
        """Ranks count from 0, as `Step.rank` does: rank 0 is the most likely token."""
        rank = (
            "rank 0, the most likely"
            if self.chosen_rank == 0
            else f"rank {self.chosen_rank} (0 = most likely)"
        )
        return (
            f"Step {self.step} ({self.phase}): chose {self.chosen_label}, "
            f"p = {self.chosen_prob:.3f}, {rank}; entropy {self.entropy_bits:.2f} bits"
        )


def distribution_data(trace: Trace, step: int) -> Distribution:
    """The recorded distribution at `step` (0 = prefill). Lesson 02."""
    s = get_step(trace, step)
    return Distribution(
        step=s.index,
        phase=s.phase,
        ids=list(s.top_ids),
        labels=distinct_labels(s.top_texts, s.top_ids, s.top_pieces),
        probs=list(s.top_probs),
        logits=list(s.top_logits),
        chosen_id=s.token_id,
        chosen_label=token_label(s.token_text, s.token_piece),
        chosen_prob=s.prob,
        chosen_rank=s.rank,
        rest=max(0.0, 1.0 - sum(s.top_probs)),
        entropy_bits=s.entropy_bits,
        vocab_size=trace.model.vocab_size,
    )


def distinct_labels(
    texts: list[str], ids: list[int], pieces: Optional[list[str]] = None
) -> list[str]:
    """Visible token labels (a partial character as its bytes, where `pieces` holds its
    spelling); where two still look alike (partial characters of a trace recorded before
    pieces were stored, all "�"), each gets its id so the bars can be told apart."""
    pieces = list(pieces or [])
    pieces += [""] * (len(texts) - len(pieces))
    labels = [token_label(t, p or None) for t, p in zip(texts, pieces)]
    return [f"{lab} (id {i})" if labels.count(lab) > 1 else lab for lab, i in zip(labels, ids)]


# ---- plotly -------------------------------------------------------------------------------------
def bar_trace(d: Distribution, limit: Optional[int] = None, **kwargs):
    """One horizontal go.Bar of `d` (y = bar position, most likely at the top)."""
    import plotly.graph_objects as go

    bars = d.bars(limit)
    return go.Bar(
        x=[b.prob for b in bars],
        y=list(range(len(bars))),
        orientation="h",
        marker={
            "color": [b.colour for b in bars],
            "line": {
                "color": [palette.FORMULA if b.kind == "chosen" else b.colour for b in bars],
                "width": 1.5,
            },
        },
        text=[f"{esc(b.label)}  {b.prob:.1%}" for b in bars],
        textposition="outside",
        cliponaxis=False,
        customdata=[esc(b.hover) for b in bars],
        hovertemplate="%{customdata}<extra></extra>",
        name="next token",
        showlegend=False,
        **kwargs,
    )


def bar_axes(n_bars: int) -> tuple[dict, dict]:
    """x (probability, fixed 0-1 scale with room for labels) and y (positions) axis settings."""
    return (
        {
            "range": [0, 1.35],
            "title": "probability",
            "tickformat": ".0%",
            "tickvals": [0, 0.25, 0.5, 0.75, 1.0],
        },
        {"range": [n_bars - 0.5, -0.5], "showticklabels": False, "title": "candidates"},
    )


def distribution_figure(trace: Trace, step: Optional[int] = None, limit: Optional[int] = None):
    """Plotly bars of the next-token distribution at `step`.

    step=None: every step, with a slider (and play button) that moves through them — it needs
    no kernel, so it works in a saved notebook and in the HTML report. `limit` caps the
    candidates shown. Lesson 02.
    """
    import plotly.graph_objects as go

    check_trace(trace)
    first = distribution_data(trace, 0 if step is None else step)
    n_bars = max(
        len(distribution_data(trace, i).bars(limit))
        for i in (range(len(trace.steps)) if step is None else [first.step])
    )
    xaxis, yaxis = bar_axes(n_bars)
    sliding = step is None and len(trace.steps) > 1
    fig = go.Figure(
        bar_trace(first, limit),
        layout=plotly_layout(
            first.title(),
            height=max(320, 24 * n_bars + 120) + (100 if sliding else 0),
            xaxis=xaxis,
            yaxis=yaxis,
            showlegend=False,
        ),
    )
    if sliding:
        frames = []
        for i in range(len(trace.steps)):
            d = distribution_data(trace, i)
            frames.append(
                go.Frame(
                    name=str(i),
                    data=[bar_trace(d, limit)],
                    layout={"title": {"text": title_text(d.title())[0]}},
                )
            )
        fig.frames = frames
        fig.update_layout(**step_controls(trace))
    return fig


def step_controls(trace: Trace, prefix: str = "step ", active: int = 0) -> dict:
    """A slider over the steps (frames named "0", "1", ...), starting at step `active`, and a
    play/pause button."""

    def go_to(duration):
        return {
            "mode": "immediate",
            "frame": {"duration": duration, "redraw": True},
            "transition": {"duration": 0},
            "fromcurrent": True,
        }

    steps = [
        {"label": str(i), "method": "animate", "args": [[str(i)], go_to(0)]}
        for i in range(len(trace.steps))
    ]
    return {
        "margin": {"b": 150},
        # The slider starts 110 px in, right of the play/pause buttons at any figure width.
        "sliders": [
            {
                "active": active,
                "steps": steps,
                "x": 0,
                "len": 1,
                "y": 0,
                "yanchor": "top",
                "pad": {"t": 70, "l": 110},
                "currentvalue": {"prefix": prefix + "(0 = prefill): "},
            }
        ],
        "updatemenus": [
            {
                "type": "buttons",
                "showactive": False,
                "x": 0,
                "y": 0,
                "xanchor": "left",
                "yanchor": "top",
                "pad": {"t": 75},
                "direction": "left",
                "buttons": [
                    {"label": "▶", "method": "animate", "args": [None, go_to(700)]},
                    {
                        "label": "❚❚",
                        "method": "animate",
                        "args": [
                            [None],
                            {"mode": "immediate", "frame": {"duration": 0, "redraw": False}},
                        ],
                    },
                ],
            }
        ],
    }


# ---- matplotlib ---------------------------------------------------------------------------------
def draw_bars(ax, d: Distribution, limit: Optional[int] = None) -> None:
    """Horizontal bars of `d` on a matplotlib axes (used here and by the explorer)."""
    bars = d.bars(limit)
    y = list(range(len(bars)))
    ax.barh(
        y,
        [b.prob for b in bars],
        color=[b.colour for b in bars],
        edgecolor=[palette.FORMULA if b.kind == "chosen" else b.colour for b in bars],
    )
    set_ticklabels(ax, "y", y, [b.label for b in bars], fontsize=8)
    for i, b in enumerate(bars):
        ax.text(b.prob + 0.01, i, f"{b.prob:.1%}", va="center", fontsize=7)
    ax.set_ylim(len(bars) - 0.5, -0.5)
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("probability")


def distribution_static(trace: Trace, step: int = 0, limit: Optional[int] = None):
    """Matplotlib bars of the next-token distribution at `step` (0 = prefill). Lesson 02."""
    d = distribution_data(trace, step)
    fig, ax = new_figure(figsize=(7, 0.28 * len(d.bars(limit)) + 1.3))
    draw_bars(ax, d, limit)
    mpl_title(ax, d.title(), loc="left", fontsize=10)
    fig.tight_layout()
    return fig
