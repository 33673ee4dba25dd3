"""Serving views: load runs and scheduler steps (`viz.serve`) as plotly figures.

- `request_timeline_figure(run)`: one row per request — waiting, prefill, then each token as a
  tick. With continuous batching the ticks of different requests line up: one forward pass
  gives every running request its next token at the same moment.
- `serving_tradeoff_figure(runs)`: throughput (all requests' tokens per second) against
  latency (each request's time per token) as the load rises, one line per server setting —
  one-at-a-time and continuous batching on one chart.
- `itl_distribution_figure(runs)`: the inter-token latencies of each run, with p50/p90/p99.
- `schedule_figure(schedule)`: steps as columns, requests as rows: prefill chunks, decode
  tokens, waiting; above it each step's tokens against the budget and the free KV pages.
- `page_table_figure(schedule)`: the paged KV cache on a slider — which request holds which
  page, shared pages, free pages — filling and emptying step by step (no kernel needed).

Each `<view>_figure` returns a figure and displays nothing; `<view>_data` returns the
numbers it draws.
Lesson 09 (Serving many users).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from viz import checks
from viz.serve.client import request_index
from viz.serve.loadgen import LoadRun
from viz.serve.scheduler import Schedule, SchedulerStep
from viz.views import palette
from viz.views.base import empty_figure, plotly_layout

ERROR = palette.CHOSEN
WAITING = "#BBBBBB"
HELD = palette.SPECIAL


def _check_run(run: Any) -> LoadRun:
    if not isinstance(run, LoadRun):
        raise ValueError(
            f"expected a viz.serve.LoadRun, not {type(run).__name__}: run one with "
            "viz.serve.run_load(server, concurrency=4) or load one with "
            "viz.serve.LoadRun.load(path)"
        )
    return run


def _check_runs(runs: Any) -> list[LoadRun]:
    if isinstance(runs, LoadRun):
        return [runs]
    if not isinstance(runs, (list, tuple)) or not runs:
        raise ValueError(
            "give a LoadRun or a non-empty list of them (e.g. from viz.serve.sweep_load)"
        )
    return [_check_run(r) for r in runs]


def _check_schedule(schedule: Any) -> Schedule:
    if not isinstance(schedule, Schedule):
        raise ValueError(
            f"expected a viz.serve.Schedule, not {type(schedule).__name__}: take "
            "run.schedule from a load run on EmbeddedServer(record=True), or "
            "record one with viz.serve.record_schedule(...)"
        )
    if not schedule.steps:
        raise ValueError("this schedule has no steps: record it while requests run")
    return schedule


def run_name(run: LoadRun) -> str:
    """What a legend calls a run's server setting."""
    return run.label or run.target.server_label or run.target.model


# ---- the request timeline -----------------------------------------------------------------------
@dataclass(frozen=True)
class TimelineRow:
    """One request on the timeline (seconds from the run's start; None where not reached)."""

    index: int
    label: str  # "#3 summary"
    sent_s: Optional[float]
    started_s: Optional[float]  # the server began its prefill (None without server timing)
    first_token_s: Optional[float]
    end_s: Optional[float]
    token_times_s: list[float]
    ok: bool
    error: Optional[str]


def request_timeline_data(run: LoadRun) -> list[TimelineRow]:
    """The rows `request_timeline_figure` draws, in the order requests were scheduled."""
    _check_run(run)
    rows = []
    for r in sorted(run.requests, key=lambda r: r.index):
        started = r.server.started_s if r.server is not None else None
        rows.append(
            TimelineRow(
                r.index,
                f"#{r.index} {r.prompt_name}".strip(),
                r.sent_s,
                started,
                r.token_times_s[0] if r.token_times_s else None,
                r.end_s,
                list(r.token_times_s),
                r.ok,
                r.error,
            )
        )
    return rows


