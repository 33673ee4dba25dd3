"""Load runs: many requests at once against one server, every request recorded.

    run = viz.serve.run_load(server, concurrency=4, n_requests=16)    # 4 streams kept busy
    run = viz.serve.run_load(server, rate=2.0, n_requests=16, seed=0)  # Poisson, 2 per second
    print(run.summary())       # percentiles, throughput, goodput (viz.serve.metrics)
    run.save("run.json")       # a LoadRun document: every request, every token's arrival

Two ways to load a server, as vLLM's and GuideLLM's benchmarks do:

- **concurrency N** (closed loop): N streams; each sends its next request as soon as its last
  one ends. The load follows the server's speed.
- **rate λ** (open loop): requests arrive at random, independent times — a Poisson process,
  gaps drawn from an exponential distribution of mean 1/λ (seeded: the same seed gives the
  same arrival times) — whether or not the server keeps up. `max_concurrency` optionally caps
  how many are in flight.

What is sent is a **workload** (`viz.serve.Workload`), stated as engineers state it:
"64 tokens in, 32 out" (synthetic prompts of exact token lengths, fixed or drawn), a JSONL file
of prompts, or chats that re-send their history; by default the shipped set of eight prompts
(`prompts.json`, `load_prompts()`), short and long, each with its own answer limit, in an
order shuffled by the seed. The workload is built and checked (lengths, the model's context,
the server's KV pool) before any request is sent, and kept in the run. Every run is bounded
twice: `n_requests` requests at most, and `max_duration_s` seconds at most — nothing is sent
after that, and requests still streaming then are cancelled (recorded as such, with the text
they got). A failed request is recorded with its reason; completed ones are kept; with
`out=`, the file is written whatever happened (also on Ctrl-C, before it propagates).
Introduced in lesson 09 (Serving many users).
"""

from __future__ import annotations

import copy
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional, Sequence

from viz import checks
from viz.documents import Document
from viz.provenance import loose_names, unknown_environment
from viz.serve.client import (
    ClientInfo,
    ServeError,
    Target,
    Timeouts,
    attach_server_timing,
    check_url,
    client_environment,
    make_client,
    now,
    recorded_at_to_environment,
    request_id,
    resolve_target,
    run_coroutine,
    server_note,
)
from viz.serve.driver import drive, jobs_of
from viz.serve.engines import kv_pool_tokens, length_fields, tokenizer_for
from viz.serve.metrics import (
    SLO,
    ITLBreakdown,
    LoadSummary,
    RequestRecord,
    StaticBatchWaste,
    itl_breakdown,
    static_batching_waste,
    summarize,
)
from viz.serve.protocol import server_handle
from viz.serve.scheduler import Schedule, schedule_v1_to_v2
from viz.serve.server import ServerInfo
from viz.trace import Environment
from viz.serve.workload import Lengths, Prompt, Workload, load_prompts  # noqa: F401
from viz.spread import Spread

MAX_REQUESTS = 10_000
MAX_CONCURRENCY = 512
MAX_DURATION_S = 24 * 3600.0


def _prompts(prompts: Any, max_tokens: Optional[int]) -> list[Prompt]:
    if prompts is None:
        out = load_prompts()
    elif isinstance(prompts, str) or not isinstance(prompts, Sequence) or not prompts:
        raise ServeError(
            "prompts must be a non-empty list of strings (or of "
            "{'name', 'prompt', 'max_tokens'}), or None for the shipped set"
        )
    else:
        out = []
        for i, p in enumerate(prompts):
            if isinstance(p, Prompt):
                out.append(p)
            elif isinstance(p, str) and p.strip():
                out.append(Prompt(f"prompt {i}", p, max_tokens or 64))
            elif isinstance(p, dict) and isinstance(p.get("prompt"), str) and p["prompt"].strip():
                out.append(
                    Prompt(
                        str(p.get("name", f"prompt {i}")),
                        p["prompt"],
                        int(p.get("max_tokens", max_tokens or 64)),
                    )
                )
            else:
                raise ServeError(f"prompt {i} is empty or not text: {p!r}")
    if max_tokens is not None:
        out = [Prompt(p.name, p.prompt, max_tokens) for p in out]
    return out


