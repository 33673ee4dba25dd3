"""Long contexts and prefix caching, measured past what lesson 11 has time for.

On the default model (float32, this machine's CPU threads), each with medians and the middle
half of the runs:

1. prefill of 256 … `--longest` tokens (default 4,096): seconds, ms per token, attention's
   measured and counted share (`viz.perf.long_prefill_sweep`), the crossover fitted and counted;
2. one decode step at 0 / 2,048 / 4,096 / 8,191 cached tokens (random keys and values of the
   model's shapes, `viz.perf.long_decode_sweep`): the step against the bytes-predicted ratio;
2b. the same step over transformers' quantized KV caches (`viz.perf.kv_quant_sweep`: fp8,
   quanto's int4 and int2, each beside the float32 cache): step time and the bytes a step must
   read at each precision, dequantization timed alone, the regime rule's verdict; and 24 greedy
   tokens after a real prompt against the float32 cache's (`viz.perf.kv_quant_agreement`);
3. time to first token of a 512-token prompt with 0 / 50 / 75 / 95 % of it cached
   (`viz.perf.prefix_cache_sweep`);
4. the continuous-batching engine in this process, sharing on and off
   (`viz.serve.measure_prefix_sharing`): hit rate and the engine's time to first token;
5. with `--server`, the real `transformers serve --continuous-batching` over HTTP
   (127.0.0.1 only): requests that share one system prompt against requests whose system
   prompts differ in their first word (the same length, nothing to share), interleaved; the
   client's time to first token of each. Sharing is always on in that server (its command
   line has no switch), so "different prompts" is the "off" arm.

A benchmark, not a test: nothing fails on a slow machine.

    .venv/bin/python benchmarks/long_context.py                 # ~2 min here
    .venv/bin/python benchmarks/long_context.py --server        # + the HTTP server (~1 min)
    .venv/bin/python benchmarks/long_context.py --quick         # a tiny random model, seconds
    .venv/bin/python benchmarks/long_context.py --quant-only    # only 2b (~1 min here)
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

import viz  # noqa: E402
from viz import perf, serve  # noqa: E402

SYSTEM = (
    "You are the teaching assistant of a course on how language models run. Answer in "
    "two sentences, plainly, and say when a number depends on the machine. "
) * 3
QUESTIONS = [
    "What is prefill?",
    "What is decode?",
    "Why batch requests?",
    "What is a page?",
    "What is a token?",
    "Why is decode slow?",
]
OPENERS = ["Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel"]


def quick_model() -> viz.LoadedModel:
    return perf.from_config(
        {
            "name": "tiny-llama",
            "source": "benchmarks/long_context.py",
            "config": {
                "model_type": "llama",
                "vocab_size": perf.BYTE_VOCAB,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "head_dim": 16,
                "max_position_embeddings": 1024,
                "tie_word_embeddings": True,
            },
        }
    )


def chat_ids(tok, system: str, question: str) -> list[int]:
    out = tok.apply_chat_template(
        [{"role": "system", "content": system}, {"role": "user", "content": question}],
        add_generation_prompt=True,
        tokenize=True,
    )
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def server_arm(repeats: int) -> dict[str, list[float]]:
    """TTFT (s) of requests sharing one system prompt vs system prompts that differ."""
    ttft: dict[str, list[float]] = {"shared": [], "different": []}
    with serve.EmbeddedServer(continuous_batching=True) as server:
        serve.record_request(server, "Hello", system=SYSTEM, max_tokens=2)  # seeds the prefix
        for i in range(repeats):
            for arm in ("shared", "different"):
                system = (
                    SYSTEM if arm == "shared" else f"{OPENERS[i % len(OPENERS)]} {i}. " + SYSTEM
                )
                q = QUESTIONS[i % len(QUESTIONS)]
                rec = serve.record_request(server, q, system=system, max_tokens=2)
                ttft[arm].append(rec.request.ttft_s)
    return ttft


def quantized_cache(lm: viz.LoadedModel, contexts: list[int], repeats: int, quick: bool) -> None:
    """2b: the decode step over each quantized cache beside the float32 one, and agreement."""
    group = 32 if quick else 64  # the tiny model's kv_heads · head_dim is 32
    quants = [perf.KVQuant(8), perf.KVQuant(4, group_size=group), perf.KVQuant(2, group_size=group)]
    sweep = perf.kv_quant_sweep(
        lm, [c for c in contexts if c], quants, repeats=repeats, progress=False
    )
    print(
        f"\n2b. decode step over transformers' quantized KV caches ({repeats} steps each, "
        "each beside an empty-cache step; random keys and values, quantized by the backend)"
    )
    names = ["float32"] + [q.name for q in quants]
    for c in sorted(set(sweep.column("context_tokens"))):
        base = perf.kv_quant_row(sweep, "float32", c)
        for name in names:
            r = perf.kv_quant_row(sweep, name, c)
            vs = r["growth_spread"] / base["growth_spread"]
            extra = (
                ""
                if name == "float32"
                else (
                    f"; dequantizing alone {r['dequantize_s'] * 1e3:.1f} ms; ×{vs.median:.2f} "
                    f"(×{vs.low:.2f}–{vs.high:.2f}) float32's step, each ÷ its empty step"
                    + (
                        f"; flush (whole cache quantized) {r['flush_s'] * 1e3:.0f} ms"
                        if r["flush_s"]
                        else ""
                    )
                )
            )
            print(
                f"   {c:>5} cached, {name:>7}: {r['step'].text(1e3, 'ms')}; reads "
                f"{r['step_bytes'] / 1e6:,.0f} MB (KV {r['kv_bytes'] / 1e6:,.1f} MB){extra}"
            )
    peaks = perf.cached_peaks()
    fixed = perf.fixed_cost(lm.spec.n_layers, progress=False)
    for name, v in perf.kv_quant_verdicts(sweep, peaks, fixed).items():
        print(f"   the rule at {max(sweep.column('context_tokens')):,} cached, {name}: {v}")
    kwargs = {"prompt": [10 + (i * 7) % 200 for i in range(290)]} if quick else {}
    for a in perf.kv_quant_agreement(lm, quants, steps=24, **kwargs):
        print(f"   {a.line()}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--longest", type=int, default=4096, help="longest prefill (tokens)")
    p.add_argument("--server", action="store_true", help="also time the HTTP server")
    p.add_argument("--server-repeats", type=int, default=6)
    p.add_argument("--quick", action="store_true", help="a tiny random model (a dry run)")
    p.add_argument("--quant-only", action="store_true", help="only the quantized KV cache (2b)")
    p.add_argument("--repeats", type=int, default=7, help="decode steps timed per setting")
    args = p.parse_args(argv)
    print(
        f"machine: {os.cpu_count()} CPUs; load average at start "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    lm = quick_model() if args.quick else viz.load_model(device="cpu")
    longest = min(args.longest, 512) if args.quick else args.longest
    lengths = [n for n in (256, 512, 1024, 2048, 4096, 8192) if n <= longest]
    contexts = [0, 256, 512, 1000] if args.quick else [0, 2048, 4096, 8191]
    start = time.perf_counter()

    if args.quant_only:
        quantized_cache(lm, contexts, args.repeats, args.quick)
        print(
            f"\ntook {time.perf_counter() - start:.0f} s; load average at the end "
            f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
        return 0

    pre = perf.long_prefill_sweep(lm, lengths, repeats=2, progress=False)
    print(f"\n1. prefill ({lm.spec.name}, {pre.environment.device_name})")
    for n, s, per, share, counted in zip(
        *(
            pre.column(c)
            for c in (
                "prompt_tokens",
                "prefill_s",
                "prefill_s_per_token",
                "attention_share",
                "counted_attention_share",
            )
        )
    ):
        print(
            f"   {n:>5} tokens: {s:7.2f} s, {per * 1e3:.2f} ms per token, attention "
            f"{share:.0%} of the time ({counted:.0%} of the FLOPs)"
        )
    print(
        f"   crossover: measured {perf.measured_crossover(pre).text()}; counted "
        f"{perf.attention_crossover(lm.spec):,} tokens"
    )

    dec = perf.long_decode_sweep(lm, contexts, repeats=args.repeats, progress=False)
    print("\n2. decode step against context (random cache of the model's shapes)")
    steps, moved = dec.spread("decode_step_s"), dec.column("step_bytes")
    for c, s, g, b, a in zip(
        dec.column("context_tokens"), steps, dec.spread("growth"), moved, dec.column("attention_s")
    ):
        print(
            f"   {c:>5} cached: {s.text(1e3, 'ms')}, ×{g.median:.2f} (×{g.low:.2f}–{g.high:.2f})"
            f" the empty-cache step beside it, for ×{b / moved[0]:.2f} the bytes; attention "
            f"{a * 1e3:.1f} ms"
        )

    quantized_cache(lm, contexts, args.repeats, args.quick)

    n = 256 if args.quick else 512
    pc = perf.prefix_cache_sweep(lm, n, [0.0, 0.5, 0.75, 0.95], repeats=3, progress=False)
    print(f"\n3. time to first token of a {n}-token prompt, prefix recomputed vs reused")
    for share, full, cached, x, same in zip(
        *(
            pc.column(c)
            for c in ("shared_share", "ttft_full_s", "ttft_cached_s", "speedup", "same_first_token")
        )
    ):
        print(
            f"   {share:4.0%} cached: {full * 1e3:6.1f} ms → {cached * 1e3:6.1f} ms "
            f"(×{x:.1f}); same first token: {bool(same)}"
        )

    tok = lm.tokenizer
    prompts = [chat_ids(tok, SYSTEM, q) for q in QUESTIONS[:4]]
    sharing = serve.measure_prefix_sharing(lm.model, prompts, page_size=16)
    print("\n4. the continuous-batching engine in this process, 4 requests one after another")
    print(f"   {sharing.text()}")

    if args.server and not args.quick:
        ttft = server_arm(args.server_repeats)
        a, b = statistics.median(ttft["shared"]), statistics.median(ttft["different"])
        print(
            "\n5. transformers serve --continuous-batching over HTTP (127.0.0.1), "
            f"{args.server_repeats} requests per arm, interleaved"
        )
        print(
            f"   TTFT, system prompt shared: {a * 1e3:.0f} ms (runs: "
            f"{', '.join(f'{t * 1e3:.0f}' for t in ttft['shared'])})"
        )
        print(
            f"   TTFT, system prompt differs: {b * 1e3:.0f} ms (runs: "
            f"{', '.join(f'{t * 1e3:.0f}' for t in ttft['different'])}); ×{b / a:.1f}"
        )
    print(
        f"\ntook {time.perf_counter() - start:.0f} s; load average at the end "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
