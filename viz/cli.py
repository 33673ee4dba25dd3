"""Command line: every `python -m viz` command, in this one module.

    python -m viz record "The capital of France is" -o trace.json
    python -m viz lens --record "What is the capital of France?" --chat -o trace.json
    python -m viz lens trace.json --exit-layer 24 --draft-tokens 2
    python -m viz report trace.json -o report.html
    python -m viz fetch-model
    python -m viz doctor                                  # check this machine: OK/WARN/FAIL + fix
    python -m viz sweep prompt --values 8 16 32 64 -o prompt_sweep.json
    python -m viz sweep batch --values 1 2 4 8 --config llama-3.2-1b --device cuda
    python -m viz roofline --batch-sizes 1 4 16 -o roofline.json
    python -m viz peaks                                   # this machine's peaks (--refresh)
    python -m viz serve                                   # the embedded server, until Ctrl-C
    python -m viz serve --one-at-a-time --port 8000
    python -m viz request "What is the capital of France?" --url http://127.0.0.1:8000/v1
    python -m viz load --embedded --concurrency 4 --n-requests 16 -o run.json
    python -m viz load --embedded --concurrency 8 --prompt-tokens 64 --output-tokens 32
    python -m viz load http://127.0.0.1:8000/v1 --rate 2 --n-requests 32 --seed 1 -o run.json
    python -m viz load http://gpu-box:8000/v1 --allow-remote --concurrency 64 -o vllm.json
    python -m viz cost run.json --price-per-hour 0.10     # $ per million tokens of a run

Each command is a function taking parsed arguments; `COMMANDS` registers the functions that
add them to the parser. A ValueError (bad input) prints one line naming the fix and exits
with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable, Optional


def print_and_save(text: str, result, output: Optional[str]) -> int:
    """Print a result's summary, then save it (any viz document) if asked to."""
    print(text)
    if output:
        path = result.save(output)
        print(f"saved      {path} ({path.stat().st_size:,} bytes)")
    return 0


def _model_arguments(p: argparse.ArgumentParser, configs: bool = False) -> None:
    """--model/--device/--dtype/--threads (and --config where random weights make sense)."""
    p.add_argument("--model", default=None, help="hub id, folder or .gguf (default: SmolLM2)")
    if configs:
        p.add_argument(
            "--config",
            default=None,
            help="build a random-weight model from a config instead: a shipped name "
            "(see viz.perf.config_names()) or a JSON path",
        )
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    p.add_argument("--dtype", default=None, help="float32, bfloat16 or float16")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads for the model's kernels (default: torch's own choice)",
    )
    p.add_argument("--label", default="", help="a name for the result, e.g. 'laptop CPU'")
    p.add_argument("-o", "--output", default=None, help="where to save the result (JSON)")


def _model(args: argparse.Namespace):
    import viz
    from viz import perf

    if getattr(args, "config", None):
        return perf.from_config(args.config, device=args.device, dtype=args.dtype)
    return viz.load_model(args.model, device=args.device, dtype=args.dtype)


# ---- record -------------------------------------------------------------------------------
def _record(args: argparse.Namespace) -> int:
    import viz
    from viz import checks

    # before the model loads (seconds): an empty prompt is refused at once
    checks.prompt(
        args.prompt,
        "give the model some text to continue, e.g. "
        "python -m viz record 'The capital of France is'",
    )
    lm = _model(args)
    trace = viz.record(
        lm,
        args.prompt,
        max_new_tokens=args.max_new_tokens,
        chat=args.chat,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
        log_top=args.log_top,
        use_cache=not args.no_cache,
        label=args.label,
        threads=args.threads,
    )
    return print_and_save(trace.summary(), trace, args.output)


def add_record(sub) -> None:
    p = sub.add_parser("record", help="generate a reply and record its trace")
    p.add_argument("prompt", help="the text the model continues (or answers, with --chat)")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--chat", action="store_true", help="apply the model's chat template")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-top", type=int, default=20, help="candidates kept per step")
    p.add_argument("--no-cache", action="store_true", help="run without the KV cache")
    _model_arguments(p)
    p.set_defaults(func=_record)


