"""The serving metrics against numbers worked out by hand, the load generator's arrival
process and prompt order, the saved LoadRun, and the serving views on runs built here."""

import statistics

import pytest

from viz.serve import (
    SLO,
    LoadRun,
    LoadSettings,
    RequestRecord,
    ServerTiming,
    Target,
    Timeouts,
    arrival_times,
    load_prompts,
    summarize,
)
from viz.serve.client import ClientInfo
from viz.serve.loadgen import prompt_order


def rec(i, sent, tokens, end, out=None, error=None, **kw) -> RequestRecord:
    return RequestRecord(
        index=i,
        request_id=f"viz-test-{i}",
        prompt_name=f"p{i}",
        max_tokens=8,
        scheduled_s=sent,
        sent_s=sent,
        token_times_s=tokens,
        token_texts=["x"] * len(tokens),
        end_s=end,
        output_tokens=out,
        finish_reason=None if error else "length",
        error=error,
        error_kind="http" if error else None,
        **kw,
    )


def test_one_request_by_hand():
    r = rec(0, 1.0, [1.5, 1.6, 1.8, 2.1], 2.2, out=4)
    assert r.ok
    assert r.ttft_s == pytest.approx(0.5)
    assert r.itl_s == pytest.approx([0.1, 0.2, 0.3])
    assert r.e2e_s == pytest.approx(1.2)
    assert r.tpot_s == pytest.approx((1.2 - 0.5) / 3)
    # the server counted 6 tokens (two merged into chunks): TPOT uses its count
    assert rec(0, 1.0, [1.5, 1.6, 1.8, 2.1], 2.2, out=6).tpot_s == pytest.approx(0.7 / 5)
    # no usage: the chunks are the tokens
    assert rec(0, 1.0, [1.5, 1.6, 1.8, 2.1], 2.2).tpot_s == pytest.approx(0.7 / 3)


def test_failed_and_unsent_requests_have_no_latency():
    failed = rec(1, 0.0, [0.5], 0.6, error="HTTP 500")
    assert not failed.ok and failed.tpot_s is None
    unsent = RequestRecord(2, "viz-test-2", "p", 8, scheduled_s=3.0)
    assert not unsent.ok and unsent.ttft_s is None and unsent.e2e_s is None


def test_server_timing_gives_the_wait():
    r = rec(
        0,
        1.0,
        [1.5],
        1.6,
        server=ServerTiming(
            received_s=1.01, started_s=1.25, token_times_s=[1.49], finished_s=1.59, prompt_tokens=30
        ),
    )
    assert r.waited_s == pytest.approx(0.25)


def test_percentiles_interpolate_linearly():
    s = summarize([rec(i, 0.0, [t], t + 0.1, out=1) for i, t in enumerate([1.0, 2.0, 3.0, 4.0])])
    # rank = p/100 × (n − 1) = 1.5, 2.7, 2.97 between the sorted TTFTs 1, 2, 3, 4
    assert s.ttft_s["p50"] == pytest.approx(2.5)
    assert s.ttft_s["p90"] == pytest.approx(3.7)
    assert s.ttft_s["p99"] == pytest.approx(3.97)
    assert s.ttft_s["mean"] == pytest.approx(2.5)


