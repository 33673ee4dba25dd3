"""This machine's ceilings, measured in seconds on any CPU, cached, and checked when reused.

Every floor, MBU, MFU and ridge point in the course divides by two measured ceilings: how
fast a matrix product computes (FLOP/s, per dtype) and how fast memory is read (bytes/s).
`machine_peaks()` measures them once per machine and saves them in the viz cache folder
(`measurements_dir()`: `$VIZ_MEASURE_DIR`, else `$VIZ_CACHE_DIR` or ~/.cache/llm-inference-viz),
so every lesson uses the same figures.

**Sized to the machine, in bounded time.** A fixed 2048×2048 product takes 0.1 s in float32
on any laptop, but 105 s in bfloat16 on a CPU without bfloat16 instructions (AVX2 only: torch
converts every number in software). So the product grows from 128×128, doubling, until one
run takes long enough to time (`MIN_RUN_S`) or the dtype's time budget (`BUDGET_S`) would be
exceeded by the next size; the peak is the best median FLOP/s among the sizes tried. A dtype
far slower than float32 is reported as a finding, with the reason the CPU's features give
(`MachinePeaks.findings`). The whole measurement takes a few seconds on any CPU.

**Medians, with their spread.** Each figure is the median of its runs, with the middle half of
them as its spread (`viz.spread.Spread`); see `viz.perf.bandwidth` for why not the fastest run.

**Keyed on what decides the result.** The cache file is named by a hash of the CPU model, its
instruction-set features and the ones torch uses (`viz.runtime.cpu_features`,
`cpu_capability`: `ATEN_CPU_CAPABILITY=avx2` makes an AVX-512 machine measure as an AVX2 one),
the thread count, the CPU count and the torch version: change any and the peaks are measured
again. Two CPUs sold under one name ("AMD EPYC") with different features do not share a file.

**Checked when reused.** The first time a process reads the cached peaks, a quick fresh read
(`CHECK_REPEATS` runs over the same buffer, ~0.2 s) is compared with the cached read
bandwidth. If its median is more than `CHECK_TOLERANCE` away from the cached figure *and*
outside the cached runs' spread, the machine is not in the state that was measured (another
program is using it, or it changed): everything is measured again and saved, and
`MachinePeaks.status` says so. The tolerance is wider than the figure's own wander: on the
project's shared 2-core machine, eight medians of the same read a second apart ran from 40 to
51 GB/s on a quiet machine (and 31–35 GB/s with a test suite running beside it). Later calls in the same process return the same object, so a
lesson's cells all see one set of peaks. Lesson 08; every lesson from 02 on uses them.

`VIZ_CHECK_PEAKS=0` turns the check off where `check` is not given: `make notebooks` sets it,
because the saved course shows the one set of peaks its run measured (a 2-core AMD EPYC VM's
read wandered from 39.6 to a fresh 31.8 GB/s between two lessons of one run, and lesson 06
measured again, so the saved lessons disagreed).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Optional, Sequence, Union

import torch

from viz import checks
from viz.documents import Document
from viz.perf.bandwidth import (Bandwidth, bandwidth_v1_to_v2, default_buffer_bytes,
                                measure_bandwidth)
from viz.runtime import (cpu_capability, cpu_features, device_name, dtype_name, resolve_device,
                         resolve_dtype, time_runs, using_threads)
from viz.spread import Spread

# The matmul grows until one run takes at least this long (long enough to time well) ...
MIN_RUN_S = 0.05
# ... or until the next size would not fit in what is left of this budget, per dtype.
BUDGET_S = 2.0
# A size sets the peak only if its median run takes at least this long (finer is timer noise),
# unless no size gets there.
MIN_PEAK_RUN_S = 1e-3
# Sizes: from START_N, doubling, up to the largest for the device.
START_N = 128
MAX_N = {"cpu": 2048, "cuda": 16384, "mps": 4096}
# A dtype whose matmul peak is below this share of float32's is reported as slow.
SLOW_SHARE = 0.5
# The check on reuse (see the module docstring).
CHECK_REPEATS = 5
CHECK_TOLERANCE = 0.20
CHECK_ENV = "VIZ_CHECK_PEAKS"  # "0": reuse cached peaks unchecked (module docstring)
# Features that give a CPU fast bfloat16 arithmetic (x86: AVX-512 BF16, AMX; Arm: BF16).
BF16_FEATURES = ("avx512_bf16", "amx_bf16", "bf16")


# ---- what decides the result -----------------------------------------------------------------
def machine_key(device: Union[str, torch.device] = "cpu",
                threads: Optional[int] = None) -> dict[str, Any]:
    """What a measurement on `device` with `threads` depends on: a cached figure is reused
    only where every item is the same."""
    dev = resolve_device(device)
    cpu = dev.type == "cpu"  # a GPU's speed does not depend on its host's instructions
    return {"device": dev.type, "device_name": device_name(dev),
            "cpu_count": os.cpu_count() or 0,
            "threads": checks.threads(threads) or torch.get_num_threads(),
            "torch_version": torch.__version__, "cpu_features": cpu_features() if cpu else [],
            "cpu_capability": cpu_capability() if cpu else ""}


def measurements_dir() -> Path:
    """Where this machine's measured figures are cached: $VIZ_MEASURE_DIR, else the viz cache
    folder (`viz.default_model.cache_dir()`, beside the model). The test suite points it at an
    empty folder, so every run measures as a new learner's first lesson does."""
    from viz.default_model import cache_dir

    env = os.environ.get("VIZ_MEASURE_DIR")
    return Path(env).expanduser() if env else cache_dir()


