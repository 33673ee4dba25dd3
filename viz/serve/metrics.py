"""Serving metrics, defined once: what a client of an LLM server measures, and how.

The definitions follow vLLM's serving benchmark (`benchmarks/benchmark_serving.py`, now
`vllm bench serve`) and GuideLLM's metrics documentation, so a figure printed here means what
the same word means there. Every time is measured **by the client**, on its own clock
(`time.perf_counter`), from the moment it sends the request:

- **TTFT** (time to first token): send → arrival of the first chunk that carries generated
  text. It holds everything before the first token: the network, the server's queue,
  tokenization, and prefill. (An opening chunk with only `role: assistant` does not count.)
- **ITL** (inter-token latency): the gaps between consecutive text-carrying chunks of one
  request, as received. N chunks give N − 1 gaps. When a server puts several tokens in one
  chunk (a character split over tokens, tokens batched into one network write), one gap
  covers several tokens — as in vLLM, ITL is per chunk, not per token.
- **TPOT** (time per output token): (E2E − TTFT) / (output tokens − 1), the request's average
  pace after its first token. Output tokens are the server's own count (`usage`) when it sends
  one, else the number of text chunks. vLLM's `tpot`; GuideLLM reports the same average as
  "inter-token latency".
- **E2E** (end-to-end latency): send → end of the stream (the last chunk).
- **TT2T** (time to second token): send → the second text chunk; **normalized TPOT**: E2E ÷
  output tokens, the first token's wait spread over the answer. Beware the names: GuideLLM's
  "time per output token" is this normalized figure, and its "inter-token latency" is the TPOT
  above. `request_metrics` puts them all side by side for the same requests.
- **Output throughput**: output tokens of all completed requests ÷ the run's duration, from
  its first send to its last end. **Request throughput**: completed requests ÷ duration.
- **Goodput** (DistServe, OSDI 2024; vLLM's `--goodput`): completed requests per second that
  met a service-level objective (`SLO`): TTFT ≤ `ttft_s` and TPOT ≤ `tpot_s` (and E2E ≤
  `e2e_s` when set). Throughput counts every token; goodput counts only the users who were
  served well.
- **Percentiles** (p50, p90, p99): numpy's linear interpolation, as vLLM. TTFT, TPOT and E2E are
  taken over requests; ITL over every gap of every request pooled together.

Failed requests are kept in a run, with their reason, but count in no latency or throughput
figure; the summary says how many failed. Units are in the names: `_s` seconds, `_per_s` per
second. Introduced in lesson 09 (Serving many users).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from viz import checks
from viz.spread import TOO_CLOSE, Band, Spread, band  # noqa: F401 (Band, band: re-exported)

PERCENTILES = (50, 90, 99)


@dataclass
class ServerTiming:
    """The server's own clock for one request (only from a server started with `record=True`:
    `viz.serve.EmbeddedServer`, whose probe reads transformers' per-token timestamps).

    Seconds from the run's start, on the same monotonic clock as the client (both processes
    run on one machine: `time.perf_counter` is CLOCK_MONOTONIC on Linux).
    """

    received_s: float  # the server handed the tokenized request to its generation manager
    started_s: Optional[float]  # left the queue: first scheduled (prefill began)
    token_times_s: list[float]  # when each output token was produced (after its forward pass)
    finished_s: Optional[float]  # the request finished (or failed) inside the server
    prompt_tokens: int  # tokens of the prompt as the server tokenized it (chat template applied)


@dataclass
class RequestRecord:
    """One request of a run, as its client saw it. Times are seconds from the run's start."""

    index: int  # order in the run (0 = the first one scheduled)
    request_id: str  # sent as the X-Request-ID header (transformers serve and vLLM use it)
    prompt_name: str  # which prompt of the set ("" for a prompt given directly)
    max_tokens: int  # the answer-length limit sent with the request
    scheduled_s: float  # when the load generator meant to send it (its arrival time)
    sent_s: Optional[float] = None  # when the client sent it (None: never sent)
    token_times_s: list[float] = field(default_factory=list)  # arrival of each text chunk
    token_texts: list[str] = field(default_factory=list)  # the text each chunk carried
    end_s: Optional[float] = None  # when the stream ended (its last chunk, or the error)
    finish_reason: Optional[str] = None  # "stop", "length", ... as the server said
    prompt_tokens: Optional[int] = None  # the server's usage count, when it sends one
    output_tokens: Optional[int] = None  # likewise for the answer
    logprobs: Optional[list[float]] = None  # chosen-token log-probabilities, when sent
    error: Optional[str] = None  # None: completed; else what went wrong and the fix
    error_kind: Optional[str] = None  # connection, timeout, http, protocol, server, cancelled
    http_status: Optional[int] = None  # the response's HTTP status, when one came
    server: Optional[ServerTiming] = None  # the server's own timestamps, when recorded
    # The workload's side (viz.serve.workload): the prompt's own tokens by the workload's
    # tokenizer (no chat template; a chat turn: its new message only), None where not counted;
    # in a chat workload, which conversation and which turn of it.
    prompt_text_tokens: Optional[int] = None
    conversation: Optional[int] = None
    turn: Optional[int] = None

    # ---- derived figures (definitions: this module's docstring) ----------------------
    @property
    def ok(self) -> bool:
        """Completed: the stream ended normally, with at least one text chunk."""
        return self.error is None and self.end_s is not None and bool(self.token_times_s)

    @property
    def text(self) -> str:
        return "".join(self.token_texts)

    @property
    def stopped_early(self) -> bool:
        """Completed with fewer tokens than asked: the engine stopped at the model's end of
        text (finish_reason "stop") before `max_tokens`."""
        return self.ok and self.finish_reason == "stop" and self.n_output_tokens < self.max_tokens

    @property
    def n_output_tokens(self) -> int:
        """The server's token count when it sent one, else the number of text chunks."""
        return self.output_tokens if self.output_tokens is not None else len(self.token_times_s)

    @property
    def ttft_s(self) -> Optional[float]:
        if self.sent_s is None or not self.token_times_s:
            return None
        return self.token_times_s[0] - self.sent_s

    @property
    def e2e_s(self) -> Optional[float]:
        if self.sent_s is None or self.end_s is None:
            return None
        return self.end_s - self.sent_s

    @property
    def itl_s(self) -> list[float]:
        t = self.token_times_s
        return [b - a for a, b in zip(t, t[1:])]

    @property
    def mean_itl_s(self) -> Optional[float]:
        gaps = self.itl_s
        return sum(gaps) / len(gaps) if self.ok and gaps else None

    @property
    def tpot_s(self) -> Optional[float]:
        n = self.n_output_tokens
        if not self.ok or n < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (n - 1)

    @property
    def tt2t_s(self) -> Optional[float]:
        """Time to second token: send → the second text chunk (the first decode step seen from
        outside, on top of TTFT). None for a request with fewer than two chunks."""
        if self.sent_s is None or len(self.token_times_s) < 2:
            return None
        return self.token_times_s[1] - self.sent_s

    @property
    def ntpot_s(self) -> Optional[float]:
        """Normalized TPOT: E2E ÷ output tokens, the first token's wait spread over the answer
        (the vLLM paper's "normalized latency"; GuideLLM's `time_per_output_token`)."""
        n = self.n_output_tokens
        if not self.ok or n < 1:
            return None
        return self.e2e_s / n

    @property
    def waited_s(self) -> Optional[float]:
        """Send → the server started it (queue + HTTP + tokenization); needs server timing."""
        if self.server is None or self.server.started_s is None or self.sent_s is None:
            return None
        return self.server.started_s - self.sent_s


