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
4. for each config (smollm2-135m, llama-3.1-8b, llama-3.2-1b): build it; record a 64-token
   chat reply (a trace); prompt-length, context-length, batch-size (to 1,024, past the knee)
   and cache sweeps; its roofline (trace prefill/decode + one decode point per batch size);
   free it;
5. the overhead remedy (lesson 11): smollm2-135m's decode step (right after its config), then
   llama-3.1-8b's, eager and compiled into a CUDA graph (`torch.compile(mode="reduce-overhead")`,
   `viz.perf.measure_compiled_step`), with the compile's time;
6. the GPU's own time in a decode step against the batch size (llama-3.1-8b, smollm2-135m):
   the sum of the step's kernel durations (torch.profiler) beside its wall time.
Outputs under --out: gpu-<config>-trace.json, gpu-<config>-<sweep>-sweep.json,
gpu-<config>-roofline.json, gpu-<config>-compiled-step.json, gpu-peaks.json, gpu-memory-wall.json (a `viz.perf.WallRun`: copy
it to viz/data/ to ship it), summary.json (what ran, how long, what failed).
Copy the ones worth shipping into viz/data/ (each trace ≤ 200 KB) and note the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
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
    "configs": ["smollm2-135m", "llama-3.1-8b", "llama-3.2-1b"],
    "trace_tokens": 64,
    "prompt_lengths": [128, 512, 1024, 2048, 4096],
    "prompt_repeats": 3,
    "contexts": [128, 1024, 4096, 8000],  # + 17 steps stays within SmolLM2's 8192
    "context_steps": 16,
    # past the knee: an 8B step in bfloat16 reads ~15 GB, and its arithmetic passes that at a
    # batch near the ridge (~180-300 FLOP/byte on a recent GPU), so the largest batches are there
    "batch_sizes": [1, 4, 16, 64, 256, 1024],
    "batch_tokens": 32,
    "cache_tokens": 32,
    "peaks": {"max_n": 16384, "buffer_bytes": 2 << 30, "repeats": 10},
    "device": "cuda",
    "dtype": "bfloat16",
    # the overhead remedy on a GPU (lesson 11): the decode step compiled and captured into a
    # CUDA graph (torch.compile mode="reduce-overhead"), for these configs, in this order
    "compiled": {"configs": ["smollm2-135m", "llama-3.1-8b"], "mode": "reduce-overhead",
                 "backend": "inductor", "new_tokens": 32, "repeats": 5, "compile_threads": 16},
    # the GPU's own time in a decode step against the batch size, past the knee
    "busy": {"configs": ["llama-3.1-8b", "smollm2-135m"],
             "batch_sizes": [1, 16, 64, 256, 512, 1024], "warmup": 2, "timed": 6, "profiled": 4},
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
    "compiled": {"configs": ["tiny-llama"], "mode": "default", "backend": "aot_eager",
                 "new_tokens": 3, "repeats": 1, "compile_threads": 1},
    "busy": {"configs": ["tiny-llama"], "batch_sizes": [1, 4], "warmup": 1, "timed": 2,
             "profiled": 1},
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
           "viz": viz.__version__, "device": "cpu",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(device=torch.cuda.get_device_name(0), memory_bytes=p.total_memory,
                   multiprocessors=p.multi_processor_count, driver=gpu_driver())
    return env


