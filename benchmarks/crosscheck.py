"""viz's load figures checked against a peer's: GuideLLM and `viz load` on the same workload,
against the same server, at 1, 4 and 8 streams.

    .venv/bin/python benchmarks/crosscheck.py                    # ~5 min here (+ ~1 min once)
    .venv/bin/python benchmarks/crosscheck.py --repeats 2        # ~10 min: each tool twice
    .venv/bin/python benchmarks/crosscheck.py --prompt-tokens 128 --output-tokens 64 --requests 24
    .venv/bin/python benchmarks/crosscheck.py --quick            # tiny workload, seconds
    .venv/bin/python benchmarks/crosscheck.py --quick --peer none   # viz's side only

What it does: makes (once) a separate virtual environment with GuideLLM pinned
(`guidellm==0.8.1`, its torch held to the project's CPU build by `-c requirements.txt`) in
~/.cache/llm-inference-viz/crosscheck/ ($VIZ_CACHE_DIR), never in the repository; starts the
embedded `transformers serve` (continuous batching, viz's CPU sizing) on 127.0.0.1; then, at
each stream count, runs `viz.serve.run_load` and `guidellm run` one after the other (the order
alternating, so neither always meets a warmer server) on the same workload:

- prompts of `--prompt-tokens` tokens of text, counted by the model's own tokenizer (viz cuts
  them from lesson 01's paragraph, GuideLLM writes them with Faker; both are sent as one chat
  message, so the server counts the chat template's ~30 tokens on top, in both);
- answers capped at `--output-tokens` with `max_tokens` alone: GuideLLM's synthetic
  `output_tokens` would add `ignore_eos`, which `transformers serve` refuses with HTTP 422,
  and viz sends no length field to that server either. Both record the lengths they got.

Then, per stream count and metric, the ratio viz ÷ GuideLLM of the medians, with its spread
(the middle halves of the two tools' per-request values, worst case: `viz.Spread` division),
and a verdict: within the spread (the interval holds 1), or the reason it is not — the
definitions; the lengths each tool really sent (as the server counted them); or the server
itself: it times every request on its own clock (`EmbeddedServer(record=True)`: received, each
token, finished), GuideLLM's as well as viz's, so where the same ratio holds on the server's
clock, the server did differently under the two runs (the machine's other load moved, the
requests arrived otherwise) and each tool measured what it did. The metrics are compared by
definition, not by name (viz.serve.metrics):

| here | viz | GuideLLM 0.8 |
|---|---|---|
| TTFT | send → first text chunk | `time_to_first_token_ms`: the same |
| ITL | every gap between chunks, pooled (vLLM) | `inter_token_latency_ms`: (E2E − TTFT) ÷ (n − 1) per request — viz's TPOT |
| TPOT | (E2E − TTFT) ÷ (n − 1) per request | `time_per_output_token_ms`: E2E ÷ n, the first token's wait included — viz's normalized TPOT |
| output tokens/s | all output tokens ÷ (first send → last end) | the same, from its requests' times |

so the table shows the same-name ratio and, where the definitions differ, the same-definition
ratio beside it. A benchmark, not a test: nothing fails on a slow machine. `--quick` (tested in
tests/test_serve_crosscheck.py) runs a tiny workload; `--peer none` runs viz's side only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from viz.spread import Spread  # noqa: E402

GUIDELLM = "guidellm==0.8.1"
STAMP = ".viz-crosscheck-installed"
INSTALL_TIMEOUT_S = 1200
RUN_TIMEOUT_S = 900


# ---- GuideLLM's environment, made once -----------------------------------------------------------
def venv_dir() -> Path:
    from viz.default_model import cache_dir

    return cache_dir() / "crosscheck" / GUIDELLM.replace("==", "-")


def guidellm_python(folder: Optional[Path] = None) -> Path:
    """The python of a venv holding GuideLLM, made once (~1 min, ~1.5 GB with torch)."""
    folder = folder or venv_dir()
    python = folder / "bin" / "python"
    if (folder / STAMP).is_file() and python.is_file():
        return python
    if folder.exists():  # an install that did not finish: start again
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    print(f"making {folder} with {GUIDELLM} (once; about a minute)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            GUIDELLM,
            "-c",
            str(ROOT / "requirements.txt"),
        ],
        check=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    (folder / STAMP).write_text(GUIDELLM + "\n")
    return python


def guidellm_command(
    python: Path,
    base_url: str,
    model: str,
    prompt_tokens: int,
    output_tokens: int,
    streams: int,
    requests: int,
    out: Path,
) -> list[str]:
    """GuideLLM 0.8's command line for one stream count (its JSON report in `out`)."""
    target = base_url.removesuffix("/v1")
    return [
        str(python),
        "-m",
        "guidellm",
        "run",
        "--backend",
        f"kind=openai_http,target={target},model={model},max_tokens={output_tokens}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={prompt_tokens}",
        "--profile",
        f"kind=concurrent,streams={streams}",
        "--constraint",
        f"kind=max_requests,count={requests}",
        "--output",
        f"kind=json,path={out}",
        "--disable-console-interactive",
    ]


