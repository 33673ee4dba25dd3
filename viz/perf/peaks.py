"""This device's two ceilings for the roofline, in one dtype: arithmetic and memory reads.

Vendor datasheets quote peaks that code rarely reaches; the roofline (lesson 06), the floors
(lessons 03, 04, 07) and the memory wall (lesson 08) use what *this* machine does instead,
measured by `viz.perf.machine` (where the method is written out):

- **FLOP/s** — an n×n by n×n matrix product does 2·n³ floating-point operations; n grows
  until a run is long enough to time, within a time budget (so a dtype without a fast kernel,
  bfloat16 on an AVX2-only CPU, takes a second, not minutes);
- **bytes/s** — `torch.sum` over a buffer far larger than the cache: decode *reads* its
  weights, so the read bandwidth, not a copy's, is the memory roof everywhere in viz.

Each figure is the **median** of its runs, with the middle half as its spread.

**Measured once per machine.** The lessons call `cached_peaks`, which takes the figures
`viz.perf.machine_peaks` measured once on this machine (and checks them on reuse), so every
lesson uses the same ceilings; `measure_peaks` measures afresh (the CLI's `viz roofline`).
On CUDA each run is timed with CUDA events (the device's own clock), elsewhere with
`viz.runtime.Clock` (perf_counter after a device synchronize).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import torch

from viz import checks
from viz.perf.machine import BUDGET_S, MachinePeaks, machine_peaks, measure_machine_peaks
from viz.runtime import dtype_name, resolve_device, resolve_dtype, time_runs
from viz.spread import Spread


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
        raise ValueError(f"expected viz.perf.MachinePeaks (from viz.perf.machine_peaks()), not "
                         f"{type(machine).__name__}")
    read = machine.read
    machine.flops(dtype)  # a dtype with no measured peak fails here, naming what there is
    m = machine.matmul[dtype]
    source = "cached machine peaks" if machine.loaded_from else "machine peaks"
    return Peaks(device=machine.device, device_name=machine.device_name, dtype=dtype,
                 threads=machine.threads, flops_per_s=m.flops_per_s,
                 bytes_per_s=read.bytes_per_s, matmul_n=m.n, buffer_bytes=read.buffer_bytes,
                 repeats=read.repeats, timer=read.timer,
                 how=(f"{source}, measured {machine.measured_at}: matmul {dtype} {m.how}; "
                      f"read bandwidth: {read.how}"),
                 flops_spread=m.spread, bytes_spread=read.spread,
                 cpu_features=list(machine.cpu_features), cpu_capability=machine.cpu_capability)


def measure_peaks(device: Union[str, torch.device] = "auto",
                  dtype: Union[None, str, torch.dtype] = None, *,
                  buffer_bytes: Optional[int] = None, repeats: int = 5,
                  threads: Optional[int] = None, budget_s: float = BUDGET_S,
                  max_n: Optional[int] = None) -> Peaks:
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
    machine = measure_machine_peaks(dev, buffer_bytes=buffer_bytes, repeats=repeats,
                                    threads=threads, dtypes=[dt], budget_s=budget_s,
                                    max_n=max_n)
    return peaks_from_machine(machine, dt)


def cached_peaks(device: Union[str, torch.device] = "cpu",
                 dtype: Union[None, str, torch.dtype] = None, *,
                 threads: Optional[int] = None) -> Peaks:
    """This machine's peaks for the roofline, measured once and cached (lessons 03, 04, 06, 07).

    `viz.perf.machine_peaks(device, threads=threads)` (measured the first time, a few seconds;
    read from its cache file and checked afterwards), in the form `measure_roofline(peaks=...)`
    takes: see `peaks_from_machine`. dtype: as in `viz.load_model` (float32 on a CPU).
    """
    dev = resolve_device(device)
    return peaks_from_machine(machine_peaks(dev, threads=threads),
                              dtype_name(resolve_dtype(dtype, dev)))


def time_kernel(fn, *, repeats: int = 7, device: Union[str, torch.device] = "cpu") -> float:
    """Median seconds of one call of `fn`, over `repeats` calls after one untimed warm-up.

    The timer `measure_peaks` uses (CUDA events on a GPU, a synchronized perf_counter
    elsewhere), for a lesson's own small measurement: one argmax (lesson 02), one matrix
    product (lessons 03 and 06).
    """
    return kernel_spread(fn, repeats=repeats, device=device).median


def kernel_spread(fn, *, repeats: int = 7, device: Union[str, torch.device] = "cpu") -> Spread:
    """Seconds of one call of `fn` with its spread: `repeats` calls after one untimed warm-up,
    their median and middle half (`viz.Spread`). What `time_kernel` reports the median of."""
    checks.whole("repeats", repeats, 1)
    times, _ = time_runs(fn, resolve_device(device), repeats)
    return Spread.of(times)


def linear_spread(weight: torch.Tensor, rows: int, *, repeats: int = 7) -> Spread:
    """`linear_seconds` with its spread: the median of `repeats` calls and their middle half
    (lessons 03, 06: how fast the kernel of every weight matrix streams it, 1 row or several)."""
    checks.whole("rows", rows, 1)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError("weight must be a 2-D tensor (out features × in features), e.g. "
                         "lm.model.lm_head.weight")
    w = weight.detach()
    x = torch.ones(rows, w.shape[1], dtype=w.dtype, device=w.device)
    with torch.inference_mode():
        return kernel_spread(lambda: torch.nn.functional.linear(x, w), repeats=repeats,
                             device=w.device)


def linear_seconds(weight: torch.Tensor, rows: int, *, repeats: int = 7) -> float:
    """Median seconds of `torch.nn.functional.linear` of `rows` input rows with `weight`.

    The kernel every weight matrix of a forward pass runs: 1 row is a matrix-vector product
    (batch-1 decode), 2 or more a matrix-matrix product (a prefill, a batch). Divide the
    weight's bytes by it for the speed that kernel streams the weights at (lessons 03, 06).
    `linear_spread` gives the spread too.
    """
    return linear_spread(weight, rows, repeats=repeats).median
