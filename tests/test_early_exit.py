"""Early-exit self-speculative decoding (issue 32, lesson 14): drafts from the model's first L
layers, verified by one full pass, give exactly plain greedy decoding's tokens; the logit lens
of the plain reply predicts every round; the draft is the lens at L; the caches stay
consistent; the comparison, its view beside prompt lookup, and bad input."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import viz
from viz import lens, perf, views
from viz.compat import cache_length, last_logits, new_cache
from viz.perf import early_exit as ee
from test_lens import spread_model

PROMPT = "Hi there, the cache"


@pytest.fixture(scope="module")
def tiny():
    return spread_model()


@pytest.fixture(scope="module")
def looked(tiny):
    return viz.record(tiny, PROMPT, max_new_tokens=20, stop_at_eos=False, lens=True)


@pytest.mark.parametrize("exit_layer", [1, 2, 3])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_greedy_tokens_identical_and_the_lens_predicts_every_round(tiny, looked, exit_layer, k):
    run = ee._generate(tiny, looked.prompt_ids, exit_layer, k, 20, stop_at_eos=False)
    assert run.token_ids == looked.generated_ids  # plain greedy decoding's, token for token
    predicted = perf.lens_drafts(looked, exit_layer, k)
    assert run.tokens_per_pass_counts == predicted.made
    assert [p.drafted for p in run.passes] == predicted.drafted
    assert run.acceptance_rate == predicted.acceptance_rate
    assert sum(run.tokens_per_pass_counts) == 19 and run.full_passes == 1 + len(run.passes)
    assert all(1 <= p.made <= p.drafted + 1 for p in run.passes)


def test_plain_loop_is_viz_record(tiny, looked):
    plain = ee.plain_generate(tiny, PROMPT, max_new_tokens=20, chat=False, stop_at_eos=False)
    assert plain.token_ids == looked.generated_ids and plain.histogram() == {1: 19}
    assert plain.acceptance_rate is None and plain.tokens_per_pass == 1.0


def test_a_draft_pass_is_the_lens_at_its_exit_layer(tiny, looked):
    """The draft stopped after L layers scores the next token as the lens's row L does."""
    forward = last_logits(tiny.model)
    ids = torch.tensor([looked.prompt_ids])
    for layer in (1, 2, 3):
        with torch.inference_mode(), ee.exit_after(tiny.model, layer):
            probs = torch.softmax(forward(ids, new_cache(tiny.model))[0].float(), dim=-1)
        top = torch.topk(probs, 5)
        assert top.indices.tolist() == looked.lens.ids()[0, layer].tolist()
        torch.testing.assert_close(
            top.values, torch.tensor(looked.lens.probs()[0, layer]), rtol=1e-4, atol=1e-6
        )
    assert tiny.model.config.num_hidden_layers == 4  # restored


def test_exit_after_restores_the_depth_after_an_error(tiny):
    with pytest.raises(RuntimeError, match="inside"):
        with ee.exit_after(tiny.model, 1):
            assert tiny.model.model.config.num_hidden_layers == 1
            raise RuntimeError("inside")
    assert tiny.model.model.config.num_hidden_layers == 4