# ---- one tool's figures at one load ----------------------------------------------------------
@dataclass
class Figures:
    """One tool's per-request values at one load (seconds), by viz's definitions."""

    tool: str
    ttft: list[float] = field(default_factory=list)
    itl_gaps: list[float] = field(default_factory=list)  # every gap pooled (viz's ITL)
    tpot: list[float] = field(default_factory=list)  # (E2E − TTFT) ÷ (n − 1) per request
    ntpot: list[float] = field(default_factory=list)  # E2E ÷ n per request
    output_tokens: list[int] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)  # as the server counted them
    tokens_per_s: Optional[float] = None
    failed: int = 0
    server: Optional["Figures"] = None  # the same requests on the server's own clock


def merged(runs: list[Figures]) -> Figures:
    """Several runs of one tool at one load as one: their requests pooled, the throughput the
    median of the runs' (each run's is one figure)."""
    if len(runs) == 1:
        return runs[0]
    f = Figures(runs[0].tool, failed=sum(r.failed for r in runs))
    for name in ("ttft", "itl_gaps", "tpot", "ntpot", "output_tokens", "prompt_tokens"):
        setattr(f, name, [v for r in runs for v in getattr(r, name)])
    rates = [r.tokens_per_s for r in runs if r.tokens_per_s]
    f.tokens_per_s = statistics.median(rates) if rates else None
    servers = [r.server for r in runs if r.server is not None]
    f.server = merged(servers) if servers else None
    return f


def viz_figures(run) -> Figures:
    done = [r for r in run.requests if r.ok]
    return Figures(
        "viz",
        [r.ttft_s for r in done],
        [g for r in done for g in r.itl_s],
        [r.tpot_s for r in done if r.tpot_s is not None],
        [r.ntpot_s for r in done],
        [r.n_output_tokens for r in done],
        [r.prompt_tokens for r in done if r.prompt_tokens is not None],
        run.summary().output_tokens_per_s,
        len(run.requests) - len(done),
    )


def guidellm_figures(report: dict) -> Figures:
    """GuideLLM's JSON report (one benchmark) in viz's terms: its per-request TTFT, its
    `inter_token_latency_ms` (viz's TPOT), its `time_per_output_token_ms` (viz's normalized
    TPOT); no per-gap times, so no pooled ITL; throughput from its requests' own times."""
    bench = report["benchmarks"][0]
    done = bench["requests"]["successful"]
    f = Figures(
        "GuideLLM",
        failed=len(bench["requests"].get("errored") or [])
        + len(bench["requests"].get("incomplete") or []),
    )
    for r in done:
        f.ttft.append(r["time_to_first_token_ms"] / 1e3)
        if r.get("inter_token_latency_ms") is not None and r["output_tokens"] > 1:
            f.tpot.append(r["inter_token_latency_ms"] / 1e3)
        f.ntpot.append(r["time_per_output_token_ms"] / 1e3)
        f.output_tokens.append(int(r["output_tokens"]))
        f.prompt_tokens.append(int(r["prompt_tokens"]))
    if done:
        span = max(r["request_end_time"] for r in done) - min(r["request_start_time"] for r in done)
        f.tokens_per_s = sum(f.output_tokens) / span if span > 0 else None
    return f