# ---- the saved run ----------------------------------------------------------------------------
@dataclass
class LoadSettings:
    """How a load run was driven, and with what (its workload)."""

    mode: str  # "concurrency" (N streams, closed loop) or "rate" (Poisson arrivals, open loop)
    concurrency: Optional[int]  # streams (mode concurrency), or the in-flight cap (mode rate)
    rate_per_s: Optional[float]  # mean arrivals per second (mode rate)
    n_requests: int  # requests scheduled
    max_duration_s: float  # nothing sent, and everything stopped, after this long
    seed: int  # prompt order, prompt and answer lengths, arrival times
    temperature: float
    timeouts: Timeouts
    slo: SLO  # the objective the summary's goodput uses by default
    workload: Workload = field(default_factory=Workload)  # what was sent (schema 2)
    length_fields: list[str] = field(default_factory=list)  # fields sent to hold the answer
    #   length besides max_tokens ("min_tokens", "ignore_eos"), where the engine takes them
    length_note: str = ""  # why those fields (or none), in words

    @property
    def max_tokens(self) -> Optional[int]:
        """The one answer length of every request, if the workload has one (schema 1's field)."""
        o = self.workload.output_tokens
        return int(o.mean) if o is not None and o.kind == "fixed" else None


def _shipped_or_given(prompts: list[dict]) -> str:
    names = {p.name for p in load_prompts()}
    return "shipped" if prompts and all(p.get("name") in names for p in prompts) else "prompts"


def settings_v1_to_v2(s: dict) -> dict:
    """A schema-1 run's settings: `max_tokens` and `prompts` become its workload (the prompt
    set it cycled through, its answers capped at max_tokens when one was given)."""
    s = dict(s)
    cap, prompts = s.pop("max_tokens", None), s.pop("prompts", None) or []
    s["workload"] = {
        "kind": _shipped_or_given(prompts),
        "prompts": prompts,
        "output_tokens": None if cap is None else {"mean": cap, "kind": "fixed"},
    }
    return s


def run_v1_to_v2(d: dict) -> dict:
    """A schema-1 LoadRun dict as schema 2 (its settings: `settings_v1_to_v2`)."""
    return {**d, "settings": settings_v1_to_v2(d["settings"])}


RUN_SOURCE = "recorded by viz.serve.run_load"


def run_v2_to_v3(d: dict) -> dict:
    """A schema-2 LoadRun dict as schema 3: its loose `recorded_at` moves into `environment`
    (`viz.provenance`), with the client machine its ClientInfo describes."""
    return recorded_at_to_environment(d, RUN_SOURCE, d.get("client"))


def run_v3_to_v4(d: dict) -> dict:
    """A schema-3 LoadRun dict as schema 4: the server's schedule in it, if any, as a Schedule
    of schema 2 (its transformers version moved into its environment)."""
    if d.get("schedule"):
        d = {**d, "schedule": schedule_v1_to_v2(d["schedule"])}
    return d


