"""Long contexts and prefix caching (lesson 11): the attention clock, the random cache, the two
long-context sweeps, the crossover counts, what fits, the in-process prefix cache and the
engine's prefix sharing — on tiny random models, each figure checked against arithmetic
done here; and on the real model what only it shows (its chat template, its 8k context)."""

import json
import math
import statistics

import pytest
import torch

from viz import compat, perf
from viz.perf.table import Sweep
from viz.serve import measure_prefix_sharing
from viz.serve.prefix import PrefixSharing, RequestPrefix, request_prefixes
from viz.serve.scheduler import BatchEntry, Schedule, SchedulerStep
from viz import views


def ids_of(n: int, start: int = 10) -> list[int]:
    return [start + (i * 7) % 200 for i in range(n)]


# ---- the attention clock ------------------------------------------------------------------
def test_the_attention_clock_counts_every_layer_and_gives_the_model_back(tiny_gqa):
    model = tiny_gqa.model
    before = model.config._attn_implementation
    forward = compat.last_logits(model)
    x = torch.tensor([ids_of(20)])
    with torch.inference_mode():
        plain = forward(x, compat.new_cache(model))
        with compat.timed_attention(model) as clock:
            timed = forward(x, compat.new_cache(model))
            assert clock.calls == model.config.num_hidden_layers
            assert clock.seconds > 0
            clock.reset()
            assert (clock.calls, clock.seconds) == (0, 0.0)
    assert model.config._attn_implementation == before
    assert torch.equal(plain, timed)  # the same function, only timed


def test_the_attention_clock_keeps_the_masks_of_the_implementation_it_wraps(tiny_gqa):
    # a prompt in two passes (10 tokens, then 5 over the cache) gives the same logits timed
    # or not: the second pass needs the causal mask over the cached keys
    model = tiny_gqa.model
    forward = compat.last_logits(model)
    x = torch.tensor([ids_of(15)])

    def two_passes():
        cache = compat.new_cache(model)
        forward(x[:, :10], cache)
        return forward(x[:, 10:], cache)

    with torch.inference_mode():
        plain = two_passes()
        with compat.timed_attention(model) as clock:
            timed = two_passes()
        eager_before = model.config._attn_implementation
        model.set_attn_implementation("eager")
        try:
            with compat.timed_attention(model):
                eager_timed = two_passes()
        finally:
            model.set_attn_implementation(eager_before)
    assert clock.calls == 2 * model.config.num_hidden_layers
    assert torch.allclose(plain, timed, atol=1e-5)
    assert torch.allclose(plain, eager_timed, atol=1e-4)


def test_the_attention_clock_restores_the_model_after_an_error(tiny_gqa):
    model = tiny_gqa.model
    before = model.config._attn_implementation
    with pytest.raises(RuntimeError, match="inside"):
        with compat.timed_attention(model):
            raise RuntimeError("an error inside")
    assert model.config._attn_implementation == before


# ---- a cache of any length ----------------------------------------------------------------
def test_a_synthetic_cache_has_the_shapes_a_real_prefill_leaves(tiny):
    model = tiny.model
    real = compat.new_cache(model)
    with torch.inference_mode():
        compat.last_logits(model)(torch.tensor([ids_of(33)]), real)
    fake = compat.synthetic_cache(model, 33)
    for (k, v), (fk, fv) in zip(compat.cache_layers(real), compat.cache_layers(fake)):
        assert fk.shape == k.shape and fv.shape == v.shape
        assert fk.dtype == k.dtype
    assert compat.cache_length(fake) == 33
    assert sum(compat.live_bytes_per_layer(fake, tiny.spec.n_layers)) == tiny.spec.kv_bytes(33)
    compat.trim_cache(fake, 20)
    assert compat.cache_length(fake) == 20
    with pytest.raises(ValueError, match="cannot trim a cache of 20 positions to 21"):
        compat.trim_cache(fake, 21)
    with pytest.raises(ValueError, match="tokens must be >= 0"):
        compat.synthetic_cache(model, -1)


