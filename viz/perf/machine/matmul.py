"""Peak FLOP/s of a matrix product in one dtype, sized to the machine, in bounded time.

A fixed 2048×2048 product takes 0.1 s in float32 on any laptop, but 105 s in bfloat16 on a
CPU without bfloat16 instructions (AVX2 only: torch converts every number in software). So
the product grows from 128×128, doubling, until one run takes long enough to time
(`MIN_RUN_S`) or the dtype's time budget (`BUDGET_S`) would be exceeded by the next size; the
peak is the best median FLOP/s among the sizes tried, with the middle half of its runs as its
spread (`viz.spread.Spread`). About 1–2 s per dtype on any CPU. `viz.perf.machine.peaks`
measures it in every dtype of a lesson and keeps it with the bandwidths. Lesson 08.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Union

import torch

from viz import checks
from viz.runtime import dtype_name, resolve_device, resolve_dtype, time_runs
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
        return Spread.of(2.0 * self.n**3 / t for t in self.runs_s)

    @property
    def how(self) -> str:
        tried = ", ".join(
            f"{n}: {f / 1e9:,.1f}" for n, f in zip(self.sizes, self.sizes_flops_per_s)
        )
        return f"{self.n}×{self.n} product, median of {len(self.runs_s) or 'its'} runs" + (
            f"; sizes tried (GFLOP/s) {tried}; {self.stopped}" if self.sizes else ""
        )


def measure_matmul(
    dtype: Union[str, torch.dtype] = "float32",
    device: Union[str, torch.device] = "cpu",
    *,
    repeats: int = 5,
    budget_s: float = BUDGET_S,
    min_run_s: float = MIN_RUN_S,
    max_n: Optional[int] = None,
    start_n: int = START_N,
) -> Matmul:
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
        flops = Spread.of(2.0 * n**3 / t for t in runs)
        sizes.append(n)
        medians.append(flops.median)
        run_s = sorted(runs)[len(runs) // 2]
        if best is None or (
            run_s >= MIN_PEAK_RUN_S and (best[3] < MIN_PEAK_RUN_S or flops.median > best[1].median)
        ):
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
    return Matmul(
        dtype=dtype_name(dt),
        n=n_best,
        flops_per_s=flops.median,
        fastest_flops_per_s=2.0 * n_best**3 / min(runs),
        runs_s=list(runs),
        sizes=sizes,
        sizes_flops_per_s=medians,
        stopped=stopped,
    )
