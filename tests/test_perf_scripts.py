"""The GPU script runs end to end (a --quick dry run on this CPU); shipped references load."""

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import fake_machine_peaks

import viz
from viz import load_document
from viz import perf
from viz.perf.machine import machine_key

ROOT = Path(__file__).resolve().parent.parent


def load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def peaks_made_by_hand(tmp_path, monkeypatch):
    """This machine's peaks as if measured already (made by hand: read 30 GB/s, float32
    matmul 90 GFLOP/s), at torch's thread count and at 1, in a measurements folder of the
    test's own, reused unchecked: what only divides by them does not measure them (seconds of
    both cores). The suite's folder, which the lessons share, is left alone."""
    monkeypatch.setenv("VIZ_MEASURE_DIR", str(tmp_path / "measurements"))
    monkeypatch.setenv("VIZ_CHECK_PEAKS", "0")
    for threads in (None, 1):
        key = machine_key("cpu", threads)
        peaks = fake_machine_peaks(**{k: v for k, v in key.items() if k != "device"})
        peaks.save(perf.peaks_path("cpu", threads))


def test_gpu_check_quick_dry_run(tmp_path, capsys):
    gpu_check = load_script("gpu_check")
    assert gpu_check.main(["--quick", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] and all(s["status"] == "ok" for s in summary["steps"])
    trace = viz.Trace.load(tmp_path / "gpu-tiny-llama-trace.json")
    assert trace.model.random_weights and trace.n_generated == 6
    for kind in ("prompt", "context", "batch", "cache"):
        sweep = perf.Sweep.load(tmp_path / f"gpu-tiny-llama-{kind}-sweep.json")
        assert len(sweep) >= 2
    roof = perf.Roofline.load(tmp_path / "gpu-tiny-llama-roofline.json")
    assert [p.label for p in roof.points] == [
        "prefill",
        "decode",
        "decode B=1",
        "decode B=2",
        "prefill 4",
        "prefill 16",
    ]
    peaks = json.loads((tmp_path / "gpu-peaks.json").read_text())
    assert peaks["model_dtype"]["flops_per_s"] > 0
    wall = perf.WallRun.load(tmp_path / "gpu-memory-wall.json")  # lesson 08's GPU reference
    assert [p.label for p in wall.points] == [
        "1 layer × 64 fp32",
        "2 layers × 64 fp32",
        "tiny-llama fp32",
        "tiny-llama fp32 B=4",
    ]
    assert wall.recorded["command"].startswith("python benchmarks/gpu_check.py")
    step = load_document(tmp_path / "gpu-tiny-llama-compiled-step.json")  # lesson 13's remedy
    assert isinstance(step, perf.CompiledStep) and step.same_tokens and step.graphs == 1
    assert "gpu_check.py" in step.note and summary["environment"]["date"]
    # the host, recorded once and before and after every part, in every file a part wrote
    env = summary["environment"]
    assert env["cpu"] and env["cpu_count"] >= 1 and env["command"].startswith("python ")
    assert {p["part"] for p in summary["parts"]} >= {
        "host",
        "peaks",
        "memory wall",
        "tiny-llama: busy time",
    }
    for path in tmp_path.glob("gpu-*.json"):
        host = json.loads(path.read_text())["host"]
        for when in ("before", "after"):
            assert host[when]["launch_s"]["median"] > 0 and len(host[when]["load_average"]) == 3
            assert "gpu" in host[when]  # {"source": None} on a CPU
        assert set(host["launch_drift"]) >= {"before_s", "after_s", "moved_s", "allowed_s"}
    assert summary["drifted"] == [] and summary["set_aside"] == []  # the dry run only records
    host = json.loads((tmp_path / "gpu-host.json").read_text())
    assert host["attention"] and host["launch_s_threads_1"]["median"] > 0
    # the busy sweep carries its fixed cost: a model as deep, 64 wide (None busy time on a CPU)
    busy = perf.Sweep.load(tmp_path / "gpu-tiny-llama-busy-sweep.json")
    fixed = busy.settings["fixed_cost"]
    assert (fixed["n_layers"], fixed["hidden_size"], fixed["batch_size"]) == (2, 64, 1)
    assert fixed["wall_s"]["median"] > 0 and busy.settings["attention"] == "sdpa"
    assert perf.busy_fixed_cost(busy) is None  # no CUDA kernels here: nothing measured
    # the compiled step's profile: kernels (here the CPU's ops) by kind, eager and compiled
    profile = json.loads((tmp_path / "gpu-tiny-llama-compiled-profile.json").read_text())
    for way in ("eager", "compiled"):
        kinds = profile[way]["by_kind"]
        assert profile[way]["kernels_per_step"] == sum(k["kernels"] for k in kinds.values())
    assert "matrix products" in profile["eager"]["by_kind"]
    assert profile["compiled_call_wall_s"]["median"] > 0
    # decode against the context at two batch sizes, with the KV counted; eager vs SDPA
    grid = perf.Sweep.load(tmp_path / "gpu-tiny-llama-context-batch-sweep.json")
    assert grid.column("context_tokens") == [0, 32, 0, 32]
    assert grid.column("batch_size") == [1, 1, 2, 2]
    spec = grid.model
    assert grid.column("kv_bytes_counted") == [
        b * c * spec.kv_bytes_per_token() for b, c in zip([1, 1, 2, 2], [0, 32, 0, 32])
    ]
    assert grid.settings["attention_implementation"] == "sdpa"
    attention = perf.Sweep.load(tmp_path / "gpu-tiny-llama-attention-sweep.json")
    assert attention.column("batch_size") == [1, 2]
    assert all(v > 0 for impl in ("eager", "sdpa") for v in attention.column(f"{impl}_step_s"))
    printed = capsys.readouterr().out
    assert "host launch cost" in printed and "HOST DRIFTED" not in printed


def test_gpu_check_sets_aside_a_part_whose_host_drifted(tmp_path, monkeypatch, capsys):
    """A part's files go to drifted/, not beside the others, when the host's launch cost moved
    by more than its spread (or the floor) between before and after, with a loud message."""
    gpu_check = load_script("gpu_check")
    costs = iter([10e-6, 10e-6, 10e-6, 10.1e-6, 10e-6, 14e-6])  # steady, steady, drifted
    monkeypatch.setattr(
        gpu_check, "launch_probe", lambda rounds, launches: viz.Spread.exact(next(costs))
    )
    monkeypatch.setattr(gpu_check, "gpu_state", lambda: {"source": None})
    runner = gpu_check.Runner(tmp_path, 600, {"rounds": 1, "launches": 1, "drift_floor": 0.05})
    for name in ("steady", "nudged", "drifting"):
        runner.part(name, lambda name=name: runner.write_json({"x": 1}, f"{name}.json"))
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["nudged.json", "steady.json"]
    assert [p.name for p in (tmp_path / "drifted").glob("*.json")] == ["drifting.json"]
    stamped = json.loads((tmp_path / "drifted" / "drifting.json").read_text())
    assert stamped["x"] == 1 and stamped["host"]["launch_drift"]["drifted"]
    assert stamped["host"]["launch_drift"]["moved_s"] == pytest.approx(4e-6)
    assert [p["drifted"] for p in runner.parts] == [False, False, True]
    assert "HOST DRIFTED during drifting" in capsys.readouterr().out


def test_launch_drift_is_judged_by_the_spread_or_the_floor():
    gpu_check = load_script("gpu_check")
    Spread = viz.Spread
    # spreads 1 µs wide: a 0.8 µs move stays within them, a 1.2 µs move does not
    before = Spread(10e-6, 9.5e-6, 10.5e-6, 5)
    assert not gpu_check.launch_drift(before, Spread(10.8e-6, 10.3e-6, 11.3e-6, 5), 0.05)["drifted"]
    assert gpu_check.launch_drift(before, Spread(11.2e-6, 10.7e-6, 11.7e-6, 5), 0.05)["drifted"]
    # exact figures: the floor (5 % of 10 µs = 0.5 µs) decides; None never sets aside
    assert not gpu_check.launch_drift(Spread.exact(10e-6), Spread.exact(10.4e-6), 0.05)["drifted"]
    assert gpu_check.launch_drift(Spread.exact(10e-6), Spread.exact(10.6e-6), 0.05)["drifted"]
    assert not gpu_check.launch_drift(Spread.exact(10e-6), Spread.exact(99e-6), None)["drifted"]


def test_kernels_are_sorted_by_kind_from_their_names():
    gpu_check = load_script("gpu_check")
    kind = gpu_check.kernel_kind
    assert kind("nvjet_tst_128x64_64x8_2x1_v_bz_coopA_NTN") == "matrix products"
    assert (
        kind("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm>")
        == "matrix products"
    )
    assert kind("void gemv2T_kernel_val<int, int, __nv_bfloat16, float>") == "matrix products"
    assert (
        kind("void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits>") == "attention"
    )
    assert kind("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0") == "fused (Inductor)"
    assert kind("void at::native::(anonymous namespace)::CatArrayBatchedCopy<...>") == "copies"
    assert (
        kind("void at::native::reduce_kernel<512, 1, ReduceOp<float, MeanOps>>")
        == "norms and reductions"
    )
    assert kind("void at::native::vectorized_elementwise_kernel<4, silu_kernel>") == "elementwise"
    assert kind("something_else") == "other"


def test_gpu_check_budget_skips_instead_of_overrunning(tmp_path):
    gpu_check = load_script("gpu_check")
    assert gpu_check.main(["--quick", "--out", str(tmp_path), "--budget-s", "0"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {s["status"] for s in summary["steps"]} == {"skipped (time budget)"}


def test_speed_budget_names_the_outermost_imports_a_load_never_runs():
    """benchmarks/speed_budget.py reads `python -X importtime` (a child printed before its
    parent, two spaces deeper) after the snippet's mark: a listed package inside another
    listed one is counted with it, not again; what came before the mark is left out."""
    speed_budget = load_script("speed_budget")

    def line(microseconds, depth, name):
        return f"import time: {1:>9} | {microseconds:>10} | {'  ' * depth}{name}"

    text = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            line(900_000, 0, "torch._dynamo.before_the_load"),
            "viz-load-starts",
            line(100_000, 2, "sympy"),
            line(400_000, 1, "torch._dynamo"),
            line(500_000, 0, "transformers.masking_utils"),
            line(600_000, 1, "torch.distributed.tensor"),
            line(700_000, 0, "transformers.distributed.sharding_utils"),
            line(50_000, 0, "torch.export"),
            line(20_000, 0, "transformers.generation"),
        ]
    )
    assert speed_budget.never_run_imports(speed_budget.import_tree(text)) == [
        ("torch._dynamo", 0.4, "transformers.masking_utils"),
        ("torch.distributed.tensor", 0.6, "transformers.distributed.sharding_utils"),
        ("torch.export", 0.05, "(the load)"),
    ]


def test_shipped_references_load_and_stay_small():
    names = perf.list_references()
    if not names:
        pytest.skip("no reference data shipped in viz/data/")
    data = Path(viz.__file__).parent / "data"
    for name in names:
        ref = perf.load_reference(name)
        assert isinstance(
            ref,
            (viz.Trace, perf.Sweep, perf.Roofline, perf.WallRun, perf.FormatRun, perf.CompiledStep),
        ), name
        size = (data / f"{name}.json").stat().st_size
        if isinstance(ref, viz.Trace):
            assert size <= 200_000, f"{name} is {size:,} bytes: keep a shipped trace <= 200 KB"
        else:
            assert size <= 50_000, name
    with pytest.raises(ValueError, match="no reference named"):
        perf.load_reference("no-such-reference")


def test_lesson_11_s_references_are_labelled_and_whole():
    """What lessons 12 and 13 show where it cannot measure (Binder without llama.cpp; compiling the
    course model): one machine's run of benchmarks/remedies.py, saying so."""
    from viz.views import compiled_figure, formats_figure

    formats = perf.load_reference("cpu-formats")
    assert isinstance(formats, perf.FormatRun)
    assert [p.format for p in formats.points] == list(perf.FORMATS)  # all six, one machine
    assert formats.source.startswith("`python benchmarks/remedies.py")
    assert formats.read_bytes_per_s > 1e9  # that machine's read bandwidth, for its floor
    assert formats.point("llama.cpp F32").same_tokens == formats.new_tokens
    assert "reference, not measured here" in str(formats)
    title = formats_figure(formats, formats.read_bytes_per_s).layout.title.text
    assert title.startswith("reference machine (not this one)")
    compiled = perf.load_reference("cpu-compiled-step")
    assert isinstance(compiled, perf.CompiledStep)
    assert compiled.model == "SmolLM2-135M-Instruct" and compiled.n_layers == 30
    assert compiled.cold and compiled.graphs == 1 and compiled.same_tokens
    assert compiled.source.startswith("`python benchmarks/remedies.py")
    assert "reference" in compiled_figure(compiled).layout.annotations[0].text


def test_cli_sweep_and_roofline(tmp_path, capsys, peaks_made_by_hand):
    from viz.cli import main

    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(load_script("gpu_check").QUICK["configs"][0]))
    out = tmp_path / "sweep.json"
    assert (
        main(
            [
                "sweep",
                "batch",
                "--values",
                "1",
                "2",
                "--max-new-tokens",
                "3",
                "--config",
                str(config),
                "--device",
                "cpu",
                "--quiet",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert perf.Sweep.load(out).column("batch_size") == [1, 2]
    assert "batch_size sweep" in capsys.readouterr().out
    assert main(["sweep", "cache", "--values", "3", "--config", str(config)]) == 2  # bad input
    assert "takes no --values: use --max-new-tokens" in capsys.readouterr().err
    assert main(["sweep", "prompt", "--max-new-tokens", "3", "--config", str(config)]) == 2
    assert "drop --max-new-tokens" in capsys.readouterr().err
    assert main(["sweep", "batch", "--threads", "0", "--config", str(config)]) == 2
    assert "threads must be a whole number >= 1" in capsys.readouterr().err
    roof = tmp_path / "roof.json"
    assert (
        main(
            [
                "roofline",
                "--config",
                str(config),
                "--device",
                "cpu",
                "--max-new-tokens",
                "3",
                "--threads",
                "1",
                "--quiet",
                "-o",
                str(roof),
            ]
        )
        == 0
    )
    loaded = perf.Roofline.load(roof)
    assert [p.label for p in loaded.points] == ["prefill", "decode"]
    assert loaded.environment.threads == loaded.peaks.threads == 1
    assert loaded.peaks.bytes_per_s == 30e9  # the 1-thread peaks, read back, not measured


def test_long_context_benchmark_quick_dry_run(capsys, peaks_made_by_hand):
    long_context = load_script("long_context")
    assert long_context.main(["--quick", "--repeats", "3"]) == 0  # 7 steps each: 48 s in CI
    out = capsys.readouterr().out
    for heading in (
        "1. prefill (tiny-llama",
        "2. decode step against context",
        "3. time to first token of a 256-token prompt",
        "4. the continuous-batching engine",
    ):
        assert heading in out
    assert out.count("same first token: True") == 4
    assert "hit rate" in out and "0% without" in out


@pytest.mark.real_model
def test_serving_benchmark_sweeps_and_compares(tmp_path, capsys):
    serving = load_script("serving")
    assert (
        serving.main(
            [
                "--settings",
                "one-at-a-time",
                "--n-requests",
                "2",
                "--rates",
                "1",
                "--repeats",
                "1",
                "--max-tokens",
                "3",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        "rate sweep, " in printed and "2 requests per run" in printed and "side by side" in printed
    )
    from viz.serve import LoadSweep

    sweep = LoadSweep.load(tmp_path / "sweep-one-at-a-time.json")
    assert sweep.point("synchronous") is not None and sweep.point("throughput") is not None
