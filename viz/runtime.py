"""Where code runs and how it is timed: device, dtype, threads, clocks and device memory.

Everything that measures time in viz (record, sweeps, peaks, batches) takes its clock, its
thread count and its device from here, so a measurement always says how it was made.

- **device / dtype**: `resolve_device("auto")` picks cuda, then mps, then cpu;
  `resolve_dtype(None, device)` is float32 on CPU and MPS, bfloat16 on CUDA.
- **threads**: on a CPU every timing depends on how many threads torch's kernels use.
  `using_threads(n)` sets them for a block and restores them after; `threads=` on every
  measuring function goes through it, and the count is recorded in each result.
- **clocks**: `Clock` reads the time only after the device finished its queued work (CUDA and
  MPS run kernels asynchronously); `time_runs` times repeated calls (CUDA events on a GPU).
- **memory**: `memory_start` / `memory_end` read the CUDA allocator around a recording.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

import torch

from viz import checks
from viz.provenance import utc_now
from viz.trace import Environment, Memory
from viz.version import __version__

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


# ---- device and dtype ---------------------------------------------------------------------
def resolve_device(device: Union[str, torch.device] = "auto") -> torch.device:
    """ "auto" picks cuda, then mps, then cpu; an explicit device must exist here."""
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise ValueError(f"device must be a string such as 'auto', 'cpu' or 'cuda', not {device!r}")
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'mps'") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA is not available on this machine: use device='cpu' or 'auto'")
    if dev.type == "mps" and not _mps_available():
        raise ValueError("MPS is not available on this machine: use device='cpu' or 'auto'")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unsupported device {device!r}: use 'auto', 'cpu', 'cuda' or 'mps'")
    return dev


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def resolve_dtype(dtype: Union[None, str, torch.dtype], device: torch.device) -> torch.dtype:
    """None → float32 on CPU and MPS, bfloat16 on CUDA (what GPUs serve in)."""
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        if dtype in DTYPES.values():
            return dtype
        dtype = str(dtype)
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in DTYPES:
        return DTYPES[dtype.removeprefix("torch.")]
    raise ValueError(f"unsupported dtype {dtype!r}: use one of {sorted(DTYPES)}")


def dtype_name(dtype: torch.dtype) -> str:
    """ "float32" for torch.float32."""
    return str(dtype).removeprefix("torch.")


def device_name(device: torch.device) -> str:
    """The device's model name: the CPU's (from /proc/cpuinfo) or the GPU's."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (mps)"
    return cpu_name()


def cpu_name() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what the platform reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


SHORT_NAME_CHARS = 24  # a short name's longest (an ellipsis included): it fits a legend entry
# What short_device_name removes, in order. Marks and words that say nothing about which chip
# it is; the vendor where the product name says it already (a Xeon is Intel's, an RTX
# NVIDIA's); the clock and core count (fixed by the model number); an APU's graphics.
_NOISE = (
    r"\((?:R|TM|C)\)|[®™©]",  # "Intel(R) Core(TM)"
    r"@.*$",  # "@ 2.80GHz": the clock, and anything after it
    r"\b(?:w/|with)\s+Radeon\b.*$",  # "w/ Radeon 780M Graphics", "with Radeon Graphics"
    r"\b\d+-Cores?(?:\s+Processor)?\b",  # "64-Core Processor"
    r"\b\d+(?:st|nd|rd|th)\s+Gen\b",  # "13th Gen"
    r"\brev\s+\w+(?:\s+\(\w+\))?",  # Arm Linux: "ARMv8 Processor rev 1 (v8l)"
    r"\b(?:Intel|AMD|NVIDIA|GeForce|Processor|CPU)\b",
)


