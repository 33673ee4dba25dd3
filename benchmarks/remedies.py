"""Lessons 12's and 13's references: the course model in six weight formats, and its decode step compiled.

    .venv/bin/python benchmarks/remedies.py                  # writes viz/data/cpu-formats.json
                                                             # and viz/data/cpu-compiled-step.json
    .venv/bin/python benchmarks/remedies.py --out /tmp/rem   # elsewhere
    .venv/bin/python benchmarks/remedies.py --only compiled

Lessons 12 and 13 measure both on the learner's machine, except what does not fit there: compiling the
course model (~45 s on 2 cores, on top of the lesson's own ~half-minute compile of lesson 08's
fixed-cost model), and, where llama.cpp is not installed (Binder), the four llama.cpp rows.
The lesson then shows these files, labelled as this project's reference machine's figures.

- `cpu-formats.json`: `viz.perf.measure_formats` over every format this machine has (all six
  with llama.cpp installed), `--tokens` greedy tokens, `--repeats` runs each (a `FormatRun`).
- `cpu-compiled-step.json`: `viz.perf.measure_compiled_step` on the course model in float32
  (compiled into an empty Inductor cache: the first-run cost), and the same for lesson 08's
  fixed-cost model (30 layers × 64) printed beside it, not saved (the lesson measures that one).

Each file's `source` names this command, the machine, the date and the load average before and
after. Wait for a quiet machine: with 2 threads, one busy core slows every parallel operation
several-fold. About 3 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import viz  # noqa: E402
from viz import perf  # noqa: E402
from viz.runtime import cpu_name  # noqa: E402

PARTS = ("formats", "compiled")


def load_average() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except (AttributeError, OSError):
        return "n/a"


def source(command: str, before: str) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return (
        f"`{command}` on {cpu_name()} ({os.cpu_count()} CPUs), torch {torch.__version__}, "
        f"{when}; load average {before} before, {load_average()} after"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "viz" / "data"), help="folder for the files")
    ap.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    ap.add_argument("--tokens", type=int, default=32, help="greedy tokens per formats run")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each format / way")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: torch's, what a learner's kernel uses)",
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    given = sys.argv[1:] if argv is None else list(argv)
    command = shlex.join(["python", "benchmarks/remedies.py", *given])

    if "formats" in args.only:
        before, t0 = load_average(), time.perf_counter()
        run = perf.measure_formats(
            formats=perf.available_formats(),
            new_tokens=args.tokens,
            repeats=args.repeats,
            threads=args.threads,
        )
        run = dataclasses.replace(
            run, source=source(command, before), read_bytes_per_s=perf.machine_peaks().bytes_per_s
        )
        print(run, flush=True)
        if run.failures:  # a reference is all six rows from one machine, or nothing
            raise SystemExit(
                f"not saved: {', '.join(f.format for f in run.failures)} failed "
                "(above); fix that, then measure again"
            )
        print(
            f"formats: {time.perf_counter() - t0:.0f} s → {run.save(out / 'cpu-formats.json')}",
            flush=True,
        )

    if "compiled" in args.only:
        narrow = perf.from_config(perf.narrow_config("smollm2-135m"), device="cpu")
        before = load_average()
        fixed = perf.measure_compiled_step(narrow, repeats=args.repeats, threads=args.threads)
        print(f"lesson 08's fixed-cost model (printed, not saved):\n{fixed}", flush=True)
        del narrow
        lm = viz.load_model(device="cpu")
        before, t0 = load_average(), time.perf_counter()
        course = perf.measure_compiled_step(lm, repeats=args.repeats, threads=args.threads)
        course = dataclasses.replace(course, source=source(command, before))
        print(course, flush=True)
        print(
            f"saved per step on the course model {course.saved.text(1e3, 'ms', 2)}, on the "
            f"fixed-cost model {fixed.saved.text(1e3, 'ms', 2)}",
            flush=True,
        )
        print(
            f"compiled: {time.perf_counter() - t0:.0f} s → "
            f"{course.save(out / 'cpu-compiled-step.json')}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
