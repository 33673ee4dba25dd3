"""What a token costs: dollars per million tokens, from a measured throughput and a price per hour.

    from viz import perf
    bill = perf.cost(perf.load_reference("cpu-batch-sweep"), price_per_hour=0.10)
    print(bill)          # per batch size: $/Mtok out and in, and the wait each costs a user
    bill.best()          # the row where an output token is cheapest

A machine rented by the hour costs the same whether it works or waits, so a token's price is
the hour's price shared over the tokens made in that hour:

    $ per million tokens = price per hour ÷ (tokens per second × 3,600) × 1,000,000

**Output and input are priced apart**, each from its own measured throughput, as providers
quote them. A prompt is prefilled in one pass for all its tokens (lesson 03); an answer is made
one pass per token (lesson 04), so an input token costs far less machine time. Where a
document measures the two phases apart, each price charges its phase's time only, and the two
bills add up to the machine's time; where it cannot, the output price charges all of it:

- **batch-size `Sweep`** (lesson 06). Output: B ÷ `decode_step_s`, the decode alone. Input:
  B × `prompt_tokens` ÷ `ttft_s`, the batch's prefill (until every request had its first
  token). The two add up to the batch's time, the first token riding with the prefill.
- **GPU busy `Sweep`** (`gpu_reference("busy-sweep", ...)`). Output: B ÷ `gpu_busy_s`, the
  GPU's own time (or its wall clock, `clock="wall"`). Input: not measured.
- **`LoadRun`** (lesson 10). Output: its output tokens ÷ its duration, **all-in**: every second
  of the run, its prefills, idle moments and HTTP included, is paid by the answers. Input:
  the prompt tokens computed ÷ the time of the server's passes that carried prompt chunks and
  nothing else (scheduler start → tokens handed out; its scheduler record,
  `serve(record=True)`); tokens found in shared pages are not computed, and not counted. Its
  output price so already pays for its prompts: a bound, not a split.
- **`LoadSweep`**: per load, the median over its runs of the same; its runs' passes pooled.
- **a `Spread` of tokens/s**: output as given. Input: not measured.
- **a `Trace`** (`viz.record`, one reply), or a list of them: one request alone, a row each.
  Output: 1 ÷ the gaps between its tokens (the middle half of the gaps as the spread). Input:
  its prompt tokens ÷ its TTFT (tokenizing, the prefill pass and the first token's choice).
  The two add up to the reply's whole time, the first token riding with the prefill.

`prefill=` a prompt-length `Sweep` (lesson 03, or `gpu_reference("prompt-sweep", ...)`) prices
input instead from its longest prompt: prompt tokens ÷ `prefill_forward_s`. Where nothing
measured the prefill, there is no input price (None, and `input_how` says why): it is never
guessed from the output's.

**Cached input.** `prefix=` a prefix-cache `Sweep` (`perf.prefix_cache_sweep`, lesson 11)
prices a token whose keys and values were already cached. Of a prompt of n tokens whose first
k are cached, the pass over the other n − k took `ttft_cached_s` = C against `ttft_full_s` = F
for the whole prompt. Billing the n − k new tokens at the fresh rate, F ÷ n seconds each, the
k cached tokens pay for what is left: (C − F × (n − k) ÷ n) ÷ k seconds each (attending to
them, and their share of the pass's fixed cost). Both at the same prompt length, so
`cached ÷ input` is how much cheaper a cached token is.

**Spreads.** Every price carries its throughput's spread (`viz.spread.Spread`: median, and the
worst case of the middle halves at each end). A `LoadRun` is one figure; its spread comes from
its requests' paces (TPOT middle half), as `serve.throughput_ratio` takes it.

**Prices.** `price_per_hour` is yours to type: what you pay for the machine. `EXAMPLE_PRICES`
holds two examples to start from, not quotes: check your provider's page for today's price.
Lesson 10 (Serving many users); `python -m viz cost FILE --price-per-hour P`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

from viz import checks
from viz.perf.table import Sweep
from viz.runtime import short_device_name
from viz.spread import TOO_CLOSE, Spread

PER_MILLION = 1e6  # tokens in the unit prices are quoted per
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class ExamplePrice:
    """An example price of renting a machine: a starting point to type over, never a quote."""

    per_hour: float  # US dollars per hour
    machine: str  # what is rented
    source: str  # where prices like it were published
    as_of: str  # when they were


# EXAMPLES, written from the providers' public on-demand price lists as the author remembered
# them (no lookup was made, and none is made at run time). Prices change: type your own.
EXAMPLE_PRICES: dict[str, ExamplePrice] = {
    "cpu-vm": ExamplePrice(
        0.10,
        "a cloud VM with 2 vCPUs and 8 GB, like the one this course was written on",
        "on-demand list prices of 2-vCPU general-purpose VMs, e.g. AWS EC2 t3.large $0.0832/h "
        "(us-east-1), Google Cloud e2-standard-2 $0.067/h (us-central1); rounded up",
        "2024",
    ),
    "h200": ExamplePrice(
        3.50,
        "one NVIDIA H200 GPU (one eighth of an 8-GPU server, its host included)",
        "GPU clouds' on-demand per-GPU prices for the H200, which ranged from about $2.50 to "
        "$4.00 an hour (e.g. Nebius, Runpod)",
        "2024–2025",
    ),
}


@dataclass
class CostRow:
    """One setting's prices and the latency it costs. Money in US dollars."""

    setting: str  # "batch 4", "4 streams", "one at a time", ...
    x: Optional[float]  # the setting as a number: batch size, streams, requests in flight
    output_tokens_per_s: Spread
    output_per_mtok: Spread  # $ per million output tokens
    input_tokens_per_s: Optional[Spread] = None  # None: the prefill was not measured apart
    input_per_mtok: Optional[Spread] = None  # $ per million input (prompt) tokens
    ttft_s: Optional[Spread] = None  # time to first token: median and middle half
    tpot_s: Optional[Spread] = None  # time per output token (a batch sweep: its decode step)