# ---- fetch-model --------------------------------------------------------------------------
def _fetch(args: argparse.Namespace) -> int:
    from viz.default_model import fetch_default_model

    print(f"default model ready in {fetch_default_model()}")
    return 0


def add_fetch(sub) -> None:
    p = sub.add_parser("fetch-model", help="download, check and cache the default model")
    p.set_defaults(func=_fetch)


# ---- doctor -------------------------------------------------------------------------------
def _doctor(args: argparse.Namespace) -> int:
    from viz.doctor import doctor

    return doctor(as_json=args.json)


def add_doctor(sub) -> None:
    p = sub.add_parser(
        "doctor",
        help="check this machine: CPU, memory, the model, engines, "
        "caches, versions; each line OK, WARN or FAIL with the fix",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the checks as JSON: a list of {check, status, finding, fix}",
    )
    p.set_defaults(func=_doctor)


# ---- report -------------------------------------------------------------------------------
def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from viz.serve.loadgen import LoadRun
    from viz.serve.sweep import LoadSweep
    from viz.trace import Trace
    from viz.views.load_report import write_load_report
    from viz.views.report import write_report

    docs = [_report_document(f) for f in args.files]  # a ValueError naming a bad file
    output = args.output or Path(args.files[0]).with_suffix(".html")
    traces = [d for d in docs if isinstance(d, Trace)]
    if traces and len(traces) < len(docs):
        raise ValueError(
            "a trace and load runs or sweeps cannot share one report: write one "
            "report for the trace and another for the load runs"
        )
    if traces:
        if len(traces) > 1:
            raise ValueError(
                "the trace report shows one trace, and a second with --other: give one trace file"
            )
        other = Trace.load(args.other) if args.other else None
        path = write_report(traces[0], output, other)
    else:
        if args.other:
            raise ValueError(
                "--other goes with a trace; load runs and sweeps all go side by "
                "side: list them as files"
            )
        odd = [f for f, d in zip(args.files, docs) if not isinstance(d, (LoadRun, LoadSweep))]
        if odd:
            raise ValueError(
                f"{odd[0]} holds a {type(docs[args.files.index(odd[0])]).__name__},"
                " which has no report: the report takes a trace, or load runs and "
                "rate sweeps"
            )
        path = write_load_report(docs, output)
    print(f"wrote      {path} ({path.stat().st_size:,} bytes; opens offline in any browser)")
    return 0


REPORTED = "viz trace, load run or rate sweep"
MAKE_ONE = (
    'make one with `python -m viz record "PROMPT" -o FILE`, `python -m viz load URL '
    "--concurrency 4 -o FILE` or `python -m viz load URL --sweep -o FILE`"
)


def _report_document(path: str):
    """The trace, load run or sweep in `path`; a ValueError naming the file and the fix."""
    from viz.documents import read_json
    from viz.serve.loadgen import LoadRun
    from viz.serve.sweep import LoadSweep
    from viz.trace import Trace

    data = read_json(path, REPORTED, MAKE_ONE)
    kinds = {t.KIND: t for t in (Trace, LoadRun, LoadSweep)}
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in kinds:
        raise ValueError(f"{path} is not a {REPORTED} (its kind is {kind!r}): {MAKE_ONE}")
    try:
        return kinds[kind].from_dict(data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def add_report(sub) -> None:
    p = sub.add_parser(
        "report",
        help="one offline HTML file: every view of a trace, or load "
        "runs and rate sweeps side by side",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a trace saved by `record -o`, or load runs and sweeps saved by "
        "`load -o` / `load --sweep -o` (JSON)",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="where to write the HTML (default: the first file's name with .html)",
    )
    p.add_argument("--other", default=None, help="a second trace to show beside the first")
    p.set_defaults(func=_report)


# ---- sweep --------------------------------------------------------------------------------
SWEEPS = {
    "prompt": "prompt_length_sweep",
    "context": "context_length_sweep",
    "cache": "cache_sweep",
    "batch": "batch_size_sweep",
}
SWEEP_VALUES = {"prompt": "lengths", "context": "contexts", "batch": "batch_sizes"}


def _sweep(args: argparse.Namespace) -> int:
    from viz import perf

    kw = {"progress": not args.quiet, "label": args.label, "threads": args.threads}
    if args.repeats is not None:
        kw["repeats"] = args.repeats
    if args.values:
        if args.kind not in SWEEP_VALUES:
            raise ValueError("the cache sweep takes no --values: use --max-new-tokens")
        kw[SWEEP_VALUES[args.kind]] = args.values
    if args.max_new_tokens is not None:
        if args.kind == "prompt":
            raise ValueError("the prompt sweep always generates one token: drop --max-new-tokens")
        kw["max_new_tokens"] = args.max_new_tokens
    lm = _model(args)
    result = getattr(perf, SWEEPS[args.kind])(lm, **kw)
    return print_and_save(str(result), result, args.output)


def add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="measure a sweep: prompt, context, cache or batch")
    p.add_argument("kind", choices=sorted(SWEEPS), help="what to vary")
    p.add_argument(
        "--values",
        type=int,
        nargs="+",
        default=None,
        help="the settings: prompt lengths, contexts or batch sizes",
    )
    p.add_argument("--repeats", type=int, default=None, help="runs per setting (medians)")
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="tokens generated per request (context, cache and batch sweeps)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _model_arguments(p, configs=True)
    p.set_defaults(func=_sweep)


