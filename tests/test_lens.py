"""The logit lens (issue 32, lesson 14): `viz.record(..., lens=True)` keeps, per step and layer,
the top-k of the final norm and head applied to the residual stream; it agrees with a hand
computation through `output_hidden_states`, changes no token, stays within the trace's size
budget, survives JSON, and every view and the CLI read it; bad input names the fix."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import viz
from viz import lens, perf, views
from viz.trace import Lens, Trace
from test_cli import run_cli


def spread_model(n_layers: int = 4, seed: int = 0) -> viz.LoadedModel:
    """A random-weight Llama whose layers disagree often (weights drawn wider than the default
    0.02, which leaves the tied head reading back the input token at every layer)."""
    from conftest import tiny_config

    config = tiny_config(n_layers=n_layers)
    config["config"]["initializer_range"] = 0.5
    return perf.from_config(config, seed=seed)


@pytest.fixture(scope="module")
def tiny():
    return spread_model()


@pytest.fixture(scope="module")
def looked(tiny):
    return viz.record(tiny, "Hi there, the cache", max_new_tokens=16, stop_at_eos=False, lens=True)


@pytest.fixture(scope="module")
def story(smollm):
    """The real model's 64-step lens trace (the size budget is about 64 steps), recorded once:
    the size budget and the hand computation both read it."""
    return viz.record(
        smollm,
        "Tell me a story about a robot.",
        chat=True,
        max_new_tokens=64,
        stop_at_eos=False,
        lens=True,
    )


# ---- the hand computation ------------------------------------------------------------------
def hand_lens(lm: viz.LoadedModel, ids: list[int], positions: list[int]) -> torch.Tensor:
    """Each layer's next-token scores (logits) after each of `positions` of `ids`, by hand:
    one pass over `ids` with output_hidden_states (no cache; causal, so position p reads what
    a pass over ids[: p + 1] would); the final norm and the head applied to each. The last
    hidden state transformers returns is already normed (its final norm applied)."""
    model = lm.model
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
        hidden = torch.stack(out.hidden_states)[:, 0, positions]  # embedding, then each block
        norm, head = model.model.norm, model.get_output_embeddings()
        rows = torch.cat([head(norm(hidden[:-1])), head(hidden[-1:])])  # (rows, positions, V)
        assert torch.allclose(rows[-1], out.logits[0, positions], atol=1e-4)  # its own output
        return rows.transpose(0, 1).float()  # (positions, rows, V)


def check_against_hand(lm, trace: Trace, steps) -> None:
    steps = list(steps)
    ids_all = trace.prompt_ids + trace.generated_ids
    n_prompt = len(trace.prompt_ids)
    got_ids, got_probs, chosen = trace.lens.ids(), trace.lens.probs(), trace.lens.chosen_probs()
    ranks = trace.lens.chosen_ranks()
    # step s reads the prompt and s tokens: its scores are those after position n_prompt + s - 1
    by_hand = hand_lens(lm, ids_all[: n_prompt + max(steps)], [n_prompt + s - 1 for s in steps])
    for s, logits in zip(steps, by_hand):
        probs = torch.softmax(logits, dim=-1)
        token = trace.generated_ids[s]
        np.testing.assert_allclose(chosen[s], probs[:, token].numpy(), rtol=2e-3, atol=2e-6)
        top = torch.topk(probs, trace.lens.top, dim=-1)
        np.testing.assert_allclose(got_probs[s], top.values.numpy(), rtol=2e-3, atol=2e-6)
        for layer in range(trace.lens.rows):
            p = top.values[layer]
            # the same top-1 wherever it is clear of the runner-up (a near-tie may swap)
            if p[0] - p[1] > 1e-3 * p[0]:
                assert got_ids[s, layer, 0] == top.indices[layer, 0], (s, layer)
            # its rank, up to tokens it is nearly tied with (1 %: a rank deep in the
            # vocabulary sits among thousands of near-equal scores)
            rank = int((logits[layer] > logits[layer, token]).sum())
            assert abs(int(ranks[s, layer]) - rank) <= 1 + rank // 100, (s, layer)


def test_lens_matches_a_hand_computation_on_an_unseen_prompt(tiny):
    trace = viz.record(
        tiny, "Zebras vote twice on Tuesdays", max_new_tokens=6, lens=True, stop_at_eos=False
    )
    assert trace.lens.n_layers == 4 and trace.lens.rows == 5 and trace.lens.steps == 6
    check_against_hand(tiny, trace, range(6))


def test_real_model_lens_matches_a_hand_computation(smollm, story):
    assert story.lens.n_layers == 30 and story.lens.top == 5
    check_against_hand(smollm, story, [0, 1, 2, 3, 4, 5, 63])  # the first steps and the last
    # the last row is the model's own output: its top-5 are the step's own candidates
    for s, step in enumerate(story.steps):
        assert list(story.lens.ids()[s, -1]) == step.top_ids[:5]
        np.testing.assert_allclose(story.lens.chosen_probs()[s, -1], step.prob, rtol=1e-3)


def test_the_last_layer_is_the_model_output_and_tokens_do_not_change(tiny, looked):
    plain = viz.record(tiny, "Hi there, the cache", max_new_tokens=16, stop_at_eos=False)
    assert looked.generated_ids == plain.generated_ids and plain.lens is None
    assert looked.settings.lens and not plain.settings.lens
    last = looked.lens.ids()[:, -1, :]
    for s, step in enumerate(looked.steps):
        assert list(last[s]) == step.top_ids[:5]
        assert looked.lens.chosen_ranks()[s, -1] == step.rank == 0  # greedy: the top-1
    assert all(a[-1] for a in lens.agreement(looked))
    # the lens's hooks are gone after the recording (transformers keeps hooks of its own)
    hooks = lambda: sum(len(m._forward_hooks) for m in tiny.model.modules())  # noqa: E731
    before = hooks()
    viz.record(tiny, "ab", max_new_tokens=2, lens=True)
    assert hooks() == before


def test_first_agreement_and_settled_by_hand():
    """Three steps of a 4-layer lens written by hand: which layer agrees when."""
    chosen = [7, 8, 9]
    top1 = [
        [1, 7, 2, 7, 7],  # first agrees at 1, then layer 2 disagrees: settles at 3
        [8, 8, 8, 8, 8],  # agrees from the embedding on
        [1, 2, 3, 4, 5],
    ]  # a sampled token no layer chose
    ids = np.zeros((3, 5, 2), np.int32)
    ids[:, :, 0] = top1
    ids[:, :, 1] = 99
    made = Lens.from_arrays(
        ids,
        np.full((3, 5, 2), 0.5),
        np.full((3, 5), 0.5),
        np.zeros((3, 5)),
        lambda t: (f"t{t}", ""),
    )
    trace = viz.record(spread_model(), "ab", max_new_tokens=3, stop_at_eos=False)
    for s, t in zip(trace.steps, chosen):
        s.token_id = t
    trace.lens = made
    assert lens.first_agreement(trace) == [1, 0, None]
    assert lens.settled(trace) == [3, 0, None]
    assert lens.agreement_by_layer(trace) == [0.5, 0.5, 0.5, 0.5, 0.5]  # steps 1 and 2
    assert lens.agreement_by_layer(trace, decode_only=False)[1] == pytest.approx(2 / 3)
    assert lens.settle_spread(trace).median == 1.5  # of 3 and 0; step 2 left out
    assert made.token(7) == ("t7", "") and made.token(1234) == ("", "")
    assert made.token_ids == [1, 2, 3, 4, 5, 7, 8, 99]


def test_lens_survives_json_and_old_traces_load(looked, tmp_path):
    path = looked.save(tmp_path / "t.json")
    again = Trace.load(path)
    assert again == looked
    assert (again.lens.ids() == looked.lens.ids()).all()
    assert again.lens.probs().tobytes() == looked.lens.probs().tobytes()
    # a trace saved before the lens existed has neither field: it loads without a lens
    old = json.loads(looked.to_json())
    del old["lens"], old["settings"]["lens"]
    older = Trace.from_dict(old)
    assert older.lens is None and older.settings.lens is False
    with pytest.raises(ValueError, match="no logit lens.*lens=True"):
        lens.first_agreement(older)


@pytest.mark.slow  # a 64-step recording of a 30-layer model
def test_a_64_step_lens_trace_stays_within_the_size_budget(make_tiny, tmp_path):
    """The lens adds ~1.5 kB per step of a 30-layer model: a 64-step trace stays under 300 KB
    with it (200 KB without: tests/test_trace.py)."""
    lm = make_tiny(n_layers=30)
    trace = viz.record(
        lm,
        "What is the capital of France? Answer.!",
        max_new_tokens=64,
        stop_at_eos=False,
        lens=True,
    )
    size = trace.save(tmp_path / "t.json").stat().st_size
    assert trace.lens.rows == 31 and size <= 300_000, size


def test_real_model_64_step_lens_trace_stays_within_the_size_budget(story, tmp_path):
    assert story.n_generated == 64 and story.lens.steps == 64
    size = story.save(tmp_path / "t.json").stat().st_size
    lens_bytes = len(json.dumps(json.loads(story.to_json())["lens"]))
    assert size <= 300_000 and lens_bytes <= 100_000, (size, lens_bytes)


# ---- views ---------------------------------------------------------------------------------
def test_views_draw_the_lens(looked):
    d = views.logit_lens_data(looked)
    n = len(looked.steps)
    assert len(d.top1) == n and len(d.top1[0]) == 5 and d.first == lens.first_agreement(looked)
    fig = views.logit_lens_figure(looked)
    heat, dots, line = fig.data
    assert len(heat.z) == 5 and len(heat.z[0]) == n
    assert len(dots.x) == int(lens.agreement(looked).sum())
    assert list(line.y) == [f for f in d.first if f is not None]
    step = views.logit_lens_step_figure(looked)
    assert len(step.frames) == n and step.layout.sliders[0].active == 1
    assert list(step.data[0].x) == d.top1_probs[1]
    one = views.logit_lens_step_figure(looked, step=3)
    assert not one.frames and "Step 3 chose" in one.layout.title.text
    settle = views.logit_lens_settle_figure(looked)
    assert [t.name for t in settle.data][0] == "first layer to guess it"


def test_the_lens_figure_survives_another_cpus_last_digit(looked):
    """What another CPU's rounding changes in the heatmap must stay inside nbval's tolerance
    (tools/nbval_tolerance.py, 4 significant digits): its probabilities are kept to 6
    significant digits, so a flipped last digit passes, and its ranks are exact only below
    100 (far down, nearly tied tokens reorder)."""
    from tools.nbval_tolerance import SIGNIFICANT_DIGITS, tolerate

    heat = views.logit_lens_figure(looked).data[0]
    z = [list(row) for row in heat.z]
    assert all(v == float(f"{v:.6g}") for row in z for v in row)
    assert any(round(v, 4) != v for row in z for v in row)  # not cut to 4 decimals
    flipped = [[float(f"{v * (1 + 1e-5):.6g}") if v else v for v in row] for row in z]
    assert flipped != z and tolerate(flipped, z, SIGNIFICANT_DIGITS) == z
    off = [[v + 2e-3 for v in row] for row in z]  # a real change still fails
    assert tolerate(off, z, SIGNIFICANT_DIGITS) != z
    ranks = [c[1] for row in heat.customdata for c in row]
    assert all(r == "past 100" or int(r.replace(",", "")) < 100 for r in ranks)
    d = views.logit_lens_data(looked)
    assert sorted({r == "past 100" for r in ranks}) == sorted(
        {r >= 100 for row in d.chosen_ranks for r in row}
    )


def test_views_and_functions_without_a_lens_name_the_fix(tiny):
    plain = viz.record(tiny, "ab", max_new_tokens=3)
    for call in (
        lambda: views.logit_lens_figure(plain),
        lambda: views.logit_lens_data(plain),
        lambda: views.logit_lens_step_figure(plain),
        lambda: lens.lens_table(plain),
        lambda: views.early_exit_figure(plain),
    ):
        with pytest.raises(
            ValueError,
            match=r"record it again with viz.record\(lm, prompt, "
            r"lens=True\)",
        ):
            call()
    with pytest.raises(ValueError, match="reads a viz.Trace, not LoadedModel"):
        lens.agreement(tiny)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"lens": "yes"}, "lens must be True or False"),
        ({"lens": True, "lens_top": 0}, "lens_top must be a whole number >= 1"),
        ({"lens": True, "lens_top": 2.5}, "lens_top must be a whole number >= 1"),
    ],
)
def test_bad_lens_arguments_are_refused(tiny, kwargs, message):
    with pytest.raises(ValueError, match=message):
        viz.record(tiny, "ab", max_new_tokens=2, **kwargs)


def test_lens_table_and_bad_layers(looked):
    text = lens.lens_table(looked)
    assert "layer 0 = the input embedding, 4 = the output" in text
    assert len(text.splitlines()) == 2 + len(looked.steps) + 2
    with pytest.raises(ValueError, match="layers must be numbers from 0 .* to 4"):
        lens.lens_table(looked, [5])


# ---- the command line ------------------------------------------------------------------------
def test_cli_lens_reads_a_trace_and_refuses_bad_input(looked, tiny, tmp_path, capsys):
    """Through the command's entry point in this process (a child each costs ~4 s of imports;
    test_cli_lens_records_the_real_model runs `python -m viz lens` as a child, and test_cli
    checks that a child refusing bad input exits 2 with one line and no traceback)."""
    from viz.cli import main

    path = looked.save(tmp_path / "lens.json")
    assert main(["lens", str(path), "--exit-layer", "2", "--draft-tokens", "2"]) == 0
    out = capsys.readouterr().out
    assert "logit lens of tiny-gqa" in out and "L=2" in out
    assert "tokens per full pass" in out
    # bad input: exit status 2, one line (anything but a ValueError would raise here)
    plain = viz.record(tiny, "ab", max_new_tokens=3).save(tmp_path / "plain.json")
    for args, message in [
        ((str(tmp_path / "none.json"),), "no trace file"),
        ((str(plain),), "no logit lens"),
        ((str(path), "--exit-layer", "4"), "exit_layer must be a layer number from 1 to 3"),
        (
            (str(path), "--draft-tokens", "0", "--exit-layer", "2"),
            "draft_tokens must be a whole number >= 1",
        ),
        ((), "give a trace file"),
    ]:
        assert main(["lens", *args]) == 2, args
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (args, err)


@pytest.mark.real_model  # in a child process: the fixture cannot mark it
def test_cli_lens_records_the_real_model(tmp_path):
    out = tmp_path / "t.json"
    proc = run_cli(
        tmp_path,
        "lens",
        "--record",
        "What is the capital of France?",
        "--chat",
        "--max-new-tokens",
        "8",
        "--exit-layer",
        "24",
        "--draft-tokens",
        "2",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Paris" in proc.stdout and "the answer settles at layer" in proc.stdout
    assert "L=24" in proc.stdout and "tokens per full pass" in proc.stdout
    assert Trace.load(out).lens.n_layers == 30


def test_the_report_shows_the_lens_when_it_was_recorded(looked, tiny, tmp_path):
    """From the command line, as any trace (its entry point in this process: a child would add
    ~4 s of imports to what test_cli checks already); the report it writes is report_html's."""
    import re

    from viz.cli import main
    from viz.views.report import report_html

    path = looked.save(tmp_path / "lens.json")
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert re.findall(r'<section id="([a-z]+)">', html)[-1] == "lens"
    assert "<h2>The logit lens</h2>" in html
    assert re.search(r'Plotly.newPlot\(\s*"viz-lens-plot"', html)
    assert re.search(r'Plotly.newPlot\(\s*"viz-lens-step-plot"', html)
    assert "<h2>The logit lens</h2>" not in report_html(viz.record(tiny, "ab", max_new_tokens=2))