def test_a_summary_by_hand():
    requests = [
        rec(0, 0.0, [0.4, 0.5, 0.6], 0.6, out=3),  # TTFT 0.4, TPOT 0.1: meets the SLO
        rec(1, 0.0, [1.5, 1.6, 1.7], 1.7, out=3),  # TTFT 1.5: too slow to start
        rec(2, 0.5, [0.8, 1.3, 1.8], 2.0, out=3),  # TPOT (1.5 − 0.3) / 2 = 0.6: too slow
        rec(3, 1.0, [1.2], 1.3, error="HTTP 503"),
    ]
    s = summarize(requests, SLO(ttft_s=1.0, tpot_s=0.15))
    assert (s.n_requests, s.n_completed, s.n_failed, s.errors) == (4, 3, 1, {"http": 1})
    assert s.duration_s == pytest.approx(2.0)  # first send 0.0 → last end 2.0
    assert s.output_tokens == 9
    assert s.output_tokens_per_s == pytest.approx(4.5)
    assert s.requests_per_s == pytest.approx(1.5)
    assert s.n_met_slo == 1 and s.goodput_per_s == pytest.approx(0.5)
    # ITL pooled over every gap: 0.1, 0.1, 0.1, 0.1, 0.5, 0.5
    assert s.itl_s["p50"] == pytest.approx(0.1)
    assert s.itl_s["mean"] == pytest.approx(1.4 / 6)
    assert "goodput    0.50 requests per second met the SLO" in str(s)
    # a looser objective: TPOT ≤ 0.7 s lets request 2 through
    assert summarize(requests, SLO(ttft_s=1.0, tpot_s=0.7)).n_met_slo == 2
    assert summarize(requests, SLO(ttft_s=2.0, tpot_s=0.7, e2e_s=1.0)).n_met_slo == 1


def test_an_empty_run_summarizes_to_nothing():
    s = summarize([RequestRecord(0, "x", "p", 8, scheduled_s=0.0)])
    assert s.duration_s is None and s.output_tokens_per_s is None and s.goodput_per_s is None
    assert s.ttft_s["p50"] is None


def test_poisson_arrivals_are_seeded_and_have_the_asked_rate():
    a = arrival_times(4000, 5.0, seed=1)
    assert a == arrival_times(4000, 5.0, seed=1) and a != arrival_times(4000, 5.0, seed=2)
    assert a[0] == 0.0 and all(x < y for x, y in zip(a, a[1:]))
    gaps = [y - x for x, y in zip(a, a[1:])]
    # exponential gaps: mean 1/rate and standard deviation 1/rate (within sampling error)
    assert statistics.mean(gaps) == pytest.approx(0.2, rel=0.05)
    assert statistics.stdev(gaps) == pytest.approx(0.2, rel=0.08)


def test_the_prompt_set_and_its_order():
    prompts = load_prompts()
    assert len(prompts) == 8 and len({p.name for p in prompts}) == 8
    assert all(p.prompt.strip() and 1 <= p.max_tokens <= 64 for p in prompts)
    order = prompt_order(16, prompts, seed=0)
    assert sorted(p.name for p in order[:8]) == sorted(p.name for p in prompts)
    assert order[:8] == order[8:]  # the shuffled set, repeated
    assert [p.name for p in prompt_order(8, prompts, 1)] != [p.name for p in order[:8]]


def make_run(requests, label="test", schedule=None) -> LoadRun:
    settings = LoadSettings(
        mode="concurrency",
        concurrency=2,
        rate_per_s=None,
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
        schedule=schedule,
    )


def test_a_load_run_is_a_saved_document(tmp_path):
    run = make_run([rec(0, 0.0, [0.4, 0.5], 0.6, out=2), rec(1, 0.1, [0.7], 0.8, error="HTTP 500")])
    again = LoadRun.load(run.save(tmp_path / "run.json"))
    assert again == run
    assert again.summary().n_failed == 1 and again.load_label == "2 streams"
    assert "test · 2 streams" in str(again)
    bad = tmp_path / "bad.json"
    bad.write_text(run.to_json().replace('"sent_s":0.0', '"sent_s":"soon"', 1))
    with pytest.raises(ValueError, match=r"bad.json: .*requests\[0\].sent_s"):
        LoadRun.load(bad)


