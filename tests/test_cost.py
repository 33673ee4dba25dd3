"""What a token costs (`viz.perf.cost`) and energy per token (`viz.perf.energy`): the $/Mtok
arithmetic checked by hand on the shipped references, on load runs built here and on the tiny
and the real model; spreads carried through; the cached-input price; the RAPL reader on a fake
powercap folder (wraparound, permission denied, no folder) and the NVML reader on a fake
module; the view; the CLI and its refusals."""

import dataclasses
import sys
import types

import pytest

import viz
from viz import perf, views
from viz.cli import main
from viz.perf.cost import check_price, in_flight, usd
from viz.perf.energy import counter_delta
from viz.serve import SLO, LoadRun, LoadSettings, LoadSweep, RequestRecord, Target, Timeouts
from viz.serve.client import ClientInfo
from viz.serve.scheduler import BatchEntry, Schedule, SchedulerStep
from viz.serve.sweep import SweepPoint, SweepSettings
from viz.spread import Spread

DATA = __import__("pathlib").Path(viz.__file__).parent / "data"


def by_hand(price_per_hour: float, tokens_per_s: float) -> float:
    """$ per million tokens, as the lesson writes it."""
    return price_per_hour / (tokens_per_s * 3600) * 1e6


# ---- the arithmetic ------------------------------------------------------------------------------
def test_per_million_by_hand_with_its_spread():
    # 100 tokens/s (90–110) at $3.60 an hour: $3.60 ÷ 360,000 tokens × 1e6 = $10 per million;
    # the faster end is the cheaper one: 3.6 / (110 × 3600) × 1e6 = $9.09, the slower $11.11.
    s = perf.per_million(Spread(100.0, 90.0, 110.0, 5), 3.6)
    assert s.median == pytest.approx(10.0)
    assert (s.low, s.high) == (pytest.approx(by_hand(3.6, 110)), pytest.approx(by_hand(3.6, 90)))
    assert perf.per_million(100.0, 3.6).median == pytest.approx(10.0)  # a plain number: exact
    assert usd(0.1434) == "$0.143" and usd(1.134) == "$1.13" and usd(1234.5) == "$1,234"


def test_batch_sweep_prices_by_hand():
    """The shipped CPU batch sweep: output from the decode step, input from the prefill."""
    sweep = perf.load_reference("cpu-batch-sweep")
    bill = perf.cost(sweep, 0.10)
    steps, rows = sweep.spread("decode_step_s"), sweep.rows()
    assert [r.setting for r in bill.rows] == [f"batch {r['batch_size']}" for r in rows]
    for k, (r, row) in enumerate(zip(bill.rows, rows)):
        b, p = row["batch_size"], row["prompt_tokens"]
        assert r.output_tokens_per_s.median == pytest.approx(b / row["decode_step_s"])
        assert r.output_per_mtok.median == pytest.approx(by_hand(0.10, b / row["decode_step_s"]))
        # the spread: a slower step (its high end) makes the dearer token
        assert r.output_per_mtok.high == pytest.approx(by_hand(0.10, b / steps[k].high))
        assert r.output_per_mtok.low == pytest.approx(by_hand(0.10, b / steps[k].low))
        assert r.input_per_mtok.median == pytest.approx(by_hand(0.10, b * p / row["ttft_s"]))
        assert r.tpot_s is steps[k]
    # batch 1 on the reference: a 40.75 ms step, 24.5 tokens/s → $0.10 ÷ (24.5 × 3600) × 1e6
    assert bill.rows[0].output_per_mtok.median == pytest.approx(
        0.10 / 3600 * 0.04075 * 1e6, rel=1e-3
    )
    assert bill.best().setting == "batch 16"
    assert "×7.9 cheaper than batch 1" in bill.verdict()
    text = str(bill)
    assert "the price you typed" in text and "$1.13 ($1.11–$1.16)" in text
    # an input token is cheaper than an output one at every batch size (a prefill pass serves
    # the whole prompt)
    assert all(r.input_per_mtok.median < r.output_per_mtok.median for r in bill.rows)


