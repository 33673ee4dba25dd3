"""This device's two ceilings, measured: arithmetic (FLOP/s) and memory traffic (bytes/s).

Vendor datasheets quote peaks that code rarely reaches; the roofline in lesson 06 uses what
*this* machine does with two short micro-benchmarks instead:

- **FLOP/s** — one n×n by n×n matrix product does 2·n³ floating-point operations (n³
  multiply-adds); peak FLOP/s = 2·n³ / (fastest time of one product).
- **bytes/s** — copying a tensor of N bytes reads N bytes and writes N bytes; peak bytes/s =
  2·N / (fastest time of one copy). N is far larger than any cache, so this is memory.

**Measured once per machine.** The lessons do not call `measure_peaks`: they call
`cached_peaks`, which takes the figures `viz.perf.machine_peaks` measured once on this machine
and cached (with when and how), so every lesson uses the same ceilings. Those use the **read**
bandwidth (`torch.sum` over a buffer far larger than the cache): decode reads its weights, it
does not copy them; `Peaks.how` says so.

"Fastest of several repeats" is the ceiling: noise (other programs, frequency changes) only
ever makes a run slower. The median is kept too. On CUDA each run is timed with CUDA events
(the device's own clock), elsewhere with `viz.runtime.Clock` (perf_counter after a device
synchronize).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional, Union

import torch

from viz.perf.bandwidth import MachinePeaks, machine_peaks
from viz.runtime import (device_name, dtype_name, resolve_device, resolve_dtype, time_runs,
                         using_threads)


@dataclass
class Peaks:
    """The measured ceilings of one device at one dtype."""

    device: str  # "cpu", "cuda" or "mps"
    device_name: str  # e.g. the CPU model or "NVIDIA H200"
    dtype: str  # element type of the matrix product and the copy
    threads: int  # torch intra-op threads (CPU parallelism)
    flops_per_s: float  # 2·n³ / fastest matmul
    bytes_per_s: float  # 2·copy_bytes / fastest copy (read + write)
    flops_per_s_median: float  # 2·n³ / median matmul
    bytes_per_s_median: float  # 2·copy_bytes / median copy
    matmul_n: int  # size of the square matrices
    copy_bytes: int  # size of the copied tensor (bytes read = bytes written = this)
    repeats: int  # timed runs of each, after one untimed warm-up
    timer: str  # "cuda events" or the Clock's name
    # How the two ceilings were measured, when not by `measure_peaks` (a copy): e.g. "cached
    # machine peaks: matmul ...; read bandwidth ...". Empty for `measure_peaks`.
    how: str = ""

    @property
    def ridge_intensity(self) -> float:
        """FLOPs per byte where the two roofs meet: below it memory limits, above it compute."""
        return self.flops_per_s / self.bytes_per_s


def _default_sizes(device: torch.device) -> tuple[int, int]:
    """(matmul n, copy bytes): big enough to saturate the device, short enough to wait for."""
    if device.type == "cuda":
        return 8192, 2 << 30  # 1.1 TFLOP per product, 2 GiB per copy
    # 128 MiB: several times a server CPU's last-level cache, and small enough that a lesson's
    # kernel (model + two copies of this) stays well inside a 2 GB Binder session.
    return 2048, 128 << 20  # 17 GFLOP, 128 MiB


def measure_peaks(device: Union[str, torch.device] = "auto",
                  dtype: Union[None, str, torch.dtype] = None, *, matmul_n: Optional[int] = None,
                  copy_bytes: Optional[int] = None, repeats: int = 5,
                  threads: Optional[int] = None) -> Peaks:
    """Measure peak FLOP/s (a matrix product) and peak bytes/s (a copy) on `device`.

    dtype: as in `viz.load_model` (bfloat16 on CUDA, float32 elsewhere): measure in the dtype
        the model runs in. About 2 s on a 2-core CPU with the default sizes.
    threads: CPU threads to measure with (None: torch's current count); recorded.
    """
    with using_threads(threads):
        return _measure(device, dtype, matmul_n, copy_bytes, repeats)


def _measure(device, dtype, matmul_n, copy_bytes, repeats) -> Peaks:
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    n_default, bytes_default = _default_sizes(dev)
    n = int(matmul_n or n_default)
    elem = torch.tensor([], dtype=dt).element_size()
    numel = int(copy_bytes or bytes_default) // elem
    if n < 1 or numel < 1 or repeats < 1:
        raise ValueError("matmul_n, copy_bytes and repeats must be positive")

    gen = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(n, n, device=dev, dtype=dt, generator=gen)
    b = torch.randn(n, n, device=dev, dtype=dt, generator=gen)
    out = torch.empty(n, n, device=dev, dtype=dt)
    mm_times, timer = time_runs(lambda: torch.mm(a, b, out=out), dev, repeats)
    del a, b, out

    src = torch.ones(numel, device=dev, dtype=dt)
    dst = torch.empty_like(src)
    copy_times, _ = time_runs(lambda: dst.copy_(src), dev, repeats)
    del src, dst

    flops, moved = 2.0 * n ** 3, 2.0 * numel * elem
    return Peaks(device=dev.type, device_name=device_name(dev), dtype=dtype_name(dt),
                 threads=torch.get_num_threads(),
                 flops_per_s=flops / min(mm_times), bytes_per_s=moved / min(copy_times),
                 flops_per_s_median=flops / statistics.median(mm_times),
                 bytes_per_s_median=moved / statistics.median(copy_times),
                 matmul_n=n, copy_bytes=numel * elem, repeats=repeats, timer=timer)


def peaks_from_machine(machine: MachinePeaks, dtype: str = "float32") -> Peaks:
    """The roofline's two ceilings taken from `viz.perf.machine_peaks`' measurement.

    flops_per_s is its matmul peak in `dtype`; bytes_per_s its **read** bandwidth (what the
    memory floor of lesson 08 divides by), not a copy's, so the ridge point printed by lessons
    03, 04, 06 and 07 is the one lesson 08 uses. `how` says when and how both were measured.
    """
    if not isinstance(machine, MachinePeaks):
        raise ValueError(f"expected viz.perf.MachinePeaks (from viz.perf.machine_peaks()), not "
                         f"{type(machine).__name__}")
    read = machine.read
    return Peaks(device=machine.device, device_name=machine.device_name, dtype=dtype,
                 threads=machine.threads, flops_per_s=machine.flops(dtype),
                 bytes_per_s=read.bytes_per_s,
                 flops_per_s_median=machine.flops_per_s_median.get(dtype, machine.flops(dtype)),
                 bytes_per_s_median=read.bytes_per_s_median, matmul_n=machine.matmul_n,
                 copy_bytes=read.buffer_bytes, repeats=read.repeats, timer=read.timer,
                 how=(f"cached machine peaks, measured {machine.measured_at}: matmul {dtype} "
                      f"{machine.matmul_n}×{machine.matmul_n}; read bandwidth: {read.how}"))


def cached_peaks(device: Union[str, torch.device] = "cpu",
                 dtype: Union[None, str, torch.dtype] = None, *,
                 threads: Optional[int] = None) -> Peaks:
    """This machine's peaks for the roofline, measured once and cached (lessons 03, 04, 06, 07).

    `viz.perf.machine_peaks(device, threads=threads)` (measured the first time, a few seconds;
    read from its cache file afterwards), in the form `measure_roofline(peaks=...)` takes:
    see `peaks_from_machine`. dtype: as in `viz.load_model` (float32 on a CPU).
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
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number >= 1, not {repeats!r}")
    times, _ = time_runs(fn, resolve_device(device), repeats)
    return float(statistics.median(times))


def linear_seconds(weight: torch.Tensor, rows: int, *, repeats: int = 7) -> float:
    """Median seconds of `torch.nn.functional.linear` of `rows` input rows with `weight`.

    The kernel every weight matrix of a forward pass runs: 1 row is a matrix-vector product
    (batch-1 decode), 2 or more a matrix-matrix product (a prefill, a batch). Divide the
    weight's bytes by it for the speed that kernel streams the weights at (lessons 03, 06).
    """
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ValueError(f"rows must be a whole number >= 1, not {rows!r}")
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError("weight must be a 2-D tensor (out features × in features), e.g. "
                         "lm.model.lm_head.weight")
    w = weight.detach()
    x = torch.ones(rows, w.shape[1], dtype=w.dtype, device=w.device)
    with torch.inference_mode():
        return time_kernel(lambda: torch.nn.functional.linear(x, w), repeats=repeats,
                           device=w.device)
