"""The GPU reference shipped in viz/data (one H200, measured once by benchmarks/gpu_check.py):
it loads on a CPU-only machine, says where it came from, and the rule judges it as it judges
the learner's own measurements (lessons 03, 04, 06, 07, 08, 13)."""

import pytest

import viz
from viz import perf


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
    with pytest.raises(
        ValueError, match="no GPU reference 'gpu-llama-3.2-1b-trace' ships .*gpu-smollm2-135m-trace"
    ):
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
        assert r.verdict.rule == perf.regime(busy, memory, compute, 0.0)  # the floors alone
        assert r.mbu == pytest.approx(memory / busy) and r.mfu == pytest.approx(compute / busy)
        assert r.host_share == pytest.approx(1 - busy / wall)
        # no fixed cost was measured: the floors' word stands only where the bound on it (its
        # kernels × the shortest average kernel) is under half the busy time
        assert r.fixed is None
        assert r.fixed_bound_s == pytest.approx(r.kernels * perf.kernel_time_bound())
        ruled_out = r.fixed_bound_s < 0.5 * r.busy.low
        assert r.regime == (r.verdict.regime if ruled_out else perf.NOT_JUDGED)
        assert r.line().startswith(r.regime)


def test_the_busy_time_s_fixed_cost_is_bounded_by_the_shortest_average_kernel():
    """Worked by hand from the shipped files: the 135M's batch-1 step ran 1,222 kernels in at
    most 2.2207 ms (the high end of its spread): 1.817 µs a kernel; its 2.20 ms could be all
    fixed cost (not judged, instead of memory-bound at 3 % of the bandwidth); the 8B's 1,463
    kernels hold at most 2.66 ms of its 6.21 ms: under half, so the floors decide."""
    small = perf.busy_rows(perf.gpu_reference("busy-sweep", "smollm2-135m"))
    assert perf.kernel_time_bound() == pytest.approx(2.2207285e-3 / 1222, rel=1e-6)
    assert small[0].kernels == 1222 and small[0].mbu < 0.05
    assert small[0].regime == perf.NOT_JUDGED and small[0].verdict.regime == "memory-bound"
    assert "no measured fixed cost" in small[0].line()
    assert [r.regime for r in small].count(perf.NOT_JUDGED) == 5  # judged only at 1,024
    big = perf.busy_rows(perf.gpu_reference("busy-sweep", "llama-3.1-8b"))
    assert big[0].fixed_bound_s == pytest.approx(1463 * 2.2207285e-3 / 1222, rel=1e-6)
    assert big[0].fixed_bound_s == pytest.approx(2.66e-3, abs=0.005e-3)
    assert [r.regime for r in big] == ["memory-bound"] * 3 + ["compute-bound"] * 3
    # another device's sweep is bounded by its own kernels only (here: 6.23 ms ÷ 1,463 a
    # kernel, so the 8B's batch-1 step could be all fixed cost: not judged)
    elsewhere = perf.gpu_reference("busy-sweep", "llama-3.1-8b")
    elsewhere.environment.device_name = "another GPU"
    rows = perf.busy_rows(elsewhere)
    assert rows[0].fixed_bound_s == pytest.approx(rows[0].busy.high, rel=1e-6)
    assert rows[0].regime == perf.NOT_JUDGED


def test_a_measured_busy_fixed_cost_is_used_whole_and_must_match_the_depth():
    """gpu_check.py now writes the busy time of a model as deep, 64 wide, into the sweep: the
    rule then runs whole, overhead-bound included."""
    sweep = perf.gpu_reference("busy-sweep", "smollm2-135m")
    fixed = viz.Spread(2.0e-3, 1.98e-3, 2.02e-3, 4)
    sweep.settings["fixed_cost"] = {
        "n_layers": 30,
        "hidden_size": 64,
        "batch_size": 1,
        "busy_s": {"median": 2.0e-3, "low": 1.98e-3, "high": 2.02e-3, "runs": 4, "derived": False},
    }
    assert perf.busy_fixed_cost(sweep) == fixed
    rows = perf.busy_rows(sweep)
    assert all(r.fixed == fixed and r.fixed_bound_s is None for r in rows)
    assert rows[0].regime == rows[0].verdict.regime == "overhead-bound"  # 2.0 of 2.2 ms
    assert "measured" in rows[0].line()
    sweep.settings["fixed_cost"]["n_layers"] = 32
    with pytest.raises(ValueError, match="measured 32 layers deep, not 30"):
        perf.busy_rows(sweep)
    sweep.settings["fixed_cost"]["busy_s"] = None  # measured without CUDA kernels
    assert perf.busy_fixed_cost(sweep) is None


