"""One decode step taken apart (viz.perf.profile): the parts add up to the step, every layer's
matrix products and norms are counted (the expected counts worked out here from the config),
the scopes change nothing and leave nothing behind, gaps are the time no op runs, a JSON
round trip, the figure, and bad input — on tiny random-weight models, in a few seconds."""

import os
import statistics
import time

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from viz.documents import load_document
from viz.perf import profile as step_profile
from viz.perf.profile import (
    ATTENTION,
    CATEGORIES,
    GAPS,
    MATRIX,
    NORMS,
    SMALL,
    StepProfile,
    context_ids,
    op_category,
    profile_decode_step,
    profile_scopes,
    split_step,
)
from viz.views.step_profile import step_profile_data, step_profile_figure

from conftest import tiny_model


@pytest.fixture(scope="module")
def profiled(tiny_gqa):
    return profile_decode_step(tiny_gqa, context=8, steps=3, warmup=1)


@pytest.fixture(scope="module")
def three_layers():
    """A 3-layer tiny Llama (not 2: a count that ignored the depth would still pass at 2)."""
    return tiny_model(n_layers=3, seed=1)


# ---- the parts add up ------------------------------------------------------------------------
def test_the_parts_add_up_to_the_median_profiled_step(profiled):
    assert [p.category for p in profiled.parts] == list(CATEGORIES) + [GAPS]
    assert len(profiled.profiled_steps_s) == len(profiled.plain_steps_s) == profiled.steps == 3
    assert profiled.profiled_step_s == statistics.median_low(profiled.profiled_steps_s)
    assert profiled.step_s == pytest.approx(statistics.median(profiled.plain_steps_s))
    total = sum(p.seconds for p in profiled.parts)
    assert total == pytest.approx(profiled.profiled_step_s, rel=1e-9, abs=1e-12)
    assert sum(profiled.share(c) for c in list(CATEGORIES) + [GAPS]) == pytest.approx(1.0)
    assert all(p.seconds > 0 for p in profiled.parts)  # every category took some time
    assert all(p.device_seconds is None for p in profiled.parts)  # a CPU run


def test_every_layer_s_matrix_products_norms_and_attention_are_counted(three_layers):
    prof = profile_decode_step(three_layers, context=4, steps=2, warmup=0)
    cfg = three_layers.model.config
    assert cfg.num_hidden_layers == 3
    # a Llama layer multiplies by 7 weight matrices (q, k, v, o; gate, up, down); then the head
    assert prof.part(MATRIX).calls == prof.part(MATRIX).ops == 7 * cfg.num_hidden_layers + 1
    # two RMSNorms per layer (before attention, before the MLP) and the final one
    assert prof.part(NORMS).calls == 2 * cfg.num_hidden_layers + 1
    assert prof.part(NORMS).ops > prof.part(NORMS).calls  # each norm is several Python ops
    assert prof.part(ATTENTION).calls == cfg.num_hidden_layers  # one attention call per layer
    assert prof.part(SMALL).ops > 0 and prof.part(GAPS).calls == 0


@pytest.fixture(scope="module")
def lively():
    """A tiny model whose weights are scaled ×10, so that its greedy token changes from step
    to step (the plain random one repeats one token: no parity check could tell it apart)."""
    lm = tiny_model(seed=2)
    with torch.no_grad():
        for name, p in lm.model.named_parameters():
            if "norm" not in name:
                p.mul_(10)
    return lm


def test_the_scopes_change_no_token(lively):
    """The profiled steps choose the tokens a plain greedy loop chooses from the same cache."""
    from viz import compat

    prof = profile_decode_step(lively, context=8, steps=4, warmup=1)
    forward = compat.last_logits(lively.model)
    with torch.inference_mode():
        cache = compat.new_cache(lively.model)
        token = forward(context_ids(lively, 8), cache).argmax(-1, keepdim=True)
        token = forward(token, cache).argmax(-1, keepdim=True)  # the warm-up step
        expected = []
        for _ in range(4):
            token = forward(token, cache).argmax(-1, keepdim=True)
            expected.append(int(token))
    assert len(set(expected)) > 1  # the tokens change: the check can tell orders apart
    assert prof.token_ids == expected


