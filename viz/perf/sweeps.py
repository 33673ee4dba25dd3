"""Sweeps: vary one thing, measure the rest, get a `Sweep` table back.

| sweep | varies | measures | lesson |
|---|---|---|---|
| `prompt_length_sweep` | prompt tokens | TTFT, prefill tokens/s | 03 |
| `context_length_sweep` | tokens already in the KV cache | decode step latency | 04 |
| `cache_sweep` | the text's length, cache on vs off | cost of each new token | 05 |
| `batch_size_sweep` | requests per batch | aggregate tokens/s, each request's latency | 06 |

Every measurement is a real `viz.record` (or `viz.perf.generate_batch`) run. Runs of the
different settings are interleaved (setting 1, 2, 3, then 1, 2, 3 again, ...) so that a slow
spell of a noisy machine spreads over all settings instead of spoiling one, and a first
untimed warm-up run pays for one-off costs (memory allocation, kernel selection). Figures are
medians over repeats, and the timed columns keep their spread (`Sweep.spread(name)`: the middle
half of the runs behind each median). `progress=False` silences the progress bar (use it in notebooks).
`threads=` sets the CPU threads every run of a sweep uses (None: torch's current count); the
result's `environment.threads` records it. "How many tokens" is `max_new_tokens` everywhere:
tokens generated per request, the first (from the prefill) included.
"""

from __future__ import annotations

import functools
import statistics
from typing import Any, Callable, Optional, Sequence

from tqdm import tqdm

from viz import checks
from viz.load import LoadedModel
from viz.perf.batch import generate_batch
from viz.perf.counts import decode_cost, prefill_cost
from viz.perf.table import Sweep
from viz.record import record
from viz.runtime import using_threads
from viz.spread import Spread

FILLER = (
    "The quick brown fox jumps over the lazy dog, and the model reads every word of this "
    "sentence in one parallel pass before it writes its first token. "
)
BATCH_PROMPT = "Write a short story about a robot who learns to paint."


def prompt_of_length(tokenizer, n: int, text: str = FILLER) -> str:
    """A prompt that `viz.record` (chat=False) reads as exactly `n` tokens.

    Repeats `text`, cuts its tokens after the right count and decodes them; the cut is moved
    by a token or two where re-tokenizing the decoded text would merge differently.
    """
    checks.whole("a prompt length", n, 1)

    def count(s: str) -> int:
        return len(tokenizer(s)["input_ids"])

    added = count("a") - len(tokenizer("a", add_special_tokens=False)["input_ids"])
    base = text
    while len(tokenizer(base, add_special_tokens=False)["input_ids"]) < n + 8:
        base += text
    ids = tokenizer(base, add_special_tokens=False)["input_ids"]
    for m in sorted(range(max(1, n - added - 3), n - added + 4), key=lambda m: abs(m - n + added)):
        candidate = tokenizer.decode(ids[:m])
        if candidate.strip() and count(candidate) == n:
            return candidate
    raise ValueError(f"could not build a prompt of exactly {n} tokens with this tokenizer")


def measured(sweep: Callable[..., Sweep]) -> Callable[..., Sweep]:
    """Run a sweep with its `threads=` in effect (then restored) and `repeats` checked: every
    run of the sweep, and the environment its result records, use that thread count."""

    @functools.wraps(sweep)
    def run(*args, **kwargs) -> Sweep:
        checks.whole("repeats", kwargs.get("repeats", 1), 1)
        with using_threads(checks.threads(kwargs.get("threads"))):
            return sweep(*args, **kwargs)

    return run


def check_fits(lm: LoadedModel, longest: int, what: str) -> None:
    ctx = lm.spec.context_length
    if ctx and longest > ctx:
        raise ValueError(
            f"{what} needs {longest} positions but {lm.spec.name} has {ctx}: use smaller values"
        )


def progress_bar(total: int, desc: str, progress: bool):
    return tqdm(total=total, desc=desc, unit="run", disable=not progress, leave=False)


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def add_timed(cols: dict, spreads: dict, name: str, samples: Sequence[float]) -> float:
    """Append the median of `samples` to column `name`, and their spread to `spreads[name]`."""
    s = Spread.of(samples)
    cols[name].append(s.median)
    spreads.setdefault(name, []).append(s)
    return s.median