def test_graph_steps_pair_milliseconds_from_one_run():
    """Lesson 13: the CUDA-graph step beside the eager kernel sum (2.25 vs 2.20 ms; 6.55 vs
    6.21 ms), and the eager walls' ratios from the same run: ×21.7 and ×4.6 with the static
    cache, ×18.5 and ×3.9 with the growing one (41.6 → 2.25 ms, 25.3 → 6.55 ms)."""
    small, big = perf.graph_steps()
    assert (small.model, big.model) == perf.GPU_MODELS
    for g in (small, big):
        run = perf.gpu_reference("compiled-step", g.model)
        assert g.graph == run.compiled and g.eager == run.eager and g.recorded == run.recorded
        assert g.speedup == run.speedup  # eager ÷ graph, both from the compiled-step file
        assert g.busy == perf.busy_rows(perf.gpu_reference("busy-sweep", g.model))[0].busy
    assert small.graph.median * 1e3 == pytest.approx(2.25, abs=0.005)
    assert small.busy.median * 1e3 == pytest.approx(2.20, abs=0.005)
    assert small.graph_over_busy.median == pytest.approx(1.02, abs=0.005)
    assert big.graph_over_busy.median == pytest.approx(1.055, abs=0.005)
    assert small.speedup.median == pytest.approx(21.7, abs=0.05)
    assert big.speedup.median == pytest.approx(4.58, abs=0.01)
    assert (small.recorded / small.graph).median == pytest.approx(18.5, abs=0.05)
    assert (big.recorded / big.graph).median == pytest.approx(3.86, abs=0.01)
    assert big.mbu == pytest.approx(0.54, abs=0.005) and small.same_tokens and not big.same_tokens


def test_the_same_eager_step_drifted_across_the_session_s_files():
    """Why no lesson uses an eager wall as a GPU figure: the 135M's 23.6 to 106.6 ms, the 8B's
    25.3 to 113.8 ms; only the memory-wall run measured the host's launch cost beside it."""
    for model, lowest, highest in (("smollm2-135m", 23.6, 106.6), ("llama-3.1-8b", 25.3, 113.8)):
        walls = perf.eager_walls(model)
        medians = [w.median * 1e3 for _, w, _ in walls]
        assert min(medians) == pytest.approx(lowest, abs=0.05)
        assert max(medians) == pytest.approx(highest, abs=0.05)
        assert max(medians) / min(medians) > 4
        assert [what for what, _, host in walls if host] == ["memory-wall run"]
    assert [what for what, _, _ in perf.eager_walls()][1] == "the shipped trace"


def test_the_graph_step_figure_draws_no_eager_wall():
    from viz import views

    d = views.graph_step_data(perf.graph_steps())
    assert len(d["panels"]) == 2 and not any("wall" in b for b in d["bars"])
    assert d["panels"][0]["ms"][2] == pytest.approx(2.2503, abs=1e-3)
    fig = views.graph_step_figure(perf.graph_steps())
    assert len(fig.data) == 6 and "×1.02" in fig.layout.annotations[0].text
    with pytest.raises(ValueError, match="viz.perf.graph_steps"):
        views.graph_step_data([])


def test_the_8b_knee_measured_lies_where_counting_puts_it():
    sweep = perf.gpu_reference("busy-sweep", "llama-3.1-8b")
    rows = perf.busy_rows(sweep)
    last_memory, first_compute = perf.busy_knee(rows)
    peaks = perf.gpu_peaks()
    counted = perf.ridge_batch(
        sweep.model, peaks.flops_per_s, peaks.bytes_per_s, rows[0].context_tokens
    )
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
        assert r.mfu == pytest.approx(cost.flops / perf.gpu_peaks().flops_per_s / r.seconds.median)
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
