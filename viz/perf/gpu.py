"""The GPU reference: what one lent GPU measured, shipped in `viz/data/`, set beside what a
datasheet computes (lessons 03, 04, 06, 07, 08 and 13).

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

**An eager step's wall time is the host's, and the host drifted.** An eager decode step is
1,222 (SmolLM2-135M) or 1,463 (Llama-3.1-8B) GPU kernels, each launched by the host's Python
one after another, and the GPU runs each in microseconds: the step's wall time is the host's.
On the lent machine it drifted 4-5× within the session: the same eager step of the course
model's shape took 23.6 ms (the memory-wall run), 36 then ~107 ms within the shipped trace
(median 106.6), 41.6 and 48.8 ms (the compiled-step run's two eager ways) and 68.6 ms (the
busy sweep); the 8B's 42.6, 25.3, 30.0 and 113.8 ms (`eager_walls` lists them from the files).
Only the memory-wall run measured the host's launch cost beside its walls (its fixed cost: a
model of the same depth 64 wide, eager); no file records the host's load, clocks or CPU
(`benchmarks/gpu_check.py` does now). So the lessons use the figures that do not depend on the
host: the **busy time** (`gpu_busy_s`: the sum of a step's kernel durations, torch.profiler,
one profiled step at a time: 2.20 ms for the 135M, 6.21 ms for the 8B, at batch 1), the
**CUDA-graph step** (`compiled-step`: 2.25 and 6.55 ms), and prefill; an eager wall only
labelled as the host's.

**What the CUDA-graph step shows, and what it does not.** Measured: the step replayed as a
CUDA graph (`torch.compile(mode="reduce-overhead")`, its timed call including torch.compile's
guards, a `.clone()` of the output and a synchronisation every step) takes about as long as the
eager step's kernels summed: 2.25 vs 2.20 ms (135M), 6.55 vs 6.21 ms (8B) (`graph_steps`). Not
known: that mode also runs Inductor, which fuses operations into fewer, different kernels, so
the graph's kernels are not the eager ones; whether fusion shortened the GPU's own time and the
call's extras lengthened it by as much, or neither, needs a profile of the compiled step (its
kernel count and time by kind), which this run did not make (`benchmarks/gpu_check.py` does
now).

**Judging the busy time.** The rule's first question needs a fixed cost of the GPU's own time:
the busy time of a model of the same depth and a tiny width, as the CPU's fixed cost is. This
run did not measure it (`gpu_check.py` now does, into the busy sweep's settings, and
`busy_rows` uses it when it is there). What the files hold bounds it: the course model's shape
ran 1,222 kernels in at most 2.22 ms, 1.82 µs a kernel on average, and a kernel of a narrower
model of the same kind takes no longer, so a step of k kernels holds at most k × 1.82 µs of
fixed cost (`kernel_time_bound`). Where that bound is under half the busy time the rule cannot
say overhead-bound, and the floors decide (the 8B at every batch measured); where it is not,
the step is **not judged** (`NOT_JUDGED`: the 135M up to batch 512, whose 2.2 ms at batch 1
could be all fixed cost while reading its bytes takes 3 % of it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from viz import checks
from viz.perf.counts import PassCost, decode_cost, prefill_cost
from viz.perf.machine.peaks import Peaks, peaks_from_machine
from viz.perf.reference import list_references, load_reference
from viz.perf.regime import REGIMES, Verdict, utilisation
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
    """The fixed cost per step of a model `n_layers` deep on the GPU's host: a model of that
    depth 64 wide, timed eagerly by the wall clock in the memory-wall run, with its spread. The
    host's figure (its Python launching the kernels), for wall-clock passes such as prefill;
    the busy time's fixed cost is another (`busy_fixed_cost`, `kernel_time_bound`)."""
    floors = {o.dtype: o for o in gpu_wall().overhead}
    if dtype not in floors:
        raise ValueError(f"no GPU fixed cost in {dtype!r}: measured in {sorted(floors)}")
    return floors[dtype].spread_at(n_layers)


