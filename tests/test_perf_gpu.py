"""The GPU reference shipped in viz/data (one H200, measured once by benchmarks/gpu_check.py):
it loads on a CPU-only machine, says where it came from, and the rule judges it as it judges
the learner's own measurements (lessons 03, 04, 06, 07, 08, 11)."""

import pytest

import viz
from viz import perf
from viz.perf import gpu


def test_every_gpu_reference_loads_here_and_says_where_it_was_measured():
    names = [n for n in perf.list_references() if n.startswith("gpu-")]
    assert len(names) == 8
    for name in names:
        ref = perf.load_reference(name)
        device = getattr(ref, "device", None) or ref.environment.device
        assert str(device).startswith("cuda"), name
        label = getattr(ref, "label", "") or getattr(ref, "source", "")
        assert "H200" in label and "random weights" in label, name
    assert "driver 580.159.04" in perf.gpu_provenance()
    assert "random weights" in perf.gpu_provenance()
    assert perf.gpu_reference("trace").model.random_weights


def test_unknown_or_unshipped_references_are_refused_with_what_ships():
    with pytest.raises(ValueError, match="unknown kind 'roofline': use 'memory-wall' or one of"):
        perf.gpu_reference("roofline")
    with pytest.raises(ValueError, match="no GPU reference 'gpu-llama-3.2-1b-trace' ships .*"
                                         "gpu-smollm2-135m-trace"):
        perf.gpu_reference("trace", "llama-3.2-1b")
    with pytest.raises(ValueError, match="no GPU fixed cost in 'float16': measured in"):
        perf.gpu_fixed_cost(30, "float16")


def test_peaks_and_fixed_cost_come_from_the_wall_run():
    wall = perf.gpu_wall()
    peaks = perf.gpu_peaks()
    assert peaks.flops_per_s == wall.peaks.matmul["bfloat16"].flops_per_s
    assert peaks.bytes_per_s == wall.peaks.read.bytes_per_s == wall.read_bytes_per_s
    floor = {o.dtype: o for o in wall.overhead}["bfloat16"]
    assert perf.gpu_fixed_cost(30) == floor.spreads[floor.layers.index(30)]




@pytest.mark.parametrize("name", perf.GPU_MODELS)
def test_busy_rows_judge_the_gpu_s_own_time_by_the_rule(name):
    sweep = perf.gpu_reference("busy-sweep", name)
    peaks = perf.gpu_peaks()
    rows = perf.busy_rows(sweep)
    assert [r.batch for r in rows] == sweep.column("batch_size") == [1, 16, 64, 256, 512, 1024]
    for r, wall, busy in zip(rows, sweep.column("decode_step_s"), sweep.column("gpu_busy_s")):
        assert (r.wall.median, r.busy.median) == (wall, busy)
        assert 0 < r.busy.median < r.wall.median  # the device's share of a step it is in
        cost = perf.decode_cost(sweep.model, r.context_tokens, r.batch)
        memory, compute = cost.bytes / peaks.bytes_per_s, cost.flops / peaks.flops_per_s
        assert r.verdict.rule == perf.regime(busy, memory, compute, 0.0)
        assert r.mbu == pytest.approx(memory / busy) and r.mfu == pytest.approx(compute / busy)
        assert r.host_share == pytest.approx(1 - busy / wall)


def test_the_8b_knee_measured_lies_where_counting_puts_it():
    sweep = perf.gpu_reference("busy-sweep", "llama-3.1-8b")
    rows = perf.busy_rows(sweep)
    last_memory, first_compute = perf.busy_knee(rows)
    peaks = perf.gpu_peaks()
    counted = perf.ridge_batch(sweep.model, peaks.flops_per_s, peaks.bytes_per_s,
                               rows[0].context_tokens)
    assert last_memory < counted <= first_compute  # between two measured rows
    # the busy time grows with the batch past the knee, and hardly before it
    busy = {r.batch: r.busy.median for r in rows}
    assert busy[64] < 1.5 * busy[1] and busy[1024] > 4 * busy[1]


def test_ridge_batch_is_the_first_batch_whose_compute_floor_reaches_its_memory_floor():
    spec = perf.config_spec("llama-3.1-8b", dtype="bfloat16")
    flops, read = 800e12, 4e12

    def compute_wins(b):
        cost = perf.decode_cost(spec, 100, b)
        return cost.flops / flops >= cost.bytes / read

    b = perf.ridge_batch(spec, flops, read, 100)
    assert compute_wins(b) and not compute_wins(b - 1)
    assert perf.ridge_batch(spec, flops, read, 100, largest=b - 1) is None
    # at a long context each request's cache grows as fast as its arithmetic: no crossing
    assert perf.ridge_batch(spec, flops, read, 8000) is None
    with pytest.raises(ValueError, match="flops_per_s must be a positive number"):
        perf.ridge_batch(spec, 0, read, 100)


def test_the_busy_roofline_places_each_batch_at_its_busy_time():
    sweep = perf.gpu_reference("busy-sweep", "llama-3.1-8b")
    roof = perf.busy_roofline(sweep)
    assert [p.label for p in roof.points] == [f"B={b}" for b in sweep.column("batch_size")]
    assert [p.seconds for p in roof.points] == sweep.column("gpu_busy_s")
    assert roof.peaks.device_name == "NVIDIA H200" and "GPU busy time" in roof.label
    assert roof.bound(roof.points[0]) == "memory" and roof.bound(roof.points[-1]) == "compute"


def test_prefill_rows_use_the_gpu_s_fixed_cost_at_the_model_s_depth():
    sweep = perf.gpu_reference("prompt-sweep", "llama-3.1-8b")
    rows = perf.prefill_rows(sweep)
    fixed = perf.gpu_fixed_cost(32)
    assert [r.tokens for r in rows] == sweep.column("prompt_tokens")
    for r in rows:
        assert r.verdict.fixed == fixed
        cost = perf.prefill_cost(sweep.model, r.tokens)
        assert r.mfu == pytest.approx(cost.flops / perf.gpu_peaks().flops_per_s
                                      / r.seconds.median)
    assert rows[0].verdict.regime == "overhead-bound"  # 128 tokens: the launches dominate
    assert rows[-1].verdict.regime == "compute-bound"  # 4,096 tokens: the arithmetic


def test_sweeps_of_another_kind_or_without_busy_time_are_refused(tiny_gqa):
    with pytest.raises(ValueError, match="expected a device-busy sweep"):
        perf.busy_rows(perf.gpu_reference("prompt-sweep"))
    with pytest.raises(ValueError, match="expected a prompt-length sweep"):
        perf.prefill_rows(perf.gpu_reference("busy-sweep"))
    cpu = perf.gpu_reference("busy-sweep")
    cpu.columns["gpu_busy_s"] = [None] * len(cpu)
    cpu.spreads.pop("gpu_busy_s")
    with pytest.raises(ValueError, match="no GPU busy time .*measured without CUDA"):
        perf.busy_rows(cpu)


def test_the_gpu_trace_draws_beside_a_cpu_trace():
    """Lesson 07: the learner's reply beside the GPU's, in the comparison views."""
    from viz import views

    mine, theirs = perf.load_reference("cpu-chat-trace"), perf.gpu_reference("trace")
    html = views.compare_html(mine, theirs)
    assert "NVIDIA H200" in str(getattr(html, "data", html))
    assert len(views.compare_figure(mine, theirs).data) > 0
    assert isinstance(theirs, viz.Trace) and theirs.environment.device == "cuda"
