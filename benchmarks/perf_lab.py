"""The performance lab on the real default model: every sweep and the roofline, printed, and
saved as the reference data shipped in viz/data/ (regenerate it with this script).

    .venv/bin/python benchmarks/perf_lab.py --quiet          # all, writes viz/data/cpu-*.json
    .venv/bin/python benchmarks/perf_lab.py --out /tmp/lab --only prompt batch

On a shared machine every part first waits until other programs use at most --wait-idle of
the CPUs (default 15%, from /proc/stat; at most --max-wait seconds), and is measured again
(up to --tries times) if they used more while it ran: with 2 threads, one busy core slows
every parallel operation several-fold. The log prints, for each part, the share of the CPUs
other programs used and the load average.

Threads: torch's default (what a learner's notebook kernel uses: one per core) unless
--threads says otherwise. Every file's label says what was recorded, short enough for a
figure's title: the thread count and the highest 1-minute load average while it was recorded
("2 threads, load 1.3"; the recording's own threads count in it, about 1 on an otherwise idle
2-core machine). The roofline uses this machine's peaks as every lesson does (`viz.perf.cached_peaks`: matmul and
read bandwidth), measured afresh here (`machine_peaks(refresh=True)`, which also updates the
cache the lessons read), so the reference and the lessons share one measurement.

Writes: cpu-chat-trace (a short chat reply, all fields), cpu-prompt-sweep, cpu-context-sweep,
cpu-cache-sweep, cpu-batch-sweep, cpu-roofline. Also checks the claim behind models built from
configs: the same architecture with random weights decodes at the same speed as the real
model (interleaved runs, medians) — printed, not saved. About 3-5 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import os
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


def load1() -> float:
    """The 1-minute load average now (0.0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def cpu_snapshot() -> tuple[float, float, float]:
    """(busy CPU-seconds of the whole machine, all CPU-seconds, this process's CPU-seconds)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        with open("/proc/stat") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0, time.process_time()
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / tick, sum(fields) / tick, time.process_time()


def others_share(since: tuple[float, float, float]) -> float:
    """Share of all CPUs that *other* programs used since `since` (a `cpu_snapshot`)."""
    busy0, all0, own0 = since
    busy1, all1, own1 = cpu_snapshot()
    if all1 - all0 <= 0:
        return 0.0
    return max(0.0, (busy1 - busy0) - (own1 - own0)) / (all1 - all0)


def wait_for_idle(limit: float, max_wait_s: float) -> None:
    """Wait until other programs use at most `limit` of the CPUs (2 s samples), for at most
    `max_wait_s`; then go on either way and say so. limit <= 0: do not wait."""
    if limit <= 0:
        return
    start = time.perf_counter()
    while True:
        snap = cpu_snapshot()
        time.sleep(2)
        busy = others_share(snap)
        if busy <= limit:
            return
        if time.perf_counter() - start > max_wait_s:
            print(
                f"  (still {busy:.0%} busy after {max_wait_s:.0f} s: measuring anyway)", flush=True
            )
            return
        time.sleep(8)


class Lab:
    """Runs each part on an idle machine, again (up to `tries` times) if other programs used
    more than `limit` of the CPUs while it ran, and labels what it saves with the conditions."""

    def __init__(self, lm, out: Path, limit: float, max_wait_s: float, tries: int):
        self.lm, self.out, self.limit, self.max_wait_s, self.tries = (
            lm,
            out,
            limit,
            max_wait_s,
            tries,
        )

    def run(self, name: str, measure):
        for attempt in range(1, self.tries + 1):
            wait_for_idle(self.limit, self.max_wait_s)
            before, snap = load1(), cpu_snapshot()
            result = measure()
            share = others_share(snap)
            print(
                f"  ({name}: other programs used {share:.0%} of the CPUs, load {before:.1f}-"
                f"{load1():.1f}, attempt {attempt})",
                flush=True,
            )
            if self.limit <= 0 or share <= self.limit or attempt == self.tries:
                return result, (before, load1(), share)

    def label(self, *conditions: tuple[float, float, float]) -> str:
        """What was recorded, short enough for a figure's title: the thread count and the
        highest 1-minute load average seen from the first part's start to the last one's end
        (the recording's own threads count in it: about 1 on an otherwise idle 2-core machine).
        The share of the CPUs other programs used is printed beside it, not stored."""
        n = torch.get_num_threads()
        where = (
            "" if self.lm.device.type == "cpu" else viz.runtime.device_name(self.lm.device) + ", "
        )
        load = max(max(c[0], c[1]) for c in conditions)
        print(
            f"  (conditions: load {min(c[0] for c in conditions):.1f}-{load:.1f}, other "
            f"programs at most {max(c[2] for c in conditions):.0%} of the CPUs)",
            flush=True,
        )
        return f"{where}{n} thread{'s' if n != 1 else ''}, load {load:.1f}"

    def save(self, obj, name: str, *conditions: tuple[float, float, float]) -> None:
        obj.label = self.label(*conditions)
        path = obj.save(self.out / f"{name}.json")
        print(f"saved {path} ({path.stat().st_size:,} bytes), label {obj.label!r}\n", flush=True)


def random_vs_real(lm, rounds: int = 3, tokens: int = 16) -> None:
    """Decode speed of the real weights vs random weights of the same shape, interleaved."""
    rnd = perf.from_config("smollm2-135m", device=lm.device, dtype=lm.spec.dtype)
    tpot = {"real": [], "random": []}
    for _ in range(rounds):
        for name, m in (("real", lm), ("random", rnd)):
            t = viz.record(
                m,
                CHAT,
                chat=True,
                max_new_tokens=tokens,
                stop_at_eos=False,
                embeddings=False,
                log_top=1,
            )
            tpot[name].append(t.tpot_s)
    real, random = statistics.median(tpot["real"]), statistics.median(tpot["random"])
    print(
        f"random weights vs real, same shape: TPOT {random * 1e3:.1f} ms vs "
        f"{real * 1e3:.1f} ms (ratio {random / real:.2f}; medians of {rounds} interleaved "
        f"runs of {tokens} tokens)\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "viz" / "data"))
    ap.add_argument("--only", nargs="+", choices=PARTS, default=PARTS)
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    ap.add_argument(
        "--wait-idle",
        type=float,
        default=0.15,
        metavar="SHARE",
        help="before each part, wait until other programs use at most this share "
        "of the CPUs, and measure the part again if they used more while it "
        "ran (default 0.15; 0: neither)",
    )
    ap.add_argument(
        "--max-wait",
        type=float,
        default=1800,
        metavar="SECONDS",
        help="longest wait for an idle machine before each part (default 1800)",
    )
    ap.add_argument(
        "--tries",
        type=int,
        default=3,
        help="measurements of a part at most, when other programs disturb it",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: torch's, one per core: what a learner's "
        "kernel uses). With 2 threads and another program on the second core "
        "every parallel op waits for the busy core and runs 3-8x slower (seen "
        "here): hence --wait-idle; the label says how busy the machine was",
    )
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    progress = not args.quiet
    t0 = time.perf_counter()
    lm = viz.load_model(device="cpu")
    print(
        f"{lm!r}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
        f"load average {os.getloadavg() if hasattr(os, 'getloadavg') else 'n/a'}\n",
        flush=True,
    )
    viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the first pass pays set-up costs
    lab = Lab(lm, Path(args.out), args.wait_idle, args.max_wait, args.tries)

    if "trace" in args.only:
        t, how = lab.run("trace", lambda: viz.record(lm, CHAT, chat=True, max_new_tokens=48))
        print(t.summary())
        lab.save(t, "cpu-chat-trace", how)
    prompts = None
    if "prompt" in args.only or "roofline" in args.only:
        prompts, prompts_how = lab.run(
            "prompt sweep",
            lambda: perf.prompt_length_sweep(
                lm, [8, 16, 32, 64, 128, 256], repeats=3, progress=progress
            ),
        )
        print(prompts)
        if "prompt" in args.only:
            lab.save(prompts, "cpu-prompt-sweep", prompts_how)
    if "context" in args.only:
        s, how = lab.run(
            "context sweep",
            lambda: perf.context_length_sweep(
                lm, [16, 64, 256, 512, 1024], max_new_tokens=9, repeats=1, progress=progress
            ),
        )
        print(s)
        lab.save(s, "cpu-context-sweep", how)
    if "cache" in args.only:
        s, how = lab.run(
            "cache sweep",
            lambda: perf.cache_sweep(
                lm,
                "The KV cache saves work because",
                max_new_tokens=32,
                repeats=1,
                progress=progress,
            ),
        )
        print(s)
        lab.save(s, "cpu-cache-sweep", how)
    batch = None
    if "batch" in args.only or "roofline" in args.only:
        batch, batch_how = lab.run(
            "batch sweep",
            lambda: perf.batch_size_sweep(
                lm, [1, 2, 4, 8, 16], max_new_tokens=16, repeats=2, progress=progress
            ),
        )
        print(batch)
        if "batch" in args.only:
            lab.save(batch, "cpu-batch-sweep", batch_how)
    if "roofline" in args.only:

        def roofline():
            machine = perf.machine_peaks(lm.device, refresh=True)  # updates the lessons' cache
            print(machine.how())
            return perf.measure_roofline(
                lm,
                prompt_tokens=128,
                max_new_tokens=16,
                peaks=perf.peaks_from_machine(machine, lm.spec.dtype),
                batch=batch,
                prompt_sweep=prompts,
            )

        roof, how = lab.run("peaks and roofline", roofline)
        print(roof)
        lab.save(roof, "cpu-roofline", prompts_how, batch_how, how)
    if "random" in args.only:
        lab.run("random vs real", lambda: random_vs_real(lm))
    print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
