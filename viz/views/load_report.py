"""The load report: load runs and rate sweeps in ONE self-contained HTML file that opens offline.

`python -m viz report run.json [sweep.json ...] -o load.html` (or `write_load_report`), for
what `viz.serve.run_load` and `viz.serve.sweep_rates` saved — several side by side, e.g. the
same sweep against two servers. As the trace report (`viz.views.report`): plotly.js inline (no
CDN, no network), fixed element ids and no timestamps (the file is byte-identical when written
twice from the same documents), written atomically (a failed report never replaces a good one).

What it holds, each section built from the documents of one kind:
- every document: what was measured — server, model, load or sweep settings, when, the cores
  each side kept busy, and why a run or sweep stopped early;
- load runs: their summaries side by side (one column per run), every request's metrics with
  their definitions (`viz.serve.REQUEST_METRICS`), throughput against latency, the
  inter-token latencies, each run's request timeline, and its scheduler when it recorded one;
- rate sweeps: each sweep's table (medians and the confidence interval of each median), the
  limit its requests broke first, latency and goodput against the rate, and the Pareto of each
  user's tokens/s against everyone's.
Lesson 09 (Serving many users).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

from viz.documents import atomic_write
from viz.provenance import shown_iso
from viz.serve.loadgen import LoadRun
from viz.serve.metrics import REQUEST_METRICS, request_metrics
from viz.serve.sweep import LoadSweep
from viz.version import __version__
from viz.views.load_sweep import pareto_figure, rate_sweep_figure
from viz.views.report import REPORT_CSS, plotly_div
from viz.views.serving import (
    itl_distribution_figure,
    request_names,
    request_timeline_figure,
    run_name,
    schedule_figure,
    serving_tradeoff_figure,
)
from viz.views.text import esc

_EXTRA_CSS = """
table.viz-grid{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
table.viz-grid td,table.viz-grid th{border-bottom:1px solid #e4e4e4;padding:3px 10px 3px 0;
  text-align:right;vertical-align:top} table.viz-grid th{font-weight:bold}
table.viz-grid td:first-child,table.viz-grid th:first-child{text-align:left}
pre.viz-table{font-size:12px;overflow-x:auto;background:#f8f8f8;padding:8px}
table.viz-text td,table.viz-text th{text-align:left}
h3{font-size:15px;margin:14px 0 4px}
"""


def check_documents(docs: Any) -> list:
    """A non-empty list of LoadRuns and LoadSweeps, or a ValueError naming the fix."""
    if isinstance(docs, (LoadRun, LoadSweep)):
        docs = [docs]
    if not isinstance(docs, (list, tuple)) or not docs:
        raise ValueError(
            "give the load report a non-empty list of load runs and rate sweeps "
            "(viz.serve.LoadRun / LoadSweep, or files saved by `python -m viz "
            "load -o`)"
        )
    for d in docs:
        if not isinstance(d, (LoadRun, LoadSweep)):
            raise ValueError(
                f"the load report takes load runs and rate sweeps, not "
                f"{type(d).__name__}: a trace has its own report (`python -m viz "
                "report trace.json`)"
            )
    return list(docs)


def _name(d: Any) -> str:
    return run_name(d) if isinstance(d, LoadRun) else d.name


def _ms(v: Any) -> str:
    return "n/a" if v is None else f"{v * 1e3:,.0f}"


def _grid(head: Sequence[str], rows: Sequence[Sequence[Any]], text: bool = False) -> str:
    """A table; numbers right-aligned, or every column left-aligned with text=True."""
    th = "".join(f"<th>{esc(str(h))}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    cls = "viz-grid viz-text" if text else "viz-grid"
    return f'<table class="{cls}"><tr>{th}</tr>{body}</table>'


# ---- every document: what was measured ---------------------------------------------------------
def _about(docs: list) -> str:
    rows = []
    for i, d in enumerate(docs):
        server = d.server
        engine = (
            f"{server.software}, {server.model}, {server.dtype} on {server.device}"
            if server
            else "not started by viz"
        )
        if isinstance(d, LoadRun):
            s = d.settings
            what = (
                f"load run: {d.workload_label}, {s.n_requests} requests, seed {s.seed}"
                + "".join(f"; {t}" for t in (s.workload.details, s.length_note) if t)
            )
            cores = (
                ""
                if d.client_cores is None
                else f"client {d.client_cores:.2f}"
                + ("" if d.server_cores is None else f", server {d.server_cores:.2f}")
            )
        else:
            s = d.settings
            what = (
                f"rate sweep: {s.workload}, {len(d.points)} loads, {s.n_requests} "
                "requests per run, "
                f"{s.repeats} run{'s' if s.repeats != 1 else ''} per load, "
                f"{d.duration_s:.0f} s"
            )
            cores = ""
        rows.append(
            [
                f"{i + 1}. {_name(d)}",
                what,
                f"{d.target.base_url} ({d.target.model})",
                engine,
                shown_iso(d.recorded_at),
                cores or "n/a",
                d.stopped or "no",
            ]
        )
    return _grid(
        [
            "document",
            "what",
            "target",
            "server",
            "recorded (UTC)",
            "cores kept busy",
            "stopped early",
        ],
        rows,
        text=True,
    )


# ---- load runs -----------------------------------------------------------------------------------
def _summaries(runs: list[LoadRun]) -> str:
    sums = [r.summary() for r in runs]
    rows = [
        ["requests completed / failed", *[f"{s.n_completed} / {s.n_failed}" for s in sums]],
        ["duration, s", *["n/a" if s.duration_s is None else f"{s.duration_s:.1f}" for s in sums]],
        [
            "output tokens / s",
            *[
                "n/a" if s.output_tokens_per_s is None else f"{s.output_tokens_per_s:.1f}"
                for s in sums
            ],
        ],
        [
            "requests / s",
            *["n/a" if s.requests_per_s is None else f"{s.requests_per_s:.2f}" for s in sums],
        ],
    ]
    for name, key in (("TTFT", "ttft_s"), ("ITL", "itl_s"), ("TPOT", "tpot_s"), ("E2E", "e2e_s")):
        for p in ("p50", "p90", "p99"):
            rows.append([f"{name} {p}, ms", *[_ms(getattr(s, key)[p]) for s in sums]])
    rows.append(
        [
            "goodput, requests / s",
            *["n/a" if s.goodput_per_s is None else f"{s.goodput_per_s:.2f}" for s in sums],
        ]
    )
    rows.append(["objective", *[str(s.slo) for s in sums]])
    rows.append(["met it", *[f"{s.n_met_slo} of {s.n_completed}" for s in sums]])
    rows.insert(0, ["workload", *[str(r.settings.workload) for r in runs]])
    rows.append(
        ["answers stopped early", *[f"{s.n_stopped_early} of {s.n_completed}" for s in sums]]
    )
    return _grid(
        ["", *[f"{i + 1}. {run_name(r)} · {r.load_label}" for i, r in enumerate(runs)]], rows
    )


def _per_request(runs: list[LoadRun]) -> str:
    names = [m[0] for m in REQUEST_METRICS]
    parts = []
    for i, run in enumerate(runs):
        asked = {r.index: r for r in run.requests}
        rows = [
            [
                row["request"],
                row["prompt"],
                row["prompt tokens"] or "n/a",
                _asked(asked[row["request"]]),
                row["output tokens"],
                *[_ms(row[n]) for n in names],
            ]
            for row in request_metrics(run.requests)
        ]
        early = run.summary().n_stopped_early
        early_note = (
            (
                f'<p class="viz-note">{early} answer{"s" if early != 1 else ""} stopped '
                "before the length asked (marked *), at the model's end of text"
                + esc(f"; {run.settings.length_note}" if run.settings.length_note else "")
                + "</p>"
            )
            if early
            else ""
        )
        failed = [r for r in run.requests if not r.ok]
        note = (
            (
                f'<p class="viz-note">{len(failed)} failed: '
                + esc("; ".join(f"#{r.index} {r.error}" for r in failed[:5]))
                + (" …" if len(failed) > 5 else "")
                + "</p>"
            )
            if failed
            else ""
        )
        parts.append(
            f"<h3>{i + 1}. {esc(run_name(run))} · {esc(run.load_label)}</h3>"
            + _grid(
                [
                    "request",
                    "prompt",
                    "prompt tokens",
                    "asked",
                    "output tokens",
                    *[f"{n}, ms" for n in names],
                ],
                rows,
            )
            + early_note
            + note
        )
    defs = "".join(
        f"<li><b>{esc(n)}</b>: {esc(d)} ({esc(peers)})</li>" for n, _, d, peers in REQUEST_METRICS
    )
    return "".join(parts) + f'<ul class="viz-note">{defs}</ul>'


def _asked(r) -> str:
    """The answer length asked ("32", or "32 *" for an answer that stopped before it)."""
    return f"{r.max_tokens}{' *' if r.stopped_early else ''}"


def _timelines(runs: list[LoadRun]) -> str:
    return "".join(
        f"<h3>{i + 1}. {esc(run_name(r))} · {esc(r.load_label)}</h3>"
        + plotly_div(request_timeline_figure(r), f"viz-load-timeline-{i}")
        for i, r in enumerate(runs)
    )


def _schedules(runs: list[LoadRun]) -> str:
    out = [
        f"<h3>{i + 1}. {esc(run_name(r))} · {esc(r.load_label)}</h3>"
        + plotly_div(schedule_figure(r.schedule, request_names(r)), f"viz-load-schedule-{i}")
        for i, r in enumerate(runs)
        if r.schedule is not None and r.schedule.steps
    ]
    return "".join(out)


# ---- rate sweeps ---------------------------------------------------------------------------------
def _sweep_tables(sweeps: list[LoadSweep]) -> str:
    return "".join(
        f'<h3>{i + 1}. {esc(s.name)}</h3><pre class="viz-table">{esc(str(s))}</pre>'
        f'<p class="viz-note">limit broken first as the load rose: '
        f"{esc(str(s.first_miss()))}</p>"
        for i, s in enumerate(sweeps)
    )


# (id, heading, what it shows, the kind it takes, builder). The report holds each that has
# documents of its kind, in this order.
SECTIONS: list[tuple[str, str, str, str, Callable[[list], str]]] = [
    (
        "about",
        "What was measured",
        "Each document: the server, the load or the sweep, when, "
        "and why it stopped early if it did.",
        "all",
        _about,
    ),
    (
        "summary",
        "Summaries side by side",
        "Every figure of each load run (definitions: "
        "viz.serve.metrics). Percentiles over requests; ITL over every gap.",
        "run",
        _summaries,
    ),
    (
        "requests",
        "Every request, every metric",
        "The same requests under each name the "
        "benchmarks use: the numbers show how far apart they are.",
        "run",
        _per_request,
    ),
    (
        "tradeoff",
        "Throughput against latency",
        "One point per run: everybody's tokens per second against each request's time per token.",
        "run",
        lambda runs: plotly_div(serving_tradeoff_figure(runs), "viz-load-tradeoff"),
    ),
    (
        "itl",
        "Inter-token latency",
        "Every gap between two tokens of a request, each run.",
        "run",
        lambda runs: plotly_div(itl_distribution_figure(runs), "viz-load-itl"),
    ),
    (
        "timelines",
        "Request timelines",
        "One row per request: waiting, prefill, decode, a tick per token received.",
        "run",
        _timelines,
    ),
    (
        "schedules",
        "The scheduler, pass by pass",
        "Runs whose server recorded its scheduler: which requests each forward pass carried.",
        "scheduled",
        _schedules,
    ),
    (
        "sweeps",
        "Rate sweeps",
        "Each load's medians over its repeats, in brackets the confidence interval of the median.",
        "sweep",
        _sweep_tables,
    ),
    (
        "sweep-latency",
        "Latency and goodput against the rate",
        "Where goodput leaves "
        "throughput, requests start to miss the objective; ✕ marks a saturated rate.",
        "sweep",
        lambda sweeps: plotly_div(rate_sweep_figure(sweeps), "viz-load-sweep"),
    ),
    (
        "pareto",
        "Each user's speed against everyone's",
        "The throughput/latency trade-off in one picture: up and to the right is better.",
        "sweep",
        lambda sweeps: plotly_div(pareto_figure(sweeps), "viz-load-pareto"),
    ),
]


def _of_kind(docs: list, kind: str) -> list:
    if kind == "all":
        return docs
    if kind == "sweep":
        return [d for d in docs if isinstance(d, LoadSweep)]
    runs = [d for d in docs if isinstance(d, LoadRun)]
    if kind == "scheduled":
        return [r for r in runs if r.schedule is not None and r.schedule.steps]
    return runs


def load_report_html(docs: Any) -> str:
    """The whole load report as one HTML string (plotly.js inline)."""
    from plotly.offline import get_plotlyjs

    docs = check_documents(docs)
    sections = [
        (key, head, lead, make(chosen))
        for key, head, lead, kind, make in SECTIONS
        if (chosen := _of_kind(docs, kind))
    ]
    names = ", ".join(_name(d) for d in docs)
    title = f"Serving report: {names}"
    nav = "".join(f'<a href="#{key}">{esc(head)}</a>' for key, head, _, _ in sections)
    body = "".join(
        f'<section id="{key}"><h2>{esc(head)}</h2><p class="viz-lead">{esc(lead)}'
        f"</p>{html}</section>"
        for key, head, lead, html in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{REPORT_CSS}{_EXTRA_CSS}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head>\n<body>'
        f"<h1>{esc(title)}</h1><nav>{nav}</nav>{body}"
        f"<footer>Made by viz {esc(__version__)} from {len(docs)} saved "
        f"document{'s' if len(docs) != 1 else ''}. Everything here was recorded or "
        "computed from them; nothing is fetched from the network.</footer></body></html>\n"
    )


def write_load_report(docs: Any, path: str | os.PathLike) -> Path:
    """Write `load_report_html(docs)` to `path`, atomically (built first, then written beside
    `path` and renamed over it: a failure never leaves a half file)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise ValueError(
            f"{path} is not a regular file: give the report a file name, e.g. -o load.html"
        )
    if path.is_symlink():
        path = path.resolve()
    html = load_report_html(docs)
    try:
        atomic_write(path, html)
    except OSError as e:
        raise ValueError(
            f"cannot write the report to {path}: {e.strerror or e}; choose another place with -o"
        ) from None
    return path
