"""Serving benchmark: a rate sweep of each server setting, repeated, with intervals.

Starts each server in turn on the default model — `transformers serve` one request at a time,
`transformers serve` with continuous batching (viz.serve.EmbeddedServer, its default CPU
sizing), and llama.cpp's OpenAI server on the model's own Q4_1 GGUF file
(viz.serve.LlamaCppServer) — and sweeps each with viz.serve.sweep_rates: one request at a
time, all at once, then `--rates` Poisson rates between, stopped where the server saturates,
every load run `--repeats` times. One objective for all, derived from the first setting's
one-at-a-time load (2 × its p90 TTFT and TPOT), so their goodputs compare. Prints each sweep
(medians, and the confidence interval of each median), then the settings side by side at their
lightest and heaviest loads. A benchmark, not a test: nothing fails on a slow machine.

    .venv/bin/python benchmarks/serving.py                          # ~7 min here
    .venv/bin/python benchmarks/serving.py --repeats 5 --n-requests 16 --out artifacts/serving
    .venv/bin/python benchmarks/serving.py --settings continuous llama.cpp

`--out DIR` keeps each sweep as a LoadSweep JSON (`python -m viz report DIR/*.json`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from viz.serve import EmbeddedServer, LoadSweep, sweep_rates  # noqa: E402

SETTINGS = ("one-at-a-time", "continuous", "llama.cpp")


def start(name: str):
    if name == "llama.cpp":
        from viz.serve import LlamaCppServer

        return LlamaCppServer().start()
    return EmbeddedServer(continuous_batching=name == "continuous").start()


def _cell(v, scale: float = 1.0, digits: int = 2) -> str:
    """A median and its interval, compact: "0.73 (0.71–0.75)"."""
    if v is None:
        return "n/a"
    f = lambda x: f"{x * scale:,.{digits}f}"  # noqa: E731
    same = v.runs <= 1 or f(v.low) == f(v.high)
    return f(v.median) if same else f"{f(v.median)} ({f(v.low)}–{f(v.high)})"


def side_by_side(sweeps: dict[str, LoadSweep]) -> str:
    """Each setting's lightest load (one at a time) and heaviest (all at once), medians with
    intervals: requests/s, output tokens/s, TTFT p50, TPOT p50, goodput."""
    coverage = {
        p.figure("requests_per_s", s.slo).coverage
        for s in sweeps.values()
        for p in s.points
        if p.figure("requests_per_s", s.slo).runs > 1
    }
    ci = (
        f"the {min(coverage):.0%} confidence interval of the median"
        if coverage
        else "one run each: no interval"
    )
    lines = [
        f"side by side: medians (in brackets {ci}); times in ms",
        f"{'setting':>22} {'load':>14} {'requests/s':>17} {'tokens/s':>17} "
        f"{'TTFT p50':>19} {'TPOT p50':>12} {'goodput/s':>17}",
    ]
    for name, sweep in sweeps.items():
        for kind in ("synchronous", "throughput"):
            p = sweep.point(kind)
            if p is None:
                continue
            f = {
                k: p.figure(k, sweep.slo)
                for k in (
                    "requests_per_s",
                    "output_tokens_per_s",
                    "ttft_p50_s",
                    "tpot_p50_s",
                    "goodput_per_s",
                )
            }
            lines.append(
                f"{name:>22} {p.label:>14} {_cell(f['requests_per_s']):>17} "
                f"{_cell(f['output_tokens_per_s'], 1, 1):>17} "
                f"{_cell(f['ttft_p50_s'], 1e3, 0):>19} "
                f"{_cell(f['tpot_p50_s'], 1e3, 0):>12} "
                f"{_cell(f['goodput_per_s']):>17}"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    p.add_argument("--n-requests", type=int, default=8, help="requests per run")
    p.add_argument("--rates", type=int, default=3, help="Poisson rates between")
    p.add_argument("--repeats", type=int, default=3, help="runs per load")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=float, default=300.0, help="seconds per sweep, at most")
    p.add_argument("--out", default=None, help="folder for the sweeps (JSON)")
    args = p.parse_args(argv)
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} CPUs; load average at start "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    began, sweeps, slo = time.perf_counter(), {}, None
    for name in args.settings:
        t = time.perf_counter()
        server = start(name)
        try:
            print(f"\nstarted {server!r} in {time.perf_counter() - t:.1f} s", flush=True)
            sweep = sweep_rates(
                server,
                n_requests=args.n_requests,
                n_rates=args.rates,
                repeats=args.repeats,
                max_tokens=args.max_tokens,
                seed=args.seed,
                slo=slo,
                budget_s=args.budget,
                progress=False,
                label=getattr(server, "label", name),
                out=str(out / f"sweep-{name}.json") if out else None,
            )
            peak = server.peak_rss_bytes() if hasattr(server, "peak_rss_bytes") else None
        finally:
            server.stop()
        slo = slo or sweep.slo
        sweeps[sweep.name] = sweep
        memory = f"; server peak {peak / 2**20:,.0f} MiB" if peak else ""
        print(f"{sweep}\n(swept in {sweep.duration_s:.0f} s{memory})", flush=True)
    print()
    print(side_by_side(sweeps))
    print(
        f"\ntotal {time.perf_counter() - began:.0f} s; load average at end "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