@dataclass
class CachedRow:
    """A prompt with a share of it already in the KV cache (`prefix=`; module docstring)."""

    share: float  # of the prompt cached: k ÷ n
    prompt_tokens: int  # n
    cached_tokens: int  # k
    speedup: Spread  # ttft_full_s ÷ ttft_cached_s
    input_per_mtok: Spread  # a fresh prompt token at this length: price × F ÷ n
    cached_per_mtok: Spread  # a cached one: price × (C − F × (n − k) ÷ n) ÷ k

    @property
    def ratio(self) -> float:
        """A cached token's price ÷ a fresh one's (medians)."""
        return self.cached_per_mtok.median / self.input_per_mtok.median

    def text(self) -> str:
        """e.g. "90% of a 128-token prompt cached (first token ×3.1 sooner): a cached token
        $0.0081 per million (…), a fresh one $0.0412: 20% of its price"."""
        return (
            f"{self.share:.0%} of a {self.prompt_tokens:,}-token prompt cached (first token "
            f"×{self.speedup.median:.1f} sooner): a cached token "
            f"{_spread(self.cached_per_mtok, usd)} per million, a fresh one "
            f"{usd(self.input_per_mtok.median)}: {self.ratio:.0%} of its price"
        )


@dataclass
class Cost:
    """Prices per million tokens of one measurement at one price per hour (`cost`)."""

    price_per_hour: float  # US dollars
    price_note: str  # where the price came from: typed, or an example's source and date
    name: str  # the measurement, short: label, model, device
    source: str  # the measurement in full
    x_name: str  # what `CostRow.x` counts
    output_how: str  # how output tokens/s were read
    input_how: str  # how input tokens/s were read, or why there are none
    rows: list[CostRow]
    cached: list[CachedRow] = field(default_factory=list)
    cached_how: str = ""

    def best(self) -> CostRow:
        """The row whose output token is cheapest (lowest median)."""
        return min(self.rows, key=lambda r: r.output_per_mtok.median)

    def table(self) -> str:
        """One line per row: throughput, $/Mtok out and in, TTFT and TPOT (medians, and in
        brackets the spread), then the cached-input prices."""
        head = [
            "setting",
            self.x_name,
            "out tokens/s",
            "$/Mtok out",
            "in tokens/s",
            "$/Mtok in",
            "TTFT",
            "TPOT",
        ]
        cells = [
            [
                r.setting,
                "" if r.x is None else f"{r.x:g}" if r.x >= 10 else f"{r.x:.2g}",
                _spread(r.output_tokens_per_s, _num),
                _spread(r.output_per_mtok, usd),
                _spread(r.input_tokens_per_s, _num),
                _spread(r.input_per_mtok, usd),
                _ms(r.ttft_s),
                _ms(r.tpot_s),
            ]
            for r in self.rows
        ]
        if self.x_name != "in flight":  # the setting names it already
            head, cells = head[:1] + head[2:], [c[:1] + c[2:] for c in cells]
        lines = _columns(head, cells)
        if self.cached:
            lines += ["", f"cached input: {self.cached_how}"]
            lines += _columns(
                ["cached", "speed-up", "$/Mtok fresh", "$/Mtok cached", "cached ÷ fresh"],
                [
                    [
                        f"{c.share:.0%}",
                        c.speedup.text(1, "×", 1, runs=False),
                        _spread(c.input_per_mtok, usd),
                        _spread(c.cached_per_mtok, usd),
                        f"{c.ratio:.0%}",
                    ]
                    for c in self.cached
                ],
            )
        return "\n".join(lines)

    def verdict(self) -> str:
        """The cheapest output token against the first row's, and what it costs in latency;
        too close to call where their spreads overlap."""
        first, best = self.rows[0], self.best()
        if best is not first and best.output_per_mtok.overlaps(first.output_per_mtok):
            return (
                f"cheapest output token: {TOO_CLOSE} between {first.setting} and "
                f"{best.setting} ({usd(first.output_per_mtok.median)} and "
                f"{usd(best.output_per_mtok.median)} per million: their spreads overlap)"
            )
        text = (
            f"cheapest output token: {best.setting}, {usd(best.output_per_mtok.median)} per million"
        )
        if best is not first:
            text += (
                f", ×{first.output_per_mtok.median / best.output_per_mtok.median:.1f} "
                f"cheaper than {first.setting}"
            )
            if best.tpot_s is not None and first.tpot_s is not None:
                text += (
                    f", each user waiting ×{best.tpot_s.median / first.tpot_s.median:.1f} "
                    f"as long per token (TPOT {best.tpot_s.median * 1e3:.0f} ms against "
                    f"{first.tpot_s.median * 1e3:.0f} ms)"
                )
        return text

    def __str__(self) -> str:
        return (
            f"$ per million tokens at {usd(self.price_per_hour)} an hour "
            f"({self.price_note})\n{self.source}\noutput: {self.output_how}\n"
            f"input:  {self.input_how}\n{self.table()}\n{self.verdict()}"
        )


