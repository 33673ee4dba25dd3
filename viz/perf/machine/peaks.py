"""This machine's ceilings, measured in seconds on any CPU, cached, and checked when reused.

Every floor, MBU, MFU and ridge point in the course divides by two measured ceilings: how
fast a matrix product computes (FLOP/s, per dtype: `viz.perf.machine.matmul`, sized to the
machine) and how fast memory is read (bytes/s: `viz.perf.machine.bandwidth`).
`machine_peaks()` measures them once per machine and saves them in the viz cache folder
(`measurements_dir()`: `$VIZ_MEASURE_DIR`, else `$VIZ_CACHE_DIR` or ~/.cache/llm-inference-viz),
in a file named by what decides the result (`viz.perf.machine.cache`), so every lesson uses
the same figures. A dtype far slower than float32 is reported as a finding, with the reason
the CPU's features give (`MachinePeaks.findings`). The whole measurement takes a few seconds
on any CPU.

**Medians, with their spread.** Each figure is the median of its runs, with the middle half of
them as its spread (`viz.spread.Spread`); see `viz.perf.machine.bandwidth` for why not the
fastest run.

**Checked when reused.** The first time a process reads the cached peaks, a quick fresh read
(`CHECK_REPEATS` runs over the same buffer, ~0.2 s) is compared with the cached read
bandwidth. If its median is more than `CHECK_TOLERANCE` away from the cached figure *and*
outside the cached runs' spread, the machine is not in the state that was measured (another
program is using it, or it changed): everything is measured again and saved, and
`MachinePeaks.status` says so. The tolerance is wider than the figure's own wander: on the
project's shared 2-core machine, eight medians of the same read a second apart ran from 40 to
51 GB/s on a quiet machine (and 31–35 GB/s with a test suite running beside it). Later calls
in the same process return the same object, so a lesson's cells all see one set of peaks.
Lesson 08; every lesson from 02 on uses them.

`VIZ_CHECK_PEAKS=0` turns the check off where `check` is not given: `make notebooks` sets it,
because the saved course shows the one set of peaks its run measured (a 2-core AMD EPYC VM's
read wandered from 39.6 to a fresh 31.8 GB/s between two lessons of one run, and lesson 06
measured again, so the saved lessons disagreed).

**The roofline's two ceilings.** `Peaks` is the form the roofline (lesson 06) and the floors
(lessons 03, 04, 07) take them in: one dtype's matmul peak and the *read* bandwidth (decode
reads its weights, so the read, not a copy, is the memory roof everywhere in viz).
`cached_peaks` takes them from `machine_peaks` (measured once, checked on reuse), so every
lesson uses the same ceilings; `measure_peaks` measures afresh (the CLI's `viz roofline`). On
CUDA each run is timed with CUDA events (the device's own clock), elsewhere with
`viz.runtime.Clock` (perf_counter after a device synchronize).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Optional, Sequence, Union

import torch

from viz import checks
from viz.documents import Document
from viz.perf.machine.bandwidth import (
    Bandwidth,
    bandwidth_v1_to_v2,
    default_buffer_bytes,
    measure_bandwidth,
)
from viz.perf.machine.cache import MachineCache
from viz.perf.machine.matmul import BUDGET_S, Matmul, measure_matmul
from viz.provenance import environment_from_loose, loose_names, shown_utc, unknown_environment
from viz.runtime import (
    cpu_capability,
    cpu_features,
    dtype_name,
    environment,
    resolve_device,
    resolve_dtype,
    using_threads,
)
from viz.spread import Spread
from viz.trace import Environment

# A dtype whose matmul peak is below this share of float32's is reported as slow.
SLOW_SHARE = 0.5
# The check on reuse (see the module docstring).
CHECK_REPEATS = 5
CHECK_TOLERANCE = 0.20
CHECK_ENV = "VIZ_CHECK_PEAKS"  # "0": reuse cached peaks unchecked (module docstring)
# Features that give a CPU fast bfloat16 arithmetic (x86: AVX-512 BF16, AMX; Arm: BF16).
BF16_FEATURES = ("avx512_bf16", "amx_bf16", "bf16")


def _say(progress: bool, text: str) -> None:
    """One line to stderr, so a learner knows why a cell is busy (`progress=False`: silent)."""
    if progress:
        print(f"viz: {text}", file=sys.stderr, flush=True)


# ---- the peaks document -----------------------------------------------------------------------
def _peaks_v1_to_v2(data: dict) -> dict:
    """Schema 1 (before viz 0.2): the fastest run was the figure, one matmul size, no CPU
    features. The medians it kept become the figures; the fastest are kept beside them."""
    data = dict(data)
    n = data.pop("matmul_n")
    fastest = data.pop("flops_per_s")
    median = data.pop("flops_per_s_median", fastest)
    data["matmul"] = {
        dt: {"dtype": dt, "n": n, "flops_per_s": median.get(dt, f), "fastest_flops_per_s": f}
        for dt, f in fastest.items()
    }
    for method in ("read", "copy"):
        data[method] = bandwidth_v1_to_v2(data[method])
    data["matvec"] = {data["matvec"].get("dtype", "float32"): bandwidth_v1_to_v2(data["matvec"])}
    data["by_size"] = [bandwidth_v1_to_v2(b) for b in data.get("by_size", [])]
    return data


# The provenance fields a MachinePeaks kept loose before schema 3: now its `environment`'s.
PEAKS_LOOSE = (
    "device",
    "device_name",
    "threads",
    "torch_version",
    "cpu_features",
    "cpu_capability",
    "measured_at",
)
PEAKS_SOURCE = "measured by viz.perf.machine_peaks"


def _peaks_v2_to_v3(data: dict) -> dict:
    """Schema 2: device, threads, torch, CPU features and the time ("2026-12-05 12:12 UTC")
    were loose fields; they move into `environment` (the time in ISO, `viz.provenance`)."""
    return environment_from_loose(data, PEAKS_LOOSE, PEAKS_SOURCE)


@loose_names(*PEAKS_LOOSE)
@dataclass
class MachinePeaks(Document):
    """This machine's ceilings: matmul FLOP/s per dtype and memory bandwidths, with spreads.

    Where, when and with what they were measured is `environment` (`viz.provenance`); its
    fields read as before too: `peaks.device_name`, `peaks.threads`, `peaks.measured_at`."""

    KIND: ClassVar[str] = "llm-inference-machine-peaks"
    SCHEMA_VERSION: ClassVar[int] = 3
    UPGRADES: ClassVar[dict] = {1: _peaks_v1_to_v2, 2: _peaks_v2_to_v3}
    WHAT: ClassVar[str] = "machine peaks file"
    AGAIN: ClassVar[str] = "measure them again with viz.perf.machine_peaks(refresh=True)"

    cpu_count: int  # logical CPUs the operating system reports
    matmul: dict[str, Matmul]  # dtype → the matrix product's peak
    read: Bandwidth  # the memory floor's bandwidth (see viz.perf.machine.bandwidth)
    copy: Bandwidth  # read + write, for comparison
    matvec: dict[str, Bandwidth]  # dtype → the decode kernel's own reading speed
    load_average: list[float] = field(default_factory=list)  # 1/5/15-min load then (Unix)
    by_size: list[Bandwidth] = field(default_factory=list)  # optional: read at other sizes
    seconds: float = 0.0  # how long measuring took
    # The device ("cpu", "cuda" or "mps") and its name, the torch threads every figure was
    # measured with, torch, the CPU's features (`viz.runtime.cpu_features`) and what torch's
    # kernels used (`viz.runtime.cpu_capability`), when (ISO UTC) and by what.
    environment: Environment = field(default_factory=unknown_environment)

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
            raise ValueError(
                f"no matmul peak measured in {dtype!r}: these peaks have {sorted(self.matmul)}"
            )
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
        head = (
            f"{dtype} matmul {self.flops(dtype) / 1e9:,.1f} GFLOP/s, "
            + (f"1/{1 / ratio:.0f} of float32's" if ratio < 1 else f"{ratio:.1f}× float32's")
            + f" {self.flops('float32') / 1e9:,.1f}"
        )
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
            return (
                f"this CPU has bfloat16 instructions ({', '.join(has)})"
                if has
                else "this device has a fast bfloat16 kernel"
            )
        if has and override:
            return (
                f"this CPU has bfloat16 instructions ({', '.join(has)}), but torch was told "
                f"to use fewer: {self.cpu_capability}"
            )
        if has:
            return (
                f"this CPU lists bfloat16 instructions ({', '.join(has)}), yet torch's "
                "kernel for this size is slow here"
            )
        if self.device == "cpu" and self.cpu_features:
            return (
                "this CPU has no bfloat16 instructions (no AVX-512 BF16 or AMX), so each "
                "number is converted in software"
            )
        return "this device has no fast bfloat16 kernel"

    # ---- in words --------------------------------------------------------------------------------
    def how(self) -> str:
        """How, when and with what every figure was measured (print it beside the figures)."""
        features = " ".join(self.cpu_features) or "not listed"
        lines = [
            f"{self.device_name} ({self.device}, {self.cpu_count} logical CPUs), "
            f"{self.threads} torch thread{'s' if self.threads != 1 else ''}, torch "
            f"{self.torch_version}, measured {shown_utc(self.measured_at)}"
            + (f" in {self.seconds:.1f} s" if self.seconds else "")
            + (f", load average {self.load_average[0]:.2f}" if self.load_average else ""),
            f"  CPU features: {features}; torch's kernels use {self.cpu_capability or '?'}",
        ]
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
def measure_machine_peaks(
    device: Union[str, torch.device] = "cpu",
    *,
    buffer_bytes: Optional[int] = None,
    repeats: int = 7,
    threads: Optional[int] = None,
    dtypes: Sequence[str] = ("float32", "bfloat16"),
    sizes: Sequence[int] = (),
    budget_s: float = BUDGET_S,
    max_n: Optional[int] = None,
) -> MachinePeaks:
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
            m = measure_matmul(name, dev, repeats=min(repeats, 5), budget_s=budget_s, max_n=max_n)
            matmul[m.dtype] = m
        read = measure_bandwidth(nbytes, "read", device=dev, repeats=repeats)
        # half-size buffers for the copy (it holds two): the same bytes in memory at once as
        # the read, so a lesson's kernel stays inside a 2 GB Binder session
        copy = measure_bandwidth(max(nbytes // 2, 1 << 20), "copy", device=dev, repeats=repeats)
        # the matrix-vector kernel in each dtype (fewer runs outside float32: a dtype with no
        # fast kernel reads slowly)
        matvec = {
            dt: measure_bandwidth(
                nbytes,
                "matvec",
                device=dev,
                dtype=dt,
                repeats=repeats if dt == "float32" else min(repeats, 3),
            )
            for dt in matmul
        }
        by_size = [measure_bandwidth(s, "read", device=dev, repeats=repeats) for s in sizes]
    # dtype "": the figures are in several (see `matmul`). A GPU's speed does not depend on its
    # host's instructions, so a GPU's peaks list none (as `viz.perf.machine.machine_key`).
    env = dataclasses.replace(
        environment(dev, "", source=PEAKS_SOURCE),
        threads=n_threads,
        cpu_features=cpu_features() if dev.type == "cpu" else [],
        cpu_capability=cpu_capability() if dev.type == "cpu" else "",
    )
    return MachinePeaks(
        cpu_count=os.cpu_count() or 0,
        matmul=matmul,
        read=read,
        copy=copy,
        matvec=matvec,
        load_average=_load_average(),
        by_size=by_size,
        seconds=round(time.perf_counter() - start, 2),
        environment=env,
    )


# The peaks' file in `measurements_dir()/peaks`, and the peaks this process already read (and
# checked) or measured there: one set per process.
_CACHE = MachineCache("peaks", MachinePeaks)


def peaks_path(device: Union[str, torch.device] = "cpu", threads: Optional[int] = None) -> Path:
    """The cache file for `device` measured with `threads` (None: torch's current count),
    named by what decides the result (`machine_key`)."""
    return _CACHE.path(device, threads)


def machine_peaks(
    device: Union[str, torch.device] = "cpu",
    *,
    threads: Optional[int] = None,
    refresh: bool = False,
    path: Union[None, str, os.PathLike] = None,
    buffer_bytes: Optional[int] = None,
    repeats: int = 7,
    check: Optional[bool] = None,
    progress: bool = True,
    budget_s: float = BUDGET_S,
) -> MachinePeaks:
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
            remembered = _CACHE.in_process(file)
            if remembered is not None:
                return remembered
            cached = _CACHE.read(file, dev, n_threads)
            if cached is not None:
                cached.loaded_from = str(file)
                if not check:
                    cached.status = (
                        f"from the viz cache ({file.parent.name}/{file.name}), not checked"
                    )
                    return _CACHE.remember(file, cached)
                fresh = measure_bandwidth(
                    cached.read.buffer_bytes, "read", device=dev, repeats=CHECK_REPEATS
                )
                verdict = _check(cached, fresh)
                if verdict is None:
                    cached.status = (
                        f"checked now: a fresh read gave "
                        f"{fresh.bytes_per_s / 1e9:.1f} GB/s, in line with the "
                        f"cached {cached.bytes_per_s / 1e9:.1f} GB/s"
                    )
                    return _CACHE.remember(file, cached)
                _say(progress, f"{verdict}: measuring this machine's peaks again (a few seconds)")
                reason = f"measured again now, because {verdict}"
            else:
                _say(
                    progress,
                    "measuring this machine's peaks once: matrix products and "
                    "memory reads (a few seconds; later lessons reuse them)",
                )
                reason = "measured now (the first time on this machine)"
        else:
            _say(progress, "measuring this machine's peaks again (refresh=True)")
            reason = "measured now (refresh=True)"
        peaks = measure_machine_peaks(
            dev, buffer_bytes=buffer_bytes, repeats=repeats, budget_s=budget_s
        )
    _CACHE.write(file, peaks)
    for dt in peaks.matmul:
        if "float32" in peaks.matmul and not peaks.fast(dt):  # the learner should hear of it
            _say(progress, f"note: {peaks.finding(dt)}")
    peaks.loaded_from = ""
    peaks.status = f"{reason}; saved in the viz cache ({file.parent.name}/{file.name})"
    return peaks


def _check(cached: MachinePeaks, fresh: Bandwidth) -> Optional[str]:
    """None if a fresh read agrees with the cached one, else why it does not."""
    then, now = cached.read.spread, fresh.bytes_per_s
    off = now / then.median - 1
    if abs(off) <= CHECK_TOLERANCE or then.contains(now):
        return None
    return (
        f"a fresh read gave {now / 1e9:.1f} GB/s, {abs(off):.0%} "
        f"{'above' if off > 0 else 'below'} the cached {then.median / 1e9:.1f} GB/s "
        f"(measured {shown_utc(cached.measured_at)})"
    )


def forget_in_process() -> None:
    """Forget the peaks this process has read or measured (tests; a learner never needs it)."""
    _CACHE.forget()


def _load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # not on this platform
        return []


# ---- the roofline's two ceilings, in one dtype --------------------------------------------------
@dataclass
class Peaks:
    """The measured ceilings of one device at one dtype (a projection of `MachinePeaks`)."""

    device: str  # "cpu", "cuda" or "mps"
    device_name: str  # e.g. the CPU model or "NVIDIA H200"
    dtype: str  # element type of the matrix product
    threads: int  # torch intra-op threads (CPU parallelism)
    flops_per_s: float  # 2·n³ ÷ the median matmul run: the compute roof
    bytes_per_s: float  # bytes ÷ the median read of a large buffer: the memory roof
    matmul_n: int  # size of the square matrices at the peak
    buffer_bytes: int  # size of the buffer read
    repeats: int  # timed reads, after one untimed warm-up
    timer: str  # "cuda events" or the Clock's name
    # How, when and with what the two ceilings were measured.
    how: str = ""
    flops_spread: Optional[Spread] = None  # the middle half of the matmul runs
    bytes_spread: Optional[Spread] = None  # the middle half of the reads
    cpu_features: list[str] = field(default_factory=list)  # `viz.runtime.cpu_features`
    cpu_capability: str = ""  # what torch's kernels used, e.g. "AVX2"

    @property
    def ridge_intensity(self) -> float:
        """FLOPs per byte where the two roofs meet: below it memory limits, above it compute."""
        return self.flops_per_s / self.bytes_per_s


def peaks_v1_to_v2(data: dict) -> dict:
    """A Peaks saved before viz 0.2 (inside a schema-1 roofline): the fastest runs were the
    figures and the copy's bandwidth could be the memory roof; the medians it kept become the
    figures."""
    data = dict(data)
    data["flops_per_s"] = data.pop("flops_per_s_median", data["flops_per_s"])
    data["bytes_per_s"] = data.pop("bytes_per_s_median", data["bytes_per_s"])
    data["buffer_bytes"] = data.pop("copy_bytes", 0)
    return data


def peaks_from_machine(machine: MachinePeaks, dtype: str = "float32") -> Peaks:
    """The roofline's two ceilings taken from `viz.perf.machine_peaks`' measurement.

    flops_per_s is its matmul peak in `dtype`; bytes_per_s its **read** bandwidth (what the
    memory floor of lesson 08 divides by), so the ridge point printed by lessons 03, 04, 06
    and 07 is the one lesson 08 uses. `how` says when and how both were measured.
    """
    if not isinstance(machine, MachinePeaks):
        raise ValueError(
            f"expected viz.perf.MachinePeaks (from viz.perf.machine_peaks()), not "
            f"{type(machine).__name__}"
        )
    read = machine.read
    machine.flops(dtype)  # a dtype with no measured peak fails here, naming what there is
    m = machine.matmul[dtype]
    source = "cached machine peaks" if machine.loaded_from else "machine peaks"
    return Peaks(
        device=machine.device,
        device_name=machine.device_name,
        dtype=dtype,
        threads=machine.threads,
        flops_per_s=m.flops_per_s,
        bytes_per_s=read.bytes_per_s,
        matmul_n=m.n,
        buffer_bytes=read.buffer_bytes,
        repeats=read.repeats,
        timer=read.timer,
        how=(
            f"{source}, measured {shown_utc(machine.measured_at)}: matmul {dtype} "
            f"{m.how}; "
            f"read bandwidth: {read.how}"
        ),
        flops_spread=m.spread,
        bytes_spread=read.spread,
        cpu_features=list(machine.cpu_features),
        cpu_capability=machine.cpu_capability,
    )


def measure_peaks(
    device: Union[str, torch.device] = "auto",
    dtype: Union[None, str, torch.dtype] = None,
    *,
    buffer_bytes: Optional[int] = None,
    repeats: int = 5,
    threads: Optional[int] = None,
    budget_s: float = BUDGET_S,
    max_n: Optional[int] = None,
) -> Peaks:
    """Measure peak FLOP/s (a matrix product, sized to the machine) and the read bandwidth on
    `device`, afresh (nothing cached): what `viz roofline` and `measure_roofline` use.

    dtype: as in `viz.load_model` (bfloat16 on CUDA, float32 elsewhere): measure in the dtype
        the model runs in. A few seconds on a 2-core CPU.
    buffer_bytes: the buffer read (default 256 MiB on a CPU, 2 GiB on a GPU).
    budget_s, max_n: the matmul's time budget and largest size (`viz.perf.measure_matmul`).
    threads: CPU threads to measure with (None: torch's current count); recorded.
    """
    dev = resolve_device(device)
    dt = dtype_name(resolve_dtype(dtype, dev))
    checks.whole("repeats", repeats, 1)
    machine = measure_machine_peaks(
        dev,
        buffer_bytes=buffer_bytes,
        repeats=repeats,
        threads=threads,
        dtypes=[dt],
        budget_s=budget_s,
        max_n=max_n,
    )
    return peaks_from_machine(machine, dt)


def cached_peaks(
    device: Union[str, torch.device] = "cpu",
    dtype: Union[None, str, torch.dtype] = None,
    *,
    threads: Optional[int] = None,
) -> Peaks:
    """This machine's peaks for the roofline, measured once and cached (lessons 03, 04, 06, 07).

    `viz.perf.machine_peaks(device, threads=threads)` (measured the first time, a few seconds;
    read from its cache file and checked afterwards), in the form `measure_roofline(peaks=...)`
    takes: see `peaks_from_machine`. dtype: as in `viz.load_model` (float32 on a CPU).
    """
    dev = resolve_device(device)
    return peaks_from_machine(
        machine_peaks(dev, threads=threads), dtype_name(resolve_dtype(dtype, dev))
    )