# ---- the views ----------------------------------------------------------------------------------
def test_timeline_rows_follow_the_requests():
    from viz.views.serving import request_timeline_data, request_timeline_figure

    run = make_run(
        [
            rec(
                0,
                0.0,
                [0.4, 0.5],
                0.6,
                out=2,
                server=ServerTiming(0.01, 0.2, [0.39, 0.49], 0.5, 30),
            ),
            rec(1, 0.1, [0.7], 0.8, error="HTTP 500"),
        ]
    )
    rows = request_timeline_data(run)
    assert [(r.label, r.started_s, r.first_token_s, r.ok) for r in rows] == [
        ("#0 p0", 0.2, 0.4, True),
        ("#1 p1", None, 0.7, False),
    ]
    fig = request_timeline_figure(run)
    names = [t.name for t in fig.data]
    assert "waiting (queue, HTTP, tokenizing)" in names and "failed" in names
    ticks = next(t for t in fig.data if t.name == "a token arrives")
    assert list(ticks.x) == [0.4, 0.5, 0.7]


def test_tradeoff_and_itl_views_draw_the_summaries():
    from viz.views.serving import (
        itl_distribution_data,
        itl_distribution_figure,
        serving_tradeoff_data,
        serving_tradeoff_figure,
    )

    one = make_run([rec(0, 0.0, [0.5, 0.6, 0.7], 0.7, out=3)], label="A")
    two = make_run(
        [rec(0, 0.0, [0.5, 0.8, 1.1], 1.1, out=3), rec(1, 0.0, [0.5, 0.8, 1.1], 1.1, out=3)],
        label="B",
    )
    pts = serving_tradeoff_data([one, two])
    assert [p["series"] for p in pts] == ["A", "B"]
    assert pts[0]["tokens_per_s"] == pytest.approx(3 / 0.7)
    assert pts[1]["latency_ms"] == pytest.approx(300)
    assert pts[1]["tokens_per_s"] == pytest.approx(6 / 1.1)
    fig = serving_tradeoff_figure([one, two])
    # one line per server setting, then one legend entry per load's marker shape
    assert [t.name for t in fig.data] == ["A", "B", "2 streams"]
    assert list(fig.data[1].x) == pytest.approx([300]) and list(fig.data[1].marker.symbol) == [
        fig.data[2].marker.symbol
    ]
    d = itl_distribution_data([two])[0]
    assert d["itl_ms"] == pytest.approx([300] * 4) and d["p99_ms"] == pytest.approx(300)
    assert len(itl_distribution_figure([one, two]).data) == 2 * 4  # histogram + 3 lines each
    with pytest.raises(ValueError, match="latency must be one of"):
        serving_tradeoff_data([one], latency="speed")
    with pytest.raises(ValueError, match="expected a viz.serve.LoadRun"):
        serving_tradeoff_figure(["not a run"])


def test_schedule_views_on_a_recorded_schedule(make_tiny):
    from viz.serve import record_schedule
    from viz.views.serving import (
        STATES,
        page_table_data,
        page_table_figure,
        schedule_data,
        schedule_figure,
    )

    model = make_tiny(seed=5).model
    schedule, _ = record_schedule(
        model,
        [[3] * 40, [4] * 40, [5] * 40],
        max_new_tokens=3,
        page_size=16,
        num_blocks=32,
        max_batch_tokens=48,
    )
    ids, codes, tokens = schedule_data(schedule)
    assert ids == ["req_0", "req_1", "req_2"]
    # step 0: req_0's whole prompt (→ first token), 8 tokens of req_1, req_2 waiting
    assert [STATES[c[0]] for c in codes] == ["prefill → first token", "prefill chunk", "waiting"]
    assert [t[0] for t in tokens] == [40, 8, 0]
    d = page_table_data(schedule, 0)
    held = [o for o in d["owner"] if o is not None]
    assert held.count("req_0") == 3 and held.count("req_1") == 1  # ceil(40/16), ceil(8/16)
    assert d["used_pages"] == 4 and d["tokens"] == {"req_0": 40, "req_1": 8}
    assert d["wasted_slots"] == 3 * 16 - 40 + 16 - 8
    fig = page_table_figure(schedule, max_frames=4)
    slider = fig.layout.sliders[0]
    assert len(fig.frames) <= 4 and len(slider.steps) == len(fig.frames)
    # it opens at the busiest of its steps (the most pages held; the earliest of a tie)
    picks = [int(s.label) for s in slider.steps]
    used = {s: page_table_data(schedule, s)["used_pages"] for s in picks}
    busiest = min(s for s in picks if used[s] == max(used.values()))
    assert picks[slider.active] == busiest and used[busiest] > used[0]
    assert fig.data[0].z == fig.frames[slider.active].data[0].z
    early = page_table_figure(schedule, start=0)
    assert early.layout.sliders[0].steps[early.layout.sliders[0].active].label == "0"
    with pytest.raises(ValueError, match="start must be a step of the schedule, 0 to"):
        page_table_figure(schedule, start=len(schedule.steps))
    assert len(schedule_figure(schedule).data) > 3
    with pytest.raises(ValueError, match="step must be a whole number from 0 to"):
        page_table_data(schedule, len(schedule.steps))
    with pytest.raises(ValueError, match="expected a viz.serve.Schedule"):
        schedule_figure(None)