def gpu_provenance() -> str:
    """One line: which GPU, driver, software and date, and the command that measured it."""
    wall = gpu_wall()
    env, rec = wall.environment, wall.recorded
    return (
        f"{wall.device_name}, driver {rec.get('driver', 'unknown')}, torch "
        f"{env.torch_version}, transformers {env.transformers_version}, "
        f"{rec.get('date', '')}, `{rec.get('command', 'benchmarks/gpu_check.py')}`; "
        f"models built from their configs with random weights"
    )


# ---- the decode step's own time against the batch size ----------------------------------------
# a busy time whose fixed cost was neither measured nor bounded below half of it
NOT_JUDGED = "not judged"


@dataclass
class BusyRow:
    """One batch size of a device-busy sweep, judged by the rule on the GPU's own time."""

    batch: int
    context_tokens: int  # tokens per request in the sequence at the step
    wall: Spread  # the step's wall time, seconds (host launches included: the host's figure)
    busy: Spread  # the step's kernels, summed: the GPU's own time, seconds
    kernels: int  # kernels in one step
    cost: PassCost  # counted FLOPs and bytes of the step
    # the rule on `busy`, with `fixed` as its fixed cost where measured, else with none (then
    # only its floors count: `regime` says whether the rule can be applied at all)
    verdict: Verdict
    fixed: Optional[Spread] = None  # the busy time's fixed cost, measured (None: not measured)
    fixed_bound_s: Optional[float] = None  # at most this much of `busy` can be fixed cost

    @property
    def regime(self) -> str:
        """The rule's word on the busy time: with a measured fixed cost, the verdict's; without,
        the floors' word only where the fixed cost's bound is under half the busy time (so the
        rule cannot say overhead-bound), and `NOT_JUDGED` where it is not."""
        if self.fixed is not None:
            return self.verdict.regime
        if (
            self.fixed_bound_s is not None
            and self.fixed_bound_s < self.verdict.overhead_share * self.busy.low
        ):
            return self.verdict.regime
        return NOT_JUDGED

    def line(self) -> str:
        """The judgement in one line, with what decided it."""
        ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
        floors = (
            f"reading the bytes at the peak takes {ms(self.verdict.memory_floor.median)} "
            f"(MBU {self.mbu:.0%}), the arithmetic {ms(self.verdict.compute_floor.median)} "
            f"(MFU {self.mfu:.0%})"
        )
        if self.fixed is not None:
            return (
                f"{self.regime} — fixed cost {ms(self.fixed.median)} (measured: a model of "
                f"the same depth, tiny width) of the {ms(self.busy.median)} busy time; "
                f"{floors}"
            )
        if self.fixed_bound_s is None:
            bound = "no bound on it"
        else:
            bound = (
                f"{ms(self.fixed_bound_s)} at most ({self.kernels:,} kernels × ≤ "
                f"{self.fixed_bound_s / self.kernels * 1e6:.2f} µs)"
            )
        if self.regime == NOT_JUDGED:
            return (
                f"{NOT_JUDGED} — no measured fixed cost for the GPU's busy time, and "
                f"{bound} could be one: half the {ms(self.busy.median)} or more; {floors}"
            )
        return (
            f"{self.regime} — its fixed cost is {bound}, under half the "
            f"{ms(self.busy.median)} busy time, so the floors decide: {floors}"
        )

    @property
    def host_share(self) -> float:
        """The share of the wall time the GPU was not busy (median figures)."""
        return max(0.0, 1.0 - self.busy.median / self.wall.median)

    @property
    def mbu(self) -> float:
        """Bytes read per busy second ÷ the measured read bandwidth (medians)."""
        return utilisation(self.verdict.memory_floor.median, self.busy.median)

    @property
    def mfu(self) -> float:
        """FLOPs per busy second ÷ the measured matmul peak (medians)."""
        return utilisation(self.verdict.compute_floor.median, self.busy.median)