def short_device_name(name: str) -> str:
    """A CPU's or GPU's model name in a few words, for a figure's legend or title:
    "Intel(R) Xeon(R) Processor" → "Xeon", "AMD EPYC 7B13 64-Core Processor" → "EPYC 7B13",
    "NVIDIA GeForce RTX 4090 Laptop GPU" → "RTX 4090 Laptop GPU", "Apple M3 Max" unchanged.

    Rules, not a table of models: drops "(R)", "(TM)", the clock ("@ 2.80GHz"), the core count
    ("64-Core Processor"), an APU's graphics ("w/ Radeon 780M Graphics"), a generation ("13th
    Gen"), Arm Linux's "rev 1 (v8l)", the words "Processor" and "CPU" and the vendors Intel,
    AMD, NVIDIA and GeForce; collapses spaces; cuts what is left at a word to at most
    `SHORT_NAME_CHARS` characters, ending in "…". Never empty: the input's first word, or
    "CPU". Stored results keep the full name (`device_name`); this is only what is drawn.
    Lessons 06 and 07 draw it (the roofline, a trace beside a reference).
    """
    import re

    text = re.sub(r"\s+", " ", str(name or "")).strip()
    short = text
    for pattern in _NOISE:
        short = re.sub(pattern, " ", short, flags=re.IGNORECASE)
    short = re.sub(r"\s+", " ", short).strip(" -,/")
    if not short:  # nothing but noise ("Intel(R) Processor"): its first word, cleaned
        words = re.sub(_NOISE[0], "", text).split()
        short = words[0] if words else "CPU"
    if len(short) <= SHORT_NAME_CHARS:
        return short
    cut = short[: SHORT_NAME_CHARS - 1]
    if short[SHORT_NAME_CHARS - 1] != " " and " " in cut:  # end at a whole word
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" -,/") + "…"


# The instruction-set features that decide how fast torch's CPU kernels run, as Linux's
# /proc/cpuinfo spells them: x86 (AVX2 and FMA; AVX-512 and its bfloat16 and VNNI extensions;
# AMX tiles) and Arm (NEON is "asimd"; SVE; the bfloat16 and int8 matrix extensions).
CPU_FEATURES = (
    "avx2",
    "fma",
    "f16c",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "asimdhp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)
# Environment variables that make torch use fewer instructions than the CPU has: the way an
# AVX-512 machine stands in for an AVX2-only one (ATEN_CPU_CAPABILITY=avx2
# ONEDNN_MAX_CPU_ISA=AVX2). Recorded with every measurement, since they change its results.
ISA_OVERRIDES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def cpu_features() -> list[str]:
    """The CPU's instruction-set features that matter to torch's kernels (`CPU_FEATURES`), as
    /proc/cpuinfo lists them; [] where there is no /proc/cpuinfo (macOS, Windows)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):  # x86 says "flags", Arm "Features"
            flags.update(value.split())
    return [f for f in CPU_FEATURES if f in flags]


def cpu_capability() -> str:
    """The vector instructions torch's own CPU kernels use here, e.g. "AVX512" or "AVX2", with
    any override in the environment, e.g. "AVX2 (ATEN_CPU_CAPABILITY=avx2,
    ONEDNN_MAX_CPU_ISA=AVX2)"."""
    try:
        used = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):
        used = "unknown"
    overrides = [f"{k}={os.environ[k]}" for k in ISA_OVERRIDES if os.environ.get(k)]
    return f"{used} ({', '.join(overrides)})" if overrides else used


def environment(
    device: torch.device, dtype: str, *, source: str = "measured by viz"
) -> Environment:
    """Describe the machine, software and thread count a measurement ran with, now
    (`utc_now`), and what measured it (`source`, e.g. "measured by viz.perf.machine_peaks")."""
    import transformers

    return Environment(
        device=device.type,
        device_name=device_name(device),
        dtype=dtype,
        threads=torch.get_num_threads(),
        torch_version=torch.__version__,
        transformers_version=transformers.__version__,
        python_version=platform.python_version(),
        platform=platform.platform(),
        viz_version=__version__,
        cpu_features=cpu_features(),
        cpu_capability=cpu_capability(),
        measured_at=utc_now(),
        source=source,
    )


@contextlib.contextmanager
def using_threads(threads: Optional[int]) -> Iterator[int]:
    """Run the block with torch's intra-op thread count set to `threads`, then restore it.

    None leaves the count as it is. Yields the count in effect (what a result records).
    """
    checks.threads(threads)
    before = torch.get_num_threads()
    if threads is not None and threads != before:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


# ---- clocks -------------------------------------------------------------------------------
class Clock:
    """Reads the time after the device has finished its queued work.

    On CUDA (and MPS) kernels run asynchronously: without a synchronize the clock would time
    only the launch. `clock` can be injected (tests pass a fake one).
    """

    def __init__(self, device: torch.device, clock: Optional[Callable[[], float]] = None):
        self._read = clock or time.perf_counter
        self._sync = {
            "cuda": torch.cuda.synchronize,
            "mps": getattr(getattr(torch, "mps", None), "synchronize", None),
        }.get(device.type)
        name = "injected" if clock else "perf_counter"
        self.name = f"{name}+{device.type}.synchronize" if self._sync else name

    def now(self) -> float:
        if self._sync is not None:
            self._sync()
        return self._read()


