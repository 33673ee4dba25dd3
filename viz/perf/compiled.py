"""Less overhead, measured: one decode step compiled by `torch.compile`, against the same step
run one operation at a time.

Lesson 08's fixed cost is what a step pays per operation (a model as deep as the course model
but 64 wide: its weights take no time to read). Lesson 13's profile shows where it goes: about
1,700 top-level operations a step, each launched from Python. A compiler decides the whole step
once: `torch.compile` (TorchDynamo traces the Python, Inductor fuses the chains of small
operations into generated C++ kernels) and then runs it without the Python in between.

**Fixed shapes, one trace.** A compiled graph is specialised to the shapes it saw. A
`DynamicCache` grows by one position each step, so every step has new shapes: with
`dynamic=True` torch.compile generates shape-generic code instead, and on two CPU cores it
compiled the course model for ~5 minutes; a narrow 8-layer model with it recompiled as the
cache grew and ran slower than eager (1.26 → 16.4 ms a step, measured in the previous
session on a busy machine). So this module uses a **static cache** (transformers'
`StaticCache`, `viz.compat.static_cache`): keys and values for `max_cache_len` positions are
allocated once and each step writes one position into it, with a mask over the rest. Every
decode step then has the same shapes, and torch.compile traces it once (`fullgraph=True,
dynamic=False`; `graphs` counts what it made: 1).

`measure_compiled_step(lm)` runs greedy decoding three ways, interleaved so that a slow spell
of a busy machine spreads over all three (each way: one untimed warm-up, then `repeats` runs of
`new_tokens` tokens; the figure is the median decode step with the middle half of the steps):

- **recorded**: eager with a `DynamicCache`, the decode loop `viz.record` runs (lesson 08's
  fixed cost, when `lm` is the narrow model);
- **eager**: eager with the static cache: the same work the compiled step does;
- **compiled**: the compiled step (forward pass + argmax) with the static cache.

The prefill runs eager (its shape differs from a step's). `compile_s` is the first compiled
call: tracing, code generation and the C++ build, into an **empty** Inductor cache folder (a
temporary one, removed after), so it is what a first run costs; a later run of the same program
reads the cache folder and compiles faster. The greedy tokens of all three are compared.

**The machine's check, apart.** Before its first C++ build in a process, Inductor checks which
vector instructions (AVX2, AVX-512, ...) its code may use here: it builds and loads a test
program for each, the builds cached in its usual folder. That check is the machine's, the same
for any model, so it runs first, outside the empty folder, and is timed apart as
`isa_check_s` (0 on a GPU; microseconds when this process made it already). Lesson 13's 10-layer
narrow model here (2-core AMD EPYC, 2026-12-06): the check took 7.8 s the first time on this
machine and 0.9-2.0 s in later processes (its builds cached), and the compile 19.3 s after it;
lesson 13's saved run, with the check inside the empty folder, printed a 31.3 s compile.

    narrow = viz.perf.from_config(viz.perf.narrow_config("smollm2-135m"))  # lesson 08's model
    run = viz.perf.measure_compiled_step(narrow)      # ~40 s on 2 cores, most of it compiling
    print(run)                                        # before, after, compile time, break-even

Measured here (2-core AMD EPYC with avx512_bf16, torch 2.13.0+cpu, 2 threads, one compile
worker, 2026-12-03; `python benchmarks/remedies.py --repeats 5` saves the course model's run as
`viz/data/cpu-compiled-step.json`): the narrow 30-layer model's step 5.95 ms eager → 2.76 ms
compiled (×2.15, 1.89–2.73), compile 40.5 s cold; the course model's 46.8 → 41.8 ms, ×1.12
(0.97–1.28): too close to call, compile 36.0 s (its step is the bytes). The remedies lesson (then 11, now 13) as committed
on 2026-12-04, the narrow model: 9.15 ms eager (static cache) → 3.25 ms, ×2.82 (2.27–3.42),
compile 41.7 s. The narrow model's compile times include Inductor's check (below; the
course model, compiled second in its process, found it made). With the check apart
(2026-12-06, `benchmarks/remedies.py --only compiled --repeats 5`): the narrow model 8.16 →
2.28 ms, ×3.58 (3.44–3.74), compile 31.7 s after a 0.9 s check; the course model 56.2 → 48.1
ms, ×1.17 (1.15–1.20), compile 35.8 s (the check made already; the shipped file is unchanged).

On a GPU the same idea has a second form: CUDA graphs record one step's kernel launches and
replay them with one call (`torch.compile(mode="reduce-overhead")`, which also fuses operations
with Inductor; vLLM and SGLang capture one graph per batch size they serve).
`mode="reduce-overhead"` measures that on a CUDA device: on an H200 lent once (2026-12-04,
`benchmarks/gpu_check.py`, random weights, bfloat16, `viz.perf.gpu_reference("compiled-step",
...)`) the course model's shape took 2.25 ms a step replayed (compile 36.1 s) and
Llama-3.1-8B's 6.55 ms, about the eager step's kernels summed (2.20 and 6.21 ms,
`viz.perf.graph_steps`). The eager step timed in turns with it, static cache both ways, took
48.8 ms (×21.7) and 30.0 ms (×4.6); with the growing cache 41.6 ms (×18.5) and 25.3 ms
(×3.9). Those eager times are the host's (Python launching ~1,200-1,500 kernels one by one;
the same step's wall drifted 4-5× within that session), so the ratios describe that host in
that minute, not the GPU (`viz.perf.gpu`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Optional

import torch

from viz import checks, compat
from viz.documents import Document
from viz.load import LoadedModel
from viz.provenance import environment_from_loose, loose_names, unknown_environment
from viz.runtime import Clock, release_memory, using_threads, vector_check
from viz.spread import Band, Spread, band
from viz.steps import timed_step
from viz.trace import Environment

PROMPT = "The memory wall, measured one decode step at a time: "
SPEEDUP_WORDS = ("eager is faster", "compiled is faster")
WAYS = ("recorded", "eager", "compiled")
# torch.compile's modes measured here: "default" (fused kernels, launched one by one) and, on a
# GPU, "reduce-overhead" (the same kernels recorded once into a CUDA graph and replayed).
MODES = ("default", "reduce-overhead")


# The provenance fields a CompiledStep kept loose before schema 2: now its `environment`'s.
COMPILED_LOOSE = (
    "device",
    "device_name",
    "threads",
    "torch_version",
    "cpu_capability",
    "measured_at",
)
COMPILED_SOURCE = "measured by viz.perf.measure_compiled_step"


def _compiled_v1_to_v2(data: dict) -> dict:
    """Schema 1: device, threads, torch and the time ("2026-12-05 12:12 UTC") were loose
    fields; they move into `environment` (`viz.provenance`), whose source is a shipped
    reference's own `source`, else what measured it."""
    return environment_from_loose(
        data, COMPILED_LOOSE, data.get("source") or COMPILED_SOURCE, dtype=data.get("dtype", "")
    )


