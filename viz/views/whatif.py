"""Sampling what-if: re-shape a step's RECORDED logits with temperature, top-k and top-p, and
see which tokens remain possible — no model needed.

The reshaping is `viz.sampling.sampling_distribution`, the very function `viz.record` samples
with. A trace keeps only the `log_top` most likely logits per step; how much probability they
held at temperature 1 is known exactly from the recorded `logsumexp` (the rest belongs to the
unrecorded tokens, drawn as one grey bar). So these settings are exact: greedy; any top-k ≤
the number recorded (only recorded tokens remain); and temperature 1 without top-k (the
recorded whole-vocabulary probabilities themselves, and top-p's cut where it falls among the
recorded tokens). Any other setting would need the unrecorded logits: the probabilities shown
are then re-normalised over the recorded candidates, each an upper bound, and the figure
says so.
Used in lesson 02 (predicting the next token).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Optional

from viz.trace import Step, Trace
from viz.views import palette
from viz.views.base import (
    check_trace,
    get_step,
    mpl_title,
    new_figure,
    plotly_layout,
    set_ticklabels,
)
from viz.views.distribution import distinct_labels
from viz.views.text import esc

# The widget's slider ranges (and the report's grid is drawn from them).
TEMPERATURE_MAX = 2.0
TEMPERATURE_STEP = 0.05
TOP_P_STEP = 0.05


KEPT = "{kept} of the {n} recorded candidates remain possible. "


def setting_text(temperature: float, top_k: Optional[int], top_p: Optional[float]) -> str:
    """A sampling setting in words, e.g. "temperature 0.7, top-k 5, no top-p"."""
    return ", ".join(
        [
            "greedy (temperature 0)" if temperature == 0 else f"temperature {temperature:g}",
            "no top-k" if top_k is None else f"top-k {top_k}",
            "no top-p" if top_p is None else f"top-p {top_p:g}",
        ]
    )


@dataclass(frozen=True)
class WhatIf:
    """One step's recorded candidates, re-shaped by a sampling setting."""

    step: int
    phase: str
    temperature: float
    top_k: Optional[int]
    top_p: Optional[float]
    ids: list[int]  # the recorded candidates, most likely first
    labels: list[str]
    recorded: list[float]  # their recorded probabilities (whole vocabulary, temperature 1)
    probs: list[float]  # the sampler's probabilities of the recorded candidates (exact, or
    #   upper bounds re-normalised over them: see `exact`)
    chosen_id: int  # the token the recording actually picked
    covered: float  # probability the recorded candidates held at temperature 1
    vocab_size: int
    rest: Optional[float] = None  # probability left to the unrecorded tokens under this
    #   setting, when known exactly (None: it would need logits the trace did not keep)

    @property
    def kept(self) -> list[bool]:
        """Which candidates remain possible (probability > 0)."""
        return [p > 0 for p in self.probs]

    @property
    def exact(self) -> bool:
        """True when the numbers are the sampler's own over the whole vocabulary: greedy,
        top-k ≤ the candidates recorded, or temperature 1 without top-k (unless top-p reaches
        past the recorded candidates)."""
        return self.rest is not None

    def setting(self) -> str:
        return setting_text(self.temperature, self.top_k, self.top_p)

    def note(self) -> str:
        """What the numbers are, honestly: over the recorded candidates only."""
        return KEPT.format(kept=sum(self.kept), n=len(self.ids)) + self.coverage() + self.accuracy()

    def coverage(self) -> str:
        n, rest = len(self.ids), self.vocab_size - len(self.ids)
        return (
            f"The trace recorded the {n} most likely tokens, which held {self.covered:.1%} "
            f"of the probability at temperature 1 (the other {rest:,} tokens held "
            f"{1 - self.covered:.1%}, known from logsumexp). "
        )

    def accuracy(self) -> str:
        if self.exact and self.rest:
            return (
                "At temperature 1 with no top-k the recorded probabilities are the sampler's "
                "own and the grey bar holds the unrecorded tokens' share: exact."
            )
        if self.exact:
            return (
                "This setting keeps only recorded tokens: these are exactly the sampler's "
                "probabilities."
            )
        return (
            "This setting could also keep unrecorded tokens, so the probabilities are "
            "re-normalised over the recorded candidates only: each is an upper bound"
            + (", and top-p's cut is taken among them." if self.top_p else ".")
        )

    def where(self) -> str:
        return f"What if, at step {self.step} ({self.phase}): "

    def title(self) -> str:
        return self.where() + self.setting()


