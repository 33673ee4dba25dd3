"""Prompt-lookup decoding in depth (viz.perf.speculative, viz.views.speculative), on tiny
random-weight models: seconds, no files.

A random-weight model at greedy soon repeats one token, so prompt lookup finds the repeats
and its guesses get accepted: the passes are deterministic for a fixed seed. The expected
tokens per pass are worked out here, independently of the library: the greedy tokens from a
decode loop written out below (no `generate`, no cache), and the lookup rule replayed on them.
"""

import dataclasses
import json
import statistics

import pytest
import torch

from conftest import tiny_config
from viz.perf import from_config
from viz.perf.speculative import (
    LOOKUP_PROMPTS,
    LOOKUP_WHY,
    GenerateRun,
    LookupComparison,
    compare_prompt_lookup,
)
from viz.spread import TOO_CLOSE, Spread
from viz.views.speculative import (
    accepted_histogram_data,
    accepted_histogram_figure,
    draft_length_data,
    draft_length_figure,
)

K = 10  # transformers' default guesses per lookup


@pytest.fixture(scope="module")
def lm():
    return from_config(tiny_config(), dtype="float32", seed=3)


def greedy_tokens(lm, prompt_ids: list[int], max_new: int, eos: set) -> list[int]:
    """Greedy decode written out: the whole sequence through the model each step, no cache."""
    ids = list(prompt_ids)
    with torch.inference_mode():
        for _ in range(max_new):
            nxt = int(lm.model(torch.tensor([ids])).logits[0, -1].argmax())  # the likeliest
            ids.append(nxt)
            if nxt in eos:
                break
    return ids[len(prompt_ids) :]


def lookup_guesses(seq: list[int], k: int, max_length: int, eos: set) -> list[int]:
    """Prompt lookup's guesses (transformers' PromptLookupCandidateGenerator): the last 2
    tokens (else the last 1) found earlier in the sequence, first match from the left; the
    up to k tokens that followed them there, stopping before an end-of-sequence token."""
    n = len(seq)
    if max_length == n + 1:
        return []
    for size in range(min(2, n - 1), 0, -1):
        for i in range(n - size + 1):
            if seq[i : i + size] == seq[-size:]:
                start, end = i + size, min(i + size + k, n, max_length)
                if start < end:
                    guess = seq[start:end]
                    cut = next((j for j, t in enumerate(guess) if t in eos), len(guess))
                    return guess[:cut]
    return []


def expected_tokens_per_pass(prompt_ids, greedy, k, max_new, eos) -> list[int]:
    """Tokens made by each pass (the prefill first): 1 + the guesses that match the greedy
    tokens, up to the first mismatch, never past the end of the reply."""
    seq, done, made = list(prompt_ids), 0, []
    while done < len(greedy):
        guess = lookup_guesses(seq, k, len(prompt_ids) + max_new, eos)
        right = 0
        while (
            right < len(guess)
            and done + right < len(greedy)
            and guess[right] == greedy[done + right]
        ):
            right += 1
        step = min(right + 1, len(greedy) - done)
        made.append(step)
        seq += greedy[done : done + step]
        done += step
    return made


def eos_of(lm) -> set:
    e = lm.model.generation_config.eos_token_id
    return set(e if isinstance(e, list) else [] if e is None else [e])


@pytest.mark.parametrize("prompt", ["abcabcabcabcabcabc", "cccccccccccc"])
def test_tokens_per_pass_follow_the_lookup_rule(lm, prompt):
    max_new = 24
    c = compare_prompt_lookup(
        lm, prompt, chat=False, max_new_tokens=max_new, num_lookup_tokens=K, repeats=1, threads=1
    )
    ids, eos = lm.tokenizer(prompt)["input_ids"], eos_of(lm)
    greedy = greedy_tokens(lm, ids, max_new, eos)
    made = expected_tokens_per_pass(ids, greedy, K, max_new, eos)
    assert max(made) > 1  # the lookup did accept guesses, so the test shows something
    run = c.lookup
    assert [run.prefill_tokens] + run.tokens_per_pass_counts == made
    assert run.forward_passes == len(made)
    # the histogram counts every decode pass once, and their tokens add up to the reply
    hist = run.histogram()
    assert sum(hist.values()) == run.forward_passes - 1
    assert sum(t * n for t, n in hist.items()) == run.new_tokens - run.prefill_tokens
    assert run.tokens_per_pass == pytest.approx(statistics.mean(made[1:]))
    assert c.accepted_histogram() == {t - 1: n for t, n in hist.items()}
    # plain decode: one token per pass, the prefill's included
    p = c.plain
    assert p.prefill_tokens == 1 and p.forward_passes == p.new_tokens == len(greedy)
    assert p.histogram() == {1: len(greedy) - 1} and p.tokens_per_pass == 1.0