@loose_names(recorded_at="measured_at")
@dataclass
class LoadRun(Document):
    """Every request of one load run, as the client saw it (`run_load`). Lesson 09.

    Where, when and by what is `environment` (`viz.provenance`; `run.recorded_at` reads its
    time, as before)."""

    KIND: ClassVar[str] = "llm-inference-load-run"
    # 2: settings.max_tokens and settings.prompts became settings.workload (a Workload)
    # 3: recorded_at became environment.measured_at (one shape of provenance)
    # 4: the schedule's transformers_version became its environment's (Schedule 2)
    SCHEMA_VERSION: ClassVar[int] = 4
    UPGRADES: ClassVar[dict] = {1: run_v1_to_v2, 2: run_v2_to_v3, 3: run_v3_to_v4}
    WHAT: ClassVar[str] = "load run"
    AGAIN: ClassVar[str] = (
        "run it again with viz.serve.run_load(...) or `python -m viz load URL -o FILE`"
    )

    target: Target
    settings: LoadSettings
    requests: list[RequestRecord]
    client: ClientInfo
    stopped: str = ""  # why the run stopped before sending everything ("" = it did not)
    server: Optional[ServerInfo] = None  # how the server was run, when viz started it
    schedule: Optional[Schedule] = None  # the server's scheduler steps, when it recorded them
    label: str = ""  # e.g. "continuous batching, 4 streams"
    # CPU seconds used during the run ÷ its wall time (from the call to the return): how many
    # cores were kept busy on average by this client process (every thread) and, when viz
    # started the server, by the server's processes. None: not measured (older files, or a
    # server viz did not start).
    client_cores: Optional[float] = None
    server_cores: Optional[float] = None
    # the client machine, when (ISO UTC: `viz.provenance.utc_now`) and by what
    environment: Environment = field(default_factory=unknown_environment)

    def summary(self, slo: Optional[SLO] = None) -> LoadSummary:
        """The workload, percentiles, throughput and goodput (definitions: viz.serve.metrics),
        and how many answers stopped before the length asked."""
        return summarize(self.requests, slo or self.settings.slo, self.workload_label)

    @property
    def workload_label(self) -> str:
        """The workload and the load in words: "64 tokens in, 32 out, 4 streams"."""
        return f"{self.settings.workload}, {self.load_label}"

    def static_batching_waste(self, batch_size: int) -> StaticBatchWaste:
        """What static batching would have wasted on this run's completed requests (their
        prompt and answer lengths as the server counted them), `batch_size` at a time."""
        done = [
            r
            for r in sorted(self.requests, key=lambda r: r.index)
            if r.ok and r.prompt_tokens is not None
        ]
        if not done:
            raise ValueError("no completed request with token counts in this run")
        return static_batching_waste(
            [r.prompt_tokens for r in done], [r.n_output_tokens for r in done], batch_size
        )

    def itl_breakdown(self) -> ITLBreakdown:
        """This run's inter-token latency taken apart with the server's record: decode passes,
        passes carrying prompt chunks, the way to the client (viz.serve.metrics.ITLBreakdown).
        Needs a run on `EmbeddedServer(record=True)`."""
        return itl_breakdown(
            self.requests, self.schedule, self.load_label, self.client_cores, self.server_cores
        )

    @property
    def load_label(self) -> str:
        """The load in words: "4 streams" or "2.0 requests/s"."""
        s = self.settings
        if s.mode == "concurrency":
            return f"{s.concurrency} stream{'s' if s.concurrency != 1 else ''}"
        cap = f", at most {s.concurrency} at once" if s.concurrency else ""
        return f"{s.rate_per_s:g} requests per second{cap}"

    def __str__(self) -> str:
        head = f"{self.label or self.target.server_label or self.target.model} · {self.load_label}"
        stop = f"\nstopped early: {self.stopped}" if self.stopped else ""
        return f"{head}{stop}\n{self.summary()}"


def throughput_ratio(run: LoadRun, base: LoadRun) -> Spread:
    """`run`'s output tokens per second ÷ `base`'s (e.g. two servers at the same load), with a
    spread over their requests. A run's throughput is one figure, its tokens ÷ its duration;
    while they decode, its requests each make a token every TPOT, so the throughput moves with
    their pace. The median is the throughputs' ratio; its ends scale it as the requests' paces
    allow: base's TPOT ÷ run's, worst case of their middle halves (`Spread` division), ÷ that
    ratio's median. Lesson 09."""
    a, b = run.summary().output_tokens_per_s, base.summary().output_tokens_per_s
    if not a or not b:
        raise ValueError("both runs need completed requests and a duration")

    def tpot(r: LoadRun) -> Spread:
        paces = [q.tpot_s for q in r.requests if q.ok and q.tpot_s]
        if not paces:
            raise ValueError("a run needs completed requests of two tokens or more")
        return Spread.of(paces)

    pace = tpot(base) / tpot(run)
    ratio = a / b
    return Spread(
        ratio, ratio * pace.low / pace.median, ratio * pace.high / pace.median, pace.runs, True
    )


