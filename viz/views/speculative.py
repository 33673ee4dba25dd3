"""The speculative-decoding view: how many tokens each decode pass made with prompt lookup
(lesson 08).

Plain greedy decode makes exactly one token per forward pass. Prompt lookup checks up to k
guessed tokens in one pass and keeps the model's own next token plus every guess before the
first wrong one, so a pass makes 1 to k + 1 tokens. The bars count the decode passes (the
prefill not included) by the tokens each made, one colour per prompt: a reply that copies
its prompt piles up at k + 1, a reply with nothing to copy stays at 1. Numbers:
`viz.perf.speculative` (`compare_prompt_lookup`, `GenerateRun.histogram`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

from viz.perf.speculative import LookupComparison
from viz.views import palette
from viz.views.base import plotly_layout

Comparisons = Union[Sequence[LookupComparison], Mapping[str, LookupComparison]]


def _named(comparisons: Comparisons) -> list[tuple[str, LookupComparison]]:
    """(name, comparison) pairs: a mapping's keys, or each prompt's first words."""
    if isinstance(comparisons, LookupComparison):
        comparisons = [comparisons]
    if isinstance(comparisons, Mapping):
        pairs = [(str(k), v) for k, v in comparisons.items()]
    else:
        pairs = []
        for c in comparisons:
            words = c.prompt.split() if isinstance(c, LookupComparison) else []
            pairs.append((" ".join(words[:5]) + (" …" if len(words) > 5 else ""), c))
    if not pairs:
        raise ValueError("no comparison to draw: give one or more results of "
                         "viz.perf.compare_prompt_lookup(...)")
    for name, c in pairs:
        if not isinstance(c, LookupComparison):
            raise ValueError(f"expected a viz.perf.LookupComparison for {name!r}, not "
                             f"{type(c).__name__}: make one with "
                             "viz.perf.compare_prompt_lookup(lm, prompt)")
    return pairs


def accepted_histogram_data(comparisons: Comparisons) -> list[dict[str, Any]]:
    """The numbers `accepted_histogram_figure` draws, one dict per comparison: its name, k,
    tokens made per pass (1 to k + 1) and the decode passes that made each, the mean tokens
    per pass and the speed-up with its verdict."""
    out = []
    for name, c in _named(comparisons):
        hist = c.lookup.histogram()
        made = list(range(1, c.num_lookup_tokens + 2))
        out.append({"name": name, "k": c.num_lookup_tokens, "tokens_made": made,
                    "passes": [hist.get(m, 0) for m in made],
                    "decode_passes": c.lookup.forward_passes - 1,
                    "tokens_per_pass": c.lookup.tokens_per_pass, "speedup": c.speedup,
                    "verdict": c.speedup_verdict.word})
    return out


def accepted_histogram_figure(comparisons: Comparisons):
    """Plotly: bars of decode passes by the tokens each made with prompt lookup, one colour
    per comparison (a list of `LookupComparison`s, or a dict name → comparison). Returns the
    figure; nothing is displayed. Lesson 08."""
    import plotly.graph_objects as go

    data = accepted_histogram_data(comparisons)
    fig = go.Figure()
    for i, d in enumerate(data):
        fig.add_trace(go.Bar(
            x=d["tokens_made"], y=d["passes"], marker={"color": palette.CYCLE[i % len(
                palette.CYCLE)]},
            name=f"{d['name']}: {d['tokens_per_pass']:.2f} tokens/pass, ×{d['speedup']:.2f}",
            hovertemplate=("%{y} decode passes made %{x} tokens each"
                           f"<extra>{d['name']}</extra>")))
    k = max(d["k"] for d in data)
    fig.update_layout(**plotly_layout("Prompt lookup: tokens made by each decode pass "
                                      "(plain decode makes 1 per pass)", height=380,
                                      barmode="group"))
    fig.update_xaxes(title=f"tokens made in one decode pass (1 + guesses accepted, at most "
                           f"{k + 1})", tickmode="linear", tick0=1, dtick=1,
                     range=[0.5, k + 1.5])
    fig.update_yaxes(title="decode passes", rangemode="tozero")
    return fig