# ---- prompt length → TTFT (lesson 03) -------------------------------------------------------
@measured
def prompt_length_sweep(
    lm: LoadedModel,
    lengths: Sequence[int] = (8, 16, 32, 64, 128),
    *,
    repeats: int = 3,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """Prompt length → time to first token and prefill speed (lesson 03).

    For each length n, a prompt of exactly n tokens is recorded with max_new_tokens=1.
    Columns (medians over `repeats`):
      prompt_tokens          n
      ttft_s                 time to first token (tokenize + prefill + choose)
      prefill_forward_s      the prefill forward pass alone
      prefill_tokens_per_s   n / prefill_forward_s
      prefill_flops          counted FLOPs of that pass (`viz.perf.counts.prefill_cost`)
      achieved_flops_per_s   prefill_flops / prefill_forward_s
    """
    lengths = checks.whole_list("lengths", lengths, increasing=True)
    check_fits(lm, lengths[-1] + 1, "the longest prompt")
    prompts = {n: prompt_of_length(lm.tokenizer, n) for n in lengths}
    runs: dict[int, list[Any]] = {n: [] for n in lengths}
    with progress_bar(1 + repeats * len(lengths), "prompt length", progress) as bar:
        _one_token(lm, prompts[lengths[0]])  # warm-up, not kept
        bar.update()
        for _ in range(repeats):
            for n in lengths:
                runs[n].append(_one_token(lm, prompts[n]))
                bar.update()
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "prompt_tokens",
            "ttft_s",
            "prefill_forward_s",
            "prefill_tokens_per_s",
            "prefill_flops",
            "achieved_flops_per_s",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    for n in lengths:
        traces = runs[n]
        tokens = len(traces[0].prompt_tokens)
        flops = prefill_cost(lm.spec, tokens).flops
        cols["prompt_tokens"].append(tokens)
        add_timed(cols, spreads, "ttft_s", [t.ttft_s for t in traces])
        forward = add_timed(
            cols, spreads, "prefill_forward_s", [t.timing.prefill_forward_s for t in traces]
        )
        cols["prefill_tokens_per_s"].append(tokens / forward)
        cols["prefill_flops"].append(flops)
        cols["achieved_flops_per_s"].append(flops / forward)
    return Sweep(
        name="prompt_length",
        x="prompt_tokens",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={"repeats": repeats},
        label=label,
        spreads=spreads,
    )


def _one_token(lm: LoadedModel, prompt: str):
    return record(lm, prompt, max_new_tokens=1, embeddings=False, log_top=1)


# ---- context length → decode step latency (lesson 04) ---------------------------------------
@measured
def context_length_sweep(
    lm: LoadedModel,
    contexts: Sequence[int] = (16, 64, 256, 512),
    *,
    max_new_tokens: int = 9,
    repeats: int = 1,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """Tokens already in the KV cache → how long one decode step takes (lesson 04).

    For each context c, a prompt of exactly c tokens is recorded with `max_new_tokens` tokens
    (end-of-sequence ignored): the prefill, then max_new_tokens − 1 decode steps; decode step
    j attends to c + j tokens.
    Columns (medians over all decode steps of all repeats):
      context_tokens         c, the prompt length
      decode_step_s          forward + choosing the token: the time between two tokens
      decode_forward_s       the forward pass alone
      decode_tokens_per_s    1 / decode_step_s
      kv_bytes               KV cache after the last step, read from the tensors
      decode_bytes           counted bytes one step moves (weights + KV cache)
      achieved_bytes_per_s   decode_bytes / decode_forward_s
    """
    contexts = checks.whole_list("contexts", contexts, increasing=True)
    checks.whole("max_new_tokens", max_new_tokens, 2, fix="one decode step at least")
    check_fits(lm, contexts[-1] + max_new_tokens, "the longest context plus its new tokens")
    prompts = {c: prompt_of_length(lm.tokenizer, c) for c in contexts}
    runs: dict[int, list[Any]] = {c: [] for c in contexts}

    def run(c: int):
        return record(
            lm,
            prompts[c],
            max_new_tokens=max_new_tokens,
            stop_at_eos=False,
            embeddings=False,
            log_top=1,
        )

    with progress_bar(1 + repeats * len(contexts), "context length", progress) as bar:
        record(
            lm,
            prompts[contexts[0]],
            max_new_tokens=2,
            stop_at_eos=False,
            embeddings=False,
            log_top=1,
        )  # warm-up, not kept
        bar.update()
        for _ in range(repeats):
            for c in contexts:
                runs[c].append(run(c))
                bar.update()
    cols, spreads = _context_columns(lm, runs, max_new_tokens)
    return Sweep(
        name="context_length",
        x="context_tokens",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={"max_new_tokens": max_new_tokens, "repeats": repeats},
        label=label,
        spreads=spreads,
    )


def _context_columns(
    lm: LoadedModel, runs: dict[int, list[Any]], max_new_tokens: int
) -> tuple[dict[str, list[Any]], dict[str, list[Spread]]]:
    """`context_length_sweep`'s columns and spreads from its recorded traces (`runs`: context →
    the traces recorded at it), one row per context."""
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "context_tokens",
            "decode_step_s",
            "decode_forward_s",
            "decode_tokens_per_s",
            "kv_bytes",
            "decode_bytes",
            "achieved_bytes_per_s",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    for c in runs:
        decode = [s for t in runs[c] for s in t.steps[1:]]
        step = add_timed(cols, spreads, "decode_step_s", [s.forward_s + s.sample_s for s in decode])
        forward = add_timed(cols, spreads, "decode_forward_s", [s.forward_s for s in decode])
        tokens = len(runs[c][0].prompt_tokens)
        moved = decode_cost(lm.spec, tokens + statistics.median_low(range(1, max_new_tokens))).bytes
        cols["context_tokens"].append(tokens)
        cols["decode_tokens_per_s"].append(1.0 / step)
        cols["kv_bytes"].append(runs[c][0].steps[-1].kv_bytes)
        cols["decode_bytes"].append(moved)
        cols["achieved_bytes_per_s"].append(moved / forward)
    return cols, spreads


# ---- cache on vs off (lesson 05) ------------------------------------------------------------
@measured
def cache_sweep(
    lm: LoadedModel,
    prompt: str = "The KV cache saves work because",
    *,
    max_new_tokens: int = 24,
    repeats: int = 1,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """The cost of each new token as the text grows, with and without the KV cache (lesson 05).

    The same greedy reply is recorded with use_cache=True and use_cache=False (alternately,
    `repeats` times each). One row per step (0 = prefill).
    Columns:
      step, seq_len              the step and the tokens its forward pass attends to
      cached_input_tokens        tokens fed with the cache (the prompt, then 1)
      uncached_input_tokens      tokens fed without it (the whole sequence, every time)
      cached_step_s, uncached_step_s        forward + choose (median over repeats)
      cached_elapsed_s, uncached_elapsed_s  time since the start until this token
      cached_flops, uncached_flops          counted FLOPs of that step's pass
      same_token                 1 where both runs chose the same token (greedy: always)
    """
    checks.whole("max_new_tokens", max_new_tokens, 1)
    runs: dict[bool, list[Any]] = {True: [], False: []}
    kw = dict(max_new_tokens=max_new_tokens, stop_at_eos=False, embeddings=False, log_top=1)
    with progress_bar(1 + 2 * repeats, "cache on/off", progress) as bar:
        record(lm, prompt, **{**kw, "max_new_tokens": 2})  # warm-up, not kept
        bar.update()
        for _ in range(repeats):
            for use_cache in (True, False):
                runs[use_cache].append(record(lm, prompt, use_cache=use_cache, **kw))
                bar.update()
    on, off = runs[True][0], runs[False][0]
    cols = _cache_columns(lm, runs)
    return Sweep(
        name="cache",
        x="seq_len",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={
            "prompt": prompt,
            "max_new_tokens": max_new_tokens,
            "repeats": repeats,
            "same_tokens": on.generated_ids == off.generated_ids,
        },
        label=label,
    )


def _cache_columns(lm: LoadedModel, runs: dict[bool, list[Any]]) -> dict[str, list[Any]]:
    """`cache_sweep`'s columns from its recorded traces (`runs`: use_cache → the traces), one
    row per step of the first pair."""
    on, off = runs[True][0], runs[False][0]
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "step",
            "seq_len",
            "cached_input_tokens",
            "uncached_input_tokens",
            "cached_step_s",
            "uncached_step_s",
            "cached_elapsed_s",
            "uncached_elapsed_s",
            "cached_flops",
            "uncached_flops",
            "same_token",
        )
    }
    n_prompt = len(on.prompt_tokens)
    for i, (a, b) in enumerate(zip(on.steps, off.steps)):
        cols["step"].append(i)
        cols["seq_len"].append(a.seq_len)
        cols["cached_input_tokens"].append(a.input_tokens)
        cols["uncached_input_tokens"].append(b.input_tokens)
        for name, traces in (("cached", runs[True]), ("uncached", runs[False])):
            cols[f"{name}_step_s"].append(
                _median([t.steps[i].forward_s + t.steps[i].sample_s for t in traces])
            )
            cols[f"{name}_elapsed_s"].append(_median([t.steps[i].emitted_at_s for t in traces]))
        cols["cached_flops"].append(
            prefill_cost(lm.spec, n_prompt).flops
            if i == 0
            else decode_cost(lm.spec, a.seq_len).flops
        )
        cols["uncached_flops"].append(prefill_cost(lm.spec, b.seq_len).flops)
        cols["same_token"].append(int(a.token_id == b.token_id))
    return cols


# ---- batch size → throughput and latency (lesson 06) ----------------------------------------
@measured
def batch_size_sweep(
    lm: LoadedModel,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16),
    *,
    prompt: str = BATCH_PROMPT,
    max_new_tokens: int = 16,
    repeats: int = 1,
    progress: bool = True,
    label: str = "",
    prompt_tokens: Optional[int] = None,
    threads: Optional[int] = None,
) -> Sweep:
    """Requests per batch → aggregate tokens/s and each request's latency (lesson 06).

    Each batch holds B copies of the same prompt (so every request does the same work) and
    generates `max_new_tokens` per request with `viz.perf.generate_batch`. With `prompt_tokens`,
    the prompt is instead a filler text of exactly that many tokens.
    Columns (medians over repeats, and over decode steps):
      batch_size                       B
      prompt_tokens                    tokens per prompt
      ttft_s                           until every request has its first token
      decode_step_s                    one decode step: every request gets one more token
      decode_forward_s                 that step's forward pass alone
      decode_context_tokens            sequence length at the median decode step
      request_latency_s                until a request has all its tokens (all finish together)
      request_tokens_per_s             one request's streaming speed = 1 / decode_step_s
      aggregate_tokens_per_s           B · max_new_tokens / request_latency_s (prefill included)
      aggregate_decode_tokens_per_s    B / decode_step_s
      kv_bytes                         KV cache after the last step, read from the tensors
    """
    batch_sizes = checks.whole_list("batch_sizes", batch_sizes, increasing=True)
    checks.whole("max_new_tokens", max_new_tokens, 2, fix="one decode step at least")
    if prompt_tokens is not None:
        prompt = prompt_of_length(lm.tokenizer, prompt_tokens)
    runs: dict[int, list[Any]] = {b: [] for b in batch_sizes}
    with progress_bar(1 + repeats * len(batch_sizes), "batch size", progress) as bar:
        generate_batch(lm, [prompt], 2)  # warm-up, not kept
        bar.update()
        for _ in range(repeats):
            for b in batch_sizes:
                runs[b].append(generate_batch(lm, [prompt] * b, max_new_tokens))
                bar.update()
    cols, spreads = _batch_columns(runs, max_new_tokens)
    return Sweep(
        name="batch_size",
        x="batch_size",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={"prompt": prompt, "max_new_tokens": max_new_tokens, "repeats": repeats},
        label=label,
        spreads=spreads,
    )