def time_runs(
    fn: Callable[[], object], device: torch.device, repeats: int, warmup: int = 1
) -> tuple[list[float], str]:
    """Seconds of each of `repeats` calls of `fn` (after `warmup` untimed ones), and the timer.

    CUDA: events recorded on the stream around each call (device time, not launch time).
    Elsewhere: `Clock`, which synchronizes the device before reading perf_counter.
    """
    for _ in range(warmup):
        fn()
    times = []
    if device.type == "cuda":
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1000.0)  # elapsed_time is in milliseconds
        return times, "cuda events"
    clock = Clock(device)
    for _ in range(repeats):
        t0 = clock.now()
        fn()
        times.append(clock.now() - t0)
    return times, clock.name


# ---- the compiler's machine check ---------------------------------------------------------
def vector_check(device: torch.device, backend: str) -> float:
    """Inductor's check of which vector instructions its C++ may use on this CPU, made now, in
    the usual Inductor cache folder: the seconds it took (`viz.perf.compiled`'s docstring).
    Inductor makes it once per process (`cpu_vec_isa.valid_vec_isa_list` is cached) and would
    otherwise make it inside the first compile; 0.0 where no C++ is built (a GPU device, or a
    backend other than "inductor")."""
    if device.type != "cpu" or backend != "inductor":
        return 0.0
    from torch._inductor import cpu_vec_isa

    start = time.perf_counter()
    cpu_vec_isa.pick_vec_isa()
    return time.perf_counter() - start


# ---- device memory ------------------------------------------------------------------------
# A collection's cost grows with every object the process holds (~0.1 s with torch imported,
# ~0.25 s beside three million objects: a long notebook kernel, a test session), and it can only
# matter when what was freed (or is about to be made) is large.
COLLECT_MIN_BYTES = 16 * 2**20


def release_memory(at_stake_bytes: Optional[int] = None) -> bool:
    """Hand memory that Python and torch have freed back to the operating system.

    A freed CPU tensor's memory often stays with the process: glibc's allocator keeps
    freed blocks of up to 32 MB for reuse, and after a long prefill or a large cache those
    blocks are scattered, so the resident size (what Binder's 2 GB limit counts) stays at
    its high-water mark and the next large allocation adds to it. `gc.collect()` frees
    what cycles still hold; glibc's `malloc_trim(0)` returns every free page. Called by the
    long-context sweeps between their large allocations (lesson 11).

    at_stake_bytes: the size of what was just freed or is about to be made (a cache, a
    model's weights), when the caller knows it. Under `COLLECT_MIN_BYTES` (16 MiB) the
    collection is skipped (a tiny model's sweeps called it dozens of times, each ~0.1-0.25 s
    for nothing) and only the trim runs (well under a millisecond). None: always collect.
    Returns True if trim ran (glibc), False elsewhere (macOS, musl: only the collection ran).
    """
    import ctypes
    import gc

    if at_stake_bytes is not None:
        checks.whole(
            "at_stake_bytes",
            at_stake_bytes,
            0,
            noun="a number of bytes",
            fix="the size of what was freed, or leave it out to always collect",
        )
    if at_stake_bytes is None or at_stake_bytes >= COLLECT_MIN_BYTES:
        gc.collect()
    if platform.system() != "Linux":
        return False
    try:
        # by name: ctypes.util.find_library would run `ldconfig` in a child process, a fork of
        # this (large) one
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
        return True
    except (OSError, AttributeError):
        return False


def memory_start(device: torch.device) -> Memory:
    """Reset the CUDA peak counter and note what is allocated now (the weights). CUDA only."""
    if device.type != "cuda":
        return Memory()
    torch.cuda.reset_peak_memory_stats(device)
    return Memory(device_weights_bytes=torch.cuda.memory_allocated(device))


def memory_end(device: torch.device, memory: Memory) -> Memory:
    """`memory` with the peak and the final allocation added. CUDA only."""
    if device.type != "cuda":
        return memory
    torch.cuda.synchronize(device)
    return Memory(
        device_weights_bytes=memory.device_weights_bytes,
        device_peak_bytes=torch.cuda.max_memory_allocated(device),
        device_end_bytes=torch.cuda.memory_allocated(device),
    )
