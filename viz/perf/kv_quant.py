"""A quantized KV cache on the long-context wall: fewer bytes per cached token, and what they buy
(lesson 11).

At 8,191 cached tokens the KV cache is most of what a decode step reads (lesson 11's
`long_decode_sweep`). transformers' `QuantizedCache` stores it in fewer bits; this module
times a decode step over it beside the float cache, counts the bytes each holds, and checks
the greedy tokens against the float cache's on a real prompt.

**The caches** (transformers 5.24, made in `viz.compat.quantized_cache`; `KVQuant` picks one):

- **int4 / int2** — backend `quanto` (optimum-quanto 0.2.7, transformers' default backend for
  `generate(..., cache_implementation="quantized")`; transformers accepts only 4 and 2 bits
  from it). Layout, read from `QuantoQuantizedLayer._quantize` and quanto's `MaxOptimizer`,
  `group` and `PackedTensor`: each layer's keys (1, kv_heads, T, head_dim) are cut into groups
  of `group_size` consecutive values (axis 0: with head_dim 64 and groups of 64, one group is
  one head's key of one position); each group keeps a scale and a shift in the model's dtype
  (min and max of the group, no zero point rounding), and its integers packed 8 ÷ bits to a
  byte along the groups (ceil(groups ÷ (8 ÷ bits)) rows of `group_size` bytes). So per group
  of 64 float32 values: 32 + 4 + 4 = 40 bytes at 4 bits (5 bits a value), 24 at 2 bits
  (3 bits a value), against 256. A **residual window** of the newest positions stays in full
  precision: a prefill quantizes every prompt position at once and leaves the window empty;
  each decode step then adds its token to the window, and the step that fills it to
  `residual_length` (128) dequantizes the whole cache and quantizes it again (the "flush").
  Each step in between dequantizes the whole quantized block into a new float tensor, then
  concatenates the window and the new token to it, and attention reads that float copy.
- **fp8** — backend `fp8`, transformers' own (`Fp8QuantizedLayer`, nothing to install):
  float8 e4m3, one byte a value, one float32 scale per layer's keys and per its values, set
  from the first update (the prefill) and frozen. No window: each new token is quantized with
  that scale and appended, and each step dequantizes the whole cache, as above.

**Bytes** (`kv_quant_bytes`, counted from that layout and checked in the tests against the
bytes the live tensors hold, `viz.compat.quantized_parts`): the bytes held at its precision,
scales and shifts included, the window's positions at full precision. `step_bytes` = the
weights a step reads (`viz.perf.counts.decode_cost`) + that cache: what a step must read at
least, with a kernel that read the quantized values directly. transformers' caches have no
such kernel: a step also writes the dequantized float copy and attention reads it
(`dequantized_bytes`), which is why the measured step does not shrink with the bytes.

**Timing** (`kv_quant_sweep`): as `viz.perf.long_decode_sweep`, over synthetic caches
(`viz.compat.synthetic_cache`, `viz.compat.synthetic_quantized_cache`: random keys and
values, quantized by the backend's own code as a prefill would); each step beside one over an
empty cache, the cache cut back after each step (within quanto's window, so no timed step
flushes). The flush is priced apart: `flush_s` is the quantization of the whole cache, timed
while filling it — what every `residual_length`-th step adds (a lower bound: the flush also
dequantizes and concatenates first). Agreement (`kv_quant_agreement`) needs real values: a
real prompt, prefilled, then greedy steps over each cache.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import torch

from viz import checks, compat
from viz.load import LoadedModel
from viz.perf.counts import decode_cost
from viz.perf.context import prompt_ids
from viz.perf.machine.peaks import Peaks
from viz.perf.roofline import pass_verdict
from viz.perf.sweeps import add_timed, check_fits, measured, progress_bar
from viz.perf.table import Sweep
from viz.runtime import release_memory
from viz.spread import Spread
from viz.trace import ModelSpec

# FLOPs of dequantizing one value: quanto `scale · q − shift`, fp8 `q · scale`
DEQUANT_FLOPS = {"quanto": 2, "fp8": 1}
FP8_SCALE_BYTES = 4  # one float32 scale per tensor (`Fp8QuantizedLayer._quantize`)
FLOAT = "float32"  # the name of the float cache's rows (the model's own dtype)


@dataclass(frozen=True)
class KVQuant:
    """One quantized KV cache of transformers' `QuantizedCache` (see the module docstring)."""

    nbits: int  # bits per cached value: 4 or 2 (quanto's integers), 8 (fp8)
    group_size: int = 64  # quanto: values sharing one scale and one shift (q_group_size)
    residual_length: int = 128  # quanto: newest positions kept in full precision, at most

    def __post_init__(self):
        allowed = sorted(b for bits in compat.QUANTIZED_BACKENDS.values() for b in bits)
        checks.one_of(
            "nbits",
            self.nbits,
            allowed,
            fix="the bit widths transformers' quantized cache offers: use 4 or 2 "
            "(optimum-quanto's integers in groups; transformers refuses 8 from "
            "quanto) or 8 (its own fp8 backend)",
        )
        checks.whole("group_size", self.group_size, 1)
        checks.whole(
            "residual_length",
            self.residual_length,
            2,
            fix="at 1 every step would quantize the whole cache again",
        )

    @property
    def backend(self) -> str:
        return "fp8" if self.nbits == 8 else "quanto"

    @property
    def name(self) -> str:
        return "fp8" if self.backend == "fp8" else f"int{self.nbits}"

    @property
    def label(self) -> str:
        if self.backend == "fp8":
            return "fp8 (transformers' own, one scale per tensor)"
        return f"int{self.nbits} (quanto, groups of {self.group_size})"

    def check(self, spec: ModelSpec) -> None:
        """Refuse a group size that does not divide one position's keys (kv_heads · head_dim):
        quanto would then fail on some lengths and not others."""
        width = spec.n_kv_heads * spec.head_dim
        if self.backend == "quanto" and width % self.group_size:
            fits = [g for g in (128, 64, 32, 16, 8) if width % g == 0]
            raise ValueError(
                f"group_size={self.group_size} does not divide the {width} key "
                f"values of one position of {spec.name} (kv_heads · head_dim): "
                f"use one that does, e.g. {fits[0] if fits else 1}"
            )

    def cache(self, model: Any) -> Any:
        """An empty cache of this kind for `model` (`viz.compat.quantized_cache`)."""
        return compat.quantized_cache(
            model,
            self.backend,
            self.nbits,
            group_size=self.group_size,
            residual_length=self.residual_length,
        )

    def generate_kwargs(self) -> dict:
        """What `model.generate` takes to build the same cache."""
        return compat.quantized_generate_kwargs(
            self.backend,
            self.nbits,
            group_size=self.group_size,
            residual_length=self.residual_length,
        )