# ---- the comparison ----------------------------------------------------------------------------
# (row, viz's values, the peer's values, what the row means). The peer's ITL is per request: the
# same-definition row for it is viz's TPOT.
ROWS = [
    ("TTFT", "ttft", "ttft", "the same definition in both"),
    (
        "ITL",
        "itl_gaps",
        "tpot",
        "viz: every gap pooled; GuideLLM: (E2E − TTFT) ÷ (n − 1) per request (viz's TPOT)",
    ),
    ("ITL, same definition", "tpot", "tpot", "(E2E − TTFT) ÷ (n − 1) per request in both"),
    (
        "TPOT",
        "tpot",
        "ntpot",
        "viz: (E2E − TTFT) ÷ (n − 1); GuideLLM: E2E ÷ n, the first "
        "token's wait included (viz's normalized TPOT)",
    ),
    ("TPOT, same definition", "ntpot", "ntpot", "E2E ÷ n per request in both"),
]


@dataclass
class Row:
    streams: int
    metric: str
    viz: Optional[Spread]
    peer: Optional[Spread]
    ratio: Optional[Spread]
    verdict: str


def compare(streams: int, a: Figures, b: Figures) -> list[Row]:
    """One row per metric: viz ÷ peer, with spread and verdict."""
    rows = []
    for name, mine, theirs, meaning in ROWS:
        x, y = getattr(a, mine), getattr(b, theirs)
        if not x or not y:
            rows.append(
                Row(
                    streams,
                    name,
                    Spread.of(x) if x else None,
                    Spread.of(y) if y else None,
                    None,
                    "n/a (no values)",
                )
            )
            continue
        sx, sy = Spread.of(x), Spread.of(y)
        ratio = sx / sy
        rows.append(Row(streams, name, sx, sy, ratio, verdict(name, ratio, a, b, meaning)))
    rows.append(_throughput(streams, a, b))
    return rows


def _throughput(streams: int, a: Figures, b: Figures) -> Row:
    """Output tokens/s: one figure per run; its spread from the requests' paces (as
    `viz.serve.throughput_ratio`): the peer's TPOT ÷ viz's, worst case of their middle halves."""
    if not a.tokens_per_s or not b.tokens_per_s or not a.tpot or not b.tpot:
        return Row(streams, "output tokens/s", None, None, None, "n/a (no values)")
    pace = Spread.of(b.tpot) / Spread.of(a.tpot)
    r = a.tokens_per_s / b.tokens_per_s
    ratio = Spread(r, r * pace.low / pace.median, r * pace.high / pace.median, pace.runs, True)
    return Row(
        streams,
        "output tokens/s",
        Spread.exact(a.tokens_per_s),
        Spread.exact(b.tokens_per_s),
        ratio,
        verdict("output tokens/s", ratio, a, b, "the same definition in both"),
    )


def verdict(name: str, ratio: Spread, a: Figures, b: Figures, meaning: str) -> str:
    """'within the spread', or why not: the definitions, then the workload each tool really
    sent (prompt and answer lengths as counted), else an unexplained difference."""
    if ratio.low <= 1.0 <= ratio.high:
        return "within the spread"
    side = "higher" if ratio.median > 1 else "lower"
    if "same definition" not in name and "the same definition" not in meaning:
        return f"viz {side}: by definition ({meaning})"
    reasons = []
    for what, x, y in (
        ("answers", a.output_tokens, b.output_tokens),
        ("prompts as the server counted them", a.prompt_tokens, b.prompt_tokens),
    ):
        if (
            x
            and y
            and abs(statistics.median(x) - statistics.median(y)) > 0.1 * statistics.median(y)
        ):
            reasons.append(
                f"{what}: viz median {statistics.median(x):g} tokens, GuideLLM "
                f"{statistics.median(y):g}"
            )
    if reasons:
        return f"viz {side}: the workloads differed — " + "; ".join(reasons)
    own = server_ratio(name, a, b)
    if own is not None and ratio.low <= own.median <= ratio.high:
        return (
            f"viz {side}: the server served viz's requests so — by its own clock the "
            f"ratio is ×{own.median:.2f} ({own.low:.2f}–{own.high:.2f}): it did "
            "differently under the two runs (the machine's other load, how requests "
            "arrived), and each tool measured what it did"
        )
    return (
        f"viz {side} beyond the spread, not by definition, workload or the server's own "
        "clock: a difference in how the tools measure (look at the requests of both)"
    )