def cache_file(folder: str, device: Union[str, torch.device] = "cpu",
               threads: Optional[int] = None) -> Path:
    """`<measurements_dir>/<folder>/<device>-<threads>-threads-<hash of machine_key>.json`."""
    key = machine_key(device, threads)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return measurements_dir() / folder / f"{key['device']}-{key['threads']}-threads-{digest}.json"


def _say(progress: bool, text: str) -> None:
    """One line to stderr, so a learner knows why a cell is busy (`progress=False`: silent)."""
    if progress:
        print(f"viz: {text}", file=sys.stderr, flush=True)


# ---- the matrix product, sized to the machine ------------------------------------------------
@dataclass
class Matmul:
    """Peak FLOP/s of an n×n by n×n product in one dtype, measured at growing sizes."""

    dtype: str
    n: int  # the size whose median FLOP/s was highest: the peak's
    flops_per_s: float  # 2·n³ ÷ the median run at that size: THE figure
    fastest_flops_per_s: float  # 2·n³ ÷ the fastest run there (for comparison)
    runs_s: list[float] = field(default_factory=list)  # every timed run at that size
    sizes: list[int] = field(default_factory=list)  # every size tried, smallest first
    sizes_flops_per_s: list[float] = field(default_factory=list)  # median FLOP/s at each
    stopped: str = ""  # why the sizes stopped growing

    @property
    def spread(self) -> Spread:
        """FLOP/s with its spread (the median run and the middle half of the runs)."""
        if not self.runs_s:
            return Spread.exact(self.flops_per_s)  # an older file: no runs were kept
        return Spread.of(2.0 * self.n ** 3 / t for t in self.runs_s)

    @property
    def how(self) -> str:
        tried = ", ".join(f"{n}: {f / 1e9:,.1f}" for n, f in zip(self.sizes,
                                                                   self.sizes_flops_per_s))
        return (f"{self.n}×{self.n} product, median of {len(self.runs_s) or 'its'} runs"
                + (f"; sizes tried (GFLOP/s) {tried}; {self.stopped}" if self.sizes else ""))