def whatif_data(
    trace: Trace,
    step: int = 0,
    temperature: float = 1.0,
    top_k: Optional[int] = None,
    top_p: Optional[float] = None,
) -> WhatIf:
    """The recorded candidates of `step` re-shaped by a sampling setting (see module doc).

    top_k=None / top_p=None: no such filter. Bad settings raise the same ValueError as
    `viz.record` (from `viz.sampling.check_sampling`). Lesson 02.
    """
    s = get_step(trace, step)
    return _whatif(
        trace, s, distinct_labels(s.top_texts, s.top_ids, s.top_pieces), temperature, top_k, top_p
    )


def _whatif(
    trace: Trace,
    s: Step,
    labels: list[str],
    temperature: float,
    top_k: Optional[int],
    top_p: Optional[float],
) -> WhatIf:
    import torch

    from viz.sampling import sampling_distribution

    logits = torch.tensor(s.top_logits, dtype=torch.float32)
    probs = sampling_distribution(logits, temperature, top_k, top_p).tolist()  # over recorded
    n, covered = len(s.top_ids), float(sum(s.top_probs))
    rest: Optional[float] = None
    if temperature == 0 or (top_k is not None and top_k <= n):
        rest = 0.0  # only recorded tokens remain: re-normalising over them is exact
    elif temperature == 1 and top_k is None:
        # The recorded probabilities are the whole vocabulary's (from logsumexp); every
        # unrecorded token is less likely than every recorded one.
        if top_p is None or top_p >= 1:
            probs, rest = list(s.top_probs), max(0.0, 1.0 - covered)
        else:
            before = [sum(s.top_probs[:i]) for i in range(n)]  # mass of the better tokens
            if covered >= top_p:  # the nucleus closes among the recorded tokens
                keep = [b < top_p for b in before]
                kept = sum(p for p, k in zip(s.top_probs, keep) if k)
                probs = [p / kept if k else 0.0 for p, k in zip(s.top_probs, keep)]
                rest = 0.0
    return WhatIf(
        step=s.index,
        phase=s.phase,
        temperature=float(temperature),
        top_k=top_k,
        top_p=None if top_p is None else float(top_p),
        ids=list(s.top_ids),
        labels=labels,
        recorded=list(s.top_probs),
        probs=probs,
        chosen_id=s.token_id,
        covered=covered,
        vocab_size=trace.model.vocab_size,
        rest=rest,
    )


def _bar_text(w: WhatIf) -> list[str]:
    return [f"{p:.1%}" if k else "removed" for p, k in zip(w.probs, w.kept)]


def _colours(w: WhatIf) -> list[str]:
    return [palette.PHASE[w.phase] if k else palette.MUTED for k in w.kept]


def rest_label(w: WhatIf) -> str:
    """The grey bar's label: every token the trace did not record, together."""
    return f"the other {w.vocab_size - len(w.ids):,} tokens"


def rest_text(rest: Optional[float]) -> str:
    """The grey bar's value: exact when known, else said to be unknown."""
    return "not known: not recorded" if rest is None else f"{rest:.1%}"


# ---- plotly -------------------------------------------------------------------------------------
# Trace order in the figure: recorded outlines, this setting's bars, the unrecorded tokens' bar.
RECORDED, SETTING, REST = range(3)


def whatif_traces(w: WhatIf):
    """Three horizontal go.Bars: the recorded probabilities (grey outline), the re-shaped ones,
    and one grey bar for all unrecorded tokens together (below the candidates)."""
    import plotly.graph_objects as go

    y = list(range(len(w.ids)))
    names = [
        esc(lab) + (" ◀ chosen" if i == w.chosen_id else "") for lab, i in zip(w.labels, w.ids)
    ]
    return [
        go.Bar(
            x=w.recorded,
            y=y,
            orientation="h",
            name="recorded (temperature 1)",
            marker={"color": "rgba(0,0,0,0)", "line": {"color": palette.MUTED, "width": 1.5}},
            customdata=names,
            hovertemplate="%{customdata}: recorded p = %{x:.4f}<extra></extra>",
        ),
        go.Bar(
            x=w.probs,
            y=y,
            orientation="h",
            name="with this setting",
            marker={"color": _colours(w)},
            text=_bar_text(w),
            textposition="outside",
            cliponaxis=False,
            customdata=names,
            hovertemplate="%{customdata}: p = %{x:.4f}<extra></extra>",
        ),
        go.Bar(
            x=[w.rest or 0.0],
            y=[len(w.ids)],
            orientation="h",
            name="not recorded",
            marker={"color": palette.MUTED},
            text=[rest_text(w.rest)],
            textposition="outside",
            cliponaxis=False,
            showlegend=False,
            hovertemplate=esc(rest_label(w)) + ": %{text}<extra></extra>",
        ),
    ]