def test_static_batching_waste_by_hand():
    from viz.serve import static_batching_waste

    w = static_batching_waste([10, 30, 20], [5, 2, 8], batch_size=2)
    # batch 1: prompts 10, 30 → 20 padding; answers 5, 2 → 3 idle. batch 2 (one row): none
    assert (w.useful_slots, w.padding_slots, w.idle_slots) == (75, 20, 3)
    assert w.wasted_fraction == pytest.approx(23 / 98)
    assert static_batching_waste([10, 30], [5, 2], batch_size=1).wasted_fraction == 0
    with pytest.raises(ValueError, match="batch_size must be a whole number >= 1"):
        static_batching_waste([1], [1], batch_size=0)
    with pytest.raises(ValueError, match="one prompt length and one answer length per request"):
        static_batching_waste([1, 2], [1], batch_size=1)


def test_itl_breakdown_by_hand():
    from viz.serve import ITL_PARTS
    from viz.serve.scheduler import BatchEntry, Schedule, SchedulerStep

    def step(i, start, end, *entries):
        batch = [BatchEntry(rid, phase, q, 0, new, []) for rid, phase, q, new in entries]
        return SchedulerStep(i, start, start, end, batch, [], [], [], 10, 0, [])

    a, b, c = "viz-test-0", "viz-test-1", "viz-test-2"
    steps = [
        step(0, 0.0, 0.10, (a, "prefill", 20, True)),  # a's first token
        step(
            1,
            0.10,
            0.40,
            (a, "decode", 1, True),
            (b, "prefill", 30, True),
            (c, "prefill", 8, False),
        ),  # a chunk of c
        step(
            2, 0.40, 0.50, (a, "decode", 1, True), (b, "decode", 1, True), (c, "prefill", 2, True)
        ),  # c's last chunk
        step(3, 0.50, 0.60, (a, "decode", 1, True), (b, "decode", 1, True), (c, "decode", 1, True)),
    ]
    schedule = Schedule(
        16, 10, 0, 1000, 64, steps, {a: 20, b: 30, c: 10}, transformers_version="5.24.0"
    )
    # a: read 10 ms after each token, then 30 ms after the last: the way to the client grew
    ra = rec(
        0,
        0.0,
        [0.11, 0.41, 0.51, 0.63],
        0.63,
        out=4,
        server=ServerTiming(0.0, 0.0, [0.10, 0.40, 0.50, 0.60], 0.6, 20),
    )
    rb = rec(
        1,
        0.0,
        [0.41, 0.51, 0.61],
        0.61,
        out=3,
        server=ServerTiming(0.0, 0.1, [0.40, 0.50, 0.60], 0.6, 30),
    )
    # c's two tokens reached the client as one chunk: not counted
    rc = rec(2, 0.0, [0.62], 0.62, out=2, server=ServerTiming(0.0, 0.1, [0.50, 0.60], 0.6, 10))
    run = make_run([ra, rb, rc], schedule=schedule)
    # b stopped at an end-of-text token, made by the last pass and never streamed: the same
    # gaps as b's without it
    rb_stop = rec(
        1,
        0.0,
        [0.41, 0.51],
        0.61,
        out=3,
        server=ServerTiming(0.0, 0.1, [0.40, 0.50, 0.60], 0.6, 30),
    )
    rb_stop.finish_reason = "stop"
    stopped = make_run([ra, rb_stop], schedule=schedule).itl_breakdown()
    assert stopped.requests == 2 and stopped.itl.runs == 4
    run.client_cores = 0.05
    parts = run.itl_breakdown()
    assert (parts.requests, parts.completed) == (2, 3)
    # server gaps: a 0.3 (its pass carried chunks), 0.1 (step 2 carried c's last chunk), 0.1;
    # b 0.1 (step 2 again), 0.1 → decode-only passes: a's and b's last gaps
    assert parts.chunk_share == pytest.approx(3 / 5)
    assert parts.decode_gap.median == pytest.approx(0.1) and parts.decode_batch == 3
    assert parts.chunk_gap.median == pytest.approx(0.1)
    client = [0.3, 0.1, 0.12, 0.1, 0.1]
    assert parts.parts_s[ITL_PARTS[0]] == pytest.approx(0.1)
    assert parts.parts_s[ITL_PARTS[1]] == pytest.approx(0.14 - 0.1)
    assert parts.parts_s[ITL_PARTS[2]] == pytest.approx(statistics.mean(client) - 0.14)
    assert parts.mean_itl_s == pytest.approx(statistics.mean(client))
    assert parts.itl.median == pytest.approx(0.1)
    assert parts.to_client.median == pytest.approx(0.01)
    text = str(parts)
    assert "2 of 3 requests" in text and "cores kept busy: the client 0.05" in text
    base = make_run([rb], schedule=schedule).itl_breakdown()
    growth = parts.growth_from(base)
    assert sum(growth.values()) == pytest.approx(parts.mean_itl_s - base.mean_itl_s)
    with pytest.raises(ValueError, match="no scheduler record"):
        make_run([ra]).itl_breakdown()
    with pytest.raises(ValueError, match="no completed request of two tokens"):
        make_run([rc], schedule=schedule).itl_breakdown()