def arrival_times(n: int, rate_per_s: float, seed: int) -> list[float]:
    """n arrival times of a Poisson process of `rate_per_s` (seconds; the first at 0):
    exponential gaps of mean 1/rate, from `random.Random(seed)`."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        if i:
            t += rng.expovariate(rate_per_s)
        out.append(t)
    return out


def prompt_order(n: int, prompts: list[Prompt], seed: int) -> list[Prompt]:
    """n prompts: the set shuffled by `seed`, repeated as often as needed."""
    order = list(range(len(prompts)))
    random.Random(seed).shuffle(order)
    return [prompts[order[i % len(order)]] for i in range(n)]


def _check_load(
    concurrency, rate, max_concurrency, n_requests, max_duration_s, max_tokens, temperature, seed
) -> None:
    """run_load's settings, each checked: a ServeError naming the bad one and its range."""
    if (concurrency is None) == (rate is None):
        raise ServeError(
            "give either concurrency= (streams kept busy) or rate= (requests "
            "per second), exactly one of them"
        )
    if concurrency is not None:
        checks.whole("concurrency", concurrency, 1, MAX_CONCURRENCY, error=ServeError)
    if rate is not None:
        checks.number("rate", rate, 1e-6, 1e4, error=ServeError)
    if max_concurrency is not None:
        if rate is None:
            raise ServeError(
                "max_concurrency caps a rate= run; with concurrency= it is the concurrency itself"
            )
        checks.whole("max_concurrency", max_concurrency, 1, MAX_CONCURRENCY, error=ServeError)
    checks.whole("n_requests", n_requests, 1, MAX_REQUESTS, error=ServeError)
    checks.number("max_duration_s", max_duration_s, 1e-3, MAX_DURATION_S, error=ServeError)
    if max_tokens is not None:
        checks.whole("max_tokens", max_tokens, 1, 1e6, error=ServeError)
    checks.number("temperature", temperature, 0, 1e3, error=ServeError)
    checks.whole("seed", seed, error=ServeError)


def resolve_workload(
    workload: Optional[Workload], prompts: Any, max_tokens: Optional[int]
) -> Workload:
    """The workload of a run: `workload`, or (the older way) a prompt set with an optional
    answer cap — the shipped set when `prompts` is None."""
    if workload is None:
        if max_tokens is not None:
            checks.whole("max_tokens", max_tokens, 1, 1e6, error=ServeError)
        cap = None if max_tokens is None else Lengths(max_tokens)
        if prompts is None:
            return Workload.shipped(cap)
        return Workload.of_prompts(_prompts(prompts, None), cap)
    if not isinstance(workload, Workload):
        raise ServeError(
            f"workload must be a viz.serve.Workload (e.g. Workload.synthetic(64, "
            f"32)), not {workload!r}"
        )
    if prompts is not None or max_tokens is not None:
        raise ServeError(
            "give the prompts and the answer length in the workload, not also "
            "prompts= or max_tokens= (e.g. Workload.synthetic(64, 32))"
        )
    return workload