def test_prefill_pass_can_accept_guesses(lm):
    """In transformers 5 the first pass already checks guesses found in the prompt: a prompt of
    one repeated token whose greedy reply repeats it makes k + 1 tokens in the prefill."""
    prompt = "cccccccccccc"
    ids, eos = lm.tokenizer(prompt)["input_ids"], eos_of(lm)
    greedy = greedy_tokens(lm, ids, 24, eos)
    assert greedy[: K + 1] == ids[:1] * (K + 1), "seed 3's reply repeats the prompt's token"
    c = compare_prompt_lookup(lm, prompt, chat=False, max_new_tokens=24, repeats=1, threads=1)
    assert c.lookup.prefill_tokens == K + 1
    assert c.lookup.tokens_per_pass == pytest.approx(
        (c.lookup.new_tokens - (K + 1)) / (c.lookup.forward_passes - 1)
    )


def test_greedy_text_identical_token_for_token(lm):
    prompt = "abcabcabcabcabcabc"
    c = compare_prompt_lookup(lm, prompt, chat=False, max_new_tokens=20, repeats=2, threads=1)
    ids = lm.tokenizer(prompt)["input_ids"]
    greedy = greedy_tokens(lm, ids, 20, eos_of(lm))
    assert c.identical
    assert c.plain.token_ids == greedy and c.lookup.token_ids == greedy
    assert c.lookup.text == c.plain.text == lm.tokenizer.decode(greedy)
    # every run's TPOT is kept; the spread's median is the medians' ratio
    assert len(c.plain_tpots_s) == len(c.lookup_tpots_s) == 2
    assert c.speedup_spread.median == pytest.approx(
        statistics.median(c.plain_tpots_s) / statistics.median(c.lookup_tpots_s)
    )
    assert c.speedup_verdict.word in (
        "plain decode is faster",
        "prompt lookup is faster",
        TOO_CLOSE,
    )
    # JSON-native: the run round-trips through json as it is
    d = dataclasses.asdict(c.lookup)
    assert GenerateRun(**json.loads(json.dumps(d))) == c.lookup
    assert "decode passes by tokens made" in str(c)


def _run(tpot_s: float, counts=(1, 1)) -> GenerateRun:
    n = 1 + sum(counts)
    return GenerateRun(
        "x",
        list(range(n)),
        "",
        1 + len(counts),
        0.01,
        tpot_s * (n - 1),
        0.01 + tpot_s * (n - 1),
        list(counts),
        1,
    )


@pytest.mark.parametrize(
    "plain, lookup, word",
    [
        ([0.30, 0.31, 0.32], [0.10, 0.11, 0.12], "prompt lookup is faster"),
        ([0.10, 0.11, 0.12], [0.30, 0.31, 0.32], "plain decode is faster"),
        ([0.20, 0.30, 0.40], [0.20, 0.30, 0.40], TOO_CLOSE),  # spreads overlap: ratio 0.71–1.4
    ],
)
def test_speedup_spread_and_verdict(plain, lookup, word):
    c = LookupComparison(
        "p", K, _run(statistics.median(plain)), _run(statistics.median(lookup)), 3, plain, lookup
    )
    s = c.speedup_spread
    # worst case at each end: the 25th/75th percentiles, by hand for three runs
    q = lambda xs: (xs[0] + (xs[1] - xs[0]) / 2, xs[1] + (xs[2] - xs[1]) / 2)  # noqa: E731
    (pl, ph), (ll, lh) = q(sorted(plain)), q(sorted(lookup))
    assert (s.low, s.high) == pytest.approx((pl / lh, ph / ll))
    assert c.speedup_verdict.word == word
    assert c.speedup == pytest.approx(statistics.median(plain) / statistics.median(lookup))
    # without the runs' TPOTs (an older comparison) the speed-up stands alone
    old = LookupComparison("p", K, c.plain, c.lookup, 1)
    assert old.speedup_spread == Spread.exact(old.speedup)


def test_figure_one_trace_per_comparison(lm):
    a = compare_prompt_lookup(
        lm, "abcabcabcabcabcabc", chat=False, max_new_tokens=16, repeats=1, threads=1
    )
    b = LookupComparison(
        "a reply with nothing to copy", K, _run(0.1, (1, 1, 1)), _run(0.12, (1, 2, 1)), 1
    )
    fig = accepted_histogram_figure({"copies": a, "fresh": b})
    assert [t.type for t in fig.data] == ["bar", "bar"]
    assert fig.data[0].name.startswith("copies") and fig.data[1].name.startswith("fresh")
    assert list(fig.data[0].x) == list(range(1, K + 2))
    assert sum(fig.data[0].y) == a.lookup.forward_passes - 1
    assert list(fig.data[1].y[:3]) == [2, 1, 0]
    assert "tokens made" in fig.layout.title.text and "decode passes" in fig.layout.yaxis.title.text
    assert "tokens made in one decode pass" in fig.layout.xaxis.title.text
    # the same input draws the same figure (no random ids)
    assert accepted_histogram_figure({"copies": a, "fresh": b}).to_json() == fig.to_json()
    # a plain list is named by its prompts' first words
    assert accepted_histogram_data([b])[0]["name"] == "a reply with nothing to …"
    with pytest.raises(ValueError, match="no comparison to draw"):
        accepted_histogram_figure([])
    with pytest.raises(ValueError, match="compare_prompt_lookup"):
        accepted_histogram_figure([a.lookup])


