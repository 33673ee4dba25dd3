"""The speculative-decoding views: how many tokens each decode pass made with prompt lookup
(lesson 13) or with early-exit drafts (lesson 14), in one figure; and prompt lookup over its
draft length k (`draft_length_figure`, lesson 13's slider).

Plain greedy decode makes exactly one token per forward pass. Prompt lookup checks up to k
guessed tokens in one pass and keeps the model's own next token plus every guess before the
first wrong one, so a pass makes 1 to k + 1 tokens. The bars count the decode passes (the
prefill not included) by the tokens each made, one colour per prompt: a reply that copies
its prompt piles up at k + 1, a reply with nothing to copy stays at 1. Early exit
(`viz.perf.compare_early_exit`: drafts from the model's own first L layers) is drawn the same
way, its full passes counted (its draft passes are not forward passes of the full model).
Numbers: `viz.perf.speculative` (`compare_prompt_lookup`, `GenerateRun.histogram`) and
`viz.perf.early_exit` (`DraftRun.histogram`).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from viz.perf.early_exit import EarlyExitComparison
from viz.perf.speculative import LookupComparison
from viz.views import palette
from viz.views.base import plotly_layout

Comparison = Union[LookupComparison, EarlyExitComparison]
Comparisons = Union[Sequence[Comparison], Mapping[str, Comparison]]
KINDS = (LookupComparison, EarlyExitComparison)


def _named(comparisons: Comparisons) -> list[tuple[str, Comparison]]:
    """(name, comparison) pairs: a mapping's keys, or each prompt's first words."""
    if isinstance(comparisons, KINDS):
        comparisons = [comparisons]
    if isinstance(comparisons, Mapping):
        pairs = [(str(k), v) for k, v in comparisons.items()]
    else:
        pairs = []
        for c in comparisons:
            words = c.prompt.split() if isinstance(c, KINDS) else []
            pairs.append((" ".join(words[:5]) + (" …" if len(words) > 5 else ""), c))
    if not pairs:
        raise ValueError(
            "no comparison to draw: give one or more results of "
            "viz.perf.compare_prompt_lookup(...) or compare_early_exit(...)"
        )
    for name, c in pairs:
        if not isinstance(c, KINDS):
            raise ValueError(
                f"expected a viz.perf.LookupComparison or EarlyExitComparison for "
                f"{name!r}, not {type(c).__name__}: make one with "
                "viz.perf.compare_prompt_lookup(lm, prompt) or "
                "viz.perf.compare_early_exit(lm, prompt, exit_layer=...)"
            )
    return pairs


def _passes(c: Comparison) -> tuple[int, dict[int, int], int, float]:
    """(k, {tokens made: decode passes}, decode passes, tokens per pass) of the speculative
    run: prompt lookup's forward passes, or early exit's full passes."""
    if isinstance(c, EarlyExitComparison):
        return c.draft_tokens, c.early.histogram(), len(c.early.passes), c.tokens_per_pass
    return (
        c.num_lookup_tokens,
        c.lookup.histogram(),
        c.lookup.forward_passes - 1,
        c.lookup.tokens_per_pass,
    )


def accepted_histogram_data(comparisons: Comparisons) -> list[dict[str, Any]]:
    """The numbers `accepted_histogram_figure` draws, one dict per comparison: its name, kind
    ("prompt lookup" or "early exit"), k, tokens made per pass (1 to k + 1) and the decode
    passes that made each, the mean tokens per pass and the speed-up with its verdict."""
    out = []
    for name, c in _named(comparisons):
        k, hist, passes, per_pass = _passes(c)
        made = list(range(1, k + 2))
        out.append(
            {
                "name": name,
                "kind": "early exit" if isinstance(c, EarlyExitComparison) else "prompt lookup",
                "k": k,
                "tokens_made": made,
                "passes": [hist.get(m, 0) for m in made],
                "decode_passes": passes,
                "tokens_per_pass": per_pass,
                "speedup": c.speedup,
                "verdict": c.speedup_verdict.word,
            }
        )
    return out


def accepted_histogram_figure(comparisons: Comparisons):
    """Plotly: bars of decode passes by the tokens each made with prompt lookup or early-exit
    drafts, one colour per comparison (a list of `LookupComparison`s and
    `EarlyExitComparison`s, or a dict name → comparison). Returns the figure; nothing is
    displayed. Lessons 13 and 14."""
    import plotly.graph_objects as go

    data = accepted_histogram_data(comparisons)
    fig = go.Figure()
    for i, d in enumerate(data):
        fig.add_trace(
            go.Bar(
                x=d["tokens_made"],
                y=d["passes"],
                marker={"color": palette.CYCLE[i % len(palette.CYCLE)]},
                name=f"{d['name']}: {d['tokens_per_pass']:.2f} tokens/pass, ×{d['speedup']:.2f}",
                hovertemplate=(
                    f"%{{y}} decode passes made %{{x}} tokens each<extra>{d['name']}</extra>"
                ),
            )
        )
    k = max(d["k"] for d in data)
    kinds = sorted({d["kind"] for d in data}, reverse=True)
    what = "Prompt lookup" if kinds == ["prompt lookup"] else " and ".join(kinds).capitalize()
    fig.update_layout(
        **plotly_layout(
            f"{what}: tokens made by each decode pass (plain decode makes 1 per pass)",
            height=380,
            barmode="group",
        )
    )
    fig.update_xaxes(
        title=f"tokens made in one decode pass (1 + guesses accepted, at most {k + 1})",
        tickmode="linear",
        tick0=1,
        dtick=1,
        range=[0.5, k + 1.5],
    )
    fig.update_yaxes(title="decode passes", rangemode="tozero")
    return fig


def draft_length_data(comparisons: Mapping[int, LookupComparison]) -> dict[str, Any]:
    """The numbers `draft_length_figure` draws: prompt lookup on one prompt at several draft
    lengths k (a dict k → `compare_prompt_lookup(..., num_lookup_tokens=k)`), sorted by k: the
    tokens each decode pass made on average, its ceiling k + 1 (every guess accepted), and the
    speed-up over plain decode with its spread (middle half of the rounds) and verdict."""
    if not isinstance(comparisons, Mapping) or not comparisons:
        raise ValueError(
            "give a dict draft length k → viz.perf.compare_prompt_lookup(lm, prompt, "
            "num_lookup_tokens=k), for one prompt and one k or more"
        )
    prompts = set()
    for k, c in comparisons.items():
        if not isinstance(c, LookupComparison):
            raise ValueError(
                f"expected a viz.perf.LookupComparison for k={k!r}, not "
                f"{type(c).__name__}: make one with viz.perf.compare_prompt_lookup"
                f"(lm, prompt, num_lookup_tokens={k!r})"
            )
        if k != c.num_lookup_tokens:
            raise ValueError(
                f"the entry for k={k!r} guessed {c.num_lookup_tokens} tokens per "
                "lookup: key each comparison by its own num_lookup_tokens"
            )
        prompts.add(c.prompt)
    if len(prompts) > 1:
        raise ValueError(
            f"the comparisons are of {len(prompts)} prompts: draw one prompt's "
            "draft lengths at a time (its tokens per pass depend on the prompt)"
        )
    ks = sorted(comparisons)
    spreads = [comparisons[k].speedup_spread for k in ks]
    return {
        "prompt": prompts.pop(),
        "k": ks,
        "tokens_per_pass": [comparisons[k].lookup.tokens_per_pass for k in ks],
        "ceiling": [k + 1 for k in ks],
        "speedup": [s.median for s in spreads],
        "speedup_low": [s.low for s in spreads],
        "speedup_high": [s.high for s in spreads],
        "verdict": [comparisons[k].speedup_verdict.word for k in ks],
    }


def draft_length_figure(comparisons: Mapping[int, LookupComparison], chosen: Optional[int] = None):
    """Plotly, two panels over the draft length k (guesses per lookup): the tokens each decode
    pass made, under its ceiling of k + 1, and the speed-up over plain decode with its spread,
    against 1 (no faster). `chosen`: a k to mark (a slider's value). Lesson 13's slider.
    Returned, never displayed."""
    from plotly.subplots import make_subplots

    d = draft_length_data(comparisons)
    if chosen is not None and chosen not in d["k"]:
        raise ValueError(f"chosen={chosen!r} is not one of the measured draft lengths {d['k']}")
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.14,
        subplot_titles=["tokens per decode pass", "speed-up over plain decode"],
    )
    top = max(d["k"]) + 1
    _draft_traces(fig, d, top)
    fig.add_hline(y=1.0, line={"color": palette.MUTED, "dash": "dash"}, row=1, col=2)
    title = "prompt lookup at each draft length k"
    if chosen is not None:
        title = _mark_chosen(fig, d, chosen)
    fig.update_layout(**plotly_layout(title, height=380))
    for annotation in fig.layout.annotations:  # the panel titles: the figure's font, smaller
        annotation.font = {"size": 12}
    fig.update_xaxes(
        title="k: tokens guessed per lookup",
        tickmode="linear",
        tick0=1,
        dtick=1,
        range=[0.5, top - 0.5],
    )
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    return fig


def _draft_traces(fig, d: dict[str, Any], top: int) -> None:
    """The measured lines: tokens per pass under the ceiling (left), the speed-up with its
    spread (right)."""
    import plotly.graph_objects as go

    fig.add_trace(
        go.Scatter(
            x=[0.5, top - 0.5],
            y=[1.5, top + 0.5],
            mode="lines",
            line={"color": palette.MUTED, "dash": "dot"},
            name="ceiling: every guess accepted (k + 1)",
            hoverinfo="skip",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=d["k"],
            y=d["tokens_per_pass"],
            mode="lines+markers",
            marker={"color": palette.DECODE, "size": 9},
            line={"color": palette.DECODE},
            name="prompt lookup, measured",
            hovertemplate="k = %{x}: %{y:.2f} tokens per pass<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=d["k"],
            y=d["speedup"],
            mode="lines+markers",
            marker={"color": palette.PREFILL, "size": 9},
            line={"color": palette.PREFILL},
            name="speed-up (bars: middle half of the rounds)",
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [h - m for h, m in zip(d["speedup_high"], d["speedup"])],
                "arrayminus": [m - lo for m, lo in zip(d["speedup"], d["speedup_low"])],
            },
            customdata=d["verdict"],
            hovertemplate="k = %{x}: ×%{y:.2f}, %{customdata}<extra></extra>",
        ),
        row=1,
        col=2,
    )


def _mark_chosen(fig, d: dict[str, Any], chosen: int) -> str:
    """Mark the draft length `chosen` in both panels; the title that names its numbers."""
    import plotly.graph_objects as go

    i = d["k"].index(chosen)
    for col, y in ((1, d["tokens_per_pass"][i]), (2, d["speedup"][i])):
        fig.add_trace(
            go.Scatter(
                x=[chosen],
                y=[y],
                mode="markers",
                showlegend=col == 1,
                marker={"color": palette.CHOSEN, "size": 15},
                name="your choice",
                hoverinfo="skip",
            ),
            row=1,
            col=col,
        )
    return (
        f"k = {chosen}: {d['tokens_per_pass'][i]:.2f} tokens per pass, "
        f"×{d['speedup'][i]:.2f} ({d['verdict'][i]})"
    )
