"""The performance lab on the real default model: every sweep and the roofline, printed, and
saved as the reference data shipped in viz/data/ (regenerate it with this script).

    .venv/bin/python benchmarks/perf_lab.py --threads 1      # all, writes viz/data/cpu-*.json
    .venv/bin/python benchmarks/perf_lab.py --out /tmp/lab --only prompt batch

Writes: cpu-chat-trace (a short chat reply, all fields), cpu-prompt-sweep, cpu-context-sweep,
cpu-cache-sweep, cpu-batch-sweep, cpu-roofline. Also checks the claim behind models built from
configs: the same architecture with random weights decodes at the same speed as the real
model (interleaved runs, medians) — printed, not saved. About 3-5 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import viz  # noqa: E402
from viz import perf  # noqa: E402

CHAT = "Why is the sky blue? Answer in two sentences."
PARTS = ["trace", "prompt", "context", "cache", "batch", "roofline", "random"]


def label(lm) -> str:
    n = torch.get_num_threads()
    return f"CPU ({n} thread{'s' if n != 1 else ''})" if lm.device.type == "cpu" \
        else viz.runtime.device_name(lm.device)


def save(obj, out: Path, name: str) -> None:
    path = obj.save(out / f"{name}.json")
    print(f"saved {path} ({path.stat().st_size:,} bytes)\n", flush=True)


def random_vs_real(lm, rounds: int = 3, tokens: int = 16) -> None:
    """Decode speed of the real weights vs random weights of the same shape, interleaved."""
    rnd = perf.from_config("smollm2-135m", device=lm.device, dtype=lm.spec.dtype)
    tpot = {"real": [], "random": []}
    for _ in range(rounds):
        for name, m in (("real", lm), ("random", rnd)):
            t = viz.record(m, CHAT, chat=True, max_new_tokens=tokens, stop_at_eos=False,
                           embeddings=False, log_top=1)
            tpot[name].append(t.tpot_s)
    real, random = statistics.median(tpot["real"]), statistics.median(tpot["random"])
    print(f"random weights vs real, same shape: TPOT {random * 1e3:.1f} ms vs "
          f"{real * 1e3:.1f} ms (ratio {random / real:.2f}; medians of {rounds} interleaved "
          f"runs of {tokens} tokens)\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "viz" / "data"))
    ap.add_argument("--only", nargs="+", choices=PARTS, default=PARTS)
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: torch's). On a shared machine use 1: with 2 "
                         "threads and another program on the second core, every parallel op "
                         "waits for the busy core and runs 3-8x slower (seen here)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    progress = not args.quiet
    t0 = time.perf_counter()
    lm = viz.load_model(device="cpu")
    lab = label(lm)
    print(f"{lm!r}, {torch.get_num_threads()} threads, torch {torch.__version__}\n", flush=True)

    if "trace" in args.only:
        t = viz.record(lm, CHAT, chat=True, max_new_tokens=48, label=lab)
        print(t.summary())
        save(t, out, "cpu-chat-trace")
    prompts = None
    if "prompt" in args.only or "roofline" in args.only:
        prompts = perf.prompt_length_sweep(lm, [8, 16, 32, 64, 128, 256], repeats=3,
                                           progress=progress, label=lab)
        print(prompts)
        if "prompt" in args.only:
            save(prompts, out, "cpu-prompt-sweep")
    if "context" in args.only:
        s = perf.context_length_sweep(lm, [16, 64, 256, 512, 1024], max_new_tokens=9, repeats=1,
                                      progress=progress, label=lab)
        print(s)
        save(s, out, "cpu-context-sweep")
    if "cache" in args.only:
        s = perf.cache_sweep(lm, "The KV cache saves work because", max_new_tokens=32, repeats=1,
                             progress=progress, label=lab)
        print(s)
        save(s, out, "cpu-cache-sweep")
    batch = None
    if "batch" in args.only or "roofline" in args.only:
        batch = perf.batch_size_sweep(lm, [1, 2, 4, 8, 16], max_new_tokens=16, repeats=2,
                                      progress=progress, label=lab)
        print(batch)
        if "batch" in args.only:
            save(batch, out, "cpu-batch-sweep")
    if "roofline" in args.only:
        peaks = perf.measure_peaks(lm.device, lm.spec.dtype)
        roof = perf.measure_roofline(lm, prompt_tokens=128, max_new_tokens=16, peaks=peaks,
                                     batch=batch, prompt_sweep=prompts, label=lab)
        print(roof)
        save(roof, out, "cpu-roofline")
    if "random" in args.only:
        random_vs_real(lm)
    print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
