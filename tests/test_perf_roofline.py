"""Micro-benchmarks give positive, finite peaks; the roofline's arithmetic; its JSON; its views."""

import json
import math

import pytest
import torch

import viz
from viz import perf
from viz.perf.machine.peaks import Peaks
from viz.runtime import time_runs
from viz.perf.roofline import Roofline, RooflinePoint, point, trace_points


def small_peaks():
    return perf.measure_peaks("cpu", buffer_bytes=1 << 22, repeats=3, budget_s=0.2, max_n=256)


def test_micro_benchmarks_are_positive_and_finite():
    p = small_peaks()
    for v in (p.flops_per_s, p.bytes_per_s, p.flops_spread.median, p.bytes_spread.median):
        assert math.isfinite(v) and v > 0
    # any CPU does more than 10 MFLOP/s and 10 MB/s, and less than 1 PFLOP/s and 100 TB/s
    assert 1e7 < p.flops_per_s < 1e15 and 1e7 < p.bytes_per_s < 1e14
    assert p.flops_spread.low <= p.flops_per_s <= p.flops_spread.high
    assert p.bytes_spread.median == p.bytes_per_s  # the read's median is the memory roof
    assert (p.device, p.dtype, p.buffer_bytes) == ("cpu", "float32", 1 << 22)
    assert p.matmul_n in (128, 256) and "torch.sum" in p.how  # read, not a copy
    assert p.ridge_intensity == p.flops_per_s / p.bytes_per_s


def test_time_runs_uses_the_clock_after_warmup():
    calls = []
    times, timer = time_runs(lambda: calls.append(1), torch.device("cpu"), repeats=4, warmup=2)
    assert len(calls) == 6 and len(times) == 4 and all(t >= 0 for t in times)
    assert timer == "perf_counter"


FAKE = Peaks(
    device="cpu",
    device_name="test",
    dtype="float32",
    threads=1,
    flops_per_s=100e9,
    bytes_per_s=20e9,
    matmul_n=1,
    buffer_bytes=1,
    repeats=1,
    timer="x",
)


def test_mfu_mbu_and_bound_by_hand(tiny_gqa):
    # A pass of 1 GFLOP moving 0.5 GB in 0.1 s: 10 GFLOP/s, 5 GB/s, intensity 2 FLOP/byte.
    p = RooflinePoint(
        label="x",
        phase="decode",
        batch=1,
        input_tokens=1,
        context_tokens=1,
        flops=1e9,
        bytes=0.5e9,
        seconds=0.1,
    )
    roof = Roofline(peaks=FAKE, model=tiny_gqa.spec, environment=tiny_gqa.environment(), points=[p])
    assert p.intensity == 2.0
    assert roof.mfu(p) == pytest.approx(10e9 / 100e9)  # 10%
    assert roof.mbu(p) == pytest.approx(5e9 / 20e9)  # 25%
    assert FAKE.ridge_intensity == 5.0 and roof.bound(p) == "memory"
    assert roof.attainable_flops_per_s(2.0) == 40e9  # on the slope: 2 · 20e9
    assert roof.attainable_flops_per_s(50.0) == 100e9  # under the flat roof
    assert roof.rows()[0]["mfu"] == pytest.approx(0.1)


def test_trace_points_use_the_recorded_times(tiny_gqa, fake_clock):
    trace = viz.record(
        tiny_gqa, "Hello", max_new_tokens=4, stop_at_eos=False, clock=fake_clock(growth=0.5)
    )
    pre, dec = trace_points(trace)
    assert pre.seconds == trace.timing.prefill_forward_s == 1.0
    n = len(trace.prompt_ids)
    assert pre.flops == perf.prefill_cost(tiny_gqa.spec, n).flops
    # decode forward times 2.5, 4.0, 5.5 → median 4.0, at the median sequence length n + 2
    assert dec.seconds == 4.0
    assert dec.flops == perf.decode_cost(tiny_gqa.spec, n + 2).flops
    with pytest.raises(ValueError, match="KV cache"):
        trace_points(viz.record(tiny_gqa, "Hello", max_new_tokens=2, use_cache=False))
    with pytest.raises(ValueError, match="a measured time must be > 0 seconds, not 0.0"):
        point("bad", perf.decode_cost(tiny_gqa.spec, 5), 0.0)


def test_measure_roofline_round_trip(tiny_gqa, tmp_path):
    roof = perf.measure_roofline(
        tiny_gqa, max_new_tokens=4, batch_sizes=[1, 3], peaks=small_peaks(), progress=False
    )
    assert [p.label for p in roof.points] == ["prefill", "decode", "decode B=1", "decode B=3"]
    assert roof.bound(roof.points[0]) in ("memory", "compute")
    for r in roof.rows():
        assert r["mfu"] > 0 and r["mbu"] > 0 and math.isfinite(r["intensity"])
    assert Roofline.load(roof.save(tmp_path / "r.json")) == roof
    assert "MFU" in str(roof)
    with pytest.raises(ValueError, match="not a viz roofline"):
        Roofline.from_dict(json.loads('{"kind": "other"}'))