def _batch_columns(
    runs: dict[int, list[Any]], max_new_tokens: int
) -> tuple[dict[str, list[Any]], dict[str, list[Spread]]]:
    """`batch_size_sweep`'s columns and spreads from its runs (`runs`: batch size → the
    `generate_batch` runs at it), one row per batch size."""
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "batch_size",
            "prompt_tokens",
            "ttft_s",
            "decode_step_s",
            "decode_forward_s",
            "decode_context_tokens",
            "request_latency_s",
            "request_tokens_per_s",
            "aggregate_tokens_per_s",
            "aggregate_decode_tokens_per_s",
            "kv_bytes",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    for b in runs:
        rs = runs[b]
        n_prompt = rs[0].padded_length
        latency = _median([r.end_to_end_s for r in rs])
        cols["batch_size"].append(b)
        cols["prompt_tokens"].append(n_prompt)
        cols["ttft_s"].append(_median([r.ttft_s for r in rs]))
        step = add_timed(cols, spreads, "decode_step_s", [s for r in rs for s in r.step_s])
        add_timed(cols, spreads, "decode_forward_s", [s for r in rs for s in r.step_forward_s])
        # decode step j (1 .. max_new_tokens-1) leaves n_prompt + j tokens per request
        cols["decode_context_tokens"].append(
            n_prompt + statistics.median_low(range(1, max_new_tokens))
        )
        cols["request_latency_s"].append(latency)
        cols["request_tokens_per_s"].append(1.0 / step)
        cols["aggregate_tokens_per_s"].append(b * max_new_tokens / latency)
        cols["aggregate_decode_tokens_per_s"].append(b / step)
        cols["kv_bytes"].append(rs[0].kv_bytes)
    return cols, spreads