def _check_busy(sweep) -> Sweep:
    if not isinstance(sweep, Sweep) or sweep.name != "device_busy":
        raise ValueError(
            "expected a device-busy sweep, e.g. "
            "viz.perf.gpu_reference('busy-sweep', 'llama-3.1-8b')"
        )
    if any(v is None for v in sweep.column("gpu_busy_s")):
        raise ValueError("this sweep has no GPU busy time (it was measured without CUDA)")
    return sweep


def busy_fixed_cost(sweep: Sweep) -> Optional[Spread]:
    """The busy time's fixed cost measured with the sweep: the busy time of a model of the
    same depth and a tiny width (`benchmarks/gpu_check.py` writes it into the sweep's settings
    as "fixed_cost"); None where the sweep does not carry one (the shipped files)."""
    fixed = (sweep.settings or {}).get("fixed_cost")
    if not fixed or fixed.get("busy_s") is None:
        return None
    if int(fixed.get("n_layers", -1)) != sweep.model.n_layers:
        raise ValueError(
            f"this sweep's fixed cost was measured {fixed.get('n_layers')} layers "
            f"deep, not {sweep.model.n_layers} as the model"
        )
    return Spread(**fixed["busy_s"])


def kernel_time_bound(sweep: Optional[Sweep] = None) -> float:
    """Seconds: the longest a kernel's fixed part can be, from a device-busy sweep: the
    smallest average kernel time of its rows (busy time's high end ÷ kernels). Default: the
    shipped sweep of the narrowest model (`GPU_MODELS[0]`), whose kernels are the shortest.

    A bound, not a measurement: the fixed part of each kernel is at most the whole kernel, and
    a model of the same kind and a narrower width (the rule's fixed-cost model) runs kernels
    no longer than these. Lesson 04 prints it with the busy time (`BusyRow.line`)."""
    sweep = _check_busy(sweep if sweep is not None else gpu_reference("busy-sweep", GPU_MODELS[0]))
    busy, kernels = sweep.spread("gpu_busy_s"), sweep.column("kernels_per_step")
    return min(b.high / int(k) for b, k in zip(busy, kernels) if k)


def _kernel_bound(sweep: Sweep) -> float:
    own = kernel_time_bound(sweep)
    shipped = gpu_reference("busy-sweep", GPU_MODELS[0])
    where = lambda s: (s.environment.device_name, s.environment.torch_version)  # noqa: E731
    return min(own, kernel_time_bound(shipped)) if where(sweep) == where(shipped) else own


def busy_rows(
    sweep: Sweep,
    peaks: Optional[Peaks] = None,
    fixed_cost: Optional[Spread] = None,
    kernel_bound_s: Optional[float] = None,
) -> list[BusyRow]:
    """Each batch size's wall time, busy time, counted work and the rule's judgement of the busy
    time (peaks: default the GPU's, `gpu_peaks(dtype of the sweep)`).

    fixed_cost: the busy time's fixed cost at the model's depth (default: the sweep's own,
      `busy_fixed_cost`); with one, each row's verdict is the rule's, whole.
    kernel_bound_s: without one, each row's fixed cost is bounded by its kernels × this
      (default: the shortest average kernel of this sweep and, where it was measured on the
      same device with the same torch as the shipped ones, of the narrowest shipped model:
      `kernel_time_bound`), and `BusyRow.regime` gives the floors' word only where the bound
      is under half the busy time, else `NOT_JUDGED` (module docstring)."""
    sweep = _check_busy(sweep)
    peaks = peaks or gpu_peaks(sweep.model.dtype)
    fixed = fixed_cost if fixed_cost is not None else busy_fixed_cost(sweep)
    per_kernel = None
    if fixed is None:
        per_kernel = kernel_bound_s if kernel_bound_s is not None else _kernel_bound(sweep)
    walls, busies = sweep.spread("decode_step_s"), sweep.spread("gpu_busy_s")
    rows = []
    for k, row in enumerate(sweep.rows()):
        cost = decode_cost(sweep.model, int(row["context_tokens"]), int(row["batch_size"]))
        kernels = int(row["kernels_per_step"])
        rows.append(
            BusyRow(
                batch=int(row["batch_size"]),
                context_tokens=int(row["context_tokens"]),
                wall=walls[k],
                busy=busies[k],
                kernels=kernels,
                cost=cost,
                verdict=pass_verdict(
                    cost.flops, cost.bytes, busies[k], peaks, fixed if fixed is not None else 0.0
                ),
                fixed=fixed,
                fixed_bound_s=None if per_kernel is None else kernels * per_kernel,
            )
        )
    return rows


