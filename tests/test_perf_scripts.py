"""The GPU script runs end to end (a --quick dry run on this CPU); shipped references load."""

import importlib.util
import json
from pathlib import Path

import pytest

import viz
from viz import load_document
from viz import perf

ROOT = Path(__file__).resolve().parent.parent


def load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    assert [p.label for p in roof.points] == ["prefill", "decode", "decode B=1", "decode B=2",
                                              "prefill 4", "prefill 16"]
    peaks = json.loads((tmp_path / "gpu-peaks.json").read_text())
    assert peaks["model_dtype"]["flops_per_s"] > 0
    wall = perf.WallRun.load(tmp_path / "gpu-memory-wall.json")  # lesson 08's GPU reference
    assert [p.label for p in wall.points] == ["1 layer × 64 fp32", "2 layers × 64 fp32",
                                              "tiny-llama fp32", "tiny-llama fp32 B=4"]
    assert wall.recorded["command"].startswith("python benchmarks/gpu_check.py")
    step = load_document(tmp_path / "gpu-tiny-llama-compiled-step.json")  # lesson 11's remedy
    assert isinstance(step, perf.CompiledStep) and step.same_tokens and step.graphs == 1
    assert "gpu_check.py" in step.note and summary["environment"]["date"]


def test_gpu_check_budget_skips_instead_of_overrunning(tmp_path):
    gpu_check = load_script("gpu_check")
    assert gpu_check.main(["--quick", "--out", str(tmp_path), "--budget-s", "0"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {s["status"] for s in summary["steps"]} == {"skipped (time budget)"}


def test_shipped_references_load_and_stay_small():
    names = perf.list_references()
    if not names:
        pytest.skip("no reference data shipped in viz/data/")
    data = Path(viz.__file__).parent / "data"
    for name in names:
        ref = perf.load_reference(name)
        assert isinstance(ref, (viz.Trace, perf.Sweep, perf.Roofline, perf.WallRun,
                                perf.FormatRun, perf.CompiledStep)), name
        size = (data / f"{name}.json").stat().st_size
        if isinstance(ref, viz.Trace):
            assert size <= 200_000, f"{name} is {size:,} bytes: keep a shipped trace <= 200 KB"
        else:
            assert size <= 50_000, name
    with pytest.raises(ValueError, match="no reference named"):
        perf.load_reference("no-such-reference")


def test_lesson_11_s_references_are_labelled_and_whole():
    """What lesson 11 shows where it cannot measure (Binder without llama.cpp; compiling the
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


def test_cli_sweep_and_roofline(tmp_path, capsys):
    from viz.cli import main

    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(load_script("gpu_check").QUICK["configs"][0]))
    out = tmp_path / "sweep.json"
    assert main(["sweep", "batch", "--values", "1", "2", "--max-new-tokens", "3", "--config",
                 str(config), "--device", "cpu", "--quiet", "-o", str(out)]) == 0
    assert perf.Sweep.load(out).column("batch_size") == [1, 2]
    assert "batch_size sweep" in capsys.readouterr().out
    assert main(["sweep", "cache", "--values", "3", "--config", str(config)]) == 2  # bad input
    assert "takes no --values: use --max-new-tokens" in capsys.readouterr().err
    assert main(["sweep", "prompt", "--max-new-tokens", "3", "--config", str(config)]) == 2
    assert "drop --max-new-tokens" in capsys.readouterr().err
    assert main(["sweep", "batch", "--threads", "0", "--config", str(config)]) == 2
    assert "threads must be a whole number >= 1" in capsys.readouterr().err
    roof = tmp_path / "roof.json"
    assert main(["roofline", "--config", str(config), "--device", "cpu", "--max-new-tokens", "3",
                 "--threads", "1",
                 "--quiet", "-o", str(roof)]) == 0
    loaded = perf.Roofline.load(roof)
    assert [p.label for p in loaded.points] == ["prefill", "decode"]
    assert loaded.environment.threads == loaded.peaks.threads == 1


def test_long_context_benchmark_quick_dry_run(capsys):
    long_context = load_script("long_context")
    assert long_context.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for heading in ("1. prefill (tiny-llama", "2. decode step against context",
                    "3. time to first token of a 256-token prompt",
                    "4. the continuous-batching engine"):
        assert heading in out
    assert out.count("same first token: True") == 4
    assert "hit rate" in out and "0% without" in out


@pytest.mark.real_model
def test_serving_benchmark_sweeps_and_compares(tmp_path, capsys):
    serving = load_script("serving")
    assert serving.main(["--settings", "one-at-a-time", "--n-requests", "2", "--rates", "1",
                         "--repeats", "1", "--max-tokens", "3", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "rate sweep, 2 requests per run" in printed and "side by side" in printed
    from viz.serve import LoadSweep
    sweep = LoadSweep.load(tmp_path / "sweep-one-at-a-time.json")
    assert sweep.point("synchronous") is not None and sweep.point("throughput") is not None
