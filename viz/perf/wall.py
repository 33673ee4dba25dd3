"""The memory wall, measured: decode step time against the bytes one step reads.

A decode step with batch 1 reads every weight once to make one token (lesson 04). If reading
were all it did, its time would be bytes ÷ bandwidth. Measured, a step takes longer, for one
of three reasons, and this module tells them apart on the learner's own machine (lesson 08):

- **a fixed cost per step** — Python, the framework's dispatch and many tiny kernels, paid per
  layer whatever the layer's width. Measured with a model of the *same depth* and a tiny
  width (`narrow_config`: width 64, a 512-token vocabulary): its weights take almost no time
  to read, so its step time is the fixed cost (`measure_overhead`, in
  `viz.perf.machine.fixed_costs`).
- **the memory floor** — M = bytes per step ÷ the read bandwidth measured over a buffer far
  larger than the cache (`viz.perf.machine.bandwidth`).
- **the compute floor** — C = FLOPs per step ÷ the measured peak matmul FLOP/s in the step's
  dtype.

`regime` is the one rule that names a point from those numbers; `fit_wall` fits
TPOT = fixed cost + bytes ÷ streaming rate across points (least squares), whose intercept
and slope are the two numbers that explain a decode step on a machine. Bytes per step vary
three ways: the dtype of one shape (float32 → bfloat16 halves them), the model's size
(shapes from a 12 M-parameter narrow model to 1.7 B, built by `viz.perf.from_config`: random
weights, real kernels) and the fixed cost (tiny-width models of each depth).

    run = perf.measure_wall(["smollm2-135m"], dtypes=["float32", "bfloat16"])
    print(run)                      # each point: bytes, TPOT, floors, MBU, regime
    fit = run.fit()                 # TPOT = fit.fixed_s + bytes / fit.bytes_per_s

Each point is one model's decode steps timed (`viz.perf.wall_point.measure_point`); byte and
FLOP counts come from `viz.perf.counts.decode_cost` (weights + KV cache, at the median timed
step's context). A run is saved as a `WallRun` document; the project CPU's reference is
`viz/data/cpu-memory-wall.json`, recorded by `benchmarks/memory_wall.py`.
`computed_wall` makes the same chart for a GPU from its datasheet — computed, not measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Optional, Sequence, Union

import numpy as np

from viz import checks
from viz.documents import Document
from viz.perf.configs import config_spec, from_config, read_config
from viz.perf.counts import decode_cost
from viz.perf.machine.fixed_costs import OverheadFloor, measure_overhead
from viz.perf.machine.peaks import MachinePeaks, machine_peaks
from viz.perf.regime import OVERHEAD_SHARE, Verdict, check_seconds, regime, utilisation, verdict
from viz.perf.wall_point import PROMPT, WallPoint, measure_point, short_dtype
from viz.provenance import environment_from_loose, loose_names, unknown_environment, utc_now
from viz.runtime import release_memory, resolve_device, short_device_name, using_threads
from viz.spread import Spread
from viz.trace import Environment, ModelSpec

# What a learner can do about each regime (lesson 08 prints it beside the rule's verdict).
REMEDIES = {
    "overhead-bound": "fewer Python round trips per token: fuse the small kernels and replay "
    "them as one (torch.compile, CUDA graphs on a GPU), or do more work per "
    "step (a batch, lesson 06) so the fixed cost is shared",
    "memory-bound": "fewer bytes per token: fewer bytes per weight (bfloat16, 8- or 4-bit "
    "weights with a kernel that reads them directly), or more tokens per weight "
    "read (batching, lesson 06; speculative decoding)",
    "compute-bound": "fewer FLOPs or faster arithmetic: a lower-precision matmul (bfloat16 "
    "where the CPU has it), or a device with a higher FLOP/s roof",
}


# ---- the fit ----------------------------------------------------------------------------------
@dataclass
class WallFit:
    """TPOT = fixed_s + bytes × seconds_per_byte, fitted by least squares."""

    fixed_s: float  # the intercept: the step time of a model with no bytes to read
    seconds_per_byte: float  # the slope
    r_squared: float  # share of the variance of the step times the line explains
    points: int  # how many points it was fitted to
    dtype: str = ""  # the number format of the points ("" when several were mixed)

    @property
    def bytes_per_s(self) -> float:
        """The streaming rate across the points: 1 / slope (see `streaming_rate`)."""
        return 1.0 / self.seconds_per_byte

    def predict_s(self, step_bytes: float) -> float:
        """The step time the line predicts for `step_bytes` bytes per step."""
        return self.fixed_s + step_bytes * self.seconds_per_byte

    def __str__(self) -> str:
        which = f"{self.points} {self.dtype} points" if self.dtype else f"{self.points} points"
        if self.points == 2:  # a line through two points fits them exactly: no R² to give
            return (
                f"TPOT ≈ {self.fixed_s * 1e3:.2f} ms + bytes ÷ "
                f"{self.bytes_per_s / 1e9:.1f} GB/s (the line through {which}: two "
                f"points fix it, so it says nothing of how straight the wall is)"
            )
        return (
            f"TPOT ≈ {self.fixed_s * 1e3:.2f} ms + bytes ÷ "
            f"{self.bytes_per_s / 1e9:.1f} GB/s "
            f"(least squares over {which}, R² {self.r_squared:.3f})"
        )


def streaming_rate(
    step_bytes: float, step: Union[Spread, float], fixed_cost: Union[Spread, float]
) -> Spread:
    """The rate a step's bytes streamed at once its fixed cost is set aside:
    bytes ÷ (step − fixed cost), with the spread of both carried along (bytes/s).

    Not the *achieved bandwidth* of the roofline (bytes ÷ the whole step, whose share of the
    read peak is the MBU): this one says how fast the reading itself went. The memory wall's
    fit estimates the same rate across many models (its slope). Lessons 04 and 08.
    """
    t, f = Spread.coerce(step), Spread.coerce(fixed_cost)
    rest = t - f
    if not rest.low > 0:
        raise ValueError(
            f"the fixed cost ({f.text(1e3, 'ms')}) is as long as the step "
            f"({t.text(1e3, 'ms')}) within their spreads: there is no time left "
            "to stream the bytes in, so no rate can be read off this step"
        )
    return rest.rate(step_bytes)


def fit_wall(step_bytes: Sequence[float], seconds: Sequence[float]) -> WallFit:
    """Least-squares line through (bytes per step, seconds per step): intercept and slope.

    Needs at least two points with different byte counts, all positive and finite; a line that
    falls with more bytes (a negative slope: the timings are noise, not bandwidth) is refused
    with a ValueError, as is any bad input. Lesson 08.
    """
    x, y = list(step_bytes), list(seconds)
    if len(x) != len(y):
        raise ValueError(
            f"step_bytes and seconds must have the same length ({len(x)} != "
            f"{len(y)}): one time per point"
        )
    if len(x) < 2:
        raise ValueError(
            f"a line needs at least 2 points, got {len(x)}: measure more models or dtypes"
        )
    for name, values in (("step_bytes", x), ("seconds", y)):
        for v in values:
            checks.positive(f"every value of {name}", v, noun="a finite number")
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.ptp(xs) == 0:
        raise ValueError(
            "all points read the same number of bytes: a slope needs points of "
            "different sizes or dtypes"
        )
    slope, intercept = np.polyfit(xs, ys, 1)
    if slope <= 0:
        raise ValueError(
            "the step time does not grow with the bytes read in these points (the "
            "fitted slope is <= 0): the machine was probably busy; measure again "
            "with more steps, or include larger models"
        )
    residual = float(np.sum((ys - (intercept + slope * xs)) ** 2))
    total = float(np.sum((ys - ys.mean()) ** 2))
    return WallFit(
        fixed_s=float(intercept),
        seconds_per_byte=float(slope),
        r_squared=1.0 - residual / total if total > 0 else 1.0,
        points=len(x),
    )


# ---- the run ------------------------------------------------------------------------------------
@dataclass
class QuantizedTry:
    """An attempt at fewer bytes per weight with a quantization library, measured."""

    library: str  # e.g. "torchao 0.18.0"
    method: str  # e.g. "Int8WeightOnlyConfig, eager"
    model: str
    baseline_dtype: str  # what it was compared with
    baseline_s: float  # median decode step of the unquantized model
    quantized_s: float  # median decode step after quantizing
    note: str = ""


def _floor(seconds: float, rate: Optional[Spread]) -> Spread:
    """A floor (work ÷ a measured rate) with the rate's spread carried over: the slow end of
    the rate gives the long end of the floor."""
    if rate is None or rate.runs == 0:
        return Spread.exact(seconds)
    return Spread(
        seconds,
        seconds * rate.median / rate.high,
        seconds * rate.median / rate.low,
        rate.runs,
        True,
    )


def _wall_v1_to_v2(data: dict) -> dict:
    """Schema 1: the peaks inside were a schema-1 MachinePeaks (the fastest runs were the
    figures). Upgraded with it; the run's own floors keep the figures they were drawn with."""
    if data.get("peaks"):
        data = {**data, "peaks": MachinePeaks.UPGRADES[1](data["peaks"])}
    return data