def test_release_memory_hands_freed_blocks_back():
    import platform

    import psutil

    from viz.runtime import release_memory

    # 30 blocks of 8 MB, every other one kept: the freed ones are scattered between them
    blocks = [torch.ones(2 * 2**20) for _ in range(30)]
    kept = blocks[::2]
    del blocks
    before = psutil.Process().memory_info().rss
    assert release_memory() == (platform.system() == "Linux")
    after = psutil.Process().memory_info().rss
    assert after <= before + 2**20  # never more resident than before (1 MB of slack)
    assert len(kept) == 15


def test_release_memory_collects_only_when_much_is_at_stake(monkeypatch):
    """A collection costs ~0.1 s or more in a large process: a few megabytes are not worth one
    (the tiny model's sweeps called it dozens of times); a cache of 16 MiB and more is."""
    import gc

    from viz.runtime import COLLECT_MIN_BYTES, release_memory

    collected = []
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(a) or 0)
    release_memory(COLLECT_MIN_BYTES - 1)
    release_memory(0)
    assert collected == []
    release_memory(COLLECT_MIN_BYTES)
    release_memory()  # the caller does not know: always
    assert len(collected) == 2
    assert COLLECT_MIN_BYTES == 16 * 2**20
    for bad in (-1, 2.5, "16 MiB"):
        with pytest.raises(ValueError, match="at_stake_bytes must be a number of bytes"):
            release_memory(bad)
    assert len(collected) == 2  # a refused call collects nothing


# ---- prefill against prompt length --------------------------------------------------------
def test_long_prefill_sweep_splits_each_pass_and_counts_its_shares(tiny):
    sweep = perf.long_prefill_sweep(tiny, [32, 64, 128], repeats=2, progress=False)
    spec = tiny.spec
    assert sweep.column("prompt_tokens") == [32, 64, 128]
    for n, total, att, rest, share in zip(
        *(
            sweep.column(c)
            for c in (
                "prompt_tokens",
                "prefill_s",
                "attention_s",
                "rest_s",
                "counted_attention_share",
            )
        )
    ):
        assert 0 < att < total
        assert rest == pytest.approx(total - att, rel=0.5)  # medians of differences
        # attention: 4·L·n_h·d·(1 + 2 + ... + n); matmuls: 2·n·L·P_layer + 2·h·V, with
        # P_layer = h·q + 2·h·kv + q·h + 3·h·i written out for this shape
        h, q, kv, i = (
            spec.hidden_size,
            spec.n_heads * spec.head_dim,
            spec.n_kv_heads * spec.head_dim,
            spec.intermediate_size,
        )
        attention = 4 * spec.n_layers * q * n * (n + 1) // 2
        matmul = (
            2 * n * spec.n_layers * (2 * h * q + 2 * h * kv + 3 * h * i) + 2 * h * spec.vocab_size
        )
        assert share == pytest.approx(attention / (attention + matmul))
    assert sweep.spread("prefill_s")[0].runs == 2
    fig = views.sweep_figure(sweep)
    assert len(fig.data) == 6


def test_long_prefill_sweep_refuses_bad_lengths(tiny_gqa):
    with pytest.raises(ValueError, match="increasing with no repeats"):
        perf.long_prefill_sweep(tiny_gqa, [64, 32], progress=False)
    with pytest.raises(ValueError, match="needs 600 positions but tiny-gqa has 512"):
        perf.long_prefill_sweep(tiny_gqa, [600], progress=False)