# ---- roofline -----------------------------------------------------------------------------
def _roofline(args: argparse.Namespace) -> int:
    from viz import perf

    lm = _model(args)
    roof = perf.measure_roofline(
        lm,
        batch_sizes=args.batch_sizes or (),
        max_new_tokens=args.max_new_tokens,
        progress=not args.quiet,
        label=args.label,
        threads=args.threads,
    )
    return print_and_save(str(roof), roof, args.output)


def add_roofline(sub) -> None:
    p = sub.add_parser(
        "roofline", help="measure this device's peaks and place prefill and decode on its roofline"
    )
    p.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=None,
        help="also place batched decode steps (e.g. 1 4 16)",
    )
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=16,
        help="tokens generated (the decode steps measured are one fewer)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _model_arguments(p, configs=True)
    p.set_defaults(func=_roofline)


# ---- peaks ------------------------------------------------------------------------------------
def _peaks(args: argparse.Namespace) -> int:
    from viz import perf

    peaks = perf.machine_peaks(args.device, threads=args.threads, refresh=args.refresh)
    return print_and_save(peaks.how(), peaks, args.output)


def add_peaks(sub) -> None:
    p = sub.add_parser(
        "peaks",
        help="this machine's peaks, as every lesson uses them: measured "
        "once (a few seconds), then reused and checked",
    )
    p.add_argument("--refresh", action="store_true", help="measure again now")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda or mps")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    p.add_argument("-o", "--output", default=None, help="also save them as JSON here")
    p.set_defaults(func=_peaks)


# ---- serving: serve, request, load (viz.serve, lessons 09 and 10) --------------------------------------
def _server_arguments(p: argparse.ArgumentParser) -> None:
    from viz.serve.server import MAX_BATCH_TOKENS, NUM_PAGES, PAGE_SIZE

    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="transformers",
        help="transformers (`transformers serve`, default) or llama.cpp (its "
        "OpenAI server on the default model's Q4_1 GGUF file)",
    )
    p.add_argument(
        "--one-at-a-time",
        action="store_true",
        help="serve requests one at a time (default: continuous batching)",
    )
    p.add_argument("--model", default=None, help="a local model folder (default: SmolLM2)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N, mps or auto")
    p.add_argument("--dtype", default="float32", help="float32 (default), bfloat16, float16, auto")
    p.add_argument("--page-size", type=int, default=PAGE_SIZE, help="tokens per KV page")
    p.add_argument("--num-pages", type=int, default=NUM_PAGES, help="pages in the KV cache")
    p.add_argument(
        "--max-batch-tokens", type=int, default=MAX_BATCH_TOKENS, help="token budget of one step"
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="record server-side timestamps and scheduler steps (load runs keep them)",
    )


ENGINES = ("transformers", "llama.cpp")


