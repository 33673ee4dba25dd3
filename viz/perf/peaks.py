"""This device's two ceilings, measured: arithmetic (FLOP/s) and memory traffic (bytes/s).

Vendor datasheets quote peaks that code rarely reaches; the roofline in lesson 06 uses what
*this* machine does with two short micro-benchmarks instead:

- **FLOP/s** — one n×n by n×n matrix product does 2·n³ floating-point operations (n³
  multiply-adds); peak FLOP/s = 2·n³ / (fastest time of one product).
- **bytes/s** — copying a tensor of N bytes reads N bytes and writes N bytes; peak bytes/s =
  2·N / (fastest time of one copy). N is far larger than any cache, so this is memory.

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