def test_measure_roofline_reuses_measurements(tiny_gqa):
    trace = viz.record(tiny_gqa, "Hello", max_new_tokens=5, stop_at_eos=False)
    batch = perf.batch_size_sweep(tiny_gqa, [2], max_new_tokens=3, progress=False)
    roof = perf.measure_roofline(tiny_gqa, peaks=FAKE, trace=trace, batch=batch)
    assert roof.peaks is FAKE
    assert [p.label for p in roof.points] == ["prefill", "decode", "decode B=2"]
    assert roof.points[0].seconds == trace.timing.prefill_forward_s
    assert roof.points[2].seconds == batch.column("decode_forward_s")[0]
    prompts = perf.prompt_length_sweep(tiny_gqa, [3, 12], repeats=1, progress=False)
    roof = perf.measure_roofline(tiny_gqa, peaks=FAKE, trace=trace, prompt_sweep=prompts)
    pre = roof.points[2:]
    assert [p.label for p in pre] == ["prefill 3", "prefill 12"]
    assert [p.seconds for p in pre] == prompts.column("prefill_forward_s")
    assert pre[0].intensity < pre[1].intensity  # a longer prompt reuses each weight more
    with pytest.raises(ValueError, match="prompt_length"):
        perf.prefill_points(batch, tiny_gqa.spec)


def test_roofline_view_draws_the_numbers(tiny_gqa):
    from viz.views.roofline import roofline_data, roofline_figure, roofline_static

    p = RooflinePoint(
        label="decode",
        phase="decode",
        batch=1,
        input_tokens=1,
        context_tokens=9,
        flops=1e9,
        bytes=0.5e9,
        seconds=0.1,
    )
    roof = Roofline(peaks=FAKE, model=tiny_gqa.spec, environment=tiny_gqa.environment(), points=[p])
    data = roofline_data(roof)["rooflines"][0]
    lo, ridge, hi = data["roof_x"]
    assert ridge == 5.0 and data["roof_y"] == [lo * 20e9, 100e9, 100e9]
    assert data["points"][0]["y"] == pytest.approx(10e9)
    fig = roofline_figure(roof, roof)
    decode = [t for t in fig.data if t.name.startswith("decode")]
    assert list(decode[0].x) == [2.0] and list(decode[0].y) == pytest.approx([10e9])
    static = roofline_static(roof)  # matplotlib: the same roof and point, in log-log axes
    ax = static.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    drawn = [(list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()]
    assert ([lo, ridge, hi], [lo * 20e9, 100e9, 100e9]) in drawn
    with pytest.raises(ValueError, match="Roofline"):
        roofline_figure("not a roofline")


def test_sweep_views_draw_the_columns(tiny_gqa):
    from viz.views.sweeps import sweep_figure, sweep_data, throughput_latency_figure

    sweep = perf.batch_size_sweep(tiny_gqa, [1, 2], max_new_tokens=3, progress=False)
    series = sweep_data(sweep)
    step = next(s for s in series if s["column"] == "decode_step_s")
    assert step["y"] == [v * 1e3 for v in sweep.column("decode_step_s")]
    fig = sweep_figure(sweep)
    assert list(fig.data[0].x) == [1, 2]
    assert list(fig.data[0].y) == pytest.approx(sweep.column("aggregate_decode_tokens_per_s"))
    tl = throughput_latency_figure(sweep, sweep)
    assert list(tl.data[0].x) == pytest.approx([v * 1e3 for v in sweep.column("decode_step_s")])
    prompt = perf.prompt_length_sweep(tiny_gqa, [2, 4], repeats=1, progress=False)
    with pytest.raises(ValueError, match="batch_size"):
        throughput_latency_figure(prompt)
    with pytest.raises(ValueError, match="same|prompt_length"):
        sweep_figure(prompt, sweep)
    fig = sweep_figure(prompt, peaks=FAKE)
    assert fig.data[-1].y == (100.0, 100.0)  # the measured peak in GFLOP/s


def test_sweep_figure_draws_each_points_spread(tiny_gqa):
    """A sweep that kept its spreads draws them as error bars: a timed column's own, and a
    rate's from the time it divides (tokens/s = B ÷ step); a reference without spreads, none."""
    from viz.views.sweeps import column_spreads, sweep_data, sweep_figure

    sweep = perf.batch_size_sweep(tiny_gqa, [1, 2], max_new_tokens=4, progress=False)
    step = next(s for s in sweep_data(sweep) if s["column"] == "decode_step_s")
    spreads = sweep.spread("decode_step_s")
    assert step["low"] == pytest.approx([s.low * 1e3 for s in spreads])
    assert step["high"] == pytest.approx([s.high * 1e3 for s in spreads])
    rate = column_spreads(sweep, "aggregate_decode_tokens_per_s")
    assert [r.median for r in rate] == pytest.approx(sweep.column("aggregate_decode_tokens_per_s"))
    assert [r.low for r in rate] == pytest.approx([b / s.high for b, s in zip([1, 2], spreads)])
    fig = sweep_figure(sweep)
    bars = fig.data[0].error_y  # throughput: B ÷ step, with the step's spread
    assert list(bars.array) == pytest.approx([r.high - r.median for r in rate])
    assert list(bars.arrayminus) == pytest.approx([r.median - r.low for r in rate])
    assert "middle half" in fig.data[0].hovertemplate
    from dataclasses import replace

    old = replace(perf.load_reference("cpu-prompt-sweep"), spreads={})  # as saved before
    assert all(s["low"] is None for s in sweep_data(old))  # spreads were kept: no bars
    assert all(t.error_y.array is None for t in sweep_figure(old).data)
    new = perf.load_reference("cpu-prompt-sweep")  # recorded with its spreads: bars
    assert any(t.error_y.array is not None for t in sweep_figure(new).data)