def whatif_axes(w: WhatIf) -> tuple[dict, dict]:
    """x (probability 0-1) and y (one tick per candidate, the chosen one marked ◀, then the
    unrecorded tokens) settings."""
    labels = [esc(lab) + (" ◀" if i == w.chosen_id else "") for lab, i in zip(w.labels, w.ids)]
    n = len(w.ids)
    return (
        {"range": [0, 1.12], "title": "probability", "tickformat": ".0%"},
        {
            "tickmode": "array",
            "tickvals": list(range(n + 1)),
            "ticktext": labels + [esc(rest_label(w))],
            "range": [n + 0.5, -0.5],
            "title": None,
            "automargin": True,
        },
    )


def whatif_figure(
    trace: Trace,
    step: int = 0,
    temperature: float = 1.0,
    top_k: Optional[int] = None,
    top_p: Optional[float] = None,
):
    """Plotly: recorded vs re-shaped probabilities of one step's candidates. Lesson 02."""
    import plotly.graph_objects as go

    w = whatif_data(trace, step, temperature, top_k, top_p)
    xaxis, yaxis = whatif_axes(w)
    fig = go.Figure(
        whatif_traces(w),
        layout=plotly_layout(
            w.title(),
            height=max(380, 22 * (len(w.ids) + 1) + 200),
            barmode="overlay",
            xaxis=xaxis,
            yaxis=yaxis,
            margin={"l": 130, "r": 30, "t": 85, "b": 140},
            legend={"orientation": "h", "x": 0, "y": 1.01, "yanchor": "bottom"},
        ),
    )
    fig.add_annotation(
        text="<br>".join(esc(line) for line in textwrap.wrap(w.note(), 110)),
        xref="paper",
        yref="paper",
        x=0,
        y=0,
        yshift=-62,
        xanchor="left",
        yanchor="top",
        align="left",
        showarrow=False,
        font={"size": 11},
    )
    return fig


# ---- ipywidgets ---------------------------------------------------------------------------------
def whatif_widget(trace: Trace, step: int = 0):
    """ipywidgets: sliders for step, temperature, top-k and top-p redraw `whatif_figure`.

    top-k at 0 and top-p at 1 mean "off". Returns a `viz.views.widgets.LinkedView`
    (`.controls[...]`, `.figure`). Lesson 02.
    """
    import ipywidgets as widgets

    from viz.views.widgets import LinkedView

    check_trace(trace)
    first = get_step(trace, step)
    last = len(trace.steps) - 1
    n = max(len(s.top_ids) for s in trace.steps)
    style = {"description_width": "initial"}  # every label whole ("top-k (0 = off)")
    controls = {
        "step": widgets.IntSlider(
            value=first.index, min=0, max=last, description="step", disabled=last == 0, style=style
        ),
        "temperature": widgets.FloatSlider(
            value=1.0,
            min=0.0,
            max=TEMPERATURE_MAX,
            step=TEMPERATURE_STEP,
            description="temperature",
            readout_format=".2f",
            style=style,
        ),
        "top_k": widgets.IntSlider(
            value=0, min=0, max=n, description="top-k (0 = off)", style=style
        ),
        "top_p": widgets.FloatSlider(
            value=1.0,
            min=TOP_P_STEP,
            max=1.0,
            step=TOP_P_STEP,
            description="top-p (1 = off)",
            readout_format=".2f",
            style=style,
        ),
    }
    return LinkedView(
        controls,
        [
            widgets.HBox([controls["step"], controls["temperature"]]),
            widgets.HBox([controls["top_k"], controls["top_p"]]),
        ],
        lambda v: whatif_figure(trace, v["step"], **setting(v)),
    )


def setting(values: dict) -> dict:
    """Slider values → sampling arguments (top-k 0 and top-p 1 mean no filter)."""
    temperature = round(float(values["temperature"]), 4)
    top_k = int(values["top_k"]) or None
    top_p = round(float(values["top_p"]), 4)
    return {"temperature": temperature, "top_k": top_k, "top_p": None if top_p >= 1 else top_p}


# ---- the report's grid (no kernel: every setting computed ahead) -----------------------------
GRID_TEMPERATURES = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
GRID_TOP_K = [None, 1, 2, 3, 5, 10, 20]
GRID_TOP_P = [None, 0.95, 0.9, 0.8, 0.5, 0.2]