@dataclass
class SLO:
    """A service-level objective: what "served well" means for one request (see goodput)."""

    ttft_s: float = 1.0  # the first token within this long
    tpot_s: float = 0.150  # then, on average, a token at least this often (mean ITL)
    e2e_s: Optional[float] = None  # and the whole answer within this long (None: no limit)

    def __post_init__(self):
        for name in ("ttft_s", "tpot_s", "e2e_s"):
            v = getattr(self, name)
            if v is None and name == "e2e_s":
                continue
            checks.positive(f"SLO {name}", v, noun="a number of seconds")

    def met_by(self, r: RequestRecord) -> bool:
        """The request completed, and within every limit. A one-token answer has no TPOT:
        only its TTFT (and E2E) are checked."""
        if not r.ok or r.ttft_s > self.ttft_s:
            return False
        tpot = r.tpot_s
        if tpot is not None and tpot > self.tpot_s:
            return False
        return self.e2e_s is None or r.e2e_s <= self.e2e_s

    def __str__(self) -> str:
        parts = [f"TTFT ≤ {self.ttft_s * 1000:.0f} ms", f"TPOT ≤ {self.tpot_s * 1000:.0f} ms"]
        if self.e2e_s is not None:
            parts.append(f"E2E ≤ {self.e2e_s:.1f} s")
        return " and ".join(parts)


