"""Command line: `python -m viz record "prompt" -o trace.json`, `python -m viz fetch-model`,
`python -m viz report trace.json -o report.html`.

Each command is a function taking parsed arguments; `COMMANDS` registers them. A ValueError
(bad input) prints one line naming the fix and exits with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Optional


def _record(args: argparse.Namespace) -> int:
    import viz

    lm = viz.load_model(args.model, device=args.device, dtype=args.dtype)
    trace = viz.record(lm, args.prompt, max_new_tokens=args.max_new_tokens, chat=args.chat,
                       temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                       seed=args.seed, log_top=args.log_top, use_cache=not args.no_cache,
                       label=args.label)
    return print_and_save(trace.summary(), trace, args.output)


def print_and_save(text: str, result, output: Optional[str]) -> int:
    """Print a result's summary, then save it (a Trace, Sweep or Roofline) if asked to."""
    print(text)
    if output:
        path = result.save(output)
        print(f"saved      {path} ({path.stat().st_size:,} bytes)")
    return 0


def _add_record(sub) -> None:
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
    p.add_argument("--model", default=None, help="hub id, folder or .gguf (default: SmolLM2)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    p.add_argument("--dtype", default=None, help="float32, bfloat16 or float16")
    p.add_argument("--label", default="", help="a name for this trace, e.g. 'laptop CPU'")
    p.add_argument("-o", "--output", default=None, help="where to save the trace (JSON)")
    p.set_defaults(func=_record)


def _fetch(args: argparse.Namespace) -> int:
    from viz.default_model import fetch_default_model

    print(f"default model ready in {fetch_default_model()}")
    return 0


def _add_fetch(sub) -> None:
    p = sub.add_parser("fetch-model", help="download, check and cache the default model")
    p.set_defaults(func=_fetch)


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from viz.trace import Trace
    from viz.views.report import write_report

    trace = Trace.load(args.trace)
    other = Trace.load(args.compare) if args.compare else None
    path = write_report(trace, args.output or Path(args.trace).with_suffix(".html"), other)
    print(f"wrote      {path} ({path.stat().st_size:,} bytes; opens offline in any browser)")
    return 0


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="write every view of a trace into one offline HTML file")
    p.add_argument("trace", help="a trace saved by `record -o` (JSON)")
    p.add_argument("-o", "--output", default=None,
                   help="where to write the HTML (default: the trace's name with .html)")
    p.add_argument("--compare", default=None, help="a second trace to show beside the first")
    p.set_defaults(func=_report)


# Each entry adds one sub-command to the parser.
COMMANDS: list[Callable] = [_add_record, _add_fetch, _add_report]

# The performance lab's commands: `sweep` and `roofline` (see viz/perf/cli.py).
from viz.perf.cli import PERF_COMMANDS  # noqa: E402

COMMANDS += PERF_COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m viz",
                                     description="Record and view a language model's inference.")
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