def test_an_example_price_says_it_is_one():
    bill = perf.cost(perf.load_reference("cpu-batch-sweep"), perf.EXAMPLE_PRICES["cpu-vm"])
    assert bill.price_per_hour == 0.10
    assert "EXAMPLE" in bill.price_note and "2024" in bill.price_note
    for example in perf.EXAMPLE_PRICES.values():
        assert example.per_hour > 0 and example.source and example.as_of


def test_prefill_sweep_prices_input_from_its_longest_prompt():
    prompt = perf.load_reference("cpu-prompt-sweep")
    bill = perf.cost(perf.load_reference("cpu-batch-sweep"), 0.10, prefill=prompt)
    k = prompt.column("prompt_tokens").index(max(prompt.column("prompt_tokens")))
    rate = prompt.spread("prefill_forward_s")[k].rate(prompt.column("prompt_tokens")[k])
    assert all(r.input_tokens_per_s == rate for r in bill.rows)
    assert bill.rows[0].input_per_mtok.median == pytest.approx(by_hand(0.10, rate.median))
    assert "256 tokens" in bill.input_how


def test_gpu_reference_busy_and_wall():
    busy = perf.gpu_reference("busy-sweep", "llama-3.1-8b")
    bill = perf.cost(busy, perf.EXAMPLE_PRICES["h200"])
    row = busy.rows()[0]
    assert bill.rows[0].output_per_mtok.median == pytest.approx(
        by_hand(3.50, row["batch_size"] / row["gpu_busy_s"])
    )
    assert bill.rows[0].input_per_mtok is None and "give prefill=" in bill.input_how
    wall = perf.cost(busy, 3.50, clock="wall")
    assert wall.rows[0].output_per_mtok.median == pytest.approx(
        by_hand(3.50, row["batch_size"] / row["decode_step_s"])
    )
    withp = perf.cost(busy, 3.50, prefill=perf.gpu_reference("prompt-sweep", "llama-3.1-8b"))
    assert withp.rows[0].input_per_mtok is not None and "upper bound" in withp.input_how
    assert withp.best().setting == "batch 1024"
    with pytest.raises(ValueError, match="same model on the same machine"):
        perf.cost(busy, 3.50, prefill=perf.load_reference("cpu-prompt-sweep"))


# ---- load runs and sweeps, built here ------------------------------------------------------------
def req(i, sent, ttft, n, gap, prompt=20) -> RequestRecord:
    times = [sent + ttft + k * gap for k in range(n)]
    return RequestRecord(
        index=i,
        request_id=f"r{i}",
        prompt_name="p",
        max_tokens=n,
        scheduled_s=sent,
        sent_s=sent,
        token_times_s=times,
        token_texts=["x"] * n,
        end_s=times[-1],
        output_tokens=n,
        prompt_tokens=prompt,
        finish_reason="length",
    )


def step(i, start, end, *entries) -> SchedulerStep:
    batch = [BatchEntry(rid, phase, q, 0, True, [0]) for rid, phase, q in entries]
    return SchedulerStep(i, start, start, end, batch, [], [], [], 10, 0, [])


def schedule(*steps) -> Schedule:
    return Schedule(16, 64, 0, 1024, 256, list(steps), {}, transformers_version="5.24.0")


