"""The fixed cost per step, measured once per machine: measured the first time, read back
afterwards (in this process and the next), extended depth by depth, never reused from another
machine, and measured again on request."""

import json

import pytest

from viz import Spread, perf
from viz.perf.machine import fixed_costs as fc


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VIZ_MEASURE_DIR", str(tmp_path))
    fc.forget_in_process()
    yield tmp_path
    fc.forget_in_process()


def no_measuring(*args, **kwargs):
    raise AssertionError("measured again, but the cache had it")


def test_measured_once_then_reused(cache, monkeypatch):
    floor = perf.machine_overhead("float32", [1, 2], progress=False)
    assert floor.layers == [1, 2] and len(floor.spreads) == 2
    assert all(
        isinstance(x, Spread) and x.runs == fc.REPEATS * (fc.MAX_NEW_TOKENS - 1)
        for x in floor.spreads
    )
    assert floor.seconds == [x.median for x in floor.spreads]
    path = fc.fixed_costs_path()
    assert path.is_file() and path.parent == cache / "fixed-cost"
    monkeypatch.setattr(fc, "measure_overhead", no_measuring)
    assert perf.fixed_cost(2, progress=False) == floor.spreads[1]  # this process: no measuring
    fc.forget_in_process()  # as a new process would
    again = perf.machine_overhead("float32", [2, 1], progress=False)
    assert again.layers == [1, 2] and again.spreads == floor.spreads  # read from the file
    saved = json.loads(path.read_text())
    assert saved["kind"] == "llm-inference-fixed-costs" and "float32/2" in saved["measured_at"]


def test_a_new_depth_is_added_and_others_kept(cache, monkeypatch):
    one = perf.machine_overhead("float32", [1], progress=False)
    both = perf.machine_overhead("float32", [1, 3], progress=False)
    assert both.spreads[0] == one.spreads[0] and both.layers == [1, 3]
    redo = perf.machine_overhead("float32", [3], refresh=True, progress=False)
    assert redo.layers == [3]
    fc.forget_in_process()
    monkeypatch.setattr(fc, "measure_overhead", no_measuring)
    kept = perf.machine_overhead("float32", [1, 3], progress=False)  # depth 1 survived
    assert kept.spreads[0] == one.spreads[0] and kept.spreads[1] == redo.spreads[0]


def test_a_file_from_another_machine_is_not_reused(cache):
    perf.machine_overhead("float32", [1], progress=False)
    path = fc.fixed_costs_path()
    data = json.loads(path.read_text())
    data["environment"]["cpu_features"] = ["not", "this", "cpu"]  # schema 2: in environment
    path.write_text(json.dumps(data))
    fc.forget_in_process()
    calls = []
    real = fc.measure_overhead
    fc.measure_overhead = lambda *a, **k: calls.append(a) or real(*a, **k)
    try:
        perf.machine_overhead("float32", [1], progress=False)
    finally:
        fc.measure_overhead = real
    assert calls == [([1], "float32")]


def test_bad_depths(cache):
    with pytest.raises(ValueError, match="depths must be a non-empty list of whole numbers"):
        perf.machine_overhead("float32", [])
    with pytest.raises(ValueError, match="depths must be a non-empty list of whole numbers"):
        perf.fixed_cost(0)