def test_the_counted_crossover_is_where_attention_reaches_the_rest():
    for name in ("smollm2-135m", "llama-3.1-8b"):
        spec = perf.config_spec(name, "float32")
        n = perf.attention_crossover(spec)
        at, before = perf.prefill_cost(spec, n), perf.prefill_cost(spec, n - 1)
        assert at.attention_flops >= at.matmul_flops
        assert before.attention_flops < before.matmul_flops
        # near P_layer / (n_h·d): 3,538,944 / 576 = 6,144 for SmolLM2-135M
        q = spec.n_heads * spec.head_dim
        assert n == pytest.approx(perf.counts.layer_matmul_params(spec) / q, rel=0.02)
    assert perf.attention_crossover(perf.config_spec("smollm2-135m")) in range(6100, 6200)


def _split_sweep(tiny, att, rest) -> Sweep:
    n = [1000, 2000, 3000]
    return Sweep(
        name="long_prefill",
        x="prompt_tokens",
        columns={"prompt_tokens": n, "attention_s": att, "rest_s": rest},
        model=tiny.spec,
        environment=tiny.environment(),
    )


def test_the_measured_crossover_solves_the_fitted_curves(tiny_gqa):
    # attention = 1e-9·n², rest = 1e-4·n + 0.05: they meet where 1e-9·n² = 1e-4·n + 0.05
    n = [1000, 2000, 3000]
    sweep = _split_sweep(tiny_gqa, [1e-9 * x * x for x in n], [1e-4 * x + 0.05 for x in n])
    cross = perf.measured_crossover(sweep)
    expected = (1e-4 + math.sqrt(1e-8 + 4 * 1e-9 * 0.05)) / (2 * 1e-9)
    assert cross.tokens == pytest.approx(expected, rel=1e-6)
    assert cross.extrapolated and "extrapolated past" in cross.text()
    with pytest.raises(ValueError, match="do not grow with the prompt"):
        perf.measured_crossover(_split_sweep(tiny_gqa, [0, 0, 0], [1, 2, 3]))


# ---- decode against context length --------------------------------------------------------
def test_long_decode_sweep_reads_weights_and_the_cache(tiny):
    sweep = perf.long_decode_sweep(tiny, [0, 100, 400], repeats=3, progress=False)
    spec = tiny.spec
    assert sweep.column("kv_bytes") == [spec.kv_bytes(c + 1) for c in (0, 100, 400)]
    weights = sweep.column("weight_bytes")[0]
    assert sweep.column("step_bytes") == [weights + spec.kv_bytes(c + 1) for c in (0, 100, 400)]
    assert all(s > 0 for s in sweep.column("decode_step_s"))
    assert all(
        0 < a < s for a, s in zip(sweep.column("attention_s"), sweep.column("decode_step_s"))
    )
    assert sweep.column("cache_copy_s")[0] == 0 and sweep.column("cache_copy_s")[2] > 0
    assert all(e > 0 for e in sweep.column("empty_step_s"))
    assert sweep.spread("growth")[0].runs == 3  # one ratio per pair of steps
    parts = views.long_decode_parts(sweep, 400)
    assert parts["step"] == sweep.column("decode_step_s")[2]
    assert sum(v for k, v in parts.items() if k != "step") >= parts["step"] - 1e-12
    with pytest.raises(ValueError, match="no row for 5 cached tokens"):
        views.long_decode_parts(sweep, 5)
    widget = views.long_decode_widget(sweep)
    for c in (0, 100, 400):  # every slider position draws
        widget.controls["cached tokens"].value = c
        assert widget.error is None and f"{c:,} cached tokens" in widget.figure.layout.title.text
    assert "synthetic" in sweep.settings["cache"]
    again = Sweep.from_dict(json.loads(sweep.to_json()))
    assert again.column("step_bytes") == sweep.column("step_bytes")
    assert again.spread("decode_step_s") == sweep.spread("decode_step_s")