# ---- the arithmetic ----------------------------------------------------------------------------
def per_million(tokens_per_s: Union[Spread, float], price_per_hour: float) -> Spread:
    """$ per million tokens = price per hour ÷ (tokens/s × 3,600) × 1,000,000, with the
    throughput's spread carried along (a faster end makes a cheaper one)."""
    return Spread.coerce(tokens_per_s).rate(price_per_hour / SECONDS_PER_HOUR * PER_MILLION)


def check_price(price_per_hour: Any) -> tuple[float, str]:
    """(dollars per hour, where the price came from): a positive number, or an ExamplePrice."""
    if isinstance(price_per_hour, ExamplePrice):
        p = price_per_hour
        return p.per_hour, f"an EXAMPLE for {p.machine}: {p.source}, {p.as_of}; type yours"
    checks.positive(
        "the price per hour",
        price_per_hour,
        what="a positive number of dollars",
        fix="type what your machine costs an hour, e.g. 0.10 for a 2-vCPU cloud VM; "
        "viz.perf.EXAMPLE_PRICES has examples",
    )
    return float(price_per_hour), "the price you typed"


# ---- reading throughput from each kind of measurement -------------------------------------------
def _sweep_name(sweep: Sweep) -> tuple[str, str]:
    """(a short name for legends, the measurement in full)."""
    random = " (random weights)" if sweep.model.random_weights else ""
    env = sweep.environment
    device = short_device_name(env.device_name or env.device)
    label = sweep.label
    parts = [label] if label else []
    parts.append(sweep.model.name + ("" if "random weights" in label else random))
    if device not in label:
        parts.append(device)
    return " · ".join(parts), (
        f"{sweep.name} sweep: {sweep.model.name}{random} on "
        f"{env.device_name} ({env.device}, {env.dtype})" + (f", '{label}'" if label else "")
    )


