"""Energy per token, where the machine exposes an energy counter — and a plain "none here" where
it does not: a number is never invented.

    with perf.energy_meter() as meter:            # "cpu": RAPL; "cuda" or "cuda:N": NVML
        sweep = perf.batch_size_sweep(lm, [1, 8], progress=False)
    print(meter.energy)                           # joules and watts, or why there is no counter
    meter.energy.per_token(tokens)                # joules per token, or None

Two kinds of counter, read before and after whatever runs inside the `with`:

- **RAPL** (Running Average Power Limit), on Intel and recent AMD CPUs: Linux exposes it under
  `/sys/class/powercap/intel-rapl:N/`, where `energy_uj` counts the microjoules CPU package N
  has used, up to `max_energy_range_uj`, then starts again from 0. The meter reads every
  package (zones named `package-*`; the platform zone `psys` overlaps them and is left out),
  adds one range where a counter went back (a wraparound), and sums the packages. It counts
  the CPU packages — cores, caches, the memory controller — not the DRAM, disks, fans or power
  supply; and every process on them (a server in another process included, and on a shared
  host, other tenants too). Since Linux 5.10 `energy_uj` is readable only by root (a side
  channel, CVE-2020-8694). Virtual machines rarely pass RAPL through: on most cloud VMs the
  folder is absent.
- **NVML** on NVIDIA GPUs (Volta and newer): `nvmlDeviceGetTotalEnergyConsumption`, the
  board's millijoules since the driver loaded, read through `pynvml` (the nvidia-ml-py package)
  only if it is importable — viz does not depend on it.

A counter can wrap only once unnoticed: the common RAPL range (262,143 J) lasts about 45 minutes
at 100 W, so measure runs shorter than that. Lesson 10 (what a token costs).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Union

from viz import checks

POWERCAP = "/sys/class/powercap"
NO_COUNTER = "this machine exposes no energy counter"


@dataclass
class Energy:
    """What one measurement used, or why it could not be read."""

    joules: Optional[float]  # None: no counter could be read (`missing` says why)
    seconds: float  # wall time between the two readings
    counter: str  # what was read, e.g. "RAPL package-0" or "NVML, GPU 0 (NVIDIA H200)"
    missing: str = ""  # why there is no number ("" when there is one)
    wrapped: int = 0  # counters that went back to 0 during the measurement (added back)

    @property
    def watts(self) -> Optional[float]:
        """The average power: joules ÷ seconds."""
        return self.joules / self.seconds if self.joules is not None and self.seconds > 0 else None

    def per_token(self, tokens: int) -> Optional[float]:
        """Joules per token for `tokens` made during the measurement (None without a counter)."""
        checks.whole("tokens", tokens, 1)
        return None if self.joules is None else self.joules / tokens

    def text(self, tokens: Optional[int] = None) -> str:
        """e.g. "412 J in 10.2 s (40.4 W, RAPL package-0): 0.52 J per token (144 Wh per
        million)", or the reason there is no number."""
        if self.joules is None:
            return self.missing
        text = f"{self.joules:,.1f} J in {self.seconds:.1f} s ({self.watts:.1f} W, {self.counter})"
        if tokens is not None:
            j = self.per_token(tokens)
            text += f": {j:.3g} J per token ({j * 1e6 / 3600:,.0f} Wh per million)"
        return text

    def __str__(self) -> str:
        return self.text()


# ---- RAPL ------------------------------------------------------------------------------------
def _read_int(path: Path) -> int:
    return int(path.read_text().strip())


def _rapl(root: Path) -> tuple[Optional[Callable[[], dict]], str, str]:
    """(a reader of {zone: (microjoules, range)}, what it reads, "") or (None, "", why not)."""
    if not root.is_dir():
        return (
            None,
            "",
            (
                f"{NO_COUNTER}: RAPL not found under {root} (virtual machines rarely "
                "pass it through)"
            ),
        )
    zones = sorted(
        (p for p in root.iterdir() if re.fullmatch(r"intel-rapl:\d+", p.name)),
        key=lambda p: int(p.name.split(":")[1]),
    )
    if not zones:
        return None, "", f"{NO_COUNTER}: no RAPL zone (intel-rapl:N) under {root}"

    def name(zone: Path) -> str:
        try:
            return (zone / "name").read_text().strip()
        except OSError:
            return zone.name

    named = [(z, name(z)) for z in zones]
    packages = [(z, n) for z, n in named if n.startswith("package")] or [
        (z, n) for z, n in named if n != "psys"
    ]
    if not packages:
        return None, "", f"{NO_COUNTER}: RAPL under {root} has no CPU package zone"

    def read() -> dict:
        out = {}
        for zone, n in packages:
            out[n] = (_read_int(zone / "energy_uj"), _range(zone))
        return out

    try:
        read()
    except PermissionError as e:
        return (
            None,
            "",
            (
                f"RAPL found under {root}, but {e.filename or 'its energy_uj'} is "
                "readable only by root here (Linux 5.10 and later restrict it): run as "
                f"root, or `sudo chmod a+r {root}/intel-rapl:*/energy_uj` for this "
                "session (it lets every user read the counter)"
            ),
        )
    except (OSError, ValueError) as e:
        return None, "", f"RAPL found under {root}, but its energy_uj cannot be read: {e}"
    return read, "RAPL " + " + ".join(n for _, n in packages), ""