def test_summary_says_how_many_completed_requests_met_the_slo():
    s = summarize([rec(0, 0.0, [0.4, 0.5], 0.5, out=2), rec(1, 0.0, [1.5, 1.6], 1.6, out=2)])
    assert str(s).endswith("1 of the 2 completed requests")


def test_itl_breakdown_prints_a_part_near_zero_without_a_sign():
    from viz.serve import ITL_PARTS, ITLBreakdown
    from viz.spread import Spread

    gap = Spread.of([0.1, 0.1])
    parts = ITLBreakdown(
        "1 stream",
        1,
        1,
        gap,
        gap,
        1.0,
        None,
        0.0,
        Spread.of([0.001]),
        {ITL_PARTS[0]: 0.1, ITL_PARTS[1]: 0.0, ITL_PARTS[2]: -0.00004},
    )
    text = str(parts)
    assert "-0.0" not in text and "on the way to the client      0.0 ms" in text
    parts.parts_s[ITL_PARTS[2]] = -0.0003  # a real (small) negative part keeps its sign
    assert "on the way to the client     -0.3 ms" in str(parts)


def test_band_says_too_close_where_the_spread_crosses_a_boundary():
    from viz import perf
    from viz.exercises import compare_prediction
    from viz.serve import band
    from viz.serve.metrics import TOO_CLOSE
    from viz.spread import Spread

    words = ["under 1.5×", "1.5× to 4×", "more than 4×"]
    assert TOO_CLOSE == perf.TOO_CLOSE
    clear = band(Spread(3.0, 2.8, 3.3, 8, True), [1.5, 4], words)
    assert clear.word == clear.regime == "1.5× to 4×" and not clear.between
    assert band(4.5, [1.5, 4], words).word == "more than 4×"
    assert band(1.2, [1.5, 4], words).word == "under 1.5×"
    close = band(Spread(3.8, 3.5, 4.2, 8, True), [1.5, 4], words)
    assert close.word == TOO_CLOSE and close.between == ("1.5× to 4×", "more than 4×")
    assert "too close to call between" in str(close)
    assert compare_prediction("more than 4×", close, options=words).ok
    assert compare_prediction("1.5× to 4×", close, options=words).ok
    assert not compare_prediction("under 1.5×", close, options=words).ok
    assert not compare_prediction("more than 4×", clear, options=words).ok
    # across both boundaries: the median's range and the nearer neighbour
    wide = band(Spread(3.5, 1.0, 5.0, 8, True), [1.5, 4], words)
    assert wide.between == ("1.5× to 4×", "more than 4×")
    with pytest.raises(ValueError, match="increasing edges"):
        band(1.0, [4, 1.5], words)


