"""Rate sweeps without a server: the confidence interval of a median, the queue-growth slope,
the derived objective, the rates a sweep picks, the per-request metrics side by side, the saved
LoadSweep and its views — every expected number worked out by hand here. The sweep against the
real server is in test_serve_real.py."""

import math

import pytest

from viz.serve import (
    SLO,
    LoadRun,
    LoadSettings,
    LoadSweep,
    RequestRecord,
    SweepPoint,
    Target,
    Timeouts,
    derived_slo,
    queue_growth,
    request_metrics,
    request_metrics_text,
    sweep_rates,
)
from viz.serve.client import ClientInfo, ServeError
from viz.serve.sweep import SweepSettings, _between
from viz.spread import Interval, median_coverage
from viz.views import pareto_data, pareto_figure, rate_sweep_data, rate_sweep_figure


def req(i, arrival, ttft, n=5, gap=0.1, sent=None, ok=True) -> RequestRecord:
    sent = arrival if sent is None else sent
    times = [sent + ttft + k * gap for k in range(n)]
    return RequestRecord(
        index=i,
        request_id=f"r{i}",
        prompt_name="p",
        max_tokens=n,
        scheduled_s=arrival,
        sent_s=sent,
        token_times_s=times if ok else [],
        token_texts=["x"] * (n if ok else 0),
        end_s=times[-1],
        output_tokens=n if ok else None,
        finish_reason="length",
        error=None if ok else "boom",
        error_kind=None if ok else "http",
    )


def run_of(requests, mode="rate", rate=2.0, label="s") -> LoadRun:
    settings = LoadSettings(
        mode=mode,
        concurrency=1 if mode == "concurrency" else None,
        rate_per_s=rate if mode == "rate" else None,
        n_requests=len(requests),
        max_duration_s=60.0,
        seed=0,
        temperature=0.0,
        timeouts=Timeouts(),
        slo=SLO(),
    )
    return LoadRun(
        target=Target("http://127.0.0.1:1/v1", "chat", "m"),
        settings=settings,
        requests=requests,
        client=ClientInfo.here(),
        recorded_at="2026-01-01T00:00:00",
        label=label,
    )


# ---- the confidence interval of a median ------------------------------------------------------
def test_interval_coverage_by_hand():
    # 3 runs: [min, max] misses the median only if all 3 fall on one side: 2 × (1/2)^3 = 1/4.
    assert median_coverage(3, 1) == pytest.approx(0.75)
    # 6 runs, k = 2: misses if 0 or 1 of 6 fall below: 2 × (1 + 6) / 64.
    assert median_coverage(6, 2) == pytest.approx(1 - 14 / 64)
    three = Interval.of([3.0, 1.0, 2.0])
    assert (three.median, three.low, three.high, three.coverage) == (2.0, 1.0, 3.0, 0.75)
    # 10 runs: k = 2 covers 1 - 2 × 11/1024 = 97.9 % >= 95 %; k = 3 only 1 - 2 × 56/1024 = 89 %.
    ten = Interval.of(range(10))
    assert (ten.low, ten.high) == (1.0, 8.0)
    assert ten.coverage == pytest.approx(1 - 22 / 1024)
    assert "CI 98%: 1.0–8.0, 10 runs" in ten.text()
    one = Interval.of([4.2])
    assert (one.low, one.high, one.coverage) == (4.2, 4.2, 0.0) and "1 run" in one.text()


def test_interval_refuses_what_it_cannot_use():
    with pytest.raises(ValueError, match="at least one measurement"):
        Interval.of([])
    with pytest.raises(ValueError, match="finite number"):
        Interval.of([1.0, math.nan])
    with pytest.raises(ValueError, match="level must be between 0 and 1"):
        Interval.of([1.0, 2.0], level=95)
    with pytest.raises(ValueError, match="k must be from 1 to 2"):
        median_coverage(4, 3)