def test_the_plain_and_the_profiled_steps_see_the_same_growing_cache(tiny_gqa):
    """Cache length at every forward pass: the prefill (empty), the warm-up, then each step
    twice from the same cache (plain, profiled), growing by one token a step."""
    seen = []

    def hook(module, args, kwargs):
        cache = kwargs.get("past_key_values", kwargs.get("cache"))
        seen.append((kwargs["input_ids"].shape[1], int(cache.get_seq_length())))

    handle = tiny_gqa.model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        profile_decode_step(tiny_gqa, context=5, steps=3, warmup=2)
    finally:
        handle.remove()
    assert seen == [(5, 0), (1, 5), (1, 6), (1, 7), (1, 7), (1, 8), (1, 8), (1, 9), (1, 9)]


def test_the_scopes_leave_nothing_behind_even_after_an_error(tiny_gqa):
    model = tiny_gqa.model
    before = model.config._attn_implementation
    norms = [m for m in model.modules() if type(m).__name__.endswith("RMSNorm")]
    with pytest.raises(RuntimeError, match="inside"):
        with profile_scopes(model) as n:
            assert n == len(norms) == 2 * model.config.num_hidden_layers + 1
            assert all(m._forward_pre_hooks and m._forward_hooks for m in norms)
            assert model.config._attn_implementation != before
            raise RuntimeError("an error inside")
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in norms)
    assert model.config._attn_implementation == before


def test_the_threads_are_recorded_and_given_back(tiny_gqa):
    before = torch.get_num_threads()
    prof = profile_decode_step(tiny_gqa, context=2, steps=1, warmup=0, threads=1)
    assert prof.threads == 1 and torch.get_num_threads() == before


def test_the_profiler_s_own_log_lines_stay_out_of_the_output(tiny_gqa, capfd):
    """kineto writes "profiler_start" / "profiler_stop" lines straight to fd 2 (a notebook
    would show them); they are silenced, and stderr works again afterwards."""
    profile_decode_step(tiny_gqa, context=2, steps=2, warmup=0)
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert "profiler_st" not in err and "after" in err


# ---- the categories and the gaps ---------------------------------------------------------------
@pytest.mark.parametrize(
    "name, scopes, expected",
    [
        ("aten::linear", [], MATRIX),
        ("aten::matmul", [], MATRIX),
        ("aten::linear", ["viz::attention"], ATTENTION),  # inside attention: attention's own work
        ("aten::mul", ["viz::norm"], NORMS),
        ("aten::mul", ["viz::attention", "viz::norm"], NORMS),  # the innermost scope wins
        ("aten::scaled_dot_product_attention", [], ATTENTION),
        ("aten::_softmax", [], ATTENTION),
        ("aten::layer_norm", [], NORMS),
        ("aten::add", [], SMALL),
        ("aten::cat", ["some::other_scope"], SMALL),
    ],
)
def test_op_category(name, scopes, expected):
    assert op_category(name, scopes) == expected


def test_gaps_are_the_time_when_no_op_runs():
    """A step of three ops with 20 ms of Python (a sleep) between them: the gaps hold it,
    only the top-level ops are counted (not the mm inside the matmul), and all adds up."""
    a = torch.ones(32, 32)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function(step_profile.STEP_SCOPE):
            b = a @ a
            time.sleep(0.02)
            with record_function(step_profile.NORM_SCOPE):
                b = b * 2
            b.add_(1)
    (step,) = [e for e in prof.events() if e.name == step_profile.STEP_SCOPE]
    seconds, ops, entries, device = split_step(step)
    assert ops == {MATRIX: 1, NORMS: 1, SMALL: 1}
    assert entries == {NORMS: 1}
    assert seconds[GAPS] >= 0.02  # the sleep ran no op: all of it is gaps
    step_s = (step.time_range.end - step.time_range.start) * 1e-6
    assert sum(seconds.values()) == pytest.approx(step_s)