def test_throughput_ratio_spreads_over_the_requests_paces():
    from viz.serve import throughput_ratio

    # base: one request at a time, each 0.1 s per token; run: two at once, 0.15 and 0.25 s
    base = make_run(
        [rec(0, 0.0, [0.1, 0.2, 0.3], 0.3, out=3), rec(1, 0.3, [0.4, 0.5, 0.6], 0.6, out=3)]
    )
    run = make_run(
        [rec(0, 0.0, [0.1, 0.25, 0.4], 0.4, out=3), rec(1, 0.0, [0.1, 0.35, 0.6], 0.6, out=3)]
    )
    r = throughput_ratio(run, base)
    assert r.median == pytest.approx((6 / 0.6) / (6 / 0.6))
    assert r.derived and r.low < r.median < r.high
    pace = 0.1 / statistics.median([0.15, 0.25])
    assert r.low == pytest.approx(r.median * (0.1 / 0.225) / pace)  # 75th pct of 0.15, 0.25
    assert r.high == pytest.approx(r.median * (0.1 / 0.175) / pace)


@pytest.mark.parametrize(
    "num_blocks, budget, word",
    [
        (32, 48, "the step budget"),  # 3 prompts of 40 tokens, 48 per pass: they queue for passes
        (6, 128, "the KV pool"),  # room in every pass, but 6 pages of 16 hold two requests at once
        (32, 256, "neither"),  # all three fit in one pass and in the pool
    ],
)
def test_limits_say_which_budget_held_requests_back(make_tiny, num_blocks, budget, word):
    from viz.serve import limits, record_schedule

    schedule, _ = record_schedule(
        make_tiny(seed=5).model,
        [[3] * 40, [4] * 40, [5] * 40],
        max_new_tokens=3,
        page_size=16,
        num_blocks=num_blocks,
        max_batch_tokens=budget,
    )
    run = make_run([rec(i, 0.0, [0.1, 0.2, 0.3], 0.4, out=3) for i in range(3)], schedule=schedule)
    for r in run.requests:
        r.prompt_tokens, r.max_tokens = 40, 3
    got = limits(run)
    assert got.word == word, str(got)
    assert (got.step_budget, got.pool_tokens) == (budget, 16 * num_blocks)
    assert got.peak_pages <= num_blocks and f"what held requests back: {word}" in str(got)
    assert "2 × 40.0 prompt tokens (the mean) = 80 to prefill" in str(got)  # make_run: 2 streams
    with pytest.raises(ValueError, match=r"no scheduler record: run it on EmbeddedServer"):
        limits(make_run(run.requests))