def test_caches_hold_exactly_the_kept_tokens(tiny, looked, monkeypatch):
    """After every round the full cache holds every token but the newest, and the draft's holds
    a prefix of them: no rejected draft stays in either. Checked by wrapping the trimming."""
    seen = []
    real_trim = ee.trim_cache

    def trim(cache, tokens):
        real_trim(cache, tokens)
        seen.append((cache, cache_length(cache)))

    monkeypatch.setattr(ee, "trim_cache", trim)
    run = ee._generate(tiny, looked.prompt_ids, 2, 3, 20, stop_at_eos=False)
    n = len(looked.prompt_ids)
    full_lengths = [length for i, (_, length) in enumerate(seen) if i % 2 == 0]
    draft_lengths = [length for i, (_, length) in enumerate(seen) if i % 2 == 1]
    made = 1
    for p, full, draft in zip(run.passes, full_lengths, draft_lengths):
        made += p.made
        assert full == n + made - 1  # every kept token but the newest (read next round)
        assert draft <= full
    # and the values: the full cache equals a plain prefill of the same tokens
    with torch.inference_mode():
        plain = new_cache(tiny.model)
        last_logits(tiny.model)(torch.tensor([looked.prompt_ids + run.token_ids[:-1]]), plain)
        full_cache = seen[-2][0]
        for (k1, v1), (k2, v2) in zip(viz.cache_layers(full_cache), viz.cache_layers(plain)):
            torch.testing.assert_close(k1, k2, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(v1, v2, rtol=1e-4, atol=1e-5)


def test_the_reply_stops_at_end_of_sequence_inside_a_round(tiny, looked):
    """With a token of the reply declared end-of-sequence, a round that accepts it stops there,
    as plain decoding does."""
    stop = looked.generated_ids[6]
    lm = dataclasses.replace(tiny, eos_token_ids=[stop])
    plain = ee._generate(lm, looked.prompt_ids, 0, 0, 20)
    for k in (1, 3, 6):
        run = ee._generate(lm, looked.prompt_ids, 3, k, 20)
        assert run.token_ids == plain.token_ids and run.token_ids[-1] == stop


def test_compare_early_exit_on_the_tiny_model(tiny):
    c = perf.compare_early_exit(
        tiny, PROMPT, exit_layer=3, draft_tokens=2, max_new_tokens=16, chat=False, repeats=3
    )
    assert c.identical and c.repeats == 3 and len(c.plain_tpots_s) == len(c.early_tpots_s) == 3
    assert c.speedup_spread.runs == 3 and c.speedup_verdict.word in (
        *perf.EARLY_EXIT_WORDS,
        viz.TOO_CLOSE,
    )
    assert sum(n for n in c.accepted_histogram().values()) == len(c.early.passes)
    assert c.draft_cost > 0 and c.break_even > 1
    text = str(c)
    for words in (
        "plain",
        "early exit (L=3, k=2)",
        "drafts accepted per full pass",
        "breaks even",
        "same greedy tokens: True",
    ):
        assert words in text
    spread = c.early.tokens_per_pass_spread
    assert spread.low <= spread.median <= spread.high <= 3


def test_shown_beside_prompt_lookup_in_one_view(tiny):
    early = perf.compare_early_exit(
        tiny, PROMPT, exit_layer=2, draft_tokens=3, max_new_tokens=12, chat=False, repeats=1
    )
    lookup = perf.compare_prompt_lookup(
        tiny, PROMPT, max_new_tokens=12, chat=False, repeats=1, num_lookup_tokens=4
    )
    data = views.accepted_histogram_data({"early exit": early, "prompt lookup": lookup})
    assert [d["kind"] for d in data] == ["early exit", "prompt lookup"]
    assert data[0]["k"] == 3 and sum(data[0]["passes"]) == data[0]["decode_passes"] == len(
        early.early.passes
    )
    fig = views.accepted_histogram_figure({"early exit": early, "prompt lookup": lookup})
    assert len(fig.data) == 2 and "Prompt lookup and early exit" in fig.layout.title.text
    assert views.accepted_histogram_figure([lookup]).layout.title.text.startswith(
        "Prompt lookup:"
    )  # lesson 13's figure as it was


def test_early_exit_view_reads_the_lens(tiny, looked):
    measured = perf.compare_early_exit(
        tiny, PROMPT, exit_layer=2, draft_tokens=2, max_new_tokens=20, chat=False, repeats=1
    )
    d = views.early_exit_data(looked, ks=(1, 2), measured=[measured])
    assert d["layers"] == [1, 2, 3] and len(d["tokens_per_pass"][2]) == 3
    assert d["agreement"] == [round(v, 4) for v in lens.agreement_by_layer(looked)[1:4]]
    assert d["tokens_per_pass"][2][1] == round(measured.tokens_per_pass, 4)
    fig = views.early_exit_figure(looked, ks=(1, 2), measured=[measured])
    assert len(fig.data) == 1 + 2 + 1
    with pytest.raises(ValueError, match="compare_early_exit"):
        views.early_exit_data(looked, measured=["not a run"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"exit_layer": 0}, r"exit_layer must be a layer number from 1 to 3 .*not 0"),
        ({"exit_layer": 4}, r"from 1 to 3 .*4 would be the full model"),
        ({"exit_layer": "2"}, "exit_layer must be a layer number"),
        ({"exit_layer": True}, "exit_layer must be a layer number"),
        ({"exit_layer": 2, "draft_tokens": 0}, r"draft_tokens must be a whole number >= 1 .*try 4"),
        ({"exit_layer": 2, "draft_tokens": 1.5}, "draft_tokens must be a whole number >= 1"),
        ({"exit_layer": 2, "max_new_tokens": 1}, "max_new_tokens must be a whole number >= 2"),
        ({"exit_layer": 2, "repeats": 0}, "repeats must be a whole number >= 1"),
        ({"exit_layer": 2, "threads": 0}, "threads must be a whole number >= 1"),
    ],
)
def test_bad_input_names_the_fix(tiny, kwargs, message):
    with pytest.raises(ValueError, match=message):
        perf.compare_early_exit(tiny, PROMPT, chat=False, **kwargs)


