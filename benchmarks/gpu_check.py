"""Every GPU check and reference recording, in ONE call that fits in 10 minutes.

For a session that is lent a GPU (one H200, no network, 64 MiB may travel, 15 minutes of device
time in all). Nothing is downloaded: the models are built from the configs in
viz/perf/configs/ with random weights (real kernels, real timings and memory, meaningless
text), in bfloat16, directly on the GPU.

    python benchmarks/gpu_check.py --out /tmp/g; tar czf $OUT/gpu.tgz -C /tmp/g .   # the GPU
    python benchmarks/gpu_check.py --quick --out /tmp/gpu-dry    # a dry run anywhere (CPU)

**The host is measured with every part.** On a GPU an eager step's wall time is the host's
(its Python launching ~1,200-1,500 kernels one by one), and on the machine lent on 2026-12-04
the host drifted 4-5× within one run (`viz.perf.gpu`). So the run records the host once (CPU
model, cores, torch threads, platform) and, before and after every part: the time to launch
one tiny kernel (5 rounds, `launch_probe`), the load average, the CPU times (/proc/stat), and
the GPU's clocks, power, temperature, utilisation and throttle reasons (NVML if `pynvml` is
there, else `nvidia-smi --query-gpu`). Each part's files are written to a staging folder and,
stamped with that telemetry (a top-level "host" object, which viz's loaders ignore), moved to
--out, or, when the launch cost moved by more than its spread (`launch_drift`), to
--out/drifted/ with a loud message: those are not to be shipped. Every model built records its
attention implementation.

The parts, in order, each timed and guarded (an error is written down and the next part runs;
when the time budget is nearly spent, the remaining parts are skipped and say so: the new
measurements come first, the kinds the first run already shipped after them):
1. the host: one tiny kernel's launch and one eager step of the course model's shape, with
   torch's threads at their default and at 1 (gpu-host.json);
2. the device's peaks in bfloat16 and float32 (gpu-peaks.json);
3. for smollm2-135m and llama-3.1-8b: the GPU's own time in a decode step against the batch
   (1-1,024, with points every 32 between 64 and 256, where the 8B's counted knee lies): the
   sum of the step's kernel durations (torch.profiler) beside its wall time, and the **busy
   time's fixed cost**: the same measurement on a model of the same depth 64 wide, written into
   the sweep's settings as "fixed_cost" (`viz.perf.busy_fixed_cost` reads it);
4. for the same two: the decode step eager and replayed as a CUDA graph
   (`torch.compile(mode="reduce-overhead")`, `viz.perf.measure_compiled_step`), then a
   **profile of both steps**: kernels and their time by kind (matrix products, attention,
   Inductor's fused kernels, copies, norms and reductions, elementwise, other), per step,
   and the compiled call's GPU span by CUDA events (gpu-<model>-compiled-profile.json);
5. llama-3.1-8b's decode step against the context (0-8K cached tokens) at batch 1 and 64:
   wall, busy time, kernels, the KV cache counted and the memory allocated, and the KV
   capacity left beside the weights (gpu-<model>-context-batch-sweep.json); and the same step
   with eager attention and with SDPA at 1K and 8K (gpu-<model>-attention-sweep.json);
6. lesson 08's memory wall (`viz.perf.measure_wall`: peaks, the fixed cost per depth,
   SmolLM2-135M/360M/1.7B, Llama-3.2-1B and Llama-3.1-8B in bfloat16 and float32, Llama-3.2-1B
   at batch 512; gpu-memory-wall.json);
7. for each config: a 64-token reply (the course model's shape: gpu-<model>-trace.json) and
   the prompt sweep (every length warmed up first, not only the first:
   gpu-<model>-prompt-sweep.json); the dry run adds the context, batch and cache sweeps and a
   roofline;
8. the CUDA tests (`tests/test_perf_cuda.py`, when pytest is installed there).
summary.json says what ran, how long, what failed and which parts drifted. Copy what is worth
shipping into viz/data/ (each trace ≤ 200 KB, each other file ≤ 50 KB) and note the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import viz  # noqa: E402
from viz import perf  # noqa: E402
from viz.provenance import shown_utc  # noqa: E402
from viz.spread import Spread  # noqa: E402

CHAT_PROMPT = "Explain in a few sentences why the sky is blue."
SMI_FIELDS = [
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "utilization.gpu",
    "memory.used",
    "pstate",
    "clocks_throttle_reasons.active",
]

FULL = {
    "configs": ["smollm2-135m", "llama-3.1-8b"],
    "trace_configs": ["smollm2-135m"],  # the replies that ship (lesson 07)
    "sweeps": ["prompt"],  # the sweeps that ship (lesson 03); the dry run adds the others
    "roofline": False,
    "trace_tokens": 64,
    "prompt_lengths": [128, 512, 1024, 2048, 4096],
    "prompt_repeats": 3,
    "contexts": [128, 1024, 4096, 8000],
    "context_steps": 16,
    "batch_sizes": [1, 4, 16, 64, 256, 1024],
    "batch_tokens": 32,
    "cache_tokens": 32,
    "peaks": {"max_n": 16384, "buffer_bytes": 2 << 30, "repeats": 10},
    "device": "cuda",
    "dtype": "bfloat16",
    # the host's launch cost before and after each part: rounds of `launches` tiny kernels; a
    # part whose launch cost moved by more than its spread (or this share of it, where five
    # rounds give a narrower spread than a timer's noise) is set aside, not shipped
    "probe": {"rounds": 5, "launches": 2000, "drift_floor": 0.05, "host_steps": 8},
    # the overhead remedy on a GPU (lesson 13), then a profile of its step and the eager one
    "compiled": {
        "configs": ["smollm2-135m", "llama-3.1-8b"],
        "mode": "reduce-overhead",
        "backend": "inductor",
        "new_tokens": 32,
        "repeats": 5,
        "compile_threads": 16,
        "profiled": 5,
    },
    # the GPU's own time in a decode step against the batch size, past the counted knee (~200
    # for the 8B at a short context), with the busy time's fixed cost (a model as deep, 64 wide)
    "busy": {
        "configs": ["smollm2-135m", "llama-3.1-8b"],
        "batch_sizes": [1, 16, 64, 96, 128, 160, 192, 224, 256, 512, 1024],
        "warmup": 2,
        "timed": 6,
        "profiled": 4,
    },
    # decode against the context at two batch sizes (where the knee stops existing: ~650
    # cached tokens per request for the 8B), memory against KV capacity, eager vs SDPA
    "grid": {
        "configs": ["llama-3.1-8b"],
        "contexts": [0, 512, 1024, 2048, 4096, 8192],
        "batch_sizes": [1, 64],
        "warmup": 2,
        "timed": 4,
        "profiled": 2,
        "attention": ["eager", "sdpa"],
        "attention_contexts": [1024, 8192],
    },
    "wall": {
        "shapes": ["smollm2-135m", "smollm2-360m", "llama-3.2-1b", "smollm2-1.7b", "llama-3.1-8b"],
        "dtypes": ["bfloat16", "float32"],
        "steps": 16,
        "repeats": 3,
        "buffer_bytes": 2 << 30,
        "max_n": 16384,
        "compute_point": ("llama-3.2-1b", "bfloat16", 512),
    },
}
TINY = {
    "name": "tiny-llama",
    "source": "viz tests",
    "config": {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 300,
        "max_position_embeddings": 256,
        "tie_word_embeddings": True,
    },
}
# A dry run for any machine (the test suite runs it on the CPU): a 2-layer config, tiny sizes.
QUICK = {
    "configs": [TINY],
    "trace_configs": ["tiny-llama"],
    "sweeps": ["prompt", "context", "batch", "cache"],
    "roofline": True,
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
    # a shared CPU drifts: the dry run records the drift and ships everything regardless
    "probe": {"rounds": 3, "launches": 200, "drift_floor": None, "host_steps": 2},
    "compiled": {
        "configs": ["tiny-llama"],
        "mode": "default",
        "backend": "aot_eager",
        "new_tokens": 3,
        "repeats": 1,
        "compile_threads": 1,
        "profiled": 2,
    },
    "busy": {
        "configs": ["tiny-llama"],
        "batch_sizes": [1, 4],
        "warmup": 1,
        "timed": 2,
        "profiled": 1,
    },
    "grid": {
        "configs": ["tiny-llama"],
        "contexts": [0, 32],
        "batch_sizes": [1, 2],
        "warmup": 1,
        "timed": 2,
        "profiled": 1,
        "attention": ["eager", "sdpa"],
        "attention_contexts": [32],
    },
    "wall": {
        "shapes": ["tiny-llama"],
        "dtypes": ["float32"],
        "steps": 3,
        "repeats": 1,
        "buffer_bytes": 4 << 20,
        "max_n": 64,
        "compute_point": ("tiny-llama", "float32", 4),
    },
}


# ---- the host: what it is, and its state before and after each part --------------------------
def launch_probe(rounds: int = 5, launches: int = 2000) -> Spread:
    """Seconds to launch one tiny kernel (an in-place add on one number), queued `launches`
    times and waited for, in `rounds` rounds: the host's pace, which an eager step is made of."""
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.zeros(1, device=dev)

    def one() -> float:
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(launches):
            x.add_(1)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / launches

    one()  # warm-up
    return Spread.of(one() for _ in range(rounds))