def _batch_rows(sweep: Sweep, clock: str) -> tuple[list[dict], str, str]:
    busy = sweep.name == "device_busy"
    column = "gpu_busy_s" if busy and clock == "busy" else "decode_step_s"
    steps = sweep.spread(column)
    rows, has_prefill = [], "ttft_s" in sweep.columns and "prompt_tokens" in sweep.columns
    for k, row in enumerate(sweep.rows()):
        b = int(row["batch_size"])
        out = {"setting": f"batch {b}", "x": b, "out": steps[k].rate(b), "tpot": steps[k]}
        if has_prefill:
            ttft = sweep.spread("ttft_s")[k]
            out.update(ttft=ttft, inp=ttft.rate(b * int(row["prompt_tokens"])))
        rows.append(out)
    if busy:
        how = (
            "B ÷ the GPU's own time per decode step (gpu_busy_s, its kernels summed): what a "
            "server that launches the step as one CUDA graph approaches (compiled-step "
            "reference); clock='wall' prices the eager wall time"
            if clock == "busy"
            else "B ÷ the decode step's wall time (decode_step_s: the host's kernel launches "
            "included)"
        )
    else:
        how = (
            "B ÷ the decode step (decode_step_s): the tokens a batch makes per second while "
            "it decodes; its prefill is priced as input"
        )
    inp = (
        "B × prompt_tokens ÷ ttft_s: the batch's prompt tokens over its prefill (until every "
        "request had its first token)"
        if has_prefill
        else "this sweep times decode steps only, so it prices no input: give prefill= a "
        "prompt-length sweep of the same machine"
    )
    return rows, how, inp


def _prefill_rate(sweep: Any, against: Any) -> tuple[Spread, str]:
    """Input tokens/s from a prompt-length sweep: its longest prompt."""
    if not isinstance(sweep, Sweep) or sweep.name != "prompt_length":
        raise ValueError(
            "prefill= (--prefill) takes a prompt-length sweep "
            "(perf.prompt_length_sweep(lm), or perf.gpu_reference('prompt-sweep', "
            "model)), not "
            f"{getattr(sweep, 'name', type(sweep).__name__)!r}"
        )
    if isinstance(against, Sweep) and (
        sweep.model.name != against.model.name
        or sweep.environment.device_name != against.environment.device_name
    ):
        raise ValueError(
            f"the prefill sweep measured {sweep.model.name} on "
            f"{sweep.environment.device_name}, the throughput "
            f"{against.model.name} on {against.environment.device_name}: give a "
            "prompt-length sweep of the same model on the same machine"
        )
    k = max(range(len(sweep)), key=lambda i: sweep.column("prompt_tokens")[i])
    n = int(sweep.column("prompt_tokens")[k])
    how = (
        f"prompt tokens ÷ the prefill's forward pass at the longest prompt of the "
        f"prompt-length sweep given ({n:,} tokens, prefill_forward_s); shorter prompts "
        "prefill slower per token (lesson 03)"
    )
    return sweep.spread("prefill_forward_s")[k].rate(n), how