WALL_LOOSE = ("device", "device_name", "threads")  # loose before schema 3: now `environment`'s
WALL_SOURCE = "measured by viz.perf.measure_wall"


def _wall_v2_to_v3(data: dict) -> dict:
    """Schema 2: device, its name and the threads were loose fields beside an environment that
    could be null (a computed run), with no time; they move into `environment`
    (`viz.provenance`). The time is the recorded date, else the peaks'; the source the command
    that measured it, or the published numbers a computed run comes from. The peaks inside
    are upgraded with it (`MachinePeaks`' schema 3)."""
    data = dict(data)
    peaks = data.get("peaks")
    if peaks:
        data["peaks"] = MachinePeaks.UPGRADES[2](peaks)
    recorded = data.get("recorded") or {}
    when = recorded.get("date") or (peaks or {}).get("measured_at", "")
    source = (
        data.get("peaks_how", "")
        if data.get("computed")
        else f"`{recorded['command']}`"
        if recorded.get("command")
        else WALL_SOURCE
    )
    env = data.get("environment") or {}
    return environment_from_loose(
        data, WALL_LOOSE, env.get("source") or source, measured_at=env.get("measured_at") or when
    )


@loose_names(*WALL_LOOSE)
@dataclass
class WallRun(Document):
    """Decode steps placed against the memory wall: points, floors and how they were measured.

    Where, when and with what is `environment` (`viz.provenance`); its fields read as before
    too: `run.device`, `run.device_name`, `run.threads` (0 for a computed run)."""

    KIND: ClassVar[str] = "llm-inference-memory-wall"
    SCHEMA_VERSION: ClassVar[int] = 3
    UPGRADES: ClassVar[dict] = {1: _wall_v1_to_v2, 2: _wall_v2_to_v3}
    WHAT: ClassVar[str] = "memory-wall run"
    AGAIN: ClassVar[str] = (
        "measure it again with viz.perf.measure_wall(...) or `python benchmarks/memory_wall.py`"
    )

    label: str  # e.g. "this machine", "project CPU reference", "H100 (computed)"
    computed: bool  # True: computed from published numbers; nothing here was measured
    read_bytes_per_s: float  # the memory floor's bandwidth
    flops_per_s: dict[str, float]  # dtype → the compute floor's peak
    peaks_how: str  # how those two were measured, or which datasheet they come from
    overhead: list[OverheadFloor] = field(default_factory=list)  # one per dtype
    points: list[WallPoint] = field(default_factory=list)
    overhead_share: float = OVERHEAD_SHARE  # the rule's threshold (see `regime`)
    peaks: Optional[MachinePeaks] = None  # the full peak measurement, when measured
    # The device ("cpu", "cuda", "gpu" for a computed run) and its name, the torch threads every
    # timing ran with (0 for a computed run), the software, when (ISO UTC) and by what.
    environment: Environment = field(default_factory=unknown_environment)
    recorded: dict[str, Any] = field(default_factory=dict)  # command, date, load, threads
    quantized: list[QuantizedTry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # ---- per point -------------------------------------------------------------------------
    def point(self, label: str) -> WallPoint:
        for p in self.points:
            if p.label == label:
                return p
        raise ValueError(
            f"no point labelled {label!r}; this run has {[p.label for p in self.points]}"
        )

    def memory_floor_s(self, p: WallPoint) -> float:
        """M = bytes the step reads ÷ the read bandwidth."""
        return p.step_bytes / self.read_bytes_per_s

    def compute_floor_s(self, p: WallPoint) -> float:
        """C = FLOPs of the step ÷ the peak matmul FLOP/s in its dtype."""
        if p.dtype not in self.flops_per_s:
            raise ValueError(
                f"no peak FLOP/s for {p.dtype} in this run (it has {sorted(self.flops_per_s)})"
            )
        return p.step_flops / self.flops_per_s[p.dtype]

    def regime(self, p: WallPoint) -> str:
        """The rule (`viz.perf.regime.regime`) applied to this point's medians."""
        return regime(
            p.seconds,
            self.memory_floor_s(p),
            self.compute_floor_s(p),
            p.fixed_cost_s,
            overhead_share=self.overhead_share,
        )

    def verdict(self, p: WallPoint) -> Verdict:
        """The rule on this point with every figure's spread: its word, or "too close to call"
        (`viz.perf.regime.verdict`). Figures without a recorded spread count as exact."""
        fixed = Spread.exact(p.fixed_cost_s)
        for o in self.overhead:
            if o.dtype == p.dtype and p.fixed_cost_s == o.at(p.n_layers):
                fixed = o.spread_at(p.n_layers)
        if p.kind == "fixed cost":
            fixed = p.spread  # its own steps are its fixed cost
        memory = _floor(self.memory_floor_s(p), self.peaks.read.spread if self.peaks else None)
        rate = self.peaks.matmul.get(p.dtype) if self.peaks else None
        compute = _floor(self.compute_floor_s(p), rate.spread if rate else None)
        return verdict(p.spread, memory, compute, fixed, overhead_share=self.overhead_share)

    def explain(self, p: WallPoint) -> str:
        """The verdict on `p`, the comparison that decided it and its margin, in words."""
        return self.verdict(p).explain()

    def mbu(self, p: WallPoint) -> float:
        """Model bandwidth utilisation: (bytes ÷ measured time) ÷ read bandwidth."""
        return utilisation(p.step_bytes / self.read_bytes_per_s, p.seconds)

    def regimes(self) -> dict[str, str]:
        """label → the rule's word on the medians, for every point."""
        return {p.label: self.regime(p) for p in self.points}

    def verdicts(self) -> dict[str, Verdict]:
        """label → the verdict with its margin (`verdict`), for every point."""
        return {p.label: self.verdict(p) for p in self.points}

    def fixed_cost_s(self, dtype: str, n_layers: int) -> float:
        """The fixed per-step cost of a model `n_layers` deep in `dtype` (the overhead floor)."""
        for o in self.overhead:
            if o.dtype == dtype:
                return o.at(n_layers)
        raise ValueError(
            f"no fixed cost measured in {dtype} (this run has "
            f"{[o.dtype for o in self.overhead]}): measure_overhead(..., "
            f"dtype={dtype!r})"
        )

    # ---- across points -------------------------------------------------------------------------
    def fit_points(self, dtype: Optional[str] = None) -> list[WallPoint]:
        """The points the line TPOT = fixed + bytes ÷ bandwidth models: model shapes decoding
        one request (batch 1) whose verdict (`verdict`) is not compute-bound. The tiny
        fixed-cost models are left out (their depths, and so their fixed costs, differ), and
        so are batches and compute-bound steps (their time is not set by the bytes)."""
        return [
            p
            for p in self.points
            if p.kind == "shape"
            and p.batch == 1
            and (dtype is None or p.dtype == dtype)
            and self.verdict(p).regime != "compute-bound"
        ]

    def fit_dtype(self) -> Optional[str]:
        """The number format the one fit runs through: float32 where it has two points or
        more, else the format with the most (None if none has two)."""
        counts = {}
        for p in self.fit_points():
            counts[p.dtype] = counts.get(p.dtype, 0) + 1
        if counts.get("float32", 0) >= 2:
            return "float32"
        best = max(counts, key=counts.get, default=None)
        return best if best and counts[best] >= 2 else None

    def fit(self, dtype: Optional[str] = None) -> WallFit:
        """TPOT = fixed + bytes ÷ streaming rate, least squares over `fit_points` of one number
        format: `dtype`, or `fit_dtype()` by default. One format, because the line has one
        streaming rate, and the kernels of two formats need not stream at the same bytes per
        second (on a CPU without bfloat16 instructions they do not). The one fit of a wall:
        lesson 08 prints it and `wall_figure` draws it."""
        dtype = dtype or self.fit_dtype()
        if dtype is None:
            raise ValueError(
                "a line needs at least 2 model shapes at batch 1 in one number "
                f"format; this run's are {[p.label for p in self.fit_points()]}: "
                "measure another model in one of their formats"
            )
        pts = self.fit_points(dtype)
        line = fit_wall([p.step_bytes for p in pts], [p.seconds for p in pts])
        return replace(line, dtype=dtype or "")

    def rows(self) -> list[dict[str, Any]]:
        """One dict per point with its floors, MBU and regime (for a table or a test)."""
        return [
            {
                "label": p.label,
                "dtype": p.dtype,
                "kind": p.kind,
                "n_params": p.n_params,
                "n_layers": p.n_layers,
                "step_bytes": p.step_bytes,
                "seconds": p.seconds,
                "memory_floor_s": self.memory_floor_s(p),
                "compute_floor_s": self.compute_floor_s(p),
                "fixed_cost_s": p.fixed_cost_s,
                "mbu": self.mbu(p),
                "regime": self.regime(p),
                "verdict": self.verdict(p).regime,
            }
            for p in self.points
        ]

    def merged(self, other: "WallRun") -> "WallRun":
        """This run with `other`'s points and fixed-cost depths added (same machine)."""
        if (other.device_name, other.computed) != (self.device_name, self.computed):
            raise ValueError("merge runs of the same device only (measured with measured)")
        floors = {o.dtype: o for o in self.overhead}
        for o in other.overhead:
            if o.dtype in floors:
                mine = floors[o.dtype]
                depth = {n: (mine.seconds[k], mine.spread_at(n)) for k, n in enumerate(mine.layers)}
                depth.update(
                    {
                        n: (o.seconds[k], o.spread_at(n))
                        for k, n in enumerate(o.layers)
                        if n not in depth
                    }
                )
                kept = bool(mine.spreads) and bool(o.spreads)
                floors[o.dtype] = replace(
                    mine,
                    layers=sorted(depth),
                    seconds=[depth[n][0] for n in sorted(depth)],
                    spreads=[depth[n][1] for n in sorted(depth)] if kept else [],
                )
            else:
                floors[o.dtype] = o
        return replace(
            self,
            overhead=list(floors.values()),
            flops_per_s={**other.flops_per_s, **self.flops_per_s},
            points=self.points
            + [p for p in other.points if p.label not in {q.label for q in self.points}],
        )

    def title(self, short: bool = True) -> str:
        """ "label · device · N threads". short: the device by its short name, as a figure's
        title draws it (`viz.runtime.short_device_name`); False: its full name (the table)."""
        device = self.device_name or self.device
        device = short_device_name(device) if short else device
        core = f"{self.label} · {device}" if self.label else device
        if self.computed:
            return f"{core} · COMPUTED from published numbers, not measured"
        return f"{core} · {self.threads} thread{'s' if self.threads != 1 else ''}"

    def __str__(self) -> str:
        peak = ", ".join(f"{dt} {f / 1e9:,.0f} GFLOP/s" for dt, f in self.flops_per_s.items())
        lines = [
            self.title(short=False),
            f"memory floor at {self.read_bytes_per_s / 1e9:,.1f} GB/s (read); compute floor "
            f"at {peak}",
            f"{'point':<36}{'MB/step':>9}{'TPOT ms':>9}{'memory':>8}{'fixed':>8}"
            f"{'compute':>9}{'MBU':>6}  verdict (the rule, with the spreads)",
            f"{'':<36}{'':>9}{'':>9}{'floor':>8}{'cost':>8}{'floor':>9}",
        ]
        for r in self.rows():
            lines.append(
                f"{r['label']:<36}{r['step_bytes'] / 1e6:>9.1f}{r['seconds'] * 1e3:>9.2f}"
                f"{r['memory_floor_s'] * 1e3:>8.2f}{r['fixed_cost_s'] * 1e3:>8.2f}"
                f"{r['compute_floor_s'] * 1e3:>9.3f}{r['mbu']:>6.0%}  {r['verdict']}"
                + (f" ({r['regime']} on the medians)" if r["verdict"] != r["regime"] else "")
            )
        return "\n".join(lines)


# ---- measuring and computing runs -----------------------------------------------------------
def measure_wall(
    shapes: Sequence[Union[str, dict]] = ("smollm2-135m",),
    dtypes: Sequence[str] = ("float32", "bfloat16"),
    *,
    peaks: Optional[MachinePeaks] = None,
    overhead_depths: Sequence[int] = (),
    batch_sizes: Sequence[int] = (1,),
    max_new_tokens: int = 16,
    repeats: int = 2,
    prompt: str = PROMPT,
    overhead: Sequence[OverheadFloor] = (),
    device="cpu",
    threads: Optional[int] = None,
    label: str = "this machine",
    fixed_cost_points: bool = True,
    progress: bool = False,
) -> WallRun:
    """Measure the memory wall: each shape in each dtype, built from its config and timed.

    shapes: shipped config names ("smollm2-135m", "smollm2-360m", "llama-3.2-1b",
        "smollm2-1.7b") or config dicts (e.g. `narrow_config("smollm2-135m", 128,
        vocab_size=None)`, a ~12 M-parameter model). Each is built, timed and freed in turn,
        so only one lives in memory at a time.
    peaks: this machine's peaks (default `machine_peaks(device, threads=threads)`: cached).
    overhead_depths: depths at which to measure the fixed cost, besides each shape's own.
    batch_sizes: requests per step for each shape (1: the memory wall; a large batch shows a
        step whose arithmetic outgrows its bytes: compute-bound on a CPU at B=32).
    repeats, max_new_tokens: timed recordings per model, and decode steps in each.
    prompt: what each model is fed (byte tokenizer: one token per byte); a short one keeps a
        large batch's prefill short.
    overhead: fixed-cost floors measured before (e.g. `run.overhead`): a dtype whose floor
        already has every depth needed is not measured again.
    fixed_cost_points: also place the tiny fixed-cost models on the chart.
    threads: CPU threads for every timing (None: torch's current count); recorded.
    """
    dtypes, entries, batches = _wall_inputs(shapes, dtypes, batch_sizes, threads)
    dev = resolve_device(device)
    with using_threads(threads) as n_threads:
        peaks = peaks or machine_peaks(dev, threads=n_threads)
        for dt in dtypes:
            peaks.flops(dt)  # a dtype without a measured peak fails before any timing
        depths = _wall_depths(entries, overhead_depths)
        bar = _wall_bar(dtypes, entries, progress)
        floors, points = _wall_floors(
            dtypes, depths, overhead, max_new_tokens, repeats, dev, fixed_cost_points, bar
        )
        environment = _wall_points(
            entries, dtypes, batches, floors, max_new_tokens, repeats, prompt, dev, bar, points
        )
        bar.close()
    # the last model's environment, with the threads every timing ran with
    environment = replace(environment, threads=n_threads, source=WALL_SOURCE)
    return WallRun(
        label=label,
        computed=False,
        read_bytes_per_s=peaks.bytes_per_s,
        flops_per_s=dict(peaks.flops_per_s),
        peaks_how=peaks.how(),
        overhead=[floors[dt] for dt in dtypes],
        points=points,
        peaks=peaks,
        environment=environment,
        recorded={
            "max_new_tokens": max_new_tokens,
            "repeats": repeats,
            "threads": n_threads,
            "shapes": [e["name"] for e in entries],
            "dtypes": dtypes,
            "batch_sizes": batches,
        },
    )


def _wall_inputs(
    shapes: Sequence[Union[str, dict]],
    dtypes: Sequence[str],
    batch_sizes: Sequence[int],
    threads: Optional[int],
) -> tuple[list[str], list[dict], list[int]]:
    """`measure_wall`'s argument checks: (dtypes, each shape's config entry, batch sizes)."""
    checks.threads(threads)
    shapes, dtypes = list(shapes), list(dtypes)
    if not shapes or not dtypes:
        raise ValueError(
            "measure_wall needs at least one shape and one dtype, e.g. "
            "measure_wall(['smollm2-135m'], dtypes=['float32'])"
        )
    entries = [read_config(s) for s in shapes]  # a bad name fails here, before any timing
    batches = checks.whole_list("batch_sizes", batch_sizes, what="whole numbers >= 1")
    return dtypes, entries, batches


def _wall_depths(entries: list[dict], overhead_depths: Sequence[int]) -> list[int]:
    """The depths to measure the fixed cost at: each shape's own, and `overhead_depths`."""
    return sorted(
        {e["config"]["num_hidden_layers"] for e in entries}
        | set(checks.whole_list("depths", overhead_depths) if overhead_depths else [])
    )


def _wall_bar(dtypes: list[str], entries: list[dict], progress: bool):
    """`measure_wall`'s progress bar: one tick per dtype's floor and per model timed."""
    from tqdm import tqdm

    return tqdm(
        total=len(dtypes) * (1 + len(entries)),
        desc="memory wall",
        unit="model",
        disable=not progress,
        leave=False,
    )


def _wall_floors(
    dtypes: list[str],
    depths: list[int],
    overhead: Sequence[OverheadFloor],
    max_new_tokens: int,
    repeats: int,
    dev,
    fixed_cost_points: bool,
    bar,
) -> tuple[dict[str, OverheadFloor], list[WallPoint]]:
    """Each dtype's fixed-cost floor at `depths`, reused from `overhead` where it has them all,
    else measured: (floors by dtype, the tiny models' points where `fixed_cost_points`)."""
    floors, points = {}, []
    known = {o.dtype: o for o in overhead}
    for dt in dtypes:
        if dt in known and set(depths) <= set(known[dt].layers):
            floors[dt] = known[dt]
        else:
            floors[dt], tiny = measure_overhead(
                depths, dt, max_new_tokens=max_new_tokens, repeats=repeats, device=dev
            )
            if fixed_cost_points:
                points += tiny
        bar.update()
    return floors, points


def _wall_points(
    entries: list[dict],
    dtypes: list[str],
    batches: list[int],
    floors: dict[str, OverheadFloor],
    max_new_tokens: int,
    repeats: int,
    prompt: str,
    dev,
    bar,
    points: list[WallPoint],
) -> Environment:
    """Each shape in each dtype built, timed at each batch size (appended to `points`, with its
    fixed-cost floor) and freed before the next; returns the last model's environment."""
    for entry in entries:
        for dt in dtypes:
            lm = from_config(entry, device=dev, dtype=dt)
            for b in batches:
                p = measure_point(
                    lm, max_new_tokens=max_new_tokens, repeats=repeats, batch=b, prompt=prompt
                )
                points.append(replace(p, fixed_cost_s=floors[dt].at(p.n_layers)))
            environment, weight_bytes = lm.environment(), lm.spec.weight_bytes
            del lm
            release_memory(weight_bytes)
            bar.update()
    return environment


def roofline_seconds(
    flops: float, step_bytes: float, flops_per_s: float, bytes_per_s: float
) -> float:
    """The roofline's time for a pass: FLOPs ÷ min(P, I·W) = max(FLOPs ÷ P, bytes ÷ W),
    with I = FLOPs ÷ bytes (the formula of `viz.perf.roofline`)."""
    intensity = flops / step_bytes
    return flops / min(flops_per_s, intensity * bytes_per_s)


def computed_wall(
    shapes: Sequence[Union[str, dict]],
    *,
    device_name: str,
    bytes_per_s: float,
    flops_per_s: dict[str, float],
    dtype: str = "bfloat16",
    fixed_cost_per_layer_s: float = 0.0,
    fixed_cost_note: str = "",
    context_tokens: int = 32,
    source: str = "",
    label: str = "computed",
) -> WallRun:
    """The memory wall of a device from its published numbers: computed, not measured.

    Each point's time = fixed cost + the roofline's time (`roofline_seconds`) from the counted
    FLOPs and bytes of one decode step with `context_tokens` in the sequence. The fixed cost is
    `fixed_cost_per_layer_s` × layers: an assumption you state in `fixed_cost_note` (0: a
    step with no overhead at all, what CUDA graphs aim at).
        gpu = computed_wall(shapes, **perf.H100_SXM, fixed_cost_per_layer_s=...)
    """
    checks.positive("bytes_per_s", bytes_per_s, noun="")
    if dtype not in flops_per_s or not flops_per_s[dtype] > 0:
        raise ValueError(f"flops_per_s needs a peak > 0 for {dtype!r}, got {flops_per_s!r}")
    check_seconds("fixed_cost_per_layer_s", fixed_cost_per_layer_s, positive=False)
    points, depths = [], set()
    for shape in shapes:
        spec: ModelSpec = config_spec(shape, dtype=dtype)
        cost = decode_cost(spec, context_tokens)
        fixed = fixed_cost_per_layer_s * spec.n_layers
        t = fixed + roofline_seconds(cost.flops, cost.bytes, flops_per_s[dtype], bytes_per_s)
        depths.add(spec.n_layers)
        points.append(
            WallPoint(
                label=f"{spec.name} {short_dtype(dtype)}",
                model=spec.name,
                dtype=dtype,
                kind="shape",
                n_params=spec.n_params,
                n_layers=spec.n_layers,
                hidden_size=spec.hidden_size,
                context_tokens=context_tokens,
                step_bytes=int(cost.bytes),
                step_flops=int(cost.flops),
                seconds=t,
                seconds_min=t,
                seconds_max=t,
                steps_timed=0,
                fixed_cost_s=fixed,
            )
        )
    layers = sorted(depths)
    floor = OverheadFloor(
        dtype=dtype,
        hidden_size=0,
        vocab_size=0,
        layers=layers,
        seconds=[fixed_cost_per_layer_s * n for n in layers],
        assumed=True,
        note=fixed_cost_note or f"assumed {fixed_cost_per_layer_s * 1e3:g} ms per layer",
    )
    how = source or "published numbers"
    env = unknown_environment(
        device="gpu",
        device_name=device_name,
        dtype=dtype,
        measured_at=utc_now(),
        source=f"computed from {how}",
    )
    return WallRun(
        label=label,
        computed=True,
        environment=env,
        read_bytes_per_s=float(bytes_per_s),
        flops_per_s=dict(flops_per_s),
        peaks_how=f"computed from {how}",
        overhead=[floor],
        points=points,
        notes=[f"fixed cost: {floor.note}"],
    )


def bytes_whatif(run: WallRun, bytes_per_weight: float) -> list[dict[str, Any]]:
    """Each model shape's step time predicted at `bytes_per_weight` bytes per weight.

    predicted = its fixed cost (measured at its depth) + the rest of its measured step, scaled
    by the bytes (new bytes per weight ÷ the point's): "if only the bytes change", each
    model's own step, so the point it was measured at is reproduced exactly. A prediction, not
    a measurement: fewer bytes only pay with a kernel that reads them as fast (lesson 08). One
    row per model (its float32 point when measured).
    """
    checks.number("bytes_per_weight", bytes_per_weight, 0, 8, open_low=True)
    chosen: dict[str, WallPoint] = {}
    for p in run.points:
        if p.kind != "shape" or p.batch != 1:
            continue
        if p.model not in chosen or p.dtype == "float32":
            chosen[p.model] = p
    if not chosen:
        raise ValueError("this run has no model shape measured at batch 1 to predict from")
    rows = []
    for p in sorted(chosen.values(), key=lambda q: q.n_params):
        scale = bytes_per_weight / {"float32": 4, "bfloat16": 2, "float16": 2}.get(p.dtype, 4)
        read_s = max(0.0, p.seconds - p.fixed_cost_s) * scale
        rows.append(
            {
                "model": p.model,
                "n_params": p.n_params,
                "n_layers": p.n_layers,
                "fixed_s": p.fixed_cost_s,
                "read_s": read_s,
                "predicted_s": p.fixed_cost_s + read_s,
                "step_bytes": p.step_bytes * scale,
                "fixed_share": p.fixed_cost_s / (p.fixed_cost_s + read_s),
            }
        )
    return rows


def best_of(runs: Sequence[WallRun]) -> WallRun:
    """Several rounds of the same measurement, each point taken from its least-disturbed round.

    Other programs only ever make a step slower, never faster, so on a shared machine the
    round with the lowest median step is the one least disturbed (the same reasoning as
    "fastest of several repeats" for peaks). Each point is taken from the round where its
    median was lowest; each fixed-cost depth likewise; every point's fixed cost is then read
    again from those floors. `recorded["rounds"]` keeps every round's median of every point,
    so the spread between rounds stays visible. Used by `benchmarks/memory_wall.py`.
    """
    runs = list(runs)
    if not runs or any(not isinstance(r, WallRun) for r in runs):
        raise ValueError("best_of needs a non-empty list of WallRun rounds")
    first = runs[0]
    labels = [p.label for p in first.points]
    if any([p.label for p in r.points] != labels for r in runs):
        raise ValueError("every round must measure the same points in the same order")
    floors = []
    for o in first.overhead:
        same = [next(x for x in r.overhead if x.dtype == o.dtype) for r in runs]
        if any(x.layers != o.layers for x in same):
            raise ValueError("every round must measure the fixed cost at the same depths")
        floors.append(
            replace(o, seconds=[min(x.seconds[k] for x in same) for k in range(len(o.layers))])
        )
    by_dtype = {o.dtype: o for o in floors}
    points = []
    for k, label in enumerate(labels):
        best = min((r.points[k] for r in runs), key=lambda p: p.seconds)
        fixed = (
            best.seconds
            if best.kind == "fixed cost"
            else by_dtype[best.dtype].at(best.n_layers)
            if best.dtype in by_dtype
            else best.fixed_cost_s
        )
        points.append(replace(best, fixed_cost_s=fixed))
    rounds = {label: [r.points[k].seconds for r in runs] for k, label in enumerate(labels)}
    return replace(
        first,
        overhead=floors,
        points=points,
        recorded={
            **first.recorded,
            "rounds": rounds,
            "rounds_rule": "each point from the round with its lowest median "
            "step (viz.perf.wall.best_of)",
        },
    )