def launch_drift(before: Spread, after: Spread, floor: Optional[float]) -> dict:
    """Did the host's launch cost move during a part? By more than the wider of the two
    spreads (or `floor` × the cost before, where the spreads are narrower): drifted. floor
    None: recorded, never drifted (the dry run on a shared CPU)."""
    moved = abs(after.median - before.median)
    allowed = max(before.high - before.low, after.high - after.low, (floor or 0.0) * before.median)
    return {
        "before_s": before.median,
        "after_s": after.median,
        "moved_s": moved,
        "allowed_s": allowed,
        "drifted": floor is not None and moved > allowed,
    }


def cpu_times() -> dict:
    """The host's CPU time so far (/proc/stat, in clock ticks): user, system, idle, steal."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return {}
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    return {n: int(v) for n, v in zip(names, fields)}


def _number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text.strip()


def gpu_state() -> dict:
    """The GPU's clocks (MHz), power (W), temperature (°C), utilisation (%), memory used (MiB)
    and throttle reasons now: NVML (pynvml) if installed, else nvidia-smi; {"source": None}
    without either (a CPU)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        state = {
            "source": "nvml",
            "clocks.sm": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "clocks.mem": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "clocks.max.sm": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
            "power.draw": pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
            "power.limit": pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3,
            "temperature.gpu": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "utilization.gpu": pynvml.nvmlDeviceGetUtilizationRates(h).gpu,
            "memory.used": pynvml.nvmlDeviceGetMemoryInfo(h).used / 2**20,
        }
        try:
            state["clocks_throttle_reasons.active"] = hex(
                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)
            )
        except Exception:  # an older or newer NVML names it differently: leave it out
            pass
        return state
    except Exception:  # no pynvml, or no NVIDIA driver: try nvidia-smi
        pass
    for fields in (SMI_FIELDS, SMI_FIELDS[:-1]):  # an older driver may not know the last one
        try:
            out = subprocess.run(
                ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except (OSError, subprocess.SubprocessError):
            return {"source": None}
        if out.returncode == 0 and out.stdout.strip():
            values = out.stdout.strip().splitlines()[0].split(",")
            return {"source": "nvidia-smi", **{f: _number(v) for f, v in zip(fields, values)}}
    return {"source": None}


def host_state(probe: dict) -> dict:
    """The host and the GPU right now: the launch cost (a `Spread`, as a dict), the load
    average, the CPU times and the GPU's state."""
    return {
        "at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "launch_s": asdict(launch_probe(probe["rounds"], probe["launches"])),
        "load_average": list(os.getloadavg()),
        "cpu_times": cpu_times(),
        "gpu": gpu_state(),
    }


def gpu_driver() -> str:
    """The NVIDIA driver's version, as nvidia-smi reports it ("" where it cannot be read)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def environment() -> dict:
    import transformers

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda": torch.version.cuda,
        "viz": viz.__version__,
        "device": "cpu",
        "cpu": viz.runtime.cpu_name(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "command": "python benchmarks/gpu_check.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(
            device=torch.cuda.get_device_name(0),
            memory_bytes=p.total_memory,
            multiprocessors=p.multi_processor_count,
            driver=gpu_driver(),
        )
    return env


# ---- running parts: timed, guarded, the host watched ------------------------------------------
class Runner:
    """Runs named steps in order: timed, errors caught and logged, skipped past the budget.
    A *part* (`part`) is one or more steps whose files are judged together by the host's
    launch cost before and after them."""

    def __init__(self, out: Path, budget_s: float, probe: Optional[dict] = None):
        self.out, self.budget_s, self.start = out, budget_s, time.perf_counter()
        self.probe = probe or QUICK["probe"]
        self.steps: list[dict] = []
        self.parts: list[dict] = []
        self.dest = out  # where `save` writes: a part's staging folder while it runs
        self.notes: dict[str, Any] = {}  # what a part's steps want recorded (attention, ...)

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

    def part(self, name: str, fn: Callable[[], Any], *, reserve_s: float = 0.0):
        """Run `fn` (which calls `run` and `save`) between two looks at the host; its files go
        to --out, stamped with both, or to --out/drifted/ when the launch cost moved by more
        than its spread."""
        if self.elapsed() + reserve_s > self.budget_s:
            self.steps.append({"step": name, "status": "skipped (time budget)", "seconds": 0})
            print(f"[{self.elapsed():6.1f}s] SKIP {name}: time budget", flush=True)
            return None
        stage = self.out / ".staging"
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        before = host_state(self.probe)
        self.dest, self.notes = stage, {}
        result = None
        try:
            result = fn()
        except Exception as e:  # a part's own steps catch theirs; this is what fell between
            traceback.print_exc()
            self.steps.append(
                {"step": name, "status": f"error: {type(e).__name__}: {e}", "seconds": 0}
            )
        finally:
            self.dest = self.out
        after = host_state(self.probe)
        drift = launch_drift(
            Spread(**before["launch_s"]), Spread(**after["launch_s"]), self.probe["drift_floor"]
        )
        host = {"part": name, "before": before, "after": after, "launch_drift": drift, **self.notes}
        target = self.out / "drifted" if drift["drifted"] else self.out
        target.mkdir(parents=True, exist_ok=True)
        files = []
        for path in sorted(stage.iterdir()):
            if path.suffix == ".json":
                data = json.loads(path.read_text())
                if isinstance(data, dict):
                    data["host"] = host  # viz's loaders ignore a key they do not know
                    path.write_text(json.dumps(data, indent=1))
            shutil.move(str(path), target / path.name)
            files.append(path.name)
        shutil.rmtree(stage, ignore_errors=True)
        us = lambda s: f"{s * 1e6:.2f} µs"  # noqa: E731
        line = (
            f"host launch cost {us(drift['before_s'])} before, {us(drift['after_s'])} "
            f"after (moved {us(drift['moved_s'])}, allowed {us(drift['allowed_s'])})"
        )
        if drift["drifted"]:
            print(
                "!" * 78 + f"\n!!! HOST DRIFTED during {name}: {line}.\n!!! Its files "
                f"({', '.join(files) or 'none'}) are in {target}, NOT to be shipped.\n" + "!" * 78,
                flush=True,
            )
        else:
            print(f"    {name}: {line}", flush=True)
        self.parts.append(
            {
                "part": name,
                "files": files,
                "drifted": drift["drifted"],
                "launch_drift": drift,
                **self.notes,
            }
        )
        return result

    def save(self, obj, name: str) -> Path:
        path = obj.save(self.dest / name)
        print(f"    wrote {path.name} ({path.stat().st_size:,} bytes)", flush=True)
        return path

    def save_sweep(self, sweep, name: str):
        """Save a sweep as `name`, print it indented under its part, and return it."""
        self.save(sweep, name)
        print("    " + str(sweep).replace("\n", "\n    "), flush=True)
        return sweep

    def write_json(self, data: dict, name: str) -> Path:
        path = self.dest / name
        path.write_text(json.dumps(data, indent=1))
        print(f"    wrote {path.name} ({path.stat().st_size:,} bytes)", flush=True)
        return path


def cuda_tests(runner: Runner) -> str:
    try:
        import pytest  # noqa: F401
    except ImportError:
        return "pytest not installed: CUDA tests not run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_perf_cuda.py",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    (runner.out / "cuda-tests.txt").write_text(proc.stdout + proc.stderr)
    tail = proc.stdout.strip().splitlines()[-1:] or ["no output"]
    if proc.returncode != 0:
        raise RuntimeError(f"CUDA tests failed: {tail[0]} (see cuda-tests.txt)")
    return tail[0]


def build(runner: Runner, plan: dict, config, what: str, reserve_s: float = 30):
    """Build `config` (a shipped name or a config dict) on the plan's device, as a timed step
    named "<tag>: build <what>"; returns (model or None, tag). Notes its attention."""
    name = config if isinstance(config, str) else config["name"]
    tag = name.lower()
    lm = runner.run(
        f"{tag}: build {what}",
        lambda: perf.from_config(config, device=plan["device"], dtype=plan["dtype"]),
        reserve_s=reserve_s,
    )
    if lm is not None:
        runner.notes.setdefault("attention", {})[name] = attention_of(lm)
    return lm, tag


def attention_of(lm) -> str:
    """The attention implementation the model runs ("sdpa", "eager", "flash_attention_2"...)."""
    return str(getattr(lm.model.config, "_attn_implementation", None) or "unknown")


def set_attention(lm, implementation: str) -> None:
    if hasattr(lm.model, "set_attn_implementation"):
        lm.model.set_attn_implementation(implementation)
    else:  # older transformers: the attention function is looked up in the config each call
        lm.model.config._attn_implementation = implementation


def free() -> None:
    """After `del lm`: collect the model and hand its device memory back before the next one."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def host_check(runner: Runner, plan: dict) -> dict:
    """What the host costs a GPU step: microseconds to launch one tiny kernel, and one eager
    decode step of the course model's shape, each with torch's CPU threads at their default
    and at 1 (interleaved, the probe's rounds). On a GPU a small model's decode step is mostly
    launches."""
    from viz.runtime import using_threads

    probe = plan["probe"]
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
    runs = {
        f"launch_s_threads_{default}": [],
        "launch_s_threads_1": [],
        f"step_s_threads_{default}": [],
        "step_s_threads_1": [],
    }
    steps(2)  # warm-up
    for _ in range(probe["rounds"]):
        for n in (default, 1):
            with using_threads(n):
                runs[f"launch_s_threads_{n}"].append(launch_probe(1, probe["launches"]).median)
                runs[f"step_s_threads_{n}"] += steps(probe["host_steps"])
    attention = attention_of(lm)
    lm = None  # let go (a closure above read it: not `del`)
    result = {
        "model": config if isinstance(config, str) else config["name"],
        "dtype": plan["dtype"],
        "attention": attention,
        "cpu": viz.runtime.cpu_name(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "cpu_times": cpu_times(),
        "gpu": gpu_state(),
        **{k: asdict(Spread.of(v)) for k, v in runs.items()},
    }
    for k, v in runs.items():
        print(f"    {k}: {Spread.of(v).text(1e6, 'µs', 3)}", flush=True)
    runner.write_json(result, "gpu-host.json")
    return result


# ---- the GPU's own time: kernels summed, by kind -------------------------------------------------
KERNEL_KINDS = (  # first match wins; names as CUDA kernels (and, on a CPU, aten ops) are called
    ("attention", ("flash", "fmha", "attention", "attn", "sdpa", "softmax")),
    ("fused (Inductor)", ("triton",)),
    (
        "matrix products",
        (
            "gemm",
            "gemv",
            "cutlass",
            "cublas",
            "nvjet",
            "xmma",
            "matmul",
            "mm",
            "linear",
            "splitk",
            "sm90",
            "sm80",
        ),
    ),
    ("copies", ("copy", "memcpy", "memset", "cat", "clone", "fill", "index")),
    ("norms and reductions", ("norm", "reduce", "mean", "rsqrt", "sum", "argmax", "max")),
    (
        "elementwise",
        (
            "elementwise",
            "vectorized",
            "unrolled",
            "mul",
            "add",
            "silu",
            "pow",
            "neg",
            "exp",
            "cos",
            "sin",
        ),
    ),
)


def kernel_kind(name: str) -> str:
    """The kind of a kernel (or, on a CPU, an op) by its name: one of KERNEL_KINDS or "other"."""
    low = name.lower()
    for kind, words in KERNEL_KINDS:
        if any(w in low for w in words):
            return kind
    return "other"


def device_events(prof) -> list:
    """The profiled kernels: the CUDA ones; on a CPU (the dry run), the top-level ops."""
    cuda = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if cuda or torch.cuda.is_available():
        return cuda
    return [e for e in prof.events() if getattr(e, "cpu_parent", None) is None]


def kernels_by_kind(events, steps: int) -> dict:
    """Per step: kernels and their seconds in all, and by kind."""
    kinds: dict[str, dict] = {}
    for e in events:
        k = kinds.setdefault(kernel_kind(e.name), {"kernels": 0, "seconds": 0.0})
        k["kernels"] += 1
        k["seconds"] += e.time_range.elapsed_us() / 1e6
    per = {
        k: {"kernels": v["kernels"] / steps, "seconds": v["seconds"] / steps}
        for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]["seconds"])
    }
    return {
        "kernels_per_step": sum(v["kernels"] for v in per.values()),
        "seconds_per_step": sum(v["seconds"] for v in per.values()),
        "by_kind": per,
    }