def run(requests, mode="concurrency", concurrency=2, sched=None, label="cb") -> LoadRun:
    how = dict(
        mode=mode,
        concurrency=concurrency if mode == "concurrency" else None,
        rate_per_s=2.0 if mode == "rate" else None,
        n_requests=len(requests),
        max_duration_s=60.0,
        seed=0,
        temperature=0.0,
        timeouts=Timeouts(),
        slo=SLO(),
    )
    if "max_tokens" in {f.name for f in dataclasses.fields(LoadSettings)}:
        how["max_tokens"] = None  # schema 1's one answer limit (None: each prompt's own)
    settings = LoadSettings(**how)
    return LoadRun(
        target=Target("http://127.0.0.1:1/v1", "chat", "m"),
        settings=settings,
        requests=requests,
        client=ClientInfo.here(),
        recorded_at="2026-01-01T00:00:00",
        label=label,
        schedule=sched,
    )


def test_a_load_run_by_hand():
    # Two requests of 5 tokens: sent at 0, first tokens at 0.2, then every 0.1 s (TPOT 0.1
    # and 0.2): ends at 0.6 and 1.0. 10 tokens in 1.0 s: 10 tokens/s, all-in.
    r = run(
        [req(0, 0.0, 0.2, 5, 0.1), req(1, 0.0, 0.2, 5, 0.2)],
        sched=schedule(
            step(0, 0.0, 0.2, ("r0", "prefill", 20), ("r1", "prefill", 20)),
            step(1, 0.2, 0.3, ("r0", "decode", 1), ("r1", "decode", 1)),
            step(2, 0.3, 0.35, ("r0", "decode", 1), ("r1", "prefill", 10)),
            step(3, 0.4, 0.5, ("r1", "prefill", 10)),
        ),
    )
    bill = perf.cost(r, 0.36)
    (row,) = bill.rows
    assert row.setting == "2 streams" and row.x == 2 and bill.x_name == "streams"
    assert row.output_tokens_per_s.median == pytest.approx(10.0)
    assert row.output_per_mtok.median == pytest.approx(by_hand(0.36, 10.0))  # $10 per million
    # the spread from the requests' paces, TPOT 0.1 and 0.2 (middle half 0.125–0.175 around
    # 0.15): tokens/s from 10 × 0.15/0.175 to 10 × 0.15/0.125
    assert row.output_tokens_per_s.low == pytest.approx(10 * 0.15 / 0.175)
    assert row.output_tokens_per_s.high == pytest.approx(10 * 0.15 / 0.125)
    # input: the passes that carried prompt chunks alone, 40 tokens in 0.2 s and 10 in 0.1 s
    # (the mixed pass is left out): 50 tokens in 0.3 s; the passes' own rates, 200 and 100
    # tokens/s (middle half 125–175 around 150), scale its ends
    assert row.input_tokens_per_s.median == pytest.approx(50 / 0.3)
    assert row.input_tokens_per_s.low == pytest.approx(50 / 0.3 * 125 / 150)
    assert row.input_per_mtok.median == pytest.approx(by_hand(0.36, 50 / 0.3))
    assert row.ttft_s.median == pytest.approx(0.2) and row.tpot_s.median == pytest.approx(0.15)
    assert "all-in" in bill.output_how and "nothing else" in bill.input_how


def test_a_load_run_without_a_scheduler_record_has_no_input_price():
    bill = perf.cost(run([req(0, 0.0, 0.2, 5, 0.1)]), 0.10)
    assert bill.rows[0].input_per_mtok is None
    assert "record=True" in bill.input_how
    mixed = run(
        [req(0, 0.0, 0.2, 5, 0.1)],
        sched=schedule(step(0, 0.0, 0.2, ("r0", "prefill", 20), ("r9", "decode", 1))),
    )
    assert "no recorded pass carried prompt chunks alone" in perf.cost(mixed, 0.1).input_how