def test_the_long_decode_view_draws_the_floor_and_the_bytes_prediction(tiny_gqa):
    sweep = perf.long_decode_sweep(tiny_gqa, [0, 400], repeats=2, progress=False)
    peaks = perf.Peaks(
        device="cpu",
        device_name="test",
        dtype="float32",
        threads=2,
        flops_per_s=1e11,
        bytes_per_s=20e9,
        matmul_n=512,
        buffer_bytes=2**28,
        repeats=7,
        timer="perf_counter",
    )
    d = views.long_decode_data(sweep, peaks)
    moved = sweep.column("step_bytes")
    assert d["floor_ms"] == pytest.approx([b / 20e9 * 1e3 for b in moved])
    base = statistics.median(sweep.column("empty_step_s"))  # the empty-cache steps beside each
    assert d["bytes_prediction_ms"][1] == pytest.approx(base * moved[1] / moved[0] * 1e3)
    assert len(views.long_decode_figure(sweep, peaks).data) == 3
    with pytest.raises(ValueError, match="long_decode sweep"):
        views.long_decode_figure(
            perf.long_prefill_sweep(tiny_gqa, [16, 32], repeats=1, progress=False)
        )


def test_a_long_decode_sweep_grown_by_the_slider_labels_only_its_ends(tiny_gqa):
    # Lesson 11's slider measures one more context at a time and merges it into the sweep.
    sweep = perf.long_decode_sweep(tiny_gqa, [0, 400], repeats=2, progress=False)
    more = sweep.merged(
        perf.long_decode_sweep(tiny_gqa, [100, 200, 300, 350], repeats=1, progress=False)
    )
    assert more.column("context_tokens") == [0, 100, 200, 300, 350, 400]
    step = views.long_decode_figure(more).data[-1]  # the measured steps
    assert list(step.text) == ["0 cached", "", "", "", "", "400 cached"]
    assert list(step.customdata) == [f"{c:,} cached" for c in (0, 100, 200, 300, 350, 400)]
    few = views.long_decode_figure(sweep).data[-1]
    assert list(few.text) == ["0 cached", "400 cached"] == list(few.customdata)


def test_the_synthetic_check_times_both_caches(tiny_gqa):
    check = perf.synthetic_check(tiny_gqa, 64, repeats=3)
    assert check.real.runs == 3 and check.synthetic.runs == 3
    assert "64 cached tokens" in check.text()
    with pytest.raises(ValueError, match="context_tokens must be a whole number >= 1"):
        perf.synthetic_check(tiny_gqa, 0)


# ---- what fits ----------------------------------------------------------------------------
def test_kv_fit_counts_conversations_beside_the_weights():
    spec = perf.config_spec("llama-3.1-8b", "bfloat16")
    fit = perf.kv_fit(spec, 8192, 80 * 10**9)
    # 32 layers × 8 KV heads × 128 × 2 (K and V) × 2 bytes = 131,072 bytes per token;
    # without GQA 32 heads: 4× that
    assert fit.kv_bytes_per_token == 131_072
    assert fit.kv_bytes_per_token_no_gqa == 4 * 131_072
    free = 80 * 10**9 - fit.weight_bytes
    assert fit.conversations == free // (131_072 * 8192)
    assert fit.conversations_no_gqa == free // (4 * 131_072 * 8192)
    assert 7.9e9 * 2 < fit.weight_bytes < 8.1e9 * 2  # ~8.0 B parameters in bfloat16
    small = perf.config_spec("smollm2-135m", "float32")
    assert perf.kv_fit(small, 100, 10**9).kv_bytes_per_token == 46_080
    assert perf.kv_fit(small, 100, 10**8).conversations == 0  # not even the weights fit
    with pytest.raises(ValueError, match="context_tokens must be a whole number"):
        perf.kv_fit(small, 0, 10**9)


