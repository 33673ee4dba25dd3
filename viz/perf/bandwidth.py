"""Memory bandwidth measured the way decode reads, and this machine's peaks cached once.

A decode step reads every weight once (lesson 04), so its shortest possible time is
bytes ÷ bandwidth: the **memory floor** (lesson 08). That floor is only as true as the
bandwidth behind it, and "bandwidth" depends on how it is measured:

- **read** — `torch.sum` over one buffer of N bytes: N bytes read, nothing written;
  bandwidth = N / fastest time. Decode reads weights and writes almost nothing, so this is
  the bandwidth the memory floor uses.
- **copy** — `dst.copy_(src)`: N bytes read and N written; bandwidth = 2N / fastest time.
  What `viz.perf.measure_peaks` reports (lessons 03, 04, 06). Writing is not what decode does.
- **matvec** — `torch.nn.functional.linear` of one row with a (rows × 4096) matrix of N bytes:
  the very kernel a batch-1 decode step runs for every weight matrix; bandwidth = N / fastest
  time. How close a real kernel gets to the read bandwidth on this machine.

The buffer must be far larger than the last-level cache (L3: 32 MiB on the project's CPU),
or the loop reads the cache, not memory. The default, 256 MiB, is 8× that and small enough
for a lesson's kernel in a 2 GB Binder session; `bandwidth_by_size` measures how much the
answer moves with the buffer (`benchmarks/memory_wall.py` records 32 MiB to 2 GiB).

"Fastest of several repeats" is the ceiling: noise only ever makes a run slower. The median
is kept too, and the machine's load average when it was measured (a busy machine reads low).

**Measure once per machine, reuse.** `machine_peaks()` measures the matmul FLOP/s (float32
and bfloat16) and the three bandwidths once, saves them as JSON in the viz cache folder
(`viz.default_model.cache_dir()`, `$VIZ_CACHE_DIR`) with when, how and with how many
threads, and returns the saved figures on every later call, so every lesson and tool on this
machine uses the same peaks. `machine_peaks(refresh=True)` measures again (do it when nothing
else runs: `MachinePeaks.how()` prints the load average at the time). A file measured on another
CPU, with another thread count or another torch is not reused. Lesson 08.
"""

from __future__ import annotations

import datetime
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Optional, Sequence, Union

import torch

from viz.documents import Document
from viz.runtime import (check_threads, device_name, dtype_name, resolve_device, resolve_dtype,
                         time_runs, using_threads)

METHODS = ("read", "copy", "matvec")
MIB = 1 << 20
# The matvec kernel's matrix is (N / row_bytes) rows × MATVEC_COLUMNS columns.
MATVEC_COLUMNS = 4096

HOW = {
    "read": "torch.sum over a {size} {dtype} buffer (bytes read / fastest time)",
    "copy": "dst.copy_(src) of a {size} {dtype} buffer (bytes read + written / fastest time)",
    "matvec": "torch.nn.functional.linear(1 row, a {size} {dtype} matrix of "
              f"{MATVEC_COLUMNS} columns) (matrix bytes / fastest time)",
}


@dataclass
class Bandwidth:
    """One bandwidth measurement: how it was made and what it gave."""

    method: str  # "read", "copy" or "matvec" (see the module docstring)
    buffer_bytes: int  # size of the buffer (the matrix, for matvec; each of the two, for copy)
    bytes_per_s: float  # bytes moved / fastest run
    bytes_per_s_median: float  # bytes moved / median run
    dtype: str  # element type of the buffer
    threads: int  # torch intra-op threads it ran with
    repeats: int  # timed runs, after one untimed warm-up
    timer: str  # "perf_counter" or "cuda events"

    @property
    def how(self) -> str:
        """How it was measured, in words, e.g. "torch.sum over a 256 MiB float32 buffer ..."."""
        text = HOW[self.method].format(size=_size(self.buffer_bytes), dtype=self.dtype)
        return (f"{text}, fastest of {self.repeats} after a warm-up, {self.threads} "
                f"thread{'s' if self.threads != 1 else ''}, {self.timer}")


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / MIB:g} MiB"


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown bandwidth method {method!r}: use one of {list(METHODS)}")
    return method


def _check_buffer(buffer_bytes, device: torch.device) -> int:
    if isinstance(buffer_bytes, bool) or not isinstance(buffer_bytes, int) or buffer_bytes < MIB:
        raise ValueError(f"buffer_bytes must be a whole number of bytes >= 1 MiB (use one far "
                         f"larger than the last-level cache, e.g. 256 << 20), not {buffer_bytes!r}")
    return buffer_bytes


def default_buffer_bytes(device: Union[str, torch.device] = "cpu") -> int:
    """256 MiB on a CPU (8× a 32 MiB L3, fits a lesson), 2 GiB on a GPU (many × its L2)."""
    return (2 << 30) if resolve_device(device).type == "cuda" else 256 * MIB