def _start(args: argparse.Namespace, port: Any = None):
    from viz.serve.server import MAX_BATCH_TOKENS, NUM_PAGES, PAGE_SIZE, EmbeddedServer

    if args.engine == "llama.cpp":
        from viz.serve.llamacpp import LlamaCppServer

        only = {
            "--one-at-a-time": args.one_at_a_time,
            "--model": args.model is not None,
            "--device": args.device != "cpu",
            "--dtype": args.dtype != "float32",
            "--page-size": args.page_size != PAGE_SIZE,
            "--num-pages": args.num_pages != NUM_PAGES,
            "--max-batch-tokens": args.max_batch_tokens != MAX_BATCH_TOKENS,
            "--record": args.record,
        }
        given = [flag for flag, on in only.items() if on]
        if given:
            raise ValueError(
                f"{', '.join(given)} set{'s' if len(given) == 1 else ''} up "
                "`transformers serve`; llama.cpp serves the default model's Q4_1 "
                "GGUF file one request at a time: leave them out, or use "
                "--engine transformers"
            )
        return LlamaCppServer(port=port).start()

    return EmbeddedServer(
        args.model,
        continuous_batching=not args.one_at_a_time,
        device=args.device,
        dtype=args.dtype,
        page_size=args.page_size,
        num_pages=args.num_pages,
        max_batch_tokens=args.max_batch_tokens,
        port=port,
        record=args.record,
    ).start()


# ---- serve ----------------------------------------------------------------------------------
def _serve(args: argparse.Namespace) -> int:
    server = _start(args, args.port)
    try:
        print(f"serving    {server!r}")
        print(f"url        {server.url}   (OpenAI-compatible; log: {server.log_path})")
        print(f'try        python -m viz request "Hello!" --url {server.url}')
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
    p = sub.add_parser(
        "serve", help="run transformers serve (or --engine llama.cpp) on the default model, offline"
    )
    _server_arguments(p)
    p.add_argument("--port", type=int, default=None, help="default: a free port")
    p.set_defaults(func=_serve)


# ---- request ------------------------------------------------------------------------------------
def _target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-id",
        default=None,
        help="the model id the server knows (default: the first it lists)",
    )
    p.add_argument(
        "--completions",
        action="store_true",
        help="use /v1/completions (raw prompt) instead of /v1/chat/completions",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a server on another machine (default: this machine only)",
    )
    p.add_argument("--api-key", default=None, help="for servers that require one")
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=60.0,
        help="give up a stream after this many seconds without data",
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        default=300.0,
        help="give up a request after this many seconds in all",
    )
    p.add_argument("--label", default="", help="a name for the result")
    p.add_argument("-o", "--output", default=None, help="where to save the result (JSON)")


def _timeouts(args: argparse.Namespace):
    from viz.serve.client import Timeouts

    return Timeouts(stall_s=args.stall_timeout, request_s=args.request_timeout)


def _request(args: argparse.Namespace) -> int:
    from viz.serve.client import record_request

    if (args.url is None) == (not args.embedded):
        raise ValueError("give the server's --url, or --embedded to start one for this request")
    server = _start(args) if args.embedded else None
    try:
        rec = record_request(
            server or args.url,
            args.prompt,
            model=args.model_id,
            endpoint="completions" if args.completions else "chat",
            max_tokens=args.max_tokens,
            allow_remote=args.allow_remote,
            api_key=args.api_key,
            timeouts=_timeouts(args),
            label=args.label,
            raise_on_error=False,
        )
    finally:
        if server is not None:
            server.stop()
    print_and_save(rec.summary(), rec, args.output)
    return 0 if rec.ok else 2


def add_request(sub) -> None:
    p = sub.add_parser("request", help="send one streaming request and time every token")
    p.add_argument("prompt", help="the message (or, with --completions, the raw prompt)")
    p.add_argument(
        "--url", default=None, help="the server's API root, e.g. http://127.0.0.1:8000/v1"
    )
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
    if args.sweep:
        return _load_sweep(args)
    slo = SLO(
        ttft_s=1.0 if args.slo_ttft is None else args.slo_ttft,
        tpot_s=0.150 if args.slo_tpot is None else args.slo_tpot,
    )
    workload = _workload(args)
    _check_workload(args, workload)
    run = _with_server(
        args,
        lambda target: run_load(
            target,
            concurrency=args.concurrency,
            rate=args.rate,
            max_concurrency=args.max_concurrency,
            n_requests=args.n_requests,
            max_duration_s=args.max_duration,
            workload=workload,
            max_tokens=args.max_tokens if workload is None else None,
            seed=args.seed,
            slo=slo,
            **_client_options(args),
        ),
    )
    print(run)
    if args.output:
        print(f"saved      {args.output}")
    return 0


