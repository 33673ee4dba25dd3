"""A second real engine: llama.cpp's OpenAI-compatible server on the default model's own GGUF.

    with viz.serve.LlamaCppServer() as server:
        rec = viz.serve.record_request(server, "Hello")
        run = viz.serve.run_load(server, concurrency=4, n_requests=8)

It runs `python -m llama_cpp.server` (the `llama-cpp-python[server]` package, which compiles
llama.cpp when it is installed: `make setup` builds its wheel once per CPU recipe, portably
(tools/engines.py: no -march=native, no AMX), about 4 minutes on 2 cores, and keeps it in
~/.cache/llm-inference-viz-wheels) on 127.0.0.1, offline, through
`viz.serve.worker` like the embedded transformers server: its own process group, killed with
the process that started it, its log in a file. It serves the GGUF file the default model
comes in (`viz.default_model.default_gguf_path`: SmolLM2-135M-Instruct, Q4_1: 4-bit weights
with a scale and a minimum per 32, 98 MB against 538 MB in float32) with llama.cpp's own CPU
kernels, which compute on the 4-bit weights directly.

**How it serves several users: one at a time.** llama-cpp-python's server holds one model
behind a lock. With its default settings a new request *interrupts* the one streaming (that
stream ends with no finish reason); viz starts it with `--interrupt_requests False`, so
requests queue and each runs alone, in arrival order, as `transformers serve` without
continuous batching. Measured here (2 cores, 2026-12-02 23:18 UTC, one server, 8 requests of
the shipped prompt set, max_tokens 32, 3 runs each, medians): 1 stream 60.8 tokens/s, TTFT p50
73 ms, TPOT p50 12 ms; 4 streams 56.0 tokens/s (the same: runs 45–64 at both), TTFT p50
1,419 ms (the queue), TPOT p50 13 ms. (llama.cpp's own C++ `llama-server` batches parallel
slots; this Python server does not.)

Greedy is not quite greedy here: at temperature 0 llama-cpp-python still applies its default
`repeat_penalty` 1.1 (not an OpenAI field; viz does not send it). And its numbers are not
transformers' even on the same weights (viz's float32 model is this very Q4_1 file,
dequantized): llama.cpp multiplies 4-bit weights by 8-bit-quantized activations. Log-probs
differ by ~0.02–0.15 nats, enough to flip a near-tie. Measured on 3 prompts, 48 tokens: with
repeat_penalty 1.0 the greedy texts agree for 0 (a 0.08-nat tie at the first token), 19 (all)
and 39 tokens; with the server's default for 0, 15 and 18.

Its streams carry one token per event and no usage (`stream_options` is ignored): a request's
token count is then its number of text chunks, and its prompt's length is not known.

Sizing: a context of `n_ctx` tokens (default 2,048: room for the longest shipped prompt and
its answer), `n_threads` = the CPU count. Resident memory ~450 MiB.
Lesson 09 (Serving many users) puts it beside `transformers serve`; `benchmarks/serving.py`.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Optional

from viz import checks
from viz.runtime import cpu_features, cpu_name
from viz.serve.client import ServeError, is_loopback
from viz.serve.server import ManagedProcess, ServerInfo

VERSION = "0.3.36"  # the llama-cpp-python release requirements-engines.txt pins
INSTALL_HINT = (
    "llama.cpp's server is not installed in this environment: run `make setup` "
    "(it compiles llama-cpp-python once for this CPU, portably, about 4 minutes on "
    "2 cores, and keeps the wheel for next time), or `python -m tools.engines "
    "install` from the repository for the engine alone (a plain `pip install "
    "llama-cpp-python` builds with -march=native, which can die with SIGILL on "
    "CPUs with AMX) (on Binder it is not installed: the build would take longer than a "
    "session's start)"
)
# What `python -m llama_cpp.server` imports beyond viz's own dependencies.
NEEDS = ("llama_cpp", "sse_starlette", "starlette_context", "pydantic_settings")


def check_installed() -> str:
    """The installed llama-cpp-python version; a ServeError naming the fix if it (or its
    server's dependencies) is missing."""
    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        raise ServeError(f"{INSTALL_HINT} (missing: {', '.join(missing)})")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:
        return "unknown"


class LlamaCppServer(ManagedProcess):
    """`python -m llama_cpp.server` on a GGUF file (default: the default model's Q4_1), on
    127.0.0.1. See the module docstring. Lesson 09.

    gguf: a GGUF file (default: `viz.default_model.default_gguf_path()`).
    n_ctx: context length in tokens; n_threads: CPU threads (default: every CPU).
    """

    def __init__(
        self,
        gguf: Optional[str] = None,
        *,
        n_ctx: int = 2048,
        n_threads: Optional[int] = None,
        host: str = "127.0.0.1",
        port: Optional[int] = None,
        warmup: bool = True,
        log_path: Optional[str] = None,
        startup_timeout_s: float = 120.0,
    ):
        from viz import default_model

        self.version = check_installed()
        if gguf is None:
            path = default_model.default_gguf_path()  # ValueError naming `make model`
            name = default_model.DEFAULT_MODEL
        else:
            path = Path(str(gguf)).expanduser()
            if not path.is_file() or path.suffix.lower() != ".gguf":
                raise ServeError(
                    f"no GGUF file at {gguf!r}: llama.cpp serves a .gguf file; "
                    "leave gguf out for the default model's own (Q4_1)"
                )
            name = path.stem
        threads = n_threads if n_threads is not None else (os.cpu_count() or 1)
        for what, v, low in (("n_ctx", n_ctx, 64), ("n_threads", threads, 1)):
            checks.whole(what, v, low, error=ServeError)
        if not is_loopback(host):
            raise ServeError(
                f"refusing to listen on {host}: this server is for this machine (127.0.0.1)"
            )
        self.gguf, self.model_name = Path(path), name
        self.n_ctx, self.n_threads = n_ctx, threads
        super().__init__(
            [],
            host=host,
            port=port or 0,
            log_path=Path(log_path) if log_path else None,
            ready_path="/v1/models",
            startup_timeout_s=startup_timeout_s,
            what="llama.cpp server",
            run_prefix="viz-llamacpp-",
            warmup=warmup,
        )

    # ---- what it is (viz.serve.protocol.ServerHandle) ---------------------------------------
    @property
    def label(self) -> str:
        return "llama.cpp, Q4_1"

    def info(self) -> ServerInfo:
        return ServerInfo(
            software=f"llama.cpp (llama-cpp-python {self.version})",
            model=self.model_name,
            continuous_batching=False,
            device="cpu",
            dtype="Q4_1" if "Q4_1" in self.gguf.name else self.gguf.stem,
            page_size=None,
            num_pages=None,
            max_batch_tokens=None,
            recorded=False,
            cpu=cpu_name(),
            cpu_features=cpu_features(),
        )

    def command(self) -> list[str]:
        """The `python -m llama_cpp.server` arguments."""
        return [
            "--model",
            str(self.gguf),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
            "--interrupt_requests",
            "False",
            "--verbose",
            "False",
        ]

    def __repr__(self) -> str:
        state = f"running at {self.url}" if self.alive else "stopped"
        return (
            f"LlamaCppServer({self.gguf.name}, one request at a time, {self.n_threads} "
            f"threads, {state})"
        )

    # ---- life cycle ---------------------------------------------------------------------
    def start(self) -> "LlamaCppServer":
        if self.alive:
            return self
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
        self.launch(lambda: ["--module", "llama_cpp.server", "--", *self.command()])
        return self
