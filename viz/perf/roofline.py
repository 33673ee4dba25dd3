"""The roofline: measured prefill and decode passes placed under this device's two ceilings.

A pass that does F FLOPs and moves M bytes has arithmetic intensity I = F / M (FLOPs per
byte). On a device with peak arithmetic P (FLOP/s) and peak memory bandwidth W (bytes/s) it
cannot run faster than

    attainable FLOP/s = min(P, I · W)

— the "roof": a slope (memory-bound) that meets a flat top (compute-bound) at the ridge
I* = P / W. For a pass measured to take t seconds (lesson 06):

    achieved FLOP/s = F / t          achieved bytes/s = M / t
    MFU (model FLOPs utilisation)   = achieved FLOP/s / P
    MBU (model bandwidth utilisation) = achieved bytes/s / W

F and M come from the model's shape (`viz.perf.counts`); P and W from `viz.perf.machine.peaks`,
measured on this machine (not the datasheet). A pass with I < I* is memory-bound: its MBU
is the figure that can approach 1. Decode with batch 1 has I ≈ 1 FLOP/byte (each weight,
4 bytes in float32 or 2 in bfloat16, is used for one multiply-add per token); prefill reuses
each weight for every prompt token, so its intensity grows with the prompt.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional, Sequence

from viz import checks
from viz.perf.counts import PassCost, decode_cost, prefill_cost
from viz.perf.machine.peaks import Peaks, cached_peaks, peaks_v1_to_v2
from viz.perf.regime import Figure, Verdict, explain_regime, regime, utilisation, verdict
from viz.perf.sweeps import batch_size_sweep, prompt_of_length
from viz.record import record
from viz.runtime import using_threads
from viz.documents import Document
from viz.spread import Spread
from viz.trace import Environment, ModelSpec, Trace


@dataclass
class RooflinePoint:
    """One measured forward pass: its counted work and its measured time."""

    label: str  # e.g. "prefill", "decode", "decode B=8"
    phase: str  # "prefill" or "decode"
    batch: int  # requests in the pass
    input_tokens: int  # new tokens per request
    context_tokens: int  # tokens per request in the sequence after the pass
    flops: float  # counted (see viz.perf.counts)
    bytes: float  # counted lower bound (see viz.perf.counts)
    seconds: float  # measured: the forward pass alone (median where several were timed)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity I = flops / bytes (FLOPs per byte)."""
        return self.flops / self.bytes

    @property
    def achieved_flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.bytes / self.seconds


def point(label: str, cost: PassCost, seconds: float) -> RooflinePoint:
    """A RooflinePoint from a counted pass and the seconds it was measured to take."""
    if not seconds > 0:
        raise ValueError(f"a measured time must be > 0 seconds, not {seconds!r}")
    return RooflinePoint(
        label=label,
        phase=cost.phase,
        batch=cost.batch,
        input_tokens=cost.input_tokens,
        context_tokens=cost.context_tokens,
        flops=float(cost.flops),
        bytes=float(cost.bytes),
        seconds=float(seconds),
    )


def pass_regime(
    flops: float,
    nbytes: float,
    seconds: float,
    peaks: Peaks,
    fixed_cost_s: float,
    *,
    explain: bool = False,
) -> str:
    """The regime rule (`viz.perf.wall.regime`) applied to one measured pass.

    memory floor = nbytes ÷ peaks.bytes_per_s; compute floor = flops ÷ peaks.flops_per_s;
    fixed_cost_s: the fixed per-pass cost measured at the model's depth
    (`viz.perf.measure_overhead`). explain=True returns the verdict with the comparison that
    decided it (`viz.perf.wall.explain_regime`), for printing. Lessons 03, 04, 06, 07.
    """
    rule = explain_regime if explain else regime
    return rule(seconds, nbytes / peaks.bytes_per_s, flops / peaks.flops_per_s, fixed_cost_s)


def pass_verdict(
    flops: float, nbytes: float, step: Figure, peaks: Peaks, fixed_cost: Figure
) -> Verdict:
    """The rule on one measured pass with every figure's spread (`viz.perf.regime.verdict`).

    step, fixed_cost: a `viz.Spread` (the pass's timed runs; `viz.perf.fixed_cost(...)`), or a
    plain number of seconds (no spread). The floors carry the peaks' spreads: the memory floor
    runs from nbytes ÷ the fast reads to nbytes ÷ the slow ones, the compute floor likewise.
    `str(v)` prints the verdict in one line, `v.details()` its numbers and margins. Lessons 03,
    04, 06, 07.
    """
    bw = peaks.bytes_spread or Spread.exact(peaks.bytes_per_s)
    fl = peaks.flops_spread or Spread.exact(peaks.flops_per_s)
    return verdict(step, bw.rate(nbytes), fl.rate(flops), fixed_cost)


