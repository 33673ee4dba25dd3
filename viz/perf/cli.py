"""Command line for the performance lab (registered in `viz.cli.COMMANDS`):

    python -m viz sweep prompt --values 8 16 32 64 -o prompt_sweep.json
    python -m viz sweep batch --values 1 2 4 8 --config llama-3.2-1b --device cuda
    python -m viz roofline --batch-sizes 1 4 16 -o roofline.json
"""

from __future__ import annotations

import argparse

SWEEPS = {"prompt": "prompt_length_sweep", "context": "context_length_sweep",
          "cache": "cache_sweep", "batch": "batch_size_sweep"}


def _model(args: argparse.Namespace):
    import viz
    from viz import perf

    if args.config:
        return perf.from_config(args.config, device=args.device, dtype=args.dtype)
    return viz.load_model(args.model, device=args.device, dtype=args.dtype)


def _model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="hub id, folder or .gguf (default: SmolLM2)")
    p.add_argument("--config", default=None,
                   help="build a random-weight model from a config instead: smollm2-135m, "
                        "llama-3.2-1b, llama-3.1-8b or a JSON path")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    p.add_argument("--dtype", default=None, help="float32, bfloat16 or float16")
    p.add_argument("--label", default="", help="a name for the result, e.g. 'laptop CPU'")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("-o", "--output", default=None, help="where to save the result (JSON)")


def _sweep(args: argparse.Namespace) -> int:
    from viz import perf
    from viz.cli import print_and_save

    lm = _model(args)
    kw = {"progress": not args.quiet, "label": args.label}
    if args.repeats is not None:
        kw["repeats"] = args.repeats
    if args.values:
        key = {"prompt": "lengths", "context": "contexts", "batch": "batch_sizes"}.get(args.kind)
        if key is None:
            raise ValueError("the cache sweep takes no --values: use --new-tokens")
        kw[key] = args.values
    if args.new_tokens is not None:
        if args.kind == "context":
            kw["steps"] = args.new_tokens
        elif args.kind in ("cache", "batch"):
            kw["new_tokens"] = args.new_tokens
    result = getattr(perf, SWEEPS[args.kind])(lm, **kw)
    return print_and_save(str(result), result, args.output)


def add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="measure a sweep: prompt, context, cache or batch")
    p.add_argument("kind", choices=sorted(SWEEPS), help="what to vary")
    p.add_argument("--values", type=int, nargs="+", default=None,
                   help="the settings: prompt lengths, contexts or batch sizes")
    p.add_argument("--repeats", type=int, default=None, help="runs per setting (medians)")
    p.add_argument("--new-tokens", type=int, default=None,
                   help="decode steps per run (context, cache and batch sweeps)")
    _model_arguments(p)
    p.set_defaults(func=_sweep)


def _roofline(args: argparse.Namespace) -> int:
    from viz import perf
    from viz.cli import print_and_save

    lm = _model(args)
    roof = perf.measure_roofline(lm, batch_sizes=args.batch_sizes or (),
                                 new_tokens=args.new_tokens, progress=not args.quiet,
                                 label=args.label)
    return print_and_save(str(roof), roof, args.output)


def add_roofline(sub) -> None:
    p = sub.add_parser("roofline", help="measure this device's peaks and place prefill and "
                                        "decode on its roofline")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=None,
                   help="also place batched decode steps (e.g. 1 4 16)")
    p.add_argument("--new-tokens", type=int, default=16, help="decode steps measured")
    _model_arguments(p)
    p.set_defaults(func=_roofline)


PERF_COMMANDS = [add_sweep, add_roofline]