# ---- saturation: TTFT's growth with the arrival time -------------------------------------------
def test_queue_growth_is_the_ttft_slope_by_hand():
    # TTFT grows by 0.5 s per second of arrivals: a server that completes 2/3 of what arrives.
    growing = run_of([req(i, arrival=float(i), ttft=0.2 + 0.5 * i) for i in range(5)])
    assert queue_growth(growing) == pytest.approx(0.5)
    steady = run_of([req(i, arrival=0.5 * i, ttft=0.2) for i in range(5)])
    assert queue_growth(steady) == pytest.approx(0.0, abs=1e-12)
    closed = run_of([req(i, arrival=float(i), ttft=0.2 + i) for i in range(5)], mode="concurrency")
    assert queue_growth(closed) is None  # closed-loop streams send when the server is done
    few = run_of([req(0, 0.0, 0.2), req(1, 1.0, 0.3), req(2, 2.0, 9.0, ok=False)])
    assert queue_growth(few) is None  # two completed requests: no slope worth fitting


def test_derived_objective_is_a_factor_of_the_p90s():
    # TTFTs 0.1 ... 0.5 s: p90 by linear interpolation = 0.4 + 0.6 × 0.1 = 0.46 s; every TPOT
    # is the gap 0.1 s (evenly spaced tokens), so its p90 is 0.1 s.
    runs = [run_of([req(i, float(i), ttft=0.1 * (i + 1)) for i in range(5)], "concurrency")]
    slo = derived_slo(runs, 2.0)
    assert slo.ttft_s == pytest.approx(0.92) and slo.tpot_s == pytest.approx(0.2)
    with pytest.raises(ServeError, match="give slo=SLO"):
        derived_slo([run_of([req(0, 0.0, 0.1, ok=False)])], 2.0)


def test_rates_between_the_two_loads():
    # Batching: evenly spaced strictly between 1 and 5 requests/s.
    assert _between(1.0, 5.0, 3) == pytest.approx([2.0, 3.0, 4.0])
    # One at a time (throughput no faster): from half the synchronous rate up to it.
    assert _between(2.0, 2.05, 3) == pytest.approx([1.0, 1.5, 2.0])
    assert _between(2.0, 1.9, 1) == pytest.approx([2.0])


def test_sweep_refuses_bad_settings_before_sending_anything():
    for kwargs, match in [
        ({"n_rates": 0}, "n_rates must be a whole number from 1"),
        ({"repeats": 1.5}, "repeats must be a whole number"),
        ({"saturation": 2.0}, "saturation must be a number from 0.01"),
        ({"concurrency": 4}, "sweep_rates sets concurrency= itself"),
        ({"n_requests": 1}, "n_requests must be a whole number from 2"),
    ]:
        with pytest.raises(ServeError, match=match):
            sweep_rates("http://127.0.0.1:9/v1", **kwargs)
    with pytest.raises(ServeError, match="allow_remote=True"):
        sweep_rates("http://example.com/v1", n_requests=2)


# ---- the per-request metrics side by side ---------------------------------------------------------
def test_request_metrics_by_hand():
    # Sent at 1.0; tokens at 1.3, 1.4, 1.5, 1.6 (4 tokens), the stream ends with the last one.
    r = req(0, arrival=1.0, ttft=0.3, n=4, gap=0.1)
    (row,) = request_metrics([r, req(1, 0.0, 0.1, ok=False)])  # the failed one is left out
    assert row["TTFT"] == pytest.approx(0.3)
    assert row["TT2T"] == pytest.approx(0.4)
    assert row["ITL (mean)"] == pytest.approx(0.1)
    assert row["TPOT"] == pytest.approx((0.6 - 0.3) / 3)
    assert row["normalized TPOT"] == pytest.approx(0.6 / 4)  # the first token's wait included
    assert row["E2E"] == pytest.approx(0.6)
    text = request_metrics_text([r])
    assert "GuideLLM calls this 'inter-token latency'" in text and "  150 " in text
    with pytest.raises(ValueError, match="no completed request"):
        request_metrics_text([req(1, 0.0, 0.1, ok=False)])


