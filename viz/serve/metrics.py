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

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

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

    # ---- derived figures (definitions: this module's docstring) ----------------------
    @property
    def ok(self) -> bool:
        """Completed: the stream ended normally, with at least one text chunk."""
        return self.error is None and self.end_s is not None and bool(self.token_times_s)

    @property
    def text(self) -> str:
        return "".join(self.token_texts)

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
    def tpot_s(self) -> Optional[float]:
        n = self.n_output_tokens
        if not self.ok or n < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (n - 1)

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
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 \
                    or not math.isfinite(v):
                raise ValueError(f"SLO {name} must be a number of seconds > 0, not {v!r}")

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


def percentiles(values: Sequence[float],
                ps: Sequence[float] = PERCENTILES) -> dict[str, Optional[float]]:
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

    def __str__(self) -> str:
        def fmt(v, scale=1000.0, unit="ms"):
            return "n/a" if v is None else f"{v * scale:.0f} {unit}"

        lines = [f"requests   {self.n_completed} completed, {self.n_failed} failed"
                 + (f" ({', '.join(f'{k}: {n}' for k, n in self.errors.items())})"
                    if self.errors else "")]
        if self.duration_s is not None:
            lines.append(f"duration   {self.duration_s:.1f} s")
        if self.output_tokens_per_s is not None:
            lines.append(f"throughput {self.output_tokens_per_s:.1f} tokens/s "
                         f"({self.output_tokens} output tokens), "
                         f"{self.requests_per_s:.2f} requests per second")
        for name, d in (("TTFT", self.ttft_s), ("ITL", self.itl_s), ("TPOT", self.tpot_s),
                        ("E2E", self.e2e_s)):
            lines.append(f"{name:<10} p50 {fmt(d['p50'])}, p90 {fmt(d['p90'])}, "
                         f"p99 {fmt(d['p99'])}")
        if self.goodput_per_s is not None:
            lines.append(f"goodput    {self.goodput_per_s:.2f} requests per second met the SLO "
                         f"({self.slo}): {self.n_met_slo} of {self.n_completed} completed")
        return "\n".join(lines)


def _stats(values: Sequence[float]) -> dict[str, Optional[float]]:
    out = percentiles(values)
    vals = [v for v in values if v is not None]
    out["mean"] = sum(vals) / len(vals) if vals else None
    return out


def summarize(requests: Sequence[RequestRecord], slo: Optional[SLO] = None) -> LoadSummary:
    """Every figure of a run from its requests (definitions: this module's docstring)."""
    slo = slo or SLO()
    done = [r for r in requests if r.ok]
    failed = [r for r in requests if not r.ok]
    sent = [r for r in requests if r.sent_s is not None]
    ends = [r.end_s for r in sent if r.end_s is not None]
    duration = (max(ends) - min(r.sent_s for r in sent)) if sent and ends else None
    if duration is not None and duration <= 0:
        duration = None
    tokens = sum(r.n_output_tokens for r in done)
    met = sum(1 for r in done if slo.met_by(r))
    errors: dict[str, int] = {}
    for r in failed:
        kind = r.error_kind or "unknown"
        errors[kind] = errors.get(kind, 0) + 1
    return LoadSummary(
        n_requests=len(requests), n_completed=len(done), n_failed=len(failed),
        duration_s=duration, output_tokens=tokens,
        output_tokens_per_s=tokens / duration if duration else None,
        requests_per_s=len(done) / duration if duration else None,
        ttft_s=_stats([r.ttft_s for r in done]),
        itl_s=_stats([g for r in done for g in r.itl_s]),
        tpot_s=_stats([r.tpot_s for r in done]),
        e2e_s=_stats([r.e2e_s for r in done]),
        slo=slo, n_met_slo=met, goodput_per_s=met / duration if duration else None,
        errors=errors)


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


def static_batching_waste(prompt_tokens: Sequence[int], output_tokens: Sequence[int],
                          batch_size: int) -> StaticBatchWaste:
    """What static batching would waste on these requests, taken in order, `batch_size` at a
    time (the last batch may be smaller). Continuous batching wastes neither kind: prompts are
    packed without padding, and a finished request leaves at once. Lesson 09."""
    if len(prompt_tokens) != len(output_tokens) or not prompt_tokens:
        raise ValueError("give one prompt length and one answer length per request (at least one)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number >= 1, not {batch_size!r}")
    useful = padding = idle = 0
    for k in range(0, len(prompt_tokens), batch_size):
        p, o = list(prompt_tokens[k:k + batch_size]), list(output_tokens[k:k + batch_size])
        useful += sum(p) + sum(o)
        padding += sum(max(p) - x for x in p)
        idle += sum(max(o) - x for x in o)
    return StaticBatchWaste(batch_size, useful, padding, idle)