def percentiles(
    values: Sequence[float], ps: Sequence[float] = PERCENTILES
) -> dict[str, Optional[float]]:
    """{"p50": ..., "p90": ..., "p99": ...} by linear interpolation (numpy's default, as vLLM);
    None for each when there are no values."""
    import numpy as np

    vals = [v for v in values if v is not None]
    if not vals:
        return {f"p{p:g}": None for p in ps}
    arr = np.asarray(vals, dtype=float)
    return {f"p{p:g}": float(np.percentile(arr, p)) for p in ps}


@dataclass
class LoadSummary:
    """The figures of one load run (definitions: this module's docstring)."""

    n_requests: int  # requests scheduled
    n_completed: int
    n_failed: int
    duration_s: Optional[float]  # first send → last end
    output_tokens: int  # of completed requests
    output_tokens_per_s: Optional[float]
    requests_per_s: Optional[float]
    ttft_s: dict[str, Optional[float]]  # {"p50", "p90", "p99", "mean"}
    itl_s: dict[str, Optional[float]]
    tpot_s: dict[str, Optional[float]]
    e2e_s: dict[str, Optional[float]]
    slo: SLO
    n_met_slo: int
    goodput_per_s: Optional[float]  # requests per second that met the SLO
    errors: dict[str, int]  # error kind → count
    workload: str = ""  # what was sent, in words ("64 tokens in, 32 out"; viz.serve.Workload)
    answer_tokens: dict[str, Optional[float]] = field(default_factory=dict)  # got, completed
    asked_tokens: dict[str, Optional[float]] = field(default_factory=dict)  # max_tokens asked
    n_stopped_early: int = 0  # completed requests that ended before the length asked
    shortest_early: Optional[int] = None  # the shortest of those answers (tokens)

    def __str__(self) -> str:
        def fmt(v, scale=1000.0, unit="ms"):
            return "n/a" if v is None else f"{v * scale:.0f} {unit}"

        lines = [f"workload   {self.workload}"] if self.workload else []
        lines += [
            f"requests   {self.n_completed} completed, {self.n_failed} failed"
            + (
                f" ({', '.join(f'{k}: {n}' for k, n in self.errors.items())})"
                if self.errors
                else ""
            )
        ]
        if self.duration_s is not None:
            lines.append(f"duration   {self.duration_s:.1f} s")
        if self.output_tokens_per_s is not None:
            lines.append(
                f"throughput {self.output_tokens_per_s:.1f} tokens/s "
                f"({self.output_tokens} output tokens), "
                f"{self.requests_per_s:.2f} requests per second"
            )
        for name, d in (
            ("TTFT", self.ttft_s),
            ("ITL", self.itl_s),
            ("TPOT", self.tpot_s),
            ("E2E", self.e2e_s),
        ):
            lines.append(
                f"{name:<10} p50 {fmt(d['p50'])}, p90 {fmt(d['p90'])}, p99 {fmt(d['p99'])}"
            )
        if self.n_stopped_early:
            lines.append(
                f"answers    asked p50 {self.asked_tokens['p50']:g} tokens, got p50 "
                f"{self.answer_tokens['p50']:g}: {self.n_stopped_early} of "
                f"{self.n_completed} stopped early at the model's end of text "
                f"(shortest {self.shortest_early})"
            )
        if self.goodput_per_s is not None:
            lines.append(
                f"goodput    {self.goodput_per_s:.2f} requests per second met the SLO "
                f"({self.slo}): {self.n_met_slo} of the {self.n_completed} completed "
                f"request{'' if self.n_completed == 1 else 's'}"
            )
        return "\n".join(lines)


