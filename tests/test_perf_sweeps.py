"""Sweeps on the tiny model: one row per setting, monotone lengths, JSON round trip, quiet mode."""

import json

import pytest

from viz import perf
from viz.perf.sweeps import prompt_of_length
from viz.perf.table import Sweep


def roundtrip(sweep):
    again = Sweep.from_dict(json.loads(sweep.to_json()))
    assert again == sweep
    return again


def test_prompt_of_length_is_exact(tiny_gqa, smollm):
    for lm in (tiny_gqa, smollm):
        for n in (1, 2, 7, 33, 100):
            assert len(lm.tokenizer(prompt_of_length(lm.tokenizer, n))["input_ids"]) == n


def test_prompt_length_sweep(tiny, capsys):
    sweep = perf.prompt_length_sweep(tiny, [3, 9, 27], repeats=2, progress=False)
    assert capsys.readouterr().err == ""  # progress=False: nothing printed
    assert sweep.name == "prompt_length" and len(sweep) == 3
    assert sweep.column("prompt_tokens") == [3, 9, 27]
    for row in sweep.rows():
        assert row["ttft_s"] >= row["prefill_forward_s"] > 0
        assert row["prefill_tokens_per_s"] == pytest.approx(
            row["prompt_tokens"] / row["prefill_forward_s"]
        )
        assert row["prefill_flops"] == perf.prefill_cost(tiny.spec, row["prompt_tokens"]).flops
    # each timed figure keeps its spread: two repeats, their median is the column's value
    for name in ("ttft_s", "prefill_forward_s"):
        for value, s in zip(sweep.column(name), sweep.spread(name)):
            assert s.runs == 2 and s.median == value and s.low <= value <= s.high
    assert sweep.spread("prompt_tokens")[0].runs == 0  # a count: exact
    roundtrip(sweep)
    assert "prompt_tokens" in str(sweep)


def test_progress_bar_is_shown_by_default(tiny_gqa, capsys):
    perf.prompt_length_sweep(tiny_gqa, [2, 4], repeats=1)
    assert "prompt length" in capsys.readouterr().err


def test_context_length_sweep(tiny_gqa):
    sweep = perf.context_length_sweep(tiny_gqa, [4, 16, 48], max_new_tokens=4, progress=False)
    assert sweep.column("context_tokens") == [4, 16, 48]
    spec = tiny_gqa.spec
    # after prefill (c) and 3 decode steps the cache holds c + 3 tokens
    assert sweep.column("kv_bytes") == [spec.kv_bytes(c + 3) for c in (4, 16, 48)]
    assert all(v > 0 for v in sweep.column("decode_step_s"))
    # the median and spread of the 3 decode steps of one repeat
    assert [s.runs for s in sweep.spread("decode_forward_s")] == [3, 3, 3]
    roundtrip(sweep)


def test_cache_sweep(tiny):
    sweep = perf.cache_sweep(tiny, "Hello 🍕", max_new_tokens=6, progress=False)
    assert sweep.column("step") == list(range(6))
    seq = sweep.column("seq_len")
    assert seq == list(range(seq[0], seq[0] + 6))  # grows by one token per step
    assert sweep.column("cached_input_tokens") == [seq[0]] + [1] * 5
    assert sweep.column("uncached_input_tokens") == seq  # the whole text, every step
    assert sweep.column("same_token") == [1] * 6 and sweep.settings["same_tokens"] is True
    assert all(
        u > c for u, c in zip(sweep.column("uncached_flops")[1:], sweep.column("cached_flops")[1:])
    )
    roundtrip(sweep)


def test_batch_size_sweep(tiny_gqa):
    sweep = perf.batch_size_sweep(tiny_gqa, [1, 2, 4], max_new_tokens=3, progress=False)
    assert sweep.column("batch_size") == [1, 2, 4]
    n_prompt = sweep.column("prompt_tokens")[0]
    assert sweep.column("prompt_tokens") == [n_prompt] * 3
    assert sweep.column("kv_bytes") == [b * tiny_gqa.spec.kv_bytes(n_prompt + 2) for b in (1, 2, 4)]
    for row in sweep.rows():
        assert row["aggregate_decode_tokens_per_s"] == pytest.approx(
            row["batch_size"] / row["decode_step_s"]
        )
        assert row["aggregate_tokens_per_s"] == pytest.approx(
            row["batch_size"] * 3 / row["request_latency_s"]
        )
    roundtrip(sweep)