# What the server's own clock gives for each row: received → first token, (last − first token)
# ÷ (n − 1), (last token − received) ÷ n, tokens ÷ (first received → last token).
SERVER_SIDE = {
    "TTFT": "ttft",
    "ITL, same definition": "tpot",
    "TPOT, same definition": "ntpot",
    "output tokens/s": "tokens_per_s",
}


def server_ratio(name: str, a: Figures, b: Figures) -> Optional[Spread]:
    """viz's requests ÷ GuideLLM's on the server's own clock, for the rows it can time."""
    attr = SERVER_SIDE.get(name)
    if attr is None or a.server is None or b.server is None:
        return None
    x, y = getattr(a.server, attr), getattr(b.server, attr)
    if attr == "tokens_per_s":
        return Spread.exact(x / y) if x and y else None
    return Spread.of(x) / Spread.of(y) if x and y else None


def server_figures(timings: list[dict]) -> Figures:
    """Requests as the server timed them (`EmbeddedServer(record=True)`: received, each
    token, finished; one monotonic clock for every request, whoever sent it)."""
    f = Figures("server")
    done = [t for t in timings if t.get("tokens") and not t.get("error")]
    for t in done:
        toks = t["tokens"]
        f.ttft.append(toks[0] - t["received"])
        if len(toks) > 1:
            f.tpot.append((toks[-1] - toks[0]) / (len(toks) - 1))
        f.ntpot.append((toks[-1] - t["received"]) / len(toks))
        f.output_tokens.append(len(toks))
    if done:
        span = max(t["tokens"][-1] for t in done) - min(t["received"] for t in done)
        f.tokens_per_s = sum(f.output_tokens) / span if span > 0 else None
    return f


def table(rows: list[Row]) -> str:
    def ms(s: Optional[Spread], tput: bool = False) -> str:
        if s is None:
            return "n/a"
        if tput:
            return f"{s.median:.1f}"
        return f"{s.median * 1e3:.0f} ({s.low * 1e3:.0f}–{s.high * 1e3:.0f})"

    lines = [
        f"{'streams':>7}  {'metric':<22} {'viz, ms':>16} {'GuideLLM, ms':>16} "
        f"{'viz ÷ GuideLLM':>20}  verdict"
    ]
    for r in rows:
        tput = r.metric == "output tokens/s"
        ratio = (
            "n/a"
            if r.ratio is None
            else f"×{r.ratio.median:.2f} ({r.ratio.low:.2f}–{r.ratio.high:.2f})"
        )
        lines.append(
            f"{r.streams:>7}  {r.metric:<22} {ms(r.viz, tput):>16} "
            f"{ms(r.peer, tput):>16} {ratio:>20}  {r.verdict}"
        )
    lines.append(
        "(ms: median and middle half of the per-request values; output tokens/s: one "
        "figure per run, its ratio spread from the requests' paces)"
    )
    return "\n".join(lines)


# ---- the run --------------------------------------------------------------------------------------
def order(k: int, repeats: int) -> list[str]:
    """The tools' runs at the k-th stream count: viz, peer, peer, viz, viz, peer, ... (the
    first of each pair alternating with k too)."""
    pair = ["viz", "peer"] if k % 2 == 0 else ["peer", "viz"]
    return [t for i in range(repeats) for t in (pair if i % 2 == 0 else pair[::-1])]