def _stats(values: Sequence[float]) -> dict[str, Optional[float]]:
    out = percentiles(values)
    vals = [v for v in values if v is not None]
    out["mean"] = sum(vals) / len(vals) if vals else None
    return out


def summarize(
    requests: Sequence[RequestRecord], slo: Optional[SLO] = None, workload: str = ""
) -> LoadSummary:
    """Every figure of a run from its requests (definitions: this module's docstring), and the
    answers' lengths: asked, got, and how many stopped early (`RequestRecord.stopped_early`)."""
    slo = slo or SLO()
    done = [r for r in requests if r.ok]
    failed = [r for r in requests if not r.ok]
    sent = [r for r in requests if r.sent_s is not None]
    ends = [r.end_s for r in sent if r.end_s is not None]
    duration = (max(ends) - min(r.sent_s for r in sent)) if sent and ends else None
    if duration is not None and duration <= 0:
        duration = None
    tokens = sum(r.n_output_tokens for r in done)
    early = [r.n_output_tokens for r in done if r.stopped_early]
    met = sum(1 for r in done if slo.met_by(r))
    errors: dict[str, int] = {}
    for r in failed:
        kind = r.error_kind or "unknown"
        errors[kind] = errors.get(kind, 0) + 1
    return LoadSummary(
        n_requests=len(requests),
        n_completed=len(done),
        n_failed=len(failed),
        duration_s=duration,
        output_tokens=tokens,
        output_tokens_per_s=tokens / duration if duration else None,
        requests_per_s=len(done) / duration if duration else None,
        ttft_s=_stats([r.ttft_s for r in done]),
        itl_s=_stats([g for r in done for g in r.itl_s]),
        tpot_s=_stats([r.tpot_s for r in done]),
        e2e_s=_stats([r.e2e_s for r in done]),
        slo=slo,
        n_met_slo=met,
        goodput_per_s=met / duration if duration else None,
        errors=errors,
        workload=workload,
        answer_tokens=percentiles([r.n_output_tokens for r in done]),
        asked_tokens=percentiles([r.max_tokens for r in done]),
        n_stopped_early=len(early),
        shortest_early=min(early) if early else None,
    )


# ---- the per-request metrics side by side ----------------------------------------------------
# (name, RequestRecord attribute, definition, where the peers' words differ). The same requests
# give every column, so a reader sees how far apart metrics with similar names are.
REQUEST_METRICS = (
    (
        "TTFT",
        "ttft_s",
        "send → first text chunk (queue, prefill, network)",
        "the same in vLLM, GuideLLM and aiperf",
    ),
    (
        "TT2T",
        "tt2t_s",
        "send → second text chunk: TTFT plus the first decode step",
        "aiperf's time to second token",
    ),
    (
        "ITL (mean)",
        "mean_itl_s",
        "mean gap between the request's text chunks",
        "vLLM's ITL is per gap, pooled over requests; one chunk may hold several tokens",
    ),
    (
        "TPOT",
        "tpot_s",
        "(E2E − TTFT) ÷ (output tokens − 1): the pace after the first token",
        "vLLM's TPOT; GuideLLM calls this 'inter-token latency'",
    ),
    (
        "normalized TPOT",
        "ntpot_s",
        "E2E ÷ output tokens: the wait for the first token included",
        "GuideLLM's 'time per output token'; the vLLM paper's normalized latency",
    ),
    ("E2E", "e2e_s", "send → end of the stream", "vLLM's E2EL, GuideLLM's request latency"),
)


