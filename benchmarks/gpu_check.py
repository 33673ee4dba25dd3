"""Every GPU check and reference recording, in ONE call that fits in 10 minutes.

For a session that is lent a GPU (see ../shared/NOTES.md: one H200, no network, 64 MiB may
travel, 15 minutes of device time in all). Nothing is downloaded: the models are built from
the configs in viz/perf/configs/ with random weights (real kernels, real timings and memory,
meaningless text), in bfloat16, directly on the GPU.

    python benchmarks/gpu_check.py --out "$OUT"                 # on the GPU machine
    python benchmarks/gpu_check.py --quick --out /tmp/gpu-dry    # a dry run anywhere (CPU)

In order, each step timed and guarded (an error is written down and the next step runs; when
the time budget is nearly spent, the remaining steps are skipped and say so):
1. the CUDA tests (`tests/test_perf_cuda.py`, when pytest is installed there);
2. the device's peaks in bfloat16 (and float32): matmul FLOP/s, read bytes/s, CUDA events;
3. the memory wall (lesson 08): the device's peaks measured as `viz.perf.machine_peaks` does
   (matmul per dtype; read, copy and matvec bandwidth over 2 GiB), the fixed per-step cost
   (tiny-width models of each depth) and the decode step of SmolLM2-135M/360M/1.7B,
   Llama-3.2-1B and Llama-3.1-8B in bfloat16 and float32, plus Llama-3.2-1B at batch 512
   (`viz.perf.measure_wall`); `--wall-only` runs just this (and the peaks);
4. for each config (smollm2-135m, llama-3.2-1b, llama-3.1-8b): build it; record a 64-token
   chat reply (a trace); prompt-length, context-length, batch-size and cache sweeps; its
   roofline (trace prefill/decode + one decode point per batch size); free it.
Outputs under --out: gpu-<config>-trace.json, gpu-<config>-<sweep>-sweep.json,
gpu-<config>-roofline.json, gpu-peaks.json, gpu-memory-wall.json (a `viz.perf.WallRun`: copy
it to viz/data/ to ship it), summary.json (what ran, how long, what failed).
Copy the ones worth shipping into viz/data/ (each trace ≤ 200 KB) and note the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import viz  # noqa: E402
from viz import perf  # noqa: E402

CHAT_PROMPT = "Explain in a few sentences why the sky is blue."

FULL = {
    "configs": ["smollm2-135m", "llama-3.2-1b", "llama-3.1-8b"],
    "trace_tokens": 64,
    "prompt_lengths": [128, 512, 1024, 2048, 4096],
    "prompt_repeats": 3,
    "contexts": [128, 1024, 4096, 8000],  # + 17 steps stays within SmolLM2's 8192
    "context_steps": 16,
    "batch_sizes": [1, 4, 16, 64],
    "batch_tokens": 32,
    "cache_tokens": 32,
    "peaks": {"max_n": 16384, "buffer_bytes": 2 << 30, "repeats": 10},
    "device": "cuda",
    "dtype": "bfloat16",
    "wall": {"shapes": ["smollm2-135m", "smollm2-360m", "llama-3.2-1b", "smollm2-1.7b",
                        "llama-3.1-8b"],
             "dtypes": ["bfloat16", "float32"], "steps": 16, "repeats": 3,
             "buffer_bytes": 2 << 30, "max_n": 16384,
             "compute_point": ("llama-3.2-1b", "bfloat16", 512)},
}
# A dry run for any machine (the test suite runs it on the CPU): a 2-layer config, tiny sizes.
QUICK = {
    "configs": [{"name": "tiny-llama", "source": "viz tests", "config": {
        "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "vocab_size": 300, "max_position_embeddings": 256,
        "tie_word_embeddings": True}}],
    "trace_tokens": 6,
    "prompt_lengths": [4, 16],
    "prompt_repeats": 1,
    "contexts": [8, 32],
    "context_steps": 2,
    "batch_sizes": [1, 2],
    "batch_tokens": 3,
    "cache_tokens": 4,
    "peaks": {"max_n": 128, "buffer_bytes": 1 << 22, "repeats": 2, "budget_s": 0.5},
    "device": "auto",
    "dtype": None,
    "wall": {"shapes": ["tiny-llama"], "dtypes": ["float32"], "steps": 3, "repeats": 1,
             "buffer_bytes": 4 << 20, "max_n": 64, "compute_point": ("tiny-llama",
                                                                        "float32", 4)},
}


class Runner:
    """Runs named steps in order: timed, errors caught and logged, skipped past the budget."""

    def __init__(self, out: Path, budget_s: float):
        self.out, self.budget_s, self.start = out, budget_s, time.perf_counter()
        self.steps: list[dict] = []

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def run(self, name: str, fn, *, reserve_s: float = 0.0):
        if self.elapsed() + reserve_s > self.budget_s:
            self.steps.append({"step": name, "status": "skipped (time budget)", "seconds": 0})
            print(f"[{self.elapsed():6.1f}s] SKIP {name}: time budget", flush=True)
            return None
        t0 = time.perf_counter()
        print(f"[{self.elapsed():6.1f}s] {name} ...", flush=True)
        try:
            result = fn()
            status = "ok"
        except Exception as e:  # keep going: one failure must not lose the other results
            result, status = None, f"error: {type(e).__name__}: {e}"
            traceback.print_exc()
        seconds = time.perf_counter() - t0
        self.steps.append({"step": name, "status": status, "seconds": round(seconds, 2)})
        print(f"[{self.elapsed():6.1f}s] {name}: {status} ({seconds:.1f} s)", flush=True)
        return result

    def save(self, obj, name: str) -> Path:
        path = obj.save(self.out / name)
        print(f"    wrote {path.name} ({path.stat().st_size:,} bytes)", flush=True)
        return path


def cuda_tests(runner: Runner) -> str:
    try:
        import pytest  # noqa: F401
    except ImportError:
        return "pytest not installed: CUDA tests not run"
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_perf_cuda.py", "-q",
                           "-rs", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    (runner.out / "cuda-tests.txt").write_text(proc.stdout + proc.stderr)
    tail = proc.stdout.strip().splitlines()[-1:] or ["no output"]
    if proc.returncode != 0:
        raise RuntimeError(f"CUDA tests failed: {tail[0]} (see cuda-tests.txt)")
    return tail[0]


def environment() -> dict:
    import transformers

    env = {"python": platform.python_version(), "torch": torch.__version__,
           "transformers": transformers.__version__, "cuda": torch.version.cuda,
           "viz": viz.__version__, "device": "cpu"}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(device=torch.cuda.get_device_name(0), memory_bytes=p.total_memory,
                   multiprocessors=p.multi_processor_count)
    return env


def one_config(runner: Runner, plan: dict, config, peaks) -> None:
    name = config if isinstance(config, str) else config["name"]
    tag = name.lower()
    lm = runner.run(f"{tag}: build from config",
                    lambda: perf.from_config(config, device=plan["device"], dtype=plan["dtype"]),
                    reserve_s=30)
    if lm is None:
        return
    label = f"{viz.runtime.device_name(lm.device)} (random weights)"
    print(f"    {lm!r}", flush=True)

    def trace():
        t = viz.record(lm, CHAT_PROMPT, chat=True, max_new_tokens=plan["trace_tokens"],
                       stop_at_eos=False, embeddings=False, label=label)
        runner.save(t, f"gpu-{tag}-trace.json")
        print("    " + t.summary().replace("\n", "\n    "), flush=True)
        m = t.memory
        if m.device_peak_bytes is not None:
            print(f"    device memory: weights {m.device_weights_bytes / 1e9:.2f} GB, peak "
                  f"{m.device_peak_bytes / 1e9:.2f} GB, after {m.device_end_bytes / 1e9:.2f} GB "
                  f"(KV cache by formula {t.steps[-1].kv_bytes_formula / 1e6:.1f} MB)", flush=True)
        return t

    t = runner.run(f"{tag}: trace", trace, reserve_s=20)
    sweeps = {}
    steps = [
        ("prompt", lambda: perf.prompt_length_sweep(
            lm, plan["prompt_lengths"], repeats=plan["prompt_repeats"], progress=False,
            label=label)),
        ("context", lambda: perf.context_length_sweep(
            lm, plan["contexts"], max_new_tokens=plan["context_steps"] + 1, progress=False, label=label)),
        ("batch", lambda: perf.batch_size_sweep(
            lm, plan["batch_sizes"], max_new_tokens=plan["batch_tokens"], progress=False,
            label=label)),
        ("cache", lambda: perf.cache_sweep(
            lm, CHAT_PROMPT, max_new_tokens=plan["cache_tokens"], progress=False, label=label)),
    ]
    for kind, fn in steps:
        def run_sweep(kind=kind, fn=fn):
            s = fn()
            runner.save(s, f"gpu-{tag}-{kind}-sweep.json")
            print("    " + str(s).replace("\n", "\n    "), flush=True)
            return s
        sweeps[kind] = runner.run(f"{tag}: {kind} sweep", run_sweep, reserve_s=20)

    def roofline():
        r = perf.measure_roofline(lm, peaks=peaks, trace=t, batch=sweeps.get("batch"),
                                  prompt_sweep=sweeps.get("prompt"), label=label)
        runner.save(r, f"gpu-{tag}-roofline.json")
        print("    " + str(r).replace("\n", "\n    "), flush=True)

    if peaks is not None:
        runner.run(f"{tag}: roofline", roofline)
    del lm
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def memory_wall(runner: Runner, plan: dict):
    """The memory-wall reference on this device: peaks, fixed cost, one point per shape."""
    from viz.perf.machine import measure_machine_peaks
    from viz.perf.wall import measure_wall

    w = plan["wall"]
    named = {c["name"]: c for c in plan["configs"] if isinstance(c, dict)}
    shapes = [named.get(s, s) for s in w["shapes"]]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtypes = list(dict.fromkeys(w["dtypes"] + ["bfloat16", "float32"]))
    peaks = measure_machine_peaks(dev, buffer_bytes=w["buffer_bytes"], max_n=w["max_n"],
                                  dtypes=dtypes)
    print("    " + peaks.how().replace("\n", "\n    "), flush=True)
    label = f"{peaks.device_name} (random weights)"
    run = measure_wall(shapes, w["dtypes"], peaks=peaks, overhead_depths=[1],
                       max_new_tokens=w["steps"], repeats=w["repeats"], device=dev, label=label)
    if w.get("compute_point"):
        shape, dtype, batch = w["compute_point"]
        more = measure_wall([named.get(shape, shape)], [dtype], peaks=peaks, batch_sizes=[batch],
                            prompt="Hi", max_new_tokens=max(3, w["steps"] // 2),
                            repeats=w["repeats"], overhead=run.overhead, device=dev,
                            fixed_cost_points=False, label=label)
        run = run.merged(more)
    try:
        fit = str(run.fit())
    except ValueError as e:  # tiny dry-run models may show no slope
        fit = f"no fit: {e}"
    run = replace(run, notes=[fit], recorded={
        **run.recorded, "command": "python benchmarks/gpu_check.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": peaks.device_name})
    runner.save(run, "gpu-memory-wall.json")
    print("    " + str(run).replace("\n", "\n    ") + "\n    " + fit, flush=True)
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the JSON results")
    ap.add_argument("--quick", action="store_true", help="a tiny dry run (any device, seconds)")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="stop starting new steps after this many seconds (default 540)")
    ap.add_argument("--configs", nargs="+", default=None, help="only these shipped configs")
    ap.add_argument("--wall-only", action="store_true",
                    help="only the peaks and the memory wall (lesson 08's GPU reference)")
    args = ap.parse_args(argv)
    plan = dict(QUICK if args.quick else FULL)
    if args.configs:
        plan["configs"] = args.configs
    if not args.quick and not torch.cuda.is_available():
        print("no CUDA device here: run with --quick for a dry run on this machine")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runner = Runner(out, args.budget_s)
    env = environment()
    print(json.dumps(env), flush=True)

    if torch.cuda.is_available() and not args.wall_only:
        runner.run("CUDA tests", lambda: cuda_tests(runner), reserve_s=60)

    def measure(dtype):
        dev = "cuda" if plan["device"] == "cuda" else plan["device"]
        p = perf.measure_peaks(dev, dtype, **plan["peaks"])
        print(f"    {p.device_name} {p.dtype}: {p.flops_per_s / 1e12:.2f} TFLOP/s, "
              f"{p.bytes_per_s / 1e9:.1f} GB/s, ridge {p.ridge_intensity:.0f} FLOP/byte "
              f"({p.timer})", flush=True)
        return p

    peaks = runner.run("peaks (model dtype)", lambda: measure(plan["dtype"]))
    fp32 = runner.run("peaks (float32)", lambda: measure("float32"), reserve_s=60)
    (out / "gpu-peaks.json").write_text(json.dumps(
        {"environment": env, "model_dtype": asdict(peaks) if peaks else None,
         "float32": asdict(fp32) if fp32 else None}, indent=1))

    runner.run("memory wall", lambda: memory_wall(runner, plan), reserve_s=90)

    for config in ([] if args.wall_only else plan["configs"]):
        one_config(runner, plan, config, peaks)

    summary = {"environment": env, "plan": {k: v for k, v in plan.items() if k != "configs"},
               "configs": [c if isinstance(c, str) else c["name"] for c in plan["configs"]],
               "steps": runner.steps, "total_s": round(runner.elapsed(), 1),
               "files": sorted(p.name for p in out.glob("*.json"))}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    failed = [s for s in runner.steps if s["status"].startswith("error")]
    print(f"done in {runner.elapsed():.0f} s: {len(runner.steps)} steps, {len(failed)} failed, "
          f"{sum(s['status'].startswith('skipped') for s in runner.steps)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