def busy_knee(rows: list[BusyRow]) -> tuple[Optional[int], Optional[int]]:
    """The knee as measured: the largest batch the rule calls memory-bound and the smallest it
    calls compute-bound (`BusyRow.regime`: a row not judged counts as neither; None where no
    row says so)."""
    memory = [r.batch for r in rows if r.regime == REGIMES[1]]
    compute = [r.batch for r in rows if r.regime == REGIMES[2]]
    return (max(memory) if memory else None, min(compute) if compute else None)


def ridge_batch(
    spec, flops_per_s: float, bytes_per_s: float, context_tokens: int, largest: int = 1 << 16
) -> Optional[int]:
    """The knee as counted: the smallest batch whose decode step's compute floor reaches its
    memory floor (FLOPs ÷ flops_per_s ≥ bytes ÷ bytes_per_s) at `context_tokens` tokens per
    request; None if no batch up to `largest` does (the KV cache grows with the batch too;
    past `viz.perf.counts.knee_context` tokens per request no batch does)."""
    for rate, name in ((flops_per_s, "flops_per_s"), (bytes_per_s, "bytes_per_s")):
        checks.positive(name, rate, what="a positive number")
    low, high = 1, int(largest)
    compute_wins = lambda b: (
        decode_cost(spec, context_tokens, b).flops / flops_per_s  # noqa: E731
        >= decode_cost(spec, context_tokens, b).bytes / bytes_per_s
    )
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
    return Roofline(
        peaks=peaks,
        model=sweep.model,
        environment=sweep.environment,
        points=[point(f"B={r.batch}", r.cost, r.busy.median) for r in rows],
        label=f"{sweep.label}, GPU busy time",
    )


# ---- prefill against the prompt's length ------------------------------------------------------
@dataclass
class PrefillRow:
    """One prompt length of a GPU prompt sweep, judged by the rule on its wall time."""

    tokens: int
    seconds: Spread  # the prefill's forward pass (wall time)
    cost: PassCost
    verdict: Verdict  # the rule, with the host's fixed cost at the model's depth

    @property
    def mfu(self) -> float:
        return utilisation(self.verdict.compute_floor.median, self.seconds.median)


def prefill_rows(
    sweep: Sweep, peaks: Optional[Peaks] = None, fixed_cost: Optional[Spread] = None
) -> list[PrefillRow]:
    """Each prompt length's prefill and the rule's verdict (peaks: the GPU's; fixed_cost: the
    host's at the model's depth, `gpu_fixed_cost`, from the memory-wall run: the prefill is a
    wall-clock time, so its fixed cost is the host's too, measured minutes apart)."""
    if not isinstance(sweep, Sweep) or sweep.name != "prompt_length":
        raise ValueError(
            "expected a prompt-length sweep, e.g. "
            "viz.perf.gpu_reference('prompt-sweep', 'llama-3.1-8b')"
        )
    peaks = peaks or gpu_peaks(sweep.model.dtype)
    fixed = (
        fixed_cost
        if fixed_cost is not None
        else gpu_fixed_cost(sweep.model.n_layers, sweep.model.dtype)
    )
    seconds = sweep.spread("prefill_forward_s")
    rows = []
    for k, row in enumerate(sweep.rows()):
        cost = prefill_cost(sweep.model, int(row["prompt_tokens"]))
        rows.append(
            PrefillRow(
                tokens=int(row["prompt_tokens"]),
                seconds=seconds[k],
                cost=cost,
                verdict=pass_verdict(cost.flops, cost.bytes, seconds[k], peaks, fixed),
            )
        )
    return rows