def request_metrics(requests: Sequence[RequestRecord]) -> list[dict[str, Any]]:
    """One row per completed request, every metric of `REQUEST_METRICS` (seconds) beside its
    prompt's name and token counts: the metrics side by side for the same requests."""
    rows = []
    for r in sorted(requests, key=lambda q: q.index):
        if not r.ok:
            continue
        row: dict[str, Any] = {
            "request": r.index,
            "prompt": r.prompt_name,
            "prompt tokens": r.prompt_tokens,
            "output tokens": r.n_output_tokens,
        }
        for name, attr, _, _ in REQUEST_METRICS:
            row[name] = getattr(r, attr)
        rows.append(row)
    return rows


def request_metrics_text(requests: Sequence[RequestRecord]) -> str:
    """`request_metrics` as a table in milliseconds, then each metric's definition."""
    rows = request_metrics(requests)
    if not rows:
        raise ValueError("no completed request: nothing to tabulate")
    names = [m[0] for m in REQUEST_METRICS]
    head = f"{'request':>7} {'prompt':>6} {'out':>4} " + " ".join(f"{n:>15}" for n in names)
    lines = [head + "   (ms; prompt and out: tokens)"]
    for row in rows:
        cells = " ".join(
            f"{'n/a':>15}" if row[n] is None else f"{row[n] * 1e3:15.0f}" for n in names
        )
        lines.append(
            f"{row['request']:>7} {row['prompt tokens'] or 0:>6} {row['output tokens']:>4} {cells}"
        )
    lines.append("")
    lines += [f"{n:>15}: {d} ({peers})" for n, _, d, peers in REQUEST_METRICS]
    return "\n".join(lines)


@dataclass
class StaticBatchWaste:
    """Token slots of static batching (lesson 06): each batch starts together, pads every
    prompt to its longest, and keeps every row until its longest answer is done."""

    batch_size: int
    useful_slots: int  # prompt tokens + answer tokens: real work
    padding_slots: int  # prompt positions filled with padding up to the batch's longest prompt
    idle_slots: int  # decode steps a finished row stays in the batch, waiting for the longest

    @property
    def wasted_fraction(self) -> float:
        total = self.useful_slots + self.padding_slots + self.idle_slots
        return (self.padding_slots + self.idle_slots) / total if total else 0.0


def static_batching_waste(
    prompt_tokens: Sequence[int], output_tokens: Sequence[int], batch_size: int
) -> StaticBatchWaste:
    """What static batching would waste on these requests, taken in order, `batch_size` at a
    time (the last batch may be smaller). Continuous batching wastes neither kind: prompts are
    packed without padding, and a finished request leaves at once. Lesson 09."""
    if len(prompt_tokens) != len(output_tokens) or not prompt_tokens:
        raise ValueError("give one prompt length and one answer length per request (at least one)")
    checks.whole("batch_size", batch_size, 1)
    useful = padding = idle = 0
    for k in range(0, len(prompt_tokens), batch_size):
        p, o = list(prompt_tokens[k : k + batch_size]), list(output_tokens[k : k + batch_size])
        useful += sum(p) + sum(o)
        padding += sum(max(p) - x for x in p)
        idle += sum(max(o) - x for x in o)
    return StaticBatchWaste(batch_size, useful, padding, idle)


