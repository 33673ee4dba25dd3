"""Serving benchmark: one request at a time vs continuous batching, on the embedded server.

Starts `transformers serve` on the default model twice — without and with continuous
batching (viz.serve.EmbeddedServer, its default CPU sizing) — both at once, and loads them in
turn, interleaved (1 stream on one, then on the other, then 4 streams ...), so that whatever
else the machine is doing hits both alike. At each load it sends `--requests-per-stream` ×
streams requests (the shipped prompt set, answers capped at `--max-tokens`) and prints the
aggregate output tokens per second of each server, their ratio, and each one's p50 TTFT and
TPOT. A benchmark, not a test: nothing fails on a slow machine.

    .venv/bin/python benchmarks/serving.py                      # 1, 4, 8 streams (~3 min here)
    .venv/bin/python benchmarks/serving.py --streams 1 4 8 16 --out artifacts/serving

`--out DIR` keeps every run as a LoadRun JSON (viz.serve.LoadRun.load reads them).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from viz.serve import EmbeddedServer, run_load  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--streams", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--requests-per-stream", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="folder for the runs (JSON)")
    args = p.parse_args(argv)
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs; load average at start "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    start = time.perf_counter()
    modes = {"one at a time": False, "continuous batching": True}
    servers = {}
    try:
        for name, cb in modes.items():
            t = time.perf_counter()
            servers[name] = EmbeddedServer(continuous_batching=cb).start()
            print(f"started {servers[name]!r} in {time.perf_counter() - t:.1f} s "
                  "(warm-up included)", flush=True)
        rows = []
        for streams in args.streams:
            row = {"streams": streams}
            for name, server in servers.items():
                run = run_load(server, concurrency=streams,
                               n_requests=streams * args.requests_per_stream,
                               max_tokens=args.max_tokens, seed=args.seed, progress=False,
                               label=name, max_duration_s=600)
                s = run.summary()
                if s.n_failed:
                    print(f"  {name}, {streams} streams: {s.n_failed} requests failed: "
                          f"{sorted(s.errors)}", flush=True)
                row[name] = s
                if out:
                    run.save(out / f"{name.replace(' ', '-')}-{streams}.json")
            rows.append(row)
            one, cb = row["one at a time"], row["continuous batching"]
            print(f"  {streams} streams done: {one.output_tokens_per_s:.1f} vs "
                  f"{cb.output_tokens_per_s:.1f} tokens/s", flush=True)
        peaks = {name: s.peak_rss_bytes() for name, s in servers.items()}
    finally:
        for s in servers.values():
            s.stop()
    ms = lambda v: "n/a" if v is None else f"{v * 1000:.0f} ms"  # noqa: E731
    print()
    print(f"aggregate output tokens/s (answers ≤ {args.max_tokens} tokens, "
          f"{args.requests_per_stream} requests per stream)")
    print(f"{'streams':>7}  {'one at a time':>14}  {'continuous':>11}  {'ratio':>6}   "
          f"{'TTFT p50 (one / cont.)':>24}   {'TPOT p50 (one / cont.)':>24}")
    for row in rows:
        one, cb = row["one at a time"], row["continuous batching"]
        ratio = cb.output_tokens_per_s / one.output_tokens_per_s
        print(f"{row['streams']:>7}  {one.output_tokens_per_s:>14.1f}  "
              f"{cb.output_tokens_per_s:>11.1f}  {ratio:>5.2f}×   "
              f"{ms(one.ttft_s['p50']) + ' / ' + ms(cb.ttft_s['p50']):>24}   "
              f"{ms(one.tpot_s['p50']) + ' / ' + ms(cb.tpot_s['p50']):>24}")
    print("server peak resident memory: "
          + ", ".join(f"{name} {b / 2**20:,.0f} MiB" for name, b in peaks.items()))
    print(f"total {time.perf_counter() - start:.0f} s; load average at end "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