def _lengths(args: argparse.Namespace, name: str):
    """--NAME-tokens (N, or LOW..HIGH) with --NAME-tokens-stdev: a `viz.serve.Lengths`."""
    from viz.serve.workload import Lengths

    flag = f"--{name}-tokens"
    value, stdev = getattr(args, f"{name}_tokens"), getattr(args, f"{name}_tokens_stdev")
    if value is None:
        if stdev is not None:
            raise ValueError(f"{flag}-stdev goes with {flag} (its mean)")
        return None
    lengths = Lengths.of(value, flag)
    if stdev is None:
        return lengths
    if lengths.kind != "fixed":
        raise ValueError(
            f"{flag}-stdev makes a normal distribution around one length: give "
            f"{flag} N, not a range"
        )
    return Lengths.normal(lengths.mean, stdev)


def _workload(args: argparse.Namespace):
    """The workload the `load` flags describe, or None for the shipped prompts (with
    --max-tokens as their cap)."""
    from viz.serve.workload import Workload

    prompt, output = _lengths(args, "prompt"), _lengths(args, "output")
    exact = not args.early_stop
    tokenizer = args.tokenizer or (args.model if args.embedded else None)
    if args.max_tokens is not None and (prompt or output or args.data):
        raise ValueError(
            "--max-tokens caps the shipped prompts' answers; with --prompt-tokens "
            "or --data give the answer length as --output-tokens"
        )
    if args.data:
        if prompt is not None or args.turns != 1:
            raise ValueError(
                "--data sends the file's prompts: leave out --prompt-tokens and --turns"
            )
        return Workload.from_file(
            args.data, output, exact_output=exact and output is not None, tokenizer=tokenizer
        )
    if prompt is None:
        if output is not None or args.turns != 1 or args.tokenizer:
            raise ValueError(
                "--output-tokens, --turns and --tokenizer go with --prompt-tokens "
                "(a synthetic workload) or --data (a JSONL file)"
            )
        return None
    if output is None:
        raise ValueError(
            "a synthetic workload needs its answer length too: add "
            "--output-tokens N (e.g. --prompt-tokens 64 --output-tokens 32)"
        )
    if args.turns != 1:
        return Workload.chat(args.turns, prompt, output, exact_output=exact, tokenizer=tokenizer)
    return Workload.synthetic(prompt, output, exact_output=exact, tokenizer=tokenizer)


def _check_workload(args: argparse.Namespace, workload) -> None:
    """Build the workload's requests once before an embedded server starts: a length beyond
    the context or the KV pool is refused without waiting for the server."""
    if workload is None or not args.embedded:
        return
    pool = (
        None
        if args.one_at_a_time or args.engine != "transformers"
        else args.page_size * args.num_pages
    )
    n = args.n_requests * (workload.turns if args.sweep else 1)
    workload.build(n, args.seed, "completions" if args.completions else "chat", kv_tokens=pool)


def _client_options(args: argparse.Namespace) -> dict[str, Any]:
    """What `load` passes to every run, whether one run or a sweep."""
    return dict(
        model=args.model_id,
        endpoint="completions" if args.completions else "chat",
        timeouts=_timeouts(args),
        allow_remote=args.allow_remote,
        api_key=args.api_key,
        progress=not args.quiet,
        label=args.label,
        out=args.output,
    )


def _with_server(args: argparse.Namespace, call: Callable[[Any], Any]) -> Any:
    """`call(target)` against the URL, or against an embedded server started for it and
    stopped after, whatever happens."""
    server = _start(args) if args.embedded else None
    try:
        return call(server or args.url)
    finally:
        if server is not None:
            server.stop()


