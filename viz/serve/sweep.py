"""Rate sweeps: a server loaded from one request at a time up to the most it can take.

    sweep = viz.serve.sweep_rates(server, n_requests=8, n_rates=3, repeats=3, seed=0)
    print(sweep)               # one row per load: rate, throughput, latency, goodput, intervals
    sweep.save("sweep.json")   # a LoadSweep document: every run of every load, every request

The loads, in order (GuideLLM's "sweep" profile; `vllm bench serve` at a list of rates):

1. **synchronous**: one request at a time (1 stream) — the requests per second the server
   manages with no company, and each request's latency alone. Unless an `slo` is given, the
   objective for goodput is derived from it: TTFT ≤ `slo_factor` × its p90 TTFT and TPOT ≤
   `slo_factor` × its p90 TPOT (every request of the synchronous runs pooled). A request
   alone then meets it with room, and the sweep shows where company makes requests miss it.
2. **throughput**: every request of a run sent at once — the most requests per second the
   server completes (its maximum throughput, for this prompt set).
3. **rates between**: `n_rates` Poisson arrival rates evenly spaced between the two, lowest
   first (seeded: the same seed gives the same arrival times). Where the throughput load is no
   faster than one at a time (a server that serves one request at a time), the rates run from
   half the synchronous rate up to it instead, so the queue can be seen to build.

**Saturation.** A server keeps up with an arrival rate when a request arriving late in a run
waits no longer for its first token than one arriving early. When it cannot keep up, each
arrival waits for the work of all those queued before it, and TTFT (which holds that wait)
grows with the arrival time: by λ/μ − 1 seconds per second of arrivals, for a server that
completes μ requests per second against λ arriving (a slope of 1: it completes half of what
arrives). `queue_growth` is that slope, fitted by least squares over a Poisson run's completed
requests (the median over repeats); a rate whose slope is over `saturation` (default 0.25: the
server completes under 80 % of what arrives) is **saturated**, and the sweep keeps it and
stops, as higher rates would only queue more. TTFT and not the whole time in the server: with
continuous batching a request that arrives into company decodes more slowly (lesson 06's
bigger batch) without any queue, and a short run would read that warm-up as falling behind.
(GuideLLM's over-saturation check watches the same kind of trend.)

**Repeats.** With `repeats=N` every load is run N times (seeds `seed`, `seed + 1`, ...: the
same prompts in other orders and other arrival times) and each figure of a load is the
median over its runs with a distribution-free confidence interval (`viz.spread.Interval`:
3 runs give a 75 % interval, their min and max; 6 runs 97 %).

**Bounds.** Every run is bounded by `n_requests` and `max_duration_s` (run_load's own bounds),
and the whole sweep by `budget_s`: no new run starts after that, and the sweep says so.
Introduced in lesson 10 (Serving many users); `python -m viz load --sweep`;
`benchmarks/serving.py`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional, Sequence

from viz import checks
from viz.documents import Document
from viz.provenance import loose_names, unknown_environment
from viz.serve.client import (
    ClientInfo,
    ServeError,
    Target,
    client_environment,
    recorded_at_to_environment,
)
from viz.serve.loadgen import (
    LoadRun,
    resolve_workload,
    run_load,
    run_v1_to_v2,
    run_v2_to_v3,
    run_v3_to_v4,
)
from viz.serve.metrics import SLO, LoadSummary, percentiles
from viz.serve.protocol import server_handle
from viz.serve.server import ServerInfo
from viz.serve.workload import Workload
from viz.spread import TOO_CLOSE, Interval
from viz.trace import Environment

KINDS = ("synchronous", "throughput", "rate")


def queue_growth(run: LoadRun) -> Optional[float]:
    """The slope of the completed requests' TTFT against their arrival time, least squares
    (seconds per second): ~0 when the server keeps up, λ/μ − 1 when it completes μ requests
    per second against λ arriving. None for a run that is not Poisson arrivals (closed-loop
    streams send when the server is done) or has fewer than 3 completed requests."""
    if run.settings.mode != "rate":
        return None
    pts = [(r.scheduled_s, r.ttft_s) for r in run.requests if r.ok and r.ttft_s is not None]
    if len(pts) < 3:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx <= 0:
        return None
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


# A load's figures, each from one run's summary (seconds, or per second). Name → (what it is,
# the function of a run and its summary under the sweep's objective).
def _p(metric: str, p: str) -> Callable[[LoadRun, LoadSummary], Optional[float]]:
    return lambda run, s: getattr(s, metric)[p]


FIGURES: dict[str, tuple[str, Callable[[LoadRun, LoadSummary], Optional[float]]]] = {
    "requests_per_s": ("completed requests per second", lambda run, s: s.requests_per_s),
    "output_tokens_per_s": (
        "output tokens per second, all requests",
        lambda run, s: s.output_tokens_per_s,
    ),
    "ttft_p50_s": ("TTFT p50", _p("ttft_s", "p50")),
    "ttft_p90_s": ("TTFT p90", _p("ttft_s", "p90")),
    "tpot_p50_s": ("TPOT p50", _p("tpot_s", "p50")),
    "tpot_p90_s": ("TPOT p90", _p("tpot_s", "p90")),
    "itl_p50_s": ("ITL p50", _p("itl_s", "p50")),
    "e2e_p50_s": ("E2E p50", _p("e2e_s", "p50")),
    "goodput_per_s": ("requests per second that met the objective", lambda run, s: s.goodput_per_s),
    "met_share": (
        "share of completed requests that met the objective",
        lambda run, s: s.n_met_slo / s.n_completed if s.n_completed else None,
    ),
    "tokens_per_s_per_user": (
        "output tokens per second for each user (1 / TPOT p50)",
        lambda run, s: 1 / s.tpot_s["p50"] if s.tpot_s["p50"] else None,
    ),
    "queue_growth": (
        "TTFT's growth per second of arrivals: 0 keeps up, λ/μ − 1 falls behind",
        lambda run, s: queue_growth(run),
    ),
}


@dataclass
class SweepPoint:
    """One load of a sweep and its runs (one per repeat)."""

    kind: str  # "synchronous" (1 stream), "throughput" (all at once) or "rate" (Poisson)
    rate_per_s: Optional[float]  # the mean arrival rate offered (kind "rate"), else None
    runs: list[LoadRun] = field(default_factory=list)
    saturated: bool = False  # the server fell behind at this load (kind "rate" only)

    def __post_init__(self):
        checks.one_of("a sweep point's kind", self.kind, KINDS)

    @property
    def label(self) -> str:
        if self.kind == "synchronous":
            return "one at a time"
        if self.kind == "throughput":
            n = self.runs[0].settings.n_requests if self.runs else 0
            return f"all {n} at once"
        return f"{self.rate_per_s:.2f} requests/s"

    def figure(self, name: str, slo: SLO, level: float = 0.95) -> Optional[Interval]:
        """One figure of `FIGURES` over this load's runs: the median and its interval (None
        where no run gives it)."""
        if name not in FIGURES:
            raise ValueError(f"unknown figure {name!r}: one of {sorted(FIGURES)}")
        get = FIGURES[name][1]
        values = [v for run in self.runs if (v := get(run, run.summary(slo))) is not None]
        return Interval.of(values, level) if values else None


@dataclass
class SweepSettings:
    """How a sweep was driven (see the module docstring)."""

    n_requests: int  # per run
    n_rates: int  # Poisson rates between the synchronous and throughput loads
    repeats: int  # runs per load
    seed: int  # the first run's seed (repeat i uses seed + i)
    max_duration_s: float  # per run
    budget_s: float  # the whole sweep: no run starts after this long
    saturation: float  # the queue_growth slope over which a rate is saturated
    slo_factor: Optional[float]  # the objective = factor × synchronous p90s (None: given)
    workload: Workload = field(default_factory=Workload)  # every run's (schema 2)

    @property
    def max_tokens(self) -> Optional[int]:
        """The one answer length of every request, if the workload has one (schema 1's field)."""
        o = self.workload.output_tokens
        return int(o.mean) if o is not None and o.kind == "fixed" else None


def sweep_v1_to_v2(d: dict) -> dict:
    """A schema-1 LoadSweep dict as schema 2: its settings' max_tokens becomes a workload, as
    in each of its runs (`viz.serve.loadgen.run_v1_to_v2`)."""
    s = dict(d["settings"])
    cap = s.pop("max_tokens", None)
    points = [
        {**p, "runs": [run_v1_to_v2(r) for r in p.get("runs", [])]} for p in d.get("points", [])
    ]
    first = next((r["settings"]["workload"] for p in points for r in p["runs"]), None)
    s["workload"] = first or {
        "kind": "shipped",
        "output_tokens": None if cap is None else {"mean": cap, "kind": "fixed"},
    }
    return {**d, "settings": s, "points": points}


SWEEP_SOURCE = "recorded by viz.serve.sweep_rates"


def sweep_v2_to_v3(d: dict) -> dict:
    """A schema-2 LoadSweep dict as schema 3: its loose `recorded_at` moves into `environment`
    (`viz.provenance`), with the client machine its first run names; so in every run
    (LoadRun schema 3)."""
    points = [
        {**p, "runs": [run_v2_to_v3(r) for r in p.get("runs", [])]} for p in d.get("points", [])
    ]
    first = next((r.get("client") for p in d.get("points", []) for r in p.get("runs", [])), None)
    return recorded_at_to_environment({**d, "points": points}, SWEEP_SOURCE, first)


def sweep_v3_to_v4(d: dict) -> dict:
    """A schema-3 LoadSweep dict as schema 4: every run as LoadRun schema 4 (the server's
    schedule in it as Schedule schema 2)."""
    points = [
        {**p, "runs": [run_v3_to_v4(r) for r in p.get("runs", [])]} for p in d.get("points", [])
    ]
    return {**d, "points": points}


@loose_names(recorded_at="measured_at")
@dataclass
class LoadSweep(Document):
    """A rate sweep: every load and every run of it (`sweep_rates`). Lesson 10.

    Where, when (the sweep's start) and by what is `environment` (`viz.provenance`;
    `sweep.recorded_at` reads its time, as before)."""

    KIND: ClassVar[str] = "llm-inference-load-sweep"
    # 2: settings.max_tokens became settings.workload, and so in every run (LoadRun schema 2)
    # 3: recorded_at became environment.measured_at, and so in every run (LoadRun schema 3)
    # 4: every run's schedule keeps its transformers version in its environment (LoadRun 4)
    SCHEMA_VERSION: ClassVar[int] = 4
    UPGRADES: ClassVar[dict] = {1: sweep_v1_to_v2, 2: sweep_v2_to_v3, 3: sweep_v3_to_v4}
    WHAT: ClassVar[str] = "load sweep"
    AGAIN: ClassVar[str] = (
        "run it again with viz.serve.sweep_rates(...) or `python -m viz load URL --sweep -o FILE`"
    )

    target: Target
    settings: SweepSettings
    slo: SLO  # the objective every run's goodput is judged by
    points: list[SweepPoint]
    duration_s: float  # the whole sweep, wall clock
    stopped: str = ""  # why the sweep ended before its last load ("" = it did not)
    server: Optional[ServerInfo] = None
    label: str = ""
    # the client machine, when the sweep began (ISO UTC: `viz.provenance.utc_now`), by what
    environment: Environment = field(default_factory=unknown_environment)

    @property
    def runs(self) -> list[LoadRun]:
        """Every run of the sweep, in the order they ran."""
        return [run for p in self.points for run in p.runs]

    def point(self, kind: str) -> Optional[SweepPoint]:
        """The first load of this kind (e.g. "synchronous"), or None."""
        return next((p for p in self.points if p.kind == kind), None)

    @property
    def saturated_rate(self) -> Optional[float]:
        """The offered rate at which the server fell behind, if one did."""
        p = next((p for p in self.points if p.saturated), None)
        return p.rate_per_s if p else None

    @property
    def name(self) -> str:
        return self.label or self.target.server_label or self.target.model

    def by_load(self) -> list[SweepPoint]:
        """The loads from the lightest to the heaviest: one at a time, the Poisson rates
        rising, then all at once (an unbounded rate)."""
        order = {"synchronous": 0, "rate": 1, "throughput": 2}
        return sorted(self.points, key=lambda p: (order[p.kind], p.rate_per_s or 0))

    def first_miss(self) -> "FirstMiss":
        """Which limit of the objective the requests broke first as the load rose: at the
        lightest load where any completed request missed it, the limit more of them missed
        ("TTFT", "TPOT", "both at once" when as many missed each, "too close to call" when
        the two counts differ by one), or "neither"."""
        for p in self.by_load():
            done = [r for run in p.runs for r in run.requests if r.ok]
            late = sum(r.ttft_s > self.slo.ttft_s for r in done)
            slow = sum(r.tpot_s is not None and r.tpot_s > self.slo.tpot_s for r in done)
            if late or slow:
                if late and slow and abs(late - slow) == 1:  # 3 against 2: either could lead
                    word = TOO_CLOSE
                else:
                    word = "TTFT" if late > slow else "TPOT" if slow > late else "both at once"
                return FirstMiss(word, p.label, late, slow, len(done))
        return FirstMiss("neither", "", 0, 0, 0)

    def table(self, level: float = 0.95) -> str:
        """One row per load: medians over the repeats, with the interval of the key figures."""

        def ms(v: Optional[Interval]) -> str:
            return "n/a" if v is None else f"{v.median * 1e3:.0f}"

        def num(v: Optional[Interval], digits: int = 2) -> str:
            return "n/a" if v is None else f"{v.median:.{digits}f}"

        def ci(v: Optional[Interval], scale: float = 1.0, digits: int = 2) -> str:
            if v is None or v.runs < 2:
                return ""
            return f" ({v.low * scale:.{digits}f}–{v.high * scale:.{digits}f})"

        head = (
            f"{'load':>18} {'req/s':>16} {'tokens/s':>18} {'TTFT p50':>9} {'TTFT p90':>9} "
            f"{'TPOT p50':>16} {'TPOT p90':>9} {'goodput/s':>10} {'queue':>7}"
        )
        lines = [head]
        for p in self.points:
            f = {k: p.figure(k, self.slo, level) for k in FIGURES}
            mark = "  saturated" if p.saturated else ""
            lines.append(
                f"{p.label:>18} {num(f['requests_per_s']) + ci(f['requests_per_s']):>16} "
                f"{num(f['output_tokens_per_s'], 1) + ci(f['output_tokens_per_s'], 1, 1):>18} "
                f"{ms(f['ttft_p50_s']):>9} {ms(f['ttft_p90_s']):>9} "
                f"{ms(f['tpot_p50_s']) + ci(f['tpot_p50_s'], 1e3, 0):>16} "
                f"{ms(f['tpot_p90_s']):>9} {num(f['goodput_per_s']):>10} "
                f"{num(f['queue_growth']):>7}{mark}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        runs = self.settings.repeats
        level = self.points[0].figure("requests_per_s", self.slo) if self.points else None
        how = (
            f"{runs} runs per load, medians (in brackets the "
            f"{level.coverage:.0%} confidence interval of the median)"
            if runs > 1 and level is not None
            else "1 run per load"
        )
        stop = f"\nstopped: {self.stopped}" if self.stopped else ""
        return (
            f"{self.name}: rate sweep, {self.settings.workload}, "
            f"{self.settings.n_requests} requests per run, {how}; "
            f"objective {self.slo}; times in ms{stop}\n{self.table()}"
        )


@dataclass(frozen=True)
class FirstMiss:
    """`LoadSweep.first_miss`: the limit broken first, at which load, by how many requests."""

    word: str  # "TTFT", "TPOT", "both at once" or "neither"
    load: str  # the load's label ("" for neither)
    late: int  # completed requests of that load whose TTFT was over the limit
    slow: int  # ... whose TPOT was over the limit
    completed: int

    @property
    def regime(self) -> str:  # the attributes viz.compare_prediction reads
        return self.word

    @property
    def between(self) -> tuple:
        """Where the two counts differ by one, the leader is too close to call: either limit,
        or both at once, counts as right."""
        return ("TTFT", "TPOT", "both at once") if self.word == TOO_CLOSE else ()

    def __str__(self) -> str:
        if self.word == "neither":
            return "every load met the objective: no limit was broken"
        word = f"{TOO_CLOSE} between TTFT and TPOT" if self.word == TOO_CLOSE else self.word
        return (
            f"{word}: first at {self.load}, where of {self.completed} requests "
            f"{self.late} had their first token too late and {self.slow} their tokens too "
            "slow"
        )


MISSES = ("TTFT", "TPOT", "both at once", "neither")


def derived_slo(runs: Sequence[LoadRun], factor: float) -> SLO:
    """TTFT ≤ factor × the runs' p90 TTFT and TPOT ≤ factor × their p90 TPOT, every completed
    request of `runs` pooled (the synchronous load: each request alone)."""
    done = [r for run in runs for r in run.requests if r.ok]
    ttft = percentiles([r.ttft_s for r in done])["p90"]
    tpot = percentiles([r.tpot_s for r in done])["p90"]
    if ttft is None or tpot is None:
        raise ServeError(
            "the one-at-a-time load completed no request of two tokens or more, "
            "so no objective can be derived from it: give slo=SLO(...), or check "
            "the server (its runs' errors say why)"
        )
    return SLO(ttft_s=factor * ttft, tpot_s=factor * tpot)


def _between(r_sync: float, r_max: float, n: int) -> list[float]:
    """The n Poisson rates of a sweep (see the module docstring): evenly spaced strictly
    between the two loads' rates, or, where the throughput load is no faster than one at a
    time, from half the synchronous rate up to it."""
    if r_max > 1.1 * r_sync:
        return [r_sync + (r_max - r_sync) * (i + 1) / (n + 1) for i in range(n)]
    if n == 1:
        return [r_sync]
    return [r_sync / 2 + (r_sync / 2) * i / (n - 1) for i in range(n)]


def sweep_rates(
    url: Any,
    *,
    n_requests: int = 8,
    n_rates: int = 3,
    repeats: int = 1,
    workload: Optional[Workload] = None,
    max_tokens: Optional[int] = None,
    seed: int = 0,
    slo: Optional[SLO] = None,
    slo_factor: float = 2.0,
    saturation: float = 0.25,
    max_duration_s: float = 120.0,
    budget_s: float = 900.0,
    prompts: Any = None,
    label: str = "",
    progress: bool = True,
    out: Optional[str] = None,
    **kwargs,
) -> LoadSweep:
    """Sweep a server from one request at a time to its maximum throughput (module docstring).

    url: the server's API root or an `EmbeddedServer` (as `run_load`).
    n_requests: per run; n_rates: Poisson rates between; repeats: runs per load.
    workload: what every run sends (`viz.serve.Workload`, e.g. Workload.synthetic(64, 32));
        or, the older way, prompts= and max_tokens= (`run_load`'s).
    slo: the objective (default: derived, `slo_factor` × the synchronous p90 TTFT and TPOT).
    saturation: the queue-growth slope over which a rate counts as saturated (the sweep stops).
    max_duration_s: per run; budget_s: the whole sweep.
    out: save the sweep there (JSON) after every run, so an interrupted sweep keeps its runs.
    Other keywords go to every `run_load` (model, endpoint, timeouts, allow_remote, api_key).
    """
    _check_sweep(n_requests, n_rates, repeats, slo_factor, saturation, budget_s, kwargs)
    workload = resolve_workload(workload, prompts, max_tokens)
    settings = _sweep_settings(
        workload,
        slo,
        n_requests,
        n_rates,
        repeats,
        seed,
        max_duration_s,
        budget_s,
        saturation,
        slo_factor,
    )
    began = time.perf_counter()
    sweep = _new_sweep(settings, slo, label)

    def load(point: SweepPoint, **how) -> bool:
        """Run `point`'s repeats; False when the budget ran out first."""
        sweep.points.append(point)
        for i in range(repeats):
            left = budget_s - (time.perf_counter() - began)
            if left <= 0:
                _budget_out(sweep, point, i, repeats, budget_s)
                _save(sweep, began, out)
                return False
            run = run_load(
                url,
                n_requests=n_requests,
                workload=workload,
                seed=seed + i,
                slo=sweep.slo,
                max_duration_s=min(max_duration_s, left),
                progress=progress,
                label=label or (h.label if (h := server_handle(url)) else ""),
                **how,
                **kwargs,
            )
            _keep_run(sweep, point, run, i)
            _save(sweep, began, out)
        return True

    if _run_loads(sweep, load, slo, slo_factor, n_requests, n_rates, saturation):
        _save(sweep, began, out)
    return sweep


def _sweep_settings(
    workload: Workload,
    slo: Optional[SLO],
    n_requests: int,
    n_rates: int,
    repeats: int,
    seed: int,
    max_duration_s: float,
    budget_s: float,
    saturation: float,
    slo_factor: float,
) -> SweepSettings:
    """`sweep_rates`'s settings, as the sweep records them (`slo_factor` only where the SLO is
    derived)."""
    return SweepSettings(
        n_requests=n_requests,
        n_rates=n_rates,
        repeats=repeats,
        seed=seed,
        max_duration_s=float(max_duration_s),
        budget_s=float(budget_s),
        saturation=float(saturation),
        slo_factor=None if slo is not None else float(slo_factor),
        workload=workload,
    )


def _new_sweep(settings: SweepSettings, slo: Optional[SLO], label: str) -> LoadSweep:
    """`sweep_rates`'s sweep before its first run: no target, no points yet."""
    return LoadSweep(
        target=Target("", "", "", ""),
        settings=settings,
        slo=slo or SLO(),
        points=[],
        duration_s=0.0,
        label=label,
        environment=client_environment(ClientInfo.here(), SWEEP_SOURCE),
    )


def _save(sweep: LoadSweep, began: float, out: Optional[str]) -> None:
    """The sweep's duration so far (since `began`) set, and the sweep saved to `out` if given."""
    sweep.duration_s = time.perf_counter() - began
    if out:
        sweep.save(out)


def _keep_run(sweep: LoadSweep, point: SweepPoint, run: LoadRun, i: int) -> None:
    """`run` (repeat `i`) added to `point`; the sweep's first run also names its target, its
    server and its workload."""
    point.runs.append(run)
    if len(sweep.points) == 1 and i == 0:
        sweep.target, sweep.server = run.target, run.server
        sweep.settings.workload = run.settings.workload  # its tokenizer filled in


def _budget_out(sweep: LoadSweep, point: SweepPoint, i: int, repeats: int, budget_s: float) -> None:
    """The sweep stopped before `point`'s run `i`, its budget spent; `point` dropped if it has
    no run yet."""
    sweep.stopped = (
        f"the sweep's budget of {budget_s:g} s ran out before "
        f"{point.label} (run {i + 1} of {repeats})"
    )
    if not point.runs:
        sweep.points.pop()


def _check_sweep(
    n_requests, n_rates, repeats, slo_factor, saturation, budget_s, kwargs: dict
) -> None:
    """`sweep_rates`'s argument checks."""
    checks.whole("n_requests", n_requests, 2, 10_000, error=ServeError)
    checks.whole("n_rates", n_rates, 1, 50, error=ServeError)
    checks.whole("repeats", repeats, 1, 100, error=ServeError)
    checks.number("slo_factor", slo_factor, 1.0, 100.0, error=ServeError)
    checks.number("saturation", saturation, 0.01, 0.99, error=ServeError)
    checks.number("budget_s", budget_s, 1.0, 7 * 24 * 3600.0, error=ServeError)
    for bad in ("concurrency", "rate", "max_concurrency", "n_requests", "seed", "slo", "out"):
        if bad in kwargs:
            raise ServeError(f"sweep_rates sets {bad}= itself for each run")


def _run_loads(
    sweep: LoadSweep,
    load: Callable[..., bool],
    slo: Optional[SLO],
    slo_factor: float,
    n_requests: int,
    n_rates: int,
    saturation: float,
) -> bool:
    """The sweep's loads in order (module docstring), each run by `load`: one at a time, all at
    once, then the rates between, lowest first, up to the first saturated one. False when
    `load` found the budget spent (the sweep is saved and says so)."""
    sync = SweepPoint("synchronous", None)
    if not load(sync, concurrency=1):
        return False
    if slo is None:
        sweep.slo = derived_slo(sync.runs, slo_factor)
        for run in sweep.runs:
            run.settings.slo = sweep.slo
    r_sync = sync.figure("requests_per_s", sweep.slo)
    if r_sync is None:
        raise ServeError(
            "no request completed one at a time, so there is no rate to sweep "
            "from: check the server (the runs' errors say why)"
        )
    top = SweepPoint("throughput", None)
    if not load(top, concurrency=n_requests):
        return False
    r_max = top.figure("requests_per_s", sweep.slo)
    rates = _between(r_sync.median, r_max.median if r_max else r_sync.median, n_rates)
    for rate in rates:
        point = SweepPoint("rate", rate)
        if not load(point, rate=rate):
            return False
        behind = point.figure("queue_growth", sweep.slo)
        if behind is not None and behind.median > saturation:
            point.saturated = True
            rest = len(rates) - rates.index(rate) - 1
            sweep.stopped = (
                f"saturated at {rate:.2f} requests/s: the wait for the first "
                f"token grew by {behind.median:.2f} s per second of arrivals "
                f"(over {saturation:g}); "
                + (
                    f"{rest} higher rate{'s were' if rest != 1 else ' was'} not run"
                    if rest
                    else "it was the highest rate"
                )
            )
            break
    return True