# ---- the step without the host: a CUDA graph beside the eager kernels --------------------------
@dataclass
class GraphStep:
    """One model's decode step on the GPU by the figures that do not depend on the host's
    state (lesson 13), with the eager wall of the same run labelled as the host's."""

    model: str  # the shape's name, e.g. "smollm2-135m"
    kernels: int  # kernels in one eager step at batch 1 (busy sweep)
    busy: Spread  # the eager step's kernels summed (busy sweep, batch 1): the GPU's own time
    graph: Spread  # the step replayed as a CUDA graph, wall clock (compiled-step)
    memory_floor: Spread  # the graph's step's counted bytes ÷ the measured read bandwidth
    eager: Spread  # the eager step (static cache) timed in turns with `graph`: the host's
    recorded: Spread  # the eager step with a growing cache, same run: the host's too
    compile_s: float = 0.0  # the first compiled call: trace, code generation, graph capture
    same_tokens: bool = True  # the greedy tokens of the eager ways and the graph agreed

    @property
    def graph_over_busy(self) -> Spread:
        """CUDA-graph step ÷ eager kernel sum: about 1 when the step, launched at once, takes
        what the GPU's kernels took eager (worst case at each end)."""
        return self.graph / self.busy

    @property
    def speedup(self) -> Spread:
        """Eager step ÷ CUDA-graph step, both from the same run (static cache both ways): how
        long the host's launching took in that run, not a figure of the GPU."""
        return self.eager / self.graph

    @property
    def mbu(self) -> float:
        """The graph step's bandwidth use: memory floor ÷ step (medians)."""
        return utilisation(self.memory_floor.median, self.graph.median)


def graph_steps() -> list[GraphStep]:
    """Each shipped model's CUDA-graph step beside its eager kernel sum and memory floor (the
    course model's shape first). The floor is counted at the graph run's middle decode step."""
    steps = []
    for name in GPU_MODELS:
        run = gpu_reference("compiled-step", name)
        one = busy_rows(gpu_reference("busy-sweep", name))[0]  # batch 1
        peaks = gpu_peaks(run.dtype)
        middle = run.prompt_tokens + run.new_tokens // 2
        nbytes = decode_cost(gpu_reference("busy-sweep", name).model, middle).bytes
        bw = peaks.bytes_spread or Spread.exact(peaks.bytes_per_s)
        steps.append(
            GraphStep(
                model=name,
                kernels=one.kernels,
                busy=one.busy,
                graph=run.compiled,
                memory_floor=bw.rate(nbytes),
                eager=run.eager,
                recorded=run.recorded,
                compile_s=run.compile_s,
                same_tokens=run.same_tokens,
            )
        )
    return steps


def eager_walls(model: str = "smollm2-135m") -> list[tuple[str, Spread, Optional[Spread]]]:
    """The same eager decode step (batch 1, bfloat16) as each shipped file timed it by the wall
    clock: (what, wall, the host's launch cost beside it or None). The host's figure, not the
    GPU's: it drifted 4-5× within one session (module docstring). The launch cost is the
    memory-wall run's fixed cost (a model of the same depth 64 wide, eager, same run); no other
    file measured one."""
    out = []
    wall = gpu_wall()
    spec = gpu_reference("busy-sweep", model).model
    for q in wall.points:
        if q.kind == "shape" and q.model == spec.name and q.dtype == "bfloat16" and q.batch == 1:
            out.append(
                (
                    "memory-wall run",
                    q.step_spread or Spread.exact(q.seconds),
                    gpu_fixed_cost(q.n_layers),
                )
            )
    if model == GPU_MODELS[0]:
        trace = gpu_reference("trace", model)
        out.append(("the shipped trace", trace.decode_step_spread, None))
    run = gpu_reference("compiled-step", model)
    out.append(("compiled-step run, growing cache", run.recorded, None))
    out.append(("compiled-step run, static cache", run.eager, None))
    out.append(("busy sweep, batch 1", busy_rows(gpu_reference("busy-sweep", model))[0].wall, None))
    return out
