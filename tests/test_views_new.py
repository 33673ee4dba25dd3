"""The views issue 14 adds for the lessons: what the model reads (prompt_html), one layer as
matrix products (layer_diagram), a batch's per-request timeline (batch_timeline) and a text box
run on Enter or after a pause (LinkedText). Numbers are checked against independent
computation; bad input names the fix.
"""

from __future__ import annotations

import matplotlib
import pytest

import viz
from viz import perf, views
from viz.views.widgets import LinkedText

matplotlib.use("Agg")

SYSTEM = "You are a tiny test model"
CHATML_SYSTEM = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
)
TEMPLATES = {
    # ChatML with a default system turn (as SmolLM2's): the content follows the role name.
    "chatml": (
        "<|im_start|>system\n"
        + SYSTEM
        + "<|im_end|>\n"
        + CHATML_SYSTEM
        + "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    ),
    # A header-style template (as Llama 3's): the role name stands alone between control tokens.
    "header": (
        "<|im_start|>system<|im_end|>\n\n" + SYSTEM + "<|endoftext|>"
        "{% for m in messages %}<|im_start|>{{ m['role'] }}<|im_end|>\n\n"
        "{{ m['content'] }}<|endoftext|>{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant<|im_end|>\n\n{% endif %}"
    ),
}


# ---- prompt_html ----------------------------------------------------------------------------
@pytest.fixture(params=list(TEMPLATES))
def templated(request, make_tiny):
    lm = make_tiny(seed=1)
    lm.tokenizer.chat_template = TEMPLATES[request.param]
    return viz.record(lm, "What is 2+2?", max_new_tokens=1, chat=True)


def test_prompt_tokens_are_sorted_by_origin(templated):
    d = views.prompt_data(templated)
    # The byte tokenizer: one token per byte, so the counts are the texts' lengths in bytes.
    assert d.count("yours") == len("What is 2+2?")
    assert d.count("system") == len(SYSTEM) and d.system_prompt == SYSTEM
    assert d.count("control") == sum(t.special for t in templated.prompt_tokens)
    assert d.count("template") == len(templated.prompt_tokens) - len("What is 2+2?") - len(
        SYSTEM
    ) - d.count("control")
    assert d.added == len(templated.prompt_tokens) - len("What is 2+2?")
    html = str(views.prompt_html(templated))
    assert f"your text: {len('What is 2+2?')}" in html
    assert f"hidden system prompt: {len(SYSTEM)}" in html
    assert f"reads {len(templated.prompt_tokens)} tokens" in views.prompt_table(templated)


def test_without_chat_every_token_is_yours(tiny_gqa):
    trace = viz.record(tiny_gqa, "plain text", max_new_tokens=1)
    d = views.prompt_data(trace)
    assert d.count("yours") == len(trace.prompt_tokens) and d.added == 0
    assert "no template" in d.summary()


def test_real_chat_template_adds_a_hidden_system_prompt(smollm):
    trace = viz.record(smollm, "What is the capital of France?", max_new_tokens=1, chat=True)
    d = views.prompt_data(trace)
    yours = len(smollm.tokenizer("What is the capital of France?")["input_ids"])
    system = len(smollm.tokenizer(d.system_prompt)["input_ids"])
    assert d.count("yours") == yours == 7
    assert d.system_prompt.startswith("You are a helpful AI assistant")
    assert d.count("system") == system
    assert len(d.tokens) == len(trace.prompt_tokens) == 37


# ---- layer_diagram --------------------------------------------------------------------------
def test_layer_products_count_every_flop_and_weight(smollm):
    spec = smollm.spec
    d = views.layer_diagram_data(spec, prompt_tokens=37, cached_tokens=64)
    # Independently: parameters of one layer's matrices (norms are vectors, left out).
    layer = smollm.model.model.layers[0]
    matrices = [m.weight for m in layer.modules() if isinstance(m, __import__("torch").nn.Linear)]
    assert d.weight_bytes() == sum(w.numel() for w in matrices) * 4
    weights = sum(w.numel() for w in matrices)
    t, s, h, hd = 37, 64, spec.n_heads, spec.head_dim
    assert d.flops("prefill") == 2 * weights * t + 2 * 2 * t * t * hd * h
    assert d.flops("decode") == 2 * weights + 2 * 2 * s * hd * h
    kinds = {p.kind for p in d.phase("decode") if p.b_kind == "weights"}
    assert kinds == {"vector × matrix"}
    assert {p.kind for p in d.phase("prefill")} == {"matrix × matrix"}
    cache = [p for p in d.phase("decode") if p.b_kind == "KV cache"]
    # The query meets K and V of every cached token: the layer's share of the KV cache.
    assert sum(p.b_elements() for p in cache) * 4 == spec.kv_bytes(s) // spec.n_layers


def test_layer_diagram_draws_and_rejects_bad_input(tiny_gqa):
    fig = views.layer_diagram_figure(tiny_gqa.spec, 10, 20)
    assert len(fig.layout.shapes) == 2 * 6 * 3  # two phases, six products, A · B = C
    views.layer_diagram_static(tiny_gqa.spec, 10, 20)
    with pytest.raises(ValueError, match="prompt_tokens must be a whole number >= 1"):
        views.layer_diagram_data(tiny_gqa.spec, 0)
    with pytest.raises(ValueError, match="draws a viz.ModelSpec"):
        views.layer_diagram_figure(tiny_gqa)


# ---- batch_timeline -------------------------------------------------------------------------
def test_batch_timeline_times_every_token(tiny_gqa, fake_clock):
    run = perf.generate_batch(tiny_gqa, ["ab", "cde", "f"], 4, clock=fake_clock(step=0.5))
    alone = perf.generate_batch(tiny_gqa, ["ab"], 4, clock=fake_clock(step=0.25))
    d = views.batch_timeline_data(run, alone)
    assert d.batch_size == 3 and len(d.token_ms) == 4
    assert d.token_ms[0] == pytest.approx(run.ttft_s * 1e3)
    steps = [b - a for a, b in zip(d.token_ms, d.token_ms[1:])]
    assert steps == pytest.approx([s * 1e3 for s in run.step_s])
    # Arrival = TTFT + the steps' durations; the clock readings between steps (bookkeeping,
    # microseconds on a real clock, 0.5 s per reading here) are not part of any step.
    assert d.token_ms[-1] <= d.end_ms == pytest.approx(run.end_to_end_s * 1e3)
    assert d.one_after_another_ms() == pytest.approx(
        [alone.end_to_end_s * 1e3 * r for r in (1, 2, 3)]
    )
    fig = views.batch_timeline_figure(run, alone)
    assert len(fig.data[1].x) == 3 * 3  # three requests × three decode tokens
    assert list(fig.data[2].base) == pytest.approx(
        [0, alone.end_to_end_s * 1e3, 2 * alone.end_to_end_s * 1e3]
    )
    views.batch_timeline_static(run, alone)
    with pytest.raises(ValueError, match="must be a viz.perf.BatchRun"):
        views.batch_timeline_figure(run, other="batch of one")


# ---- LinkedText -----------------------------------------------------------------------------
class FakeTimer:
    """`schedule` for tests: remembers the pending callback; `fire()` runs it."""

    def __init__(self):
        self.pending = []

    def __call__(self, delay_s, callback):
        outer = self

        class Handle:
            cancelled = False

            def cancel(self):
                self.cancelled = True
                if self in outer.pending:
                    outer.pending.remove(self)

        h = Handle()
        h.delay_s, h.callback = delay_s, callback
        self.pending.append(h)
        return h

    def fire(self):
        h = self.pending.pop()
        h.callback()


def test_linked_text_runs_after_a_pause_not_per_keystroke():
    timer, calls = FakeTimer(), []

    def run(text):
        calls.append(text)
        return text.upper()

    v = LinkedText(run, "a", pause_s=0.5, schedule=timer)
    assert calls == ["a"] and v.runs == 1  # the first state is drawn at once
    for text in ("ab", "abc", "abcd"):  # typing: each keystroke restarts the pause
        v.box.value = text
        assert "waiting" in v.status.value
    assert len(timer.pending) == 1 and timer.pending[0].delay_s == 0.5
    assert calls == ["a"]  # nothing ran while typing
    timer.fire()
    assert calls == ["a", "abcd"] and v.result == "ABCD" and "done in" in v.status.value
    assert v.output.outputs[0]["data"] == {"text/plain": "ABCD"}  # a string as it is, no quotes
    v._message(v.box, {"event": "submit"}, [])  # Enter on an unchanged text: not run again
    assert calls == ["a", "abcd"] and "unchanged" in v.status.value


def test_linked_text_shows_recording_while_it_runs_and_errors_in_place(tiny_gqa):
    seen, views_made = [], []

    def run(text):
        if views_made:  # what the learner sees while the model runs
            seen.append(views_made[0].status.value)
        return views.tokens_html(viz.record(tiny_gqa, text, max_new_tokens=1), include_reply=False)

    v = LinkedText(run, "Hi", pause_s=None)
    views_made.append(v)
    v.box.value = "Hello"  # pause_s=None: the box only changes on Enter, and runs at once
    assert "recording…" in seen[-1] and v.runs == 2
    assert v.output.outputs[0]["data"]["text/html"] == str(v.result)
    v.box.value = "   "
    assert "the prompt is empty" in v.error and "empty" in v.status.value
    assert v.output.outputs[0]["data"]["text/html"] == str(v.result)  # the last good one stays


def test_linked_text_shows_lines_as_lines_and_other_values_as_their_repr():
    v = LinkedText(lambda text: f"{text}\nsecond line", "first", pause_s=None)
    assert v.output.outputs[0]["data"] == {"text/plain": "first\nsecond line"}
    v = LinkedText(lambda text: [text], "x", pause_s=None)
    assert v.output.outputs[0]["data"] == {"text/plain": "['x']"}


def test_linked_text_rejects_a_bad_pause():
    with pytest.raises(ValueError, match="pause_s must be a number of seconds > 0"):
        LinkedText(str, pause_s=0)