# ---- the saved sweep and its views ---------------------------------------------------------------
def make_sweep(label="cb") -> LoadSweep:
    sync = [
        run_of([req(i, float(i), 0.2) for i in range(4)], "concurrency", label=label)
        for _ in range(3)
    ]
    top = [
        run_of([req(i, 0.0, 0.2 + 0.1 * i, gap=0.15) for i in range(4)], "concurrency", label=label)
    ]
    rate = [run_of([req(i, 0.3 * i, 0.2 + 0.4 * i) for i in range(4)], "rate", 3.0, label)]
    settings = SweepSettings(
        n_requests=4,
        n_rates=1,
        repeats=3,
        seed=0,
        max_duration_s=60.0,
        budget_s=600.0,
        saturation=0.25,
        slo_factor=2.0,
    )
    return LoadSweep(
        target=sync[0].target,
        settings=settings,
        slo=SLO(0.5, 0.2),
        points=[
            SweepPoint("synchronous", None, sync),
            SweepPoint("throughput", None, top),
            SweepPoint("rate", 3.0, rate, saturated=True),
        ],
        recorded_at="2026-01-01T00:00:00",
        duration_s=12.0,
        stopped="saturated at 3.00 requests/s",
        label=label,
    )


def test_a_sweep_is_a_saved_document(tmp_path):
    sweep = make_sweep()
    back = LoadSweep.load(sweep.save(tmp_path / "s.json"))
    assert [p.kind for p in back.points] == ["synchronous", "throughput", "rate"]
    assert len(back.runs) == 5 and back.saturated_rate == 3.0
    assert back.points[2].figure("queue_growth", back.slo).median == pytest.approx(0.4 / 0.3)
    text = str(back)
    assert "75% confidence interval" in text and "saturated" in text
    with pytest.raises(ValueError, match="kind must be one of"):
        SweepPoint("burst", None)
    with pytest.raises(ValueError, match="unknown figure"):
        back.points[0].figure("ttft", back.slo)


def test_sweep_views_draw_the_medians_and_intervals():
    sweep = make_sweep()
    rows = rate_sweep_data(sweep)
    sync = rows[0]
    # Each synchronous run: 4 requests, the first sent at 0 and the last ending at
    # 3 + 0.2 + 0.4 = 3.6 s: 4 / 3.6 requests per second, in all 3 runs alike.
    assert sync["requests_per_s"]["median"] == pytest.approx(4 / 3.6)
    assert sync["ttft_p50_s"]["median"] == pytest.approx(200.0)  # ms
    fig = rate_sweep_figure([sweep, make_sweep("one")])
    assert {t.name for t in fig.data} == {"cb", "one"}
    pts = pareto_data([sweep, [sweep.points[0].runs[0]]])
    # tokens/s per user = 1 / TPOT p50 = 1 / 0.1 s.
    assert pts[0]["tokens_per_s_per_user"]["median"] == pytest.approx(10.0)
    assert pareto_figure(sweep).data
    with pytest.raises(ValueError, match="LoadSweep or a non-empty list"):
        rate_sweep_figure([])
    with pytest.raises(ValueError, match="each item must be a LoadSweep"):
        pareto_data([sweep, "run.json"])