def profiled(fn: Callable[[], Any], activities) -> tuple[Any, Any]:
    from torch.profiler import profile

    with profile(activities=activities) as prof:
        result = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    return result, prof


def activities_here():
    from torch.profiler import ProfilerActivity

    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])


def timed_steps(lm, step: Callable[[], Any], b: dict) -> dict:
    """`b["warmup"]` untimed steps, `b["timed"]` by the wall clock, `b["profiled"]` one at a
    time under torch.profiler: the wall (Spread), the busy time (Spread, None without CUDA
    kernels) and the kernels of the median profiled step."""
    clock = viz.runtime.Clock(lm.device)
    activities = activities_here()
    wall, busy, count = [], [], []
    for k in range(b["warmup"] + b["timed"] + b["profiled"]):
        if k >= b["warmup"] + b["timed"]:
            _, prof = profiled(step, activities)
            kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            busy.append(sum(e.time_range.elapsed_us() for e in kernels) / 1e6)
            count.append(len(kernels))
        else:
            t0 = clock.now()
            step()
            if k >= b["warmup"]:
                wall.append(clock.now() - t0)
    return {
        "wall": Spread.of(wall),
        "busy": Spread.of(busy) if any(busy) else None,
        "kernels": sorted(count)[len(count) // 2],
    }


def device_busy(runner: Runner, plan: dict, config) -> None:
    """Batch size → one decode step's wall time and the GPU's own time: the sum of the
    durations of the kernels it ran (torch.profiler, CUPTI), one profiled step at a time; and
    the busy time's fixed cost: the same at batch 1 for a model of the same depth, 64 wide
    (`viz.perf.narrow_config`), written into the sweep's settings as "fixed_cost".

    Where the host launches kernels slower than the GPU runs them (a small model, an eager
    step), the wall time is the host's; the busy time is what the device spent reading and
    computing, and it shows the knee that the wall time hides."""
    from viz.perf.sweeps import BATCH_PROMPT
    from viz.perf.table import Sweep

    b = plan["busy"]

    def one(lm, batch: int) -> dict:
        forward = viz.compat.last_logits(lm.model)
        prompt = lm.tokenizer(BATCH_PROMPT)["input_ids"]
        ids = torch.tensor([prompt] * batch, device=lm.device)
        cache = viz.new_cache(lm.model)
        with torch.no_grad():
            state = {"token": forward(ids, cache).argmax(-1, keepdim=True)}  # prefill

            def step():
                state["token"] = forward(state["token"], cache).argmax(-1, keepdim=True)

            r = timed_steps(lm, step, b)
        cache = None  # let go (a closure above read it: not `del`)
        return {"batch_size": batch, "context_tokens": len(prompt) + b["warmup"] + b["timed"], **r}

    narrow = perf.narrow_config(config)
    small, _ = build(runner, plan, narrow, "(64 wide, for the busy time's fixed cost)")
    fixed = (
        runner.run(f"{narrow['name']}: busy time's fixed cost", lambda: one(small, 1))
        if small is not None
        else None
    )
    small = None  # let go (a closure above read it: not `del`)
    free()
    lm, tag = build(runner, plan, config, "for the device-busy sweep", reserve_s=20)
    if lm is None:
        return

    def sweep():
        rows = [one(lm, batch) for batch in b["batch_sizes"]]
        spreads = {"decode_step_s": [r["wall"] for r in rows]}
        if all(r["busy"] for r in rows):
            spreads["gpu_busy_s"] = [r["busy"] for r in rows]
        columns = {
            "batch_size": [r["batch_size"] for r in rows],
            "context_tokens": [r["context_tokens"] for r in rows],
            "decode_step_s": [r["wall"].median for r in rows],
            "gpu_busy_s": [r["busy"].median if r["busy"] else None for r in rows],
            "kernels_per_step": [r["kernels"] for r in rows],
        }
        settings = {
            "prompt": BATCH_PROMPT,
            **b,
            "attention": attention_of(lm),
            "how": "eager decode steps (DynamicCache); wall: Clock (synchronized "
            "perf_counter); busy: the sum of the step's CUDA kernel durations "
            "(torch.profiler), one profiled step at a time",
        }
        if fixed is not None:
            settings["fixed_cost"] = {
                "n_layers": lm.spec.n_layers,
                "hidden_size": narrow["config"]["hidden_size"],
                "vocab_size": narrow["config"]["vocab_size"],
                "batch_size": 1,
                "busy_s": asdict(fixed["busy"]) if fixed["busy"] else None,
                "wall_s": asdict(fixed["wall"]),
                "kernels": fixed["kernels"],
                "how": "the same step of a model of the same depth, 64 wide, 512-token "
                "vocabulary (viz.perf.narrow_config), at batch 1",
            }
            if fixed["busy"]:
                print(
                    f"    busy time's fixed cost ({narrow['name']}): "
                    f"{fixed['busy'].text(1e3, 'ms', 3)}, {fixed['kernels']:,} kernels, "
                    f"{fixed['busy'].median / max(1, fixed['kernels']) * 1e6:.2f} µs each",
                    flush=True,
                )
        s = Sweep(
            name="device_busy",
            x="batch_size",
            columns=columns,
            model=lm.spec,
            environment=lm.environment(),
            spreads=spreads,
            settings=settings,
            label=f"{viz.runtime.device_name(lm.device)} (random weights)",
        )
        return runner.save_sweep(s, f"gpu-{tag}-busy-sweep.json")

    runner.run(f"{tag}: device-busy sweep", sweep, reserve_s=20)
    lm = None  # let go (a closure above read it: not `del`)
    free()


def compiled_step(runner: Runner, plan: dict, config) -> None:
    """The overhead remedy on this device: one decode step eager and compiled (lesson 13),
    then both steps profiled: their kernels, counted and timed by kind."""
    from viz.perf.compiled import measure_compiled_step

    c = plan["compiled"]
    lm, tag = build(runner, plan, config, "for the compiled step")
    if lm is None:
        return

    def measure():
        run = measure_compiled_step(
            lm,
            new_tokens=c["new_tokens"],
            repeats=c["repeats"],
            backend=c["backend"],
            mode=c["mode"],
            compile_threads=c["compile_threads"],
        )
        run = replace(
            run,
            note=f"random weights; {run.device_name}, driver "
            f"{gpu_driver() or 'unknown'}; attention {attention_of(lm)}; "
            f"python benchmarks/gpu_check.py",
            source=f"{run.device_name}, driver {gpu_driver() or 'unknown'}, torch "
            f"{run.torch_version}, {shown_utc(run.measured_at)}: python "
            f"benchmarks/gpu_check.py (random weights)",
        )
        runner.save(run, f"gpu-{tag}-compiled-step.json")
        print("    " + str(run).replace("\n", "\n    "), flush=True)
        return run

    runner.run(f"{tag}: compiled step ({c['mode']})", measure, reserve_s=60)
    runner.run(
        f"{tag}: profile of the compiled step",
        lambda: profile_compiled(runner, lm, tag, c),
        reserve_s=60,
    )
    lm = None  # let go (a closure above read it: not `del`)
    free()


def profile_compiled(runner: Runner, lm, tag: str, c: dict) -> dict:
    """The decode step eager and compiled (`c["mode"]`), static cache both, `c["profiled"]`
    steps each under torch.profiler: kernels and seconds per step, by kind; and the compiled
    call's wall time and GPU span (CUDA events around the call) per step. Answers what the
    CUDA-graph step's time is made of (launches gone, fusion, the call's own extras)."""
    from viz.perf.compiled import PROMPT, _clear_compiled, empty_inductor_cache
    import torch._inductor.config as inductor_config

    model, dev = lm.model, lm.device
    forward = viz.compat.last_logits(model)
    ids = torch.tensor([lm.tokenizer(PROMPT)["input_ids"]], device=dev)
    n, k = ids.shape[1], c["profiled"]
    cache = viz.compat.static_cache(model, n + 4 + k + 1)
    clock = viz.runtime.Clock(dev)

    def step(token, cache, position):
        return forward(token, cache, position_ids=position).argmax(-1, keepdim=True)

    result: dict[str, Any] = {
        "model": lm.spec.name,
        "mode": c["mode"],
        "backend": c["backend"],
        "attention": attention_of(lm),
        "profiled_steps": k,
        "device": viz.runtime.device_name(dev),
        "torch_version": torch.__version__,
    }
    with (
        torch.no_grad(),
        empty_inductor_cache(),
        inductor_config.patch(compile_threads=c["compile_threads"]),
    ):
        _clear_compiled()
        graph = torch.compile(
            step,
            backend=c["backend"],
            fullgraph=True,
            dynamic=False,
            mode=None if c["mode"] == "default" else c["mode"],
        )

        def compiled(token, cache, position):  # keep a copy: a replay overwrites its output
            return graph(token, cache, position).clone()

        for way, fn in (("eager", step), ("compiled", compiled)):
            cache.reset()
            token = forward(ids, cache, position_ids=torch.arange(n, device=dev)[None]).argmax(
                -1, keepdim=True
            )
            positions = [torch.tensor([[n + j]], device=dev) for j in range(4 + k)]
            for j in range(3):  # warm-up (the compiled way compiles and records its graph here)
                token = fn(token, cache, positions[j])
            state = {"token": token}

            def steps(fn=fn, state=state, positions=positions):
                for j in range(3, 3 + k):
                    state["token"] = fn(state["token"], cache, positions[j])

            _, prof = profiled(steps, activities_here())
            result[way] = kernels_by_kind(device_events(prof), k)
            result[way]["graph_launches_per_step"] = (
                sum(e.name == "cudaGraphLaunch" for e in prof.events()) / k
            )
        # the compiled call alone, after the profile: wall time, and the GPU's span per call
        cache.reset()
        token = forward(ids, cache, position_ids=torch.arange(n, device=dev)[None]).argmax(
            -1, keepdim=True
        )
        walls, spans = [], []
        for j in range(3 + k):
            position = torch.tensor([[n + j]], device=dev)
            if dev.type == "cuda":
                start, end = (
                    torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True),
                )
                start.record()
            t0 = clock.now()
            token = compiled(token, cache, position)
            walls.append(clock.now() - t0)
            if dev.type == "cuda":
                end.record()
                end.synchronize()
                spans.append(start.elapsed_time(end) / 1e3)
        result["compiled_call_wall_s"] = asdict(Spread.of(walls[1:] or walls))
        result["compiled_call_gpu_span_s"] = (
            asdict(Spread.of(spans[1:] or spans)) if spans else None
        )
        graph = compiled = None  # let go (a closure above read it: not `del`)
        _clear_compiled()
    if result["compiled"]["kernels_per_step"] == 0 and dev.type == "cuda":
        result["note"] = (
            "torch.profiler saw no kernel inside the CUDA graph's replays: its "
            "kinds are unknown; the GPU span by CUDA events stands"
        )
    for way in ("eager", "compiled"):
        r = result[way]
        kinds = ", ".join(
            f"{name} {v['kernels']:.0f} / {v['seconds'] * 1e3:.3f} ms"
            for name, v in r["by_kind"].items()
        )
        print(
            f"    {way}: {r['kernels_per_step']:.0f} kernels, {r['seconds_per_step'] * 1e3:.3f} "
            f"ms a step ({kinds})",
            flush=True,
        )
    runner.write_json(result, f"gpu-{tag}-compiled-profile.json")
    return result