def _gap(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else b - a


def _bar(fig, name, colour, rows, starts, ends, width, hover, show):
    import plotly.graph_objects as go

    xs, ys, base, text = [], [], [], []
    for row, a, b, h in zip(rows, starts, ends, hover):
        if a is None or b is None or b < a:
            continue
        xs.append(b - a)
        base.append(a)
        ys.append(row)
        text.append(h)
    if xs:
        fig.add_trace(
            go.Bar(
                x=xs,
                y=ys,
                base=base,
                orientation="h",
                name=name,
                width=width,
                marker={"color": colour},
                hovertext=text,
                showlegend=show,
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )


def request_timeline_figure(run: LoadRun, steps: bool = True):
    """Plotly: one row per request; grey = waiting (until the server started it; needs the
    server's timestamps), blue = prefill (until the first token), orange = decode, a tick per
    text chunk received, a red cross for a failed request. `steps`: faint lines at the end of
    each scheduler step, when the server recorded them. Lesson 09."""
    import plotly.graph_objects as go

    rows = request_timeline_data(run)
    title = f"requests over time: {run_name(run)} · {run.load_label}"
    if not any(r.sent_s is not None for r in rows):
        return empty_figure(title, "no request was sent")
    fig = go.Figure()
    names = [r.label for r in rows]
    _phase_bars(fig, rows, names)
    _arrivals_and_failures(fig, rows)
    if steps and run.schedule is not None and run.schedule.steps:
        _step_ends(fig, run.schedule, names)
    fig.update_layout(
        **plotly_layout(
            title, height=max(260, 90 + 26 * len(rows)), barmode="overlay", margin={"l": 110}
        )
    )
    fig.update_xaxes(title="seconds since the run started", rangemode="tozero")
    fig.update_yaxes(
        autorange="reversed", type="category", categoryorder="array", categoryarray=names
    )
    return fig


def _phase_bars(fig, rows: list[TimelineRow], names: list[str]) -> None:
    """Each request's bars: waiting and prefill (or both as one, without the server's
    timestamps), then decode."""
    have_server = any(r.started_s is not None for r in rows)
    ms = lambda v: "n/a" if v is None else f"{v * 1000:.0f} ms"  # noqa: E731
    if have_server:
        _bar(
            fig,
            "waiting (queue, HTTP, tokenizing)",
            WAITING,
            names,
            [r.sent_s for r in rows],
            [r.started_s for r in rows],
            0.6,
            [f"{r.label}: waited {ms(_gap(r.sent_s, r.started_s))}" for r in rows],
            True,
        )
        _bar(
            fig,
            "prefill (until the first token)",
            palette.PREFILL,
            names,
            [r.started_s for r in rows],
            [r.first_token_s for r in rows],
            0.6,
            [
                f"{r.label}: prefill + first token {ms(_gap(r.started_s, r.first_token_s))}"
                for r in rows
            ],
            True,
        )
    else:
        _bar(
            fig,
            "waiting + prefill (until the first token)",
            palette.SKY,
            names,
            [r.sent_s for r in rows],
            [r.first_token_s for r in rows],
            0.6,
            [f"{r.label}: TTFT {ms(_gap(r.sent_s, r.first_token_s))}" for r in rows],
            True,
        )
    _bar(
        fig,
        "decode (one token per step)",
        palette.DECODE,
        names,
        [r.first_token_s for r in rows],
        [r.end_s if r.ok else r.token_times_s[-1] if r.token_times_s else None for r in rows],
        0.25,
        [f"{r.label}: {len(r.token_times_s)} chunks" for r in rows],
        True,
    )


def _arrivals_and_failures(fig, rows: list[TimelineRow]) -> None:
    """A tick for each text chunk received, a red cross for each failed request."""
    import plotly.graph_objects as go

    tx, ty = [], []
    for r in rows:
        tx += r.token_times_s
        ty += [r.label] * len(r.token_times_s)
    if tx:
        fig.add_trace(
            go.Scatter(
                x=tx,
                y=ty,
                mode="markers",
                name="a token arrives",
                marker={
                    "symbol": "line-ns-open",
                    "size": 11,
                    "color": palette.FORMULA,
                    "line": {"width": 1.5},
                },
                hovertemplate="%{y}: token at %{x:.3f} s<extra></extra>",
            )
        )
    bad = [r for r in rows if not r.ok and r.sent_s is not None]
    if bad:
        fig.add_trace(
            go.Scatter(
                x=[r.end_s if r.end_s is not None else r.sent_s for r in bad],
                y=[r.label for r in bad],
                mode="markers",
                name="failed",
                marker={"symbol": "x", "size": 12, "color": ERROR},
                hovertext=[(r.error or "")[:200] for r in bad],
                hovertemplate="%{y}: %{hovertext}<extra></extra>",
            )
        )


def _step_ends(fig, schedule: Schedule, names: list[str]) -> None:
    """A faint line at the end of each scheduler step, hidden until picked in the legend."""
    import plotly.graph_objects as go

    xs: list[Optional[float]] = []
    ys: list[Optional[str]] = []
    for s in schedule.steps:
        xs += [s.end_s, s.end_s, None]
        ys += [names[0], names[-1], None]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            name="end of a scheduler step",
            line={"color": palette.MUTED, "width": 0.5, "dash": "dot"},
            hoverinfo="skip",
            visible="legendonly",
        )
    )