# ---- where a run's inter-token latency went -------------------------------------------------
ITL_PARTS = ("decode passes", "passes with prompt chunks", "on the way to the client")


@dataclass
class ITLBreakdown:
    """One run's gaps between tokens, taken apart with the server's own record (a run made on
    `EmbeddedServer(record=True)`: its per-token timestamps and its scheduler's passes).

    Each gap between two tokens of a request, on the server's clock, ends with the forward pass
    that produced the later token: a **decode pass** (every request in it brings one token) or
    a pass that also carries **a chunk of some prompt** (a request that arrived and is being
    prefilled, lesson 03, chunked under the token budget). A gap is that pass plus the little
    time between it and the pass before (the scheduler choosing the batch). The client reads
    each token a little after the server made it (streaming, the loopback network, the
    client's own work): a delay that stays the same adds nothing to the gaps, one that grows
    from token to token does, and that growth is the part **on the way to the client**. It is
    a difference between two clocks' gaps, so where the delay holds still it comes out near
    zero, a little below as often as above.

    Only requests whose every token reached the client as a chunk of its own are counted (two
    tokens sent as one chunk would pair a client gap with the wrong pass); the end-of-text
    token, which the server makes but never streams, is left out of the gaps. Over them the means add up exactly:
    mean ITL = mean decode-pass gap + what passes with prompt chunks add (their share of the
    gaps × how much longer they were) + the part on the way to the client. Medians and spreads
    (`viz.Spread`, seconds) show the typical gap of each kind. Lesson 09.
    """

    load: str  # the run's load in words ("8 streams")
    requests: int  # requests counted (every token one chunk, the server's record complete)
    completed: int  # requests of the run that completed
    itl: Spread  # the counted requests' gaps between tokens, as the client received them
    decode_gap: Optional[Spread]  # server gaps that ended with a decode pass
    decode_batch: Optional[float]  # median number of requests in those decode passes
    chunk_gap: Optional[Spread]  # server gaps that ended with a pass carrying a prompt chunk
    chunk_share: float  # the share of server gaps that did
    to_client: Spread  # client arrival − server token time, per token
    parts_s: dict[str, float]  # ITL_PARTS → its part of the mean ITL (seconds)
    client_cores: Optional[float] = None  # cores the client kept busy on average (LoadRun)
    server_cores: Optional[float] = None  # likewise for the server's processes

    @property
    def mean_itl_s(self) -> float:
        return sum(self.parts_s.values())

    def growth_from(self, base: "ITLBreakdown") -> dict[str, float]:
        """How much each part of the mean ITL grew (seconds) from `base` (e.g. 1 stream) to
        this run: the three sum to the growth of the mean ITL."""
        return {k: self.parts_s[k] - base.parts_s[k] for k in ITL_PARTS}

    def __str__(self) -> str:
        def ms(s: Optional[Spread]) -> str:
            return "n/a" if s is None else s.text(1e3, "ms", runs=False)

        some = (
            f", {self.requests} of {self.completed} requests"
            if self.requests < self.completed
            else ""
        )
        lines = [
            f"{self.load}{some}: ITL {ms(self.itl)}, mean {self.mean_itl_s * 1e3:.1f} ms, of which"
        ]
        batch = (
            ""
            if self.decode_batch is None
            else f", {self.decode_batch:g} request{'' if self.decode_batch == 1 else 's'} per pass"
        )

        def part(k: int) -> str:  # a part that rounds to zero prints 0.0, not -0.0
            v = round(self.parts_s[ITL_PARTS[k]] * 1e3, 1)
            return f"{v + 0.0:6.1f} ms"

        lines.append(f"  decode passes              {part(0)} (gap {ms(self.decode_gap)}{batch})")
        lines.append(
            f"  passes with prompt chunks  {part(1)} "
            f"({self.chunk_share:.0%} of the gaps, gap {ms(self.chunk_gap)})"
        )
        lines.append(
            f"  on the way to the client   {part(2)} "
            f"(each token read {ms(self.to_client)} after the server made it)"
        )
        if self.client_cores is not None:
            server = (
                f", the server {self.server_cores:.2f}" if self.server_cores is not None else ""
            )
            lines.append(f"  cores kept busy: the client {self.client_cores:.2f}{server}")
        return "\n".join(lines)