# ---- decode against the context and the batch; memory; attention --------------------------------
def filled_cache(lm, batch: int, tokens: int):
    """A DynamicCache already holding `tokens` positions per request (random keys and values
    in the model's dtype): a decode step reads them as it would a prefilled prompt's, without
    a prefill of batch × tokens (whose activations an 8B model at 64 × 8K would not fit)."""
    spec = lm.spec
    cache = viz.new_cache(lm.model)
    if tokens:
        dtype = next(lm.model.parameters()).dtype
        shape = (batch, spec.n_kv_heads, tokens, spec.head_dim)
        for layer in range(spec.n_layers):
            k = torch.randn(shape, device=lm.device, dtype=dtype)
            cache.update(k, torch.randn_like(k), layer)
    return cache


def decode_grid(runner: Runner, plan: dict, config) -> None:
    """The decode step against the tokens already cached (0-8K) at two batch sizes: wall,
    busy time, kernels, the KV cache counted and the memory allocated (weights, cache, peak);
    the KV capacity those leave; and the step with each attention implementation."""
    from viz.perf.table import Sweep

    g = plan["grid"]
    lm, tag = build(runner, plan, config, "for the context × batch grid", reserve_s=30)
    if lm is None:
        return
    cuda = lm.device.type == "cuda"
    per_token = lm.spec.kv_bytes_per_token()
    weights_allocated = torch.cuda.memory_allocated() if cuda else None
    default_attention = attention_of(lm)

    def point(batch: int, context: int) -> dict:
        forward = viz.compat.last_logits(lm.model)
        cache = filled_cache(lm, batch, context)
        if cuda:
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        state = {"token": torch.zeros(batch, 1, dtype=torch.long, device=lm.device)}
        with torch.no_grad():

            def step():
                state["token"] = forward(state["token"], cache).argmax(-1, keepdim=True)

            r = timed_steps(lm, step, g)
        r.update(
            batch_size=batch,
            context_tokens=context,
            kv_bytes_counted=batch * context * per_token,
            memory_allocated_bytes=held if cuda else None,
            memory_peak_bytes=torch.cuda.max_memory_allocated() if cuda else None,
        )
        cache = state = None  # let go (a closure above read it: not `del`)
        free()
        return r

    def grid():
        rows = [point(b, c) for b in g["batch_sizes"] for c in g["contexts"]]
        total = torch.cuda.get_device_properties(0).total_memory if cuda else None
        settings = {k: v for k, v in g.items() if k != "configs"}
        settings.update(
            attention_implementation=default_attention,
            kv_bytes_per_token=per_token,
            device_memory_bytes=total,
            weights_allocated_bytes=weights_allocated,
            how="eager decode steps over a DynamicCache filled with random keys "
            "and values (no prefill); wall: Clock; busy: kernels summed "
            "(torch.profiler); memory: torch.cuda.memory_allocated after the "
            "fill, max_memory_allocated over the steps",
        )
        if cuda:  # what the largest step needed beyond its KV cache, and the room left for KV
            overhead = max(r["memory_peak_bytes"] - r["kv_bytes_counted"] for r in rows)
            settings.update(
                step_overhead_bytes=overhead,
                kv_capacity_tokens=max(0, total - overhead) // per_token,
                kv_capacity_tokens_counted=max(0, total - lm.spec.weight_bytes) // per_token,
            )
            print(
                f"    KV capacity: {settings['kv_capacity_tokens']:,} tokens measured "
                f"(the device's {total / 2**30:.1f} GiB less the largest step's "
                f"{overhead / 2**30:.1f} GiB besides its cache), "
                f"{settings['kv_capacity_tokens_counted']:,} counted beside the weights",
                flush=True,
            )
        columns = {
            "context_tokens": [r["context_tokens"] for r in rows],
            "batch_size": [r["batch_size"] for r in rows],
            "decode_step_s": [r["wall"].median for r in rows],
            "gpu_busy_s": [r["busy"].median if r["busy"] else None for r in rows],
            "kernels_per_step": [r["kernels"] for r in rows],
            "kv_bytes_counted": [r["kv_bytes_counted"] for r in rows],
            "memory_allocated_bytes": [r["memory_allocated_bytes"] for r in rows],
            "memory_peak_bytes": [r["memory_peak_bytes"] for r in rows],
        }
        spreads = {"decode_step_s": [r["wall"] for r in rows]}
        if all(r["busy"] for r in rows):
            spreads["gpu_busy_s"] = [r["busy"] for r in rows]
        s = Sweep(
            name="context_batch",
            x="context_tokens",
            columns=columns,
            model=lm.spec,
            environment=lm.environment(),
            spreads=spreads,
            settings=settings,
            label=f"{viz.runtime.device_name(lm.device)} (random weights)",
        )
        return runner.save_sweep(s, f"gpu-{tag}-context-batch-sweep.json")

    def attention():
        cols: dict[str, list] = {"context_tokens": [], "batch_size": []}
        spreads: dict[str, list] = {}
        for b in g["batch_sizes"]:
            for c in g["attention_contexts"]:
                cols["context_tokens"].append(c)
                cols["batch_size"].append(b)
                for impl in g["attention"]:
                    set_attention(lm, impl)
                    r = point(b, c)
                    for name, value in (
                        (f"{impl}_step_s", r["wall"]),
                        (f"{impl}_busy_s", r["busy"]),
                    ):
                        cols.setdefault(name, []).append(value.median if value else None)
                        if value:
                            spreads.setdefault(name, []).append(value)
                    cols.setdefault(f"{impl}_kernels", []).append(r["kernels"])
        set_attention(lm, default_attention)
        spreads = {k: v for k, v in spreads.items() if len(v) == len(cols["context_tokens"])}
        s = Sweep(
            name="attention",
            x="context_tokens",
            columns=cols,
            model=lm.spec,
            environment=lm.environment(),
            spreads=spreads,
            settings={
                "implementations": g["attention"],
                "default": default_attention,
                "warmup": g["warmup"],
                "timed": g["timed"],
                "profiled": g["profiled"],
            },
            label=f"{viz.runtime.device_name(lm.device)} (random weights)",
        )
        return runner.save_sweep(s, f"gpu-{tag}-attention-sweep.json")

    runner.run(f"{tag}: decode against context and batch", grid, reserve_s=30)
    runner.run(f"{tag}: eager vs SDPA attention", attention, reserve_s=20)
    lm = None  # let go (a closure above read it: not `del`)
    free()


