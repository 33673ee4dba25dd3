"""The speculative-decoding view: how many tokens each decode pass made with prompt lookup
(lesson 13) or with early-exit drafts (lesson 14), in one figure.

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

from typing import Any, Mapping, Sequence, Union

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
        raise ValueError("no comparison to draw: give one or more results of "
                         "viz.perf.compare_prompt_lookup(...) or compare_early_exit(...)")
    for name, c in pairs:
        if not isinstance(c, KINDS):
            raise ValueError(f"expected a viz.perf.LookupComparison or EarlyExitComparison for "
                             f"{name!r}, not {type(c).__name__}: make one with "
                             "viz.perf.compare_prompt_lookup(lm, prompt) or "
                             "viz.perf.compare_early_exit(lm, prompt, exit_layer=...)")
    return pairs


def _passes(c: Comparison) -> tuple[int, dict[int, int], int, float]:
    """(k, {tokens made: decode passes}, decode passes, tokens per pass) of the speculative
    run: prompt lookup's forward passes, or early exit's full passes."""
    if isinstance(c, EarlyExitComparison):
        return c.draft_tokens, c.early.histogram(), len(c.early.passes), c.tokens_per_pass
    return (c.num_lookup_tokens, c.lookup.histogram(), c.lookup.forward_passes - 1,
            c.lookup.tokens_per_pass)


def accepted_histogram_data(comparisons: Comparisons) -> list[dict[str, Any]]:
    """The numbers `accepted_histogram_figure` draws, one dict per comparison: its name, kind
    ("prompt lookup" or "early exit"), k, tokens made per pass (1 to k + 1) and the decode
    passes that made each, the mean tokens per pass and the speed-up with its verdict."""
    out = []
    for name, c in _named(comparisons):
        k, hist, passes, per_pass = _passes(c)
        made = list(range(1, k + 2))
        out.append({"name": name, "kind": "early exit" if isinstance(c, EarlyExitComparison)
                    else "prompt lookup", "k": k, "tokens_made": made,
                    "passes": [hist.get(m, 0) for m in made], "decode_passes": passes,
                    "tokens_per_pass": per_pass, "speedup": c.speedup,
                    "verdict": c.speedup_verdict.word})
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
        fig.add_trace(go.Bar(
            x=d["tokens_made"], y=d["passes"], marker={"color": palette.CYCLE[i % len(
                palette.CYCLE)]},
            name=f"{d['name']}: {d['tokens_per_pass']:.2f} tokens/pass, ×{d['speedup']:.2f}",
            hovertemplate=("%{y} decode passes made %{x} tokens each"
                           f"<extra>{d['name']}</extra>")))
    k = max(d["k"] for d in data)
    kinds = sorted({d["kind"] for d in data}, reverse=True)
    what = "Prompt lookup" if kinds == ["prompt lookup"] else " and ".join(kinds).capitalize()
    fig.update_layout(**plotly_layout(f"{what}: tokens made by each decode pass "
                                      "(plain decode makes 1 per pass)", height=380,
                                      barmode="group"))
    fig.update_xaxes(title=f"tokens made in one decode pass (1 + guesses accepted, at most "
                           f"{k + 1})", tickmode="linear", tick0=1, dtick=1,
                     range=[0.5, k + 1.5])
    fig.update_yaxes(title="decode passes", rangemode="tozero")
    return fig
