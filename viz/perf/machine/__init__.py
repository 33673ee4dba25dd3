"""The machine room: this machine's ceilings and fixed cost, measured once and reused.

Every verdict in the course divides a measured time by figures of the machine it ran on: the
peak FLOP/s of a matrix product, the read bandwidth and the fixed cost of a pass. They are
measured here, once per machine, saved in one file per machine and kind (`cache.py`), and
printed together by `yardsticks()`; the vendors' datasheet figures sit beside them.

    from viz import perf
    peaks = perf.machine_peaks()     # matmul per dtype, read/copy/matvec bandwidth (lesson 08)
    fixed = perf.fixed_cost(30)      # seconds per 30-layer decode step, with its spread
    print(perf.yardsticks())         # the three figures every verdict divides by, in one line

| module | its one job |
|---|---|
| `cache.py` | one file per machine: where it lives, its key (`machine_key`), reading it back |
| `bandwidth.py` | memory bandwidth measured the way decode reads |
| `matmul.py` | peak FLOP/s of a matrix product in one dtype, sized to the machine |
| `peaks.py` | this machine's peaks: measured, cached, checked on reuse; the roofline's `Peaks` |
| `kernel_time.py` | a lesson's own small kernel, timed the way the peaks are |
| `fixed_costs.py` | the fixed cost per step: its method (tiny-width models), the cached figure |
| `datasheets.py` | vendors' peak FLOP/s and bandwidth by hardware generation (`H100_SXM` too) |
| `yardstick_line.py` | the peaks and the fixed cost every verdict divides by, in one line |
"""

from viz.perf.machine.bandwidth import (
    Bandwidth,
    bandwidth_by_size,
    default_buffer_bytes,
    measure_bandwidth,
)
from viz.perf.machine.cache import (
    MachineCache,
    cache_file,
    machine_key,
    measurements_dir,
    same_machine,
)
from viz.perf.machine.datasheets import (
    DATASHEETS,
    H100_SXM,
    Datasheet,
    datasheet,
    generations_table,
    generations_text,
    growth,
)
from viz.perf.machine.fixed_costs import (
    NARROW_VOCAB,
    NARROW_WIDTH,
    FixedCosts,
    OverheadFloor,
    fixed_cost,
    fixed_costs_path,
    machine_overhead,
    measure_overhead,
    narrow_config,
)
from viz.perf.machine.kernel_time import kernel_spread, linear_seconds, linear_spread, time_kernel
from viz.perf.machine.matmul import BUDGET_S, Matmul, measure_matmul
from viz.perf.machine.peaks import (
    MachinePeaks,
    Peaks,
    cached_peaks,
    machine_peaks,
    measure_machine_peaks,
    measure_peaks,
    peaks_from_machine,
    peaks_path,
)
from viz.perf.machine.yardstick_line import Yardsticks, yardsticks

__all__ = [
    "Bandwidth",
    "bandwidth_by_size",
    "default_buffer_bytes",
    "measure_bandwidth",
    "MachineCache",
    "cache_file",
    "machine_key",
    "measurements_dir",
    "same_machine",
    "DATASHEETS",
    "H100_SXM",
    "Datasheet",
    "datasheet",
    "generations_table",
    "generations_text",
    "growth",
    "NARROW_VOCAB",
    "NARROW_WIDTH",
    "FixedCosts",
    "OverheadFloor",
    "fixed_cost",
    "fixed_costs_path",
    "machine_overhead",
    "measure_overhead",
    "narrow_config",
    "kernel_spread",
    "linear_seconds",
    "linear_spread",
    "time_kernel",
    "BUDGET_S",
    "Matmul",
    "measure_matmul",
    "MachinePeaks",
    "Peaks",
    "cached_peaks",
    "machine_peaks",
    "measure_machine_peaks",
    "measure_peaks",
    "peaks_from_machine",
    "peaks_path",
    "Yardsticks",
    "yardsticks",
]