@loose_names(*COMPILED_LOOSE)
@dataclass
class CompiledStep(Document):
    """A decode step eager and compiled, with the compile's cost (`measure_compiled_step`).

    Where, when and with what is `environment` (`viz.provenance`); its fields read as before
    too: `run.device_name`, `run.threads`, `run.measured_at`."""

    KIND: ClassVar[str] = "llm-inference-compiled-step"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: _compiled_v1_to_v2}
    WHAT: ClassVar[str] = "compiled-step measurement"
    AGAIN: ClassVar[str] = "measure it again with viz.perf.measure_compiled_step(lm)"

    model: str
    n_layers: int
    hidden_size: int
    dtype: str
    weight_bytes: int  # bytes of the model's weights (each tensor once)
    random_weights: bool
    prompt_tokens: int
    new_tokens: int  # greedy tokens per run (decode steps timed per run: one fewer)
    repeats: int
    backend: str  # torch.compile's backend ("inductor")
    compile_s: float  # the first compiled call: trace + code generation + C++ build
    # (Inductor's check of this CPU's vector instructions apart: `isa_check_s`)
    cold: bool  # compiled into an empty Inductor cache folder
    graphs: int  # graphs torch.compile made (1: traced once, never recompiled)
    recorded: Spread  # eager, DynamicCache: viz.record's decode loop
    eager: Spread  # eager, static cache: the compiled step's work, op by op
    compiled: Spread  # compiled, static cache
    token_ids: list[int] = field(default_factory=list)  # greedy tokens (recorded's)
    same_tokens: bool = False  # all three ways made the same greedy tokens
    compile_threads: int = 1  # Inductor's compile workers (1: in this process)
    note: str = ""  # anything else worth knowing about this run
    source: str = ""  # where a shipped reference was measured, and how ("": in this process)
    mode: str = "default"  # torch.compile's mode: "default", or "reduce-overhead" (CUDA graphs)
    # Inductor's check of which vector instructions build on this CPU, made before the compile,
    # once per process (0 on a GPU; microseconds when made already, and then not printed).
    # Files from before 2026-12-06 read 0: a process's first compile counted it in compile_s
    isa_check_s: float = 0.0
    # The device ("cpu", "cuda:0") and its name, the torch threads, torch and its kernels'
    # instructions, when (ISO UTC) and by what: `viz.provenance`.
    environment: Environment = field(default_factory=unknown_environment)

    @property
    def saved(self) -> Spread:
        """Seconds per step the compiler saved: eager − compiled (worst case at each end)."""
        return self.eager - self.compiled

    @property
    def speedup(self) -> Spread:
        """Eager step ÷ compiled step (worst case at each end)."""
        return self.eager / self.compiled

    @property
    def speedup_verdict(self) -> Band:
        """ "compiled is faster" when the speed-up's whole spread lies above 1, "eager is
        faster" below, "too close to call" when it crosses 1 (a `viz.Band`)."""
        return band(self.speedup, [1.0], list(SPEEDUP_WORDS))

    @property
    def break_even_tokens(self) -> Optional[float]:
        """Tokens to generate before the compile has paid for itself (compile time ÷ seconds
        saved per step); None when the compiled step saved nothing."""
        saved = self.saved.median
        return self.compile_s / saved if saved > 0 else None

    def __str__(self) -> str:
        ms = lambda s: s.text(1e3, "ms", 2, runs=False)  # noqa: E731
        lines = [
            f"{self.model} ({self.n_layers} layers × {self.hidden_size}, {self.dtype}, "
            f"{self.weight_bytes / 1e6:,.1f} MB of weights), {self.threads} threads, "
            f"{self.repeats} runs × {self.new_tokens - 1} decode steps each way",
            f"  eager, DynamicCache (viz.record's loop):  {ms(self.recorded)}",
            f"  eager, static cache:                      {ms(self.eager)}",
            f"  compiled, static cache:                   {ms(self.compiled)}",
            f"  saved per step {self.saved.text(1e3, 'ms', 2)}, speed-up "
            f"×{self.speedup.text(1, '', 2)}: {self.speedup_verdict.word}",
            f"  compile: {self.compile_s:.1f} s ({'an empty' if self.cold else 'a warm'} "
            f"cache folder, {self.backend}"
            f"{'' if self.mode == 'default' else ', mode ' + self.mode}"
            f", {self.compile_threads} compile worker"
            f"{'s' if self.compile_threads != 1 else ''}, {self.graphs} graph"
            f"{'s' if self.graphs != 1 else ''})",
        ]
        if self.isa_check_s >= 0.05:
            lines.append(
                f"  before it, once per process: {self.isa_check_s:.1f} s for Inductor's check "
                f"of this CPU's vector instructions (the same for any model)"
            )
        even = self.break_even_tokens
        if self.speedup_verdict.word == SPEEDUP_WORDS[1]:
            lines.append(f"  the compile pays for itself after {even:,.0f} tokens")
        else:
            lines.append(
                "  no saving these runs can tell from the noise: the compile does not "
                "pay for itself"
            )
        lines.append(
            f"  greedy tokens {'identical' if self.same_tokens else 'DIFFER'} across the three ways"
        )
        if self.note:
            lines.append(f"  ({self.note})")
        if self.source:
            lines.append(f"  reference, not measured here: {self.source}")
        return "\n".join(lines)