def measure_bandwidth(buffer_bytes: Optional[int] = None, method: str = "read", *,
                      device: Union[str, torch.device] = "cpu",
                      dtype: Union[None, str, torch.dtype] = "float32", repeats: int = 7,
                      threads: Optional[int] = None) -> Bandwidth:
    """Measure memory bandwidth on `device` by `method` ("read", "copy", "matvec").

    buffer_bytes: size of the buffer (default `default_buffer_bytes(device)`: 256 MiB on a
        CPU); it must be far larger than the last-level cache.
    threads: CPU threads to measure with (None: torch's current count); recorded.
    About 0.1 s per method at 256 MiB on a 2-core CPU, plus filling the buffer.
    """
    _check_method(method)
    check_threads(threads)
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    nbytes = _check_buffer(default_buffer_bytes(dev) if buffer_bytes is None else buffer_bytes,
                           dev)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number >= 1, not {repeats!r}")
    elem = torch.empty(0, dtype=dt).element_size()
    with using_threads(threads) as n_threads:
        fn, moved, actual = _kernel(method, nbytes, elem, dev, dt)
        times, timer = time_runs(fn, dev, repeats)
        del fn
    return Bandwidth(method=method, buffer_bytes=actual, bytes_per_s=moved / min(times),
                     bytes_per_s_median=moved / statistics.median(times), dtype=dtype_name(dt),
                     threads=n_threads, repeats=repeats, timer=timer)


def _kernel(method: str, nbytes: int, elem: int, dev: torch.device,
            dt: torch.dtype) -> tuple[Callable[[], object], float, int]:
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


def bandwidth_by_size(sizes: Sequence[int], method: str = "read", *,
                      device: Union[str, torch.device] = "cpu",
                      dtype: Union[None, str, torch.dtype] = "float32", repeats: int = 7,
                      threads: Optional[int] = None) -> list[Bandwidth]:
    """`measure_bandwidth` at each buffer size: how much the answer depends on the size.

    Sizes at or below the last-level cache read the cache and come out higher.
    """
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes must list at least one buffer size in bytes, e.g. [64 << 20]")
    return [measure_bandwidth(s, method, device=device, dtype=dtype, repeats=repeats,
                              threads=threads) for s in sizes]