def _run_output(run) -> Spread:
    """A run's output tokens/s, its spread from its requests' paces (TPOT middle half)."""
    tps = run.summary().output_tokens_per_s
    if not tps:
        raise ValueError(
            f"{run.load_label}: no request completed, so there is no throughput "
            "to price: run the load again (its requests' errors say why)"
        )
    paces = [q.tpot_s for q in run.requests if q.ok and q.tpot_s]
    if len(paces) < 2:
        return Spread(tps, tps, tps, 1, True)
    p = Spread.of(paces)
    return Spread(
        tps, min(tps, tps * p.median / p.high), max(tps, tps * p.median / p.low), p.runs, True
    )


def _latency(runs: Sequence[Any], attr: str) -> Optional[Spread]:
    values = [getattr(q, attr) for run in runs for q in run.requests if q.ok]
    values = [v for v in values if v is not None]
    return Spread.of(values) if values else None


def _prefill_passes(runs: Sequence[Any]) -> Optional[Spread]:
    """Prompt tokens per second of the recorded passes that carried prompt chunks and nothing
    else (scheduler start → tokens handed out): their tokens ÷ their seconds, all passes
    together; its spread scales that by the middle half of the passes' own rates around
    their median (a pass of a few tokens runs slower per token than a long one)."""
    passes = [
        (s.tokens, s.end_s - s.start_s)
        for run in runs
        if run.schedule is not None
        for s in run.schedule.steps
        if s.batch and s.end_s > s.start_s and all(e.phase == "prefill" for e in s.batch)
    ]
    if not passes:
        return None
    rate = sum(n for n, _ in passes) / sum(t for _, t in passes)
    p = Spread.of([n / t for n, t in passes])
    return Spread(
        rate, min(rate, rate * p.low / p.median), max(rate, rate * p.high / p.median), p.runs, True
    )


def in_flight(run) -> Optional[float]:
    """Requests in flight on average over a run (Little's law): the completed requests' E2E
    summed ÷ the run's duration."""
    s = run.summary()
    if not s.duration_s:
        return None
    return sum(q.e2e_s for q in run.requests if q.ok) / s.duration_s


def _flight(runs: Sequence[Any]) -> Optional[float]:
    """The median over `runs` of the requests in flight on average (`in_flight`)."""
    flights = [f for r in runs if (f := in_flight(r))]
    return Spread.of(flights).median if flights else None


def _load_rows(points: list[tuple[str, list, Optional[float]]]) -> tuple[list[dict], bool, bool]:
    """One row per load (label, its runs, its x): (rows, any run recorded its scheduler, any
    recorded pass carried prompt chunks alone)."""
    rows, recorded, passes = [], False, False
    for label, runs, x in points:
        done = [r for r in runs if r.summary().output_tokens_per_s]
        if not done:
            continue
        values = [r.summary().output_tokens_per_s for r in done]
        row = {
            "setting": label,
            "x": x,
            "out": Spread.of(values) if len(values) > 1 else _run_output(done[0]),
            "ttft": _latency(done, "ttft_s"),
            "tpot": _latency(done, "tpot_s"),
        }
        recorded = recorded or any(r.schedule is not None for r in done)
        if (inp := _prefill_passes(done)) is not None:
            row["inp"], passes = inp, True
        rows.append(row)
    return rows, recorded, passes


