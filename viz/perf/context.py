"""Long contexts: when attention and the KV cache, not the weights, set the pace (lesson 11).

Two sweeps, both real forward passes of the loaded model:

- `long_prefill_sweep`: prefill time against prompt length, split by a clock inside the
  model's own attention function (`viz.compat.timed_attention`) into **attention** (q·kᵀ,
  softmax, weights · v: work that grows with the square of the prompt, since each of n
  queries looks at up to n keys) and **the rest** (the projections, the MLP, norms: work that
  grows linearly, since every token meets the same weights once). Beside each measured share,
  the counted one (`viz.perf.counts.prefill_cost`: attention FLOPs ÷ all FLOPs).
- `long_decode_sweep`: one decode step against the tokens already in the KV cache, up to the
  model's longest context. The cache of c positions is filled with random keys and values of
  the model's own shapes (`viz.compat.synthetic_cache`), because filling it by a real prefill
  of 8,000 tokens would take most of a minute on a laptop CPU; the step's kernels and the
  bytes they read are real (only the values are random, and no kernel looks at them).
  `synthetic_check` times the same step over a cache a real prefill filled, at a length where
  both are cheap, so the learner sees the two agree.

The KV cache here is transformers' `DynamicCache`, the one `generate` and `viz.record` use: it
grows by concatenation, so adding one token's keys and values copies the whole cache (read
and written once more) before attention reads it. `cache_copy_s` times that copy alone, the
same `torch.cat` on the same tensors, outside the pass. Both sweeps hand freed memory back to
the system between their large allocations (`viz.runtime.release_memory`), so that a lesson's
resident memory stays near what it holds, not what it once held. A paged cache (the server's, lesson 09) writes only the
new token.

`attention_crossover` is the prompt length where counted attention FLOPs pass the rest's, from
the shape alone; `measured_crossover` fits the measured split (attention ∝ n², rest ∝ n).
`kv_fit` says how many conversations of a length fit in some memory, with and without
grouped-query attention.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from viz import checks, compat
from viz.load import LoadedModel
from viz.perf.counts import decode_cost, layer_matmul_params, prefill_cost
from viz.perf.sweeps import progress_bar, check_fits, measured, add_timed
from viz.perf.table import Sweep
from viz.runtime import release_memory
from viz.spread import Spread
from viz.trace import ModelSpec

FILLER_IDS_TEXT = (
    "A long document: the model reads every token of it before the question, and "
    "each new position attends to all the positions before it. "
)


def prompt_ids(lm: LoadedModel, n: int) -> torch.Tensor:
    """Exactly n token ids of filler text (ids, not text: a long prompt need not round-trip)."""
    tok = lm.tokenizer
    ids: list[int] = []
    while len(ids) < n:
        ids += tok(FILLER_IDS_TEXT, add_special_tokens=False)["input_ids"]
    return torch.tensor([ids[:n]], device=lm.device)


# ---- prefill against prompt length --------------------------------------------------------
@measured
def long_prefill_sweep(
    lm: LoadedModel,
    lengths: Sequence[int] = (256, 512, 1024, 2048),
    *,
    repeats: int = 2,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """Prompt length → prefill time, split into attention and the rest (lesson 11).

    Each prefill is one forward pass over n token ids with an empty cache (scoring only the
    last position, as `viz.record` does), timed whole and, inside it, in the attention
    function. Runs are interleaved over lengths after one untimed warm-up.
    Columns (medians over `repeats`):
      prompt_tokens            n
      prefill_s                the forward pass
      attention_s              seconds inside attention (all layers)
      rest_s                   prefill_s − attention_s
      prefill_s_per_token      prefill_s / n
      attention_share          attention_s / prefill_s, measured
      counted_attention_share  attention FLOPs / all FLOPs of the pass, counted
      attention_flops, matmul_flops   the counts (`viz.perf.counts.prefill_cost`)
    """
    lengths = checks.whole_list("lengths", lengths, 2, increasing=True)
    check_fits(lm, lengths[-1], "the longest prompt")
    forward = compat.last_logits(lm.model)
    ids = {n: prompt_ids(lm, n) for n in lengths}
    runs: dict[int, list[tuple[float, float]]] = {n: [] for n in lengths}
    with (
        torch.inference_mode(),
        compat.timed_attention(lm.model) as clock,
        progress_bar(1 + repeats * len(lengths), "long prefill", progress) as bar,
    ):
        forward(ids[lengths[0]], compat.new_cache(lm.model))  # warm-up, not kept
        bar.update()
        for _ in range(repeats):
            for n in lengths:
                clock.reset()
                start = time.perf_counter()
                forward(ids[n], compat.new_cache(lm.model))
                runs[n].append((time.perf_counter() - start, clock.seconds))
                bar.update()
    release_memory(lm.spec.kv_bytes(max(lengths)))  # the long passes' activations, freed
    cols, spreads = _long_prefill_columns(lm.spec, lengths, runs)
    return Sweep(
        name="long_prefill",
        x="prompt_tokens",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={"repeats": repeats},
        label=label,
        spreads=spreads,
    )


def _long_prefill_columns(
    spec: ModelSpec, lengths: list[int], runs: dict[int, list[tuple[float, float]]]
) -> tuple[dict[str, list[Any]], dict[str, list[Spread]]]:
    """`long_prefill_sweep`'s table: one row per prompt length from its (prefill, attention)
    seconds in `runs`, medians over the repeats, beside the counted FLOPs."""
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "prompt_tokens",
            "prefill_s",
            "attention_s",
            "rest_s",
            "prefill_s_per_token",
            "attention_share",
            "counted_attention_share",
            "attention_flops",
            "matmul_flops",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    for n in lengths:
        total = add_timed(cols, spreads, "prefill_s", [t for t, _ in runs[n]])
        attn = add_timed(cols, spreads, "attention_s", [a for _, a in runs[n]])
        add_timed(cols, spreads, "rest_s", [t - a for t, a in runs[n]])
        cost = prefill_cost(spec, n)
        cols["prompt_tokens"].append(n)
        cols["prefill_s_per_token"].append(total / n)
        cols["attention_share"].append(attn / total)
        cols["counted_attention_share"].append(cost.attention_flops / cost.flops)
        cols["attention_flops"].append(cost.attention_flops)
        cols["matmul_flops"].append(cost.matmul_flops)
    return cols, spreads


def attention_crossover(spec: ModelSpec) -> int:
    """The shortest prompt whose counted attention FLOPs reach the rest of the prefill's.

    Prefill of n tokens (`viz.perf.counts`): attention = 4·L·n_h·d·n(n+1)/2 grows with n²,
    the matrix products with the weights = 2·n·L·P_layer + 2·h·V with n. They meet near
    n ≈ P_layer / (n_h·d): the wider the MLP against the attention width, the later.
    """
    q = spec.n_heads * spec.head_dim
    a = 2 * spec.n_layers * q  # attention = a·n² + a·n
    b = 2 * spec.n_layers * layer_matmul_params(spec)  # matmul = b·n + c
    c = 2 * spec.hidden_size * spec.vocab_size
    # a·n² + (a − b)·n − c = 0
    n = (-(a - b) + math.sqrt((a - b) ** 2 + 4 * a * c)) / (2 * a)
    return int(math.ceil(n))


@dataclass
class Crossover:
    """Where measured attention time would pass the rest, from a fit of a long-prefill sweep."""

    tokens: float  # the prompt length where the two fitted curves meet
    attention_s_per_token2: float  # a in attention_s ≈ a·n²
    rest_s_per_token: float  # b in rest_s ≈ b·n + c
    rest_fixed_s: float  # c
    measured_up_to: int  # the longest prompt measured: beyond it, the crossing is extrapolated

    @property
    def extrapolated(self) -> bool:
        return self.tokens > self.measured_up_to

    def prefill_s(self, tokens: int) -> float:
        """The fitted prefill time of a prompt of `tokens` (a·n² + b·n + c, c at least 0)."""
        return (
            self.attention_s_per_token2 * tokens**2
            + self.rest_s_per_token * tokens
            + self.rest_fixed_s
        )

    def text(self) -> str:
        how = (
            f"extrapolated past the longest prompt measured ({self.measured_up_to})"
            if self.extrapolated
            else f"within the prompts measured (up to {self.measured_up_to})"
        )
        return f"~{self.tokens:,.0f} tokens ({how})"


def measured_crossover(sweep: Sweep) -> Crossover:
    """Fit attention_s = a·n² and rest_s = b·n + c (least squares) and solve a·n² = b·n + c."""
    if sweep.name != "long_prefill" or len(sweep) < 2:
        raise ValueError(
            "measured_crossover needs a long_prefill sweep of two lengths or more "
            "(viz.perf.long_prefill_sweep)"
        )
    n = [float(v) for v in sweep.column("prompt_tokens")]
    att, rest = sweep.column("attention_s"), sweep.column("rest_s")
    a = sum(x * x * y for x, y in zip(n, att)) / sum(x**4 for x in n)
    mean_n, mean_r = statistics.fmean(n), statistics.fmean(rest)
    b = sum((x - mean_n) * (y - mean_r) for x, y in zip(n, rest)) / sum(
        (x - mean_n) ** 2 for x in n
    )
    c = mean_r - b * mean_n
    if a <= 0:
        raise ValueError("the attention times do not grow with the prompt: measure longer ones")
    c = max(c, 0.0)  # a negative intercept is the fit's noise: no pass takes less than nothing
    tokens = (b + math.sqrt(b * b + 4 * a * c)) / (2 * a)
    return Crossover(
        tokens=tokens,
        attention_s_per_token2=a,
        rest_s_per_token=b,
        rest_fixed_s=c,
        measured_up_to=int(max(n)),
    )


# ---- decode against context length --------------------------------------------------------
def _step_seconds(forward, cache, token: torch.Tensor, context: int, repeats: int) -> list[float]:
    """Times of `repeats` decode steps at `context` cached positions, each cut back after."""
    position = torch.tensor([[context]], device=token.device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        forward(token, cache, position_ids=position)
        times.append(time.perf_counter() - start)
        compat.trim_cache(cache, context)
    return times


def _copy_seconds(cache, repeats: int) -> list[float]:
    """Times of the concatenation a DynamicCache does to add one position to every layer."""
    layers = compat.cache_layers(cache)
    if not layers or layers[0][0].shape[-2] == 0:
        return [0.0] * repeats
    one = [(k[..., :1, :].clone(), v[..., :1, :].clone()) for k, v in layers]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for (k, v), (k1, v1) in zip(layers, one):
            torch.cat([k, k1], dim=-2)
            torch.cat([v, v1], dim=-2)
        times.append(time.perf_counter() - start)
    return times


@measured
def long_decode_sweep(
    lm: LoadedModel,
    contexts: Sequence[int] = (0, 2048, 4096, 8191),
    *,
    repeats: int = 5,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """Tokens already in the KV cache → one decode step, up to the model's longest context.

    For each context c, a cache of c positions of random keys and values
    (`viz.compat.synthetic_cache`), then `repeats` timed decode steps (one token at position
    c, the cache cut back to c after each). Each length's cache is built, measured and freed
    in turn, so at most one is in memory (377 MB at 8,191 positions for the default model).
    Columns (medians):
      context_tokens   c (0: an empty cache)
      decode_step_s    the forward pass of one token
      attention_s      seconds of it inside attention (reading the c cached keys and values)
      empty_step_s     a step over an empty cache, timed right after each step at c: the
                       baseline beside it, so that a slow spell of the machine hits both
      growth           step at c ÷ the empty step beside it (median of the pairs, spread)
      cache_copy_s     the DynamicCache's concatenation timed alone, outside the pass
                       (copying c + 1 positions in every layer, warm: a lower bound of
                       what it costs inside the pass)
      kv_bytes         the cache after the step, by formula (c + 1 positions)
      weight_bytes     the weights one step reads (`viz.perf.counts.decode_cost`)
      step_bytes       weight_bytes + kv_bytes: the bytes a step must read at least
    """
    contexts = checks.whole_list("contexts", contexts, 0, increasing=True)
    check_fits(lm, contexts[-1] + 1, "the longest context plus its new token")
    forward = compat.last_logits(lm.model)
    token = prompt_ids(lm, 1)
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "context_tokens",
            "decode_step_s",
            "attention_s",
            "empty_step_s",
            "growth",
            "cache_copy_s",
            "kv_bytes",
            "weight_bytes",
            "step_bytes",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    with (
        torch.inference_mode(),
        compat.timed_attention(lm.model) as clock,
        progress_bar(len(contexts), "long decode", progress) as bar,
    ):
        for c in contexts:
            _decode_row(cols, spreads, lm, forward, token, c, repeats, clock)
            bar.update()
    return Sweep(
        name="long_decode",
        x="context_tokens",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={"repeats": repeats, "cache": "synthetic (random keys and values)"},
        label=label,
        spreads=spreads,
    )


def _decode_row(
    cols: dict[str, list[Any]],
    spreads: dict[str, list[Spread]],
    lm: LoadedModel,
    forward,
    token: torch.Tensor,
    c: int,
    repeats: int,
    clock,
) -> None:
    """One row of `long_decode_sweep`: a synthetic cache of `c` positions built, `repeats`
    steps over it timed (each beside one over an empty cache; `clock`: the time inside
    attention), its copy timed, the cache freed; then the bytes a step reads."""
    release_memory(lm.spec.kv_bytes(c))  # what earlier passes freed, before the cache
    cache = compat.synthetic_cache(lm.model, c)
    _step_seconds(forward, cache, token, c, 1)  # warm-up, not kept
    steps, inside, empty = [], [], []
    for _ in range(repeats):  # each step at c beside one over an empty cache
        clock.reset()
        steps += _step_seconds(forward, cache, token, c, 1)
        inside.append(clock.seconds)
        empty += _step_seconds(forward, compat.new_cache(lm.model), token, 0, 1)
    add_timed(cols, spreads, "decode_step_s", steps)
    add_timed(cols, spreads, "attention_s", inside)
    add_timed(cols, spreads, "empty_step_s", empty)
    add_timed(cols, spreads, "growth", [s / e for s, e in zip(steps, empty)])
    add_timed(cols, spreads, "cache_copy_s", _copy_seconds(cache, repeats))
    del cache
    release_memory(lm.spec.kv_bytes(c))
    cost = decode_cost(lm.spec, c + 1)
    cols["context_tokens"].append(c)
    cols["kv_bytes"].append(cost.kv_bytes)
    cols["weight_bytes"].append(cost.weight_bytes)
    cols["step_bytes"].append(cost.bytes)


@dataclass
class SyntheticCheck:
    """One decode step over a cache a real prefill filled, and over a random one as long."""

    context_tokens: int
    real: Spread  # seconds, cache filled by a real prefill of the prompt
    synthetic: Spread  # seconds, cache of random keys and values

    @property
    def agree(self) -> bool:
        """The two medians differ by less than the larger middle half, or by under 10 %."""
        gap = abs(self.real.median - self.synthetic.median)
        width = max(self.real.high - self.real.low, self.synthetic.high - self.synthetic.low)
        return gap <= width or gap <= 0.10 * self.real.median

    def text(self) -> str:
        return (
            f"decode step at {self.context_tokens} cached tokens: real prefill "
            f"{self.real.text(1e3, 'ms')}, random cache {self.synthetic.text(1e3, 'ms')}: "
            + ("they agree" if self.agree else "they differ")
        )


@measured
def synthetic_check(
    lm: LoadedModel, context_tokens: int = 256, *, repeats: int = 7, threads: Optional[int] = None
) -> SyntheticCheck:
    """Time a decode step at `context_tokens` over a really prefilled cache and a random one,
    interleaved, so lesson 11 can show that a random cache stands in for a real one."""
    checks.whole("context_tokens", context_tokens, 1)
    check_fits(lm, context_tokens + 1, "the context plus its new token")
    forward = compat.last_logits(lm.model)
    ids = prompt_ids(lm, context_tokens + 1)
    with torch.inference_mode():
        real = compat.new_cache(lm.model)
        forward(ids[:, :context_tokens], real)
        fake = compat.synthetic_cache(lm.model, context_tokens)
        token = ids[:, context_tokens:]
        times: dict[str, list[float]] = {"real": [], "fake": []}
        _step_seconds(forward, real, token, context_tokens, 1)  # warm-up
        for _ in range(repeats):
            times["real"] += _step_seconds(forward, real, token, context_tokens, 1)
            times["fake"] += _step_seconds(forward, fake, token, context_tokens, 1)
    return SyntheticCheck(
        context_tokens=context_tokens,
        real=Spread.of(times["real"]),
        synthetic=Spread.of(times["fake"]),
    )


# ---- what fits ----------------------------------------------------------------------------
@dataclass
class KVFit:
    """How many conversations of one length fit beside a model's weights in some memory."""

    model: str
    context_tokens: int  # tokens per conversation
    memory_bytes: int  # the memory considered
    weight_bytes: int  # the memory the model's weights occupy (`ModelSpec.weight_bytes`)
    kv_bytes_per_token: int  # with the model's grouped-query attention
    kv_bytes_per_token_no_gqa: int  # if every query head had its own keys and values
    conversations: int  # (memory − weights) // (kv per token · context)
    conversations_no_gqa: int

    def text(self) -> str:
        return (
            f"{self.model}: {self.kv_bytes_per_token / 1e3:,.0f} kB per token "
            f"({self.kv_bytes_per_token_no_gqa / 1e3:,.0f} kB without GQA); "
            f"{self.context_tokens:,}-token conversations in "
            f"{self.memory_bytes / 1e9:.0f} GB: {self.conversations:,} "
            f"({self.conversations_no_gqa:,} without GQA)"
        )


def kv_fit(spec: ModelSpec, context_tokens: int, memory_bytes: int) -> KVFit:
    """Conversations of `context_tokens` whose KV caches fit in `memory_bytes` beside the
    weights (counted: no activations, no fragmentation, nothing else running)."""
    checks.whole("context_tokens", context_tokens, 1)
    checks.positive("memory_bytes", memory_bytes, noun="a number of bytes")
    weights = spec.weight_bytes  # what the weights occupy, every table (not what a step reads)
    free = max(0, int(memory_bytes) - weights)
    per, per_no = spec.kv_bytes_per_token(), spec.kv_bytes_per_token(spec.n_heads)
    return KVFit(
        model=spec.name,
        context_tokens=context_tokens,
        memory_bytes=int(memory_bytes),
        weight_bytes=weights,
        kv_bytes_per_token=per,
        kv_bytes_per_token_no_gqa=per_no,
        conversations=free // (per * context_tokens),
        conversations_no_gqa=free // (per_no * context_tokens),
    )