def _load_sweep(args: argparse.Namespace) -> int:
    from viz.serve.metrics import SLO
    from viz.serve.sweep import sweep_rates

    if args.max_concurrency is not None:
        raise ValueError("--max-concurrency caps a --rate run; a --sweep sets each load itself")
    if (args.slo_ttft is None) != (args.slo_tpot is None):
        raise ValueError(
            "give both --slo-ttft and --slo-tpot, or neither (a sweep then derives "
            "its objective from the one-at-a-time load)"
        )
    slo = SLO(ttft_s=args.slo_ttft, tpot_s=args.slo_tpot) if args.slo_ttft is not None else None
    workload = _workload(args)
    _check_workload(args, workload)
    sweep = _with_server(
        args,
        lambda target: sweep_rates(
            target,
            n_requests=args.n_requests,
            n_rates=args.rates,
            repeats=args.repeats,
            workload=workload,
            max_tokens=args.max_tokens if workload is None else None,
            seed=args.seed,
            slo=slo,
            slo_factor=args.slo_factor,
            max_duration_s=args.max_duration,
            budget_s=args.budget,
            **_client_options(args),
        ),
    )
    print(sweep)
    if args.output:
        print(f"saved      {args.output}   (python -m viz report {args.output})")
    return 0


def add_load(sub) -> None:
    p = sub.add_parser(
        "load",
        help="load a server with many requests and record each one",
        description="Load a server with many requests and record each one. State the workload "
        "as engineers do: --prompt-tokens 64 --output-tokens 32 --concurrency 4 "
        "(synthetic prompts of exactly 64 tokens, cut from real text with the "
        "model's tokenizer; answers of 32 tokens), or --data prompts.jsonl (one "
        'request a line: {"prompt": ...} or {"messages": [...]}, optional '
        '"output_tokens"), or --turns 3 for chats that re-send their history. '
        "Without them: the shipped set of eight prompts.",
        epilog="examples: python -m viz load --embedded --concurrency 8 --prompt-tokens 64 "
        "--output-tokens 32 --n-requests 16 -o run.json | python -m viz load URL --rate "
        "2 --prompt-tokens 32..256 --output-tokens 64 --output-tokens-stdev 16 | python "
        "-m viz load URL --concurrency 4 --data prompts.jsonl --output-tokens 64",
    )
    p.add_argument(
        "url", nargs="?", default=None, help="the server's API root, e.g. http://127.0.0.1:8000/v1"
    )
    p.add_argument("--embedded", action="store_true", help="start the embedded server for it")
    _load_pacing_arguments(p)
    _load_workload_arguments(p)
    p.add_argument(
        "--seed", type=int, default=0, help="prompt order, prompt and answer lengths, arrival times"
    )
    p.add_argument(
        "--slo-ttft",
        type=float,
        default=None,
        help="goodput's TTFT limit (s; default 1, or derived by --sweep)",
    )
    p.add_argument(
        "--slo-tpot",
        type=float,
        default=None,
        help="goodput's TPOT limit (s; default 0.150, or derived by --sweep)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _target_arguments(p)
    _server_arguments(p)
    p.set_defaults(func=_load)


def _load_pacing_arguments(p: argparse.ArgumentParser) -> None:
    """`viz load`: how requests are sent (concurrency, rate or a rate sweep), how many, and
    for how long."""
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--concurrency", type=int, default=None, help="streams kept busy")
    how.add_argument(
        "--rate", type=float, default=None, help="requests per second, Poisson arrivals (seeded)"
    )
    how.add_argument(
        "--sweep",
        action="store_true",
        help="a rate sweep: one at a time, all at once, then --rates Poisson rates "
        "between, stopped where the server saturates (viz.serve.sweep_rates)",
    )
    p.add_argument("--rates", type=int, default=3, help="--sweep: Poisson rates between")
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="--sweep: runs per load (medians with confidence intervals)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=900.0,
        help="--sweep: no new run starts after this many seconds",
    )
    p.add_argument(
        "--slo-factor",
        type=float,
        default=2.0,
        help="--sweep without --slo-*: the objective is this × the one-at-a-time p90 TTFT and TPOT",
    )
    p.add_argument("--max-concurrency", type=int, default=None, help="cap for --rate")
    p.add_argument("--n-requests", type=int, default=16)
    p.add_argument(
        "--max-duration",
        type=float,
        default=300.0,
        help="stop sending and cancel what streams after this many seconds",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="the shipped prompts: one answer limit for all (default: each its own)",
    )


