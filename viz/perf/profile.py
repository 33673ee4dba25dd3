"""One decode step taken apart with torch.profiler: what is the fixed per-step cost made of?

Lesson 08 measures a fixed cost per step: a model of the same depth and a tiny width still
takes milliseconds per token, although its weights take almost no time to read. This module
says what those milliseconds are. `profile_decode_step` prefills a prompt of `context` tokens
once (a `DynamicCache`), runs `warmup` decode steps, then `steps` single-token decode steps,
feeding back the greedy token as a decode loop does. Each step runs twice from the same cache
(cut back in between, `viz.compat.trim_cache`): plain (timed with `viz.runtime.Clock`: the
step as it really runs), then under `torch.profiler.profile` (CPU activity; CUDA too on a
GPU). The pairs are interleaved, so a slow spell of a busy machine spreads over both kinds.
The profiled step with the median duration is taken apart; the difference between the two
medians is what profiling itself costs.

A step = one forward pass over one new token + the greedy choice (argmax). Every *top-level*
op of it — an op not nested inside another op (found from the profiler's event tree:
`FunctionEvent.cpu_parent`) — falls in one category:

- **matrix products**: `aten::linear`, `addmm`, `mm`, `bmm`, `matmul` — the layers' weights
  (q, k, v, o, gate, up, down: 7 per Llama layer) and the LM head.
- **attention**: every op inside the model's attention function (scaled dot-product
  attention: q·kᵀ, softmax, weights · v, and the repeat of keys and values for grouped-query
  attention), marked with a profiler scope by `viz.compat.labelled_attention`; elsewhere,
  ops named `scaled_dot_product_attention` or `softmax`.
- **norms**: every op inside an RMSNorm module (SmolLM2's `LlamaRMSNorm` is written in
  Python ops: pow, mean, add, rsqrt, mul, mul by the weight, casts), marked by forward hooks
  that open and close a `record_function("viz::norm")` scope; elsewhere `layer_norm` and
  `rms_norm` ops.
- **small ops**: the rest — the residual adds, the MLP's SiLU and product, the rotary
  embedding, the KV cache's concatenation, views and casts, the embedding lookup, the argmax.
- **gaps**: the step's duration minus the time covered by top-level ops, when no op runs:
  Python (the model's forward code), the framework (masks, cache bookkeeping) and the
  dispatcher choosing each kernel; also a little of the profiler's own bookkeeping.

A scope's **calls** are its entries (norms: one per norm module call, 2 per layer + 1;
attention: one per layer); for the other categories a call is a top-level op. `ops` counts
top-level ops in every category. On a GPU the CPU side shows launches, not the kernels' work:
the step ends by waiting for the device ("waiting for the GPU"), and each category also
carries the device time of the kernels its ops launched (`device_seconds`).

Measured here (2026-12-03 07:23 UTC; 2-core AMD EPYC; torch 2.13.0+cpu, transformers
5.24.0; the remedies lesson as committed that day (then lesson 11, now 13), run by `make notebooks NB=11`, nothing else running):

    lm = viz.load_model(device="cpu")
    print(viz.perf.profile_decode_step(lm, context=64, steps=10))      # torch's 2 threads

    category                ms/step   share  calls/step  ops/step
    matrix products           39.56     67%         211       211
    attention                  4.62      8%          30        90
    norms                      1.68      3%          61       488
    small ops                  2.58      4%         888       888
    gaps                      10.55     18%
    profiled step             58.98    100%                  1677
    plain step (no profiler): 55.83 ms; profiling added 3.15 ms (6%)

The counts are the architecture's: 30 layers × 7 weight matrices + the LM head = 211 matrix
products, 2 × 30 + 1 = 61 norms of 8 ops each, 30 attention calls. On a busy machine (a CI run
beside it, load average ~7, 06:07 UTC) the same 2-thread profile spent 14 ms in each attention
call (426 ms of a 510 ms step; 0.02 ms per call with `threads=1`): a parallel kernel waits for
its slowest thread, and with other processes on both cores that thread is often not running.
Profile on a quiet machine, and compare `threads=1`, before reading a 2-thread table as the
model's own.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar, Iterator, Optional

import torch

from viz import checks, compat
from viz.documents import Document
from viz.load import LoadedModel
from viz.provenance import environment_from_loose, loose_names, unknown_environment
from viz.runtime import Clock, short_device_name, using_threads
from viz.steps import timed_step
from viz.trace import Environment

MATRIX, ATTENTION, NORMS, SMALL, GAPS = "matrix products", "attention", "norms", "small ops", "gaps"
DEVICE_WAIT = "waiting for the GPU"
CATEGORIES = (MATRIX, ATTENTION, NORMS, SMALL)  # the op categories, in table order
# What the gaps are, in one line (the last line of the table).
GAPS_MEANING = (
    "gaps: no op running — Python (the model's forward code), the framework (masks, "
    "cache bookkeeping) and the dispatcher choosing each kernel"
)

# The profiler scopes viz opens (record_function names).
STEP_SCOPE, NORM_SCOPE, ATTENTION_SCOPE = "viz::step", "viz::norm", "viz::attention"
WAIT_SCOPE = "viz::device_wait"
SCOPE_CATEGORY = {NORM_SCOPE: NORMS, ATTENTION_SCOPE: ATTENTION, WAIT_SCOPE: DEVICE_WAIT}
MATRIX_OPS = frozenset({"aten::linear", "aten::addmm", "aten::mm", "aten::bmm", "aten::matmul"})
NORM_OPS = frozenset(
    {
        "aten::layer_norm",
        "aten::native_layer_norm",
        "aten::rms_norm",
        "aten::_fused_rms_norm",
        "aten::group_norm",
    }
)
FILLER = (
    "The quick brown fox jumps over the lazy dog, and the model reads every word of this "
    "sentence before it writes the next one. "
)


@dataclass
class StepPart:
    """One category of a decode step: its time and how many calls make it."""

    category: str  # "matrix products", "attention", "norms", "small ops" or "gaps"
    seconds: float  # wall time in this category's top-level ops, per step (gaps: between them)
    calls: int  # per step: scope entries (norms, attention) or top-level ops (the rest); gaps 0
    ops: int  # top-level ops per step in this category (gaps: 0)
    device_seconds: Optional[float] = None  # GPU: kernel time these ops launched; CPU: None


# The provenance fields a StepProfile kept loose before schema 2: now its `environment`'s.
PROFILE_LOOSE = ("device", "device_name", "threads", "torch_version", "measured_at")
PROFILE_SOURCE = "measured by viz.perf.profile.profile_decode_step"


def _profile_v1_to_v2(data: dict) -> dict:
    """Schema 1: device, threads, torch and the time ("2026-12-05 12:12 UTC") were loose
    fields; they move into `environment` (`viz.provenance`)."""
    return environment_from_loose(data, PROFILE_LOOSE, PROFILE_SOURCE, dtype=data.get("dtype", ""))


@loose_names(*PROFILE_LOOSE)
@dataclass
class StepProfile(Document):
    """One decode step of a model, taken apart by category (`profile_decode_step`).

    Where, when and with what is `environment` (`viz.provenance`); its fields read as before
    too: `profile.device_name`, `profile.threads`, `profile.measured_at`."""

    KIND: ClassVar[str] = "llm-inference-step-profile"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: _profile_v1_to_v2}
    WHAT: ClassVar[str] = "step profile"
    AGAIN: ClassVar[str] = "profile it again with viz.perf.profile.profile_decode_step(lm)"

    model: str  # the model's name
    dtype: str  # the weights' dtype, e.g. "float32"
    context: int  # tokens in the KV cache before the first profiled step
    steps: int  # decode steps timed (plain) and profiled (each)
    step_s: float  # median plain step (no profiler, no scopes): the step as it really runs
    profiled_step_s: float  # median profiled step: the one taken apart in `parts`
    parts: list[StepPart] = field(default_factory=list)  # categories, then gaps, of that step
    warmup: int = 0  # decode steps run (and not timed) before the timed ones
    plain_steps_s: list[float] = field(default_factory=list)  # each plain step
    profiled_steps_s: list[float] = field(default_factory=list)  # each profiled step
    token_ids: list[int] = field(default_factory=list)  # the greedy token of each profiled step
    # The device ("cpu", "cuda:0") and its name (the CPU's or GPU's model), torch's CPU threads
    # during the measurement, torch, when (ISO UTC) and by what: `viz.provenance`.
    environment: Environment = field(default_factory=unknown_environment)

    def __post_init__(self):
        names = [p.category for p in self.parts]
        if len(set(names)) != len(names):
            raise ValueError(f"parts name a category twice: {names}")

    def part(self, category: str) -> StepPart:
        """The part named `category`; a ValueError naming the categories otherwise."""
        for p in self.parts:
            if p.category == category:
                return p
        raise ValueError(
            f"no category {category!r}: this profile has {[p.category for p in self.parts]}"
        )

    def seconds(self, category: str) -> float:
        """Seconds per step in `category`."""
        return self.part(category).seconds

    def share(self, category: str) -> float:
        """`category`'s fraction of the profiled step (the parts' shares add up to 1)."""
        return self.part(category).seconds / self.profiled_step_s

    @property
    def profiler_overhead_s(self) -> float:
        """What profiling added to the median step (profiled − plain; noise can make it < 0)."""
        return self.profiled_step_s - self.step_s

    def title(self, short: bool = True) -> str:
        """What was profiled, in one line. short: the device by its short name, as a figure's
        title draws it (`viz.runtime.short_device_name`); False: its full name (the table)."""
        device = self.device_name or self.device
        device = short_device_name(device) if short else device
        return (
            f"{self.model} · {self.context} cached tokens · {device}"
            f" · {self.dtype} · {self.threads} thread{'s' * (self.threads != 1)}"
        )

    def table(self) -> list[dict[str, Any]]:
        """One row per part: category, ms_per_step, share, calls_per_step, ops_per_step (and
        device_ms_per_step on a GPU)."""
        rows = []
        for p in self.parts:
            row = {
                "category": p.category,
                "ms_per_step": p.seconds * 1e3,
                "share": self.share(p.category),
                "calls_per_step": p.calls,
                "ops_per_step": p.ops,
            }
            if p.device_seconds is not None:
                row["device_ms_per_step"] = p.device_seconds * 1e3
            rows.append(row)
        return rows

    def __str__(self) -> str:
        device = any(p.device_seconds is not None for p in self.parts)
        head = f"{'category':<22}{'ms/step':>9}{'share':>8}{'calls/step':>12}{'ops/step':>10}"
        lines = [
            f"one decode step: {self.title(short=False)} (median of {self.steps} profiled steps)",
            head + (f"{'GPU ms':>9}" if device else ""),
        ]
        for p in self.parts:
            calls = f"{p.calls:>12}{p.ops:>10}" if p.category != GAPS else f"{'':>12}{'':>10}"
            gpu = "" if p.device_seconds is None else f"{p.device_seconds * 1e3:>9.2f}"
            lines.append(
                f"{p.category:<22}{p.seconds * 1e3:>9.2f}{self.share(p.category):>8.0%}{calls}{gpu}"
            )
        lines.append(
            f"{'profiled step':<22}{self.profiled_step_s * 1e3:>9.2f}{1:>8.0%}"
            f"{'':>12}{sum(p.ops for p in self.parts):>10}"
        )
        over = self.profiler_overhead_s
        lines.append(
            f"plain step (no profiler): {self.step_s * 1e3:.2f} ms; profiling "
            f"{'added' if over >= 0 else 'took away (noise)'} {abs(over) * 1e3:.2f} ms "
            f"({abs(over) / self.step_s:.0%})"
        )
        lines.append(GAPS_MEANING)
        return "\n".join(lines)


# ---- the scopes ------------------------------------------------------------------------------
@contextlib.contextmanager
def profile_scopes(model: Any) -> Iterator[int]:
    """Mark norms and attention for the profiler while the block runs; yields the number of
    norm modules marked.

    Every module whose class name ends in "RMSNorm" gets a forward pre-hook that opens
    `record_function("viz::norm")` and a forward hook (`always_call`: it runs after an error
    too) that closes it; the attention function runs inside "viz::attention"
    (`viz.compat.labelled_attention`). On exit — error or not — every hook is removed, any
    scope left open is closed, and the model gets its attention implementation back.
    """
    from torch.profiler import record_function

    norms = [m for m in model.modules() if type(m).__name__.endswith("RMSNorm")]
    open_scopes: list[Any] = []

    def enter(module, args):
        scope = record_function(NORM_SCOPE)
        scope.__enter__()
        open_scopes.append(scope)

    def leave(module, args, output):
        if open_scopes:
            open_scopes.pop().__exit__(None, None, None)

    with compat.Hooks() as hooks:  # every hook removed on exit, error or not
        try:
            for m in norms:
                hooks.before(m, enter)
                hooks.after(m, leave, always_call=True)
            with compat.labelled_attention(model, ATTENTION_SCOPE):
                yield len(norms)
        finally:
            while open_scopes:
                open_scopes.pop().__exit__(None, None, None)


# ---- taking a step apart -----------------------------------------------------------------------
def op_category(name: str, scopes: list[str]) -> str:
    """The category of a top-level op named `name` inside the viz scopes `scopes` (outermost
    first): the innermost scope's category, else by the op's name."""
    for scope in reversed(scopes):
        if scope in SCOPE_CATEGORY:
            return SCOPE_CATEGORY[scope]
    if name in MATRIX_OPS:
        return MATRIX
    if "scaled_dot_product" in name or "softmax" in name:
        return ATTENTION
    if name in NORM_OPS:
        return NORMS
    return SMALL


def _is_op(event: Any) -> bool:
    """An op (aten and the like), not a scope opened with record_function."""
    return not event.is_user_annotation and event.device_type == torch.autograd.DeviceType.CPU


def split_step(
    step: Any,
) -> tuple[dict[str, float], dict[str, int], dict[str, int], dict[str, Optional[float]]]:
    """One profiled step (the "viz::step" event) taken apart: per category the seconds covered
    by its top-level ops, their count, the scope entries and the device seconds they launched.

    Walks the event tree under the step: a scope (record_function) is looked into, an op is
    top-level and not looked into (what runs inside it is its own time). The "waiting for the
    GPU" scope counts as one op. Times are clipped so that no instant is counted twice: the
    categories add up to the time covered, and the gaps are the rest of the step.
    """
    tops: list[tuple[Any, str]] = []  # (event, category)
    entries: dict[str, int] = {}

    def walk(event: Any, scopes: list[str]) -> None:
        for child in sorted(event.cpu_children, key=lambda e: e.time_range.start):
            if child.name == WAIT_SCOPE:
                tops.append((child, DEVICE_WAIT))
            elif _is_op(child):
                tops.append((child, op_category(child.name, scopes)))
            else:  # a scope: count its entry, look inside
                if child.name in SCOPE_CATEGORY:
                    cat = SCOPE_CATEGORY[child.name]
                    entries[cat] = entries.get(cat, 0) + 1
                walk(child, scopes + [child.name])

    walk(step, [])
    start, end = step.time_range.start, step.time_range.end
    seconds: dict[str, float] = {}
    ops: dict[str, int] = {}
    device: dict[str, Optional[float]] = {}
    cursor = start
    for event, cat in sorted(tops, key=lambda t: t[0].time_range.start):
        a, b = max(event.time_range.start, cursor), min(event.time_range.end, end)
        seconds[cat] = seconds.get(cat, 0.0) + max(b - a, 0.0) * 1e-6  # the profiler's µs
        cursor = max(cursor, b)
        ops[cat] = ops.get(cat, 0) + 1
        if cat != DEVICE_WAIT:
            device[cat] = (device.get(cat) or 0.0) + event.device_time_total * 1e-6
    covered = sum(seconds.values())
    seconds[GAPS] = max((end - start) * 1e-6 - covered, 0.0)
    return seconds, ops, entries, device


# ---- the measurement ---------------------------------------------------------------------------
@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """The process's stderr (file descriptor 2) sent to /dev/null for the block.

    The profiler's tracing library (kineto) writes a timestamped line straight to fd 2 at
    every start and stop, past Python's `sys.stderr`; a notebook kernel would show them in the
    cell. Only the start and the stop are wrapped, so nothing else is hidden. Where fd 2
    cannot be duplicated, the block runs as it is.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def context_ids(lm: LoadedModel, n: int, text: Optional[str] = None) -> torch.Tensor:
    """Exactly `n` token ids (batch 1): `text` (default: a filler sentence) repeated and cut."""
    if text is not None:
        checks.prompt(text, "give some text, or prompt=None for filler text")
    piece = lm.tokenizer(text or FILLER, add_special_tokens=False)["input_ids"]
    ids = list(piece) * (n // len(piece) + 1)
    return torch.tensor([ids[:n]], device=lm.device)


def profile_decode_step(
    lm: LoadedModel,
    *,
    context: int = 32,
    steps: int = 5,
    warmup: int = 2,
    prompt: Optional[str] = None,
    threads: Optional[int] = None,
) -> StepProfile:
    """What one decode step's time is made of: matrix products, attention, norms, small ops
    and the gaps between them (lesson 08's fixed cost, taken apart; see the module docstring).

    context: tokens prefilled into the KV cache before the timed steps.
    steps: decode steps, each timed plain and then profiled from the same cache (the median
      profiled one is taken apart).
    warmup: decode steps run first and not timed (one-off costs: allocation, kernel choice).
    prompt: the text the context is made of, repeated and cut to `context` tokens (None: a
      filler sentence).
    threads: CPU threads (None: torch's current count).
    """
    _check_profile(lm, context, steps, warmup, threads)
    from torch.profiler import ProfilerActivity

    model, dev = lm.model, lm.device
    forward = compat.last_logits(model)
    ids = context_ids(lm, context, prompt)
    clock = Clock(dev)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])

    def step(token: torch.Tensor, cache: Any) -> torch.Tensor:
        return forward(token, cache).argmax(-1, keepdim=True)  # greedy: the next input

    with using_threads(threads) as n_threads, torch.inference_mode():
        cache = compat.new_cache(model)
        token = step(ids, cache)  # the prefill, once
        for _ in range(warmup):
            token = step(token, cache)
        plain_s, events, chosen = [], [], []
        for _ in range(steps):
            length = compat.cache_length(cache)
            # the step as it really runs: no profiler, no scopes (`step` chooses its token)
            plain_s.append(timed_step(clock, lambda: step(token, cache)).seconds)
            compat.trim_cache(cache, length)  # the same step again, from the same cache
            token, profiled = _profiled_step(step, token, cache, model, dev, activities)
            events += profiled
            chosen.append(token)
        token_ids = torch.cat(chosen).flatten().tolist()

    if len(events) != steps:
        raise RuntimeError(f"the profiler recorded {len(events)} steps of {steps}")
    durations = [(e.time_range.end - e.time_range.start) * 1e-6 for e in events]
    mid = statistics.median_low(durations)
    median_step = events[durations.index(mid)]
    parts = _step_parts(*split_step(median_step), on_gpu=dev.type == "cuda")
    return StepProfile(
        model=lm.spec.name,
        dtype=lm.dtype,
        context=context,
        steps=steps,
        warmup=warmup,
        step_s=float(statistics.median(plain_s)),
        profiled_step_s=mid,
        parts=parts,
        plain_steps_s=plain_s,
        profiled_steps_s=durations,
        token_ids=token_ids,
        # the device as str(dev) ("cuda:0"), as before; the threads the block ran with
        environment=replace(lm.environment(PROFILE_SOURCE), device=str(dev), threads=n_threads),
    )


