"""Record the memory-wall reference: decode step time against bytes per step, on this machine.

Writes `viz/data/cpu-memory-wall.json` (a `viz.perf.WallRun`), which lesson 08 shows for the
sizes a 2 GB Binder session cannot build. Nothing is downloaded: every model is built from a
shipped config with random weights (real kernels and bytes, meaningless text).

    python benchmarks/memory_wall.py                       # the reference (~5 min on 2 cores)
    python benchmarks/memory_wall.py --out /tmp/wall.json  # anywhere else
    python benchmarks/memory_wall.py --quick --out /tmp/w.json   # a dry run (seconds)

What it measures, in order (each printed as it goes):
1. the machine's peaks (`viz.measure_machine_peaks`): matmul FLOP/s in float32 and
   bfloat16; read, copy and matvec bandwidth over a 256 MiB buffer; the read bandwidth at
   32 MiB ... 2 GiB (how much the answer depends on the buffer);
2. the fixed per-step cost: tiny-width models (width 64, 512-token vocabulary) of 1 layer and
   of each shape's depth, in float32 and bfloat16;
3. each shape (a 12 M narrow SmolLM2, SmolLM2-135M, SmolLM2-360M, Llama-3.2-1B,
   SmolLM2-1.7B) in float32 and bfloat16: median decode forward pass over --repeats
   recordings of --steps steps; plus SmolLM2-135M float32 at batch 32 (a compute-heavy step);
   everything measured --rounds times (default 2), each point kept from its least-disturbed
   round (`viz.perf.best_of`; every round's figure is kept in the file);
4. int8 weight-only with torchao (`quantize_(model, Int8WeightOnlyConfig())`, eager) on the
   SmolLM2-135M shape, if torchao is importable (it is not a project dependency);
then the fit TPOT = fixed + bytes ÷ streaming rate, and the file, labelled with the
command, date, machine, threads and the load average before and after (a busy machine
measures slow: check `uptime` and run it when nothing else runs).
Threads: torch's default (the count a learner's kernel uses) unless --threads is given.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from viz.perf import from_config  # noqa: E402
from viz.perf.machine import measure_machine_peaks, narrow_config  # noqa: E402
from viz.perf.wall import QuantizedTry, best_of, measure_wall  # noqa: E402
from viz.perf.wall_point import measure_point  # noqa: E402
from viz.runtime import device_name, using_threads  # noqa: E402

MIB = 1 << 20
FULL = {
    "shapes": [
        narrow_config("smollm2-135m", 128, vocab_size=None, name="SmolLM2-135M depth, width 128"),
        "smollm2-135m",
        "smollm2-360m",
        "llama-3.2-1b",
        "smollm2-1.7b",
    ],
    "dtypes": ["float32", "bfloat16"],
    "compute_point": ("smollm2-135m", "float32", 32),
    "sizes": [32 * MIB, 64 * MIB, 128 * MIB, 256 * MIB, 512 * MIB, 1 << 30, 2 << 30],
    "buffer_bytes": 256 * MIB,
    "max_n": None,  # the machine's own: grown until a run is long enough (viz.perf.machine.matmul)
    "int8_shape": "smollm2-135m",
}
QUICK = {
    "shapes": [narrow_config("smollm2-135m", 32, vocab_size=512, n_layers=2, name="2 layers × 32")],
    "dtypes": ["float32", "bfloat16"],
    "compute_point": None,
    "sizes": [2 * MIB, 4 * MIB],
    "buffer_bytes": 4 * MIB,
    "max_n": 128,
    "int8_shape": None,
}


def machine() -> str:
    mem = ""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        mem = f", {total / 2**30:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        pass
    return (
        f"{device_name(torch.device('cpu'))}, {os.cpu_count()} logical CPUs{mem}, "
        f"{platform.system()} {platform.release()}"
    )


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return []


def int8_try(shape: str, steps: int, repeats: int) -> list[QuantizedTry]:
    """torchao int8 weight-only on `shape`, against float32 and bfloat16 (if torchao imports)."""
    try:
        import torchao
        from torchao.quantization import Int8WeightOnlyConfig, quantize_
    except Exception as e:  # not a dependency of the project: note it and go on
        print(f"int8: torchao not importable ({type(e).__name__}): not measured", flush=True)
        return []
    tries = []
    for dtype in ("float32", "bfloat16"):
        lm = from_config(shape, dtype=dtype)
        base = measure_point(lm, max_new_tokens=steps, repeats=repeats)
        quantize_(lm.model, Int8WeightOnlyConfig())
        quant = measure_point(lm, max_new_tokens=steps, repeats=repeats)
        tries.append(
            QuantizedTry(
                library=f"torchao {torchao.__version__}",
                method="Int8WeightOnlyConfig, eager",
                model=base.model,
                baseline_dtype=dtype,
                baseline_s=base.seconds,
                quantized_s=quant.seconds,
                note="quantize_(model, Int8WeightOnlyConfig()) on every nn.Linear; no torch.compile",
            )
        )
        print(
            f"int8 (torchao {torchao.__version__}) from {dtype}: {base.seconds * 1e3:.1f} → "
            f"{quant.seconds * 1e3:.1f} ms per step",
            flush=True,
        )
        del lm
        gc.collect()
    return tries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "viz" / "data" / "cpu-memory-wall.json"))
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: torch's default, what a learner's kernel uses)",
    )
    ap.add_argument("--steps", type=int, default=16, help="decode steps per recording")
    ap.add_argument("--repeats", type=int, default=3, help="timed recordings per model")
    ap.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="measure everything this many times; each point is kept from its "
        "least-disturbed round (viz.perf.best_of)",
    )
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a dry run in seconds")
    ap.add_argument("--no-int8", action="store_true", help="skip the torchao int8 try")
    ap.add_argument(
        "--torchao-path",
        default=None,
        help="a folder holding torchao (pip install --target DIR torchao==0.18.0), "
        "added to the import path only for the int8 try, after everything "
        "else is measured (torchao is not a project dependency)",
    )
    ap.add_argument("--label", default="project CPU reference")
    args = ap.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.quick:
        args.steps, args.repeats = min(args.steps, 4), 1
    threads = args.threads or torch.get_num_threads()
    command = "python benchmarks/memory_wall.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:])
    )
    before = load_average()
    start = time.perf_counter()
    print(
        f"{machine()}; torch {torch.__version__}; {threads} threads; load average {before}",
        flush=True,
    )

    with using_threads(threads):
        peaks = measure_machine_peaks(
            buffer_bytes=plan["buffer_bytes"], max_n=plan["max_n"], sizes=plan["sizes"]
        )
        print(peaks.how(), flush=True)
        for b in peaks.by_size:
            print(
                f"  read over {b.buffer_bytes / MIB:6.0f} MiB: {b.spread.text(1e-9, 'GB/s')} "
                f"(fastest {b.fastest_bytes_per_s / 1e9:5.1f})",
                flush=True,
            )
        rounds = []
        for k in range(max(1, args.rounds)):
            print(f"round {k + 1} of {args.rounds} (load average {load_average()})", flush=True)
            run = measure_wall(
                plan["shapes"],
                plan["dtypes"],
                peaks=peaks,
                overhead_depths=[1],
                max_new_tokens=args.steps,
                repeats=args.repeats,
                label=args.label,
                progress=True,
            )
            if plan["compute_point"]:
                shape, dtype, batch = plan["compute_point"]
                more = measure_wall(
                    [shape],
                    [dtype],
                    peaks=peaks,
                    batch_sizes=[batch],
                    prompt="Hi",
                    max_new_tokens=max(4, args.steps // 2),
                    repeats=args.repeats,
                    overhead=run.overhead,
                    fixed_cost_points=False,
                    label=args.label,
                )
                run = run.merged(more)
            for p in run.points:
                print(f"  {p.label:<36} {p.seconds * 1e3:8.2f} ms", flush=True)
            rounds.append(run)
        run = best_of(rounds)
        if args.torchao_path:
            sys.path.insert(0, args.torchao_path)
        quantized = (
            []
            if (args.no_int8 or not plan["int8_shape"])
            else int8_try(plan["int8_shape"], args.steps, args.repeats)
        )
    after = load_average()
    try:
        fits = [
            f"the fit (batch-1 model shapes whose verdict is not compute-bound, in one "
            f"number format; the one lesson 08 prints and draws): {run.fit()}"
        ]
    except ValueError as e:  # a dry run's tiny models may not show a slope
        fits = [f"no fit: {e}"]
    run = replace(
        run,
        quantized=quantized,
        recorded={
            **run.recorded,
            "command": command,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "threads": threads,
            "threads_note": "torch's default on this machine (what a learner's kernel uses)"
            if args.threads is None
            else "set with --threads",
            "load_average_before": before,
            "load_average_after": after,
            "seconds": round(time.perf_counter() - start, 1),
        },
        notes=fits
        + (
            []
            if quantized
            else ["int8 weight-only not measured (torchao not importable or --no-int8)"]
        ),
    )
    print(run, flush=True)
    print("\n".join(fits), flush=True)
    for p in run.points:
        print(f"  {p.label}: {run.explain(p)}", flush=True)
    path = run.save(args.out)
    print(
        f"wrote {path} ({path.stat().st_size:,} bytes) in {run.recorded['seconds']:.0f} s; "
        f"load average before {before}, after {after}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