# ---- throughput against latency -----------------------------------------------------------------
LATENCY = {
    "tpot": ("TPOT p50: each request's time per token (ms)", "tpot_s"),
    "itl": ("ITL p50: gap between tokens (ms)", "itl_s"),
    "ttft": ("TTFT p50: wait for the first token (ms)", "ttft_s"),
    "e2e": ("E2E p50: whole answer (ms)", "e2e_s"),
}


SYMBOLS = ["circle", "square", "diamond", "triangle-up", "star", "cross", "x", "hexagon"]


def serving_tradeoff_data(runs: Sequence[LoadRun], latency: str = "tpot") -> list[dict[str, Any]]:
    """Per run: {series, load, latency_ms, tokens_per_s, goodput_per_s, ttft_ms}."""
    checks.one_of("latency", latency, sorted(LATENCY))
    out = []
    for run in _check_runs(runs):
        s = run.summary()
        lat = getattr(s, LATENCY[latency][1])["p50"]
        out.append(
            {
                "series": run_name(run),
                "load": run.load_label,
                "latency_ms": None if lat is None else lat * 1000,
                "tokens_per_s": s.output_tokens_per_s,
                "goodput_per_s": s.goodput_per_s,
                "ttft_ms": None if s.ttft_s["p50"] is None else s.ttft_s["p50"] * 1000,
                "failed": s.n_failed,
            }
        )
    return out


def serving_tradeoff_figure(runs: Sequence[LoadRun], latency: str = "tpot"):
    """Plotly: all requests' output tokens per second (up) against each request's latency
    (across), one point per load, one line per server setting (e.g. one-at-a-time and
    continuous batching). Lesson 09."""
    import plotly.graph_objects as go

    points = serving_tradeoff_data(runs, latency)
    fig = go.Figure()
    series: dict[str, list[dict]] = {}
    for p in points:
        series.setdefault(p["series"], []).append(p)
    loads = list(dict.fromkeys(p["load"] for p in points))  # in order of first appearance
    symbol = {load: SYMBOLS[i % len(SYMBOLS)] for i, load in enumerate(loads)}
    for k, (name, pts) in enumerate(series.items()):
        pts = [p for p in pts if p["latency_ms"] is not None and p["tokens_per_s"] is not None]
        colour = palette.CYCLE[k % len(palette.CYCLE)]
        fig.add_trace(
            go.Scatter(
                x=[p["latency_ms"] for p in pts],
                y=[p["tokens_per_s"] for p in pts],
                mode="lines+markers",
                name=name,
                text=[p["load"] for p in pts],
                line={"color": colour},
                marker={"color": colour, "size": 11, "symbol": [symbol[p["load"]] for p in pts]},
                customdata=[[p["ttft_ms"], p["goodput_per_s"] or 0.0] for p in pts],
                hovertemplate="%{text}: %{y:.1f} tokens/s in all, %{x:.0f} ms per token each, "
                "TTFT p50 %{customdata[0]:.0f} ms, goodput %{customdata[1]:.2f} "
                "requests/s<extra></extra>",
            )
        )
    for load in loads:  # what each marker shape means
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=load,
                marker={"color": palette.MUTED, "size": 10, "symbol": symbol[load]},
            )
        )
    fig.update_layout(
        **plotly_layout("throughput vs latency as the load rises", height=420, margin={"l": 70})
    )
    fig.update_xaxes(title=LATENCY[latency][0] + " — lower is better", rangemode="tozero")
    fig.update_yaxes(title="all requests: output tokens / s — higher is better", rangemode="tozero")
    return fig


