"""The GPU reference: what one lent GPU measured, shipped in `viz/data/`, set beside what a
datasheet computes (lessons 03, 04, 06, 07, 08 and 11).

Recorded by `benchmarks/gpu_check.py` on an NVIDIA H200 lent to this project for one session
(2026-12-04, driver 580.159.04, torch 2.11.0+cu130, transformers 5.17.0; three calls, 15
minutes of device time in all). No weights travel to that machine, so every model was built
from its published config with **random weights**: real shapes, real kernels, real timings
and memory, meaningless text. The files:

| name | what | lesson |
|---|---|---|
| `gpu-memory-wall` | the device's peaks, the fixed cost per depth, five shapes × 2 dtypes | 08 |
| `gpu-smollm2-135m-trace` | a 64-token reply of the course model's shape | 07 |
| `gpu-<model>-prompt-sweep` | prefill from 128 to 4,096 tokens | 03 |
| `gpu-<model>-busy-sweep` | a decode step's wall time and the GPU's own time, batch 1–1,024 | 04, 06 |
| `gpu-<model>-compiled-step` | the decode step eager and replayed as a CUDA graph | 11 |

(`<model>`: `smollm2-135m`, the course model's shape, and `llama-3.1-8b`.)

**What a wall clock alone hides on a GPU.** An eager decode step is ~1,200 (SmolLM2-135M) to
~1,500 (Llama-3.1-8B) GPU kernels, each launched by the host's Python one after another. On
the lent machine's host one launch took ~11 µs, so the step's wall time (24–120 ms, drifting
with the host's load from minute to minute) was the host's, while the GPU itself was busy for
2.2 ms (135M) and 6.2 ms (8B) of it. `busy-sweep` therefore holds both: `decode_step_s`, the
wall time (a synchronized clock), and `gpu_busy_s`, the sum of the step's kernel durations
(torch.profiler, one profiled step at a time). The busy time is the device's own: it is what
the rule (`viz.perf.regime`) judges here, with no fixed cost (the launches are not in it), and
it is where the knee of the batch sweep shows. A CUDA graph, which launches the whole step at
once, confirms it: 2.25 ms and 6.55 ms a step (`compiled-step`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from viz.perf.counts import PassCost, decode_cost, prefill_cost
from viz.perf.peaks import Peaks, peaks_from_machine
from viz.perf.reference import list_references, load_reference
from viz.perf.regime import REGIMES, Verdict
from viz.perf.roofline import Roofline, pass_verdict, point
from viz.perf.table import Sweep
from viz.perf.wall import WallRun
from viz.spread import Spread

GPU_MODELS = ("smollm2-135m", "llama-3.1-8b")  # the shapes shipped (the course model's first)
KINDS = ("trace", "prompt-sweep", "busy-sweep", "compiled-step")


def gpu_reference(kind: str, model: str = "smollm2-135m"):
    """A shipped GPU measurement: kind "memory-wall" (a `WallRun`), or one of `KINDS` for
    `model` ("smollm2-135m" or "llama-3.1-8b"; not every kind ships for both)."""
    name = "gpu-memory-wall" if kind == "memory-wall" else f"gpu-{model}-{kind}"
    if kind != "memory-wall" and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: use 'memory-wall' or one of {list(KINDS)}")
    if name not in list_references():
        shipped = [n for n in list_references() if n.startswith("gpu-")]
        raise ValueError(f"no GPU reference {name!r} ships with viz; shipped: {shipped}")
    return load_reference(name)


def gpu_wall() -> WallRun:
    """The GPU's memory-wall run: its measured peaks and fixed costs live here."""
    return gpu_reference("memory-wall")


def gpu_peaks(dtype: str = "bfloat16") -> Peaks:
    """The GPU's measured ceilings in `dtype`: its matmul peak and its read bandwidth."""
    return peaks_from_machine(gpu_wall().peaks, dtype)


def gpu_fixed_cost(n_layers: int, dtype: str = "bfloat16") -> Spread:
    """The GPU's fixed cost per step of a model `n_layers` deep: a model of that depth 64 wide,
    timed eagerly by the wall clock (the host's launches, mostly), with its spread."""
    floors = {o.dtype: o for o in gpu_wall().overhead}
    if dtype not in floors:
        raise ValueError(f"no GPU fixed cost in {dtype!r}: measured in {sorted(floors)}")
    return floors[dtype].spread_at(n_layers)


def gpu_provenance() -> str:
    """One line: which GPU, driver, software and date, and the command that measured it."""
    wall = gpu_wall()
    env, rec = wall.environment, wall.recorded
    return (f"{wall.device_name}, driver {rec.get('driver', 'unknown')}, torch "
            f"{env.torch_version}, transformers {env.transformers_version}, "
            f"{rec.get('date', '')}, `{rec.get('command', 'benchmarks/gpu_check.py')}`; "
            f"models built from their configs with random weights")


# ---- the decode step's own time against the batch size ----------------------------------------
@dataclass
class BusyRow:
    """One batch size of a device-busy sweep, judged by the rule on the GPU's own time."""

    batch: int
    context_tokens: int  # tokens per request in the sequence at the step
    wall: Spread  # the step's wall time, seconds (host launches included)
    busy: Spread  # the step's kernels, summed: the GPU's own time, seconds
    kernels: int  # kernels in one step
    cost: PassCost  # counted FLOPs and bytes of the step
    verdict: Verdict  # the rule on `busy` (no fixed cost: the launches are not in it)

    @property
    def host_share(self) -> float:
        """The share of the wall time the GPU was not busy (median figures)."""
        return max(0.0, 1.0 - self.busy.median / self.wall.median)

    @property
    def mbu(self) -> float:
        """Bytes read per busy second ÷ the measured read bandwidth (medians)."""
        return self.verdict.memory_floor.median / self.busy.median

    @property
    def mfu(self) -> float:
        """FLOPs per busy second ÷ the measured matmul peak (medians)."""
        return self.verdict.compute_floor.median / self.busy.median