def test_runs_at_several_loads_and_little_law():
    runs = [
        run([req(0, 0.0, 0.2, 5, 0.1)], concurrency=1),
        run([req(0, 0.0, 0.2, 5, 0.1), req(1, 0.0, 0.3, 5, 0.1)], concurrency=2),
    ]
    bill = perf.cost(runs, 1.0)
    assert [r.x for r in bill.rows] == [1, 2]
    assert "2 streams" in bill.source
    # Poisson arrivals: x is the requests in flight on average, Little's law: the E2Es (0.6
    # and 0.7 s) summed over the duration (the first send at 0 → the last end at 1.2 s)
    poisson = run([req(0, 0.0, 0.2, 5, 0.1), req(1, 0.5, 0.3, 5, 0.1)], mode="rate")
    assert in_flight(poisson) == pytest.approx((0.6 + 0.7) / 1.2)
    bill = perf.cost([poisson], 1.0)
    assert bill.x_name == "in flight" and bill.rows[0].x == pytest.approx(1.3 / 1.2)


def test_a_rate_sweep_prices_each_load_over_its_runs():
    sync = [run([req(0, 0.0, 0.2, 5, g)], concurrency=1) for g in (0.1, 0.12, 0.14)]
    top = [run([req(0, 0.0, 0.2, 5, 0.2), req(1, 0.0, 0.3, 5, 0.2)], concurrency=2)]
    how = dict(
        n_requests=2,
        n_rates=1,
        repeats=3,
        seed=0,
        max_duration_s=60.0,
        budget_s=600.0,
        saturation=0.25,
        slo_factor=2.0,
    )
    if "max_tokens" in {f.name for f in dataclasses.fields(SweepSettings)}:
        how["max_tokens"] = None  # schema 1's field
    settings = SweepSettings(**how)
    sweep = LoadSweep(
        target=sync[0].target,
        settings=settings,
        slo=SLO(),
        points=[SweepPoint("synchronous", None, sync), SweepPoint("throughput", None, top)],
        recorded_at="2026-01-01T00:00:00",
        duration_s=5.0,
        label="cb",
    )
    bill = perf.cost(sweep, 1.0)
    assert [r.setting for r in bill.rows] == ["one at a time", "all 2 at once"]
    tps = [r.summary().output_tokens_per_s for r in sync]  # 5 tokens in 0.6, 0.68, 0.76 s
    assert bill.rows[0].output_tokens_per_s == Spread.of(tps)
    assert bill.rows[0].output_per_mtok.median == pytest.approx(by_hand(1.0, tps[1]))
    assert bill.x_name == "in flight" and bill.rows[0].x == pytest.approx(1.0)


# ---- cached input --------------------------------------------------------------------------------
def test_cached_input_by_hand():
    # 100-token prompts: the whole prefill F = 0.2 s; with 90 cached, the 10 new tokens over
    # them C = 0.03 s. Fresh: 0.2/100 s a token; the 10 new ones pay 10 × 0.002 = 0.02 s, the
    # 90 cached the other 0.01 s: 0.01/90 s each, 1/18 of a fresh token.
    sweep = perf.load_reference("cpu-batch-sweep")
    prefix = perf.Sweep(
        name="prefix_cache",
        x="shared_share",
        columns={
            "shared_tokens": [0, 90],
            "shared_share": [0.0, 0.9],
            "new_tokens": [100, 10],
            "ttft_full_s": [0.2, 0.2],
            "ttft_cached_s": [0.2, 0.03],
            "speedup": [1.0, 0.2 / 0.03],
        },
        model=sweep.model,
        environment=sweep.environment,
        settings={"prompt_tokens": 100},
        spreads={
            "ttft_full_s": [Spread.exact(0.2), Spread(0.2, 0.19, 0.21, 3)],
            "ttft_cached_s": [Spread.exact(0.2), Spread(0.03, 0.029, 0.031, 3)],
        },
    )
    bill = perf.cost(sweep, 3.6, prefix=prefix)
    (c,) = bill.cached
    per_s = 3.6 / 3600 * 1e6  # $ per second of the machine, per million tokens
    assert (c.share, c.prompt_tokens, c.cached_tokens) == (0.9, 100, 90)
    assert c.input_per_mtok.median == pytest.approx(per_s * 0.2 / 100)  # $2 per million
    assert c.cached_per_mtok.median == pytest.approx(per_s * 0.01 / 90)
    assert c.ratio == pytest.approx(1 / 18)
    assert c.speedup.median == pytest.approx(0.2 / 0.03)
    # the worst case of both spreads: C low − F high share, and C high − F low share
    assert c.cached_per_mtok.low == pytest.approx(per_s * (0.029 - 0.21 * 0.1) / 90)
    assert c.cached_per_mtok.high == pytest.approx(per_s * (0.031 - 0.19 * 0.1) / 90)
    assert "cached ÷ fresh" in str(bill)
    with pytest.raises(ValueError, match="prefix-cache sweep"):
        perf.cost(sweep, 1.0, prefix=sweep)