def _check_profile(lm, context, steps, warmup, threads) -> None:
    """`profile_decode_step`'s argument checks, and that the steps fit the model's context."""
    if not isinstance(lm, LoadedModel):
        raise ValueError(
            f"expected a viz.LoadedModel, not {type(lm).__name__}: load one with viz.load_model()"
        )
    checks.whole("context", context, 1, fix="tokens in the KV cache before the profiled steps")
    checks.whole("steps", steps, 1, fix="decode steps to profile")
    checks.whole("warmup", warmup, 0, fix="untimed decode steps first")
    checks.threads(threads)
    limit = lm.spec.context_length
    needed = context + warmup + steps
    if limit and needed > limit:
        raise ValueError(
            f"context {context} + {warmup} warm-up + {steps} profiled steps needs "
            f"{needed} positions, but {lm.spec.name} holds {limit}: use "
            f"context <= {limit - warmup - steps}"
        )


def _profiled_step(
    step: Callable[[torch.Tensor, Any], torch.Tensor],
    token: torch.Tensor,
    cache: Any,
    model: Any,
    dev: torch.device,
    activities: list,
) -> tuple[torch.Tensor, list]:
    """One decode step under the profiler, in the model's scopes (and, on CUDA, the wait for
    the GPU): the token it chose and its top-level "viz::step" event."""
    from torch.profiler import profile, record_function

    prof = profile(activities=activities)
    with profile_scopes(model):
        with quiet_stderr():
            prof.start()
        try:
            with record_function(STEP_SCOPE):
                token = step(token, cache)
                if dev.type == "cuda":
                    with record_function(WAIT_SCOPE):
                        torch.cuda.synchronize(dev)
        finally:
            with quiet_stderr():
                prof.stop()
    return token, [e for e in prof.events() if e.name == STEP_SCOPE and e.cpu_parent is None]


def _step_parts(
    seconds: dict[str, float],
    ops: dict[str, int],
    entries: dict[str, int],
    device: dict[str, Optional[float]],
    *,
    on_gpu: bool,
) -> list[StepPart]:
    """`split_step`'s figures as one `StepPart` per category, the gaps last."""
    order = list(CATEGORIES) + ([DEVICE_WAIT] if on_gpu else [])
    parts = [
        StepPart(
            category=c,
            seconds=seconds.get(c, 0.0),
            calls=entries.get(c) or ops.get(c, 0),  # a scope's entries, else its ops
            ops=ops.get(c, 0),
            device_seconds=device.get(c, 0.0) if on_gpu and c != DEVICE_WAIT else None,
        )
        for c in order
    ]
    parts.append(StepPart(category=GAPS, seconds=seconds[GAPS], calls=0, ops=0))
    return parts