def test_bad_input_elsewhere(tiny, looked):
    with pytest.raises(ValueError, match="exit_layer must be a layer number from 1 to 3"):
        perf.early_exit_generate(tiny, PROMPT, exit_layer=5, chat=False)
    with pytest.raises(ValueError, match="the prompt is empty"):
        perf.early_exit_generate(tiny, "  ", exit_layer=2, chat=False)
    with pytest.raises(ValueError, match="draft_tokens must be"):
        perf.lens_drafts(looked, 2, 0)
    sampled = viz.record(tiny, PROMPT, max_new_tokens=4, temperature=1.0, lens=True)
    with pytest.raises(ValueError, match="predicts greedy drafts.*temperature=0"):
        perf.lens_drafts(sampled, 2, 2)
    with pytest.raises(ValueError, match="no logit lens"):
        perf.lens_drafts(viz.record(tiny, PROMPT, max_new_tokens=3), 2, 2)


def test_real_model_early_exit_is_plain_decoding_and_the_lens_predicts_it(smollm):
    # 12 tokens: every round costs the real model two to four passes, and 12 already give
    # rounds of both kinds (checked below)
    prompt = "Explain why the sky is blue in two sentences."
    trace = viz.record(smollm, prompt, chat=True, max_new_tokens=12, lens=True)
    for exit_layer, k in ((29, 1), (24, 3)):
        run = perf.early_exit_generate(
            smollm, prompt, exit_layer=exit_layer, draft_tokens=k, max_new_tokens=12
        )
        assert run.token_ids == trace.generated_ids and len(run.token_ids) == 12
        assert run.tokens_per_pass_counts == perf.lens_drafts(trace, exit_layer, k).made
        # the reply is long enough for both kinds of round: a draft accepted, one rejected
        assert any(p.made >= 2 for p in run.passes), run.passes
        assert any(p.drafted and p.made == 1 for p in run.passes), run.passes
    assert smollm.model.config.num_hidden_layers == 30


def test_draft_bytes_share_by_hand(tiny):
    """The tiny model (h = 64, 4 query heads and 2 KV heads of 16, MLP 128, V = 259): a layer
    holds 64·64 + 2·64·32 + 64·64 + 3·64·128 = 36,864 matrix weights and two norms of 64; the
    final norm and the head hold 64 + 259·64 = 16,640."""
    layer, rest = 36_864 + 128, 64 + 259 * 64
    for exit_layer in (1, 2, 3):
        assert perf.draft_bytes_share(tiny.spec, exit_layer) == pytest.approx(
            (exit_layer * layer + rest) / (4 * layer + rest)
        )
    with pytest.raises(ValueError, match="from 1 to 3"):
        perf.draft_bytes_share(tiny.spec, 4)


def test_speedup_if_bytes_by_hand():
    """Three rounds that drafted 2, 2 and 1 and made 3, 1 and 2 tokens: 6 tokens for 5 drafts
    of 0.4 of a pass plus 3 checking passes = 5 passes: ×1.2; at 0.9 a draft, 6 ÷ 7.5 = ×0.8."""
    run = ee.LensDrafts(
        exit_layer=2, draft_tokens=2, drafted=[2, 2, 1], made=[3, 1, 2], agreement=0.5
    )
    assert run.speedup_if_bytes(0.4) == pytest.approx(6 / 5)
    assert run.speedup_if_bytes(0.9) == pytest.approx(6 / 7.5)
    assert ee.LensDrafts(1, 1, [], [], 0.0).speedup_if_bytes(0.5) is None
    for bad in (0, 1.5, -0.2):
        with pytest.raises(ValueError, match="above 0 and at most 1.*draft_bytes_share"):
            run.speedup_if_bytes(bad)


def test_best_lens_draft_is_the_grids_fastest(tiny, looked):
    best = perf.best_lens_draft(looked, tiny.spec, ks=(1, 2, 4))
    by_hand = {
        (g.exit_layer, g.draft_tokens): g.made
        and sum(g.made)
        / (sum(g.drafted) * perf.draft_bytes_share(tiny.spec, g.exit_layer) + len(g.made))
        for g in perf.lens_draft_grid(looked, ks=(1, 2, 4))
    }
    assert len(by_hand) == 3 * 3
    top = max(by_hand.values())
    assert best.speedup_if_bytes(
        perf.draft_bytes_share(tiny.spec, best.exit_layer)
    ) == pytest.approx(top)
    ties = sorted(key for key, v in by_hand.items() if v == pytest.approx(top))
    assert (best.exit_layer, best.draft_tokens) == ties[0]  # smallest L, then k
    only = perf.best_lens_draft(looked, tiny.spec, layers=[3], ks=[1])
    assert (only.exit_layer, only.draft_tokens) == (3, 1)
    with pytest.raises(ValueError, match="at least one exit layer and one k"):
        perf.best_lens_draft(looked, tiny.spec, layers=[])