# ---- prefix caching in this process -------------------------------------------------------
def test_a_cached_prefix_gives_the_first_token_of_a_full_prefill(tiny):
    sweep = perf.prefix_cache_sweep(tiny, 96, [0.0, 0.5, 0.9], repeats=2, progress=False)
    assert sweep.column("shared_tokens") == [0, 48, 86]
    assert sweep.column("new_tokens") == [96, 48, 10]
    assert sweep.column("same_first_token") == [1, 1, 1]
    assert max(sweep.column("max_logit_gap")) < 1e-4
    # and the same against transformers itself: a full forward's last logits
    x = torch.tensor([perf.context.prompt_ids(tiny, 96)[0].tolist()])
    with torch.inference_mode():
        reference = tiny.model(input_ids=x).logits[0, -1]
        cache = compat.new_cache(tiny.model)
        forward = compat.last_logits(tiny.model)
        forward(x[:, :86], cache)
        reused = forward(x[:, 86:], cache)[0]
    assert torch.allclose(reference, reused, atol=1e-4)


def test_the_whole_prompt_is_prefilled_once_a_round(tiny_gqa, monkeypatch):
    """The uncached pass is the same whatever share is cached: one a round (and the warm-up),
    not one per share; each share's cached pass runs once a round."""
    from viz.perf import prefix

    lengths = []
    real = prefix.compat.last_logits

    def counting(model):
        forward = real(model)

        def counted(ids, cache):
            lengths.append(ids.shape[1])
            return forward(ids, cache)

        return counted

    monkeypatch.setattr(prefix.compat, "last_logits", counting)
    sweep = perf.prefix_cache_sweep(tiny_gqa, 64, [0.0, 0.5, 0.75], repeats=3, progress=False)
    # prefixes 32 and 48 filled once; the whole 64 once a round plus a warm-up; and each
    # share's new tokens (64, 32, 16) once a round
    assert sorted(lengths) == sorted([32, 48] + [64] * 4 + [64, 32, 16] * 3)
    assert len(set(sweep.column("ttft_full_s"))) == 1


def test_prefix_cache_sweep_refuses_a_whole_prompt_cached(tiny_gqa):
    with pytest.raises(ValueError, match="at least one token of each prompt must be new"):
        perf.prefix_cache_sweep(tiny_gqa, 64, [0.5, 1.0], progress=False)
    with pytest.raises(ValueError, match="prompt_tokens must be a whole number >= 2"):
        perf.prefix_cache_sweep(tiny_gqa, 1, progress=False)


def test_common_prefix():
    assert perf.common_prefix([1, 2, 3, 4], [1, 2, 5]) == 2
    assert perf.common_prefix([], [1]) == 0
    assert perf.common_prefix([7, 8], [7, 8]) == 2


def test_chat_turns_needs_a_chat_template(make_tiny):
    lm = make_tiny(gqa=True, seed=5)
    template, lm.tokenizer.chat_template = lm.tokenizer.chat_template, None
    try:
        with pytest.raises(ValueError, match="has no chat template"):
            perf.chat_turns(lm, ["hello"], progress=False)
    finally:
        lm.tokenizer.chat_template = template
    with pytest.raises(ValueError, match="non-empty list of non-empty strings"):
        perf.chat_turns(lm, [], progress=False)


def test_chat_turns_keep_what_was_sent_before(tiny_gqa):
    sweep = perf.chat_turns(
        tiny_gqa,
        ["hello there", "and again", "once more"],
        reply_tokens=5,
        repeats=2,
        progress=False,
    )
    prompt, reused = sweep.column("prompt_tokens"), sweep.column("reused_tokens")
    assert reused[0] == 0 and all(0 < r < p for r, p in zip(reused[1:], prompt[1:]))
    assert sweep.column("new_tokens") == [p - r for p, r in zip(prompt, reused)]
    assert sweep.column("same_first_token") == [1, 1, 1]
    assert sweep.spread("ttft_full_s")[0].runs == 2


