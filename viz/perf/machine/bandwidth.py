"""Memory bandwidth measured the way decode reads.

A decode step reads every weight once (lesson 04), so its shortest possible time is
bytes ÷ bandwidth: the **memory floor** (lesson 08). That floor is only as true as the
bandwidth behind it, and "bandwidth" depends on how it is measured:

- **read** — `torch.sum` over one buffer of N bytes: N bytes read, nothing written;
  bandwidth = N / time. Decode reads weights and writes almost nothing, so this is the
  bandwidth every memory floor, MBU and ridge point in viz uses.
- **copy** — `dst.copy_(src)`: N bytes read and N written; bandwidth = 2N / time. Kept for
  comparison: writing is not what decode does.
- **matvec** — `torch.nn.functional.linear` of one row with a (rows × 4096) matrix of N bytes:
  the very kernel a batch-1 decode step runs for every weight matrix; bandwidth = N / time.
  How close a real kernel gets to the read bandwidth on this machine, in a given dtype (a
  CPU without bfloat16 instructions reads a bfloat16 matrix no faster in weights per second).

The buffer must be far larger than the last-level cache (L3: 32 MiB on the project's CPU),
or the loop reads the cache, not memory. The default, 256 MiB, is 8× that and small enough
for a lesson's kernel in a 2 GB Binder session; `bandwidth_by_size` measures how much the
answer moves with the buffer (`benchmarks/memory_wall.py` records 32 MiB to 2 GiB).

**The figure is the median run**, and its spread the middle half of the runs
(`viz.spread.Spread`). On the project's shared 2-core machine the *fastest* of seven reads of
the same 256 MiB buffer ranged from 33 to 72 GB/s across six measurements a few seconds apart,
while the median stayed within 31–35 GB/s: the fastest run is the one a lucky moment produced,
the median is what the machine sustains. The fastest is kept too (`fastest_bytes_per_s`).

This machine's figures, measured once and cached for every lesson, are
`viz.perf.machine.peaks.machine_peaks`. Lesson 08.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

import torch

from viz import checks
from viz.runtime import dtype_name, resolve_device, resolve_dtype, time_runs, using_threads
from viz.spread import Spread

METHODS = ("read", "copy", "matvec")
MIB = 1 << 20
# The matvec kernel's matrix is (N / row_bytes) rows × MATVEC_COLUMNS columns.
MATVEC_COLUMNS = 4096

HOW = {
    "read": "torch.sum over a {size} {dtype} buffer (bytes read / time)",
    "copy": "dst.copy_(src) of a {size} {dtype} buffer (bytes read + written / time)",
    "matvec": "torch.nn.functional.linear(1 row, a {size} {dtype} matrix of "
    f"{MATVEC_COLUMNS} columns) (matrix bytes / time)",
}


@dataclass
class Bandwidth:
    """One bandwidth measurement: how it was made, its median and its spread."""

    method: str  # "read", "copy" or "matvec" (see the module docstring)
    buffer_bytes: int  # size of the buffer (the matrix, for matvec; each of the two, for copy)
    bytes_per_s: float  # bytes moved / median run: THE figure (floors, MBU, ridge use it)
    fastest_bytes_per_s: float  # bytes moved / fastest run (a lucky moment; for comparison)
    dtype: str  # element type of the buffer
    threads: int  # torch intra-op threads it ran with
    repeats: int  # timed runs, after one untimed warm-up
    timer: str  # "perf_counter" or "cuda events"
    runs_s: list[float] = field(default_factory=list)  # every timed run ([]: not recorded)
    moved_bytes: int = 0  # bytes one run moves (read + written for a copy)

    @property
    def spread(self) -> Spread:
        """bytes/s with its spread: the median run and the middle half of the runs."""
        if not self.runs_s or not self.moved_bytes:
            return Spread.exact(self.bytes_per_s)  # an older file: no runs were kept
        return Spread.of(self.moved_bytes / t for t in self.runs_s)

    @property
    def how(self) -> str:
        """How it was measured, in words, e.g. "torch.sum over a 256 MiB float32 buffer ..."."""
        text = HOW[self.method].format(size=_size(self.buffer_bytes), dtype=self.dtype)
        return (
            f"{text}, median of {self.repeats} runs after a warm-up, {self.threads} "
            f"thread{'s' if self.threads != 1 else ''}, {self.timer}"
        )


def bandwidth_v1_to_v2(data: dict) -> dict:
    """A Bandwidth saved by viz before the median became the figure (schema 1 files): its
    `bytes_per_s` was the fastest run, `bytes_per_s_median` the median."""
    data = dict(data)
    fastest = data.pop("bytes_per_s")
    data["bytes_per_s"] = data.pop("bytes_per_s_median", fastest)
    data["fastest_bytes_per_s"] = fastest
    return data


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / MIB:g} MiB"


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown bandwidth method {method!r}: use one of {list(METHODS)}")
    return method


def _check_buffer(buffer_bytes, device: torch.device) -> int:
    return checks.whole(
        "buffer_bytes",
        buffer_bytes,
        MIB,
        what="a whole number of bytes >= 1 MiB",
        fix="use one far larger than the last-level cache, e.g. 256 << 20",
    )


def default_buffer_bytes(device: Union[str, torch.device] = "cpu") -> int:
    """256 MiB on a CPU (8× a 32 MiB L3, fits a lesson), 2 GiB on a GPU (many × its L2)."""
    return (2 << 30) if resolve_device(device).type == "cuda" else 256 * MIB


def measure_bandwidth(
    buffer_bytes: Optional[int] = None,
    method: str = "read",
    *,
    device: Union[str, torch.device] = "cpu",
    dtype: Union[None, str, torch.dtype] = "float32",
    repeats: int = 7,
    threads: Optional[int] = None,
) -> Bandwidth:
    """Measure memory bandwidth on `device` by `method` ("read", "copy", "matvec").

    buffer_bytes: size of the buffer (default `default_buffer_bytes(device)`: 256 MiB on a
        CPU); it must be far larger than the last-level cache.
    threads: CPU threads to measure with (None: torch's current count); recorded.
    About 0.1 s per method at 256 MiB on a 2-core CPU, plus filling the buffer.
    """
    _check_method(method)
    checks.threads(threads)
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    nbytes = _check_buffer(default_buffer_bytes(dev) if buffer_bytes is None else buffer_bytes, dev)
    checks.whole("repeats", repeats, 1)
    elem = torch.empty(0, dtype=dt).element_size()
    with using_threads(threads) as n_threads:
        fn, moved, actual = _kernel(method, nbytes, elem, dev, dt)
        times, timer = time_runs(fn, dev, repeats)
        del fn
    return Bandwidth(
        method=method,
        buffer_bytes=actual,
        bytes_per_s=Spread.of(moved / t for t in times).median,
        fastest_bytes_per_s=moved / min(times),
        dtype=dtype_name(dt),
        threads=n_threads,
        repeats=repeats,
        timer=timer,
        runs_s=list(times),
        moved_bytes=int(moved),
    )


def _kernel(
    method: str, nbytes: int, elem: int, dev: torch.device, dt: torch.dtype
) -> tuple[Callable[[], object], float, int]:
    """(the call to time, bytes it moves, buffer bytes) for one method."""
    if method == "matvec":
        rows = max(1, nbytes // (elem * MATVEC_COLUMNS))
        matrix = torch.ones(rows, MATVEC_COLUMNS, device=dev, dtype=dt)
        row = torch.ones(1, MATVEC_COLUMNS, device=dev, dtype=dt)
        actual = matrix.numel() * elem
        return (lambda: torch.nn.functional.linear(row, matrix)), float(actual), actual
    numel = nbytes // elem
    src = torch.ones(numel, device=dev, dtype=dt)
    actual = numel * elem
    if method == "read":
        return (lambda: src.sum()), float(actual), actual
    dst = torch.empty_like(src)
    return (lambda: dst.copy_(src)), 2.0 * actual, actual


def bandwidth_by_size(
    sizes: Sequence[int],
    method: str = "read",
    *,
    device: Union[str, torch.device] = "cpu",
    dtype: Union[None, str, torch.dtype] = "float32",
    repeats: int = 7,
    threads: Optional[int] = None,
) -> list[Bandwidth]:
    """`measure_bandwidth` at each buffer size: how much the answer depends on the size.

    Sizes at or below the last-level cache read the cache and come out higher.
    """
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes must list at least one buffer size in bytes, e.g. [64 << 20]")
    return [
        measure_bandwidth(s, method, device=device, dtype=dtype, repeats=repeats, threads=threads)
        for s in sizes
    ]