def gpu_driver() -> str:
    """The NVIDIA driver's version, as nvidia-smi reports it ("" where it cannot be read)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def build(runner: Runner, plan: dict, config, what: str, reserve_s: float = 30):
    """Build `config` (a shipped name or a config dict) on the plan's device, as a timed step
    named "<tag>: build for <what>"; returns (model or None, tag)."""
    name = config if isinstance(config, str) else config["name"]
    tag = name.lower()
    lm = runner.run(f"{tag}: build {what}",
                    lambda: perf.from_config(config, device=plan["device"], dtype=plan["dtype"]),
                    reserve_s=reserve_s)
    return lm, tag


def free() -> None:
    """After `del lm`: collect the model and hand its device memory back before the next one."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def cpu_times() -> dict:
    """The host's CPU time so far (/proc/stat, in clock ticks): user, system, idle, steal."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return {}
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    return {n: int(v) for n, v in zip(names, fields)}


def host_check(runner: Runner, plan: dict) -> dict:
    """What the host costs a GPU step: microseconds to launch one tiny kernel, and one eager
    decode step of the course model's shape, each with torch's CPU threads at their default
    and at 1 (interleaved, 5 rounds). On a GPU a small model's decode step is mostly launches."""
    from viz.runtime import using_threads
    from viz.spread import Spread

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.zeros(1, device=dev)
    n_launch = 2000 if dev.type == "cuda" else 200

    def launches() -> float:  # seconds per launch: queue n tiny kernels, then wait for them
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n_launch):
            x.add_(1)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n_launch

    config = plan["host_config"]
    lm = perf.from_config(config, device=plan["device"], dtype=plan["dtype"])
    forward = viz.compat.last_logits(lm.model)
    clock = viz.runtime.Clock(lm.device)
    ids = torch.tensor([lm.tokenizer(CHAT_PROMPT)["input_ids"]], device=lm.device)

    def steps(k: int = 8) -> list[float]:  # eager decode steps after a prefill, forward only
        cache = viz.new_cache(lm.model)
        with torch.no_grad():
            token = forward(ids, cache).argmax(-1, keepdim=True)
            out = []
            for _ in range(k):
                t0 = clock.now()
                token = forward(token, cache).argmax(-1, keepdim=True)
                out.append(clock.now() - t0)
        return out

    default = torch.get_num_threads()
    runs = {f"launch_s_threads_{default}": [], "launch_s_threads_1": [],
            f"step_s_threads_{default}": [], "step_s_threads_1": []}
    launches(), steps(2)  # warm-up
    for _ in range(5):
        for n in (default, 1):
            with using_threads(n):
                runs[f"launch_s_threads_{n}"].append(launches())
                runs[f"step_s_threads_{n}"] += steps()
    del lm
    result = {"model": config if isinstance(config, str) else config["name"],
              "dtype": plan["dtype"], "cpu_count": os.cpu_count(),
              "load_average": list(os.getloadavg()), "cpu_times": cpu_times(),
              **{k: asdict(Spread.of(v)) for k, v in runs.items()}}
    for k, v in runs.items():
        print(f"    {k}: {Spread.of(v).text(1e6, 'µs', 3)}", flush=True)
    (runner.out / "gpu-host.json").write_text(json.dumps(result, indent=1))
    return result


