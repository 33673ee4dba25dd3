"""llama.cpp in a child process: a native crash there is an exception here, never the end of this
process (the learner's Jupyter kernel, pytest).

llama.cpp is C++: when its build uses an instruction this CPU lacks (an AMX kernel on a cloud
VM died with SIGILL) or it reads past its memory, the *process* dies, with no Python exception
to catch. So `viz.perf.formats` never calls it in its own process. `call(task, args)` runs

    python -P viz/perf/engine_child.py     request as JSON on stdin, result as JSON on stdout

and waits at most `timeout_s`. This file is both ends: the parent's side (`call`,
`EngineCrash`) imports only the standard library; the child's side (`main` and its tasks,
below) imports numpy and llama_cpp, never viz (importing viz would import torch: ~1 s a child,
against ~0.15 s for numpy and llama_cpp). `-P` keeps this folder off the child's import path,
so its files (`profile.py`, `table.py`, ...) cannot shadow a library's modules.

When the child dies by a signal, exits non-zero or runs past its timeout, `call` raises
`EngineCrash`, whose message names the signal ("SIGILL (illegal instruction)"), the engine
("llama.cpp (llama-cpp-python 0.3.36)"), what it was doing, the fix (`make engines`), and the
last lines the child wrote to stderr. Only JSON crosses: paths, token ids, step seconds.

Tasks (each the work one in-process call did before, timings taken inside the child):
- `quantize`: `llama_model_quantize` writes one GGUF file in another format (`formats.gguf_file`);
- `greedy`: load a GGUF file and time greedy decode steps, one `eval` each (`formats.llama_greedy`);
- `check`: the engine's version and system-info banner, and a few greedy tokens of a GGUF file
  (`python -m viz doctor`, `python -m tools.engines check`); `uses_amx` and `switched_on` read
  the banner here.

Test hook: the environment variable `VIZ_ENGINE_CHILD_FAULT` (FAULT_ENV) makes the child fail
on purpose before it loads llama.cpp, so tests can check what a crash looks like here:
"SIGILL" (any signal's name: it kills itself with it), "3" (exits with that code) or "hang"
(sleeps past any timeout); "SIGILL@F16" does so only in a child whose request's JSON contains
"F16". Lesson 12 uses this module through `viz.perf.measure_formats`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from typing import Any, Optional

TIMEOUT_S = 600.0  # the longest one child may run (a few seconds is usual; a slow machine more)
FAULT_ENV = "VIZ_ENGINE_CHILD_FAULT"  # the test hook (module docstring)
STDERR_LINES = 8  # how many of the child's last stderr lines a crash's message quotes
FIX = (
    "rebuild it for this CPU with `make engines` (tools/engines.py builds llama.cpp without "
    "-march=native and without AMX)"
)
# what each likely signal means for llama.cpp, and what to do
ADVICE = {
    "SIGILL": f"Most likely its build uses an instruction this CPU does not have: {FIX}.",
    "SIGKILL": "Most likely the system ran out of memory and its out-of-memory killer "
    "stopped it: free memory (close other notebooks or programs) and try "
    f"again. If memory was not short, {FIX}.",
    "SIGSEGV": f"Its native code read memory it must not: {FIX}.",
    "SIGBUS": f"Its native code read memory it must not (or a file it maps was cut short): {FIX}.",
    "SIGABRT": f"Its native code stopped itself on a failed check: {FIX}.",
}


class EngineCrash(RuntimeError):
    """llama.cpp's child process died by a signal, exited non-zero or ran past its timeout.

    Its message is `summary` (one sentence: what died, of what, doing what), `advice` (the
    likely cause and the fix) and `stderr_tail` (the child's last lines on stderr, if any);
    `signal_name` ("SIGILL"), `returncode` and `timed_out` say which of the three it was."""

    def __init__(
        self,
        summary: str,
        advice: str,
        stderr: str = "",
        *,
        signal_name: str = "",
        returncode: Optional[int] = None,
        timed_out: bool = False,
    ):
        lines = [line for line in (stderr or "").splitlines() if line.strip()]
        self.stderr_tail = "\n".join(lines[-STDERR_LINES:])
        tail = self.stderr_tail.replace("\n", "\n    ")
        super().__init__(
            f"{summary} {advice}" + (f" Its last lines on stderr:\n    {tail}" if tail else "")
        )
        self.summary, self.advice, self.signal_name = summary, advice, signal_name
        self.returncode, self.timed_out = returncode, timed_out


def engine_name() -> str:
    """ "llama.cpp (llama-cpp-python X.Y.Z)", read from the installed package's metadata
    (without importing it, so without loading llama.cpp into this process)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"llama.cpp (llama-cpp-python {version('llama-cpp-python')})"
    except PackageNotFoundError:
        return "llama.cpp (llama-cpp-python, not installed)"


def crash_from(returncode: int, stderr: str, doing: str) -> EngineCrash:
    """The EngineCrash for a child that ended with `returncode` (negative: killed by that
    signal, as subprocess reports it) while `doing` ("decoding x.F16.gguf")."""
    engine = engine_name()
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            name, words = sig.name, (signal.strsignal(sig) or sig.name).lower()
        except ValueError:
            name, words = f"signal {-returncode}", "unknown signal"
        return EngineCrash(
            f"{engine} died of {name} ({words}) while {doing}.",
            ADVICE.get(name, f"A crash in its native code: {FIX}."),
            stderr,
            signal_name=name,
            returncode=returncode,
        )
    # a Python error in the child ends its traceback with "ValueError: Model path does not exist"
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    said = f": {lines[-1].rstrip('.')}" if lines else ""
    return EngineCrash(
        f"{engine} exited with code {returncode} while {doing}{said}.",
        f"Unless its last lines name a mistake in the call (a file, an argument), {FIX}.",
        stderr,
        returncode=returncode,
    )


def call(
    task: str, args: dict[str, Any], *, doing: str, timeout_s: float = TIMEOUT_S
) -> dict[str, Any]:
    """Run `task` (one of TASKS) with JSON-able `args` in a fresh child process and return its
    JSON result. `doing` says what it does, for the messages ("decoding x.F16.gguf").
    Raises EngineCrash when the child dies by a signal, exits non-zero or outlives
    `timeout_s` (then it is killed)."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
    request = json.dumps({"task": task, "args": args})
    try:
        done = subprocess.run(
            [sys.executable, "-P", os.path.abspath(__file__)],
            input=request,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
        raise EngineCrash(
            f"{engine_name()} ran past its timeout (timeout_s={timeout_s:g} s) while {doing}.",
            f"Its child process was stopped. A slow or busy machine can need longer: pass a "
            f"larger timeout_s; if it hangs again, {FIX}.",
            stderr or "",
            timed_out=True,
        ) from None
    if done.returncode != 0:
        raise crash_from(done.returncode, done.stderr, doing)
    return json.loads(done.stdout)


def switched_on(banner: str) -> list[str]:
    """The features a llama.cpp system-info banner has on: "CPU : SSE3 = 1 | AMX_INT8 = 0 |
    AVX2 = 1 | " → ["SSE3", "AVX2"]."""
    return [
        part.split("=")[0].split(":")[-1].strip()
        for part in banner.split("|")
        if part.strip().endswith("= 1")
    ]


def uses_amx(banner: str) -> bool:
    """Whether the banner says llama.cpp runs AMX code ("AMX_INT8 = 1"): the build that died
    with SIGILL on a cloud VM."""
    return any(name.startswith("AMX") for name in switched_on(banner))


# ---- the child's side: runs in `python -P engine_child.py`, never in the caller's process ----
def _llama_cpp():
    import logging

    import llama_cpp

    # its C library logs every tensor it loads or converts: errors only, so that a crash's
    # last stderr lines are worth quoting
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    return llama_cpp


def quantize(src: str, dst: str, ftype: str) -> dict[str, Any]:
    """llama.cpp's quantizer writes `src` in `ftype` ("F32", "F16", "Q8_0", "Q4_1") to `dst`."""
    import ctypes

    llama_cpp = _llama_cpp()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = {
        "F32": llama_cpp.LLAMA_FTYPE_ALL_F32,
        "F16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
        "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
        "Q4_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1,
    }[ftype]
    params.allow_requantize, params.nthread = True, os.cpu_count() or 1
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    if rc != 0 or not os.path.isfile(dst):
        raise RuntimeError(f"llama.cpp's quantizer failed ({rc}) writing {ftype} from {src}")
    return {"path": dst}


def greedy(
    path: str, prompt_ids: list[int], new_tokens: int, repeats: int, threads: int
) -> dict[str, Any]:
    """The prompt in one `eval`, then one token per `eval`, the next token the argmax of the last
    logits (no sampler). The tokens of the last run and every timed step of `repeats` runs,
    after one warm-up run (formats.llama_greedy)."""
    import numpy as np

    llama_cpp = _llama_cpp()
    llm = llama_cpp.Llama(
        model_path=path,
        n_ctx=max(256, len(prompt_ids) + new_tokens + 8),
        n_batch=512,
        n_threads=threads,
        logits_all=False,
        verbose=False,
    )
    try:
        n_vocab = llm.n_vocab()

        def run(n: int) -> tuple[list[int], list[float]]:
            llm.reset()
            llm.eval(list(prompt_ids))  # 1. prefill: the whole prompt, its KV cache kept
            tokens, steps = [], []
            while True:
                # 2. the next token: the largest of the last position's logits
                logits = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,)
                )
                tokens.append(int(logits.argmax()))
                if len(tokens) == n:
                    return tokens, steps
                # 3. one decode step: that token in, its keys and values appended to the cache
                t0 = time.perf_counter()
                llm.eval([tokens[-1]])
                steps.append(time.perf_counter() - t0)

        run(min(4, new_tokens))  # warm-up
        times: list[float] = []
        tokens: list[int] = []
        for _ in range(repeats):
            tokens, steps = run(new_tokens)
            times += steps
        return {"tokens": tokens, "steps_s": times}
    finally:
        llm.close()