def itl_breakdown(
    requests: Sequence[RequestRecord],
    schedule: Any,
    load: str = "",
    client_cores: Optional[float] = None,
    server_cores: Optional[float] = None,
) -> ITLBreakdown:
    """Take a run's ITL apart (see `ITLBreakdown`): `requests` with server timing and the
    `schedule` (a `viz.serve.Schedule`) the same server recorded over the run."""
    import numpy as np

    if schedule is None:
        raise ValueError(
            "this run has no scheduler record: run it on "
            "EmbeddedServer(record=True) to take its ITL apart"
        )
    producing: dict[str, list[Any]] = {}  # request id → the passes that gave it a token
    for step in schedule.steps:
        for e in step.batch:
            if e.new_token:
                producing.setdefault(e.request_id, []).append(step)
    done = [r for r in requests if r.ok]
    client, decode, chunk, batch, lag, counted = [], [], [], [], [], 0
    for r in done:
        times = r.server.token_times_s if r.server is not None else []
        steps = producing.get(r.request_id, [])
        if len(steps) != len(times):
            continue  # the record does not cover this request whole
        if r.finish_reason == "stop" and len(r.token_times_s) == len(times) - 1:
            times, steps = times[:-1], steps[:-1]  # the end-of-text token is never streamed
        if len(times) < 2 or len(r.token_times_s) != len(times):
            continue
        counted += 1
        client += r.itl_s
        lag += [c - s for c, s in zip(r.token_times_s, times)]
        for a, b, step in zip(times, times[1:], steps[1:]):
            if any(e.phase == "prefill" for e in step.batch):
                chunk.append(b - a)
            else:
                decode.append(b - a)
                batch.append(len(step.batch))
    if not counted:
        raise ValueError(
            "no completed request of two tokens or more whose every token the "
            "client read as one chunk and the server's record covers"
        )
    gaps = decode + chunk
    mean_gap, mean_decode = float(np.mean(gaps)), float(np.mean(decode)) if decode else 0.0
    parts = {
        ITL_PARTS[0]: mean_decode,
        ITL_PARTS[1]: mean_gap - mean_decode,
        ITL_PARTS[2]: float(np.mean(client)) - mean_gap,
    }
    return ITLBreakdown(
        load=load,
        requests=counted,
        completed=len(done),
        itl=Spread.of(client),
        decode_gap=Spread.of(decode) if decode else None,
        decode_batch=float(np.median(batch)) if batch else None,
        chunk_gap=Spread.of(chunk) if chunk else None,
        chunk_share=len(chunk) / len(gaps),
        to_client=Spread.of(lag),
        parts_s=parts,
        client_cores=client_cores,
        server_cores=server_cores,
    )


def decode_pass_time(schedule: Any, batch_size: int) -> Spread:
    """The passes of a recorded schedule that decode `batch_size` requests and nothing else,
    each timed from the end of the pass before it to its own end (what a decoding request
    waits between two tokens, as `ITLBreakdown`'s decode gaps): median and middle half.
    Lesson 09 compares it with lesson 06's decode step."""
    steps = schedule.steps
    gaps = [
        b.end_s - a.end_s
        for a, b in zip(steps, steps[1:])
        if len(b.batch) == batch_size and all(e.phase == "decode" for e in b.batch)
    ]
    if not gaps:
        raise ValueError(
            f"no pass of this schedule decodes exactly {batch_size} requests and "
            "nothing else: record one with that many requests decoding together"
        )
    return Spread.of(gaps)


# ---- a measured ratio put in one of a few ranges: `viz.spread.band` (re-exported here) ---------
