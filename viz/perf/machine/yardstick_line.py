"""The yardsticks every judgement in the course is made with, in one line.

A verdict ("memory-bound", MBU 40 %) divides a measured time by three figures of this machine:
its matrix product's peak FLOP/s, its read bandwidth (both `viz.perf.machine_peaks`) and the
fixed cost of a pass (`viz.perf.fixed_cost`). They are measured once per machine and reused, so
every lesson judges with the same three; each lesson that judges prints them first, in one
line from this one function:

    print(perf.yardsticks())
    yardsticks: Xeon · 2 threads · float32 peak 61.2 GFLOP/s (60.1–62.0) · read 33.0 GB/s
    (32.1–33.5) · fixed cost 7.5 ms (7.2–7.9) per 30-layer pass · measured 2026-12-05 10:00 UTC

(one line; wrapped here). The course's saved notebooks come from one run (`make notebooks`),
so this line is the same in every one of them (tests/test_notebooks.py checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

from viz.perf.machine.fixed_costs import fixed_cost
from viz.perf.machine.peaks import machine_peaks
from viz.provenance import shown_utc
from viz.spread import Spread

PREFIX = "yardsticks:"  # every printed line begins with it (tests find them by it)


@dataclass(frozen=True)
class Yardsticks:
    """This machine's three measured yardsticks, as one lesson uses them."""

    machine: str  # the device's short name (`viz.runtime.short_device_name`)
    threads: int  # torch threads every figure was measured with
    dtype: str  # the matrix product's dtype
    flops: Spread  # peak FLOP/s of a large matrix product
    read: Spread  # read bandwidth, bytes/s: what every memory floor divides by
    fixed: Spread  # seconds of fixed cost per pass at `n_layers`
    n_layers: int
    measured_at: str  # when the peaks were measured (ISO UTC; shown as "2026-12-05 12:12 UTC")

    def __str__(self) -> str:
        return (
            f"{PREFIX} {self.machine} · {self.threads} thread{'s' * (self.threads != 1)} "
            f"· {self.dtype} peak {self.flops.text(1e-9, 'GFLOP/s', runs=False)} "
            f"· read {self.read.text(1e-9, 'GB/s', runs=False)} "
            f"· fixed cost {self.fixed.text(1e3, 'ms', runs=False)} per "
            f"{self.n_layers}-layer pass · measured {shown_utc(self.measured_at)}"
        )


def yardsticks(
    n_layers: int = 30,
    dtype: str = "float32",
    *,
    device: Union[str, torch.device] = "cpu",
    threads: Optional[int] = None,
) -> Yardsticks:
    """This machine's peaks and fixed cost per `n_layers`-deep pass, measured the first time
    a lesson asks (a few seconds) and read from the viz cache afterwards."""
    from viz.runtime import short_device_name

    machine = machine_peaks(device, threads=threads)
    machine.flops(dtype)  # a dtype with no measured peak fails here, naming what there is
    return Yardsticks(
        machine=short_device_name(machine.device_name),
        threads=machine.threads,
        dtype=dtype,
        flops=machine.matmul[dtype].spread,
        read=machine.read.spread,
        fixed=fixed_cost(n_layers, dtype, device=device, threads=threads),
        n_layers=n_layers,
        measured_at=machine.measured_at,
    )