def device_busy(runner: Runner, plan: dict, config) -> None:
    """Batch size → one decode step's wall time and the GPU's own share of it: the sum of the
    durations of the kernels it ran (torch.profiler, CUPTI), one profiled step at a time.

    Where the host launches kernels slower than the GPU runs them (a small model, an eager
    step), the wall time is the host's; the busy time is what the device spent reading and
    computing, and it shows the knee that the wall time hides."""
    from torch.profiler import ProfilerActivity, profile

    from viz.perf.sweeps import BATCH_PROMPT
    from viz.perf.table import Sweep
    from viz.spread import Spread

    b = plan["busy"]
    lm, tag = build(runner, plan, config, "for the device-busy sweep", reserve_s=20)
    if lm is None:
        return
    forward = viz.compat.last_logits(lm.model)
    clock = viz.runtime.Clock(lm.device)
    prompt = lm.tokenizer(BATCH_PROMPT)["input_ids"]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA]
                                           if lm.device.type == "cuda" else [])

    def kernel_us(prof) -> tuple[float, int]:  # the device's busy time, and its kernel count
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        return sum(e.time_range.elapsed_us() for e in kernels), len(kernels)

    def one(batch: int) -> dict:
        ids = torch.tensor([prompt] * batch, device=lm.device)
        cache = viz.new_cache(lm.model)
        wall, busy, count = [], [], []
        with torch.no_grad():
            token = forward(ids, cache).argmax(-1, keepdim=True)  # prefill, not timed
            for k in range(b["warmup"] + b["timed"] + b["profiled"]):
                if k >= b["warmup"] + b["timed"]:  # profiled steps: the kernels' own time
                    with profile(activities=activities) as prof:
                        token = forward(token, cache).argmax(-1, keepdim=True)
                        if lm.device.type == "cuda":
                            torch.cuda.synchronize()
                    us, n = kernel_us(prof)
                    busy.append(us / 1e6)
                    count.append(n)
                else:
                    t0 = clock.now()
                    token = forward(token, cache).argmax(-1, keepdim=True)
                    if k >= b["warmup"]:
                        wall.append(clock.now() - t0)
        del cache
        return {"batch_size": batch, "context_tokens": len(prompt) + b["warmup"] + b["timed"],
                "wall": Spread.of(wall), "busy": Spread.of(busy) if any(busy) else None,
                "kernels": sorted(count)[len(count) // 2]}

    def sweep():
        rows = [one(batch) for batch in b["batch_sizes"]]
        spreads = {"decode_step_s": [r["wall"] for r in rows]}
        if all(r["busy"] for r in rows):
            spreads["gpu_busy_s"] = [r["busy"] for r in rows]
        columns = {"batch_size": [r["batch_size"] for r in rows],
                   "context_tokens": [r["context_tokens"] for r in rows],
                   "decode_step_s": [r["wall"].median for r in rows],
                   "gpu_busy_s": [r["busy"].median if r["busy"] else None for r in rows],
                   "kernels_per_step": [r["kernels"] for r in rows]}
        s = Sweep(name="device_busy", x="batch_size", columns=columns, model=lm.spec,
                  environment=lm.environment(), spreads=spreads,
                  settings={"prompt": BATCH_PROMPT, **b,
                            "how": "eager decode steps (DynamicCache); wall: Clock (synchronized "
                                   "perf_counter); busy: the sum of the step's CUDA kernel "
                                   "durations (torch.profiler), one profiled step at a time"},
                  label=f"{viz.runtime.device_name(lm.device)} (random weights)")
        runner.save(s, f"gpu-{tag}-busy-sweep.json")
        print("    " + str(s).replace("\n", "\n    "), flush=True)
        return s

    runner.run(f"{tag}: device-busy sweep", sweep, reserve_s=20)
    del lm
    free()


def compiled_step(runner: Runner, plan: dict, config) -> None:
    """The overhead remedy on this device: one decode step eager and compiled (lesson 11)."""
    from viz.perf.compiled import measure_compiled_step

    c = plan["compiled"]
    lm, tag = build(runner, plan, config, "for the compiled step")
    if lm is None:
        return

    def measure():
        run = measure_compiled_step(lm, new_tokens=c["new_tokens"], repeats=c["repeats"],
                                    backend=c["backend"], mode=c["mode"],
                                    compile_threads=c["compile_threads"])
        run = replace(run, note=f"random weights; {run.device_name}, driver "
                                f"{gpu_driver() or 'unknown'}; python benchmarks/gpu_check.py",
                      source=f"{run.device_name}, driver {gpu_driver() or 'unknown'}, torch "
                             f"{run.torch_version}, {run.measured_at}: python "
                             f"benchmarks/gpu_check.py (random weights)")
        runner.save(run, f"gpu-{tag}-compiled-step.json")
        print("    " + str(run).replace("\n", "\n    "), flush=True)
        return run

    runner.run(f"{tag}: compiled step ({c['mode']})", measure, reserve_s=60)
    del lm
    free()


def one_config(runner: Runner, plan: dict, config, peaks) -> None:
    lm, tag = build(runner, plan, config, "from config")
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
    free()


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
        "machine": peaks.device_name, "driver": gpu_driver()})
    runner.save(run, "gpu-memory-wall.json")
    print("    " + str(run).replace("\n", "\n    ") + "\n    " + fit, flush=True)
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the JSON results")
    ap.add_argument("--quick", action="store_true", help="a tiny dry run (any device, seconds)")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="stop starting new steps after this many seconds (default 540)")
    ap.add_argument("--configs", nargs="*", default=None,
                    help="only these shipped configs (none when the flag is given alone)")
    ap.add_argument("--wall-only", action="store_true",
                    help="only the peaks and the memory wall (lesson 08's GPU reference)")
    ap.add_argument("--no-wall", action="store_true", help="leave the memory wall out")
    ap.add_argument("--no-tests", action="store_true", help="leave the CUDA tests out")
    ap.add_argument("--no-host", action="store_true", help="leave the host's launch cost out")
    ap.add_argument("--busy", nargs="*", default=None,
                    help="the configs whose device-busy sweep is measured (default: the plan's; "
                         "none when the flag is given alone)")
    ap.add_argument("--compiled", nargs="*", default=None,
                    help="the configs whose compiled step is measured (default: the plan's; "
                         "none when the flag is given alone)")
    args = ap.parse_args(argv)
    plan = dict(QUICK if args.quick else FULL)
    plan["host_config"] = plan["configs"][0]  # the course model's shape (the dry run: tiny)
    if args.configs is not None:
        named = {c if isinstance(c, str) else c["name"]: c for c in plan["configs"]}
        plan["configs"] = [named.get(n, n) for n in args.configs]
    if not args.quick and not torch.cuda.is_available():
        print("no CUDA device here: run with --quick for a dry run on this machine")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runner = Runner(out, args.budget_s)
    env = environment()
    print(json.dumps(env), flush=True)

    if args.compiled is not None:
        plan["compiled"] = {**plan["compiled"], "configs": args.compiled}
    at_start = cpu_times()
    if torch.cuda.is_available() and not (args.wall_only or args.no_tests):
        runner.run("CUDA tests", lambda: cuda_tests(runner), reserve_s=60)
    if not args.no_host:
        runner.run("host launch cost", lambda: host_check(runner, plan), reserve_s=30)

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

    if not args.no_wall:
        runner.run("memory wall", lambda: memory_wall(runner, plan), reserve_s=90)

    named = {c if isinstance(c, str) else c["name"]: c for c in [plan["host_config"],
                                                                 *plan["configs"]]}
    compiled = [] if args.wall_only else [named.get(n, n) for n in plan["compiled"]["configs"]]
    alone = [c for c in compiled if c not in plan["configs"]]  # no config run to follow
    for config in alone:
        compiled.remove(config)
        compiled_step(runner, plan, config)
    for config in ([] if args.wall_only else plan["configs"]):
        one_config(runner, plan, config, peaks)
        if compiled and config == compiled[0]:  # the course model's remedy before the rest
            compiled_step(runner, plan, compiled.pop(0))
    for config in compiled:
        compiled_step(runner, plan, config)
    busy = plan["busy"]["configs"] if args.busy is None else args.busy
    for config in ([] if args.wall_only else [named.get(n, n) for n in busy]):
        device_busy(runner, plan, config)

    summary = {"environment": env, "plan": {k: v for k, v in plan.items()
                                            if k not in ("configs", "host_config")},
               "configs": [c if isinstance(c, str) else c["name"] for c in plan["configs"]],
               "steps": runner.steps, "total_s": round(runner.elapsed(), 1),
               "cpu_times": {"start": at_start, "end": cpu_times()},
               "files": sorted(p.name for p in out.glob("*.json"))}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    failed = [s for s in runner.steps if s["status"].startswith("error")]
    print(f"done in {runner.elapsed():.0f} s: {len(runner.steps)} steps, {len(failed)} failed, "
          f"{sum(s['status'].startswith('skipped') for s in runner.steps)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
