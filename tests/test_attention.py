"""Attention over the KV cache (issue 14, item 5): `viz.record(..., attention=True)` stores, per
step and layer, where the newest query looked; the weights equal `output_attentions` of a plain
forward pass over the whole sequence, within the 8-bit storage error; recording them changes
no token and leaves the model as it was; the view draws exactly the stored weights.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import viz
from viz import views
from viz.compat import watch_attention

PROMPT = "Hi 🍕 東京, the cache"


@pytest.fixture(scope="module")
def looked(tiny_gqa):
    return viz.record(
        tiny_gqa, PROMPT, max_new_tokens=6, stop_at_eos=False, attention=True, attention_head=3
    )


def full_pass_attention(lm, ids: list[int]) -> torch.Tensor:
    """(layers, heads, positions): the last query's weights from a plain forward pass over
    `ids` with transformers' own output_attentions (eager attention, no cache)."""
    model = lm.model
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.inference_mode():
            out = model(torch.tensor([ids]), output_attentions=True, use_cache=False)
    finally:
        model.set_attn_implementation(before)
    return torch.stack([a[0, :, -1, :] for a in out.attentions]).float()


@pytest.mark.parametrize("use_cache", [True, False])
def test_recorded_weights_equal_output_attentions_of_a_full_pass(tiny, use_cache):
    trace = viz.record(
        tiny,
        PROMPT,
        max_new_tokens=5,
        stop_at_eos=False,
        attention=True,
        attention_head=2,
        use_cache=use_cache,
    )
    ids = trace.prompt_ids + trace.generated_ids
    assert trace.attention.lengths == [s.seq_len for s in trace.steps]
    for s in trace.steps:
        ref = full_pass_attention(tiny, ids[: s.seq_len])  # the sequence this step read
        got = trace.attention.step(s.index)  # (layers, 2, positions)
        for kind, want in ((0, ref.mean(dim=1)), (1, ref[:, 2])):
            want = want.numpy()
            # 8 bits per row: error at most half a step of the row's largest weight / 255.
            bound = want.max(axis=-1, keepdims=True) / 255 / 2 + 1e-5
            assert np.all(np.abs(got[:, kind] - want) <= bound), (s.index, kind)
        np.testing.assert_allclose(got[:, 0].sum(axis=-1), 1.0, atol=0.02)  # softmax rows


def hooks(model) -> dict:
    """Every forward hook on the model's modules (transformers installs some of its own)."""
    return {name: list(m._forward_hooks) for name, m in model.named_modules()}


def test_recording_attention_changes_no_token_and_restores_the_model(tiny_gqa):
    before = tiny_gqa.model.config._attn_implementation
    hooks_before = hooks(tiny_gqa.model)
    plain = viz.record(tiny_gqa, PROMPT, max_new_tokens=8, stop_at_eos=False)
    looked = viz.record(tiny_gqa, PROMPT, max_new_tokens=8, stop_at_eos=False, attention=True)
    assert looked.generated_ids == plain.generated_ids
    assert tiny_gqa.model.config._attn_implementation == before
    assert hooks(tiny_gqa.model) == hooks_before
    assert plain.attention is None and not plain.settings.attention
    assert looked.settings.attention


def test_an_error_inside_the_recording_removes_every_hook(tiny_gqa):
    before, hooks_before = tiny_gqa.model.config._attn_implementation, hooks(tiny_gqa.model)
    with pytest.raises(RuntimeError, match="boom"):
        with watch_attention(tiny_gqa.model) as rows:
            assert tiny_gqa.model.config._attn_implementation == "eager"
            assert hooks(tiny_gqa.model) != hooks_before and rows is not None
            raise RuntimeError("boom")
    assert tiny_gqa.model.config._attn_implementation == before
    assert hooks(tiny_gqa.model) == hooks_before


def test_attention_survives_a_save_and_load(looked, tmp_path):
    looked.save(tmp_path / "t.json")
    again = viz.Trace.load(tmp_path / "t.json")
    for s in looked.steps:
        np.testing.assert_array_equal(again.attention.step(s.index), looked.attention.step(s.index))
    assert json.loads((tmp_path / "t.json").read_text())["attention"]["head"] == 3


def test_bad_attention_arguments_name_the_fix(tiny_gqa):
    with pytest.raises(ValueError, match="attention_head must be a head number from 0 to 3"):
        viz.record(tiny_gqa, PROMPT, max_new_tokens=2, attention=True, attention_head=4)
    with pytest.raises(ValueError, match="attention must be True or False"):
        viz.record(tiny_gqa, PROMPT, max_new_tokens=2, attention="yes")