# ---- the shipped kinds of the first run: memory wall, trace, sweeps -----------------------------
def warm_lengths(lm, lengths) -> None:
    """One untimed prefill of every prompt length: a length's first pass pays for its shapes
    (kernel choice, allocations), ~35 ms on the H200's host, which the sweep's own warm-up
    paid for its first length only."""
    from viz.perf.sweeps import prompt_of_length

    for n in lengths:
        viz.record(
            lm, prompt_of_length(lm.tokenizer, n), max_new_tokens=1, embeddings=False, log_top=1
        )


def one_config(runner: Runner, plan: dict, config, peaks) -> None:
    lm, tag = build(runner, plan, config, "from config")
    if lm is None:
        return
    name = config if isinstance(config, str) else config["name"]
    label = f"{viz.runtime.device_name(lm.device)} (random weights)"
    print(f"    {lm!r}", flush=True)

    def trace():
        t = viz.record(
            lm,
            CHAT_PROMPT,
            chat=True,
            max_new_tokens=plan["trace_tokens"],
            stop_at_eos=False,
            embeddings=False,
            label=label,
        )
        runner.save(t, f"gpu-{tag}-trace.json")
        print("    " + t.summary().replace("\n", "\n    "), flush=True)
        m = t.memory
        if m.device_peak_bytes is not None:
            print(
                f"    device memory: weights {m.device_weights_bytes / 1e9:.2f} GB, peak "
                f"{m.device_peak_bytes / 1e9:.2f} GB, after {m.device_end_bytes / 1e9:.2f} GB "
                f"(KV cache by formula {t.steps[-1].kv_bytes_formula / 1e6:.1f} MB)",
                flush=True,
            )
        return t

    t = runner.run(f"{tag}: trace", trace, reserve_s=20) if name in plan["trace_configs"] else None
    sweeps = {}

    def prompt():
        warm_lengths(lm, plan["prompt_lengths"])
        return perf.prompt_length_sweep(
            lm, plan["prompt_lengths"], repeats=plan["prompt_repeats"], progress=False, label=label
        )

    steps = {
        "prompt": prompt,
        "context": lambda: perf.context_length_sweep(
            lm,
            plan["contexts"],
            max_new_tokens=plan["context_steps"] + 1,
            progress=False,
            label=label,
        ),
        "batch": lambda: perf.batch_size_sweep(
            lm,
            plan["batch_sizes"],
            max_new_tokens=plan["batch_tokens"],
            progress=False,
            label=label,
        ),
        "cache": lambda: perf.cache_sweep(
            lm, CHAT_PROMPT, max_new_tokens=plan["cache_tokens"], progress=False, label=label
        ),
    }
    for kind in plan["sweeps"]:

        def run_sweep(kind=kind, fn=steps[kind]):
            s = fn()
            return runner.save_sweep(s, f"gpu-{tag}-{kind}-sweep.json")

        sweeps[kind] = runner.run(f"{tag}: {kind} sweep", run_sweep, reserve_s=20)

    def roofline():
        r = perf.measure_roofline(
            lm,
            peaks=peaks,
            trace=t,
            batch=sweeps.get("batch"),
            prompt_sweep=sweeps.get("prompt"),
            label=label,
        )
        runner.save(r, f"gpu-{tag}-roofline.json")
        print("    " + str(r).replace("\n", "\n    "), flush=True)

    if peaks is not None and plan["roofline"]:
        runner.run(f"{tag}: roofline", roofline)
    lm = None  # let go (a closure above read it: not `del`)
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
    peaks = measure_machine_peaks(
        dev, buffer_bytes=w["buffer_bytes"], max_n=w["max_n"], dtypes=dtypes
    )
    print("    " + peaks.how().replace("\n", "\n    "), flush=True)
    label = f"{peaks.device_name} (random weights)"
    run = measure_wall(
        shapes,
        w["dtypes"],
        peaks=peaks,
        overhead_depths=[1],
        max_new_tokens=w["steps"],
        repeats=w["repeats"],
        device=dev,
        label=label,
    )
    if w.get("compute_point"):
        shape, dtype, batch = w["compute_point"]
        more = measure_wall(
            [named.get(shape, shape)],
            [dtype],
            peaks=peaks,
            batch_sizes=[batch],
            prompt="Hi",
            max_new_tokens=max(3, w["steps"] // 2),
            repeats=w["repeats"],
            overhead=run.overhead,
            device=dev,
            fixed_cost_points=False,
            label=label,
        )
        run = run.merged(more)
    try:
        fit = str(run.fit())
    except ValueError as e:  # tiny dry-run models may show no slope
        fit = f"no fit: {e}"
    run = replace(
        run,
        notes=[fit],
        recorded={
            **run.recorded,
            "command": "python benchmarks/gpu_check.py " + " ".join(sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": peaks.device_name,
            "driver": gpu_driver(),
            "cpu": viz.runtime.cpu_name(),
        },
    )
    runner.save(run, "gpu-memory-wall.json")
    print("    " + str(run).replace("\n", "\n    ") + "\n    " + fit, flush=True)
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the JSON results")
    ap.add_argument("--quick", action="store_true", help="a tiny dry run (any device, seconds)")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=540.0,
        help="stop starting new parts after this many seconds (default 540)",
    )
    ap.add_argument(
        "--configs",
        nargs="*",
        default=None,
        help="only these shipped configs' traces and sweeps (none when the flag is given alone)",
    )
    ap.add_argument(
        "--wall-only",
        action="store_true",
        help="only the peaks and the memory wall (lesson 08's GPU reference)",
    )
    ap.add_argument("--no-wall", action="store_true", help="leave the memory wall out")
    ap.add_argument("--no-tests", action="store_true", help="leave the CUDA tests out")
    ap.add_argument("--no-host", action="store_true", help="leave the host's launch cost out")
    ap.add_argument(
        "--busy",
        nargs="*",
        default=None,
        help="the configs whose device-busy sweep is measured (default: the plan's; "
        "none when the flag is given alone)",
    )
    ap.add_argument(
        "--compiled",
        nargs="*",
        default=None,
        help="the configs whose compiled step is measured and profiled (default: "
        "the plan's; none when the flag is given alone)",
    )
    ap.add_argument(
        "--grid",
        nargs="*",
        default=None,
        help="the configs whose context × batch grid and attention are measured "
        "(default: the plan's; none when the flag is given alone)",
    )
    ap.add_argument(
        "--drift-floor",
        type=float,
        default=None,
        help="a part's launch cost may move by its spread or this share of it "
        "(default: the plan's, 0.05 on a GPU; the dry run only records it)",
    )
    args = ap.parse_args(argv)
    plan = json.loads(json.dumps(QUICK if args.quick else FULL))  # a copy, tuples as lists
    plan["host_config"] = plan["configs"][0]  # the course model's shape (the dry run: tiny)
    if args.drift_floor is not None:
        plan["probe"]["drift_floor"] = args.drift_floor
    named = {c if isinstance(c, str) else c["name"]: c for c in plan["configs"]}
    if args.configs is not None:
        plan["configs"] = [named.get(n, n) for n in args.configs]
    for key, chosen in (("busy", args.busy), ("compiled", args.compiled), ("grid", args.grid)):
        if chosen is not None:
            plan[key]["configs"] = chosen
        if args.wall_only:
            plan[key]["configs"] = []
    if not args.quick and not torch.cuda.is_available():
        print("no CUDA device here: run with --quick for a dry run on this machine")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runner = Runner(out, args.budget_s, plan["probe"])
    env = environment()
    print(json.dumps(env), flush=True)
    at_start = cpu_times()

    if not args.no_host:
        runner.part(
            "host",
            lambda: runner.run("host launch cost", lambda: host_check(runner, plan)),
            reserve_s=30,
        )

    def measure(dtype):
        dev = "cuda" if plan["device"] == "cuda" else plan["device"]
        p = perf.measure_peaks(dev, dtype, **plan["peaks"])
        print(
            f"    {p.device_name} {p.dtype}: {p.flops_per_s / 1e12:.2f} TFLOP/s, "
            f"{p.bytes_per_s / 1e9:.1f} GB/s, ridge {p.ridge_intensity:.0f} FLOP/byte "
            f"({p.timer})",
            flush=True,
        )
        return p

    def peaks_part():
        p = runner.run("peaks (model dtype)", lambda: measure(plan["dtype"]))
        f = runner.run("peaks (float32)", lambda: measure("float32"), reserve_s=60)
        runner.write_json(
            {
                "environment": env,
                "model_dtype": asdict(p) if p else None,
                "float32": asdict(f) if f else None,
            },
            "gpu-peaks.json",
        )
        return p

    peaks = runner.part("peaks", peaks_part)
    for config in plan["busy"]["configs"]:
        runner.part(
            f"{config}: busy time",
            lambda c=named.get(config, config): device_busy(runner, plan, c),
            reserve_s=30,
        )
    for config in plan["compiled"]["configs"]:
        runner.part(
            f"{config}: compiled step",
            lambda c=named.get(config, config): compiled_step(runner, plan, c),
            reserve_s=90,
        )
    for config in plan["grid"]["configs"]:
        runner.part(
            f"{config}: context × batch",
            lambda c=named.get(config, config): decode_grid(runner, plan, c),
            reserve_s=60,
        )
    if not args.no_wall:
        runner.part(
            "memory wall",
            lambda: runner.run("memory wall", lambda: memory_wall(runner, plan)),
            reserve_s=90,
        )
    for config in [] if args.wall_only else plan["configs"]:
        tag = config if isinstance(config, str) else config["name"]
        runner.part(
            f"{tag}: trace and sweeps",
            lambda c=config: one_config(runner, plan, c, peaks),
            reserve_s=30,
        )

    if torch.cuda.is_available() and not (args.wall_only or args.no_tests):
        # last: they passed on the first contact; the measurements come first in the budget
        runner.run("CUDA tests", lambda: cuda_tests(runner), reserve_s=60)

    drifted = [p["part"] for p in runner.parts if p["drifted"]]
    summary = {
        "environment": env,
        "plan": {k: v for k, v in plan.items() if k not in ("configs", "host_config")},
        "configs": [c if isinstance(c, str) else c["name"] for c in plan["configs"]],
        "steps": runner.steps,
        "parts": runner.parts,
        "drifted": drifted,
        "total_s": round(runner.elapsed(), 1),
        "cpu_times": {"start": at_start, "end": cpu_times()},
        "files": sorted(p.name for p in out.glob("*.json")),
        "set_aside": sorted(p.name for p in (out / "drifted").glob("*.json")),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    failed = [s for s in runner.steps if s["status"].startswith("error")]
    print(
        f"done in {runner.elapsed():.0f} s: {len(runner.steps)} steps, {len(failed)} failed, "
        f"{sum(s['status'].startswith('skipped') for s in runner.steps)} skipped, "
        f"{len(drifted)} parts set aside (host drifted)"
    )
    if drifted:
        print(f"!!! the host drifted during: {', '.join(drifted)}: see {out / 'drifted'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