def _lookup(k: int, counts, plain=(0.30, 0.32), lookup=(0.20, 0.22), prompt="p"):
    """A comparison at draft length k whose lookup run made `counts` tokens per decode pass."""
    return LookupComparison(
        prompt,
        k,
        _run(statistics.median(plain)),
        _run(statistics.median(lookup), counts),
        len(plain),
        list(plain),
        list(lookup),
    )


def test_draft_length_figure_draws_each_k_under_its_ceiling():
    """Lesson 13's slider: tokens per pass and the speed-up over k, sorted, each k's ceiling
    k + 1, the chosen k marked and named in the title; bad input names the fix."""
    runs = {
        4: _lookup(4, (5, 5, 1), lookup=(0.15, 0.17)),
        1: _lookup(1, (2, 2, 1, 2)),
        2: _lookup(2, (3, 1, 3), plain=(0.20, 0.22), lookup=(0.30, 0.32)),
    }
    d = draft_length_data(runs)
    assert d["k"] == [1, 2, 4] and d["ceiling"] == [2, 3, 5]
    assert d["tokens_per_pass"] == pytest.approx([7 / 4, 7 / 3, 11 / 3])  # mean of the counts
    assert d["speedup"] == pytest.approx([0.31 / 0.21, 0.21 / 0.31, 0.31 / 0.16])
    assert all(
        lo <= m <= hi for lo, m, hi in zip(d["speedup_low"], d["speedup"], d["speedup_high"])
    )
    assert d["verdict"] == [
        "prompt lookup is faster",
        "plain decode is faster",
        "prompt lookup is faster",
    ]
    fig = draft_length_figure(runs, chosen=2)
    measured = [t for t in fig.data if t.name == "prompt lookup, measured"][0]
    assert list(measured.x) == [1, 2, 4] and list(measured.y) == pytest.approx(d["tokens_per_pass"])
    chosen = [t for t in fig.data if t.name == "your choice"]
    assert [list(t.y) for t in chosen] == [pytest.approx([7 / 3]), pytest.approx([0.21 / 0.31])]
    assert fig.layout.title.text.startswith("k = 2: 2.33 tokens per pass, ×0.68")
    assert draft_length_figure(runs, chosen=2).to_json() == fig.to_json()
    assert "k = " not in draft_length_figure(runs).layout.title.text
    with pytest.raises(ValueError, match="not one of the measured draft lengths"):
        draft_length_figure(runs, chosen=3)
    with pytest.raises(ValueError, match="key each comparison by its own num_lookup_tokens"):
        draft_length_data({3: runs[4]})
    with pytest.raises(ValueError, match="one prompt's draft lengths at a time"):
        draft_length_data({1: runs[1], 5: _lookup(5, (1, 1), prompt="other")})
    with pytest.raises(ValueError, match="draft length k → viz.perf.compare_prompt_lookup"):
        draft_length_data({})
    with pytest.raises(ValueError, match="expected a viz.perf.LookupComparison for k=1"):
        draft_length_data({1: runs[1].lookup})


def test_bad_input_names_the_fix(lm):
    with pytest.raises(ValueError, match=r"max_new_tokens must be a whole number >= 2.*ask for"):
        compare_prompt_lookup(lm, "abc", chat=False, max_new_tokens=1)
    with pytest.raises(ValueError, match=r"num_lookup_tokens must be a whole number >= 1.*10"):
        compare_prompt_lookup(lm, "abc", chat=False, num_lookup_tokens=0)
    with pytest.raises(ValueError, match=r"repeats must be a whole number >= 1.*3 or more"):
        compare_prompt_lookup(lm, "abc", chat=False, repeats=0)


def test_lesson_prompts_each_say_why():
    assert list(LOOKUP_PROMPTS) == list(LOOKUP_WHY) and len(LOOKUP_PROMPTS) == 2
    for name, prompt in LOOKUP_PROMPTS.items():
        assert prompt.strip() and LOOKUP_WHY[name].strip() and "\n" not in LOOKUP_WHY[name]
