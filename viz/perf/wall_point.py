"""One decode step timed: the point the memory wall places against the bytes it reads.

`measure_point` times a model's decode steps (one warm-up recording, then `repeats`
recordings of `max_new_tokens` tokens, or a batch of copies of the prompt) and counts the
bytes and FLOPs of the median step (`viz.perf.counts.decode_cost`). The memory wall
(`viz.perf.wall`) places these points against its floors; the fixed cost per step
(`viz.perf.machine.fixed_costs`) is the step time of tiny-width models timed the same way.
Lesson 08.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional

from viz import checks
from viz.perf.counts import decode_cost
from viz.runtime import using_threads
from viz.spread import Spread

PROMPT = "The memory wall, measured one decode step at a time: "


@dataclass
class WallPoint:
    """One decode step measured (or computed): what it reads and does, and how long it took."""

    label: str  # e.g. "SmolLM2-135M bf16"
    model: str  # the shape's name
    dtype: str  # "float32" or "bfloat16"
    kind: str  # "shape" (a published or scaled shape) or "fixed cost" (tiny width)
    n_params: int
    n_layers: int
    hidden_size: int
    context_tokens: int  # tokens in the sequence at the median timed step
    step_bytes: int  # counted bytes the step reads: weights + KV cache (`decode_cost`)
    step_flops: int  # counted FLOPs of the step
    seconds: float  # median decode forward pass (computed runs: fixed cost + roofline time)
    seconds_min: float  # fastest timed step
    seconds_max: float  # slowest timed step
    steps_timed: int  # decode steps behind the median (0 for a computed point)
    fixed_cost_s: float  # fixed per-step cost at this depth and dtype (from the overhead floor)
    random_weights: bool = True  # built from a config (real kernels, meaningless text)
    batch: int = 1  # requests per step (1: one token per weight read)
    step_spread: Optional[Spread] = None  # the timed steps: median, middle half (None: older)

    @property
    def spread(self) -> Spread:
        """The step time with its spread (an exact figure for a computed or older point)."""
        return self.step_spread or Spread.exact(self.seconds)


def short_dtype(dtype: str) -> str:
    """A dtype's short name in a point's label: "float32" → "fp32", "bfloat16" → "bf16"."""
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(dtype, dtype)


def measure_point(
    lm,
    *,
    max_new_tokens: int = 16,
    repeats: int = 2,
    prompt: str = PROMPT,
    batch: int = 1,
    label: str = "",
    kind: str = "shape",
    fixed_cost_s: float = 0.0,
    threads: Optional[int] = None,
) -> WallPoint:
    """Time `lm`'s decode steps: one warm-up, then `repeats` recordings of `max_new_tokens`.

    seconds is the median forward pass over all timed decode steps (sampling excluded);
    bytes and FLOPs are counted at the median step's context (`decode_cost`).
    batch: > 1 decodes that many copies of the prompt together (`viz.perf.generate_batch`):
        the arithmetic grows B-fold, the weight bytes do not (lesson 06).
    fixed_cost_s: the fixed cost to place it with (`measure_wall` fills it in).
    threads: CPU threads (None: torch's current count).
    """
    from viz.perf.batch import generate_batch
    from viz.record import record

    checks.whole("max_new_tokens", max_new_tokens, 2, fix="one decode step at least")
    checks.whole("repeats", repeats, 1)
    checks.one_of("kind", kind, ("shape", "fixed cost"))
    checks.whole("batch", batch, 1)
    checks.threads(threads)
    times: list[float] = []
    contexts: list[int] = []
    with using_threads(threads):
        if batch == 1:
            record(lm, prompt, max_new_tokens=3, stop_at_eos=False, embeddings=False, log_top=1)
            for _ in range(repeats):
                trace = record(
                    lm,
                    prompt,
                    max_new_tokens=max_new_tokens,
                    stop_at_eos=False,
                    embeddings=False,
                    log_top=1,
                )
                times += [s.forward_s for s in trace.steps[1:]]
                contexts += [s.seq_len for s in trace.steps[1:]]
        else:
            ids = list(lm.tokenizer(prompt)["input_ids"])
            generate_batch(lm, [ids] * batch, 3)
            for _ in range(repeats):
                run = generate_batch(lm, [ids] * batch, max_new_tokens)
                times += run.step_forward_s
                contexts += [len(ids) + k for k in range(1, len(run.step_forward_s) + 1)]
    spec = lm.spec
    spread = Spread.of(times)
    cost = decode_cost(spec, int(statistics.median_low(contexts)), batch)
    name = label or f"{spec.name} {short_dtype(spec.dtype)}" + (f" B={batch}" if batch > 1 else "")
    return WallPoint(
        label=name,
        model=spec.name,
        dtype=spec.dtype,
        kind=kind,
        n_params=spec.n_params,
        n_layers=spec.n_layers,
        hidden_size=spec.hidden_size,
        context_tokens=cost.context_tokens,
        step_bytes=int(cost.bytes),
        step_flops=int(cost.flops),
        seconds=spread.median,
        seconds_min=float(min(times)),
        seconds_max=float(max(times)),
        steps_timed=len(times),
        fixed_cost_s=float(fixed_cost_s),
        random_weights=spec.random_weights,
        batch=batch,
        step_spread=spread,
    )