# ---- this machine's peaks, measured once and cached ------------------------------------------
@dataclass
class MachinePeaks(Document):
    """This machine's ceilings: matmul FLOP/s per dtype and three memory bandwidths."""

    KIND: ClassVar[str] = "llm-inference-machine-peaks"
    SCHEMA_VERSION: ClassVar[int] = 1
    WHAT: ClassVar[str] = "machine peaks file"
    AGAIN: ClassVar[str] = "measure them again with viz.perf.machine_peaks(refresh=True)"

    device: str  # "cpu", "cuda" or "mps"
    device_name: str  # e.g. the CPU model or "NVIDIA H200"
    cpu_count: int  # logical CPUs the operating system reports
    threads: int  # torch intra-op threads every figure was measured with
    flops_per_s: dict[str, float]  # dtype → 2·n³ / fastest n×n matmul
    flops_per_s_median: dict[str, float]  # dtype → 2·n³ / median matmul
    matmul_n: int  # size of the square matrices
    read: Bandwidth  # the memory floor's bandwidth (see the module docstring)
    copy: Bandwidth  # read + write, for comparison
    matvec: Bandwidth  # the decode kernel's own reading speed
    measured_at: str  # when, UTC, ISO 8601
    torch_version: str
    load_average: list[float] = field(default_factory=list)  # 1/5/15-min load then (Unix)
    by_size: list[Bandwidth] = field(default_factory=list)  # optional: read at other sizes

    # Where this object came from: "" (measured now) or the cache file it was read from.
    loaded_from: ClassVar[str] = ""

    @property
    def bytes_per_s(self) -> float:
        """The read bandwidth: what the memory floor divides by."""
        return self.read.bytes_per_s

    def flops(self, dtype: str) -> float:
        """Peak matmul FLOP/s in `dtype` ("float32", "bfloat16")."""
        if dtype not in self.flops_per_s:
            raise ValueError(f"no matmul peak measured in {dtype!r}: these peaks have "
                             f"{sorted(self.flops_per_s)}")
        return self.flops_per_s[dtype]

    def ridge_intensity(self, dtype: str = "float32") -> float:
        """FLOPs per byte where the two ceilings meet: peak FLOP/s ÷ read bandwidth."""
        return self.flops(dtype) / self.bytes_per_s

    def how(self) -> str:
        """How, when and with what every figure was measured (print it beside the figures)."""
        lines = [f"{self.device_name} ({self.device}, {self.cpu_count} logical CPUs), "
                 f"{self.threads} torch thread{'s' if self.threads != 1 else ''}, torch "
                 f"{self.torch_version}, measured {self.measured_at}"
                 + (f", load average {self.load_average[0]:.2f}" if self.load_average else "")]
        for dt, f in self.flops_per_s.items():
            lines.append(f"  matmul {dt}: {f / 1e9:,.1f} GFLOP/s ({self.matmul_n}×"
                         f"{self.matmul_n} product, fastest run)")
        for b in (self.read, self.copy, self.matvec):
            lines.append(f"  {b.method:<6} {b.bytes_per_s / 1e9:6.1f} GB/s: {b.how}")
        if self.loaded_from:
            lines.append(f"  (read from {self.loaded_from}; "
                         "viz.perf.machine_peaks(refresh=True) measures again)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.how()


def peaks_path(device: Union[str, torch.device] = "cpu", threads: Optional[int] = None) -> Path:
    """The cache file for `device` measured with `threads` (None: torch's current count)."""
    from viz.default_model import cache_dir

    dev = resolve_device(device)
    n = check_threads(threads) or torch.get_num_threads()
    return cache_dir() / "peaks" / f"{dev.type}-{n}-threads.json"


def _reusable(peaks: MachinePeaks, dev: torch.device, threads: int) -> bool:
    return (peaks.device == dev.type and peaks.device_name == device_name(dev)
            and peaks.threads == threads and peaks.cpu_count == (os.cpu_count() or 0)
            and peaks.torch_version == torch.__version__)


def machine_peaks(device: Union[str, torch.device] = "cpu", *, threads: Optional[int] = None,
                  refresh: bool = False, path: Union[None, str, os.PathLike] = None,
                  buffer_bytes: Optional[int] = None, matmul_n: Optional[int] = None,
                  repeats: int = 7) -> MachinePeaks:
    """This machine's peaks: read from the cache if measured before here, else measured and saved.

    refresh: measure again even if a cached file exists (and overwrite it).
    path: the cache file (default `peaks_path(device, threads)`, in the viz cache folder).
    buffer_bytes, matmul_n, repeats: the measurement's sizes (defaults: 256 MiB and 2048 on
        a CPU, 2 GiB and 8192 on a GPU); a cached file measured with other sizes is re-measured
        only with refresh=True.
    A few seconds on a 2-core CPU the first time; instant afterwards. Lesson 08.
    """
    check_threads(threads)
    dev = resolve_device(device)
    file = Path(path) if path is not None else peaks_path(dev, threads)
    with using_threads(threads) as n_threads:
        if not refresh and file.is_file():
            try:
                cached = MachinePeaks.load(file)
            except ValueError:
                cached = None  # unreadable or from another version: measure again
            if cached is not None and _reusable(cached, dev, n_threads):
                cached.loaded_from = str(file)
                return cached
        peaks = measure_machine_peaks(dev, buffer_bytes=buffer_bytes, matmul_n=matmul_n,
                                      repeats=repeats)
    peaks.save(file)
    return peaks


def measure_machine_peaks(device: Union[str, torch.device] = "cpu", *,
                          buffer_bytes: Optional[int] = None, matmul_n: Optional[int] = None,
                          repeats: int = 7, threads: Optional[int] = None,
                          dtypes: Sequence[str] = ("float32", "bfloat16"),
                          sizes: Sequence[int] = ()) -> MachinePeaks:
    """Measure (never from the cache) the matmul peaks in `dtypes` and the three bandwidths.

    sizes: also measure the read bandwidth at these buffer sizes (`MachinePeaks.by_size`).
    """
    dev = resolve_device(device)
    n = int(matmul_n or (8192 if dev.type == "cuda" else 2048))
    if n < 16:
        raise ValueError(f"matmul_n must be >= 16, not {matmul_n!r}")
    nbytes = buffer_bytes if buffer_bytes is not None else default_buffer_bytes(dev)
    with using_threads(threads) as n_threads:
        flops, flops_median, timer = {}, {}, ""
        for name in dtypes:
            dt = resolve_dtype(name, dev)
            gen = torch.Generator(device=dev).manual_seed(0)
            a = torch.randn(n, n, device=dev, dtype=dt, generator=gen)
            b = torch.randn(n, n, device=dev, dtype=dt, generator=gen)
            out = torch.empty(n, n, device=dev, dtype=dt)
            times, timer = time_runs(lambda: torch.mm(a, b, out=out), dev, repeats)
            del a, b, out
            flops[dtype_name(dt)] = 2.0 * n ** 3 / min(times)
            flops_median[dtype_name(dt)] = 2.0 * n ** 3 / statistics.median(times)
        bw = {m: measure_bandwidth(nbytes, m, device=dev, repeats=repeats) for m in METHODS}
        by_size = [measure_bandwidth(s, "read", device=dev, repeats=repeats) for s in sizes]
    return MachinePeaks(
        device=dev.type, device_name=device_name(dev), cpu_count=os.cpu_count() or 0,
        threads=n_threads, flops_per_s=flops, flops_per_s_median=flops_median, matmul_n=n,
        read=bw["read"], copy=bw["copy"], matvec=bw["matvec"],
        measured_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        torch_version=torch.__version__, load_average=_load_average(), by_size=by_size)


def _load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # not on this platform
        return []