def measure_matmul(dtype: Union[str, torch.dtype] = "float32", device: Union[str, torch.device]
                   = "cpu", *, repeats: int = 5, budget_s: float = BUDGET_S,
                   min_run_s: float = MIN_RUN_S, max_n: Optional[int] = None,
                   start_n: int = START_N) -> Matmul:
    """Peak matmul FLOP/s in `dtype`: products of growing size, within `budget_s` seconds.

    Each size gets one untimed warm-up and `repeats` timed runs (fewer if the budget would not
    allow them); sizes double from `start_n` while the median run is shorter than `min_run_s`,
    the size is below `max_n` (default `MAX_N` for the device), and 8× the last size's time
    (the next size's work) fits in what is left. About 1–2 s per dtype on any CPU.
    """
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    checks.whole("repeats", repeats, 1)
    checks.positive("budget_s", budget_s, noun="a number of seconds")
    top = int(max_n or MAX_N.get(dev.type, 2048))
    if start_n < 16 or top < 16:
        raise ValueError(f"sizes must be at least 16: start_n {start_n}, max_n {top}")
    deadline = time.perf_counter() + budget_s
    sizes, medians, best, n, stopped = [], [], None, min(int(start_n), top), ""
    gen = torch.Generator(device=dev).manual_seed(0)
    while True:
        a = torch.randn(n, n, device=dev, dtype=dt, generator=gen)
        b = torch.randn(n, n, device=dev, dtype=dt, generator=gen)
        out = torch.empty(n, n, device=dev, dtype=dt)
        (first,), _ = time_runs(lambda: torch.mm(a, b, out=out), dev, 1)  # warm-up, timed
        left = deadline - time.perf_counter()
        k = max(1, min(repeats, int(left / first))) if left > 0 else 1
        runs, _ = time_runs(lambda: torch.mm(a, b, out=out), dev, k, warmup=0)
        del a, b, out
        flops = Spread.of(2.0 * n ** 3 / t for t in runs)
        sizes.append(n)
        medians.append(flops.median)
        run_s = sorted(runs)[len(runs) // 2]
        if best is None or (run_s >= MIN_PEAK_RUN_S and (best[3] < MIN_PEAK_RUN_S
                                                          or flops.median > best[1].median)):
            best = (n, flops, runs, run_s)
        if n * 2 > top:
            stopped = f"stopped at the largest size for a {dev.type} ({top})"
        elif run_s >= min_run_s:
            stopped = f"stopped once a run took {min_run_s * 1e3:g} ms or more"
        elif run_s * 8 * (repeats + 1) > deadline - time.perf_counter():
            stopped = f"stopped by the {budget_s:g} s time budget"
        if stopped:
            break
        n *= 2
    n_best, flops, runs, _ = best
    return Matmul(dtype=dtype_name(dt), n=n_best, flops_per_s=flops.median,
                  fastest_flops_per_s=2.0 * n_best ** 3 / min(runs), runs_s=list(runs),
                  sizes=sizes, sizes_flops_per_s=medians, stopped=stopped)


# ---- the peaks document -----------------------------------------------------------------------
def _peaks_v1_to_v2(data: dict) -> dict:
    """Schema 1 (before viz 0.2): the fastest run was the figure, one matmul size, no CPU
    features. The medians it kept become the figures; the fastest are kept beside them."""
    data = dict(data)
    n = data.pop("matmul_n")
    fastest = data.pop("flops_per_s")
    median = data.pop("flops_per_s_median", fastest)
    data["matmul"] = {dt: {"dtype": dt, "n": n, "flops_per_s": median.get(dt, f),
                           "fastest_flops_per_s": f} for dt, f in fastest.items()}
    for method in ("read", "copy"):
        data[method] = bandwidth_v1_to_v2(data[method])
    data["matvec"] = {data["matvec"].get("dtype", "float32"): bandwidth_v1_to_v2(data["matvec"])}
    data["by_size"] = [bandwidth_v1_to_v2(b) for b in data.get("by_size", [])]
    return data


@dataclass
class MachinePeaks(Document):
    """This machine's ceilings: matmul FLOP/s per dtype and memory bandwidths, with spreads."""

    KIND: ClassVar[str] = "llm-inference-machine-peaks"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: _peaks_v1_to_v2}
    WHAT: ClassVar[str] = "machine peaks file"
    AGAIN: ClassVar[str] = "measure them again with viz.perf.machine_peaks(refresh=True)"

    device: str  # "cpu", "cuda" or "mps"
    device_name: str  # e.g. the CPU model or "NVIDIA H200"
    cpu_count: int  # logical CPUs the operating system reports
    threads: int  # torch intra-op threads every figure was measured with
    matmul: dict[str, Matmul]  # dtype → the matrix product's peak
    read: Bandwidth  # the memory floor's bandwidth (see viz.perf.bandwidth)
    copy: Bandwidth  # read + write, for comparison
    matvec: dict[str, Bandwidth]  # dtype → the decode kernel's own reading speed
    measured_at: str  # when, UTC, ISO 8601
    torch_version: str
    load_average: list[float] = field(default_factory=list)  # 1/5/15-min load then (Unix)
    by_size: list[Bandwidth] = field(default_factory=list)  # optional: read at other sizes
    cpu_features: list[str] = field(default_factory=list)  # `viz.runtime.cpu_features`
    cpu_capability: str = ""  # `viz.runtime.cpu_capability`: what torch's kernels used
    seconds: float = 0.0  # how long measuring took

    # Where this object came from, and what the check on reuse found (not saved).
    loaded_from: ClassVar[str] = ""
    status: ClassVar[str] = ""

    # ---- the figures ---------------------------------------------------------------------
    @property
    def flops_per_s(self) -> dict[str, float]:
        """dtype → peak matmul FLOP/s (the median run at the best size)."""
        return {dt: m.flops_per_s for dt, m in self.matmul.items()}

    @property
    def bytes_per_s(self) -> float:
        """The read bandwidth (median run): what every memory floor divides by."""
        return self.read.bytes_per_s

    def flops(self, dtype: str) -> float:
        """Peak matmul FLOP/s in `dtype` ("float32", "bfloat16")."""
        if dtype not in self.matmul:
            raise ValueError(f"no matmul peak measured in {dtype!r}: these peaks have "
                             f"{sorted(self.matmul)}")
        return self.matmul[dtype].flops_per_s

    def flops_spread(self, dtype: str) -> Spread:
        self.flops(dtype)
        return self.matmul[dtype].spread

    def ridge_intensity(self, dtype: str = "float32") -> float:
        """FLOPs per byte where the two ceilings meet: peak FLOP/s ÷ read bandwidth."""
        return self.flops(dtype) / self.bytes_per_s

    # ---- what they say about this CPU ---------------------------------------------------------
    def speed_ratio(self, dtype: str, base: str = "float32") -> float:
        """How many times `base`'s matmul FLOP/s `dtype` reaches (bfloat16 ÷ float32, say)."""
        return self.flops(dtype) / self.flops(base)

    def fast(self, dtype: str) -> bool:
        """True if `dtype`'s matmul reaches at least `SLOW_SHARE` of float32's."""
        return dtype == "float32" or self.speed_ratio(dtype) >= SLOW_SHARE

    def finding(self, dtype: str) -> str:
        """`dtype`'s matmul peak against float32's, in words, with the reason the CPU's
        features give (e.g. "bfloat16 matmul 1.3 GFLOP/s, 1/52 of float32's 68.0: this CPU has
        no bfloat16 instructions ...")."""
        ratio = self.speed_ratio(dtype)
        head = (f"{dtype} matmul {self.flops(dtype) / 1e9:,.1f} GFLOP/s, "
                + (f"1/{1 / ratio:.0f} of float32's" if ratio < 1 else
                   f"{ratio:.1f}× float32's") + f" {self.flops('float32') / 1e9:,.1f}")
        return f"{head}: {self._why(dtype, ratio)}"

    def findings(self) -> list[str]:
        """`finding` for every dtype measured besides float32."""
        if "float32" not in self.matmul:
            return []
        return [self.finding(dt) for dt in self.matmul if dt != "float32"]

    def _why(self, dtype: str, ratio: float) -> str:
        has = [f for f in BF16_FEATURES if f in self.cpu_features]
        override = "(" in self.cpu_capability  # an ATEN_CPU_CAPABILITY/ONEDNN_MAX_CPU_ISA cap
        if dtype != "bfloat16":
            return "fast" if ratio >= SLOW_SHARE else "this CPU has no fast kernel for it"
        if ratio >= SLOW_SHARE:
            return (f"this CPU has bfloat16 instructions ({', '.join(has)})" if has else
                    "this device has a fast bfloat16 kernel")
        if has and override:
            return (f"this CPU has bfloat16 instructions ({', '.join(has)}), but torch was told "
                    f"to use fewer: {self.cpu_capability}")
        if has:
            return (f"this CPU lists bfloat16 instructions ({', '.join(has)}), yet torch's "
                    "kernel for this size is slow here")
        if self.device == "cpu" and self.cpu_features:
            return ("this CPU has no bfloat16 instructions (no AVX-512 BF16 or AMX), so each "
                    "number is converted in software")
        return "this device has no fast bfloat16 kernel"

    # ---- in words --------------------------------------------------------------------------------
    def how(self) -> str:
        """How, when and with what every figure was measured (print it beside the figures)."""
        features = " ".join(self.cpu_features) or "not listed"
        lines = [f"{self.device_name} ({self.device}, {self.cpu_count} logical CPUs), "
                 f"{self.threads} torch thread{'s' if self.threads != 1 else ''}, torch "
                 f"{self.torch_version}, measured {self.measured_at}"
                 + (f" in {self.seconds:.1f} s" if self.seconds else "")
                 + (f", load average {self.load_average[0]:.2f}" if self.load_average else ""),
                 f"  CPU features: {features}; torch's kernels use {self.cpu_capability or '?'}"]
        for dt, m in self.matmul.items():
            lines.append(f"  matmul {dt}: {m.spread.text(1e-9, 'GFLOP/s')}: {m.how}")
        for b in [self.read, self.copy, *self.matvec.values()]:
            lines.append(f"  {b.method:<6} {b.spread.text(1e-9, 'GB/s')}: {b.how}")
        lines += [f"  finding: {f}" for f in self.findings()]
        if self.status:
            lines.append(f"  {self.status}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.how()


# ---- measuring, caching, checking ---------------------------------------------------------------
def measure_machine_peaks(device: Union[str, torch.device] = "cpu", *,
                          buffer_bytes: Optional[int] = None, repeats: int = 7,
                          threads: Optional[int] = None,
                          dtypes: Sequence[str] = ("float32", "bfloat16"),
                          sizes: Sequence[int] = (), budget_s: float = BUDGET_S,
                          max_n: Optional[int] = None) -> MachinePeaks:
    """Measure (never from the cache) the matmul peaks in `dtypes` and the bandwidths: a read
    and a copy in float32, and the matrix-vector kernel in every dtype of `dtypes`.

    budget_s: seconds per dtype for the matmul (see `measure_matmul`); max_n caps its size.
    sizes: also measure the read bandwidth at these buffer sizes (`MachinePeaks.by_size`).
    """
    dev = resolve_device(device)
    nbytes = buffer_bytes if buffer_bytes is not None else default_buffer_bytes(dev)
    start = time.perf_counter()
    with using_threads(threads) as n_threads:
        matmul = {}
        for name in dtypes:
            m = measure_matmul(name, dev, repeats=min(repeats, 5), budget_s=budget_s,
                               max_n=max_n)
            matmul[m.dtype] = m
        read = measure_bandwidth(nbytes, "read", device=dev, repeats=repeats)
        # half-size buffers for the copy (it holds two): the same bytes in memory at once as
        # the read, so a lesson's kernel stays inside a 2 GB Binder session
        copy = measure_bandwidth(max(nbytes // 2, 1 << 20), "copy", device=dev, repeats=repeats)
        # the matrix-vector kernel in each dtype (fewer runs outside float32: a dtype with no
        # fast kernel reads slowly)
        matvec = {dt: measure_bandwidth(nbytes, "matvec", device=dev, dtype=dt,
                                        repeats=repeats if dt == "float32" else min(repeats, 3))
                  for dt in matmul}
        by_size = [measure_bandwidth(s, "read", device=dev, repeats=repeats) for s in sizes]
    return MachinePeaks(
        device=dev.type, device_name=device_name(dev), cpu_count=os.cpu_count() or 0,
        threads=n_threads, matmul=matmul, read=read, copy=copy, matvec=matvec,
        measured_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        torch_version=torch.__version__, load_average=_load_average(), by_size=by_size,
        cpu_features=cpu_features() if dev.type == "cpu" else [],
        cpu_capability=cpu_capability() if dev.type == "cpu" else "",
        seconds=round(time.perf_counter() - start, 2))


def peaks_path(device: Union[str, torch.device] = "cpu", threads: Optional[int] = None) -> Path:
    """The cache file for `device` measured with `threads` (None: torch's current count),
    named by what decides the result (`machine_key`)."""
    return cache_file("peaks", device, threads)


# path → the peaks this process already read (and checked) or measured: one set per process.
_IN_PROCESS: dict[str, MachinePeaks] = {}


def machine_peaks(device: Union[str, torch.device] = "cpu", *, threads: Optional[int] = None,
                  refresh: bool = False, path: Union[None, str, os.PathLike] = None,
                  buffer_bytes: Optional[int] = None, repeats: int = 7,
                  check: Optional[bool] = None, progress: bool = True,
                  budget_s: float = BUDGET_S) -> MachinePeaks:
    """This machine's peaks: measured the first time (a few seconds, saved), then reused.

    refresh: measure again even if a cached file exists (and overwrite it).
    path: the cache file (default `peaks_path(device, threads)`, in the viz cache folder).
    check: the first time a process reuses the file, compare a quick fresh read with it and
        measure everything again if they disagree (see the module docstring). Default: yes,
        unless the environment has VIZ_CHECK_PEAKS=0 (`make notebooks`).
    progress: say on stderr when measuring (the first lesson to ask waits a few seconds).
    buffer_bytes, repeats, budget_s: the measurement's sizes (see `measure_machine_peaks`).
    `MachinePeaks.status` says which of these happened. Lesson 08.
    """
    checks.threads(threads)
    if check is None:
        check = os.environ.get(CHECK_ENV, "1").strip() != "0"
    dev = resolve_device(device)
    file = Path(path) if path is not None else peaks_path(dev, threads)
    with using_threads(threads) as n_threads:
        if not refresh:
            if str(file) in _IN_PROCESS:
                return _IN_PROCESS[str(file)]
            cached = _read_cached(file, dev, n_threads)
            if cached is not None:
                if not check:
                    cached.status = (f"from the viz cache ({file.parent.name}/{file.name}), "
                                     "not checked")
                    _IN_PROCESS[str(file)] = cached
                    return cached
                fresh = measure_bandwidth(cached.read.buffer_bytes, "read", device=dev,
                                          repeats=CHECK_REPEATS)
                verdict = _check(cached, fresh)
                if verdict is None:
                    cached.status = (f"checked now: a fresh read gave "
                                     f"{fresh.bytes_per_s / 1e9:.1f} GB/s, in line with the "
                                     f"cached {cached.bytes_per_s / 1e9:.1f} GB/s")
                    _IN_PROCESS[str(file)] = cached
                    return cached
                _say(progress, f"{verdict}: measuring this machine's peaks again "
                               "(a few seconds)")
                reason = f"measured again now, because {verdict}"
            else:
                _say(progress, "measuring this machine's peaks once: matrix products and "
                               "memory reads (a few seconds; later lessons reuse them)")
                reason = "measured now (the first time on this machine)"
        else:
            _say(progress, "measuring this machine's peaks again (refresh=True)")
            reason = "measured now (refresh=True)"
        peaks = measure_machine_peaks(dev, buffer_bytes=buffer_bytes, repeats=repeats,
                                      budget_s=budget_s)
    peaks.save(file)
    for dt in peaks.matmul:
        if "float32" in peaks.matmul and not peaks.fast(dt):  # the learner should hear of it
            _say(progress, f"note: {peaks.finding(dt)}")
    peaks.loaded_from = ""
    peaks.status = f"{reason}; saved in the viz cache ({file.parent.name}/{file.name})"
    _IN_PROCESS[str(file)] = peaks
    return peaks


def _read_cached(file: Path, dev: torch.device, threads: int) -> Optional[MachinePeaks]:
    """The cached peaks in `file` if they were measured on this machine as it is now."""
    if not file.is_file():
        return None
    try:
        cached = MachinePeaks.load(file)
    except ValueError:
        return None  # unreadable or from another version: measure again
    if not same_machine(cached, dev, threads):
        return None
    cached.loaded_from = str(file)
    return cached


def same_machine(document: Any, device: Union[str, torch.device] = "cpu",
                 threads: Optional[int] = None) -> bool:
    """True if `document` (with the fields of `machine_key`) was measured on this machine as it
    is now: same CPU and features, threads, CPU count and torch."""
    key = machine_key(device, threads)
    return all(getattr(document, k, None) == v for k, v in key.items())


def _check(cached: MachinePeaks, fresh: Bandwidth) -> Optional[str]:
    """None if a fresh read agrees with the cached one, else why it does not."""
    then, now = cached.read.spread, fresh.bytes_per_s
    off = now / then.median - 1
    if abs(off) <= CHECK_TOLERANCE or then.contains(now):
        return None
    return (f"a fresh read gave {now / 1e9:.1f} GB/s, {abs(off):.0%} "
            f"{'above' if off > 0 else 'below'} the cached {then.median / 1e9:.1f} GB/s "
            f"(measured {cached.measured_at})")


def forget_in_process() -> None:
    """Forget the peaks this process has read or measured (tests; a learner never needs it)."""
    _IN_PROCESS.clear()


def _load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # not on this platform
        return []
