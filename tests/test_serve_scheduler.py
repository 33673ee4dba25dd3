"""transformers' continuous batching, recorded step by step in-process on a tiny random model:
chunked prefill, requests joining and waiting, the page table, prefix sharing — each checked
against arithmetic done here — and the version pin that guards the internals it reads."""

import math

import pytest
import torch

from viz.serve import (
    Schedule,
    StepRecorder,
    UnsupportedTransformers,
    check_transformers_version,
    record_schedule,
)
from viz.serve.probes import RequestProbe
from viz.serve.scheduler import supported_range

PAGE = 16


def prompt(n: int, start: int = 10) -> list[int]:
    return [start + (i * 7) % 200 for i in range(n)]


@pytest.fixture(scope="module")
def tiny_cb(make_tiny):
    return make_tiny(gqa=True, seed=3).model


def entries(schedule: Schedule, rid: str):
    return [(s.index, e) for s in schedule.steps for e in s.batch if e.request_id == rid]


def test_a_long_prompt_is_prefilled_in_chunks_under_the_token_budget(tiny_cb):
    schedule, outputs = record_schedule(
        tiny_cb, [prompt(100)], max_new_tokens=5, page_size=PAGE, num_blocks=32, max_batch_tokens=32
    )
    mine = [e for _, e in entries(schedule, "req_0")]
    prefill = [e for e in mine if e.phase == "prefill"]
    decode = [e for e in mine if e.phase == "decode"]
    assert [e.query_tokens for e in prefill] == [32, 32, 32, 4]  # 100 = 3 × 32 + 4
    assert [e.cached_tokens for e in prefill] == [0, 32, 64, 96]
    assert [e.new_token for e in prefill] == [False, False, False, True]
    # then one token per step, each step's KV one longer; 5 tokens = 1 from prefill + 4
    assert [e.query_tokens for e in decode] == [1] * 4
    assert [e.cached_tokens for e in decode] == [100, 101, 102, 103]
    assert all(s.tokens <= 32 for s in schedule.steps)
    assert len(outputs["req_0"]) == 5
    for e in mine:  # pages held = tokens in the cache, rounded up to whole pages
        assert len(e.pages) == math.ceil((e.cached_tokens + e.query_tokens) / PAGE)
    assert schedule.steps[-1].finished == ["req_0"]


def test_requests_wait_for_room_and_join_a_running_batch(tiny_cb):
    schedule, _ = record_schedule(
        tiny_cb,
        [prompt(40, 1), prompt(40, 2), prompt(40, 3)],
        max_new_tokens=4,
        page_size=PAGE,
        num_blocks=64,
        max_batch_tokens=48,
    )
    first = schedule.steps[0]
    # 48 tokens: all 40 of the first prompt and 8 of the second; the third waits
    assert [(e.request_id, e.query_tokens) for e in first.batch] == [("req_0", 40), ("req_1", 8)]
    assert first.waiting == ["req_2"]
    mixed = [s for s in schedule.steps if {e.phase for e in s.batch} == {"prefill", "decode"}]
    assert mixed, "no step mixed a prefill with decodes: nobody joined a running batch"
    starts = {rid: min(i for i, _ in entries(schedule, rid)) for rid in ("req_0", "req_2")}
    assert starts["req_2"] > starts["req_0"]
    assert set(schedule.request_ids()) == {"req_0", "req_1", "req_2"}


def test_arrivals_spread_over_steps_join_mid_flight(tiny_cb):
    # req_1 is added after req_0's third step, and joins the fourth pass exactly: the engine
    # waits at the third until it is added (polling from outside, a CI run under load saw
    # req_1 arrive 20 steps late, after req_0 had finished)
    schedule, _ = record_schedule(
        tiny_cb,
        [prompt(20, 1), prompt(20, 2)],
        max_new_tokens=8,
        page_size=PAGE,
        num_blocks=32,
        max_batch_tokens=64,
        arrive_every_steps=3,
    )
    join = min(i for i, _ in entries(schedule, "req_1"))
    assert join == 3  # the pass after req_0's third
    assert join < max(i for i, _ in entries(schedule, "req_0")), "req_0 ended before req_1 came"
    step = schedule.steps[join]
    assert {(e.request_id, e.phase) for e in step.batch} == {
        ("req_0", "decode"),
        ("req_1", "prefill"),
    }


def test_a_common_prefix_shares_pages(tiny_cb):
    common = prompt(40, 5)
    schedule, outputs = record_schedule(
        tiny_cb,
        [common + prompt(8, 100), common + prompt(8, 150)],
        max_new_tokens=4,
        page_size=PAGE,
        num_blocks=32,
        max_batch_tokens=64,
        arrive_every_steps=1,
    )
    a = [e for _, e in entries(schedule, "req_0")]
    b = [e for _, e in entries(schedule, "req_1")]
    # the second request finds the first one's two full pages of the common 40 tokens
    assert b[0].cached_tokens == 2 * PAGE and b[0].query_tokens == 48 - 2 * PAGE
    assert b[0].pages[:2] == a[0].pages[:2]
    shared = [s for s in schedule.steps if s.shared_pages]
    assert shared and set(shared[0].shared_pages) == set(a[0].pages[:2])
    assert len(outputs) == 2