def whatif_grid(
    trace: Trace, temperatures=GRID_TEMPERATURES, top_ks=GRID_TOP_K, top_ps=GRID_TOP_P
) -> dict:
    """Every (step, temperature, top-k, top-p) of a grid, computed by `whatif_data`,
    for a page with no kernel (the HTML report). Distinct probability vectors are stored once
    (greedy and top-k 1 give the same one at every temperature), to 4 significant digits (a
    possible token never rounds to 0).

    Returns {"temperatures", "top_ks", "top_ps": the grid's values (None = off),
    "vectors": [[p, ...]], "accuracy": [sentence], "settings": [t][k][p] → text,
    "index": [step][t][k][p] → [vector number, accuracy number, unrecorded share or None],
    "steps": [{labels, recorded, colour, title, coverage, rest_label}], "kept": `KEPT`,
    "unknown": the grey bar's text when the unrecorded share is not known}.
    """
    check_trace(trace)
    n_max = max(len(s.top_ids) for s in trace.steps)
    top_ks = [k for k in top_ks if k is None or k <= n_max]
    vectors: list[list[float]] = []
    seen: dict[tuple, int] = {}
    accuracy: list[str] = []

    def cell(w: WhatIf) -> list:
        """[vector number, accuracy number, unrecorded share] of one setting, storing each
        distinct vector once."""
        vec = tuple(float(f"{x:.4g}") for x in w.probs)
        if vec not in seen:
            seen[vec] = len(vectors)
            vectors.append(list(vec))
        if w.accuracy() not in accuracy:
            accuracy.append(w.accuracy())
        rest = None if w.rest is None else float(f"{w.rest:.4g}")
        return [seen[vec], accuracy.index(w.accuracy()), rest]

    index, steps = [], []
    for s in trace.steps:
        labels = distinct_labels(s.top_texts, s.top_ids, s.top_pieces)
        index.append(
            [
                [[cell(_whatif(trace, s, labels, t, k, p)) for p in top_ps] for k in top_ks]
                for t in temperatures
            ]
        )
        w = _whatif(trace, s, labels, 1.0, None, None)
        steps.append(
            {
                "labels": [
                    esc(lab) + (" ◀" if j == w.chosen_id else "") for lab, j in zip(w.labels, w.ids)
                ],
                "recorded": w.recorded,
                "colour": palette.PHASE[w.phase],
                "title": esc(w.where()),
                "coverage": w.coverage(),
                "rest_label": esc(rest_label(w)),
            }
        )
    return {
        "temperatures": list(temperatures),
        "top_ks": top_ks,
        "top_ps": list(top_ps),
        "vectors": vectors,
        "accuracy": accuracy,
        "index": index,
        "steps": steps,
        "settings": [
            [[setting_text(t, k, p) for p in top_ps] for k in top_ks] for t in temperatures
        ],
        "kept": KEPT,
        "removed": palette.MUTED,
        "unknown": rest_text(None),
    }


# ---- matplotlib ---------------------------------------------------------------------------------
def whatif_static(
    trace: Trace,
    step: int = 0,
    temperature: float = 1.0,
    top_k: Optional[int] = None,
    top_p: Optional[float] = None,
):
    """Matplotlib: recorded vs re-shaped probabilities of one step's candidates. Lesson 02."""
    w = whatif_data(trace, step, temperature, top_k, top_p)
    y = list(range(len(w.ids)))
    fig, ax = new_figure(figsize=(8, 0.3 * (len(y) + 1) + 2.2))
    ax.barh(
        y,
        w.recorded,
        color="none",
        edgecolor=palette.MUTED,
        lw=1.2,
        label="recorded (temperature 1)",
    )
    ax.barh(y, w.probs, color=_colours(w), height=0.55, label="with this setting")
    for i, text in enumerate(_bar_text(w)):
        ax.text(max(w.probs[i], w.recorded[i]) + 0.01, i, text, va="center", fontsize=7)
    n = len(y)
    ax.barh([n], [w.rest or 0.0], color=palette.MUTED, height=0.55)
    ax.text((w.rest or 0.0) + 0.01, n, rest_text(w.rest), va="center", fontsize=7)
    set_ticklabels(
        ax,
        "y",
        y + [n],
        [lab + (" ◀" if i == w.chosen_id else "") for lab, i in zip(w.labels, w.ids)]
        + [rest_label(w)],
        fontsize=8,
    )
    ax.set_ylim(n + 0.5, -0.5)
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("probability")
    ax.legend(loc="lower right", fontsize=8)
    mpl_title(ax, w.title(), loc="left", fontsize=10)
    fig.text(0.01, 0.005, "\n".join(textwrap.wrap(w.note(), 120)), fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig
