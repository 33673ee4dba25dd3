"""The memory wall: the regime rule on hand-made points, the fit on synthetic points, the
fixed-cost floor, bandwidth measured and cached, runs measured and computed, the view,
prompt-lookup decoding. Expected numbers are worked out here, independently of the code."""

import dataclasses
import json
import math
import os
from dataclasses import replace

import numpy as np
import pytest
import torch

from viz.perf import wall, wall_point
from viz.perf.counts import decode_cost
from viz.perf.machine import (
    MachinePeaks,
    OverheadFloor,
    bandwidth,
    cache,
    fixed_costs,
    matmul,
    peaks,
)
from viz.perf.regime import OVERHEAD_SHARE, explain_regime, regime
from viz.perf.wall import WallRun, computed_wall, fit_wall
from viz.perf.wall_point import WallPoint
from viz.views.wall import wall_data, wall_figure

from conftest import fake_machine_peaks, tiny_config

MS = 1e-3


# ---- the rule: one point per regime, and the boundaries ------------------------------------
@pytest.mark.parametrize(
    "t, m, c, f, expected",
    [
        (10 * MS, 0.1 * MS, 0.01 * MS, 8 * MS, "overhead-bound"),  # fixed cost is 80 % of the step
        (44 * MS, 20 * MS, 1.4 * MS, 8 * MS, "memory-bound"),  # bytes dominate, F = 18 %
        (200 * MS, 25 * MS, 90 * MS, 26 * MS, "compute-bound"),  # arithmetic outlasts the bytes
        # boundaries
        (10 * MS, 1 * MS, 0, 5 * MS, "overhead-bound"),  # F = t/2 exactly: overhead
        (10 * MS, 1 * MS, 0, 4.999 * MS, "memory-bound"),  # just under half: not overhead
        (10 * MS, 3 * MS, 3 * MS, 1 * MS, "compute-bound"),  # C = M exactly: compute
        (10 * MS, 3 * MS, 2.999 * MS, 1 * MS, "memory-bound"),  # C just under M: memory
        (5 * MS, 1 * MS, 0, 6 * MS, "overhead-bound"),  # F > t (noise): still overhead
        (10 * MS, 2 * MS, 0, 0, "memory-bound"),  # no fixed cost at all
    ],
)
def test_regime_rule_on_hand_made_points(t, m, c, f, expected):
    assert regime(t, m, c, f) == expected
    assert explain_regime(t, m, c, f).startswith(expected + ":")


def test_regime_threshold_is_a_parameter():
    assert OVERHEAD_SHARE == 0.5
    assert regime(10 * MS, 1 * MS, 0, 3 * MS, overhead_share=0.3) == "overhead-bound"
    assert regime(10 * MS, 1 * MS, 0, 3 * MS, overhead_share=0.31) == "memory-bound"
    assert "0.3 ×" in explain_regime(10 * MS, 1 * MS, 0, 3 * MS, overhead_share=0.3)


def test_explain_names_the_numbers_that_decided():
    text = explain_regime(44 * MS, 20 * MS, 1.4 * MS, 8 * MS)
    assert text == (
        "memory-bound: fixed cost 8.00 ms < half of 44.00 ms, and memory floor "
        "20.00 ms > compute floor 1.40 ms"
    )


@pytest.mark.parametrize(
    "args, kw, match",
    [
        ((0, 1, 0, 0), {}, "seconds must be > 0"),
        ((-1, 1, 0, 0), {}, "seconds must be > 0"),
        ((1, 0, 0, 0), {}, "memory_floor_s must be > 0"),
        ((1, 1, -1, 0), {}, "compute_floor_s must be >= 0"),
        ((1, 1, 0, -0.1), {}, "fixed_cost_s must be >= 0"),
        ((float("nan"), 1, 0, 0), {}, "seconds must be a finite number"),
        ((1, float("inf"), 0, 0), {}, "memory_floor_s must be a finite number"),
        (("1", 1, 0, 0), {}, "seconds must be a finite number"),
        ((True, 1, 0, 0), {}, "seconds must be a finite number"),
        ((1, 1, 0, 0), {"overhead_share": 0}, r"overhead_share must be a fraction in \(0, 1\]"),
        ((1, 1, 0, 0), {"overhead_share": 1.5}, r"overhead_share must be a fraction in \(0, 1\]"),
    ],
)
def test_regime_bad_input(args, kw, match):
    with pytest.raises(ValueError, match=match):
        regime(*args, **kw)


# ---- the fit ---------------------------------------------------------------------------------
def test_fit_recovers_a_known_line_exactly():
    fixed, bw = 7.8e-3, 15e9  # 7.8 ms + bytes / 15 GB/s
    xs = [5e6, 50e6, 270e6, 540e6, 2.47e9]
    fit = fit_wall(xs, [fixed + x / bw for x in xs])
    assert fit.fixed_s == pytest.approx(fixed, rel=1e-9)
    assert fit.bytes_per_s == pytest.approx(bw, rel=1e-9)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.points == 5
    assert fit.predict_s(1e9) == pytest.approx(fixed + 1e9 / bw)
    assert str(fit).startswith("TPOT ≈ 7.80 ms + bytes ÷ 15.0 GB/s")


def test_a_line_through_two_points_claims_no_fit():
    """Two points fix a line exactly (R² is 1 whatever they are): the text says so instead of
    printing an R² of 1.000 (issue 31: lesson 08's GPU line)."""
    fit = dataclasses.replace(fit_wall([1e9, 3e9], [0.010, 0.012]), dtype="bfloat16")
    assert fit.r_squared == pytest.approx(1.0)
    assert str(fit) == (
        "TPOT ≈ 9.00 ms + bytes ÷ 1000.0 GB/s (the line through 2 bfloat16 "
        "points: two points fix it, so it says nothing of how straight the "
        "wall is)"
    )
    assert "R²" in str(fit_wall([1e9, 2e9, 3e9], [0.010, 0.011, 0.012]))


def test_fit_with_noise_stays_close():
    rng = np.random.default_rng(0)
    fixed, bw = 8e-3, 20e9
    xs = np.geomspace(1e6, 5e9, 12)
    ys = (fixed + xs / bw) * (1 + 0.02 * rng.standard_normal(12))
    fit = fit_wall(list(xs), list(ys))
    assert fit.bytes_per_s == pytest.approx(bw, rel=0.05)
    assert 0.95 < fit.r_squared <= 1.0
    # the same line computed by hand: slope = cov(x, y) / var(x)
    slope = np.sum((xs - xs.mean()) * (ys - ys.mean())) / np.sum((xs - xs.mean()) ** 2)
    assert fit.seconds_per_byte == pytest.approx(slope, rel=1e-9)
    assert fit.fixed_s == pytest.approx(ys.mean() - slope * xs.mean(), rel=1e-9)


@pytest.mark.parametrize(
    "xs, ys, match",
    [
        ([1e6], [1e-3], "at least 2 points"),
        ([1e6, 2e6], [1e-3], "same length"),
        ([1e6, 1e6], [1e-3, 2e-3], "same number of bytes"),
        ([1e6, 2e6], [2e-3, 1e-3], "does not grow with the bytes"),
        ([1e6, -2e6], [1e-3, 2e-3], "step_bytes must be a finite number > 0"),
        ([1e6, 2e6], [1e-3, float("nan")], "seconds must be a finite number > 0"),
        ([1e6, 2e6], [0, 1e-3], "seconds must be a finite number > 0"),
    ],
)
def test_fit_bad_input(xs, ys, match):
    with pytest.raises(ValueError, match=match):
        fit_wall(xs, ys)


# ---- the fixed-cost floor --------------------------------------------------------------------
def test_overhead_floor_measured_depths_and_the_line_between():
    floor = OverheadFloor(
        dtype="float32",
        hidden_size=64,
        vocab_size=512,
        layers=[1, 16, 30],
        seconds=[0.7e-3, 4.6e-3, 8.24e-3],
    )
    assert floor.at(16) == 4.6e-3  # a measured depth is used as measured
    # least-squares line by hand over (1, .7), (16, 4.6), (30, 8.24) ms
    x, y = np.array([1, 16, 30.0]), np.array([0.7, 4.6, 8.24]) * 1e-3
    slope = np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2)
    assert floor.per_layer_s == pytest.approx(slope)
    assert floor.at(24) == pytest.approx(y.mean() + slope * (24 - x.mean()))
    single = OverheadFloor("float32", 64, 512, [30], [8e-3])
    assert single.at(30) == 8e-3 and single.per_layer_s is None
    with pytest.raises(ValueError, match="measured at \\[30\\] layers only"):
        single.at(16)
    with pytest.raises(ValueError, match="depths must increase"):
        OverheadFloor("float32", 64, 512, [30, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match="one time per depth"):
        OverheadFloor("float32", 64, 512, [1, 30], [1.0])


def test_narrow_config_keeps_depth_and_shrinks_width():
    entry = fixed_costs.narrow_config("smollm2-135m")
    c = entry["config"]
    assert c["num_hidden_layers"] == 30 and c["hidden_size"] == 64 and c["vocab_size"] == 512
    assert c["num_attention_heads"] * c["head_dim"] == 64
    assert fixed_costs.narrow_config("llama-3.2-1b", n_layers=1)["config"]["num_hidden_layers"] == 1
    wide = fixed_costs.narrow_config("smollm2-135m", 128, vocab_size=None)["config"]
    assert wide["vocab_size"] == 49152 and wide["num_attention_heads"] == 2
    with pytest.raises(ValueError, match="multiple of 8"):
        fixed_costs.narrow_config("smollm2-135m", 60)
    with pytest.raises(ValueError, match="n_layers must be a whole number >= 1"):
        fixed_costs.narrow_config("smollm2-135m", n_layers=0)
    with pytest.raises(ValueError, match="no config named"):
        fixed_costs.narrow_config("no-such-model")


# ---- a hand-made run ----------------------------------------------------------------------------
def _point(label, step_bytes, flops, seconds, fixed, dtype="float32", kind="shape", batch=1):
    return WallPoint(
        label=label,
        model=label,
        dtype=dtype,
        kind=kind,
        n_params=1,
        n_layers=30,
        hidden_size=64,
        context_tokens=20,
        step_bytes=step_bytes,
        step_flops=flops,
        seconds=seconds,
        seconds_min=seconds,
        seconds_max=seconds,
        steps_timed=16,
        fixed_cost_s=fixed,
        batch=batch,
    )


def _run(**kw):
    pts = [
        _point("tiny", 5_000_000, 10_000_000, 8e-3, 7.8e-3, kind="fixed cost"),
        _point("fp32", 540_000_000, 270_000_000, 44e-3, 7.8e-3),
        _point("bf16", 270_000_000, 270_000_000, 24e-3, 8.5e-3, dtype="bfloat16"),
        _point("fp32 B=32", 620_000_000, 8_600_000_000, 150e-3, 7.8e-3, batch=32),
    ]
    args = dict(
        label="hand-made",
        computed=False,
        device="cpu",
        device_name="Test CPU",
        threads=2,
        read_bytes_per_s=40e9,
        flops_per_s={"float32": 100e9, "bfloat16": 200e9},
        peaks_how="by hand",
        overhead=[
            OverheadFloor("float32", 64, 512, [30], [7.8e-3]),
            OverheadFloor("bfloat16", 64, 512, [30], [8.5e-3]),
        ],
        points=pts,
    )
    args.update(kw)
    return WallRun(**args)


def test_run_floors_mbu_and_regimes():
    run = _run()
    fp32 = run.point("fp32")
    assert run.memory_floor_s(fp32) == pytest.approx(540e6 / 40e9)  # 13.5 ms
    assert run.compute_floor_s(fp32) == pytest.approx(270e6 / 100e9)  # 2.7 ms
    assert run.compute_floor_s(run.point("bf16")) == pytest.approx(270e6 / 200e9)
    assert run.mbu(fp32) == pytest.approx(540e6 / 44e-3 / 40e9)  # 31 %
    assert run.regimes() == {
        "tiny": "overhead-bound",
        "fp32": "memory-bound",
        "bf16": "memory-bound",
        "fp32 B=32": "compute-bound",
    }
    assert [r["regime"] for r in run.rows()] == list(run.regimes().values())
    assert run.fixed_cost_s("bfloat16", 30) == 8.5e-3
    with pytest.raises(ValueError, match="no fixed cost measured in float16"):
        run.fixed_cost_s("float16", 30)
    with pytest.raises(ValueError, match="no point labelled 'x'"):
        run.point("x")
    text = str(run)
    assert "hand-made · Test CPU · 2 threads" in text and "compute-bound" in text
    # the one fit: the batch-1 model shapes the rule does not call compute-bound (not the
    # tiny fixed-cost model, not the batch of 32), in one number format, by hand
    assert [p.label for p in run.fit_points()] == ["fp32", "bf16"]
    with pytest.raises(ValueError, match="at least 2 model shapes at batch 1 in one number"):
        run.fit()  # one point per format: no line
    with pytest.raises(ValueError, match="a line needs at least 2 points, got 1"):
        run.fit("float32")
    more = WallRun(
        **{
            **run.__dict__,
            "points": run.points
            + [_point("360M fp32", 1_450_000_000, 720_000_000, 104e-3, 8.3e-3)],
        }
    )
    assert more.fit_dtype() == "float32"
    slope, intercept = np.polyfit([540e6, 1450e6], [44e-3, 104e-3], 1)
    fit = more.fit()
    assert fit.seconds_per_byte == pytest.approx(slope) and fit.fixed_s == pytest.approx(intercept)
    assert fit.points == 2 and fit.dtype == "float32" and "2 float32 points" in str(fit)


def test_run_saves_and_loads_and_refuses_other_files(tmp_path):
    run = _run(recorded={"command": "by hand", "load_average_before": [0.1, 0.2, 0.3]})
    path = run.save(tmp_path / "wall.json")
    data = json.loads(path.read_text())
    assert data["kind"] == "llm-inference-memory-wall" and data["schema_version"] == 3
    again = WallRun.load(path)
    assert again == run and again.regimes() == run.regimes()
    data["points"][0]["seconds"] = "fast"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"points\[0\]\.seconds should be a finite number"):
        WallRun.load(path)
    path.write_text(json.dumps({"kind": "llm-inference-trace", "schema_version": 1}))
    with pytest.raises(ValueError, match="not a viz memory-wall run"):
        WallRun.load(path)


def test_merged_adds_points_and_depths():
    a = _run()
    b = _run(
        points=[_point("360M", 724_000_000, 720_000_000, 60e-3, 8.5e-3)],
        overhead=[OverheadFloor("float32", 64, 512, [1, 32], [0.7e-3, 8.3e-3])],
    )
    b.flops_per_s = {"float16": 50e9}
    m = a.merged(b)
    assert m.flops_per_s == {"float32": 100e9, "bfloat16": 200e9, "float16": 50e9}
    assert [p.label for p in m.points][-1] == "360M" and len(m.points) == 5
    fp32 = next(o for o in m.overhead if o.dtype == "float32")
    assert fp32.layers == [1, 30, 32] and fp32.seconds == [0.7e-3, 7.8e-3, 8.3e-3]
    with pytest.raises(ValueError, match="same device"):
        a.merged(_run(device_name="Other CPU"))


def test_best_of_takes_each_point_from_its_least_disturbed_round():
    calm = _run()
    busy = _run(
        points=[replace(p, seconds=p.seconds * 1.5) for p in calm.points],
        overhead=[replace(o, seconds=[s * 2 for s in o.seconds]) for o in calm.overhead],
    )
    mixed = _run(points=[calm.points[0], busy.points[1], calm.points[2], busy.points[3]])
    best = wall.best_of([busy, mixed])
    assert [p.seconds for p in best.points] == [p.seconds for p in calm.points[:1]] + [
        busy.points[1].seconds,
        calm.points[2].seconds,
        busy.points[3].seconds,
    ]
    assert best.overhead[0].seconds == [7.8e-3]  # the lower of 15.6 and 7.8 ms
    assert best.recorded["rounds"]["fp32"] == [44e-3 * 1.5, 44e-3 * 1.5]
    with pytest.raises(ValueError, match="same points in the same order"):
        wall.best_of([calm, _run(points=calm.points[:2])])
    with pytest.raises(ValueError, match="non-empty list of WallRun"):
        wall.best_of([])


# ---- the GPU, computed -------------------------------------------------------------------------
def test_computed_wall_is_the_roofline_time_plus_the_stated_fixed_cost():
    shapes = ["smollm2-135m", "llama-3.2-1b"]
    bw, peak = 3.35e12, {"bfloat16": 989e12}
    none = computed_wall(shapes, device_name="GPU", bytes_per_s=bw, flops_per_s=peak)
    for p in none.points:
        # roofline by hand: the slower of moving the bytes and doing the FLOPs
        assert p.seconds == pytest.approx(max(p.step_bytes / bw, p.step_flops / 989e12))
        assert none.regime(p) == "memory-bound" and none.mbu(p) == pytest.approx(1.0)
    assert none.computed and "COMPUTED from published numbers, not measured" in none.title()
    eager = computed_wall(
        shapes,
        device_name="GPU",
        bytes_per_s=bw,
        flops_per_s=peak,
        fixed_cost_per_layer_s=0.25e-3,
        fixed_cost_note="assumed",
    )
    for p, q in zip(none.points, eager.points):
        assert q.seconds - p.seconds == pytest.approx(0.25e-3 * p.n_layers)
        assert eager.regime(q) == "overhead-bound"  # 7.5 ms of fixed cost vs 0.08 ms of bytes
    assert eager.overhead[0].assumed and eager.overhead[0].note == "assumed"
    slow = computed_wall(
        shapes, device_name="slow", bytes_per_s=bw, flops_per_s={"bfloat16": 1e9}
    )  # a device with almost no arithmetic
    assert set(slow.regimes().values()) == {"compute-bound"}
    with pytest.raises(ValueError, match="flops_per_s needs a peak > 0 for 'bfloat16'"):
        computed_wall(shapes, device_name="x", bytes_per_s=bw, flops_per_s={"float32": 1e12})
    with pytest.raises(ValueError, match="bytes_per_s must be > 0"):
        computed_wall(shapes, device_name="x", bytes_per_s=0, flops_per_s=peak)


# ---- measured on tiny models -----------------------------------------------------------------
def _peaks() -> MachinePeaks:
    return fake_machine_peaks(
        30e9, {"float32": 90e9, "bfloat16": 180e9}, threads=torch.get_num_threads()
    )


def test_measure_wall_on_tiny_models():
    shape = tiny_config()
    run = wall.measure_wall(
        [shape],
        ["float32", "bfloat16"],
        peaks=_peaks(),
        max_new_tokens=3,
        repeats=1,
        threads=1,
        overhead_depths=[1],
    )
    assert run.threads == 1 and not run.computed and run.read_bytes_per_s == 30e9
    labels = [p.label for p in run.points]
    assert labels == [
        "1 layer × 64 fp32",
        "2 layers × 64 fp32",
        "1 layer × 64 bf16",
        "2 layers × 64 bf16",
        "tiny-gqa fp32",
        "tiny-gqa bf16",
    ]
    fp32 = run.point("tiny-gqa fp32")
    # bytes and FLOPs are decode_cost's at the median timed context (prompt + 1 .. + 2 steps)
    assert fp32.steps_timed == 2 and fp32.step_bytes > 0
    from viz.perf import config_spec

    spec = config_spec(shape, dtype="float32")
    assert fp32.step_bytes == decode_cost(spec, fp32.context_tokens).bytes
    # its fixed cost is the 2-layer tiny-width model's measured time, in its dtype
    assert fp32.fixed_cost_s == run.point("2 layers × 64 fp32").seconds
    assert run.point("tiny-gqa bf16").fixed_cost_s == run.point("2 layers × 64 bf16").seconds
    # a tiny-width model's fixed cost is its own time: overhead-bound by construction
    assert run.regime(run.point("1 layer × 64 fp32")) == "overhead-bound"


def test_measure_point_batch_and_threads_restored():
    from viz.perf import from_config

    before = torch.get_num_threads()
    lm = from_config(tiny_config(), dtype="float32")
    p = wall_point.measure_point(lm, max_new_tokens=3, repeats=1, batch=4, threads=1)
    assert torch.get_num_threads() == before
    assert p.batch == 4 and p.label == "tiny-gqa fp32 B=4" and p.steps_timed == 2
    assert p.step_flops == decode_cost(lm.spec, p.context_tokens, 4).flops
    with pytest.raises(ValueError, match="batch must be a whole number >= 1"):
        wall_point.measure_point(lm, batch=0)
    with pytest.raises(ValueError, match="max_new_tokens must be a whole number >= 2"):
        wall_point.measure_point(lm, max_new_tokens=1)
    with pytest.raises(ValueError, match="threads must be a whole number >= 1"):
        wall_point.measure_point(lm, threads=0)


def test_measure_wall_bad_input_fails_before_timing():
    with pytest.raises(ValueError, match="no config named 'nope'"):
        wall.measure_wall(["nope"], peaks=_peaks())
    with pytest.raises(ValueError, match="at least one shape and one dtype"):
        wall.measure_wall([], peaks=_peaks())
    with pytest.raises(ValueError, match="no matmul peak measured in 'float16'"):
        wall.measure_wall([tiny_config()], ["float16"], peaks=_peaks())
    with pytest.raises(ValueError, match="batch_sizes must be whole numbers >= 1"):
        wall.measure_wall([tiny_config()], batch_sizes=[0], peaks=_peaks())
    with pytest.raises(ValueError, match="depths must be a non-empty list"):
        wall.measure_wall([tiny_config()], overhead_depths=[0], peaks=_peaks())


# ---- bandwidth, measured and cached -------------------------------------------------------------
@pytest.mark.parametrize("method, moved", [("read", 1), ("copy", 2), ("matvec", 1)])
def test_measure_bandwidth_methods(method, moved):
    b = bandwidth.measure_bandwidth(4 << 20, method, repeats=2, threads=1)
    assert b.method == method and b.threads == 1 and b.repeats == 2
    assert b.buffer_bytes == 4 << 20 and b.fastest_bytes_per_s >= b.bytes_per_s > 0
    assert len(b.runs_s) == 2 and b.moved_bytes == moved * (4 << 20)
    # the figure is the median run; the spread is the middle half of the runs
    rates = sorted(b.moved_bytes / t for t in b.runs_s)
    assert b.bytes_per_s == pytest.approx((rates[0] + rates[1]) / 2)
    assert b.spread.median == pytest.approx(b.bytes_per_s) and b.spread.runs == 2
    assert "4 MiB float32" in b.how and "median of 2 runs" in b.how and "1 thread," in b.how


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"method": "write"}, "unknown bandwidth method 'write'"),
        ({"buffer_bytes": 1000}, "buffer_bytes must be a whole number of bytes >= 1 MiB"),
        ({"repeats": 0}, "repeats must be a whole number >= 1"),
        ({"threads": -1}, "threads must be a whole number >= 1"),
    ],
)
def test_measure_bandwidth_bad_input(kw, match):
    args = {"buffer_bytes": 2 << 20, **kw}
    with pytest.raises(ValueError, match=match):
        bandwidth.measure_bandwidth(**args)


def test_bandwidth_by_size():
    sizes = [2 << 20, 4 << 20]
    assert [b.buffer_bytes for b in bandwidth.bandwidth_by_size(sizes, repeats=1)] == sizes
    with pytest.raises(ValueError, match="at least one buffer size"):
        bandwidth.bandwidth_by_size([])


def test_machine_peaks_measured_once_then_reused(tmp_path):
    path = tmp_path / "peaks.json"
    small = dict(
        path=path, buffer_bytes=2 << 20, repeats=1, threads=1, budget_s=0.2, progress=False
    )
    peaks.forget_in_process()
    first = peaks.machine_peaks(**small)
    assert path.is_file() and first.loaded_from == "" and first.threads == 1
    assert set(first.flops_per_s) == {"float32", "bfloat16"}
    assert set(first.matvec) == {"float32", "bfloat16"}
    assert first.read.method == "read" and first.copy.method == "copy"
    assert first.bytes_per_s == first.read.bytes_per_s
    assert first.ridge_intensity("float32") == first.flops_per_s["float32"] / first.bytes_per_s
    assert first.status.startswith("measured now (the first time")
    # the same process gets the same object back, without reading or measuring
    assert peaks.machine_peaks(**small) is first
    peaks.forget_in_process()
    second = peaks.machine_peaks(**small, check=False)
    assert second.loaded_from == str(path) and second == first
    assert "from the viz cache" in second.status and "matmul float32" in second.how()
    again = peaks.machine_peaks(**small, refresh=True)
    assert again.loaded_from == "" and MachinePeaks.load(path) == again
    assert again.status.startswith("measured now (refresh=True)")
    # measured with another thread count, or on a CPU with other features: not reused
    for field, value in (
        ("threads", 64),
        ("cpu_features", ["avx2"]),
        ("cpu_capability", "AVX2 (ATEN_CPU_CAPABILITY=avx2)"),
    ):
        peaks.forget_in_process()
        data = json.loads(path.read_text())
        data["environment"][field] = value  # schema 3: in the environment
        path.write_text(json.dumps(data))
        assert peaks.machine_peaks(**small).loaded_from == ""
    # a corrupt cache file is measured again, not trusted
    peaks.forget_in_process()
    path.write_text("{not json")
    assert peaks.machine_peaks(**small).loaded_from == ""
    assert MachinePeaks.load(path).threads == 1


def test_cached_peaks_are_checked_on_reuse_and_measured_again_if_off(tmp_path, monkeypatch):
    """A cached read bandwidth far from a fresh read's is measured again, and says why."""
    path = tmp_path / "peaks.json"
    small = dict(
        path=path, buffer_bytes=2 << 20, repeats=3, threads=1, budget_s=0.2, progress=False
    )
    peaks.forget_in_process()
    measured = peaks.machine_peaks(**small)
    # a fresh read in line with the cached one (the same figures read back): kept
    real = peaks.measure_bandwidth
    monkeypatch.setattr(peaks, "measure_bandwidth", lambda *a, **k: measured.read)
    peaks.forget_in_process()
    kept = peaks.machine_peaks(**small)
    assert kept.loaded_from == str(path) and kept.status.startswith("checked now")
    # 19 % off: within the 20 % tolerance, kept (whatever the spread)
    near = replace(measured.read, bytes_per_s=measured.read.bytes_per_s * 1.19)
    monkeypatch.setattr(peaks, "measure_bandwidth", lambda *a, **k: near)
    peaks.forget_in_process()
    assert peaks.machine_peaks(**small).loaded_from == str(path)
    monkeypatch.setattr(peaks, "measure_bandwidth", real)
    # a file claiming 100× the real read bandwidth, with no spread: measured again
    data = measured.to_dict()
    data["read"]["bytes_per_s"] *= 100
    data["read"]["runs_s"] = [t / 100 for t in data["read"]["runs_s"]]
    path.write_text(json.dumps(data))
    peaks.forget_in_process()
    redone = peaks.machine_peaks(**small)
    assert (
        redone.loaded_from == ""
        and "measured again now, because a fresh read gave" in redone.status
        and "below the cached" in redone.status
    )
    assert MachinePeaks.load(path).read.bytes_per_s == redone.read.bytes_per_s
    # VIZ_CHECK_PEAKS=0 (`make notebooks`: one set of peaks per run): the same far-off file is
    # reused as it is; "1" or an explicit check=True checks it again
    path.write_text(json.dumps(data))
    monkeypatch.setenv("VIZ_CHECK_PEAKS", "0")
    peaks.forget_in_process()
    unchecked = peaks.machine_peaks(**small)
    assert unchecked.loaded_from == str(path) and unchecked.status.endswith("not checked")
    assert unchecked.read.bytes_per_s == data["read"]["bytes_per_s"]
    peaks.forget_in_process()
    assert peaks.machine_peaks(**small, check=True).loaded_from == ""
    path.write_text(json.dumps(data))
    monkeypatch.setenv("VIZ_CHECK_PEAKS", "1")
    peaks.forget_in_process()
    assert peaks.machine_peaks(**small).loaded_from == ""


def test_a_course_run_reuses_its_peaks_unchecked(monkeypatch):
    """tools/course.py sets VIZ_CHECK_PEAKS=0 while lessons run, and puts it back after."""
    from tools import course

    monkeypatch.setenv("VIZ_KEEP_MEASUREMENTS", "")
    monkeypatch.delenv("VIZ_CHECK_PEAKS", raising=False)
    with course.course_measurements(True, save=False):
        assert os.environ["VIZ_CHECK_PEAKS"] == "0"
    assert "VIZ_CHECK_PEAKS" not in os.environ


def test_peaks_path_is_keyed_on_the_machine(tmp_path, monkeypatch):
    monkeypatch.delenv("VIZ_MEASURE_DIR")  # the suite sets it: without, the viz cache folder
    monkeypatch.setenv("VIZ_CACHE_DIR", str(tmp_path / "cache"))
    assert peaks.peaks_path("cpu").parent == tmp_path / "cache" / "peaks"
    monkeypatch.setenv("VIZ_MEASURE_DIR", str(tmp_path))
    p3 = peaks.peaks_path("cpu", threads=3)
    assert p3.parent == tmp_path / "peaks" and p3.name.startswith("cpu-3-threads-")
    assert peaks.peaks_path("cpu", threads=3) == p3  # stable
    assert peaks.peaks_path("cpu", threads=2) != p3
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")  # torch told to use fewer instructions
    assert peaks.peaks_path("cpu", threads=3) != p3
    assert "ATEN_CPU_CAPABILITY=default" in cache.machine_key("cpu", 3)["cpu_capability"]


def test_measure_matmul_grows_within_its_budget():
    m = matmul.measure_matmul("float32", repeats=2, budget_s=0.5, max_n=256, start_n=32)
    assert m.sizes == [32, 64, 128, 256][: len(m.sizes)] and m.sizes[0] == 32
    assert m.n in m.sizes and len(m.runs_s) <= 2 and m.flops_per_s > 0
    assert m.flops_per_s == pytest.approx(
        max(f for n, f in zip(m.sizes, m.sizes_flops_per_s) if n == m.n)
    )
    assert m.stopped.startswith("stopped")
    with pytest.raises(ValueError, match="budget_s must be a number of seconds > 0"):
        matmul.measure_matmul(budget_s=0)
    with pytest.raises(ValueError, match="sizes must be at least 16: start_n 8"):
        matmul.measure_matmul(start_n=8)
    assert matmul.measure_matmul(max_n=32, budget_s=0.2).sizes == [32]  # below start_n


@pytest.mark.parametrize(
    "features, capability, expected",
    [
        ([], "AVX2", "this CPU has no bfloat16 instructions"),
        (
            ["avx2", "avx512_bf16"],
            "AVX2 (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2)",
            "but torch was told to use fewer",
        ),
    ],
)
def test_a_slow_bfloat16_matmul_is_reported_with_its_reason(features, capability, expected):
    slow = fake_machine_peaks(
        flops={"float32": 68e9, "bfloat16": 1.3e9},
        cpu_features=features or ["avx2", "fma"],
        cpu_capability=capability,
    )
    (finding,) = slow.findings()
    assert finding.startswith("bfloat16 matmul 1.3 GFLOP/s, 1/52 of float32's 68.0")
    assert expected in finding and not slow.fast("bfloat16") and slow.fast("float32")
    fast = fake_machine_peaks(
        flops={"float32": 100e9, "bfloat16": 390e9},
        cpu_features=["avx512_bf16"],
        cpu_capability="AVX512",
    )
    assert fast.fast("bfloat16") and "3.9× float32's" in fast.findings()[0]
    assert "finding: bfloat16 matmul 1.3 GFLOP/s" in slow.how()


def test_machine_peaks_of_schema_1_load_with_their_medians():
    """A peaks file saved by the previous viz (the fastest runs were the figures) loads, with
    the medians it kept as the figures."""
    bw = {
        "method": "read",
        "buffer_bytes": 1 << 28,
        "bytes_per_s": 40e9,
        "bytes_per_s_median": 32e9,
        "dtype": "float32",
        "threads": 2,
        "repeats": 7,
        "timer": "perf_counter",
    }
    v1 = {
        "kind": MachinePeaks.KIND,
        "schema_version": 1,
        "device": "cpu",
        "device_name": "X",
        "cpu_count": 2,
        "threads": 2,
        "flops_per_s": {"float32": 160e9},
        "flops_per_s_median": {"float32": 150e9},
        "matmul_n": 2048,
        "read": bw,
        "copy": bw,
        "matvec": {**bw, "method": "matvec"},
        "measured_at": "then",
        "torch_version": "x",
    }
    p = MachinePeaks.from_dict(v1)
    assert p.bytes_per_s == 32e9 and p.read.fastest_bytes_per_s == 40e9
    assert p.flops("float32") == 150e9 and p.matmul["float32"].fastest_flops_per_s == 160e9
    assert p.matmul["float32"].n == 2048 and p.matvec["float32"].method == "matvec"
    assert p.read.spread.runs == 0  # no runs were kept: no spread to show


# ---- the view ---------------------------------------------------------------------------------
def _run_with_line(**kw):
    """`_run` plus a second float32 model shape, so that the one fit has a line."""
    run = _run(**kw)
    return replace(
        run, points=run.points + [_point("360M fp32", 1_450_000_000, 720_000_000, 104e-3, 8.3e-3)]
    )


def test_wall_data_lines_and_colours():
    run = _run_with_line()
    d = wall_data(run)
    assert wall_data(_run())["fit"] is None  # one point per number format: no line drawn
    assert d["x_range"] == [1e6, 1e10]
    mf = d["memory_floor"]
    assert mf["y"] == [1e6 / 40e9, 1e10 / 40e9]  # bytes ÷ read bandwidth
    assert [f["seconds"] for f in d["fixed_cost"]] == [7.8e-3, 8.5e-3]
    assert [p["regime"] for p in d["points"]] == list(run.regimes().values())
    fit = run.fit()
    assert d["fit"]["y"][0] == pytest.approx(fit.predict_s(1e6))
    fig = wall_figure(run)
    names = [t.name for t in fig.data]
    assert "memory floor: bytes ÷ 40.0 GB/s" in names
    assert {"overhead-bound", "memory-bound", "compute-bound"} <= set(names)
    texts = [t for tr in fig.data if tr.mode == "markers+text" for t in tr.text]
    assert "MBU 31%" in texts  # 540 MB in 44 ms at 40 GB/s
    assert f"fit: {fit.fixed_s * 1e3:.1f} ms + bytes ÷ {fit.bytes_per_s / 1e9:.1f} GB/s" in names
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    gpu = computed_wall(
        ["smollm2-135m"], device_name="GPU", bytes_per_s=3.35e12, flops_per_s={"bfloat16": 989e12}
    )
    assert "COMPUTED" in wall_figure(gpu).layout.title.text
    assert len(wall_figure(run, _run_with_line(label="other")).data) > len(fig.data)
    with pytest.raises(ValueError, match="expected a viz.perf.WallRun"):
        wall_figure("run.json")
    with pytest.raises(ValueError, match="has no points"):
        wall_figure(_run(points=[]))


def test_wall_labels_move_aside_or_go_rather_than_collide():
    run = _run()
    first = next(p for p in run.points if p.kind == "shape")
    # a twin a hair slower: where the first point's label would go, its label cannot
    twin = replace(first, label=first.label + " again", seconds=first.seconds * 1.02)
    fig = wall_figure(replace(run, points=run.points + [twin]))
    placed = {
        (round(x), round(y * 1e3)): (text, side)
        for t in fig.data
        if t.mode == "markers+text"
        for x, y, text, side in zip(t.x, t.y, t.text, t.textposition)
    }
    label_a, side_a = placed[(round(first.step_bytes), round(first.seconds * 1e6))]
    label_b, side_b = placed[(round(twin.step_bytes), round(twin.seconds * 1e6))]
    assert label_a  # the first keeps its label, on its preferred side
    assert label_b == "" or side_b != side_a, (side_a, side_b)
    # the MBU of every point stays in the hover data
    assert (
        sum(len(t.customdata) for t in fig.data if t.mode == "markers+text") == len(run.points) + 1
    )
    # the placement: an obstacle takes the preferred side; an empty label is not placed
    from viz.views.base import place_labels

    assert place_labels([(100, 100)], ["MBU 40%"], (400, 300), prefer=["middle right"]) == [
        "middle right"
    ]
    assert place_labels(
        [(100, 100)], ["MBU 40%"], (400, 300), prefer=["middle right"], obstacles=[(130, 100)]
    ) != ["middle right"]
    assert place_labels([(100, 100)], [""], (400, 300)) == [None]
    # a box (an annotation's text) is an obstacle as a point is
    assert place_labels(
        [(100, 100)], ["MBU 40%"], (400, 300), prefer=["middle right"], boxes=[(110, 90, 200, 110)]
    ) != ["middle right"]


def test_no_roofline_label_covers_the_ridge_annotation():
    # CI once failed in the browser: 'ridge 2.68 FLOP/byte' overlapped the label of a prefill
    # point just below the ridge's corner. A point there must put its label elsewhere.
    from viz.views.roofline import _label_positions, _ridge_boxes
    from viz.views.base import to_pixels

    size = (640, 348)

    def data(y):
        return {
            "x_range": [0.1, 1000.0],
            "y_range": [1e9, 1e13],
            "rooflines": [
                {
                    "ridge": 10.0,
                    "roof_x": [0.1, 10.0, 1000.0],
                    "roof_y": [1e9, 1e12, 1e12],
                    "points": [{"label": "prefill 16", "x": 10.0, "y": y}],
                }
            ],
        }

    d = data(2.5e12)  # just above the corner: where the annotation's text sits
    (x0, y0, x1, y1), _ = _ridge_boxes(d, size)
    px = to_pixels([10.0], 0.1, 1000.0, size[0], log=True)[0]
    py = to_pixels([2.5e12], 1e9, 1e13, size[1], log=True, flip=True)[0]
    assert x0 < px < x1 and y0 < py + 20 and py - 20 < y1  # the point is next to the text
    where = _label_positions(d, size)[(0, 0)]
    w = 0.62 * 11 * len("prefill 16") + 2
    boxes = {
        "bottom center": (px - w / 2, py + 6, px + w / 2, py + 6 + 14.3),
        "top center": (px - w / 2, py - 6 - 14.3, px + w / 2, py - 6),
        "middle right": (px + 6, py - 7.2, px + 6 + w, py + 7.2),
        "middle left": (px - 6 - w, py - 7.2, px - 6, py + 7.2),
    }
    if where in boxes:
        b = boxes[where]
        assert not (b[0] < x1 and x0 < b[2] and b[1] < y1 and y0 < b[3]), where
    # far from the ridge, the label takes its usual place
    assert _label_positions(data(1e10), size)[(0, 0)] == "bottom center"


# ---- prompt-lookup decoding -------------------------------------------------------------------
def test_prompt_lookup_gives_the_same_tokens_with_fewer_passes():
    from viz.perf import from_config
    from viz.perf.speculative import compare_prompt_lookup

    lm = from_config(tiny_config(), dtype="float32", seed=3)
    c = compare_prompt_lookup(
        lm, "abcabcabcabcabcabc", chat=False, max_new_tokens=12, repeats=1, threads=1
    )
    assert c.identical and c.plain.token_ids == c.lookup.token_ids
    n = c.plain.new_tokens
    assert c.plain.forward_passes == n and c.plain.tokens_per_pass == 1.0  # one token per pass
    assert c.lookup.forward_passes <= n and c.lookup.tokens_per_pass >= 1.0
    assert c.plain.tpot_s == pytest.approx(c.plain.decode_s / (n - 1))
    assert math.isclose(c.speedup, c.plain.tpot_s / c.lookup.tpot_s)
    assert "same greedy tokens: True" in str(c)
    with pytest.raises(ValueError, match="the prompt is empty"):
        compare_prompt_lookup(lm, "  ", chat=False)
    with pytest.raises(ValueError, match="num_lookup_tokens must be a whole number >= 1"):
        compare_prompt_lookup(lm, "abc", chat=False, num_lookup_tokens=0)


def test_bytes_whatif_scales_each_models_own_step():
    run = _run()
    rows = wall.bytes_whatif(run, 1)
    # one row per model shape at batch 1 (its float32 point where it has one)
    assert [r["model"] for r in rows] == ["fp32", "bf16"]
    fp32 = run.point("fp32")
    # fixed cost + the rest of the measured step × (1 byte ÷ 4 bytes)
    assert rows[0]["predicted_s"] == pytest.approx(7.8e-3 + (44e-3 - 7.8e-3) / 4)
    assert rows[1]["read_s"] == pytest.approx((24e-3 - 8.5e-3) / 2)  # bfloat16: 2 bytes
    assert rows[0]["fixed_share"] == pytest.approx(7.8e-3 / rows[0]["predicted_s"])
    # at the point's own format the measured step comes back
    assert wall.bytes_whatif(run, 4)[0]["predicted_s"] == pytest.approx(44e-3)
    from viz.views.wall import bytes_whatif_figure

    fig = bytes_whatif_figure(run, 0.5)
    assert fig.layout.title.text.startswith("0.5 bytes per weight: predicted if only the bytes")
    assert bytes_whatif_figure(run, 1).layout.title.text.startswith("1 byte per weight")
    assert fig.layout.xaxis.range[1] == bytes_whatif_figure(run, 4).layout.xaxis.range[1]
    with pytest.raises(ValueError, match=r"bytes_per_weight must be a number in \(0, 8\]"):
        wall.bytes_whatif(run, 0)
    assert fp32.batch == 1
