"""`perf.yardsticks()`: the peaks and the fixed cost every verdict divides by, in one line that
every judging lesson prints (tests/test_notebooks.py checks the saved lessons agree on it)."""

from __future__ import annotations

import pytest

from conftest import fake_machine_peaks
from viz import perf
from viz.perf.machine import yardstick_line as module  # the module of perf.yardsticks()
from viz.spread import Spread


def test_the_line_holds_the_three_figures_with_their_spreads(monkeypatch):
    peaks = fake_machine_peaks(
        read=30e9,
        flops={"float32": 90e9},
        spread=0.06,
        threads=2,
        device_name="Intel(R) Xeon(R) Platinum 8480+",
    )
    fixed = Spread.of([7.0e-3, 7.5e-3, 8.0e-3, 7.5e-3])
    monkeypatch.setattr(module, "machine_peaks", lambda device, threads=None: peaks)
    monkeypatch.setattr(module, "fixed_cost", lambda n, dtype, **kw: fixed)
    y = perf.yardsticks(30)
    assert (y.flops, y.read, y.fixed) == (peaks.matmul["float32"].spread, peaks.read.spread, fixed)
    line = str(y)
    assert line.startswith(
        "yardsticks: Xeon Platinum 8480+ · 2 threads · float32 peak 90.0 GFLOP/s ("
    )
    assert f"read {peaks.read.spread.text(1e-9, 'GB/s', runs=False)}" in line
    assert "fixed cost 7.5 ms (7.4–7.6) per 30-layer pass" in line
    assert line.endswith("measured 2026-01-01 00:00 UTC") and "\n" not in line


def test_a_dtype_without_a_peak_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(
        module,
        "machine_peaks",
        lambda device, threads=None: fake_machine_peaks(flops={"float32": 9e10}),
    )
    with pytest.raises(ValueError, match=r"no matmul peak measured in 'bfloat16'"):
        perf.yardsticks(dtype="bfloat16")


def test_on_this_machine_it_is_what_the_lessons_use():
    y = perf.yardsticks(2)
    machine = perf.machine_peaks()
    assert y.read == machine.read.spread and y.flops == machine.matmul["float32"].spread
    assert y.fixed == perf.fixed_cost(2)
    assert str(perf.yardsticks(2)) == str(y)  # measured once, then the same line