# ---- inter-token latencies ----------------------------------------------------------------------
def itl_distribution_data(runs: Sequence[LoadRun]) -> list[dict[str, Any]]:
    """Per run: {name, itl_ms (every gap of every completed request), p50_ms, p90_ms,
    p99_ms}."""
    out = []
    for run in _check_runs(runs):
        p = run.summary().itl_s
        out.append(
            {
                "name": f"{run_name(run)} · {run.load_label}",
                "itl_ms": [g * 1000 for r in run.requests if r.ok for g in r.itl_s],
                **{f"{k}_ms": None if p[k] is None else p[k] * 1000 for k in ("p50", "p90", "p99")},
            }
        )
    return out


def itl_distribution_figure(runs: Sequence[LoadRun], bins: int = 40):
    """Plotly: a histogram of every inter-token latency of each run (ms), with its p50, p90
    and p99 marked. Lesson 09."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, d in enumerate(itl_distribution_data(runs)):
        colour = palette.CYCLE[k % len(palette.CYCLE)]
        if not d["itl_ms"]:
            continue
        name = (
            f"{d['name']}: p50 {d['p50_ms']:.0f}, p90 {d['p90_ms']:.0f}, p99 {d['p99_ms']:.0f} ms"
        )
        fig.add_trace(
            go.Histogram(
                x=d["itl_ms"],
                name=name,
                nbinsx=bins,
                opacity=0.6,
                histnorm="percent",
                marker={"color": colour},
                legendgroup=name,
                hovertemplate="%{x} ms: %{y:.1f}% of gaps<extra></extra>",
            )
        )
        for tag, dash in (("p50", "solid"), ("p90", "dash"), ("p99", "dot")):
            v = d[f"{tag}_ms"]
            fig.add_trace(
                go.Scatter(
                    x=[v, v],
                    y=[0, 100],
                    mode="lines",
                    yaxis="y2",
                    name=f"{tag} {v:.0f} ms",
                    legendgroup=name,
                    showlegend=False,
                    line={"color": colour, "dash": dash, "width": 2},
                    hovertemplate=f"{tag}: %{{x:.0f}} ms<extra></extra>",
                )
            )
    if not fig.data:
        return empty_figure("inter-token latency", "no completed request with two or more tokens")
    fig.update_layout(
        **plotly_layout(
            "inter-token latency: the gaps between tokens", height=400, barmode="overlay"
        ),
        yaxis2={"overlaying": "y", "range": [0, 100], "visible": False},
    )
    fig.update_xaxes(
        title="gap between tokens, ms (lines: p50, p90 dashed, p99 dotted)", rangemode="tozero"
    )
    fig.update_yaxes(title="% of gaps")
    return fig


# ---- the scheduler, step by step ----------------------------------------------------------------
# What a request is doing in one step (the schedule view's colour codes).
STATES = ["not there", "waiting", "held back", "prefill chunk", "prefill → first token", "decode"]
STATE_COLOURS = ["#FFFFFF", WAITING, HELD, palette.SKY, palette.PREFILL, palette.DECODE]


def schedule_data(schedule: Schedule) -> tuple[list[str], list[list[int]], list[list[int]]]:
    """(request ids, state code per [request][step] (index into STATES), tokens brought per
    [request][step])."""
    _check_schedule(schedule)
    ids = schedule.request_ids()
    row = {rid: i for i, rid in enumerate(ids)}
    codes = [[0] * len(schedule.steps) for _ in ids]
    tokens = [[0] * len(schedule.steps) for _ in ids]
    for j, s in enumerate(schedule.steps):
        for rid in s.waiting:
            codes[row[rid]][j] = 1
        for rid in s.held:
            codes[row[rid]][j] = 2
        for e in s.batch:
            i = row[e.request_id]
            tokens[i][j] = e.query_tokens
            codes[i][j] = 5 if e.phase == "decode" else 4 if e.new_token else 3
    return ids, codes, tokens


def _short(rid: str, names: Optional[dict[str, str]] = None) -> str:
    """A request's label: `names[rid]`, else "request N" for request N of a load run."""
    if names and rid in names:
        return names[rid]
    n = request_index(rid)
    return f"request {n}" if n is not None else rid