def run_load(
    url: Any,
    *,
    concurrency: Optional[int] = None,
    rate: Optional[float] = None,
    max_concurrency: Optional[int] = None,
    n_requests: int = 16,
    max_duration_s: float = 300.0,
    workload: Optional[Workload] = None,
    prompts: Any = None,
    max_tokens: Optional[int] = None,
    seed: int = 0,
    model: Optional[str] = None,
    endpoint: str = "chat",
    temperature: float = 0.0,
    timeouts: Optional[Timeouts] = None,
    slo: Optional[SLO] = None,
    allow_remote: bool = False,
    api_key: Optional[str] = None,
    progress: bool = True,
    label: str = "",
    out: Optional[str] = None,
) -> LoadRun:
    """Load a server with `n_requests` requests and record every one. Lesson 09.

    url: the server's API root ("http://127.0.0.1:8000/v1") or an `EmbeddedServer` (then
        its own timestamps and scheduler steps join the run when it records them).
    concurrency: N streams kept busy — or rate: mean requests per second (Poisson, seeded),
        optionally capped by max_concurrency. Exactly one of the two. With a chat workload
        they count conversations (each sends its turns one after another).
    workload: what to send (`viz.serve.Workload`: synthetic "64 in, 32 out", a JSONL file,
        chats); its tokenizer defaults to the server's model's own. Or, without one,
    prompts: None for the shipped set, or a list of strings / {name, prompt, max_tokens};
    max_tokens: one answer limit for all prompts (None: each prompt's own).
    slo: the objective for goodput (default SLO(): TTFT ≤ 1 s, TPOT ≤ 150 ms).
    out: also save the run there (JSON), whatever happens.

    Every argument and the workload's requests are checked before anything is sent.
    """
    _check_load(
        concurrency,
        rate,
        max_concurrency,
        n_requests,
        max_duration_s,
        max_tokens,
        temperature,
        seed,
    )
    base_url = check_url(url, allow_remote)
    timeouts = timeouts or Timeouts()
    slo = slo or SLO()
    server = server_handle(url)
    w, items = _load_items(server, workload, prompts, max_tokens, n_requests, seed, endpoint)
    jobs = jobs_of(items)
    arrivals = arrival_times(len(jobs), rate, seed) if rate is not None else [0.0] * len(jobs)
    streams = concurrency if rate is None else max_concurrency  # rate mode: the cap, if any
    settings = _load_settings(
        w, rate, streams, n_requests, max_duration_s, seed, temperature, timeouts, slo
    )
    requests = _request_records(items, jobs, arrivals)
    return _drive_load(
        url,
        base_url,
        server,
        settings,
        items,
        jobs,
        requests,
        model,
        endpoint,
        api_key,
        progress,
        label,
        out,
    )


def _drive_load(
    url: Any,
    base_url: str,
    server: Any,
    settings: LoadSettings,
    items: list,
    jobs: list,
    requests: list[RequestRecord],
    model: Optional[str],
    endpoint: str,
    api_key: Optional[str],
    progress: bool,
    label: str,
    out: Optional[str],
) -> LoadRun:
    """`run_load`'s sending: every request of `items` driven (`viz.serve.driver.drive`) with
    `settings` (its timeouts and workload), and the run recorded — also on an interrupt."""
    state: dict[str, Any] = {"t0": None, "t_end": None, "stopped": "", "target": None}
    server_label = server.label if server else ""
    on_failure = (lambda rec: server_note(server, rec, short=True)) if server else None

    async def go() -> None:
        client = make_client(base_url, settings.timeouts, api_key)
        try:
            state["target"] = await resolve_target(client, base_url, model, endpoint, server_label)
            fields, note = await length_fields(server, client, state["target"], settings.workload)
            settings.length_fields, settings.length_note = fields, note
            extra = {f: None for f in fields}
            await drive(client, state, requests, items, jobs, settings, extra, on_failure, progress)
        finally:
            await client.close()

    cpu0 = (now(), time.process_time(), server.cpu_seconds() if server else None)

    def finish() -> LoadRun:
        return _finish(
            url,
            state,
            requests,
            settings,
            cpu0,
            server=server,
            target=Target(base_url, endpoint, model or "", "", server_label),
            label=label,
            out=out,
        )

    def interrupted() -> None:
        state["stopped"] = state["stopped"] or "interrupted (Ctrl-C or a kernel interrupt)"
        finish()

    run_coroutine(go, on_interrupt=interrupted)
    return finish()


def _load_items(
    server: Any,
    workload: Optional[Workload],
    prompts: Any,
    max_tokens: Optional[int],
    n_requests: int,
    seed: int,
    endpoint: str,
) -> tuple[Workload, list]:
    """`run_load`'s workload (a copy, its tokenizer defaulting to the server's model's own) and
    the requests it builds: (workload, items)."""
    w = copy.copy(resolve_workload(workload, prompts, max_tokens))
    if not w.tokenizer and w.kind in ("synthetic", "chat", "file"):
        w.tokenizer = tokenizer_for(server)
    items = w.build(n_requests, seed, endpoint, kv_tokens=kv_pool_tokens(server))
    return w, items