def _load_workload_arguments(p: argparse.ArgumentParser) -> None:
    """`viz load`: what each request holds (viz.serve.Workload)."""
    w = p.add_argument_group("workload (viz.serve.Workload)")
    w.add_argument(
        "--prompt-tokens",
        default=None,
        metavar="N|LOW..HIGH",
        help="synthetic prompts of exactly N tokens (the prompt's own text; the chat "
        "template adds its own), or each drawn from LOW to HIGH (uniform)",
    )
    w.add_argument(
        "--prompt-tokens-stdev",
        type=float,
        default=None,
        metavar="S",
        help="draw each prompt's length from a normal distribution around "
        "--prompt-tokens (clipped to mean ± 3 S, at least 1; seeded)",
    )
    w.add_argument(
        "--output-tokens",
        default=None,
        metavar="N|LOW..HIGH",
        help="each answer's length in tokens, sent as max_tokens (plus min_tokens "
        "/ ignore_eos where the engine accepts them)",
    )
    w.add_argument(
        "--output-tokens-stdev",
        type=float,
        default=None,
        metavar="S",
        help="draw each answer's length from a normal distribution",
    )
    w.add_argument(
        "--data",
        default=None,
        metavar="FILE.jsonl",
        help="send the prompts of a JSONL file instead (one request a line)",
    )
    w.add_argument(
        "--turns",
        type=int,
        default=1,
        help="chats of this many turns, each re-sending the history (with "
        "--prompt-tokens per turn); concurrency and rate count chats",
    )
    w.add_argument(
        "--tokenizer",
        default=None,
        metavar="FOLDER",
        help="a local tokenizer folder to count and cut prompts (default: the "
        "server's model's own; never downloaded)",
    )
    w.add_argument(
        "--early-stop",
        action="store_true",
        help="let answers end at the model's end of text: send max_tokens only, "
        "never min_tokens / ignore_eos",
    )


# ---- cost ----------------------------------------------------------------------------------------
PRICED = "load run, rate sweep, batch-size sweep or GPU busy sweep"


MAKE_PRICED = (
    "`python -m viz load URL --concurrency 4 -o FILE`, `python -m viz sweep batch -o FILE`"
)


def _cost_file(path: str, what: str, make: str):
    """The viz document in `path`; a ValueError naming the file and the fix."""
    from pathlib import Path

    from viz.documents import load_document

    if not Path(path).is_file():
        raise ValueError(f"no file at {path}: check the path, or save a {what} first ({make})")
    return load_document(path)


def _cost(args: argparse.Namespace) -> int:
    from viz import perf, serve
    from viz.perf.cost import check_price

    check_price(args.price_per_hour)  # a bad price is refused before any file is read
    measured = _cost_file(args.file, PRICED, MAKE_PRICED)
    kind = measured.name if isinstance(measured, perf.Sweep) else None
    if kind == "prompt_length":
        raise ValueError(
            f"{args.file} is a prompt-length sweep: it times prefill only, so it has"
            " no output tokens to price; give it as --prefill beside a load run or "
            "a batch-size sweep"
        )
    if not isinstance(measured, (serve.LoadRun, serve.LoadSweep)) and kind not in (
        "batch_size",
        "device_busy",
    ):
        raise ValueError(
            f"{args.file} holds a {f'{kind} sweep' if kind else measured.WHAT}, "
            f"which has no throughput to price: give a {PRICED} ({MAKE_PRICED})"
        )
    prefill = (
        _cost_file(args.prefill, "prompt-length sweep", "`python -m viz sweep prompt -o FILE`")
        if args.prefill
        else None
    )
    prefix = (
        _cost_file(args.prefix, "prefix-cache sweep", "viz.perf.prefix_cache_sweep(lm).save(FILE)")
        if args.prefix
        else None
    )
    print(
        perf.cost(measured, args.price_per_hour, prefill=prefill, prefix=prefix, clock=args.clock)
    )
    return 0