def _request_number(rid: str, fallback: int) -> int:
    """N for a load run's request id (its index in the run), else `fallback`."""
    n = request_index(rid)
    return n if n is not None else fallback


def request_names(run: LoadRun) -> dict[str, str]:
    """request id → "#3 summary" for the requests of a load run (labels for the schedule
    views, matching the timeline's)."""
    return {r.request_id: f"#{r.index} {r.prompt_name}".strip() for r in _check_run(run).requests}


def schedule_figure(
    schedule: Schedule, names: Optional[dict[str, str]] = None, max_steps: int = 400
):
    """Plotly: steps across, requests down — light blue = a chunk of the prompt, blue = the
    last prompt chunk (it yields the first token), orange = one decode token, grey = waiting
    to start, pink = started but left out of this step. Above: the tokens of each step
    against the step's token budget, and the free KV pages. `names`: request id → label
    (e.g. from a load run). Lesson 09."""
    from plotly.subplots import make_subplots

    _check_schedule(schedule)
    if len(schedule.steps) > max_steps:
        schedule = schedule.with_steps(schedule.steps[:max_steps])
    ids, codes, tokens = schedule_data(schedule)
    labels = [_short(r, names) for r in ids]
    steps = list(range(len(schedule.steps)))
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.3, 0.7], vertical_spacing=0.05
    )
    _step_totals(fig, schedule, steps)
    _state_grid(fig, labels, codes, tokens, steps)
    fig.update_layout(
        **plotly_layout(
            f"the scheduler, step by step ({len(steps)} steps)",
            height=max(420, 230 + 22 * len(ids)),
            margin={"l": 110},
        )
    )
    fig.update_yaxes(title="tokens · pages", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(autorange="reversed", type="category", row=2, col=1)
    fig.update_xaxes(
        title={"text": "step (one forward pass each)", "standoff": 14},
        automargin=True,
        row=2,
        col=1,
    )
    return fig


def _step_totals(fig, schedule: Schedule, steps: list[int]) -> None:
    """The upper panel: each step's tokens against the token budget, and the free KV pages."""
    import plotly.graph_objects as go

    per_step = [s.tokens for s in schedule.steps]
    fig.add_trace(
        go.Bar(
            x=steps,
            y=per_step,
            name="tokens in the step",
            marker={"color": palette.PREFILL},
            hovertemplate="step %{x}: %{y} tokens<extra></extra>",
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=[schedule.max_batch_tokens] * len(steps),
            mode="lines",
            name=f"token budget ({schedule.max_batch_tokens})",
            line={"color": palette.FORMULA, "dash": "dash"},
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=[s.free_pages for s in schedule.steps],
            mode="lines",
            name=f"free KV pages (of {schedule.total_pages})",
            line={"color": palette.ACCENT},
            hovertemplate="step %{x}: %{y} free pages<extra></extra>",
        ),
        1,
        1,
    )


def _state_grid(
    fig, labels: list[str], codes: list[list[int]], tokens: list[list[int]], steps: list[int]
) -> None:
    """The lower panel: one row per request, one cell per step coloured by its state, and a
    legend for the colours."""
    import plotly.graph_objects as go

    n = len(STATES)
    scale = []
    for k, c in enumerate(STATE_COLOURS):
        scale += [[k / n, c], [(k + 1) / n, c]]
    hover = [
        [
            f"{labels[i]} · step {j}: {STATES[codes[i][j]]}"
            + (f", {tokens[i][j]} tokens" if tokens[i][j] else "")
            for j in steps
        ]
        for i in range(len(labels))
    ]
    fig.add_trace(
        go.Heatmap(
            z=codes,
            x=steps,
            y=labels,
            zmin=0,
            zmax=n,
            colorscale=scale,
            showscale=False,
            hovertext=hover,
            xgap=1,
            ygap=1,
            hovertemplate="%{hovertext}<extra></extra>",
        ),
        2,
        1,
    )
    for k in range(1, n):  # a legend for the colours
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=STATES[k],
                marker={"color": STATE_COLOURS[k], "size": 10, "symbol": "square"},
            ),
            2,
            1,
        )


# ---- the page table -----------------------------------------------------------------------------
PAGE_STATES = ["free", "prefix cache (finished, kept for reuse)"]
PAGES_PER_ROW = 16