def as_quant(value: Union[int, KVQuant]) -> KVQuant:
    """A `KVQuant` from itself or from its bits (8, 4 or 2)."""
    return value if isinstance(value, KVQuant) else KVQuant(value)


def kv_quant_bytes(
    spec: ModelSpec, tokens: int, quant: Optional[KVQuant] = None, window_tokens: int = 0
) -> int:
    """Bytes a cache of `tokens` positions holds, `window_tokens` of them in quanto's
    full-precision window (the rest quantized), counted from the layout in the module
    docstring. `quant=None`: the float cache (`ModelSpec.kv_bytes`)."""
    checks.whole("tokens", tokens, 0)
    if quant is None:
        return spec.kv_bytes(tokens)
    quant.check(spec)
    width = spec.n_kv_heads * spec.head_dim  # values of one position, keys (or values)
    if quant.backend == "fp8":
        per_tensor = width * tokens + FP8_SCALE_BYTES
    else:
        if not 0 <= window_tokens <= tokens:
            raise ValueError(f"window_tokens must be between 0 and {tokens}, not {window_tokens!r}")
        groups = width * (tokens - window_tokens) // quant.group_size
        packed = math.ceil(groups / (8 // quant.nbits)) * quant.group_size
        per_tensor = (
            packed
            + 2 * groups * spec.bytes_per_element
            + width * window_tokens * spec.bytes_per_element
        )
    return 2 * spec.n_layers * per_tensor  # keys and values, every layer


def _dequant_flops(spec: ModelSpec, tokens: int, quant: Optional[KVQuant]) -> int:
    if quant is None:
        return 0
    return (
        DEQUANT_FLOPS[quant.backend] * 2 * spec.n_layers * spec.n_kv_heads * spec.head_dim * tokens
    )


def _step_seconds(forward, cache, token: torch.Tensor, context: int) -> float:
    """One decode step at `context` cached positions, the cache cut back after it."""
    position = torch.tensor([[context]], device=token.device)
    start = time.perf_counter()
    forward(token, cache, position_ids=position)
    seconds = time.perf_counter() - start
    compat.trim_cache(cache, context)
    return seconds


def _build(lm: LoadedModel, tokens: int, quant: Optional[KVQuant]) -> tuple[Any, float]:
    """(a synthetic cache of `tokens` positions, the seconds its quantization took)."""
    if quant is None:
        return compat.synthetic_cache(lm.model, tokens), 0.0
    start = time.perf_counter()
    cache = compat.synthetic_quantized_cache(
        lm.model,
        tokens,
        quant.backend,
        quant.nbits,
        group_size=quant.group_size,
        residual_length=quant.residual_length,
    )
    return cache, time.perf_counter() - start


@measured
def kv_quant_sweep(
    lm: LoadedModel,
    contexts: Sequence[int] = (2048, 8191),
    quants: Sequence[Union[int, KVQuant]] = (8, 4),
    *,
    repeats: int = 5,
    float_cache: bool = True,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """A decode step at each of `contexts` cached tokens over the float cache and over each
    quantized cache of `quants` (bits, or `KVQuant`s), lesson 11. float_cache=False leaves the
    float cache out (lesson 11 sets these beside its `long_decode_sweep`, timed the same way).

    For each context, each cache in turn (float first): built (random keys and values, the
    backend quantizing them), one untimed warm-up step, then `repeats` steps each beside one
    over an empty cache, then its dequantization timed alone; freed before the next, so at
    most one cache is in memory. Rows: every cache at the first context, then the next.
    Columns (medians, spreads kept):
      kv_bits          32 for the float cache (its dtype's bits), else the cache's bits
      context_tokens   c, cached before the step
      decode_step_s    one decode step at c
      empty_step_s     a step over an empty cache, timed right after each: the baseline
      growth           step ÷ the empty step beside it (median of the pairs, spread)
      dequantize_s     every layer's keys and values dequantized once, timed alone (0: float)
      flush_s          the whole cache quantized once (quanto: what each residual_length-th
                       step adds, at least; 0 for float and fp8, which never quantize again)
      kv_bytes         the cache after the step (c + 1 positions; quanto: the new one in the
                       window), counted (`kv_quant_bytes`)
      weight_bytes     the weights a step reads (`viz.perf.counts.decode_cost`)
      step_bytes       weight_bytes + kv_bytes: what a step must read at least
      dequantized_bytes  the float copy each step writes and attention reads (0: float)
      flops            the step's FLOPs (`decode_cost`) + dequantizing every cached value
    """
    contexts = checks.whole_list("contexts", contexts, increasing=True)
    check_fits(lm, contexts[-1] + 1, "the longest context plus its new token")
    kinds, names = _kinds(lm, quants, float_cache)
    bits = [8 * lm.spec.bytes_per_element if k is None else k.nbits for k in kinds]
    forward = compat.last_logits(lm.model)
    token = prompt_ids(lm, 1)
    cols: dict[str, list[Any]] = {
        c: []
        for c in (
            "kv_bits",
            "context_tokens",
            "decode_step_s",
            "empty_step_s",
            "growth",
            "dequantize_s",
            "flush_s",
            "kv_bytes",
            "weight_bytes",
            "step_bytes",
            "dequantized_bytes",
            "flops",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    with (
        torch.inference_mode(),
        progress_bar(len(contexts) * len(kinds), "kv quant decode", progress) as bar,
    ):
        for c in contexts:
            for quant, b in zip(kinds, bits):
                timed = _time_cache(lm, forward, token, c, quant, repeats)
                _add_row(cols, spreads, lm, c, quant, b, timed)
                bar.update()
    settings = _settings(kinds, names, repeats)
    return Sweep(
        name="kv_quant_decode",
        x="context_tokens",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings=settings,
        label=label,
        spreads=spreads,
    )


def _add_row(
    cols: dict[str, list[Any]],
    spreads: dict[str, list[Spread]],
    lm: LoadedModel,
    c: int,
    quant: Optional[KVQuant],
    b: int,
    timed: tuple,
) -> None:
    """One row of `kv_quant_sweep`: the cache `quant` (None: float, `b` bits) at context `c`,
    with its times (`_time_cache`'s) and the bytes and FLOPs the step must move and do."""
    quantize_s, steps, empty, dequant = timed
    add_timed(cols, spreads, "decode_step_s", steps)
    add_timed(cols, spreads, "empty_step_s", empty)
    add_timed(cols, spreads, "growth", [s / e for s, e in zip(steps, empty)])
    add_timed(cols, spreads, "dequantize_s", dequant or [0.0])
    cost = decode_cost(lm.spec, c + 1)
    window = 0 if quant is None or quant.backend == "fp8" else 1
    kv = kv_quant_bytes(lm.spec, c + 1, quant, window)
    cols["kv_bits"].append(b)
    cols["context_tokens"].append(c)
    cols["flush_s"].append(quantize_s if quant is not None and quant.backend == "quanto" else 0.0)
    cols["kv_bytes"].append(kv)
    cols["weight_bytes"].append(cost.weight_bytes)
    cols["step_bytes"].append(cost.weight_bytes + kv)
    cols["dequantized_bytes"].append(0 if quant is None else lm.spec.kv_bytes(c))
    cols["flops"].append(cost.flops + _dequant_flops(lm.spec, c, quant))


def _settings(kinds: list[Optional[KVQuant]], names: list[str], repeats: int) -> dict[str, Any]:
    """`kv_quant_sweep`'s settings: the repeats, the caches and how each quantizes."""
    settings = {
        "repeats": repeats,
        "caches": names,
        "cache": "synthetic (random keys and values, quantized by the backend)",
    }
    for k in (k for k in kinds if k is not None):
        settings[k.name] = k.label + (
            f", {k.residual_length} newest positions in full precision"
            if k.backend == "quanto"
            else ""
        )
    return settings


def _kinds(
    lm: LoadedModel, quants: Sequence[Union[int, KVQuant]], float_cache: bool
) -> tuple[list[Optional[KVQuant]], list[str]]:
    """`kv_quant_sweep`'s caches (None: the float one, first) and their names, each checked
    against the model and its backend's package."""
    kinds: list[Optional[KVQuant]] = ([None] if float_cache else []) + [as_quant(q) for q in quants]
    if not kinds:
        raise ValueError("nothing to measure: give quants, or float_cache=True")
    names = [FLOAT if k is None else k.name for k in kinds]
    if len(set(names)) != len(names):
        raise ValueError(f"each cache once: {names}")
    for k in kinds:
        if k is None:
            continue
        k.check(lm.spec)
        missing = compat.quantized_cache_missing(k.backend)
        if missing:
            raise ImportError(missing)
    return kinds, names


def _time_cache(
    lm: LoadedModel,
    forward,
    token: torch.Tensor,
    context: int,
    quant: Optional[KVQuant],
    repeats: int,
) -> tuple[float, list[float], list[float], list[float]]:
    """One cache of `context` positions built, then timed: (the seconds its quantization took,
    `repeats` steps over it, as many over an empty cache beside them, its dequantizations).
    Freed before returning, so at most one cache is in memory."""
    release_memory(lm.spec.kv_bytes(context))
    cache, quantize_s = _build(lm, context, quant)
    _step_seconds(forward, cache, token, context)  # warm-up, not kept
    steps, empty = [], []
    for _ in range(repeats):
        steps.append(_step_seconds(forward, cache, token, context))
        empty.append(_step_seconds(forward, compat.new_cache(lm.model), token, 0))
    dequant = []
    for _ in range(repeats if quant is not None else 0):
        start = time.perf_counter()
        compat.dequantize_cache(cache)
        dequant.append(time.perf_counter() - start)
    del cache
    release_memory(lm.spec.kv_bytes(context))
    return quantize_s, steps, empty, dequant


def check_kv_quant_sweep(sweep: Any) -> Sweep:
    if not isinstance(sweep, Sweep) or sweep.name != "kv_quant_decode":
        raise ValueError(
            "expected a kv_quant_decode sweep: measure one with viz.perf.kv_quant_sweep(lm)"
        )
    return sweep


def cache_names(sweep: Sweep) -> dict[int, str]:
    """kv_bits → the cache's name ("float32", "fp8", "int4", ...), from a kv_quant sweep."""
    check_kv_quant_sweep(sweep)
    names = sweep.settings.get("caches") or []
    bits = list(dict.fromkeys(sweep.column("kv_bits")))
    if len(names) != len(bits):
        names = [f"{b}-bit" for b in bits]
    return dict(zip(bits, names))


def kv_quant_row(sweep: Sweep, name: str, context_tokens: Optional[int] = None) -> dict:
    """One row of a kv_quant sweep as {column: value}, with "step" and "growth" as spreads:
    the cache `name` ("float32", "fp8", "int4") at `context_tokens` (default the longest)."""
    names = cache_names(sweep)
    by_name = {v: k for k, v in names.items()}
    if name not in by_name:
        raise ValueError(f"no cache {name!r} in this sweep; it has {list(by_name)}")
    contexts = sweep.column("context_tokens")
    c = max(contexts) if context_tokens is None else context_tokens
    rows = sweep.rows()
    for i, row in enumerate(rows):
        if row["kv_bits"] == by_name[name] and row["context_tokens"] == c:
            return {
                **row,
                "name": name,
                "step": sweep.spread("decode_step_s")[i],
                "growth_spread": sweep.spread("growth")[i],
            }
    raise ValueError(f"no row for {c} cached tokens; this sweep has {sorted(set(contexts))}")


def kv_quant_verdicts(
    sweep: Sweep, peaks: Peaks, fixed_cost: Any, context_tokens: Optional[int] = None
) -> dict[str, Any]:
    """cache name → the regime rule's verdict (`viz.perf.pass_verdict`) on its step at
    `context_tokens` (default the longest): its FLOPs, the bytes it must read at least
    (`step_bytes`), its measured step with spread, this machine's peaks and fixed cost."""
    out = {}
    for name in cache_names(sweep).values():
        row = kv_quant_row(sweep, name, context_tokens)
        out[name] = pass_verdict(row["flops"], row["step_bytes"], row["step"], peaks, fixed_cost)
    return out


# ---- agreement with the float cache, on a real prompt ----------------------------------------
AGREEMENT_DOCUMENT = (
    "The lighthouse on the northern cape was built in 1871 from granite quarried two miles "
    "inland. Its first keeper, a retired ship's carpenter named Tomas Hale, lived in the tower "
    "with his wife and their three children, and kept a logbook of every ship that passed. "
    "The light itself burned whale oil until 1903, then kerosene, and was finally electrified "
    "in 1952, when the last keeper left and the station became automatic. In the great storm "
    "of 1927 the keeper's cottage lost its roof, but the lamp stayed lit all night, and a "
    "fishing boat with six men aboard found the harbour by it. Today the tower is a small "
    "museum: visitors climb its 114 steps to the lamp room, and the logbooks, all forty-one of "
    "them, are kept in a glass case on the ground floor."
)
AGREEMENT_QUESTION = "Tell me the history of this lighthouse in a few sentences."


@dataclass
class Agreement:
    """Greedy tokens after a real prompt: over a quantized cache and over the float cache."""

    cache: str  # "fp8", "int4", ...
    prompt_tokens: int  # the real prefix, prefilled (quantized as it goes into the cache)
    tokens: list[int]  # the greedy tokens over the quantized cache (the prefill's first)
    reference: list[int]  # the same over the float cache (`DynamicCache`)
    first_step_logit_diff: float  # max |logit difference| at the first step that reads the
    # quantized cache (the prefill attends to its own float keys: its token is the same)
    text: str = ""  # the quantized cache's tokens, decoded
    reference_text: str = ""

    @property
    def same_until(self) -> int:
        """How many greedy tokens are equal before the first that differs."""
        n = 0
        for a, b in zip(self.tokens, self.reference):
            if a != b:
                break
            n += 1
        return n

    @property
    def steps(self) -> int:
        return len(self.reference)

    def line(self) -> str:
        same = self.same_until
        where = "all of them" if same == self.steps else f"the first {same}, then they part"
        return (
            f"{self.cache}: {same} of {self.steps} greedy tokens equal to the float "
            f"cache's ({where}); largest logit difference at the first step that read "
            f"the cache {self.first_step_logit_diff:.3f}"
        )


def chat_prompt_ids(
    lm: LoadedModel, document: str = AGREEMENT_DOCUMENT, question: str = AGREEMENT_QUESTION
) -> list[int]:
    """A real prompt: the document and the question in one user turn, in the chat template
    (the byte tokenizer of a test model has none: plain text then)."""
    tok = lm.tokenizer
    text = f"{document}\n\n{question}"
    if getattr(tok, "chat_template", None):
        out = tok.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
        )
        return list(out["input_ids"] if hasattr(out, "keys") else out)
    return list(tok(text)["input_ids"])


def _greedy(forward, ids: torch.Tensor, cache: Any, steps: int) -> tuple[list[int], list]:
    """Greedy tokens (the prefill's first, then steps − 1 decode steps) and each step's
    logits."""
    logits = forward(ids, cache)
    out, seen = [int(logits.argmax(-1))], [logits]
    n = ids.shape[1]
    for i in range(steps - 1):
        nxt = torch.tensor([[out[-1]]], device=ids.device)
        logits = forward(nxt, cache, position_ids=torch.tensor([[n + i]], device=ids.device))
        out.append(int(logits.argmax(-1)))
        seen.append(logits)
    return out, seen


def kv_quant_agreement(
    lm: LoadedModel,
    quants: Sequence[Union[int, KVQuant]] = (8, 4),
    *,
    steps: int = 24,
    prompt: Optional[Sequence[int]] = None,
) -> list[Agreement]:
    """Greedy decoding after a real prompt (default `chat_prompt_ids`: a document and a
    question) over the float cache and over each quantized cache: how many tokens agree, and
    how far the logits moved at the first step that read the quantized keys and values.
    `steps` tokens each (the prefill's included), EOS not stopping them. Lesson 11."""
    checks.whole("steps", steps, 2, fix="the prefill's token and at least one step over the cache")
    kinds = [as_quant(q) for q in quants]
    for k in kinds:
        k.check(lm.spec)
    ids_list = chat_prompt_ids(lm) if prompt is None else [int(i) for i in prompt]
    if not ids_list:
        raise ValueError("the prompt must hold at least one token")
    check_fits(lm, len(ids_list) + steps, "the prompt plus the greedy tokens")
    ids = torch.tensor([ids_list], device=lm.device)
    forward = compat.last_logits(lm.model)
    tok = lm.tokenizer
    with torch.inference_mode():
        reference, ref_logits = _greedy(forward, ids, compat.new_cache(lm.model), steps)
        out = []
        for k in kinds:
            tokens, logits = _greedy(forward, ids, k.cache(lm.model), steps)
            gap = (
                float((logits[1] - ref_logits[1]).abs().max())
                if tokens[0] == reference[0]
                else math.nan
            )
            out.append(
                Agreement(
                    cache=k.name,
                    prompt_tokens=len(ids_list),
                    tokens=tokens,
                    reference=reference,
                    first_step_logit_diff=gap,
                    text=tok.decode(tokens),
                    reference_text=tok.decode(reference),
                )
            )
    return out