def add_cost(sub) -> None:
    p = sub.add_parser(
        "cost",
        help="$ per million output and input tokens of a saved load run, "
        "rate sweep or batch sweep, at your price per hour",
    )
    p.add_argument("file", metavar="FILE", help=f"a {PRICED} saved as JSON")
    p.add_argument(
        "--price-per-hour",
        type=float,
        required=True,
        help="US dollars per hour of the machine, e.g. 0.10 for a 2-vCPU cloud VM or "
        "3.50 for one H200 (examples, not quotes: type your provider's price)",
    )
    p.add_argument(
        "--prefill",
        default=None,
        metavar="FILE",
        help="a prompt-length sweep of the same machine: price input tokens from its "
        "longest prompt (where FILE does not time its prefill apart)",
    )
    p.add_argument(
        "--prefix",
        default=None,
        metavar="FILE",
        help="a prefix-cache sweep: also price input tokens already cached",
    )
    p.add_argument(
        "--clock",
        choices=("busy", "wall"),
        default="busy",
        help="a GPU busy sweep: its GPU's own time (busy, default) or wall time",
    )
    p.set_defaults(func=_cost)


# Each entry adds one sub-command to the parser.
# ---- lens ---------------------------------------------------------------------------------
def _lens(args: argparse.Namespace) -> int:
    import viz
    from viz.lens import check_lens, lens_table
    from viz.perf.early_exit import check_early_exit, lens_drafts
    from viz.trace import Trace

    if bool(args.file) == bool(args.record):
        raise ValueError(
            "give a trace file recorded with the lens (python -m viz lens "
            'trace.json), or --record "PROMPT" to record one now, not both'
        )
    if args.record:
        trace = viz.record(
            _model(args),
            args.record,
            max_new_tokens=args.max_new_tokens,
            chat=args.chat,
            lens=True,
            lens_top=args.top,
            label=args.label,
            threads=args.threads,
        )
    else:
        trace = Trace.load(args.file)  # a ValueError naming the file and the fix
    lens = check_lens(trace)
    for layer in args.exit_layer or []:
        check_early_exit(lens.n_layers, layer, args.draft_tokens)
    print(lens_table(trace, args.layers))
    if trace.settings.temperature == 0 and len(trace.steps) > 1:
        exits = args.exit_layer or [
            layer
            for layer in sorted({round(lens.n_layers * f) for f in (0.5, 0.7, 0.8, 0.9)})
            if 1 <= layer < lens.n_layers
        ]
        print(
            f"early exit read from the lens (k = {args.draft_tokens} drafts from the first L "
            f"layers per full pass; viz.perf.lens_drafts):"
        )
        for layer in exits:
            d = lens_drafts(trace, layer, args.draft_tokens)
            print(
                f"  L={layer:<3} {d.tokens_per_pass:.2f} tokens per full pass, "
                f"{d.acceptance_rate:.0%} of drafts accepted, {len(d.made)} full decode passes"
            )
    if args.record and args.output:
        path = trace.save(args.output)
        print(f"saved      {path} ({path.stat().st_size:,} bytes)")
    return 0


def add_lens(sub) -> None:
    p = sub.add_parser(
        "lens",
        help="the logit lens of a trace: each layer's guess of every "
        "token, where the answer settles, early-exit drafts from it",
    )
    p.add_argument(
        "file",
        nargs="?",
        default=None,
        help="a trace recorded with the lens (viz.record(..., lens=True) or --record)",
    )
    p.add_argument(
        "--record",
        metavar="PROMPT",
        default=None,
        help="record a trace with the lens first (greedy), then show it",
    )
    p.add_argument("--chat", action="store_true", help="--record: apply the chat template")
    p.add_argument("--max-new-tokens", type=int, default=24, help="--record: reply length")
    p.add_argument("--top", type=int, default=5, help="--record: candidates kept per layer")
    p.add_argument(
        "--layers",
        type=int,
        nargs="+",
        default=None,
        help="layers shown per step (default: five evenly spaced, the last included)",
    )
    p.add_argument(
        "--exit-layer",
        type=int,
        nargs="+",
        default=None,
        help="exit layers L to read early-exit drafts for (1 to layers - 1)",
    )
    p.add_argument("--draft-tokens", type=int, default=4, help="k: drafts per full pass")
    _model_arguments(p)
    p.set_defaults(func=_lens)


COMMANDS: list[Callable] = [
    add_record,
    add_fetch,
    add_doctor,
    add_report,
    add_sweep,
    add_roofline,
    add_peaks,
    add_serve,
    add_request,
    add_load,
    add_cost,
    add_lens,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m viz", description="Record and view a language model's inference."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