def cost(
    measured: Any,
    price_per_hour: Any,
    *,
    prefill: Optional[Sweep] = None,
    prefix: Optional[Sweep] = None,
    clock: str = "busy",
) -> Cost:
    """$ per million output and input tokens of a measurement at `price_per_hour` (see the
    module docstring for how each kind of measurement is read).

    measured: a batch-size or GPU busy `Sweep`, a `LoadRun`, a list of LoadRuns (e.g. lesson
        10's `serve.sweep_load` at 1, 4, 8 streams), a `LoadSweep`, a `Trace` or a list of
        them (replies recorded alone), or a `Spread` of tokens/s.
    price_per_hour: US dollars per hour of the machine (a number you type, or one of
        `EXAMPLE_PRICES`).
    prefill: a prompt-length sweep of the same machine: input priced from its longest prompt.
    prefix: a prefix-cache sweep (`perf.prefix_cache_sweep`): cached-input prices.
    clock: for a GPU busy sweep, "busy" (the GPU's own time) or "wall" (its wall clock).
    """
    price, note = check_price(price_per_hour)
    if clock not in ("busy", "wall"):
        raise ValueError(f"clock must be 'busy' or 'wall', not {clock!r}")
    rows, what = _read(measured, clock)
    if not rows:
        raise ValueError(
            "no load of this measurement completed a request: there is no "
            "throughput to price (the runs' errors say why)"
        )
    if prefill is not None:
        rate, what["input_how"] = _prefill_rate(prefill, measured)
        if isinstance(measured, Sweep) and measured.name == "device_busy" and clock == "busy":
            what["input_how"] += (
                "; a wall-clock time (a prompt sweep keeps no GPU busy time):"
                " where the host's launches set the prefill's time, the input "
                "price is an upper bound"
            )
        for r in rows:
            r["inp"] = rate
    cached, cached_how = _cached(prefix, price) if prefix is not None else ([], "")
    return Cost(
        price_per_hour=price,
        price_note=note,
        cached=cached,
        cached_how=cached_how,
        rows=[
            CostRow(
                setting=r["setting"],
                x=r["x"],
                output_tokens_per_s=r["out"],
                output_per_mtok=per_million(r["out"], price),
                input_tokens_per_s=r.get("inp"),
                input_per_mtok=(per_million(r["inp"], price) if r.get("inp") is not None else None),
                ttft_s=r.get("ttft"),
                tpot_s=r.get("tpot"),
            )
            for r in rows
        ],
        **what,
    )


def _read(measured: Any, clock: str) -> tuple[list[dict], dict[str, str]]:
    """(one dict per row: setting, x, out, and where measured inp, ttft, tpot; the Cost's
    name, source, x_name, output_how and input_how) for each kind of measurement."""
    from viz.serve.loadgen import LoadRun
    from viz.serve.sweep import LoadSweep

    if isinstance(measured, Sweep):
        return _read_sweep(measured, clock)
    if isinstance(measured, LoadSweep):
        rows, recorded, passes = _load_rows(
            [(p.label, p.runs, _flight(p.runs)) for p in measured.by_load()]
        )
        out_how, in_how = _load_hows(recorded, passes, many=True)
        return rows, dict(
            name=measured.name,
            source=f"rate sweep: {measured.name}, {measured.settings.n_requests} requests per run",
            x_name="in flight",
            output_how=out_how,
            input_how=in_how,
        )
    if isinstance(measured, LoadRun) or (
        isinstance(measured, (list, tuple))
        and measured
        and all(isinstance(r, LoadRun) for r in measured)
    ):
        return _read_runs([measured] if isinstance(measured, LoadRun) else list(measured))
    traces = _traces(measured)
    if traces:
        return _read_traces(traces)
    if isinstance(measured, Spread):
        if not measured.low > 0:
            raise ValueError("a throughput must be a positive number of tokens per second")
        return [{"setting": "given", "x": None, "out": measured}], dict(
            name="given throughput",
            source="a throughput given as a Spread",
            x_name="",
            output_how="the tokens per second given",
            input_how="a throughput alone says nothing of prefill: give prefill= for an input "
            "price",
        )
    raise ValueError(
        f"{type(measured).__name__} has no throughput to price: give a batch-size "
        "sweep, a load run (or a list of them), a rate sweep, a recorded reply "
        "(viz.record), or a viz.Spread of tokens per second"
    )


