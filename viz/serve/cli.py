"""The serving commands of `python -m viz` (registered in viz/cli.py by `add_serve_commands`).

    python -m viz serve                                   # the embedded server, until Ctrl-C
    python -m viz serve --one-at-a-time --port 8000
    python -m viz request "What is the capital of France?" --url http://127.0.0.1:8000/v1
    python -m viz load --embedded --concurrency 4 --n-requests 16 -o run.json
    python -m viz load http://127.0.0.1:8000/v1 --rate 2 --n-requests 32 --seed 1 -o run.json
    python -m viz load http://gpu-box:8000/v1 --allow-remote --concurrency 64 -o vllm.json

A bad argument, an unreachable server or a failed request prints one line naming the fix and
exits with status 2 (viz/cli.py's rule for every ValueError).
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def _server_arguments(p: argparse.ArgumentParser) -> None:
    from viz.serve.server import MAX_BATCH_TOKENS, NUM_PAGES, PAGE_SIZE

    p.add_argument("--one-at-a-time", action="store_true",
                   help="serve requests one at a time (default: continuous batching)")
    p.add_argument("--model", default=None, help="a local model folder (default: SmolLM2)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N, mps or auto")
    p.add_argument("--dtype", default="float32", help="float32 (default), bfloat16, float16, auto")
    p.add_argument("--page-size", type=int, default=PAGE_SIZE, help="tokens per KV page")
    p.add_argument("--num-pages", type=int, default=NUM_PAGES, help="pages in the KV cache")
    p.add_argument("--max-batch-tokens", type=int, default=MAX_BATCH_TOKENS,
                   help="token budget of one step")
    p.add_argument("--record", action="store_true",
                   help="record server-side timestamps and scheduler steps (load runs keep them)")


def _start(args: argparse.Namespace, port: Any = None):
    from viz.serve.server import EmbeddedServer

    return EmbeddedServer(args.model, continuous_batching=not args.one_at_a_time,
                          device=args.device, dtype=args.dtype, page_size=args.page_size,
                          num_pages=args.num_pages, max_batch_tokens=args.max_batch_tokens,
                          port=port, record=args.record).start()


# ---- serve ----------------------------------------------------------------------------------
def _serve(args: argparse.Namespace) -> int:
    server = _start(args, args.port)
    try:
        print(f"serving    {server!r}")
        print(f"url        {server.url}   (OpenAI-compatible; log: {server.log_path})")
        print(f"try        python -m viz request \"Hello!\" --url {server.url}")
        print(f"           python -m viz load {server.url} --concurrency 4 -o run.json")
        print("stop       Ctrl-C", flush=True)
        while server.alive:
            time.sleep(0.5)
        print(f"the server exited (code {server.returncode}); its log: {server.log_path}")
        return 1
    except KeyboardInterrupt:
        print("stopping")
        return 0
    finally:
        server.stop()


def add_serve(sub) -> None:
    p = sub.add_parser("serve", help="run transformers serve on the default model, offline")
    _server_arguments(p)
    p.add_argument("--port", type=int, default=None, help="default: a free port")
    p.set_defaults(func=_serve)


# ---- request ------------------------------------------------------------------------------------
def _target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-id", default=None,
                   help="the model id the server knows (default: the first it lists)")
    p.add_argument("--completions", action="store_true",
                   help="use /v1/completions (raw prompt) instead of /v1/chat/completions")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a server on another machine (default: this machine only)")
    p.add_argument("--api-key", default=None, help="for servers that require one")
    p.add_argument("--stall-timeout", type=float, default=60.0,
                   help="give up a stream after this many seconds without data")
    p.add_argument("--request-timeout", type=float, default=300.0,
                   help="give up a request after this many seconds in all")
    p.add_argument("--label", default="", help="a name for the result")
    p.add_argument("-o", "--output", default=None, help="where to save the result (JSON)")


def _timeouts(args: argparse.Namespace):
    from viz.serve.client import Timeouts

    return Timeouts(stall_s=args.stall_timeout, request_s=args.request_timeout)


def _save(result, output) -> None:
    if output:
        path = result.save(output)
        print(f"saved      {path} ({path.stat().st_size:,} bytes)")


def _request(args: argparse.Namespace) -> int:
    from viz.serve.client import record_request

    if (args.url is None) == (not args.embedded):
        raise ValueError("give the server's --url, or --embedded to start one for this request")
    server = _start(args) if args.embedded else None
    try:
        rec = record_request(server or args.url, args.prompt, model=args.model_id,
                             endpoint="completions" if args.completions else "chat",
                             max_tokens=args.max_tokens, allow_remote=args.allow_remote,
                             api_key=args.api_key, timeouts=_timeouts(args), label=args.label,
                             raise_on_error=False)
    finally:
        if server is not None:
            server.stop()
    print(rec.summary())
    _save(rec, args.output)
    return 0 if rec.ok else 2


def add_request(sub) -> None:
    p = sub.add_parser("request", help="send one streaming request and time every token")
    p.add_argument("prompt", help="the message (or, with --completions, the raw prompt)")
    p.add_argument("--url", default=None,
                   help="the server's API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--embedded", action="store_true", help="start the embedded server for it")
    p.add_argument("--max-tokens", type=int, default=64)
    _target_arguments(p)
    _server_arguments(p)
    p.set_defaults(func=_request)


# ---- load ----------------------------------------------------------------------------------------
def _load(args: argparse.Namespace) -> int:
    from viz.serve.loadgen import run_load
    from viz.serve.metrics import SLO

    if (args.url is None) == (not args.embedded):
        raise ValueError("give the server's URL, or --embedded to start one for this run")
    slo = SLO(ttft_s=args.slo_ttft, tpot_s=args.slo_tpot)
    server = _start(args) if args.embedded else None
    try:
        run = run_load(server or args.url, concurrency=args.concurrency, rate=args.rate,
                       max_concurrency=args.max_concurrency, n_requests=args.n_requests,
                       max_duration_s=args.max_duration, max_tokens=args.max_tokens,
                       seed=args.seed, model=args.model_id,
                       endpoint="completions" if args.completions else "chat",
                       timeouts=_timeouts(args), slo=slo, allow_remote=args.allow_remote,
                       api_key=args.api_key, progress=not args.quiet, label=args.label,
                       out=args.output)
    finally:
        if server is not None:
            server.stop()
    print(run)
    if args.output:
        print(f"saved      {args.output}")
    return 0


def add_load(sub) -> None:
    p = sub.add_parser("load", help="load a server with many requests and record each one")
    p.add_argument("url", nargs="?", default=None,
                   help="the server's API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--embedded", action="store_true", help="start the embedded server for it")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--concurrency", type=int, default=None, help="streams kept busy")
    how.add_argument("--rate", type=float, default=None,
                     help="requests per second, Poisson arrivals (seeded)")
    p.add_argument("--max-concurrency", type=int, default=None, help="cap for --rate")
    p.add_argument("--n-requests", type=int, default=16)
    p.add_argument("--max-duration", type=float, default=300.0,
                   help="stop sending and cancel what streams after this many seconds")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="one answer limit for all prompts (default: each prompt's own)")
    p.add_argument("--seed", type=int, default=0, help="prompt order and arrival times")
    p.add_argument("--slo-ttft", type=float, default=1.0, help="goodput's TTFT limit (s)")
    p.add_argument("--slo-tpot", type=float, default=0.150, help="goodput's TPOT limit (s)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _target_arguments(p)
    _server_arguments(p)
    p.set_defaults(func=_load)


def add_serve_commands(sub) -> None:
    """Add `serve`, `request` and `load` to `python -m viz`'s sub-commands."""
    add_serve(sub)
    add_request(sub)
    add_load(sub)
