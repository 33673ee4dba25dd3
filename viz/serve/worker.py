"""The embedded server's own process: `transformers serve`, tied to the process that started it.

    python -m viz.serve.worker --parent-pid PID [--record DIR] --serve -- <transformers serve args>
    python -m viz.serve.worker --parent-pid PID --module llama_cpp.server -- <its args>
    python -m viz.serve.worker --parent-pid PID --script FILE -- <its args>     (tests)

`viz.serve.EmbeddedServer` starts this, never you. It

1. watches its parent: a thread checks every quarter second that the parent is still the
   process that started it (once a parent dies, its children are handed to another process);
   when it is not — the notebook kernel was restarted or killed, the script crashed — it kills
   its whole process group at once. No server outlives the kernel that started it. (The
   parent also stops the server itself on every normal path: the `with` block, an exception,
   Ctrl-C, interpreter exit.) A watchdog thread is used instead of PR_SET_PDEATHSIG because
   that signal fires when the *thread* that started the child ends, which in a notebook or a
   thread pool can be long before the process does.
2. with `--record DIR`, installs `viz.serve.scheduler`'s probes (request timestamps and
   scheduler steps as JSON lines in DIR) — version-checked first;
3. runs transformers' own command line (`transformers serve ...`) in this process: the same
   code and the same server as the `transformers serve` command.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import threading
import time
from typing import Optional

WATCH_EVERY_S = 0.25


def watch_parent(parent_pid: int, every_s: float = WATCH_EVERY_S) -> threading.Thread:
    """Kill this process group as soon as `parent_pid` is no longer our parent."""

    def loop() -> None:
        while True:
            if os.getppid() != parent_pid:
                try:
                    sys.stderr.write(f"viz worker: parent {parent_pid} is gone; stopping\n")
                    sys.stderr.flush()
                    os.killpg(os.getpgid(0), signal.SIGKILL)
                finally:
                    os._exit(1)
            time.sleep(every_s)

    thread = threading.Thread(target=loop, name="viz-parent-watchdog", daemon=True)
    thread.start()
    return thread


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m viz.serve.worker", description=__doc__.split("\n")[0]
    )
    p.add_argument("--parent-pid", type=int, required=True)
    p.add_argument("--record", default=None, help="folder for the probes' JSON lines")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--serve", action="store_true", help="run `transformers serve`")
    what.add_argument("--script", default=None, help="run this Python file instead (tests)")
    what.add_argument(
        "--module", default=None, help="run this module as `python -m` does (llama_cpp.server)"
    )
    p.add_argument("rest", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if os.getppid() != args.parent_pid:
        print(f"viz worker: parent {args.parent_pid} already gone", file=sys.stderr)
        return 1
    watch_parent(args.parent_pid)
    if args.record:
        from viz.serve.probes import install_server_probes
        from viz.serve.scheduler import UnsupportedTransformers

        try:
            install_server_probes(args.record)
        except UnsupportedTransformers as e:
            print(f"error: {e}", file=sys.stderr, flush=True)
            return 3
    if args.script:
        sys.argv = [args.script, *rest]
        runpy.run_path(args.script, run_name="__main__")
        return 0
    if args.module:
        sys.argv = [args.module, *rest]
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        return 0
    from transformers.cli.transformers import main as transformers_main

    sys.argv = ["transformers", "serve", *rest]
    result = transformers_main()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