def test_the_view_draws_the_stored_weights(looked):
    layer = 1
    for s in looked.steps:
        d = views.attention_data(looked, s.index, layer)
        stored = looked.attention.step(s.index)[layer]
        assert d.seq_len == s.seq_len == len(d.labels)
        np.testing.assert_array_equal(d.mean, stored[0])
        np.testing.assert_array_equal(d.head_weights, stored[1])
        assert d.phases.count("prefill") == len(looked.prompt_tokens)
    fig = views.attention_figure(looked, layer=layer)
    assert fig.layout.sliders[0].active == 1  # opens at the first decode step
    for frame, s in zip(fig.frames, looked.steps):
        shown = [v for v in frame.data[0].y if v is not None]
        np.testing.assert_allclose(shown, looked.attention.step(s.index)[layer, 0], atol=5e-4)
    matrix = views.attention_matrix(looked, layer)
    assert np.isnan(matrix[0, len(looked.prompt_tokens) :]).all()  # the prefill saw the prompt


def test_the_query_of_each_step_is_the_token_fed_in(looked):
    n = len(looked.prompt_tokens)
    assert views.attention_data(looked, 0).query == views.tokens_data(looked)[n - 1].label
    for s in looked.steps[1:]:
        fed = looked.steps[s.index - 1]
        assert (
            views.attention_data(looked, s.index).query
            == views.tokens_data(looked)[n + fed.index].label
        )


def test_widget_follows_step_and_layer(looked):
    w = views.attention_widget(looked)
    for step in range(len(looked.steps)):
        for layer in range(looked.attention.n_layers):
            w.controls["step"].value, w.controls["layer"].value = step, layer
            assert w.error is None
            want = looked.attention.step(step)[layer, 0]
            np.testing.assert_allclose(
                [v for v in w.figure.data[0].y if v is not None], want, atol=5e-4
            )
    w.controls["head"].value = True
    np.testing.assert_allclose(
        [v for v in w.figure.data[0].y if v is not None],
        looked.attention.step(w.values["step"])[w.values["layer"], 1],
        atol=5e-4,
    )


def test_a_trace_without_attention_says_how_to_record_it(tiny_gqa):
    plain = viz.record(tiny_gqa, PROMPT, max_new_tokens=2)
    with pytest.raises(ValueError, match=r"attention=True"):
        views.attention_data(plain, 0)
    fig = views.attention_figure(plain)
    assert "attention=True" in fig.layout.annotations[0].text
    views.attention_static(plain)


def test_bad_layer_names_the_range(looked):
    with pytest.raises(ValueError, match="layer must be a layer number from 0 to 1"):
        views.attention_data(looked, 1, layer=2)


@pytest.mark.slow  # two 64-step recordings of a 30-layer model: ~20 s
def test_a_64_step_trace_stays_within_the_size_budget(make_tiny, tmp_path):
    """Issue 14: a 64-step trace ≤ 400 KB with attention, ≤ 200 KB without — here on a model
    with the default model's 30 layers (the attention bytes grow with layers × positions)."""
    lm = make_tiny(n_layers=30)
    prompt = "What is the capital of France? Answer." + "!"  # 38 byte tokens (the default
    #   model's chat prompt for "What is the capital of France?" is 37 tokens)
    sizes = {}
    for attention in (False, True):
        trace = viz.record(
            lm, prompt, max_new_tokens=64, stop_at_eos=False, attention=attention, embeddings=True
        )
        trace.save(tmp_path / f"{attention}.json")
        sizes[attention] = (tmp_path / f"{attention}.json").stat().st_size
    assert sizes[False] <= 200_000 and sizes[True] <= 400_000, sizes


@pytest.mark.real_model
def test_real_model_attention_matches_a_full_pass_and_keeps_the_tokens(smollm):
    plain = viz.record(smollm, "The capital of France is", max_new_tokens=4)
    looked = viz.record(smollm, "The capital of France is", max_new_tokens=4, attention=True)
    assert looked.generated_ids == plain.generated_ids
    s = looked.steps[-1]
    ids = looked.prompt_ids + looked.generated_ids
    ref = full_pass_attention(smollm, ids[: s.seq_len]).mean(dim=1).numpy()
    got = looked.attention.step(s.index)[:, 0]
    bound = ref.max(axis=-1, keepdims=True) / 255 / 2 + 1e-4
    assert np.all(np.abs(got - ref) <= bound)