@pytest.mark.parametrize(
    "bad, message",
    [
        ([], "lengths must be a non-empty list of whole numbers >= 1"),
        ([4, 2], "lengths must be increasing with no repeats"),
        ([2, 2], "lengths must be increasing with no repeats"),
        ([0, 1], "lengths must be a non-empty list of whole numbers >= 1"),
        ([1.5], "lengths must be a non-empty list of whole numbers >= 1"),
    ],
)
def test_bad_settings(tiny_gqa, bad, message):
    with pytest.raises(ValueError, match=message):
        perf.prompt_length_sweep(tiny_gqa, bad, progress=False)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"repeats": 0}, "repeats must be a whole number >= 1, not 0"),
        ({"threads": 0}, r"threads must be a whole number >= 1 \(or None"),
        ({"max_new_tokens": 1}, r"max_new_tokens must be a whole number >= 2 \(one decode step"),
    ],
)
def test_bad_repeats_threads_and_tokens(tiny_gqa, kwargs, message):
    with pytest.raises(ValueError, match=message):
        perf.batch_size_sweep(tiny_gqa, [1], progress=False, **kwargs)


def test_too_long_for_the_model(tiny_gqa):
    with pytest.raises(ValueError, match="positions"):
        perf.context_length_sweep(tiny_gqa, [600], progress=False)


def test_sweep_file_round_trip_and_bad_files(tiny_gqa, tmp_path):
    sweep = perf.prompt_length_sweep(tiny_gqa, [2, 5], repeats=1, progress=False)
    path = sweep.save(tmp_path / "s.json")
    assert Sweep.load(path) == sweep
    bad = json.loads(path.read_text())
    bad["columns"]["ttft_s"] = [1.0]  # ragged
    with pytest.raises(ValueError, match="equal lengths"):
        Sweep.from_dict(bad)
    with pytest.raises(ValueError, match="not a viz sweep"):
        Sweep.from_dict({"kind": "llm-inference-trace"})
    newer = json.loads(path.read_text())
    newer["schema_version"] = 99
    with pytest.raises(ValueError, match="schema_version"):
        Sweep.from_dict(newer)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="cannot read"):
        Sweep.load(tmp_path / "broken.json")


def test_merged_sweeps_keep_x_order_and_replace_a_row_measured_again(tiny_gqa):
    a = perf.context_length_sweep(tiny_gqa, [4, 48], max_new_tokens=3, progress=False)
    b = perf.context_length_sweep(tiny_gqa, [16, 48], max_new_tokens=3, progress=False)
    both = a.merged(b)
    assert both.column("context_tokens") == [4, 16, 48]
    # 4 from a; 16 and 48 from b (b's 48 replaces a's)
    steps = both.column("decode_step_s")
    assert steps == [a.column("decode_step_s")[0]] + b.column("decode_step_s")
    assert both.spread("decode_forward_s")[1:] == b.spread("decode_forward_s")
    assert both.spread("decode_forward_s")[0] == a.spread("decode_forward_s")[0]
    assert a.column("context_tokens") == [4, 48]  # neither input changed
    roundtrip(both)


def test_only_the_same_kind_of_sweep_merges(tiny_gqa):
    ctx = perf.context_length_sweep(tiny_gqa, [4], max_new_tokens=3, progress=False)
    batch = perf.batch_size_sweep(tiny_gqa, [1], max_new_tokens=3, progress=False)
    with pytest.raises(ValueError, match="only the same kind of sweep merges"):
        ctx.merged(batch)
    with pytest.raises(TypeError, match="merge a Sweep with another Sweep, not dict"):
        ctx.merged({})