def page_table_data(schedule: Schedule, step: int) -> dict[str, Any]:
    """At `step`: {"owner": [request id or None per page], "shared": [page index, ...],
    "cached_pages": n, "free_pages": n, "used_pages": n, "tokens": {request id: tokens in
    its cache}, "slots": page slots held, "wasted_slots": held slots not (yet) filled}.
    Pages are indexed 0 .. total_pages − 1."""
    _check_schedule(schedule)
    checks.whole("step", step, 0, len(schedule.steps) - 1)
    s: SchedulerStep = schedule.steps[step]
    owner: list[Optional[str]] = [None] * schedule.total_pages
    held_tokens: dict[str, int] = {}
    for e in s.batch:
        for page in e.pages:
            i = page - schedule.first_page
            if 0 <= i < schedule.total_pages and owner[i] is None:
                owner[i] = e.request_id
        held_tokens[e.request_id] = e.cached_tokens + e.query_tokens
    shared = [p - schedule.first_page for p in s.shared_pages]
    used = sum(1 for o in owner if o is not None)
    slots = sum(len(e.pages) for e in s.batch) * schedule.page_size
    filled = sum(held_tokens.values())
    return {
        "owner": owner,
        "shared": shared,
        "cached_pages": s.cached_pages,
        "free_pages": s.free_pages,
        "used_pages": used,
        "tokens": held_tokens,
        "slots": slots,
        "wasted_slots": max(0, slots - filled),
    }


def _frame_picks(n: int, max_frames: int) -> list[int]:
    """At most `max_frames` step indices of n, evenly spread, first and last included."""
    if n <= max_frames:
        return list(range(n))
    return sorted({round(k * (n - 1) / (max_frames - 1)) for k in range(max_frames)})


