"""Early-exit drafts against the exit layer L and the draft length k, read from the logit lens
(lesson 14).

A draft that stops after layer L guesses what the logit lens shows at layer L, so one greedy
trace recorded with `lens=True` says what every (L, k) would do (`viz.perf.lens_drafts`):
left, the share of decode steps where layer L's guess is the token chosen (a single draft's
chance of acceptance); right, the tokens each full pass would make, one line per k. Measured
runs (`viz.perf.compare_early_exit`) are drawn over them as diamonds: they land on the lines
where the draft passes round as the recorded ones did.
"""

from __future__ import annotations

from typing import Any, Sequence

from viz.lens import agreement_by_layer, check_lens
from viz.perf.early_exit import EarlyExitComparison, lens_draft_grid
from viz.trace import Trace
from viz.views import palette
from viz.views.base import check_trace, empty_figure, plotly_layout


NO_DECODE = (
    "a one-token reply has no decode step for a draft to guess: record a longer one, "
    "viz.record(lm, prompt, lens=True, max_new_tokens=16)"
)


def early_exit_data(
    trace: Trace, ks: Sequence[int] = (1, 2, 4, 8), measured: Sequence[EarlyExitComparison] = ()
) -> dict[str, Any]:
    """The numbers `early_exit_figure` draws: the exit layers (1 .. n_layers - 1), the lens's
    agreement at each, the predicted tokens per full pass and acceptance per k, and the
    measured comparisons' (L, k, tokens per pass, acceptance). Lesson 14."""
    lens = check_lens(check_trace(trace))
    if len(trace.steps) < 2:
        raise ValueError(NO_DECODE)
    for c in measured:
        if not isinstance(c, EarlyExitComparison):
            raise ValueError(
                f"measured takes results of viz.perf.compare_early_exit(...), not "
                f"{type(c).__name__}"
            )
    layers = list(range(1, lens.n_layers))
    grid = lens_draft_grid(trace, layers, ks)
    rate = agreement_by_layer(trace)
    return {
        "layers": layers,
        "agreement": [round(rate[L], 4) for L in layers],
        "ks": list(ks),
        "tokens_per_pass": {
            k: [round(g.tokens_per_pass, 4) for g in grid if g.draft_tokens == k] for k in ks
        },
        "acceptance": {
            k: [round(g.acceptance_rate or 0.0, 4) for g in grid if g.draft_tokens == k] for k in ks
        },
        "measured": [
            {
                "exit_layer": c.exit_layer,
                "k": c.draft_tokens,
                "tokens_per_pass": c.tokens_per_pass,
                "acceptance": c.acceptance_rate,
                "speedup": c.speedup,
            }
            for c in measured
        ],
    }


def early_exit_figure(
    trace: Trace, ks: Sequence[int] = (1, 2, 4, 8), measured: Sequence[EarlyExitComparison] = ()
):
    """Plotly, two panels against the exit layer L: left, the lens's agreement with the final
    token (a single draft's acceptance); right, the tokens per full pass early exit would make
    with k drafts (one line per k), from the lens of `trace` (greedy, `lens=True`). `measured`
    comparisons are drawn as diamonds. Returns the figure; nothing is displayed. Lesson 14."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    check_lens(check_trace(trace))  # no lens: early_exit_data's error, not an empty state
    if len(trace.steps) < 2:
        return empty_figure(f"Early exit, read from the logit lens: {trace.model.name}", NO_DECODE)
    d = early_exit_data(trace, ks, measured)
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=("a draft's acceptance: the lens agrees", "tokens per full pass, k drafts"),
    )
    fig.add_trace(
        go.Scatter(
            x=d["layers"],
            y=d["agreement"],
            mode="lines+markers",
            line={"color": palette.FORMULA, "width": 2},
            marker={"size": 4},
            name="lens agreement at L",
            hovertemplate="L=%{x}: %{y:.0%}<extra>lens</extra>",
        ),
        1,
        1,
    )
    for i, k in enumerate(d["ks"]):
        colour = palette.CYCLE[i % len(palette.CYCLE)]
        fig.add_trace(
            go.Scatter(
                x=d["layers"],
                y=d["tokens_per_pass"][k],
                mode="lines",
                line={"color": colour, "width": 2},
                name=f"k={k}",
                hovertemplate=f"L=%{{x}}: %{{y:.2f}} tokens/pass<extra>k={k}</extra>",
            ),
            1,
            2,
        )
    _add_measured(fig, d)
    fig.update_layout(
        **plotly_layout(
            f"Early exit, read from the logit lens: {trace.model.name}"
            f" stopped after L of its {len(d['layers']) + 1} layers",
            height=400,
        )
    )
    fig.update_xaxes(title="exit layer L")
    fig.update_yaxes(title="share of decode steps", range=[0, 1.02], tickformat=".0%", row=1, col=1)
    fig.update_yaxes(title="tokens per full pass", rangemode="tozero", row=1, col=2)
    return fig


def _add_measured(fig, d: dict[str, Any]) -> None:
    """Each measured comparison as a diamond on the right panel, coloured as its k's line."""
    import plotly.graph_objects as go

    for m in d["measured"]:
        colour = (
            palette.CYCLE[d["ks"].index(m["k"]) % len(palette.CYCLE)]
            if m["k"] in d["ks"]
            else palette.FORMULA
        )
        name = f"measured L={m['exit_layer']}, k={m['k']}"  # counts only: compared by nbval
        fig.add_trace(
            go.Scatter(
                x=[m["exit_layer"]],
                y=[m["tokens_per_pass"]],
                mode="markers",
                marker={
                    "symbol": "diamond",
                    "size": 11,
                    "color": colour,
                    "line": {"color": palette.FORMULA, "width": 1},
                },
                name=name,
                hovertemplate="%{y:.2f} tokens/pass<extra>" + name + "</extra>",
            ),
            1,
            2,
        )