def floors_verdict(cost: PassCost, flops_per_s: Figure, bytes_per_s: Figure) -> Verdict:
    """The rule on a pass worked out, not measured (e.g. from a datasheet): its two floors
    (FLOPs ÷ flops_per_s, bytes ÷ bytes_per_s; each rate a `viz.Spread` or a plain number),
    no fixed cost (none is published), and the step as long as the longer floor (what the
    roofline says it would take). Lessons 03 and 06 set this machine beside an H100 with it."""
    fl, bw = Spread.coerce(flops_per_s), Spread.coerce(bytes_per_s)
    memory, compute = bw.rate(cost.bytes), fl.rate(cost.flops)
    return verdict(max(memory.median, compute.median), memory, compute, 0.0)


def trace_points(trace: Trace) -> list[RooflinePoint]:
    """The prefill pass and the median decode pass of a recorded trace (with a KV cache).

    Prefill: FLOPs and bytes at the prompt length, time = the prefill forward pass.
    Decode: counted at the median decode step's sequence length, time = the median of the
    decode steps' forward passes (sampling excluded: it is not the model's work).
    """
    if not trace.settings.use_cache:
        raise ValueError("the roofline counts assume a KV cache: record with use_cache=True")
    spec = trace.model
    pts = [
        point(
            "prefill", prefill_cost(spec, len(trace.prompt_tokens)), trace.timing.prefill_forward_s
        )
    ]
    decode = trace.steps[1:]
    if decode:
        context = int(statistics.median_low([s.seq_len for s in decode]))
        seconds = statistics.median([s.forward_s for s in decode])
        pts.append(point("decode", decode_cost(spec, context), seconds))
    return pts


def batch_points(sweep, spec: ModelSpec) -> list[RooflinePoint]:
    """One decode point per row of a batch-size sweep (`viz.perf.batch_size_sweep`)."""
    if sweep.name != "batch_size":
        raise ValueError(f"batch_points needs a batch_size sweep, not {sweep.name!r}")
    pts = []
    for row in sweep.rows():
        cost = decode_cost(spec, int(row["decode_context_tokens"]), int(row["batch_size"]))
        pts.append(point(f"decode B={int(row['batch_size'])}", cost, row["decode_forward_s"]))
    return pts


def prefill_points(sweep, spec: ModelSpec) -> list[RooflinePoint]:
    """One prefill point per row of a prompt-length sweep (`viz.perf.prompt_length_sweep`):
    the longer the prompt, the further right (each weight is reused by every prompt token)."""
    if sweep.name != "prompt_length":
        raise ValueError(f"prefill_points needs a prompt_length sweep, not {sweep.name!r}")
    return [
        point(
            f"prefill {int(row['prompt_tokens'])}",
            prefill_cost(spec, int(row["prompt_tokens"])),
            row["prefill_forward_s"],
        )
        for row in sweep.rows()
    ]


