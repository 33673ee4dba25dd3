"""The probes inside the serving process: what `viz.serve.scheduler` records, recorded.

transformers has no public hook for a continuous-batching server's passes or its requests'
timing, so two probes wrap a few of its methods, and read its scheduler's and paged cache's
attributes. Those are internals that move between releases: every probe checks the version
first (`viz.serve.scheduler.check_transformers_version`, pinned to `SUPPORTED_TRANSFORMERS`)
and refuses any other with a message naming the range.

- `StepRecorder`: every pass of the loop (`prepare_next_batch`, then `update_batch`): who is
  in the batch with how many tokens, who waits, the page tables and the free and shared
  pages → a `viz.serve.Schedule`.
- `RequestProbe`: per request, when the server received it, when it left the queue, when each
  token was produced (transformers' own `record_timestamps` with continuous batching; the
  streamer `model.generate()` feeds, one request at a time).
- `install_server_probes(folder)`: both at once, writing JSON lines (`JsonLines`) that the
  parent process reads back (`read_json_lines`); `viz.serve.worker` calls it for
  `EmbeddedServer(record=True)`.

Removing a probe restores the methods it wrapped. Introduced in lesson 09.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import threading
from pathlib import Path
from typing import Any, Callable, Optional

from viz import checks
from viz.compat import Patches
from viz.serve.scheduler import (
    Schedule,
    UnsupportedTransformers,
    check_transformers_version,
    now,
    schedule_from_lines,
    supported_range,
)

# ---- the step recorder --------------------------------------------------------------------------
_INSTALLED: dict[str, Any] = {}  # one recorder / probe per process (they patch classes)
_LOCK = threading.Lock()


def _internals():
    """The classes the recorder patches, after the version check."""
    check_transformers_version()
    from transformers.generation.continuous_batching import continuous_api
    from transformers.generation.continuous_batching.requests import RequestStatus

    return continuous_api, RequestStatus


def _allocator(cache) -> Any:
    """The cache allocator of the model's full-attention layers (the only kind SmolLM2 and
    most models have); the first one otherwise."""
    allocators = cache.cache_allocators
    return allocators.get("full_attention") or next(iter(allocators.values()))


def cache_header(cache) -> dict[str, Any]:
    """Page size, page count, bytes per page and token budget of a PagedAttentionCache."""
    import transformers

    a = _allocator(cache)
    return {
        "page_size": int(a.tokens_per_page),
        "total_pages": int(a.num_blocks),
        "first_page": int(cache.pool.num_reserved_sectors * a.blocks_per_sector),
        "bytes_per_page": int(a.bytes_per_block),
        "max_batch_tokens": int(cache.max_batch_tokens),
        "transformers_version": transformers.__version__,
    }


def _snapshot(processor, status) -> dict[str, Any]:
    """What one chosen batch holds, read after `prepare_next_batch` (before the forward)."""
    cache, scheduler = processor.cache, processor.scheduler
    a = _allocator(cache)
    batch, prompt_tokens = [], {}
    for fs in processor.inputs_and_outputs.requests_in_batch:
        st = fs.state
        q = int(fs.query_length)
        batch.append(
            {
                "request_id": st.request_id,
                "phase": "decode" if st.generated_len() > 0 else "prefill",
                "query_tokens": q,
                "cached_tokens": int(st.position_offset) - q,
                "new_token": bool(fs.has_new_token),
                "pages": [int(b) for b in a.block_table.get(st.request_id, [])],
            }
        )
        prompt_tokens[st.request_id] = len(st.initial_tokens)
    in_batch = {e["request_id"] for e in batch}
    pool = cache.pool
    free = pool.count_free_blocks(a.index) + pool.num_free_sectors * a.blocks_per_sector
    for rid, st in scheduler.waiting_requests.items():
        prompt_tokens[rid] = len(st.initial_tokens)
    return {
        "batch": batch,
        "waiting": list(scheduler.waiting_requests),
        "held": [r for r in scheduler.active_requests if r not in in_batch],
        "free_pages": int(free),
        "cached_pages": len(a.ledger.cached_blocks),
        "shared_pages": sorted(int(b) for b, n in a.ledger.shared_ref_counts.items() if n >= 2),
        "prompt_tokens": prompt_tokens,
    }


class StepRecorder:
    """Records every pass of transformers' continuous-batching loop in this process.

        with StepRecorder() as rec:
            ... run requests through model.init_continuous_batching() / generate_batch() ...
        schedule = rec.schedule()

    `sink(line)` (optional) receives each step as a dict (absolute clock) as it happens: the
    embedded server writes them to a file. Removing the recorder (leaving the `with`, or
    `remove()`) restores transformers' methods, also after an error. Async batching (CUDA
    graphs with double buffering) is refused: there a step's results arrive one pass late.
    """

    def __init__(self, sink: Optional[Callable[[dict[str, Any]], None]] = None):
        self.sink = sink
        self.lines: list[dict[str, Any]] = []
        self.header: Optional[dict[str, Any]] = None
        self._patches = Patches()
        self.error: Optional[str] = None

    def install(self) -> "StepRecorder":
        continuous_api, status = _internals()
        proc_cls = continuous_api.ContinuousBatchProcessor
        for name in ("prepare_next_batch", "update_batch"):
            if not callable(getattr(proc_cls, name, None)):
                raise UnsupportedTransformers(
                    f"transformers' ContinuousBatchProcessor has no {name}(): its internals "
                    f"moved; this recorder supports transformers {supported_range()}"
                )
        with _LOCK:
            if "steps" in _INSTALLED:
                raise RuntimeError(
                    "a StepRecorder is already recording in this process: "
                    "remove it first (leave its `with` block)"
                )
            _INSTALLED["steps"] = self
        recorder = self
        prepare, update = proc_cls.prepare_next_batch, proc_cls.update_batch

        def prepare_next_batch(proc):
            start = now()
            ready = prepare(proc)
            if ready:
                recorder._begin(proc, start, status)
            return ready

        def update_batch(proc):
            update(proc)
            recorder._end(proc)

        self._patches.set(proc_cls, "prepare_next_batch", prepare_next_batch)
        self._patches.set(proc_cls, "update_batch", update_batch)
        return self

    def _begin(self, proc, start: float, status) -> None:
        try:
            if getattr(proc, "use_async_batching", False):
                raise UnsupportedTransformers(
                    "async batching (CUDA graphs with double buffering) hands out a step's "
                    "tokens one pass late: start the server with --no-cb-use-cuda-graph to "
                    "record its steps"
                )
            if self.header is None:
                self.header = cache_header(proc.cache)
            snap = _snapshot(proc, status)
            snap["start"], snap["forward"] = start, now()
            proc._viz_step = snap
        except Exception as e:  # never break the server: stop recording, keep the reason
            self.error = f"{type(e).__name__}: {e}"
            proc._viz_step = None

    def _end(self, proc) -> None:
        snap = getattr(proc, "_viz_step", None)
        if snap is None:
            return
        proc._viz_step = None
        snap["end"] = now()
        active = proc.scheduler.active_requests
        snap["finished"] = [e["request_id"] for e in snap["batch"] if e["request_id"] not in active]
        snap["header"] = self.header
        self.lines.append(snap)
        if self.sink is not None:
            try:
                self.sink(snap)
            except Exception as e:
                self.error = f"{type(e).__name__}: {e}"

    def remove(self) -> None:
        if not self._patches:
            return
        self._patches.restore()
        with _LOCK:
            if _INSTALLED.get("steps") is self:
                del _INSTALLED["steps"]

    def __enter__(self) -> "StepRecorder":
        return self.install()

    def __exit__(self, *exc) -> None:
        self.remove()

    def schedule(self, origin: Optional[float] = None, label: str = "") -> Schedule:
        """The steps recorded so far; times from `origin` (default: the first step's start)."""
        if not self.lines or self.header is None:
            raise ValueError(
                "no continuous-batching step was recorded: send requests through "
                "model.init_continuous_batching() (or generate_batch) while the "
                "recorder is installed" + (f"; recorder error: {self.error}" if self.error else "")
            )
        origin = self.lines[0]["start"] if origin is None else origin
        return schedule_from_lines(self.header, self.lines, origin, label)


def record_schedule(
    model: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int = 16,
    page_size: int = 16,
    num_blocks: int = 64,
    max_batch_tokens: int = 64,
    arrive_every_steps: int = 0,
    one_at_a_time: bool = False,
    prefix_sharing: bool = True,
    label: str = "",
) -> tuple[Schedule, dict]:
    """Run token-id prompts through transformers' continuous batching in this process,
    recording every step. Returns (schedule, {request id: generated token ids}).

    model: a transformers causal LM (e.g. `viz.load_model().model`, or a tiny random one).
    arrive_every_steps: 0 sends every request at once; k > 0 adds one request every k
    steps (the rest wait outside the server), so requests join a running batch.
    one_at_a_time: send each request only when the one before has finished (a later request
    then finds the earlier ones' full prompt pages kept for reuse).
    prefix_sharing: the engine's `allow_block_sharing` (on by default, as in
    `transformers serve --continuous-batching`): a new request whose prompt begins with full
    pages already in the cache shares them instead of recomputing them (lesson 11).
    Greedy decoding; no EOS stop (every request makes max_new_tokens tokens). Lesson 09.
    """
    gen, cfg = _engine_configs(
        prompts, max_new_tokens, page_size, num_blocks, max_batch_tokens, prefix_sharing
    )
    outputs: dict[str, list[int]] = {}
    # Arrivals every k steps, exactly: at the k-th step the engine's thread waits (in the
    # recorder's sink, after recording the step) until the next request is added, so it joins
    # the very next pass. Polling from this thread instead, a busy machine let the engine run
    # 20 steps past the target before the request came.
    target: list[Optional[int]] = [None]
    reached, added = threading.Event(), threading.Event()

    def gate(_line) -> None:
        if target[0] is not None and len(rec.lines) >= target[0]:
            target[0] = None
            reached.set()
            added.wait(timeout=60)

    with StepRecorder(sink=gate if arrive_every_steps else None) as rec:
        manager = model.init_continuous_batching(
            generation_config=gen, continuous_batching_config=cfg
        )
        manager.start()
        try:
            pending = list(enumerate(prompts))
            ids = []
            while pending:
                i, p = pending.pop(0)
                ids.append(
                    manager.add_request(p, request_id=f"req_{i}", max_new_tokens=max_new_tokens)
                )
                added.set()  # the engine, if it waits at the gate, goes on with this request
                if one_at_a_time:
                    _collect(manager, outputs, len(ids), deadline=now() + 600)
                if arrive_every_steps and pending:
                    reached.clear()
                    added.clear()
                    target[0] = len(rec.lines) + arrive_every_steps
                    deadline = now() + 120
                    while not reached.wait(0.01) and now() < deadline and manager.is_running():
                        pass
                    target[0] = None
            _collect(manager, outputs, len(ids), deadline=now() + 600)
        finally:
            target[0] = None
            added.set()  # never leave the engine waiting at the gate
            manager.stop(block=True, timeout=10)
    if len(outputs) < len(prompts):
        raise RuntimeError(
            f"only {len(outputs)} of {len(prompts)} requests finished"
            + (f" (recorder: {rec.error})" if rec.error else "")
        )
    return rec.schedule(label=label), outputs


def _engine_configs(
    prompts: list[list[int]],
    max_new_tokens: int,
    page_size: int,
    num_blocks: int,
    max_batch_tokens: int,
    prefix_sharing: bool,
) -> tuple[Any, Any]:
    """`record_schedule`'s arguments checked, and the engine's (generation config, continuous
    batching config): greedy, no EOS stop, no CUDA graphs, steps run one after another."""
    from transformers import ContinuousBatchingConfig, GenerationConfig

    if not prompts or any(not p for p in prompts):
        raise ValueError("prompts must be a non-empty list of non-empty token-id lists")
    for name, v in (
        ("max_new_tokens", max_new_tokens),
        ("page_size", page_size),
        ("num_blocks", num_blocks),
        ("max_batch_tokens", max_batch_tokens),
    ):
        checks.whole(name, v, 1)
    check_transformers_version()
    gen = GenerationConfig(do_sample=False, max_new_tokens=max_new_tokens, eos_token_id=-1)
    return gen, ContinuousBatchingConfig(
        page_size=page_size,
        num_blocks=num_blocks,
        max_batch_tokens=max_batch_tokens,
        use_async_batching=False,
        use_cuda_graph=False,
        allow_block_sharing=bool(prefix_sharing),
    )


def _collect(manager, outputs: dict[str, list[int]], count: int, deadline: float) -> None:
    """Wait until `count` requests have finished (or the deadline, or the manager stopped)."""
    while len(outputs) < count and now() < deadline:
        out = manager.get_result(timeout=1)
        if out is not None and out.is_finished():
            if out.error:
                raise RuntimeError(f"request {out.request_id} failed: {out.error}")
            outputs[out.request_id] = list(out.generated_tokens)
        elif out is None and not manager.is_running():
            break


# ---- the request probe (inside transformers serve) ----------------------------------------------
_CURRENT = contextvars.ContextVar("viz_request", default=None)


class RequestProbe:
    """Per-request server-side timestamps inside `transformers serve`, written as JSON lines
    (`sink(line)`): {"id", "received", "started", "tokens": [...], "finished",
    "prompt_tokens", "output_tokens", "error"} on the shared monotonic clock.

    Continuous batching: every request gets `record_timestamps=True` (transformers' own
    per-token timestamps, taken when each token is produced); received = added to the
    manager, started = first scheduled, finished = done. One request at a time: the same
    moments read from the streamer `model.generate()` feeds (its first call carries the
    prompt, when generation starts; each later call one new token).
    """

    def __init__(self, sink: Callable[[dict[str, Any]], None]):
        self.sink = sink
        self._patches = Patches()

    def install(self) -> "RequestProbe":
        """Wrap both serving paths (continuous batching, and one request at a time)."""
        continuous_api, _ = _internals()
        from transformers.cli.serving import utils as serving

        with _LOCK:
            if "probe" in _INSTALLED:
                raise RuntimeError("a RequestProbe is already installed in this process")
            _INSTALLED["probe"] = self
        try:
            self._install_continuous(continuous_api)
            self._install_one_at_a_time(serving)
        except BaseException:
            self.remove()
            raise
        return self

    def _install_continuous(self, continuous_api) -> None:
        """Continuous batching: ask for every request's per-token timestamps, and read them
        when the output router delivers the finished request."""
        probe = self
        manager_cls = continuous_api.ContinuousBatchingManager
        router_cls = continuous_api.OutputRouter
        add_request = manager_cls.add_request
        params = inspect.signature(add_request)
        if "record_timestamps" not in params.parameters:
            raise UnsupportedTransformers(
                "ContinuousBatchingManager.add_request takes no record_timestamps: its "
                f"internals moved; the probe supports transformers {supported_range()}"
            )

        def add_request_timed(manager, *args, **kwargs):
            bound = params.bind(manager, *args, **kwargs)
            bound.arguments["record_timestamps"] = True
            return add_request(*bound.args, **bound.kwargs)

        def done(output) -> None:
            if output.is_finished():
                started, finished = output.lifespan
                probe._emit(
                    {
                        "id": output.request_id,
                        "received": output.created_time,
                        "started": started if started > 0 else None,
                        "finished": finished if finished > 0 else None,
                        "tokens": list(output.timestamps or []),
                        "prompt_tokens": len(output.prompt_ids),
                        "output_tokens": len(output.generated_tokens),
                        "error": output.error,
                    }
                )

        deliver, deliver_batch = router_cls.deliver, router_cls.deliver_batch

        def deliver_timed(router, output):
            done(output)
            return deliver(router, output)

        def deliver_batch_timed(router, outputs):
            for o in outputs:
                done(o)
            return deliver_batch(router, outputs)

        self._patches.set(manager_cls, "add_request", add_request_timed)
        self._patches.set(router_cls, "deliver", deliver_timed)
        self._patches.set(router_cls, "deliver_batch", deliver_batch_timed)

    def _install_one_at_a_time(self, serving) -> None:
        """One request at a time: `model.generate()` feeds a DirectStreamer; its first call
        carries the prompt (generation begins), each later call one new token."""
        probe = self
        gm, streamer_cls = serving.GenerateManager, serving.DirectStreamer
        gen_stream, s_init, s_put, s_end = (
            gm.generate_streaming,
            streamer_cls.__init__,
            streamer_cls.put,
            streamer_cls.end,
        )

        def generate_streaming(
            manager, model, processor, inputs, gen_config, request_id, *args, **kwargs
        ):
            ids = inputs["input_ids"]
            n = int(ids.shape[-1]) if hasattr(ids, "shape") else len(ids)
            token = _CURRENT.set(
                {
                    "id": request_id,
                    "received": now(),
                    "started": None,
                    "tokens": [],
                    "finished": None,
                    "prompt_tokens": n,
                    "output_tokens": 0,
                    "error": None,
                }
            )
            try:
                return gen_stream(
                    manager, model, processor, inputs, gen_config, request_id, *args, **kwargs
                )
            finally:
                _CURRENT.reset(token)

        def init(streamer, *args, **kwargs):
            s_init(streamer, *args, **kwargs)
            streamer._viz = _CURRENT.get()

        def put(streamer, value):
            t = now()
            rec = getattr(streamer, "_viz", None)
            if rec is not None:
                if rec["started"] is None:
                    rec["started"] = t  # the prompt: generation of this request begins
                else:
                    n = int(value.numel()) if hasattr(value, "numel") else 1
                    rec["tokens"].extend([t] * n)
            return s_put(streamer, value)

        def end(streamer):
            rec = getattr(streamer, "_viz", None)
            if rec is not None:
                rec["finished"] = now()
                rec["output_tokens"] = len(rec["tokens"])
                probe._emit(dict(rec))
            return s_end(streamer)

        self._patches.set(gm, "generate_streaming", generate_streaming)
        self._patches.set(streamer_cls, "__init__", init)
        self._patches.set(streamer_cls, "put", put)
        self._patches.set(streamer_cls, "end", end)

    def _emit(self, line: dict[str, Any]) -> None:
        try:
            self.sink(line)
        except Exception:  # never break the server for a record
            pass

    def remove(self) -> None:
        self._patches.restore()
        with _LOCK:
            if _INSTALLED.get("probe") is self:
                del _INSTALLED["probe"]


class JsonLines:
    """A thread-safe append-only JSON-lines file, flushed after every line (a reader in
    another process sees each complete line as soon as it is written)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._f = open(self.path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def __call__(self, line: dict[str, Any]) -> None:
        text = json.dumps(line, separators=(",", ":"), allow_nan=False)
        with self._lock:
            self._f.write(text + "\n")
            self._f.flush()


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every complete line of a JSON-lines file (a last line still being written is skipped)."""
    path = Path(path)
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def install_server_probes(folder: Path) -> None:
    """Inside a serving process: record request timings and scheduler steps into `folder`
    (requests.jsonl, steps.jsonl). Called by `viz.serve.worker` for EmbeddedServer(record=True)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    RequestProbe(JsonLines(folder / "requests.jsonl")).install()
    StepRecorder(JsonLines(folder / "steps.jsonl")).install()