def _load_settings(
    w: Workload,
    rate: Optional[float],
    streams: Optional[int],
    n_requests: int,
    max_duration_s: float,
    seed: int,
    temperature: float,
    timeouts: Timeouts,
    slo: SLO,
) -> LoadSettings:
    """`run_load`'s settings, as the run records them: rate mode where a rate was given, with
    `streams` its cap on concurrent requests, else `streams` kept busy."""
    return LoadSettings(
        mode="rate" if rate is not None else "concurrency",
        concurrency=streams,
        rate_per_s=float(rate) if rate is not None else None,
        n_requests=n_requests,
        max_duration_s=float(max_duration_s),
        seed=seed,
        temperature=float(temperature),
        timeouts=timeouts,
        slo=slo,
        workload=w,
    )


def _request_records(items: list, jobs: list, arrivals: list[float]) -> list[RequestRecord]:
    """One record per request of `items`, each job's first request scheduled at its arrival."""
    run_id = uuid.uuid4().hex[:8]
    requests = [
        RequestRecord(
            index=i,
            request_id=request_id(run_id, i),
            prompt_name=it.name,
            max_tokens=it.max_tokens,
            scheduled_s=0.0,
            prompt_text_tokens=it.text_tokens,
            conversation=it.conversation,
            turn=it.turn,
        )
        for i, it in enumerate(items)
    ]
    for k, job in enumerate(jobs):
        requests[job[0]].scheduled_s = arrivals[k]
    return requests


def _finish(
    url: Any,
    state: dict[str, Any],
    requests: list[RequestRecord],
    settings: LoadSettings,
    cpu0: tuple,
    *,
    server: Any,
    target: Target,
    label: str,
    out: Optional[str],
) -> LoadRun:
    """The run as recorded so far (at its end, or on an interrupt): the server's own timings
    joined in, the cores each side used since `cpu0` (wall, client CPU, server CPU), the
    server's schedule; saved to `out` when given. `target`: when the server named none."""
    t0 = state["t0"]
    wall = now() - cpu0[0]
    if t0 is not None:
        attach_server_timing(url, requests, t0)
    client = ClientInfo.here()
    run = LoadRun(
        target=state["target"] or target,
        settings=settings,
        requests=requests,
        client=client,
        environment=client_environment(client, RUN_SOURCE),
        stopped=state["stopped"],
        server=server.info() if server else None,
        label=label,
    )
    if wall > 0:
        run.client_cores = (time.process_time() - cpu0[1]) / wall
        if server and server.alive:
            run.server_cores = (server.cpu_seconds() - cpu0[2]) / wall
    if t0 is not None and server:
        run.schedule = server.schedule(
            start=t0, end=state["t_end"] or now(), origin=t0, label=label
        )
    if out:
        run.save(out)
    return run


def sweep_load(
    url: Any,
    *,
    concurrencies: Sequence[int] = (1, 4, 8),
    requests_per_stream: int = 2,
    min_requests: int = 4,
    label: str = "",
    **kwargs,
) -> list[LoadRun]:
    """One `run_load` per concurrency (the same seed and workload each time), for the
    throughput/latency chart. Each run sends max(min_requests, N × requests_per_stream)
    requests (with a chat workload, × its turns: that many conversations)."""
    if not concurrencies:
        raise ServeError("concurrencies must list at least one number of streams")
    runs = []
    for c in concurrencies:
        turns = w.turns if isinstance(w := kwargs.get("workload"), Workload) else 1
        n = max(min_requests, c * requests_per_stream) * turns
        runs.append(
            run_load(
                url,
                concurrency=c,
                n_requests=n,
                label=label or (h.label if (h := server_handle(url)) else ""),
                **kwargs,
            )
        )
    return runs
