"""The logit lens: the answer forming layer by layer (lesson 14).

`viz.record(..., lens=True)` applies the model's final norm and output head to the residual
stream after every layer, at every step (`Trace.lens`, read by `viz.lens`). Three views:

- `logit_lens_figure`: every step (x) by every layer (y), coloured by how sure each layer's
  top-1 guess is; a dot where that guess is the token the step finally chose, and a line
  through the first layer that guessed it.
- `logit_lens_step_figure`: one step, layer by layer: each layer's top-1 guess and its
  probability, and the probability of the final token; a slider and play button over the
  steps (no kernel needed).
- `logit_lens_settle_figure`: per step, the depth at which the answer first appears and the
  depth from which it stays, with their medians: "where does the answer settle".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from viz.lens import agreement, check_lens, first_agreement, settled
from viz.trace import Trace
from viz.views import palette
from viz.views.base import check_trace, get_step, plotly_layout
from viz.views.text import esc, token_label


@dataclass(frozen=True)
class LensData:
    """The numbers the lens views draw; rows are layers 0 (the embedding) .. n_layers."""

    n_layers: int
    tokens: list[str]  # per step: the token finally chosen, made visible
    top1: list[list[str]]  # [step][layer]: that layer's most likely token
    top1_probs: list[list[float]]  # [step][layer]: its probability
    chosen_probs: list[list[float]]  # [step][layer]: the final token's probability there
    chosen_ranks: list[list[int]]  # [step][layer]: its rank there (0 = top-1)
    agrees: list[list[bool]]  # [step][layer]: the layer's top-1 is the final token
    first: list[Optional[int]]  # per step: first layer whose top-1 is the final token
    settled: list[Optional[int]]  # per step: first layer from which every layer agrees
    candidates: list[list[str]]  # [step][layer]: the layer's top-k as "token 0.53, ..." text


def _round(values) -> list[float]:
    """To 6 significant digits: short in the saved notebook, and a last digit that another
    CPU's rounding flips stays far inside what nbval tolerates (4 significant digits: a value
    rounded to 4 decimals, 0.906 on one CPU and 0.9059 on another, did not)."""
    return [float(f"{float(v):.6g}") for v in values]


def _rank_label(rank: int) -> str:
    """A rank as the hover shows it: exact below 100; beyond, where thousands of tokens share
    nearly the same tiny probability and another CPU's rounding reorders them (3,934 on one,
    3,933 on another), only that it is far down."""
    return f"{rank:,}" if rank < 100 else "past 100"


def logit_lens_data(trace: Trace) -> LensData:
    """The lens of every step of `trace` (recorded with `viz.record(..., lens=True)`); a
    ValueError naming the fix for a trace without one. Lesson 14."""
    lens = check_lens(check_trace(trace))
    ids, probs = lens.ids(), lens.probs()
    label = lambda t: token_label(*lens.token(int(t)))  # noqa: E731
    agree = agreement(trace)
    return LensData(
        n_layers=lens.n_layers,
        tokens=[token_label(s.token_text, s.token_piece) for s in trace.steps],
        top1=[[label(t) for t in row[:, 0]] for row in ids],
        top1_probs=[_round(row[:, 0]) for row in probs],
        chosen_probs=[_round(row) for row in lens.chosen_probs()],
        chosen_ranks=[[int(r) for r in row] for row in lens.chosen_ranks()],
        agrees=[[bool(a) for a in row] for row in agree],
        first=first_agreement(trace),
        settled=settled(trace),
        candidates=[
            [
                ", ".join(f"{esc(label(t))} {p:.3f}" for t, p in zip(i_row, p_row))
                for i_row, p_row in zip(s_ids, s_probs)
            ]
            for s_ids, s_probs in zip(ids, probs)
        ],
    )


def _step_ticks(d: LensData) -> dict:
    """The x axis of a per-step figure: each step's chosen token as its tick label."""
    n = len(d.tokens)
    every = max(1, -(-n // 48))
    ticks = list(range(0, n, every))
    return {
        "tickmode": "array",
        "tickvals": ticks,
        "tickangle": -90,
        "ticktext": [esc(d.tokens[i]) for i in ticks],
        "range": [-0.5, n - 0.5],
        "tickfont": {"size": 10, "family": "DejaVu Sans Mono, monospace"},
    }


def logit_lens_figure(trace: Trace):
    """Plotly heatmap: steps across (each labelled by the token it chose), layers up (0 = the
    input embedding, top = the model's output); colour = the probability of that layer's top-1
    guess; hover = the guess, and the probability and rank of the token finally chosen (the
    top-k of each layer: `logit_lens_step_figure`). A dot marks each layer whose guess is the
    token finally chosen, a line the first such layer per step. Lesson 14."""
    import plotly.graph_objects as go

    d = logit_lens_data(trace)
    n, rows = len(d.tokens), d.n_layers + 1
    z = [[d.top1_probs[s][l] for s in range(n)] for l in range(rows)]  # [layer][step]
    guess = [[esc(d.top1[s][l]) for s in range(n)] for l in range(rows)]
    chosen = [
        [[d.chosen_probs[s][l], _rank_label(d.chosen_ranks[s][l])] for s in range(n)]
        for l in range(rows)
    ]  # the final token's probability and rank per cell
    dots = [(s, l) for s in range(n) for l in range(rows) if d.agrees[s][l]]
    firsts = [(s, f) for s, f in enumerate(d.first) if f is not None]
    fig = go.Figure(
        [
            go.Heatmap(
                z=z,
                x=list(range(n)),
                y=list(range(rows)),
                colorscale=palette.SEQUENTIAL,
                zmin=0,
                zmax=1,
                text=guess,
                customdata=chosen,
                hovertemplate="layer %{y}, step %{x}: top-1 %{text} %{z:.3f}<br>the token "
                "chosen: %{customdata[0]:.3f}, rank %{customdata[1]}"
                "<extra></extra>",
                name="top-1 probability",
                colorbar={
                    "title": {"text": "top-1 p", "side": "right"},
                    "thickness": 12,
                    "len": 0.8,
                },
            ),
            go.Scatter(
                x=[s for s, _ in dots],
                y=[l for _, l in dots],
                mode="markers",
                marker={
                    "color": "white",
                    "size": 5,
                    "line": {"color": palette.FORMULA, "width": 1},
                },
                name="top-1 = the token chosen",
                hoverinfo="skip",
            ),
            go.Scatter(
                x=[s for s, _ in firsts],
                y=[f for _, f in firsts],
                mode="lines",
                line={"color": palette.CHOSEN, "width": 2, "shape": "hvh"},
                name="first layer to guess it",
                hoverinfo="skip",
            ),
        ]
    )
    fig.update_layout(
        **plotly_layout(
            f"The logit lens: each layer's guess of the next token ({trace.model.name}, "
            f"{d.n_layers} layers)",
            height=520,
            margin={"b": 160},
        )
    )
    fig.update_xaxes(title="step: the token finally chosen", **_step_ticks(d))
    fig.update_yaxes(
        title="layer (0 = the embedding)", range=[-0.5, rows - 0.5], dtick=5 if rows > 12 else 1
    )
    fig.update_layout(legend={"y": 0, "yanchor": "bottom", "yref": "container"})
    return fig


def _step_traces(d: LensData, step: int) -> list:
    """The moving traces of `logit_lens_step_figure` at `step`: bars of each layer's top-1
    probability (labelled with the guess, vermillion where it is the final token) and the
    final token's probability per layer."""
    import plotly.graph_objects as go

    rows = list(range(d.n_layers + 1))
    colours = [palette.CHOSEN if a else palette.MUTED for a in d.agrees[step]]
    return [
        go.Bar(
            x=d.top1_probs[step],
            y=rows,
            orientation="h",
            marker={"color": colours},
            text=[esc(t) for t in d.top1[step]],
            textposition="outside",
            cliponaxis=False,
            textfont={"size": 10, "family": "DejaVu Sans Mono, monospace"},
            customdata=d.candidates[step],
            name="each layer's top-1 guess",
            hovertemplate="layer %{y}: %{text} %{x:.3f}<br>%{customdata}<extra></extra>",
        ),
        go.Scatter(
            x=d.chosen_probs[step],
            y=rows,
            mode="lines+markers",
            line={"color": palette.PREFILL, "width": 2},
            marker={"size": 5},
            name="the token finally chosen",
            hovertemplate="layer %{y}: %{x:.3f}<extra>the chosen token</extra>",
        ),
    ]


def _step_title(d: LensData, step: int) -> str:
    first, settle = d.first[step], d.settled[step]
    where = (
        "no layer's top-1 was it (a sampled token)"
        if first is None
        else f"first guessed at layer {first}, settled from layer {settle}"
    )
    return esc(f"Step {step} chose {d.tokens[step]}: {where}")


def logit_lens_step_figure(trace: Trace, step: Optional[int] = None):
    """Plotly: one step, layer by layer (0 = the embedding, at the bottom): each layer's top-1
    guess as a bar of its probability, labelled with the token (vermillion where it is the
    token finally chosen), and the final token's probability per layer as a line.
    step=None: a slider and play button over the steps (no kernel), opening at the first
    decode step; step=k: that step alone. Lesson 14."""
    import plotly.graph_objects as go

    d = logit_lens_data(trace)
    n = len(d.tokens)
    start = (1 if n > 1 else 0) if step is None else get_step(trace, step).index
    fig = go.Figure(_step_traces(d, start))
    fig.update_layout(**plotly_layout("", height=560, bargap=0.25))
    fig.update_layout(title_text=_step_title(d, start))
    fig.update_xaxes(title="probability", range=[0, 1.3], tickvals=[0, 0.25, 0.5, 0.75, 1])
    fig.update_yaxes(
        title="layer (0 = the embedding)",
        range=[-0.7, d.n_layers + 0.7],
        dtick=5 if d.n_layers > 12 else 1,
    )
    if step is None and n > 1:
        from viz.views.distribution import step_controls

        fig.frames = [
            go.Frame(
                name=str(i),
                data=_step_traces(d, i),
                traces=[0, 1],
                layout={"title": {"text": _step_title(d, i)}},
            )
            for i in range(n)
        ]
        controls = step_controls(trace, active=start)
        controls["margin"] = {"l": 60, "r": 20, "t": 60, "b": 210}
        controls["sliders"][0]["pad"] = {"t": 100, "l": 110}
        controls["updatemenus"][0]["pad"] = {"t": 105}
        fig.update_layout(**controls)
        fig.update_layout(legend={"y": 1.0, "yanchor": "bottom", "yref": "paper", "x": 0})
    return fig


def logit_lens_settle_figure(trace: Trace):
    """Plotly: per step (labelled by its token), the first layer whose top-1 is the token
    finally chosen, and the layer from which every later layer agrees; dotted, the median of
    each over the steps. Where the two lines part, a layer guessed the answer and a later one
    changed its mind. Lesson 14."""
    import statistics

    import plotly.graph_objects as go

    d = logit_lens_data(trace)
    n = len(d.tokens)
    fig = go.Figure()
    for name, values, colour in (
        ("first layer to guess it", d.first, palette.CHOSEN),
        ("settled from layer", d.settled, palette.PREFILL),
    ):
        known = [(s, v) for s, v in enumerate(values) if v is not None]
        fig.add_trace(
            go.Scatter(
                x=[s for s, _ in known],
                y=[v for _, v in known],
                mode="lines+markers",
                line={"color": colour, "width": 2},
                name=name,
                customdata=[esc(d.tokens[s]) for s, _ in known],
                hovertemplate="step %{x} (%{customdata}): layer %{y}<extra>" + name + "</extra>",
            )
        )
        if known:
            mid = statistics.median(v for _, v in known)
            fig.add_trace(
                go.Scatter(
                    x=[-0.5, n - 0.5],
                    y=[mid, mid],
                    mode="lines",
                    line={"color": colour, "width": 1, "dash": "dot"},
                    name=f"median {mid:g}",
                    hoverinfo="skip",
                )
            )
    fig.update_layout(
        **plotly_layout(
            f"Where the answer settles, step by step ({trace.model.name}, {d.n_layers} layers)",
            height=400,
            margin={"b": 170},
        )
    )
    fig.update_xaxes(title="step: the token finally chosen", **_step_ticks(d))
    fig.update_yaxes(title="layer", range=[-0.5, d.n_layers + 0.5])
    return fig