def _read_sweep(measured: Sweep, clock: str) -> tuple[list[dict], dict[str, str]]:
    """`_read` for a batch-size (or GPU busy) sweep; a clear error for any other sweep."""
    if measured.name == "prompt_length":
        raise ValueError(
            "a prompt-length sweep times prefill only, so it has no output "
            "tokens to price: give it as prefill= beside a batch sweep or a "
            "load run (`python -m viz cost FILE --prefill THIS_FILE`)"
        )
    if measured.name not in ("batch_size", "device_busy"):
        raise ValueError(
            f"a {measured.name} sweep has no throughput to price: give a "
            "batch-size sweep (perf.batch_size_sweep, `python -m viz sweep "
            "batch -o FILE`), a load run or a rate sweep"
        )
    if len(measured) == 0:
        raise ValueError("this sweep has no rows: measure at least one batch size")
    rows, out_how, in_how = _batch_rows(measured, clock)
    name, source = _sweep_name(measured)
    return rows, dict(
        name=name, source=source, x_name="batch size", output_how=out_how, input_how=in_how
    )


def _read_runs(runs: list) -> tuple[list[dict], dict[str, str]]:
    """`_read` for load runs: one row per run, against its streams (closed loop) or the
    requests in flight (open loop)."""
    closed = all(r.settings.mode == "concurrency" for r in runs)
    rows, recorded, passes = _load_rows(
        [(r.load_label, [r], r.settings.concurrency if closed else _flight([r])) for r in runs]
    )
    first = runs[0]
    name = first.label or first.target.server_label or first.target.model or "load run"
    out_how, in_how = _load_hows(recorded, passes, many=False)
    return rows, dict(
        name=name,
        source=f"load run{'s' if len(runs) > 1 else ''}: {name}, "
        + ", ".join(r.load_label for r in runs),
        x_name="streams" if closed else "in flight",
        output_how=out_how,
        input_how=in_how,
    )


def _read_traces(traces: list) -> tuple[list[dict], dict[str, str]]:
    """`_read` for recorded replies: one row per reply, each request alone."""
    name = traces[0].model.name
    return [_trace_row(t) for t in traces], dict(
        name=f"{name}, one request alone",
        source=f"{len(traces)} recorded repl"
        f"{'y' if len(traces) == 1 else 'ies'}: {name} on {traces[0].environment.device_name}",
        x_name="prompt tokens",
        output_how="1 ÷ the gaps between the reply's tokens (one request alone); spread "
        "from the middle half of the gaps",
        input_how="prompt tokens ÷ TTFT (tokenizing, the prefill pass, the first token's "
        "choice): with the output's gaps, the reply's whole time",
    )


def _traces(measured: Any) -> list:
    """`measured` as a list of Traces, or [] when it is something else."""
    from viz.trace import Trace

    items = measured if isinstance(measured, (list, tuple)) else [measured]
    return list(items) if items and all(isinstance(t, Trace) for t in items) else []


def _trace_row(trace) -> dict:
    """One recorded reply as a cost row: output from its token gaps, input from its TTFT."""
    gaps = trace.inter_token_latencies_s
    if not gaps or min(gaps) <= 0:
        raise ValueError(
            f"a reply of {trace.n_generated} token(s) has no time between tokens "
            "to price: record at least 2 tokens (max_new_tokens=2 or more)"
        )
    n = len(trace.prompt_tokens)
    first = trace.prompt.strip().splitlines()[0] if trace.prompt.strip() else ""
    label = first if len(first) <= 28 else first[:27] + "…"
    pace = Spread.of(gaps)
    return {
        "setting": f'"{label}"',
        "x": n,
        "out": pace.rate(1.0),
        "inp": Spread.exact(n / trace.ttft_s),
        "ttft": Spread.exact(trace.ttft_s),
        "tpot": pace,
    }