def test_tiny_model_batch_and_prefix(tiny_gqa):
    sweep = perf.batch_size_sweep(tiny_gqa, [1, 4], max_new_tokens=4, progress=False)
    prefix = perf.prefix_cache_sweep(tiny_gqa, 64, [0.0, 0.5], repeats=1, progress=False)
    bill = perf.cost(sweep, 0.10, prefix=prefix)
    for r, row in zip(bill.rows, sweep.rows()):
        assert r.output_per_mtok.median == pytest.approx(
            by_hand(0.10, row["batch_size"] / row["decode_step_s"])
        )
    assert bill.cached[0].cached_tokens == 32
    assert views.cost_figure(bill).data


def test_real_model_batching_makes_output_tokens_cheaper(smollm):
    """The lesson's claim on the real model: 4 requests decoded together make tokens for less
    than one alone (a decode step of 4 takes far less than 4 steps of 1 on any machine the
    course runs on: the weights are read once for all 4)."""
    sweep = perf.batch_size_sweep(smollm, [1, 4], max_new_tokens=6, repeats=2, progress=False)
    bill = perf.cost(sweep, 0.10)
    one, four = bill.rows
    assert four.output_per_mtok.median < one.output_per_mtok.median
    assert one.output_per_mtok.median == pytest.approx(
        by_hand(0.10, 1 / sweep.column("decode_step_s")[0])
    )
    assert one.input_per_mtok.median < one.output_per_mtok.median


# ---- refusals ------------------------------------------------------------------------------------
@pytest.mark.parametrize("price", [-1, 0, 0.0, float("nan"), float("inf"), True, "0.10", None])
def test_a_bad_price_is_refused_naming_the_fix(price):
    with pytest.raises(ValueError, match="price per hour must be a positive number.*e.g. 0.10"):
        check_price(price)
    with pytest.raises(ValueError, match="price per hour must be a positive number"):
        perf.cost(perf.load_reference("cpu-batch-sweep"), price)


def test_measurements_with_no_throughput_are_refused():
    with pytest.raises(ValueError, match="prefill only.*prefill="):
        perf.cost(perf.load_reference("cpu-prompt-sweep"), 0.1)
    with pytest.raises(ValueError, match="context_length sweep has no throughput"):
        perf.cost(perf.load_reference("cpu-context-sweep"), 0.1)
    with pytest.raises(ValueError, match="dict has no throughput to price.*recorded reply"):
        perf.cost({"tokens_per_s": 10}, 0.1)
    with pytest.raises(ValueError, match="list has no throughput"):
        perf.cost([], 0.1)  # an empty list is no list of load runs
    with pytest.raises(ValueError, match="clock must be"):
        perf.cost(perf.load_reference("cpu-batch-sweep"), 0.1, clock="gpu")
    with pytest.raises(ValueError, match="prefill=.*prompt-length sweep"):
        perf.cost(
            perf.load_reference("cpu-batch-sweep"),
            0.1,
            prefill=perf.load_reference("cpu-batch-sweep"),
        )
    failed = req(0, 0.0, 0.2, 5, 0.1)
    failed.error, failed.error_kind = "HTTP 500", "http"
    with pytest.raises(ValueError, match="no load of this measurement completed a request"):
        perf.cost(run([failed]), 0.1)
    with pytest.raises(ValueError, match="positive number of tokens per second"):
        perf.cost(Spread.exact(0.0), 0.1)