def _page_grid(schedule: Schedule, step: int, number: dict[str, int], k: int, rows: int):
    """One step's pages as a grid: colour index per cell (k: free), the holder's number per
    cell (-1: none), the shared cells' x and y, and `page_table_data` itself."""
    d = page_table_data(schedule, step)
    z: list[list[Optional[int]]] = [[None] * PAGES_PER_ROW for _ in range(rows)]
    who: list[list[int]] = [[-1] * PAGES_PER_ROW for _ in range(rows)]
    for i, o in enumerate(d["owner"]):
        r, c = divmod(i, PAGES_PER_ROW)
        z[r][c] = k if o is None else number[o] % k
        who[r][c] = -1 if o is None else number[o]
    sx = [i % PAGES_PER_ROW for i in d["shared"]]
    sy = [i // PAGES_PER_ROW for i in d["shared"]]
    return z, who, sx, sy, d


def _page_caption(schedule: Schedule, step: int, d: dict, names: Optional[dict[str, str]]) -> str:
    s = schedule.steps[step]
    running = ", ".join(_short(e.request_id, names) for e in s.batch)
    return (
        f"step {step}: {d['used_pages']} pages held by {len(s.batch)} "
        f"request{'s' if len(s.batch) != 1 else ''} ({running}); "
        f"{len(d['shared'])} shared, {d['free_pages']} free, "
        f"{d['cached_pages']} kept as prefix cache"
    )


def _player(picks: list[int], active: int = 0) -> dict[str, Any]:
    """A slider over the picked steps (showing picks[active]), right of a play and a pause
    button."""
    go_to = lambda duration: {
        "mode": "immediate",
        "frame": {
            "duration": duration,  # noqa: E731
            "redraw": True,
        },
        "transition": {"duration": 0},
        "fromcurrent": True,
    }
    # the slider starts 110 px in, right of the play/pause buttons (as step_controls)
    return {
        "sliders": [
            {
                "active": active,
                "x": 0,
                "len": 1,
                "y": 0,
                "yanchor": "top",
                "pad": {"t": 30, "l": 110},
                "currentvalue": {"prefix": "step "},
                "steps": [
                    {"label": str(s), "method": "animate", "args": [[str(s)], go_to(0)]}
                    for s in picks
                ],
            }
        ],
        "updatemenus": [
            {
                "type": "buttons",
                "showactive": False,
                "x": 0,
                "y": 0,
                "xanchor": "left",
                "yanchor": "top",
                "pad": {"t": 35},
                "direction": "left",
                "buttons": [
                    {"label": "▶", "method": "animate", "args": [None, go_to(400)]},
                    {
                        "label": "❚❚",
                        "method": "animate",
                        "args": [
                            [None],
                            {"mode": "immediate", "frame": {"duration": 0, "redraw": False}},
                        ],
                    },
                ],
            }
        ],
    }


def page_table_figure(
    schedule: Schedule,
    names: Optional[dict[str, str]] = None,
    max_frames: int = 60,
    start: Optional[int] = None,
):
    """Plotly: the KV cache's pages as a grid, one cell per page, coloured by the request
    that holds it (grey: free or kept as prefix cache; ◆: shared by several requests through
    a common prefix); a slider and play button step through the schedule (at most
    `max_frames` evenly spread steps, to keep the figure small, and `start`). Only the
    requests in the step are drawn as holders. It opens at step `start` (default: the busiest
    of those steps, whose requests hold the most pages; a saved picture shows that one).
    Lesson 09."""
    import plotly.graph_objects as go

    _check_schedule(schedule)
    if start is not None:
        last = len(schedule.steps) - 1
        checks.whole("start", start, 0, last, what=f"a step of the schedule, 0 to {last}")
    number = {rid: _request_number(rid, i) for i, rid in enumerate(schedule.request_ids())}
    colours = palette.CYCLE[:-1] + [palette.YELLOW]
    k = len(colours)
    rows = (schedule.total_pages + PAGES_PER_ROW - 1) // PAGES_PER_ROW
    picks = set(_frame_picks(len(schedule.steps), max_frames)) | ({start} - {None})
    grids = {s: _page_grid(schedule, s, number, k, rows) for s in sorted(picks)}  # each once
    if start is None:  # the busiest step shown, the earliest of a tie
        start = max(grids, key=lambda s: (grids[s][4]["used_pages"], -s))
    picks = list(grids)
    scale = []
    for j, c in enumerate(colours + [WAITING]):
        scale += [[j / (k + 1), c], [(j + 1) / (k + 1), c]]
    z, who, sx, sy, d0 = grids[start]
    fig = go.Figure(
        [
            go.Heatmap(
                z=z,
                zmin=0,
                zmax=k + 1,
                colorscale=scale,
                showscale=False,
                xgap=2,
                ygap=2,
                customdata=who,
                hovertemplate="page %{y}×16+%{x}: request #%{customdata} (-1: none)<extra></extra>",
            ),
            go.Scatter(
                x=sx,
                y=sy,
                mode="markers",
                name="shared page",
                marker={"symbol": "diamond", "size": 9, "color": palette.FORMULA},
                hovertemplate="shared by several requests<extra></extra>",
            ),
        ]
    )
    caption = {
        "x": 0,
        "y": 1.12,
        "xref": "paper",
        "yref": "paper",
        "showarrow": False,
        "xanchor": "left",
    }
    fig.frames = _page_frames(schedule, grids, caption, names)
    fig.update_layout(
        **plotly_layout(
            f"the paged KV cache: {schedule.total_pages} pages of {schedule.page_size} tokens",
            height=230 + 30 * rows,
            showlegend=False,
            annotations=[{**caption, "text": _page_caption(schedule, start, d0, names)}],
            margin={"l": 40, "r": 20, "t": 90, "b": 120},
            **_player(picks, picks.index(start)),
        )
    )
    fig.update_xaxes(visible=False, range=[-0.5, PAGES_PER_ROW - 0.5])
    fig.update_yaxes(visible=False, autorange="reversed", range=[rows - 0.5, -0.5])
    return fig


def _page_frames(
    schedule: Schedule,
    grids: dict[int, tuple],
    caption: dict[str, Any],
    names: Optional[dict[str, str]],
) -> list:
    """One animation frame per picked step: its grid, its shared pages and its caption."""
    import plotly.graph_objects as go

    frames = []
    for step, (z, who, sx, sy, d) in grids.items():
        frames.append(
            go.Frame(
                name=str(step),
                data=[go.Heatmap(z=z, customdata=who), go.Scatter(x=sx, y=sy)],
                traces=[0, 1],
                layout={
                    "annotations": [{**caption, "text": _page_caption(schedule, step, d, names)}]
                },
            )
        )
    return frames