def _load_hows(recorded: bool, passes: bool, many: bool) -> tuple[str, str]:
    out = (
        "output tokens ÷ the run's duration (first send → last end), all-in: the prompts, "
        "idle moments and HTTP are paid by the answers; spread from the requests' TPOTs"
        + ("; a load of several runs: the median over them" if many else "")
    )
    if passes:
        inp = (
            "prompt tokens computed ÷ the time of the server's passes that carried prompt "
            "chunks and nothing else (its scheduler record); spread from the passes' rates"
        )
    elif recorded:
        inp = (
            "no recorded pass carried prompt chunks alone (every prompt shared its passes "
            "with decoding requests), so no input price: give prefill= a prompt-length sweep"
        )
    else:
        inp = (
            "no scheduler record, so the prefill was not timed apart: run the load on "
            "serve.serve(record=True) (`python -m viz load --embedded --record`), or give "
            "prefill= a prompt-length sweep"
        )
    return out, inp


def _cached(prefix: Any, price: float) -> tuple[list[CachedRow], str]:
    if not isinstance(prefix, Sweep) or prefix.name != "prefix_cache":
        raise ValueError(
            "prefix= (--prefix) takes a prefix-cache sweep "
            "(perf.prefix_cache_sweep(lm)), not "
            f"{getattr(prefix, 'name', type(prefix).__name__)!r}"
        )
    n = int(
        prefix.settings.get("prompt_tokens")
        or prefix.column("shared_tokens")[0] + prefix.column("new_tokens")[0]
    )
    full, cached = prefix.spread("ttft_full_s"), prefix.spread("ttft_cached_s")
    per_s = price / SECONDS_PER_HOUR * PER_MILLION  # $ per second, times a million tokens
    rows = []
    for i, k in enumerate(prefix.column("shared_tokens")):
        k = int(k)
        if k == 0:
            continue
        fresh = full[i].scaled(per_s / n)
        rest = cached[i] - full[i].scaled((n - k) / n)  # the cached tokens' share of the pass
        rows.append(
            CachedRow(
                share=k / n,
                prompt_tokens=n,
                cached_tokens=k,
                speedup=full[i] / cached[i],
                input_per_mtok=fresh,
                cached_per_mtok=rest.scaled(per_s / k),
            )
        )
    if not rows:
        raise ValueError(
            "this prefix-cache sweep has no share above 0: measure one with "
            "shares such as (0.0, 0.5, 0.9)"
        )
    how = (
        f"{n:,}-token prompts of the prefix-cache sweep ({prefix.model.name}); a fresh token "
        "costs F ÷ n of the full prefill, a cached one (C − F × (n − k) ÷ n) ÷ k of the "
        "pass over the rest"
    )
    return rows, how


# ---- numbers for people --------------------------------------------------------------------------
def usd(value: Optional[float]) -> str:
    """Dollars to three significant figures: "$0.143", "$1.13", "$11.3", "$113", "$1,130"."""
    if value is None:
        return "n/a"
    a = abs(value)
    if a >= 100:
        return f"${value:,.0f}"
    if a >= 10:
        return f"${value:.1f}"
    if a >= 1:
        return f"${value:.2f}"
    if a == 0:
        return "$0"
    return f"${value:.{max(2, 2 - math.floor(math.log10(a)))}f}"


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:#.3g}"


def _spread(s: Optional[Spread], fmt) -> str:
    if s is None:
        return "n/a"
    if fmt(s.low) == fmt(s.high):  # no spread at the digits shown
        return fmt(s.median)
    return f"{fmt(s.median)} ({fmt(s.low)}–{fmt(s.high)})"


def _columns(head: list[str], cells: list[list[str]]) -> list[str]:
    """Right-aligned columns, each as wide as its widest cell."""
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(head)]
    return ["  ".join(t.rjust(w) for t, w in zip(row, widths)) for row in [head] + cells]


def _ms(s: Optional[Spread]) -> str:
    if s is None:
        return "n/a"
    return f"{s.median * 1e3:.{1 if s.median < 0.01 else 0}f} ms"