def run_guidellm(
    python: Path, server, model: str, args, streams: int, n: int, out: Path
) -> Figures:
    cmd = guidellm_command(
        python, server.url, model, args.prompt_tokens, args.output_tokens, streams, n, out
    )
    print("  $ " + " ".join(cmd[1:]), flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    t0, before = time.perf_counter(), set(server.server_timings())
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0 or not out.is_file():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise SystemExit(f"GuideLLM failed (exit {done.returncode}):\n{tail}")
    figures = guidellm_figures(json.loads(out.read_text()))
    timings = server.server_timings()
    figures.server = server_figures(
        [t for k, t in timings.items() if k not in before and t["received"] >= t0]
    )
    return figures


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--streams", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--requests", type=int, default=16, help="per stream count, tool and repeat")
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs of each tool per stream count, in the order viz, GuideLLM, "
        "GuideLLM, viz, ... (a steady drift of the machine's load cancels); "
        "requests pooled, throughput the median of the runs",
    )
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--output-tokens", type=int, default=32)
    p.add_argument(
        "--quick",
        action="store_true",
        help="a tiny workload: 16 tokens in, 8 out, 4 requests at 1 and 2 streams",
    )
    p.add_argument(
        "--peer",
        choices=["guidellm", "none"],
        default="guidellm",
        help="none: viz's side only (no GuideLLM environment needed)",
    )
    p.add_argument(
        "--venv", default=None, help=f"where GuideLLM's venv lives (default {venv_dir()})"
    )
    p.add_argument("-o", "--out", default=None, help="keep the runs and reports in this folder")
    args = p.parse_args(argv)
    if args.quick:
        args.streams, args.requests, args.prompt_tokens, args.output_tokens = [1, 2], 4, 16, 8
    from viz.serve import EmbeddedServer, Workload, run_load

    workload = Workload.synthetic(args.prompt_tokens, args.output_tokens)
    python = (
        guidellm_python(Path(args.venv) if args.venv else None) if args.peer == "guidellm" else None
    )
    folder = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="viz-crosscheck-"))
    folder.mkdir(parents=True, exist_ok=True)
    began, rows = time.perf_counter(), []
    print(
        f"workload: {workload}, {args.requests} requests per stream count and tool; "
        f"answers capped with max_tokens (no ignore_eos: transformers serve refuses it)"
    )
    with EmbeddedServer(continuous_batching=True, record=True) as server:
        model = str(server.model_folder)
        print(f"server: {server!r}", flush=True)
        for k, streams in enumerate(args.streams):
            n = max(args.requests, streams)
            mine_runs, their_runs = [], []
            for tool in order(k, args.repeats):
                i = len(mine_runs) if tool == "viz" else len(their_runs)
                if tool == "viz":
                    run = run_load(
                        server,
                        concurrency=streams,
                        n_requests=n,
                        workload=workload,
                        seed=k * 100 + i,
                        progress=False,
                        out=str(folder / f"viz-{streams}-{i}.json"),
                    )
                    mine_runs.append(viz_figures(run))
                    timings = server.server_timings()
                    mine_runs[-1].server = server_figures(
                        [timings[r.request_id] for r in run.requests if r.request_id in timings]
                    )
                    print(
                        f"  viz load --concurrency {streams}: {run.summary().n_completed} "
                        f"completed, {mine_runs[-1].tokens_per_s or 0:.1f} tokens/s",
                        flush=True,
                    )
                elif python is not None:
                    their_runs.append(
                        run_guidellm(
                            python,
                            server,
                            model,
                            args,
                            streams,
                            n,
                            folder / f"guidellm-{streams}-{i}.json",
                        )
                    )
            mine = merged(mine_runs)
            theirs = merged(their_runs) if their_runs else Figures("none")
            rows += compare(streams, mine, theirs)
            lengths = (
                f"answers: viz median {statistics.median(mine.output_tokens or [0]):g} "
                f"tokens"
                + (
                    f", GuideLLM {statistics.median(theirs.output_tokens):g}"
                    if theirs.output_tokens
                    else ""
                )
            )
            pace = (
                ""
                if theirs.server is None or not theirs.server.tpot
                else (
                    f"; by the server's clock, TPOT p50 of viz's requests "
                    f"{statistics.median(mine.server.tpot) * 1e3:.0f} ms, of GuideLLM's "
                    f"{statistics.median(theirs.server.tpot) * 1e3:.0f} ms"
                )
            )
            print(
                f"  {streams} streams: {lengths}{pace}; load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print()
    print(table(rows))
    print(f"\n{time.perf_counter() - began:.0f} s; runs and reports in {folder}")
    (folder / "crosscheck.txt").write_text(table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