def compiler_missing() -> Optional[str]:
    """Why torch.compile cannot build code on this CPU, or None when it can: Inductor writes
    C++ and needs a C++ compiler (g++ or clang++) to build it."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        compiler = get_cpp_compiler()
    except Exception as e:  # torch raises its own error types when none is found
        return (
            f"torch.compile needs a C++ compiler on a CPU and found none ({str(e)[:120]}); "
            f"install one (Debian/Ubuntu: apt install g++) and run again"
        )
    if not shutil.which(compiler) and not os.path.exists(compiler):
        return (
            f"torch.compile needs a C++ compiler on a CPU; {compiler!r} is not installed: "
            f"install one (Debian/Ubuntu: apt install g++) and run again"
        )
    return None


@contextlib.contextmanager
def empty_inductor_cache() -> Iterator[str]:
    """Compile into a new, empty Inductor cache folder (removed afterwards), with torch.compile's
    in-process caches cleared before and after: the compile costs what a first run costs."""
    folder = tempfile.mkdtemp(prefix="viz-inductor-")
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    try:
        _clear_compiled()
        yield folder
    finally:
        _clear_compiled()
        if before is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = before
        shutil.rmtree(folder, ignore_errors=True)


def _clear_compiled() -> None:
    torch._dynamo.reset()  # forget compiled frames and their guards
    try:
        from torch._inductor.utils import clear_caches

        clear_caches()  # Inductor's in-memory code caches
    except ImportError:  # pragma: no cover - older torch
        pass


def _graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def measure_compiled_step(
    lm: LoadedModel,
    *,
    prompt: str = PROMPT,
    new_tokens: int = 16,
    repeats: int = 3,
    threads: Optional[int] = None,
    backend: str = "inductor",
    cold: bool = True,
    compile_threads: int = 1,
    mode: str = "default",
) -> CompiledStep:
    """The decode step of `lm` eager and compiled, timed side by side (module docstring).

    new_tokens: greedy tokens per run (>= 3; decode steps timed per run: one fewer).
    repeats: timed runs of each way, interleaved (after one untimed warm-up each).
    threads: CPU threads (None: torch's current count).
    backend: torch.compile's backend. "inductor" generates fused kernels (the remedy);
      "aot_eager" only traces (no code generation: no speed-up expected, but quick).
    cold: compile into an empty Inductor cache folder (what a first run costs); False uses
      the usual cache folder, which an earlier run may have filled.
    compile_threads: Inductor's compile workers. 1 (the default) compiles in this process, one
      C++ file at a time: no worker processes, so the memory stays within Binder's 2 GB. In
      the remedies lesson's kernel (then lesson 11) (2 cores, 2026-12-03) the kernel and its children peaked at 1,519 MiB
      while compiling with 2 workers and at 1,190 MiB with 1, in 52 s and 48 s.
    mode: "default", or "reduce-overhead" on a CUDA device: the compiled step is also
      captured into a CUDA graph and replayed with one launch (torch.compile's own mode).
    """
    _check_arguments(lm, prompt, new_tokens, repeats, threads, backend, compile_threads, mode)
    ids = _prompt_ids(lm, prompt, new_tokens)
    n = ids.shape[1]
    import torch._inductor.config as inductor_config

    with using_threads(threads) as n_threads, torch.no_grad():
        isa_check_s = vector_check(lm.device, backend)  # the machine's, not the model's
        folder = empty_inductor_cache() if cold else contextlib.nullcontext()
        with folder, inductor_config.patch(compile_threads=compile_threads):
            compile_s, times, made, graphs = _compile_and_time(
                lm, ids, new_tokens, repeats, backend, mode
            )
            _clear_compiled()  # after _compile_and_time has let go of the compiled step
    release_memory()  # hand the compiler's memory back (Binder's 2 GB)

    spec, model, dev = lm.spec, lm.model, lm.device
    return CompiledStep(
        model=spec.name,
        n_layers=spec.n_layers,
        hidden_size=spec.hidden_size,
        dtype=lm.dtype,
        weight_bytes=int(sum(p.numel() * p.element_size() for p in model.parameters())),
        random_weights=spec.random_weights,
        prompt_tokens=n,
        new_tokens=new_tokens,
        repeats=repeats,
        backend=backend,
        compile_s=float(compile_s),
        cold=bool(cold),
        graphs=graphs,
        compile_threads=compile_threads,
        mode=mode,
        isa_check_s=float(isa_check_s),
        recorded=Spread.of(times["recorded"]),
        eager=Spread.of(times["eager"]),
        compiled=Spread.of(times["compiled"]),
        token_ids=made["recorded"],
        same_tokens=made["recorded"] == made["eager"] == made["compiled"],
        # the device as str(dev) ("cuda:0"), as before; the threads the block ran with
        environment=dataclasses.replace(
            lm.environment(COMPILED_SOURCE), device=str(dev), threads=n_threads
        ),
    )


def _check_arguments(
    lm, prompt, new_tokens, repeats, threads, backend, compile_threads, mode
) -> None:
    """`measure_compiled_step`'s argument checks, and whether this machine can compile."""
    if not isinstance(lm, LoadedModel):
        raise ValueError(
            f"expected a viz.LoadedModel, not {type(lm).__name__}: load one with "
            "viz.load_model() or viz.perf.from_config()"
        )
    checks.whole(
        "new_tokens", new_tokens, 3, fix="greedy tokens per run (two decode steps at least)"
    )
    checks.whole("repeats", repeats, 1, fix="timed runs of each way")
    checks.threads(threads)
    checks.whole("compile_threads", compile_threads, 1, fix="Inductor's compile workers")
    checks.prompt(prompt, "give some text")
    known = torch._dynamo.list_backends(exclude_tags=())
    if not isinstance(backend, str) or backend not in known:
        raise ValueError(
            f"unknown torch.compile backend {backend!r}: use 'inductor' (fused "
            f"kernels) or 'aot_eager' (trace only)"
        )
    if mode not in MODES:
        raise ValueError(f"unknown torch.compile mode {mode!r}: use one of {list(MODES)}")
    if mode == "reduce-overhead" and lm.device.type != "cuda":
        raise ValueError(
            f"mode='reduce-overhead' records CUDA graphs and needs a CUDA device, "
            f"not {lm.device.type}: use mode='default' here"
        )
    if lm.device.type != "cpu" and backend == "inductor" and lm.device.type != "cuda":
        raise ValueError(
            f"torch.compile's inductor backend runs on a CPU or CUDA, not "
            f"{lm.device.type}: load the model with device='cpu'"
        )
    if backend == "inductor" and lm.device.type == "cpu":
        missing = compiler_missing()
        if missing:
            raise RuntimeError(missing)


def _prompt_ids(lm: LoadedModel, prompt: str, new_tokens: int) -> torch.Tensor:
    """The prompt's token ids, (1, n) on the model's device, checked to fit with `new_tokens`."""
    ids = torch.tensor([lm.tokenizer(prompt)["input_ids"]], device=lm.device)
    n = ids.shape[1]
    limit = lm.spec.context_length
    if limit and n + new_tokens > limit:
        raise ValueError(
            f"the prompt's {n} tokens + {new_tokens} new ones do not fit "
            f"{lm.spec.name}'s {limit} positions: use a shorter prompt or fewer "
            f"new_tokens"
        )
    return ids


def _compile_and_time(
    lm: LoadedModel, ids: torch.Tensor, new_tokens: int, repeats: int, backend: str, mode: str
) -> tuple[float, dict[str, list[float]], dict[str, list[int]], int]:
    """Compile the step, then time the three ways in turns: the compile's seconds, each way's
    step seconds and greedy tokens, and the graphs torch.compile made."""
    model, dev = lm.model, lm.device
    n = ids.shape[1]
    forward = compat.last_logits(model)
    clock = Clock(dev)
    length = n + new_tokens  # the static cache holds every position a run writes

    def step(token: torch.Tensor, cache: Any, position: torch.Tensor) -> torch.Tensor:
        # one decode step: a forward pass over one token at `position`, then the greedy choice
        return forward(token, cache, position_ids=position).argmax(-1, keepdim=True)

    def recorded_step(token: torch.Tensor, cache: Any, position: torch.Tensor) -> torch.Tensor:
        return forward(token, cache).argmax(-1, keepdim=True)  # DynamicCache: as viz.record

    def run(way: str, fn: Callable, tokens: int) -> tuple[list[float], list[int]]:
        """Prefill (eager), then `tokens - 1` timed decode steps of `fn`."""
        static = way != "recorded"
        if static:  # the one static cache, emptied: its tensors keep their addresses, which
            shared.reset()  # a CUDA graph replays into (a new cache would be recorded again)
        cache = shared if static else compat.new_cache(model)
        positions = torch.arange(n, device=dev)[None]
        token = forward(ids, cache, position_ids=positions if static else None).argmax(
            -1, keepdim=True
        )
        made, seconds = [int(token)], []
        for k in range(tokens - 1):
            # the position is made before the clock starts: a compiled step is handed it
            position = torch.tensor([[n + k]], device=dev)
            # `fn` chooses its own token (the argmax is compiled with the pass): no `choose`
            step_run = timed_step(clock, lambda: fn(token, cache, position))
            token = step_run.token
            seconds.append(step_run.seconds)
            made.append(int(token))
        return seconds, made

    times: dict[str, list[float]] = {w: [] for w in WAYS}
    made: dict[str, list[int]] = {}
    _clear_compiled()
    graphs_before = _graphs()
    compiled = _compile(step, backend, mode)
    # The first compiled call compiles: prefill eager, then one step, timed whole.
    shared = compat.static_cache(model, length)
    token = forward(ids, shared, position_ids=torch.arange(n, device=dev)[None]).argmax(
        -1, keepdim=True
    )
    compile_s = timed_step(
        clock, lambda: compiled(token, shared, torch.tensor([[n]], device=dev))
    ).seconds
    fns = {"recorded": recorded_step, "eager": step, "compiled": compiled}
    for way in WAYS:  # warm-up: one short run each (allocations, kernel choice)
        run(way, fns[way], 3)
    for _ in range(repeats):
        for way in WAYS:
            seconds, tokens = run(way, fns[way], new_tokens)
            times[way] += seconds
            made.setdefault(way, tokens)
    graphs = _graphs() - graphs_before
    return compile_s, times, made, graphs


def _compile(step: Callable, backend: str, mode: str) -> Callable:
    """`step` compiled by torch.compile (traced on its first call)."""
    compiled = torch.compile(
        step,
        backend=backend,
        fullgraph=True,
        dynamic=False,
        mode=None if mode == "default" else mode,
    )
    if mode == "reduce-overhead":
        graph = compiled

        def compiled(token, cache, position):
            # A CUDA graph writes its output into the graph's own memory, which its
            # next replay overwrites: keep a copy (one token id) to feed back in.
            return graph(token, cache, position).clone()

    return compiled