# ---- the document ------------------------------------------------------------------------------
def test_a_json_round_trip(profiled, tmp_path):
    path = profiled.save(tmp_path / "step.json")
    assert StepProfile.load(path) == profiled
    assert load_document(path) == profiled
    assert path.read_text().startswith('{"kind":"llm-inference-step-profile","schema_version":2,')


def test_the_table_and_its_text(profiled):
    rows = profiled.table()
    assert [r["category"] for r in rows] == list(CATEGORIES) + [GAPS]
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    assert rows[0]["ms_per_step"] == pytest.approx(profiled.parts[0].seconds * 1e3)
    assert rows[0]["calls_per_step"] == profiled.parts[0].calls
    text = str(profiled)
    lines = text.splitlines()
    assert lines[-1].startswith("gaps: no op running") and "Python" in lines[-1]
    assert any(line.startswith("matrix products") for line in lines)
    assert f"{profiled.profiled_step_s * 1e3:.2f}" in text
    assert "plain step (no profiler)" in text


def test_a_profile_that_names_a_category_twice_is_refused(profiled):
    body = profiled.to_dict()
    body["parts"] = body["parts"] + body["parts"][:1]
    with pytest.raises(ValueError, match="twice"):
        StepProfile.from_dict(body)
    with pytest.raises(ValueError, match="no category 'lunch'"):
        profiled.share("lunch")


# ---- the view ----------------------------------------------------------------------------------
def test_the_figure_has_one_trace_per_category(profiled):
    fig = step_profile_figure(profiled)
    assert [t.name for t in fig.data] == [p.category for p in profiled.parts]
    assert fig.layout.barmode == "stack"
    assert all(t.orientation == "h" and len(t.x) == 1 for t in fig.data)
    assert fig.data[0].x[0] == pytest.approx(profiled.parts[0].seconds * 1e3)
    assert "decode step" in fig.layout.title.text
    two = step_profile_figure([profiled, profiled])
    assert all(len(t.x) == 2 for t in two.data)
    labels = step_profile_data([profiled, profiled])["labels"]
    assert len(set(labels)) == 2  # the same settings twice are numbered apart
    assert len(two.layout.shapes) == 2  # a plain-step tick on each bar


def test_the_figure_refuses_what_is_not_a_profile(tiny_gqa):
    with pytest.raises(ValueError, match="profile_decode_step"):
        step_profile_figure(tiny_gqa)
    with pytest.raises(ValueError, match="non-empty list"):
        step_profile_figure([])


# ---- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"context": 0}, r"context must be a whole number >= 1"),
        ({"context": 2.5}, r"context must be a whole number >= 1"),
        ({"steps": 0}, r"steps must be a whole number >= 1"),
        ({"warmup": -1}, r"warmup must be a whole number >= 0"),
        ({"threads": 0}, r"threads must be a whole number >= 1"),
        ({"prompt": "  "}, r"the prompt is empty"),
    ],
)
def test_bad_settings_name_the_fix(tiny_gqa, kwargs, message):
    with pytest.raises(ValueError, match=message):
        profile_decode_step(tiny_gqa, **kwargs)


def test_a_context_longer_than_the_model_holds_says_how_long_it_may_be():
    lm = tiny_model(context_length=64)
    with pytest.raises(
        ValueError,
        match=r"needs 67 positions, but tiny-gqa holds 64: use "
        r"context <= 57",
    ):
        profile_decode_step(lm, context=60, steps=5, warmup=2)
    assert profile_decode_step(lm, context=57, steps=5, warmup=2).context == 57  # fits exactly


def test_a_model_that_is_not_loaded_is_refused(tiny_gqa):
    with pytest.raises(ValueError, match=r"viz.load_model\(\)"):
        profile_decode_step(tiny_gqa.model)