def test_chat_turns_reuse_the_history_on_the_real_model(smollm):
    sweep = perf.chat_turns(
        smollm,
        ["What is a KV cache?", "Why does it grow?", "Name one way to shrink it."],
        reply_tokens=6,
        repeats=1,
        progress=False,
    )
    prompt, reused = sweep.column("prompt_tokens"), sweep.column("reused_tokens")
    assert reused[0] == 0
    # each turn re-sends the last one's prompt and reply: all of them is kept, except
    # where the template closes the reply (its end-of-turn tokens are new)
    for t in (1, 2):
        assert prompt[t - 1] + 6 - 1 - 2 <= reused[t] < prompt[t]
        assert reused[t] >= prompt[t - 1]
    assert sweep.column("same_first_token") == [1, 1, 1]
    assert len(views.sweep_figure(sweep).data) == 4


def test_long_decode_reaches_the_real_models_whole_context(smollm):
    assert smollm.spec.context_length == 8192
    sweep = perf.long_decode_sweep(smollm, [0, 8191], repeats=1, progress=False)
    assert sweep.column("kv_bytes")[-1] == 8192 * 46_080  # the cache at the last position
    with pytest.raises(ValueError, match="needs 8193 positions"):
        perf.long_decode_sweep(smollm, [8192], repeats=1, progress=False)


# ---- the engine's prefix sharing ----------------------------------------------------------
def test_the_engine_reuses_full_pages_only_with_sharing_on(make_tiny):
    model = make_tiny(gqa=True, seed=3).model
    common = ids_of(40, 5)  # two full 16-token pages and 8 tokens of a third
    prompts = [common + ids_of(8, 100 + 20 * k) for k in range(3)]
    run = measure_prefix_sharing(
        model, prompts, max_new_tokens=3, page_size=16, num_blocks=32, max_batch_tokens=64
    )
    assert [r.reused_tokens for r in run.on] == [0, 32, 32]
    assert [r.reused_tokens for r in run.off] == [0, 0, 0]
    assert run.hit_rate(run.on) == pytest.approx(64 / 144)
    assert run.hit_rate(run.off) == 0
    assert run.same_tokens
    assert all(r.first_token_s > 0 for r in run.on + run.off)
    assert "hit rate 44% with sharing, 0% without" in run.text()
    again = PrefixSharing.from_dict(json.loads(run.to_json()))  # a saved document, checked
    assert again == run and again.transformers_version
    with pytest.raises(ValueError, match="two prompts or more"):
        measure_prefix_sharing(model, prompts[:1])


def test_request_prefixes_reads_a_hand_made_schedule():
    def entry(rid, phase, q, cached, new):
        return BatchEntry(
            request_id=rid,
            phase=phase,
            query_tokens=q,
            cached_tokens=cached,
            new_token=new,
            pages=[],
        )

    def step(i, start, end, batch):
        return SchedulerStep(
            index=i,
            start_s=start,
            forward_s=start,
            end_s=end,
            batch=batch,
            waiting=[],
            held=[],
            finished=[],
            free_pages=0,
            cached_pages=0,
            shared_pages=[],
        )

    schedule = Schedule(
        page_size=16,
        total_pages=8,
        first_page=0,
        bytes_per_page=1,
        max_batch_tokens=32,
        prompt_tokens={"a": 40, "b": 40},
        transformers_version="5.24",
        steps=[
            step(0, 0.0, 1.0, [entry("a", "prefill", 32, 0, False)]),
            step(1, 1.0, 1.5, [entry("a", "prefill", 8, 32, True)]),
            step(2, 2.0, 2.25, [entry("b", "prefill", 8, 32, True)]),
        ],
    )
    rows = request_prefixes(schedule)
    assert rows == [RequestPrefix("a", 40, 0, 1.5), RequestPrefix("b", 40, 32, 0.25)]
    run = PrefixSharing(page_size=16, on=rows, off=rows, same_tokens=True)
    assert run.hit_rate(rows) == pytest.approx(32 / 80)
    assert run.median_first_token_s(True) == 0.25