def _range(zone: Path) -> Optional[int]:
    try:
        return _read_int(zone / "max_energy_range_uj")
    except (OSError, ValueError):
        return None


def counter_delta(before: int, after: int, max_range: Optional[int]) -> Optional[int]:
    """Microjoules between two readings of a counter that runs from 0 to `max_range` and then
    starts again: after − before, or, where it went back, what was left of the range before
    plus what it counted after (one wraparound). None where it went back and the range is
    unknown."""
    if after >= before:
        return after - before
    if not max_range or before > max_range:
        return None
    return max_range - before + after


# ---- NVML ------------------------------------------------------------------------------------
def _nvml(index: int) -> tuple[Optional[Callable[[], dict]], str, str]:
    try:
        import pynvml
    except ImportError:
        return (
            None,
            "",
            (
                f"{NO_COUNTER} that viz can read: NVML's Python module, pynvml, is "
                "not installed (pip install nvidia-ml-py, or pip install .[gpu])"
            ),
        )
    error = getattr(pynvml, "NVMLError", Exception)
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        gpu = pynvml.nvmlDeviceGetName(handle)
        gpu = gpu.decode() if isinstance(gpu, bytes) else str(gpu)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except error as e:
        return (
            None,
            "",
            (
                f"NVML gives no energy counter for GPU {index}: {e} (it needs a "
                "Volta or newer NVIDIA GPU and its driver)"
            ),
        )

    def read() -> dict:  # millijoules → microjoules; a 64-bit counter: no wraparound
        return {"gpu": (int(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)) * 1000, None)}

    return read, f"NVML, GPU {index} ({gpu})", ""


def _reader(device: str, root: Union[str, Path]) -> tuple[Optional[Callable[[], dict]], str, str]:
    device = str(device)
    if device == "cpu":
        return _rapl(Path(root))
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if m:
        return _nvml(int(m.group(1) or 0))
    return (
        None,
        "",
        (
            f"no energy counter is read on {device!r}: viz reads RAPL on a CPU "
            "('cpu') and NVML on an NVIDIA GPU ('cuda')"
        ),
    )


def energy_counter(device: str = "cpu", root: Union[str, Path] = POWERCAP) -> str:
    """One line: the counter this machine offers for `device`, or why there is none."""
    read, what, why = _reader(device, root)
    return f"energy counter: {what}" if read else why


class EnergyMeter:
    """A context manager: reads the counter on entry and on exit; `energy` is then set (an
    `Energy`, with joules None and the reason where there is no counter). An error inside the
    `with` still propagates."""

    def __init__(self, device: str = "cpu", root: Union[str, Path] = POWERCAP):
        self.device, self.root = device, root
        self.energy: Optional[Energy] = None

    def __enter__(self) -> "EnergyMeter":
        self._read, self._what, self._why = _reader(self.device, self.root)
        self._before = self._safe_read()
        self._t0 = time.perf_counter()
        return self

    def _safe_read(self) -> Optional[dict]:
        if self._read is None:
            return None
        try:
            return self._read()
        except (OSError, ValueError) as e:
            self._why = f"the energy counter ({self._what}) could not be read: {e}"
            return None

    def __exit__(self, *exc: Any) -> bool:
        seconds = time.perf_counter() - self._t0
        after = self._safe_read() if self._before is not None else None
        if self._before is None or after is None:
            self.energy = Energy(None, seconds, self._what, self._why)
            return False
        total, wrapped = 0, 0
        for zone, (b, _) in self._before.items():
            a, max_range = after[zone]
            delta = counter_delta(b, a, max_range)
            if delta is None:
                self.energy = Energy(
                    None,
                    seconds,
                    self._what,
                    f"{zone}'s counter went back and its range is unknown: measure again",
                )
                return False
            wrapped += a < b
            total += delta
        self.energy = Energy(total / 1e6, seconds, self._what, "", wrapped)
        return False


def energy_meter(device: str = "cpu", root: Union[str, Path] = POWERCAP) -> EnergyMeter:
    """`with energy_meter() as m: ...` then `m.energy` (module docstring)."""
    return EnergyMeter(device, root)