def _check_busy(sweep) -> Sweep:
    if not isinstance(sweep, Sweep) or sweep.name != "device_busy":
        raise ValueError("expected a device-busy sweep, e.g. "
                         "viz.perf.gpu_reference('busy-sweep', 'llama-3.1-8b')")
    if any(v is None for v in sweep.column("gpu_busy_s")):
        raise ValueError("this sweep has no GPU busy time (it was measured without CUDA)")
    return sweep


def busy_rows(sweep: Sweep, peaks: Optional[Peaks] = None) -> list[BusyRow]:
    """Each batch size's wall time, busy time, counted work and the rule's verdict on the busy
    time (peaks: default the GPU's, `gpu_peaks(dtype of the sweep)`)."""
    sweep = _check_busy(sweep)
    peaks = peaks or gpu_peaks(sweep.model.dtype)
    walls, busies = sweep.spread("decode_step_s"), sweep.spread("gpu_busy_s")
    rows = []
    for k, row in enumerate(sweep.rows()):
        cost = decode_cost(sweep.model, int(row["context_tokens"]), int(row["batch_size"]))
        rows.append(BusyRow(batch=int(row["batch_size"]), context_tokens=int(row["context_tokens"]),
                            wall=walls[k], busy=busies[k], kernels=int(row["kernels_per_step"]),
                            cost=cost, verdict=pass_verdict(cost.flops, cost.bytes, busies[k],
                                                            peaks, 0.0)))
    return rows


def busy_knee(rows: list[BusyRow]) -> tuple[Optional[int], Optional[int]]:
    """The knee as measured: the largest batch the rule calls memory-bound and the smallest it
    calls compute-bound (None where no row says so)."""
    memory = [r.batch for r in rows if r.verdict.regime == REGIMES[1]]
    compute = [r.batch for r in rows if r.verdict.regime == REGIMES[2]]
    return (max(memory) if memory else None, min(compute) if compute else None)


def ridge_batch(spec, flops_per_s: float, bytes_per_s: float, context_tokens: int,
                largest: int = 1 << 16) -> Optional[int]:
    """The knee as counted: the smallest batch whose decode step's compute floor reaches its
    memory floor (FLOPs ÷ flops_per_s ≥ bytes ÷ bytes_per_s) at `context_tokens` tokens per
    request; None if no batch up to `largest` does (the KV cache grows with the batch too;
    past `viz.perf.counts.knee_context` tokens per request no batch does)."""
    for rate, what in ((flops_per_s, "flops_per_s"), (bytes_per_s, "bytes_per_s")):
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            raise ValueError(f"{what} must be a positive number, not {rate!r}")
    low, high = 1, int(largest)
    compute_wins = lambda b: (decode_cost(spec, context_tokens, b).flops / flops_per_s  # noqa: E731
                              >= decode_cost(spec, context_tokens, b).bytes / bytes_per_s)
    if not compute_wins(high):
        return None
    while low < high:  # the floors' ratio grows with the batch: bisect for the first crossing
        mid = (low + high) // 2
        if compute_wins(mid):
            high = mid
        else:
            low = mid + 1
    return low


def busy_roofline(sweep: Sweep, peaks: Optional[Peaks] = None) -> Roofline:
    """A roofline of the GPU's own time: one decode point per batch size, timed by its busy
    time, under the GPU's measured ceilings (draw it with `viz.views.roofline_figure`)."""
    rows = busy_rows(sweep, peaks)
    peaks = peaks or gpu_peaks(sweep.model.dtype)
    return Roofline(peaks=peaks, model=sweep.model, environment=sweep.environment,
                    points=[point(f"B={r.batch}", r.cost, r.busy.median) for r in rows],
                    label=f"{sweep.label}, GPU busy time")


# ---- prefill against the prompt's length ------------------------------------------------------
@dataclass
class PrefillRow:
    """One prompt length of a GPU prompt sweep, judged by the rule on its wall time."""

    tokens: int
    seconds: Spread  # the prefill's forward pass (wall time)
    cost: PassCost
    verdict: Verdict  # the rule, with the GPU's fixed cost at the model's depth

    @property
    def mfu(self) -> float:
        return self.verdict.compute_floor.median / self.seconds.median


def prefill_rows(sweep: Sweep, peaks: Optional[Peaks] = None,
                 fixed_cost: Optional[Spread] = None) -> list[PrefillRow]:
    """Each prompt length's prefill and the rule's verdict (peaks: the GPU's; fixed_cost: the
    GPU's at the model's depth, `gpu_fixed_cost`)."""
    if not isinstance(sweep, Sweep) or sweep.name != "prompt_length":
        raise ValueError("expected a prompt-length sweep, e.g. "
                         "viz.perf.gpu_reference('prompt-sweep', 'llama-3.1-8b')")
    peaks = peaks or gpu_peaks(sweep.model.dtype)
    fixed = fixed_cost if fixed_cost is not None else gpu_fixed_cost(sweep.model.n_layers,
                                                                     sweep.model.dtype)
    seconds = sweep.spread("prefill_forward_s")
    rows = []
    for k, row in enumerate(sweep.rows()):
        cost = prefill_cost(sweep.model, int(row["prompt_tokens"]))
        rows.append(PrefillRow(tokens=int(row["prompt_tokens"]), seconds=seconds[k], cost=cost,
                               verdict=pass_verdict(cost.flops, cost.bytes, seconds[k], peaks,
                                                    fixed)))
    return rows