def test_page_accounting_adds_up(tiny_cb):
    schedule, _ = record_schedule(
        tiny_cb,
        [prompt(30), prompt(50, 3)],
        max_new_tokens=3,
        page_size=PAGE,
        num_blocks=32,
        max_batch_tokens=128,
    )
    assert schedule.total_pages == 32 and schedule.page_size == PAGE
    step0 = schedule.steps[0]
    held = {p for e in step0.batch for p in e.pages}
    assert len(held) == math.ceil(30 / PAGE) + math.ceil(50 / PAGE)
    assert step0.free_pages + len(held) + step0.cached_pages == schedule.total_pages
    ids = [p - schedule.first_page for e in step0.batch for p in e.pages]
    assert all(0 <= i < schedule.total_pages for i in ids)


def test_continuous_batching_gives_the_same_greedy_tokens_as_generate(tiny_cb):
    prompts = [prompt(12, 1), prompt(30, 2), prompt(7, 3)]
    _, outputs = record_schedule(
        tiny_cb, prompts, max_new_tokens=6, page_size=PAGE, num_blocks=32, max_batch_tokens=64
    )
    for i, p in enumerate(prompts):
        with torch.no_grad():
            ref = tiny_cb.generate(
                torch.tensor([p]),
                attention_mask=torch.ones(1, len(p), dtype=torch.long),
                max_new_tokens=6,
                min_new_tokens=6,
                do_sample=False,
                pad_token_id=0,
            )
        assert outputs[f"req_{i}"] == ref[0, len(p) :].tolist()


def test_a_schedule_is_a_saved_document(tiny_cb, tmp_path):
    schedule, _ = record_schedule(
        tiny_cb,
        [prompt(20)],
        max_new_tokens=3,
        page_size=PAGE,
        num_blocks=16,
        max_batch_tokens=32,
        label="tiny",
    )
    again = Schedule.load(schedule.save(tmp_path / "s.json"))
    assert again == schedule and again.label == "tiny"
    late = schedule.shifted(-1.0)
    assert late.steps[0].start_s == pytest.approx(schedule.steps[0].start_s + 1.0)
    assert schedule.between(schedule.steps[1].start_s, 1e9).steps == schedule.steps[1:]


# ---- the version pin ---------------------------------------------------------------------------
def test_the_installed_transformers_is_in_the_supported_range():
    import transformers

    assert check_transformers_version() == transformers.__version__
    assert check_transformers_version("5.24.3") == "5.24.3"


@pytest.mark.parametrize("version", ["5.25.0", "5.23.9", "4.57.1", "6.0.0", "not-a-version"])
def test_other_versions_are_refused_naming_the_range(version):
    with pytest.raises(
        UnsupportedTransformers,
        match=rf"supports transformers >=5.24,<5.25, but {version} is installed: "
        r"install 'transformers>=5.24,<5.25'",
    ):
        check_transformers_version(version)


def test_a_faked_version_stops_the_recorders_before_they_touch_anything(tiny_cb, monkeypatch):
    import transformers
    from transformers.generation.continuous_batching import continuous_api

    before = continuous_api.ContinuousBatchProcessor.prepare_next_batch
    monkeypatch.setattr(transformers, "__version__", "5.31.0")
    message = rf"supports transformers {supported_range()}, but 5.31.0 is installed"
    with pytest.raises(UnsupportedTransformers, match=message):
        StepRecorder().install()
    with pytest.raises(UnsupportedTransformers, match=message):
        RequestProbe(lambda line: None).install()
    with pytest.raises(UnsupportedTransformers, match=message):
        record_schedule(tiny_cb, [prompt(8)], max_new_tokens=2)
    assert continuous_api.ContinuousBatchProcessor.prepare_next_batch is before


def test_one_recorder_at_a_time_and_removal_restores_transformers():
    from transformers.generation.continuous_batching import continuous_api

    before = continuous_api.ContinuousBatchProcessor.prepare_next_batch
    with StepRecorder():
        assert continuous_api.ContinuousBatchProcessor.prepare_next_batch is not before
        with pytest.raises(RuntimeError, match="a StepRecorder is already recording"):
            StepRecorder().install()
    assert continuous_api.ContinuousBatchProcessor.prepare_next_batch is before
    with pytest.raises(ValueError, match="no continuous-batching step was recorded"):
        StepRecorder().schedule()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(prompts=[]), "prompts must be a non-empty list"),
        (dict(prompts=[[]]), "prompts must be a non-empty list"),
        (dict(max_new_tokens=0), "max_new_tokens must be a whole number >= 1"),
        (dict(page_size=True), "page_size must be a whole number >= 1"),
    ],
)
def test_bad_record_schedule_arguments(tiny_cb, kwargs, message):
    kwargs = {"prompts": [prompt(8)], **kwargs}
    with pytest.raises(ValueError, match=message):
        record_schedule(tiny_cb, **kwargs)


def test_requirements_pin_the_transformers_the_recorder_supports():
    """The scheduler recorder reads transformers' internals: a set-up must not install a
    release it was not written for (the day 5.25 appears, a fresh `make` would break lesson 09)."""
    import re
    from pathlib import Path

    from viz.serve import SUPPORTED_TRANSFORMERS

    text = (Path(__file__).resolve().parents[1] / "requirements.txt").read_text()
    line = re.search(r"^transformers([^\s#]+)", text, re.MULTILINE)
    assert line and line.group(1).split(",") == list(SUPPORTED_TRANSFORMERS)