def test_overlapping_spreads_are_too_close_to_call():
    sweep = perf.load_reference("cpu-batch-sweep")
    sweep.spreads["decode_step_s"][1] = Spread(0.067, 0.040, 0.090, 4)  # batch 2, very noisy
    for column in sweep.columns.values():
        del column[2:]
    for spreads in sweep.spreads.values():
        del spreads[2:]
    assert (
        perf.cost(sweep, 0.1)
        .verdict()
        .startswith("cheapest output token: too close to call between batch 1 and batch 2")
    )


def test_a_throughput_given_as_a_spread():
    bill = perf.cost(Spread(100.0, 90.0, 110.0, 3), 3.6)
    assert bill.rows[0].output_per_mtok.median == pytest.approx(10.0)
    assert bill.rows[0].input_per_mtok is None and "prefill=" in bill.input_how
    fig = views.cost_figure(bill)  # nothing to draw against: it says so
    assert "no setting to draw against" in fig.layout.annotations[0].text


# ---- the view ------------------------------------------------------------------------------------
def test_recorded_replies_price_output_from_their_gaps_and_input_from_ttft(tiny_gqa, fake_clock):
    # Under a clock that ticks 0.01 s per reading, the gaps between tokens are exact multiples
    # of it; the prices are taken here from the trace's own timestamps, by hand.
    short = viz.record(
        tiny_gqa, "Hi", max_new_tokens=5, stop_at_eos=False, clock=fake_clock(step=0.01)
    )
    longer = viz.record(
        tiny_gqa,
        "Hello there, " * 6,
        max_new_tokens=5,
        stop_at_eos=False,
        clock=fake_clock(step=0.01, growth=0.001),
    )
    bill = perf.cost([short, longer], 3.6)
    assert [r.x for r in bill.rows] == [len(short.prompt_tokens), len(longer.prompt_tokens)]
    for row, t in zip(bill.rows, (short, longer)):
        gaps = sorted(b.emitted_at_s - a.emitted_at_s for a, b in zip(t.steps, t.steps[1:]))
        median_gap = (gaps[len(gaps) // 2] + gaps[(len(gaps) - 1) // 2]) / 2
        assert row.output_per_mtok.median == pytest.approx(by_hand(3.6, 1 / median_gap))
        assert row.input_per_mtok.median == pytest.approx(
            by_hand(3.6, len(t.prompt_tokens) / t.timing.ttft_s)
        )
        assert row.ttft_s.median == pytest.approx(t.timing.ttft_s)
    # the plain clock makes every gap the same: one price, no spread; the growing one does not
    plain, growing = (r.output_per_mtok for r in bill.rows)
    assert plain.low == pytest.approx(plain.high) and growing.low < growing.high
    assert bill.rows[0].setting == '"Hi"' and bill.x_name == "prompt tokens"
    assert bill.rows[1].setting == '"Hello there, Hello there, H…"'  # 27 characters and …
    assert "2 recorded replies" in str(bill) and bill.name == "tiny-gqa, one request alone"
    assert perf.cost(short, 3.6).rows[0].output_per_mtok == bill.rows[0].output_per_mtok


def test_a_reply_of_one_token_has_nothing_to_price(tiny_gqa):
    one = viz.record(tiny_gqa, "Hi", max_new_tokens=1, stop_at_eos=False)
    with pytest.raises(ValueError, match="record at least 2 tokens"):
        perf.cost(one, 3.6)


def test_the_view_draws_output_input_and_the_wait():
    cpu = perf.cost(perf.load_reference("cpu-batch-sweep"), 0.10)
    gpu = perf.cost(perf.gpu_reference("busy-sweep", "llama-3.1-8b"), 3.50)
    data = views.cost_data([cpu, gpu])
    assert len(data) == len(cpu.rows) + len(gpu.rows)
    assert data[0]["output"]["median"] == pytest.approx(cpu.rows[0].output_per_mtok.median)
    assert data[0]["tpot_ms"]["median"] == pytest.approx(cpu.rows[0].tpot_s.median * 1e3)
    assert data[-1]["input"] is None  # the GPU busy sweep prices no input
    fig = views.cost_figure(cpu, gpu)
    names = [t.name for t in fig.data]
    assert any(n.endswith("at $0.100/h") for n in names)
    assert any(n.endswith("at $3.50/h") for n in names)
    assert sum(t.showlegend is not False for t in fig.data) == 2  # one entry per measurement
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    with pytest.raises(ValueError, match="viz.perf.Cost"):
        views.cost_figure([])


# ---- energy --------------------------------------------------------------------------------------
def powercap(tmp_path, zones):
    """A fake /sys/class/powercap: {folder name: (zone name, energy_uj, max_energy_range_uj)}."""
    root = tmp_path / "powercap"
    root.mkdir()
    for folder, (name, energy, top) in zones.items():
        z = root / folder
        z.mkdir()
        (z / "name").write_text(name + "\n")
        (z / "energy_uj").write_text(f"{energy}\n")
        (z / "max_energy_range_uj").write_text(f"{top}\n")
    return root


def set_energy(root, folder, value):
    (root / folder / "energy_uj").write_text(f"{value}\n")


def test_counter_delta_handles_wraparound():
    assert counter_delta(100, 350, 1000) == 250
    assert counter_delta(900, 50, 1000) == 150  # 100 to the top, then 50 from 0
    assert counter_delta(900, 50, None) is None  # went back, range unknown


def test_rapl_on_a_fake_powercap_folder(tmp_path):
    root = powercap(
        tmp_path,
        {
            "intel-rapl:0": ("package-0", 1_000_000, 10_000_000),
            "intel-rapl:1": ("package-1", 9_500_000, 10_000_000),
            "intel-rapl:2": ("psys", 0, 10_000_000),
            "intel-rapl:0:0": ("core", 0, 10_000_000),
        },
    )
    assert perf.energy_counter(root=root) == "energy counter: RAPL package-0 + package-1"
    with perf.energy_meter(root=root) as meter:
        set_energy(root, "intel-rapl:0", 3_000_000)  # +2 J
        set_energy(root, "intel-rapl:1", 500_000)  # wrapped: +0.5 J to the top, +0.5 J after
        set_energy(root, "intel-rapl:2", 99_000_000)  # psys overlaps the packages: not read
    e = meter.energy
    assert e.joules == pytest.approx(3.0) and e.wrapped == 1 and e.missing == ""
    assert e.per_token(30) == pytest.approx(0.1)
    assert e.watts == pytest.approx(3.0 / e.seconds)
    assert "J per token" in e.text(30) and "RAPL package-0 + package-1" in e.text()


def test_no_rapl_folder_says_so_and_never_invents_a_number(tmp_path):
    with perf.energy_meter(root=tmp_path / "nothing") as meter:
        pass
    assert meter.energy.joules is None and meter.energy.per_token(10) is None
    assert str(meter.energy) == (
        "this machine exposes no energy counter: RAPL not found under "
        f"{tmp_path / 'nothing'} (virtual machines rarely pass it "
        "through)"
    )
    (tmp_path / "empty").mkdir()
    assert "no RAPL zone" in perf.energy_counter(root=tmp_path / "empty")
    assert "no energy counter is read on 'mps'" in perf.energy_counter("mps")


def test_rapl_readable_only_by_root(tmp_path, monkeypatch):
    root = powercap(tmp_path, {"intel-rapl:0": ("package-0", 5, 100)})
    real = type(root).read_text

    def denied(path, *a, **kw):  # as Linux 5.10+ answers a user who is not root
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(type(root), "read_text", denied)
    with perf.energy_meter(root=root) as meter:
        pass
    assert meter.energy.joules is None
    assert "readable only by root" in meter.energy.missing and "chmod" in meter.energy.missing


def test_nvml_through_a_fake_module(monkeypatch):
    fake = types.ModuleType("pynvml")
    state = {"mj": 10_000}

    class NVMLError(Exception):
        pass

    fake.NVMLError = NVMLError
    fake.nvmlInit = lambda: None
    fake.nvmlDeviceGetHandleByIndex = lambda i: ("gpu", i)
    fake.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    fake.nvmlDeviceGetTotalEnergyConsumption = lambda h: state["mj"]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with perf.energy_meter("cuda:1") as meter:
        state["mj"] += 2_500  # 2.5 J
    assert meter.energy.joules == pytest.approx(2.5)
    assert meter.energy.counter == "NVML, GPU 1 (NVIDIA H200)"

    def unsupported(h):
        raise NVMLError("Not Supported")

    fake.nvmlDeviceGetTotalEnergyConsumption = unsupported
    assert "NVML gives no energy counter for GPU 0: Not Supported" in perf.energy_counter("cuda")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert "pynvml, is not installed" in perf.energy_counter("cuda")


# ---- the command line ----------------------------------------------------------------------------
def test_cli_prints_the_table(capsys):
    assert (
        main(
            [
                "cost",
                str(DATA / "cpu-batch-sweep.json"),
                "--price-per-hour",
                "0.10",
                "--prefill",
                str(DATA / "cpu-prompt-sweep.json"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "$ per million tokens at $0.100 an hour" in out and "batch 16" in out
    assert "cheapest output token: batch 16" in out
    assert (
        main(
            [
                "cost",
                str(DATA / "gpu-llama-3.1-8b-busy-sweep.json"),
                "--price-per-hour",
                "3.5",
                "--clock",
                "wall",
            ]
        )
        == 0
    )
    assert "wall time" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["cpu-batch-sweep.json", "--price-per-hour", "-0.1"], "price per hour must be a positive"),
        (["cpu-batch-sweep.json", "--price-per-hour", "0"], "price per hour must be a positive"),
        (["missing.json", "--price-per-hour", "0.1"], "no file at .*missing.json: check the path"),
        (
            ["cpu-chat-trace.json", "--price-per-hour", "0.1"],
            "holds a trace, which has no throughput",
        ),
        (["cpu-roofline.json", "--price-per-hour", "0.1"], "holds a roofline, which has no"),
        (["cpu-prompt-sweep.json", "--price-per-hour", "0.1"], "give it as --prefill"),
        (
            ["cpu-batch-sweep.json", "--price-per-hour", "0.1", "--prefix", "cpu-batch-sweep.json"],
            "prefix-cache sweep",
        ),
    ],
)
def test_cli_refuses_bad_input_in_one_line(args, message, capsys):
    args = [str(DATA / a) if a.endswith(".json") else a for a in args]
    assert main(["cost", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    import re

    assert re.search(message, err)


def test_python_m_viz_cost_end_to_end():
    """The real command, in a child process: the table on stdout, and a zero price refused
    with one line on stderr, status 2 and no traceback."""
    import subprocess

    def cost(*args):
        return subprocess.run(
            [sys.executable, "-m", "viz", "cost", str(DATA / "cpu-batch-sweep.json"), *args],
            capture_output=True,
            text=True,
            timeout=300,
        )

    good = cost("--price-per-hour", "0.10")
    assert good.returncode == 0, good.stderr
    assert "cheapest output token: batch 16, $0.143 per million" in good.stdout
    bad = cost("--price-per-hour", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("error: the price per hour must be a positive number")