@dataclass
class Roofline(Document):
    """Measured peaks and measured passes, ready to plot (`viz.views.roofline`)."""

    peaks: Peaks
    model: ModelSpec
    environment: Environment
    points: list[RooflinePoint] = field(default_factory=list)
    label: str = ""  # e.g. "CPU" or "H200"

    # Saved as JSON by `save` / `load` (see viz.documents for the rules of versions).
    KIND: ClassVar[str] = "llm-inference-roofline"
    SCHEMA_VERSION: ClassVar[int] = 2
    # Schema 1's peaks had the fastest runs as figures (and could hold a copy's bandwidth).
    UPGRADES: ClassVar[dict] = {1: lambda d: {**d, "peaks": peaks_v1_to_v2(d["peaks"])}}
    WHAT: ClassVar[str] = "roofline"
    AGAIN: ClassVar[str] = (
        "measure it again with viz.perf.measure_roofline(...) or `python -m viz roofline`"
    )

    def attainable_flops_per_s(self, intensity: float) -> float:
        """The roof at intensity I: min(P, I · W)."""
        return min(self.peaks.flops_per_s, intensity * self.peaks.bytes_per_s)

    def mfu(self, p: RooflinePoint) -> float:
        """Model FLOPs utilisation = (flops / seconds) / peak FLOP/s."""
        return utilisation(p.flops / self.peaks.flops_per_s, p.seconds)

    def mbu(self, p: RooflinePoint) -> float:
        """Model bandwidth utilisation = (bytes / seconds) / peak bytes/s."""
        return utilisation(p.bytes / self.peaks.bytes_per_s, p.seconds)

    def bound(self, p: RooflinePoint) -> str:
        """ "memory" left of the ridge (I < P / W), "compute" right of it."""
        return "memory" if p.intensity < self.peaks.ridge_intensity else "compute"

    def rows(self) -> list[dict[str, Any]]:
        """One dict per point with its derived figures (for a table or a test)."""
        return [
            {
                "label": p.label,
                "phase": p.phase,
                "batch": p.batch,
                "context_tokens": p.context_tokens,
                "seconds": p.seconds,
                "flops": p.flops,
                "bytes": p.bytes,
                "intensity": p.intensity,
                "achieved_flops_per_s": p.achieved_flops_per_s,
                "achieved_bytes_per_s": p.achieved_bytes_per_s,
                "mfu": self.mfu(p),
                "mbu": self.mbu(p),
                "bound": self.bound(p),
            }
            for p in self.points
        ]

    def __str__(self) -> str:
        pk = self.peaks
        lines = [
            f"{pk.device_name} ({pk.device}, {pk.dtype}, {pk.threads} "
            f"thread{'s' if pk.threads != 1 else ''}): "
            f"peak {pk.flops_per_s / 1e9:,.1f} GFLOP/s, {pk.bytes_per_s / 1e9:,.1f} GB/s, "
            f"ridge {pk.ridge_intensity:.1f} FLOP/byte" + (f"\n  ({pk.how})" if pk.how else ""),
            f"{'pass':<14}{'ms':>9}{'FLOP/byte':>11}{'GFLOP/s':>10}{'GB/s':>8}"
            f"{'MFU':>7}{'MBU':>7}  bound",
        ]
        for r in self.rows():
            lines.append(
                f"{r['label']:<14}{r['seconds'] * 1e3:>9.2f}{r['intensity']:>11.1f}"
                f"{r['achieved_flops_per_s'] / 1e9:>10.1f}"
                f"{r['achieved_bytes_per_s'] / 1e9:>8.2f}{r['mfu']:>7.1%}"
                f"{r['mbu']:>7.1%}  {r['bound']}"
            )
        return "\n".join(lines)


def measure_roofline(
    lm,
    prompt: str = "Explain in one paragraph why the sky is blue.",
    *,
    prompt_tokens: Optional[int] = None,
    max_new_tokens: int = 16,
    batch_sizes: Sequence[int] = (),
    peaks: Optional[Peaks] = None,
    trace: Optional[Trace] = None,
    batch=None,
    prompt_sweep=None,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Roofline:
    """Measure this device's peaks, record `prompt`, and place its prefill and decode passes.

    prompt_tokens: use a filler prompt of exactly this many tokens instead (a longer prompt
        moves prefill right, towards the compute roof).
    batch_sizes: also run a batch-size sweep and add one decode point per batch size (the
        points climb the memory slope as the batch grows: lesson 06).
    Reuse what was measured already instead (a lesson has it at hand):
    peaks: default `viz.perf.cached_peaks` (this machine's, measured once);  trace: a `viz.record` trace of `lm` (cache on);
    batch: a `viz.perf.batch_size_sweep` of `lm` (then batch_sizes is not needed).
    prompt_sweep: a `viz.perf.prompt_length_sweep` of `lm`: one prefill point per length.
    threads: CPU threads for everything measured here (None: torch's current count).
    """
    with using_threads(checks.threads(threads)):
        return _measure_roofline(
            lm,
            prompt,
            prompt_tokens,
            max_new_tokens,
            batch_sizes,
            peaks,
            trace,
            batch,
            prompt_sweep,
            progress,
            label,
        )


def _measure_roofline(
    lm,
    prompt,
    prompt_tokens,
    max_new_tokens,
    batch_sizes,
    peaks,
    trace,
    batch,
    prompt_sweep,
    progress,
    label,
) -> Roofline:
    peaks = peaks or cached_peaks(lm.device, lm.spec.dtype)
    if prompt_tokens is not None:
        prompt = prompt_of_length(lm.tokenizer, prompt_tokens)
    if trace is None:
        trace = record(
            lm,
            prompt,
            max_new_tokens=max_new_tokens,
            stop_at_eos=False,
            embeddings=False,
            log_top=1,
        )
    pts = trace_points(trace)
    if batch is None and batch_sizes:
        batch = batch_size_sweep(
            lm, batch_sizes, prompt=prompt, max_new_tokens=max_new_tokens, progress=progress
        )
    if batch is not None:
        pts += batch_points(batch, lm.spec)
    if prompt_sweep is not None:
        pts += prefill_points(prompt_sweep, lm.spec)
    return Roofline(
        peaks=peaks,
        model=lm.spec,
        points=pts,
        label=label,
        environment=lm.environment("measured by viz.perf.measure_roofline"),
    )