def check(gguf: str = "", prompt: str = "", n_tokens: int = 0, threads: int = 1) -> dict[str, Any]:
    """The engine's version and system-info banner, and with `gguf` the greedy `n_tokens` after
    `prompt` (ids and text) and the seconds that took. The banner goes to stderr first, so a
    crash while loading the model still shows it in the EngineCrash."""
    import numpy as np

    llama_cpp = _llama_cpp()
    banner = llama_cpp.llama_print_system_info()
    out: dict[str, Any] = {
        "version": llama_cpp.__version__,
        "system_info": banner.decode(errors="replace")
        if isinstance(banner, bytes)
        else str(banner),
    }
    print(f"llama.cpp {out['version']}: {out['system_info']}", file=sys.stderr, flush=True)
    if gguf:
        start = time.perf_counter()
        llm = llama_cpp.Llama(model_path=gguf, n_ctx=128, n_threads=threads, verbose=False)
        try:
            llm.eval(llm.tokenize(prompt.encode(), add_bos=False))
            tokens: list[int] = []
            for _ in range(n_tokens):  # greedy: the largest of the last logits, fed back
                logits = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
                )
                tokens.append(int(logits.argmax()))
                llm.eval([tokens[-1]])
            out.update(
                tokens=tokens,
                text=llm.detokenize(tokens).decode(errors="replace"),
                seconds=time.perf_counter() - start,
            )
        finally:
            llm.close()
    return out


TASKS = {"quantize": quantize, "greedy": greedy, "check": check}


def _fault(request: str) -> None:
    """The test hook (module docstring): fail on purpose, before llama.cpp is loaded."""
    what, _, only = os.environ.get(FAULT_ENV, "").partition("@")
    if not what or only not in request:
        return
    if what == "hang":
        time.sleep(1e6)
    elif what.isdigit():
        os._exit(int(what))
    else:
        os.kill(os.getpid(), getattr(signal, what))


def main() -> int:
    # the result goes to the real stdout; anything else printed here (llama.cpp's C code
    # writes to file descriptor 1 too) goes to stderr, so it cannot spoil the JSON
    result_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    request = sys.stdin.read()
    _fault(request)
    try:
        job = json.loads(request)
        result = TASKS[job["task"]](**job["args"])
    except Exception:  # exit code 1 and the traceback on stderr: the parent's EngineCrash
        traceback.print_exc()
        return 1
    result_out.write(json.dumps(result))
    result_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
