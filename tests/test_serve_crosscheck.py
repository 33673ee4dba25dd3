"""benchmarks/crosscheck.py: GuideLLM's report read in viz's terms, the ratios and verdicts worked
out by hand. Its --quick mode end to end with viz's side only (`--peer none`) runs in
tests/test_serve_real.py, against the real server that module starts anyway.

GuideLLM itself is not installed here: its venv (~1.5 GB with torch, a minute to make) is made
by the script on its first real run, outside `make test`. The report below has the fields the
script reads, in the shape GuideLLM 0.8.1's JSON output gives them (one benchmark, per-request
statistics under requests.successful)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from viz.spread import Spread

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "crosscheck.py"


def load_crosscheck():
    """The script as a module (it is no package's)."""
    spec = importlib.util.spec_from_file_location("crosscheck", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["crosscheck"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cc():
    return load_crosscheck()


def gl_request(start, ttft_ms, n, gap_ms, prompt=94):
    """One successful request as GuideLLM 0.8 reports it (its own definitions)."""
    e2e_ms = ttft_ms + (n - 1) * gap_ms
    return {
        "request_start_time": start,
        "request_end_time": start + e2e_ms / 1e3,
        "time_to_first_token_ms": ttft_ms,
        "output_tokens": n,
        "prompt_tokens": prompt,
        "inter_token_latency_ms": (e2e_ms - ttft_ms) / (n - 1),  # viz's TPOT
        "time_per_output_token_ms": e2e_ms / n,
    }  # the first token's wait included


def report(requests, errored=0):
    return {
        "benchmarks": [
            {"requests": {"successful": requests, "errored": [{}] * errored, "incomplete": []}}
        ]
    }


def test_guidellm_report_in_viz_terms(cc):
    f = cc.guidellm_figures(
        report([gl_request(0.0, 200, 5, 50), gl_request(0.5, 300, 9, 50)], errored=1)
    )
    assert f.ttft == pytest.approx([0.2, 0.3]) and f.tpot == pytest.approx([0.05, 0.05])
    assert f.ntpot == pytest.approx([0.4 / 5, 0.7 / 9]) and f.output_tokens == [5, 9]
    assert f.failed == 1 and f.itl_gaps == []  # GuideLLM keeps no per-gap times
    # 14 tokens from the first start (0.0) to the last end (0.5 + 0.7)
    assert f.tokens_per_s == pytest.approx(14 / 1.2)


def test_ratios_and_verdicts_by_hand(cc):
    same = cc.Figures(
        "viz",
        ttft=[0.2, 0.3],
        itl_gaps=[0.05] * 12,
        tpot=[0.05, 0.05],
        ntpot=[0.4 / 5, 0.7 / 9],
        output_tokens=[5, 9],
        prompt_tokens=[94, 94],
        tokens_per_s=14 / 1.2,
    )
    peer = cc.guidellm_figures(report([gl_request(0.0, 200, 5, 50), gl_request(0.5, 300, 9, 50)]))
    rows = {r.metric: r for r in cc.compare(4, same, peer)}
    assert rows["TTFT"].ratio.median == pytest.approx(1.0)
    assert rows["TTFT"].verdict == "within the spread"
    assert rows["output tokens/s"].ratio.median == pytest.approx(1.0)
    # same name, other definitions: viz's TPOT against GuideLLM's E2E ÷ n
    tpot = rows["TPOT"]
    assert tpot.ratio.high < 1 and tpot.verdict.startswith("viz lower: by definition")
    assert "the first token's wait included" in tpot.verdict
    assert rows["TPOT, same definition"].verdict == "within the spread"
    # answers of other lengths explain a same-definition difference
    short = cc.Figures(
        "viz",
        ttft=[0.1, 0.1],
        tpot=[0.05],
        ntpot=[0.1, 0.1],
        output_tokens=[2, 2],
        prompt_tokens=[94, 94],
        tokens_per_s=5.0,
    )
    row = {r.metric: r for r in cc.compare(1, short, peer)}["TTFT"]
    assert row.verdict.startswith("viz lower: the workloads differed — answers: viz median 2")
    # same definitions, same workload: the server's own clock says whether it served them so
    slow = cc.Figures(
        "viz",
        ttft=[0.4, 0.6],
        tpot=[0.1, 0.1],
        ntpot=[0.8 / 5, 1.4 / 9],
        output_tokens=[5, 9],
        prompt_tokens=[94, 94],
        tokens_per_s=14 / 2.4,
    )

    def timed(ttft_s, gap_s):  # two requests as the server timed them: 5 and 9 tokens
        return cc.server_figures(
            [{"received": 0.0, "tokens": [ttft_s + k * gap_s for k in range(n)]} for n in (5, 9)]
        )

    slow.server, peer.server = timed(0.4, 0.1), timed(0.2, 0.05)
    rows = {r.metric: r for r in cc.compare(4, slow, peer)}
    assert rows["TTFT"].verdict.startswith(
        "viz higher: the server served viz's requests so — by its own clock the ratio is ×2.00"
    )
    assert rows["TPOT, same definition"].verdict.startswith("viz higher: the server served")
    assert rows["output tokens/s"].verdict.startswith("viz lower: the server served")
    peer.server = timed(0.4, 0.1)  # the server served both alike: the tools measured otherwise
    assert {r.metric: r for r in cc.compare(4, slow, peer)}["TTFT"].verdict.startswith(
        "viz higher beyond the spread, not by definition, workload or the server's own clock"
    )
    text = cc.table(cc.compare(4, same, peer))
    assert "×1.00 (" in text and "viz ÷ GuideLLM" in text


def test_spread_division_is_the_worst_case_of_middle_halves():
    r = Spread(2.0, 1.0, 3.0, 5) / Spread(1.0, 0.5, 2.0, 5)
    assert (r.median, r.low, r.high) == (2.0, 0.5, 6.0)


def test_the_guidellm_command_caps_answers_without_ignore_eos(cc, tmp_path):
    cmd = cc.guidellm_command(
        Path("/v/bin/python"), "http://127.0.0.1:8000/v1", "/m", 64, 32, 8, 16, tmp_path / "o.json"
    )
    line = " ".join(cmd)
    assert "target=http://127.0.0.1:8000,model=/m,max_tokens=32" in line
    assert "kind=synthetic_text,prompt_tokens=64 " in line and "output_tokens" not in line
    assert "kind=concurrent,streams=8" in line and "kind=max_requests,count=16" in line


def test_repeats_alternate_the_order_and_pool_the_requests(cc):
    assert cc.order(0, 2) == ["viz", "peer", "peer", "viz"]
    assert cc.order(1, 3) == ["peer", "viz", "viz", "peer", "peer", "viz"]
    a = cc.Figures("viz", ttft=[0.1], tokens_per_s=10.0)
    b = cc.Figures("viz", ttft=[0.2, 0.3], tokens_per_s=20.0, failed=1)
    m = cc.merged([a, b, cc.Figures("viz", tokens_per_s=12.0)])
    assert m.ttft == [0.1, 0.2, 0.3] and m.tokens_per_s == 12.0 and m.failed == 1
