"""`viz.steps`: the one timed decode step and the decode loop made of it. The loop gives Hugging
Face's greedy tokens; the clock is read where `Timed` says (an injected clock gives known
seconds); a pass that chooses itself is read twice; a clock that is not a `Clock` is refused."""

import pytest
import torch

from viz import compat
from viz.runtime import Clock
from viz.steps import Timed, decode, timed_step

PROMPT = "The capital of France is"


def hf_greedy(lm, prompt_ids, n):
    ids = torch.tensor([prompt_ids])
    out = lm.model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=n,
        pad_token_id=lm.tokenizer.pad_token_id,
    )
    return out[0, len(prompt_ids) :].tolist()


def greedy_with_decode(lm, prompt_ids, n, clock):
    """A prefill timed with `timed_step`, then n - 1 steps of `decode`, greedy."""
    forward = compat.last_logits(lm.model)
    cache = compat.new_cache(lm.model)

    def argmax(logits):
        return int(logits[0].argmax())

    with torch.inference_mode():
        first = timed_step(clock, lambda: forward(torch.tensor([prompt_ids]), cache), argmax)
        reply = [first.token]
        steps = decode(clock, forward, cache, lambda: torch.tensor([[reply[-1]]]), argmax)
        timed = [first]
        for _ in range(n - 1):
            timed.append(next(steps))
            reply.append(timed[-1].token)
    return reply, timed


def test_decode_gives_generates_greedy_tokens(tiny):
    ids = list(tiny.tokenizer(PROMPT)["input_ids"])
    reply, _ = greedy_with_decode(tiny, ids, 12, Clock(tiny.device))
    assert reply == hf_greedy(tiny, ids, 12)


def test_an_injected_clock_gives_each_steps_seconds(tiny_gqa, fake_clock):
    # readings 0, .5, 1.5, 3 | 5, 7.5, 10.5 | 14, ...: three per step (start, forward, choice)
    ids = list(tiny_gqa.tokenizer(PROMPT)["input_ids"])
    _, timed = greedy_with_decode(tiny_gqa, ids, 3, Clock(tiny_gqa.device, fake_clock(growth=0.5)))
    assert [(t.started, t.forwarded, t.chosen) for t in timed] == [
        (0.0, 0.5, 1.5),
        (3.0, 5.0, 7.5),
        (10.5, 14.0, 18.0),
    ]
    assert [t.forward_s for t in timed] == [0.5, 2.0, 3.5]
    assert [t.choose_s for t in timed] == [1.0, 2.5, 4.0]
    assert [t.seconds for t in timed] == [1.5, 4.5, 7.5]


def test_a_step_that_chooses_itself_reads_the_clock_twice(fake_clock):
    clock = Clock(torch.device("cpu"), fake_clock(step=1.0))
    step = timed_step(clock, lambda: 7)
    assert step == Timed(logits=7, token=7, started=0.0, forwarded=1.0, chosen=1.0)
    assert (step.forward_s, step.choose_s, step.seconds) == (1.0, 0.0, 1.0)
    # `started` counts from an earlier reading: the clock is read only after the pass
    later = timed_step(clock, lambda: 1, lambda x: x + 1, started=-1.0)
    assert (later.token, later.started, later.forwarded, later.chosen) == (2, -1.0, 2.0, 3.0)


def test_decode_builds_each_input_after_the_clock_starts(fake_clock):
    """feed and extras run inside the step's time, after its first reading (building the
    input is the step's own work), and only when a step is asked for."""
    ticks = fake_clock(step=1.0)
    clock = Clock(torch.device("cpu"), ticks)
    seen, reads_at_feed = [], []

    def feed():
        reads_at_feed.append(ticks.k)  # how many times the clock was read so far
        return len(seen)

    def extras():
        return {"position_ids": len(seen) + 100}

    def forward(ids, cache, position_ids):
        seen.append((ids, cache, position_ids))
        return ids * 10

    steps = decode(clock, forward, "cache", feed, lambda s: s + 1, extras=extras)
    assert reads_at_feed == []  # a generator: nothing runs before the first next()
    first, second = next(steps), next(steps)
    assert seen == [(0, "cache", 100), (1, "cache", 101)]
    assert (first.logits, first.token, second.token) == (0, 1, 11)
    assert (first.started, first.chosen, second.started) == (0.0, 2.0, 3.0)
    assert reads_at_feed == [1, 4]  # right after each step's start reading


def test_a_clock_that_is_not_a_Clock_is_refused():
    with pytest.raises(
        ValueError,
        match=r"clock must be a viz.runtime.Clock .* not function: "
        r"pass Clock\(lm.device\)",
    ):
        timed_step(lambda: 0.0, lambda: 1)


# The modules that time generation, and the clock readings each may make itself (outside a
# step): record's start and end of tokenizing, the batch's start. Every other reading is a
# step's own, in viz/steps.py.
OWN_READINGS = {
    "record.py": 2,
    "perf/batch.py": 1,
    "perf/compiled.py": 0,
    "perf/profile.py": 0,
    "perf/prefix.py": 0,
}


def clock_reads(source: str) -> int:
    """Calls of `<clock>.now()` or `time.perf_counter()` in a module's source (not
    `datetime.now(...)`: a document's date, not a timing)."""
    import ast

    def is_datetime(node: ast.AST) -> bool:
        return getattr(node, "id", getattr(node, "attr", None)) == "datetime"

    return sum(
        1
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("now", "perf_counter")
        and not is_datetime(node.func.value)
    )


def test_the_timed_step_is_written_once():
    """No module that times decoding reads the clock around a forward pass itself: each calls
    `viz.steps.timed_step` or `viz.steps.decode` (the llama.cpp loop in
    viz/perf/engine_child.py is the one exception: its child process never imports viz)."""
    from pathlib import Path

    viz_dir = Path(__file__).parents[1] / "viz"
    assert (
        clock_reads(
            "t0 = clock.now()\nt = time.perf_counter()\nx = now()\n"
            "d = datetime.datetime.now(datetime.timezone.utc)\n"
        )
        == 2
    )
    for name, allowed in OWN_READINGS.items():
        source = (viz_dir / name).read_text(encoding="utf-8")
        assert clock_reads(source) == allowed, f"{name} reads the clock itself"
        assert "timed_step(" in source or "decode(" in source, f"{name} has its own step"
    assert clock_reads((viz_dir / "steps.py").read_text(encoding="utf-8")) == 3