def test_the_rate_sweep_never_doubles_back_on_its_axis():
    # A saturated load can complete fewer requests per second than a lighter one (lesson 10's
    # saved sweep: 1.3/s at 2 streams, then 1.16/s at a higher offered rate); joined in load
    # order the lines went back and forth. Joined along the axis, each line only moves right,
    # through every load that completed a request.
    from viz.views.load_sweep import _by_load

    sweep = make_sweep()
    # the offered rate's requests take long: it completes fewer per second than one at a time
    sweep.points[2].runs = [
        run_of([req(i, 0.3 * i, 1.0 + 0.8 * i) for i in range(4)], "rate", 3.0, "cb")
    ]
    rows = [r for r in _by_load(rate_sweep_data(sweep)) if r["requests_per_s"]["median"]]
    by_load = [r["requests_per_s"]["median"] for r in rows]
    assert by_load != sorted(by_load)  # 1.11, 0.85, 3.64 requests/s
    for trace in rate_sweep_figure(sweep).data:
        assert list(trace.x) == sorted(by_load)
        assert sorted(trace.text) == sorted(r["load"] for r in rows)


def test_first_miss_walks_the_loads_from_the_lightest():
    sweep = make_sweep()
    # One at a time: TTFT 0.2 s, TPOT 0.1 s, within TTFT ≤ 0.5 and TPOT ≤ 0.2. The 3.0/s rate
    # comes next (before all at once): TTFTs 0.2, 0.6, 1.0, 1.4 s, three over the limit.
    miss = sweep.first_miss()
    assert (miss.word, miss.load, miss.late, miss.slow, miss.completed) == (
        "TTFT",
        "3.00 requests/s",
        3,
        0,
        4,
    )
    assert [p.kind for p in sweep.by_load()] == ["synchronous", "rate", "throughput"]
    sweep.slo = SLO(10.0, 10.0)
    assert sweep.first_miss().word == "neither"
    # TPOT limit 0.12 s: the all-at-once run's gaps are 0.15 s (4 slow); with TTFT ≤ 0.25 s,
    # the 3.0/s rate has 3 late and the sync runs none: TTFT leads at 3.0/s by 3 to 0.
    sweep.slo = SLO(0.25, 0.12)
    assert sweep.first_miss().word == "TTFT"
    # A rate run with 2 late and 1 slow request: a lead of one is too close to call.
    close = [req(0, 0.0, 0.2), req(1, 0.3, 0.9), req(2, 0.6, 0.9), req(3, 0.9, 0.2, gap=0.3)]
    sweep.points[2].runs = [run_of(close, "rate", 3.0)]
    miss = sweep.first_miss()
    assert miss.word == "too close to call" and set(miss.between) >= {"TTFT", "TPOT"}


def test_the_sweep_command_refuses_settings_it_sets_itself(capsys):
    from viz.cli import main

    assert main(["load", "http://127.0.0.1:9/v1", "--sweep", "--max-concurrency", "2"]) == 2
    assert "a --sweep sets each load itself" in capsys.readouterr().err
    assert main(["load", "http://127.0.0.1:9/v1", "--sweep", "--slo-ttft", "1"]) == 2
    assert "give both --slo-ttft and --slo-tpot" in capsys.readouterr().err
    assert main(["load", "http://127.0.0.1:9/v1", "--sweep", "--rates", "0"]) == 2
    assert "n_rates must be a whole number from 1" in capsys.readouterr().err


def test_decode_pass_time_counts_only_passes_that_decode_that_many():
    from types import SimpleNamespace as NS

    from viz.serve import decode_pass_time

    dec, pre = NS(phase="decode"), NS(phase="prefill")
    steps = [
        NS(end_s=0.0, batch=[pre, pre]),
        NS(end_s=0.3, batch=[dec, pre]),  # a chunk
        NS(end_s=0.4, batch=[dec, dec]),
        NS(end_s=0.6, batch=[dec, dec]),
        NS(end_s=0.7, batch=[dec]),
    ]  # one request left: not a pass of 2
    gaps = decode_pass_time(NS(steps=steps), 2)  # 0.4 − 0.3 and 0.6 − 0.4
    assert gaps.runs == 2 and gaps.median == pytest.approx(0.15)
    with pytest.raises(ValueError, match="decodes exactly 8 requests"):
        decode_pass_time(NS(steps=steps), 8)
