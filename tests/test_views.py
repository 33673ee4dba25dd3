"""Every view draws exactly what the trace recorded; widgets follow their controls; bad input
gets a clear ValueError or an empty state, never a traceback from inside plotly.

Traces are recorded here, in the test session: from the tiny random-weight models (GQA and
MHA; greedy, sampled, one token, no embeddings, no cache, an injected clock) and one short
trace from the real default model (emoji and CJK in the prompt).
"""

import dataclasses
import inspect
import io
import itertools
import warnings

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import plotly.io as pio
import pytest
import torch

import viz
from viz import views
from viz.views import palette
from viz.views.distribution import distribution_data
from viz.views.explorer import BARS, KV_BARS, KV_NOW, LAT_BARS, LAT_NOW, TEXT, explorer_data
from viz.views.text import piece_bytes
from viz.views.tokens import token_groups
from viz.views.whatif import setting, whatif_grid
from viz.views.widgets import figure_output

matplotlib.use("Agg")

PROMPT = "Hi 🍕 東京 $x$ <b>"  # an emoji, CJK, mathtext dollars and an HTML-looking tag


@pytest.fixture(scope="module")
def gqa(tiny_gqa, fake_clock):
    """Recorded with a clock that advances 10 ms per reading: every time is exact and known."""
    return viz.record(
        tiny_gqa,
        PROMPT,
        max_new_tokens=6,
        chat=True,
        stop_at_eos=False,
        clock=fake_clock(step=0.01),
    )


@pytest.fixture(scope="module")
def mha(tiny_mha):
    return viz.record(tiny_mha, PROMPT, max_new_tokens=5, stop_at_eos=False)


@pytest.fixture(scope="module")
def sampled(tiny_gqa):
    """Sampled at a high temperature with only 3 candidates kept: chosen tokens fall outside."""
    return viz.record(
        tiny_gqa, "Hello", max_new_tokens=6, temperature=2.0, log_top=3, seed=0, stop_at_eos=False
    )


@pytest.fixture(scope="module")
def one_token(tiny_gqa):
    return viz.record(tiny_gqa, "x", max_new_tokens=1)


@pytest.fixture(scope="module")
def no_embeddings(tiny_gqa):
    return viz.record(tiny_gqa, "Hello", max_new_tokens=3, stop_at_eos=False, embeddings=False)


@pytest.fixture(scope="module")
def no_cache(tiny_gqa):
    return viz.record(tiny_gqa, "Hello", max_new_tokens=4, stop_at_eos=False, use_cache=False)


@pytest.fixture(scope="module")
def real(smollm):
    return viz.record(smollm, "I love 🍕 in 東京.", max_new_tokens=8, stop_at_eos=False)


@pytest.fixture(params=["gqa", "mha", "sampled", "real"])
def trace(request):
    """Each test using this runs on four traces."""
    return request.getfixturevalue(request.param)


def latencies_s(trace):
    """Independently: TTFT, then the gaps between consecutive tokens' emission times."""
    t = [s.emitted_at_s for s in trace.steps]
    return [trace.timing.ttft_s] + [b - a for a, b in zip(t, t[1:])]


def draw(fig):
    """Render a matplotlib figure fully; any warning (e.g. a missing glyph) is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.savefig(io.BytesIO(), format="png", dpi=40)
    return fig


def reference_distribution(logits, temperature, top_k, top_p):
    """Temperature, top-k and top-p written out again in numpy (not viz.sampling)."""
    x = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        out = np.zeros_like(x)
        out[np.argmax(x)] = 1.0
        return out
    x = x / temperature
    keep = np.ones(len(x), dtype=bool)
    if top_k is not None and top_k < len(x):
        keep &= x >= np.sort(x)[::-1][top_k - 1]
    if top_p is not None and top_p < 1:
        order = np.argsort(-np.where(keep, x, -np.inf), kind="stable")
        p = np.exp(x[order] - x[order][keep[order]].max()) * keep[order]
        p /= p.sum()
        before = np.cumsum(p) - p
        nucleus = np.zeros(len(x), dtype=bool)
        nucleus[order] = before < top_p
        keep &= nucleus
    e = np.where(keep, np.exp(x - x[keep].max()), 0.0)
    return e / e.sum()


def reference_whatif(step, temperature, top_k, top_p):
    """(probabilities of the recorded candidates, share of the unrecorded tokens or None),
    written out again: exact where the recorded logits and logsumexp suffice (greedy, top-k ≤
    recorded, temperature 1 without top-k and with top-p closing among the recorded tokens),
    else re-normalised over the recorded candidates with the share unknown."""
    n = len(step.top_logits)
    whole = np.exp(np.asarray(step.top_logits, dtype=np.float64) - step.logsumexp)
    if temperature == 0 or (top_k is not None and top_k <= n):
        return reference_distribution(step.top_logits, temperature, top_k, top_p), 0.0
    if temperature == 1 and top_k is None:
        if top_p is None or top_p >= 1:
            return whole, 1 - whole.sum()
        if whole.sum() >= top_p:
            keep = (np.cumsum(whole) - whole) < top_p
            return np.where(keep, whole, 0) / whole[keep].sum(), 0.0
    return reference_distribution(step.top_logits, temperature, top_k, top_p), None


# ---- tokens ---------------------------------------------------------------------------------
def test_token_chips_are_the_recorded_tokens(trace):
    chips = views.tokens_data(trace)
    assert [c.id for c in chips] == trace.prompt_ids + trace.generated_ids
    assert [(c.start, c.end) for c in chips[: len(trace.prompt_tokens)]] == [
        (t.start, t.end) for t in trace.prompt_tokens
    ]
    assert [c.special for c in chips] == [t.special for t in trace.prompt_tokens] + [
        s.token_special for s in trace.steps
    ]


def test_token_groups_cover_the_text_once(trace):
    chips = views.tokens_data(trace)
    groups = token_groups(trace, chips)
    prompt = [g for g in groups if g.phase == "prefill"]
    reply = [g for g in groups if g.phase == "decode"]
    assert "".join(g.text for g in prompt) == trace.prompt_text
    assert "".join(g.text for g in reply) == trace.output_text
    assert sorted(p for g in groups for p in g.positions) == list(range(len(chips)))


def test_emoji_split_into_byte_tokens_is_one_group(real):
    """NOTES: "I love 🍕" → spans (6, 8), (7, 8), (7, 8). The view groups them under " 🍕" and
    labels each with its bytes, which together are the UTF-8 encoding of " 🍕"."""
    chips = views.tokens_data(real)
    spans = [(c.start, c.end) for c in chips]
    i = spans.index((6, 8))
    assert spans[i : i + 3] == [(6, 8), (7, 8), (7, 8)]
    group = next(g for g in token_groups(real, chips) if i in g.positions)
    assert group.text == " 🍕" and group.positions == [i, i + 1, i + 2]
    raw = b"".join(piece_bytes(chips[p].piece) for p in group.positions)
    assert raw == " 🍕".encode("utf-8")
    assert all("�" not in chips[p].label for p in group.positions)  # bytes shown, not U+FFFD
    cjk = [g for g in token_groups(real, chips) if g.text.strip() in ("東", "京", "東京")]
    assert cjk, "the CJK characters should be grouped too"


def test_tokens_html_shows_ids_and_escapes_text(gqa):
    html = views.tokens_html(gqa).html
    for t in gqa.prompt_tokens:
        assert f'<span class="viz-id">{t.id}</span>' in html
    assert "<|im_start|>" not in html and "&lt;|im_start|&gt;" in html  # text, not a tag
    assert "<b>" not in html and "&lt;" in html  # the prompt's "<b>" is shown, not obeyed
    assert html.count(f"border-color:{palette.SPECIAL}") >= 1 + sum(
        t.special for t in gqa.prompt_tokens
    )
    assert repr(views.tokens_html(gqa)).startswith("<tokens view:")


def test_static_figures_draw_without_warnings_and_stay_out_of_pyplot(gqa, real):
    """gqa's prompt holds an emoji, CJK, "$x$" and "<b>"; real's holds the real tokenizer's."""
    before = plt.get_fignums()
    last = len(gqa.steps) - 1
    figs = [
        views.tokens_static(gqa),
        views.embeddings_static(gqa),
        views.distribution_static(gqa, last),
        views.explorer_static(gqa, last),
        views.whatif_static(gqa, 0, 0.7),
        views.kv_static(gqa),
        views.timeline_static(gqa),
        views.compare_static(gqa, real),
        views.tokens_static(real),
        views.explorer_static(real, len(real.steps) - 1),
    ]
    for fig in figs:
        assert isinstance(fig, matplotlib.figure.Figure)
        draw(fig)
    assert plt.get_fignums() == before  # nothing left for the notebook to show twice


PLOTLY_VIEWS = [
    views.embeddings_figure,
    views.distribution_figure,
    views.explorer_figure,
    views.whatif_figure,
    views.kv_figure,
    views.timeline_figure,
]


@pytest.mark.parametrize("view", PLOTLY_VIEWS, ids=lambda f: f.__name__)
def test_plotly_figures_are_deterministic(view, gqa, tmp_path):
    """nbval compares plotly JSON as a dict: a figure must be the same every time it is built,
    also from a trace that went through a JSON file, and hold no random trace uid."""
    again = viz.Trace.load(gqa.save(tmp_path / "t.json"))
    first = view(gqa).to_json()
    assert first == view(gqa).to_json() == view(again).to_json()
    assert '"uid"' not in first


def test_widget_output_is_what_the_plotly_renderer_emits(gqa):
    """A LinkedView hands its Output widget the same JSON a notebook cell would render."""
    fig = views.kv_figure(gqa)
    bundle = figure_output(fig)["data"]["application/vnd.plotly.v1+json"]
    native = pio.renderers["plotly_mimetype"].to_mimebundle(fig.to_dict())
    native = native["application/vnd.plotly.v1+json"]
    assert bundle["data"] == native["data"] and bundle["layout"] == native["layout"]


# ---- embeddings -----------------------------------------------------------------------------
def test_embedding_data_is_the_recorded_vectors(trace):
    d = views.embeddings_data(trace)
    vectors = trace.embeddings.vectors(trace.prompt_ids)
    np.testing.assert_array_equal(d.vectors, vectors)
    v = vectors.astype(np.float64)
    norms = np.sqrt((v * v).sum(axis=1))
    with np.errstate(invalid="ignore"):
        expected = (v @ v.T) / np.outer(norms, norms)
    expected[np.isnan(expected)] = 0.0  # documented: an all-zero vector (a padding row) gives 0
    np.testing.assert_allclose(d.cosine, expected, atol=1e-9)
    # Principal components independently: from the eigenvectors of the Gram matrix c·cᵀ,
    # whose eigenvalues are the components' variances (times n) and c·v_k = sqrt(λ_k)·u_k.
    c = v - v.mean(axis=0)
    vals, vecs = np.linalg.eigh(c @ c.T)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    expected = vecs[:, :2] * np.sqrt(np.clip(vals[:2], 0, None))
    for k in range(2):  # same up to the sign of each component
        sign = np.sign(expected[:, k] @ d.xy[:, k])
        np.testing.assert_allclose(d.xy[:, k], sign * expected[:, k], atol=1e-6)
    np.testing.assert_allclose(d.explained, vals[:2] / vals.sum(), atol=1e-9)


def test_embeddings_figure_holds_the_vectors(gqa):
    fig = views.embeddings_figure(gqa)
    vectors = gqa.embeddings.vectors(gqa.prompt_ids)
    np.testing.assert_allclose(np.array(fig.data[0].z), vectors, rtol=1e-2, atol=1e-6)
    np.testing.assert_allclose(
        np.array(fig.data[1].z), views.embeddings_data(gqa).cosine, atol=1e-4
    )
    assert len(set(fig.data[0].y)) == len(gqa.prompt_tokens)  # one row per token, none merged


def test_one_token_prompt_projects_to_the_origin(one_token):
    d = views.embeddings_data(one_token)
    assert d.xy.shape == (1, 2) and not d.xy.any() and d.explained == (0.0, 0.0)
    views.embeddings_figure(one_token)


# ---- distribution ---------------------------------------------------------------------------
def test_distribution_bars_are_the_recorded_probabilities(trace):
    for s in trace.steps:
        bars = distribution_data(trace, s.index).bars()
        candidates = bars[: len(s.top_ids)]
        assert [b.prob for b in candidates] == s.top_probs
        if s.token_id in s.top_ids:
            i = s.top_ids.index(s.token_id)
            assert candidates[i].kind == "chosen" and candidates[i].colour == palette.CHOSEN
            assert len(bars) == len(s.top_ids) + 1
        else:  # sampled outside the recorded candidates: a bar of its own
            assert bars[-2].kind == "chosen" and bars[-2].prob == s.prob
        shown = sum(b.prob for b in bars[:-1])
        assert bars[-1].kind == "rest" and bars[-1].prob == max(0.0, 1.0 - shown)
        fig = views.distribution_figure(trace, s.index)
        assert list(fig.data[0].x) == [b.prob for b in bars]
        assert f"entropy {s.entropy_bits:.2f} bits" in fig.layout.title.text
    static = views.distribution_static(trace, s.index)  # the last step, drawn by matplotlib
    assert [p.get_width() for p in static.axes[0].patches] == pytest.approx([b.prob for b in bars])


def test_sampled_trace_shows_chosen_tokens_outside_the_candidates(sampled):
    outside = [s for s in sampled.steps if s.token_id not in s.top_ids]
    assert outside, "the fixture should sample outside the 3 recorded candidates"
    s = outside[0]
    bars = distribution_data(sampled, s.index).bars()
    assert bars[-2].prob == s.prob and bars[-1].prob == pytest.approx(
        1 - sum(s.top_probs) - s.prob, abs=1e-6
    )


def test_distribution_slider_frames_follow_the_steps(gqa):
    fig = views.distribution_figure(gqa)
    assert [f.name for f in fig.frames] == [str(s.index) for s in gqa.steps]
    for f, s in zip(fig.frames, gqa.steps):
        assert list(f.data[0].x[: len(s.top_probs)]) == s.top_probs
    assert len(fig.layout.sliders[0].steps) == len(gqa.steps)


# ---- explorer -------------------------------------------------------------------------------
def test_explorer_frames_move_every_linked_panel(trace):
    fig = views.explorer_figure(trace)
    lat = latencies_s(trace)
    assert list(fig.data[KV_BARS].y) == trace.kv_bytes
    np.testing.assert_allclose(fig.data[LAT_BARS].y, np.array(lat) * 1000)
    for frame, s in zip(fig.frames, trace.steps):
        moving = dict(zip(frame.traces, frame.data))
        assert list(moving[KV_NOW].y) == [s.kv_bytes] and list(moving[KV_NOW].x) == [s.index]
        assert moving[LAT_NOW].y[0] == pytest.approx(lat[s.index] * 1000)
        n = min(10, len(s.top_probs))  # the explorer shows 10 candidates
        assert list(moving[BARS].x[:n]) == s.top_probs[:n]
        assert f"step {s.index} (" in frame.layout.annotations[0].text


def test_explorer_text_rebuilds_the_reply(trace):
    for s in trace.steps:
        e = explorer_data(trace, s.index)
        assert e.before + e.new == trace.output_text[: s.text_end]
    last = explorer_data(trace, len(trace.steps) - 1)
    assert last.latency_s == pytest.approx(latencies_s(trace)[-1])


def test_explorer_widget_follows_its_slider_at_every_position(trace):
    w = views.explorer_widget(trace)
    lat = latencies_s(trace)
    for s in reversed(trace.steps):  # every position, moving backwards
        w.controls["step"].value = s.index
        assert w.error is None
        assert list(w.figure.data[KV_NOW].y) == [s.kv_bytes]
        assert w.figure.data[LAT_NOW].y[0] == pytest.approx(lat[s.index] * 1000)
        shown = w.output.outputs[0]["data"]["application/vnd.plotly.v1+json"]
        assert shown["data"][KV_NOW]["y"] == [s.kv_bytes]  # what the notebook renders
        assert shown["data"][BARS]["x"][:3] == s.top_probs[:3]
        assert shown["data"][TEXT]["text"] == list(w.figure.data[TEXT].text)


def test_a_linked_view_says_it_is_working_while_it_draws():
    """A render that measures takes seconds: the status says so while it runs (the notebook
    sees the change at once), then how long it took; a quick one leaves the line empty."""
    import time

    import ipywidgets as widgets
    import plotly.graph_objects as go

    from viz.views.widgets import WORKING, LinkedView

    seen = []
    slider = widgets.IntSlider(value=1, min=1, max=3)

    def render(values):
        seen.append(view.status.value if seen else None)  # the first call: view not built yet
        if values["n"] == 2:
            time.sleep(1.05)
        if values["n"] == 3:
            raise ValueError("no such setting")
        return go.Figure(go.Bar(y=[values["n"]]))

    view = LinkedView({"n": slider}, [slider], render)
    assert view.children[1] is view.status and "viz-status" in view.status._dom_classes
    assert view.status.value == ""  # quick: nothing to say
    slider.value = 2
    assert seen[-1] == WORKING and "working…" in WORKING
    assert "done in 1." in view.status.value  # ~1.05 s, shown to a tenth
    slider.value = 3
    assert view.error == "no such setting" and view.status.value == ""


def test_widget_text_form_is_stable(gqa):
    a = views.explorer_widget(gqa)._repr_mimebundle_()["text/plain"]
    b = views.explorer_widget(gqa)._repr_mimebundle_()["text/plain"]
    assert a == b and a.startswith("LinkedView(children=")


# ---- what-if --------------------------------------------------------------------------------
SETTINGS = [
    (t, k, p)
    for t in (0.0, 0.3, 1.0, 1.7)
    for k in (None, 1, 2, 3, 10, 50)
    for p in (None, 0.05, 0.5, 0.9, 1.0)
]


@pytest.mark.parametrize("name", ["gqa", "real", "sampled"])
def test_whatif_equals_an_independent_numpy_computation(request, name):
    trace = request.getfixturevalue(name)
    for s, (t, k, p) in itertools.product(trace.steps[:3], SETTINGS):
        w = views.whatif_data(trace, s.index, t, k, p)
        expected, rest = reference_whatif(s, t, k, p)
        np.testing.assert_allclose(w.probs, expected, atol=2e-6, err_msg=f"{t} {k} {p}")
        assert w.kept == [bool(x > 0) for x in expected]
        assert w.recorded == s.top_probs
        assert (w.rest is None) == (rest is None) and w.exact == (rest is not None)
        if rest is not None:
            assert w.rest == pytest.approx(rest, abs=2e-6)


def test_whatif_exact_settings_match_the_whole_vocabulary(real):
    """Top-k ≤ the recorded candidates is exact: equal to renormalising the recorded
    whole-vocabulary probabilities (not only the recorded logits) over the top k."""
    s = real.steps[1]
    for k in (1, 2, 5, len(s.top_ids)):
        w = views.whatif_data(real, 1, 1.0, k)
        top = np.array(s.top_probs[:k], dtype=np.float64)
        assert w.exact
        np.testing.assert_allclose(w.probs[:k], top / top.sum(), atol=1e-5)
    approx = views.whatif_data(real, 1, 1.3)
    assert not approx.exact and "upper bound" in approx.note()
    assert f"{sum(s.top_probs):.1%}" in approx.note()  # the recorded share, from logsumexp


def test_whatif_at_default_settings_shows_the_recorded_probabilities(real):
    """Temperature 1, no filter: each bar is the probability the trace recorded (not
    re-normalised over the top candidates), and the grey bar holds the rest, on the figure."""
    s = real.steps[1]
    w = views.whatif_data(real, 1)
    assert w.exact and w.probs == s.top_probs
    assert w.rest == pytest.approx(1 - sum(s.top_probs), abs=1e-6) and w.rest > 0
    fig = views.whatif_figure(real, 1)
    assert list(fig.data[1].x) == s.top_probs
    assert list(fig.data[2].x) == [w.rest] and fig.data[2].text == (f"{w.rest:.1%}",)
    assert (
        f"the other {real.model.vocab_size - len(s.top_ids):,} tokens"
        in fig.layout.yaxis.ticktext[-1]
    )
    unknown = views.whatif_figure(real, 1, temperature=1.3)
    assert unknown.data[2].text == ("not known: not recorded",)


def test_whatif_with_every_token_recorded_is_the_samplers_distribution(tiny_gqa):
    """Record the whole vocabulary: the what-if must equal sampling_distribution on the model's
    own logits, for any setting."""
    from viz.compat import last_logits
    from viz.sampling import sampling_distribution

    vocab = tiny_gqa.spec.vocab_size
    trace = viz.record(tiny_gqa, "Hello", max_new_tokens=1, log_top=vocab)
    with torch.inference_mode():
        ids = torch.tensor([trace.prompt_ids])
        logits = last_logits(tiny_gqa.model)(ids, None)[0]
    for t, k, p in [(1.0, None, None), (0.5, None, 0.9), (1.5, 40, 0.8)]:
        w = views.whatif_data(trace, 0, t, k, p)
        full = sampling_distribution(logits, t, k, p).numpy()
        np.testing.assert_allclose(w.probs, full[w.ids], atol=1e-5)
        assert w.covered == pytest.approx(1.0, abs=1e-4)


def test_whatif_widget_never_fails_at_any_slider_position(gqa):
    w = views.whatif_widget(gqa)
    c = w.controls
    positions = {
        "step": range(c["step"].min, c["step"].max + 1),
        "temperature": np.arange(0, c["temperature"].max + 1e-9, c["temperature"].step),
        "top_k": range(c["top_k"].min, c["top_k"].max + 1),
        "top_p": np.arange(c["top_p"].min, c["top_p"].max + 1e-9, c["top_p"].step),
    }
    extremes = [
        {"temperature": 0.0, "top_k": 1, "top_p": c["top_p"].min},
        {"temperature": c["temperature"].max, "top_k": c["top_k"].max, "top_p": 1.0},
    ]
    for others in extremes:
        for name, value in others.items():
            c[name].value = value
        for name, values in positions.items():
            start = c[name].value
            for v in values:
                c[name].value = v
                assert w.error is None, (name, v, w.error)
                expected = views.whatif_data(gqa, w.values["step"], **setting(w.values))
                assert list(w.figure.data[1].x) == expected.probs
            c[name].value = start


def test_whatif_grid_holds_the_same_numbers(gqa):
    g = whatif_grid(gqa)
    cells = [
        (0, 0, 0, 0),
        (1, 4, 0, 2),
        (2, 7, 3, 5),
        (len(gqa.steps) - 1, 2, 1, 1),
        (1, 4, 0, 0),
        (2, 5, 0, 0),
    ]  # ..., temperature 1 unfiltered (exact, a grey bar), 1.25 (unknown)
    assert g["temperatures"][4] == 1.0 and g["temperatures"][5] == 1.25
    for si, ti, ki, pi in cells:
        t, k, p = g["temperatures"][ti], g["top_ks"][ki], g["top_ps"][pi]
        w = views.whatif_data(gqa, si, t, k, p)
        vec, acc, rest = g["index"][si][ti][ki][pi]
        np.testing.assert_allclose(g["vectors"][vec], w.probs, rtol=1e-3)
        assert rest == (None if w.rest is None else pytest.approx(w.rest, rel=1e-3))
        assert [x > 0 for x in g["vectors"][vec]] == w.kept  # rounding never hides a token
        assert g["accuracy"][acc] == w.accuracy()
        assert g["settings"][ti][ki][pi] == w.setting()


# ---- KV growth ------------------------------------------------------------------------------
def test_kv_series_are_the_recorded_bytes(trace):
    d = views.kv_data(trace)
    fig = views.kv_figure(trace)
    m = trace.model
    layers = [t for t in fig.data if t.type == "bar"]
    assert len(layers) == m.n_layers
    for i, bar in enumerate(layers):
        assert list(bar.y) == [s.kv_bytes_per_layer[i] for s in trace.steps]
        assert list(bar.x) == [s.seq_len for s in trace.steps]
    stacked = np.sum([list(b.y) for b in layers], axis=0)
    assert list(stacked) == trace.kv_bytes == d.total
    formula, no_gqa = fig.data[-2], fig.data[-1]
    assert list(formula.y) == [s.kv_bytes_formula for s in trace.steps]
    per_token_mha = 2 * m.n_layers * m.n_heads * m.head_dim * m.bytes_per_element
    assert list(no_gqa.y) == [per_token_mha * s.seq_len for s in trace.steps]


def test_kv_gqa_saving_and_plain_mha(gqa, mha):
    g, h = views.kv_data(gqa), views.kv_data(mha)
    assert g.gqa and [n / f for n, f in zip(g.no_gqa, g.formula)] == [
        gqa.model.n_heads / gqa.model.n_kv_heads
    ] * len(g.total)
    assert not h.gqa and h.no_gqa == h.formula and "coincide" in h.note()


def test_kv_without_cache_is_empty_with_a_note(no_cache):
    d = views.kv_data(no_cache)
    assert d.total == [0] * len(no_cache.steps) and "without a KV cache" in d.note()
    assert "without a KV cache" in views.kv_figure(no_cache).layout.annotations[0].text
    draw(views.kv_static(no_cache))


def test_kv_static_bars_are_the_recorded_bytes(gqa):
    fig = views.kv_static(gqa)
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    n = len(gqa.steps)
    per_layer = [heights[i * n : (i + 1) * n] for i in range(gqa.model.n_layers)]
    assert per_layer == [
        [s.kv_bytes_per_layer[i] for s in gqa.steps] for i in range(gqa.model.n_layers)
    ]


# ---- timeline -------------------------------------------------------------------------------
def test_timeline_bars_are_the_recorded_latencies(trace):
    d = views.timeline_data(trace)
    assert d.latencies_s == pytest.approx(latencies_s(trace))
    fig = views.timeline_figure(trace)
    step_bars = next(t for t in fig.data if t.name == "step latency")
    np.testing.assert_allclose(step_bars.y, np.array(latencies_s(trace)) * 1000)
    prefill = [t for t in fig.data if t.name == "prefill"]
    assert len(prefill) == 1 and len(prefill[0].x) == 1  # prefill is ONE bar
    decode = [t for t in fig.data if t.name == "decode"]
    assert sum(len(t.x) for t in decode) == len(trace.steps) - 1  # one bar per decode step
    # The bars tile the time axis: each starts where the one before ended.
    ends = [s.start_s + s.duration_s for s in d.segments]
    assert [s.start_s for s in d.segments[1:]] == pytest.approx(ends[:-1])
    assert ends[-1] == pytest.approx(trace.timing.end_to_end_s)
    assert fig.layout.shapes[0].x0 == pytest.approx(trace.timing.ttft_s * 1000)  # TTFT line
    static = views.timeline_static(trace).axes[1]  # latency panel
    assert [p.get_height() for p in static.patches] == pytest.approx(
        [v * 1000 for v in latencies_s(trace)]
    )


def test_summary_card_figures_come_from_the_clock(gqa):
    """The fake clock makes every time exact: check TTFT, TPOT and tokens/s from the timing."""
    n = gqa.n_generated
    tpot = (gqa.timing.end_to_end_s - gqa.timing.ttft_s) / (n - 1)
    text = repr(views.summary_html(gqa))
    assert f"TTFT {gqa.timing.ttft_s * 1000:.1f} ms" in text
    assert f"TPOT {tpot * 1000:.1f} ms" in text
    assert f"decode {1 / tpot:.1f} tokens/s" in text
    assert f"TTFT {gqa.timing.ttft_s * 1000:.1f} ms" in views.timeline_figure(gqa).layout.title.text


def test_one_token_trace_has_no_tpot_and_no_decode_bars(one_token):
    d = views.timeline_data(one_token)
    assert d.tpot_s is None and len(d.segments) == 2
    card = repr(views.summary_html(one_token))
    assert "TPOT n/a" in card and "decode n/a" in card
    fig = views.timeline_figure(one_token)
    assert not [t for t in fig.data if t.name == "decode" or str(t.name).startswith("TPOT")]


# ---- comparison -----------------------------------------------------------------------------
def test_comparison_shows_both_traces_on_the_same_scales(gqa, no_cache):
    fig = views.compare_figure(gqa, no_cache)
    bars = [t for t in fig.data if t.type == "bar"]
    np.testing.assert_allclose(bars[0].y, np.array(latencies_s(gqa)) * 1000)
    assert list(bars[1].y) == gqa.kv_bytes
    np.testing.assert_allclose(bars[2].y, np.array(latencies_s(no_cache)) * 1000)
    assert list(bars[3].y) == no_cache.kv_bytes
    lay = fig.layout
    assert lay.yaxis.range == lay.yaxis2.range and lay.yaxis3.range == lay.yaxis4.range
    assert lay.xaxis.range == lay.xaxis2.range
    top = max(latencies_s(gqa) + latencies_s(no_cache)) * 1000
    assert lay.yaxis.range[1] >= top and lay.yaxis3.range[1] >= max(gqa.kv_bytes)
    static = views.compare_static(gqa, no_cache)
    assert static.axes[0].get_ylim() == static.axes[1].get_ylim()
    rows = {r[0]: r for r in views.compare_data(gqa, no_cache).rows}
    assert rows["KV cache"][1:3] == ("on", "off")


# ---- bad input ------------------------------------------------------------------------------
STEP_VIEWS = [
    views.distribution_data,
    views.distribution_figure,
    views.distribution_static,
    views.explorer_data,
    views.explorer_figure,
    views.explorer_static,
    views.whatif_data,
    views.whatif_figure,
    views.whatif_static,
]


@pytest.mark.parametrize("view", STEP_VIEWS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "step, message",
    [
        (99, "step 99 does not exist: this trace has steps 0 \\(prefill\\) to 5"),
        (-1, "step -1 does not exist"),
        ("1", "step must be a whole number"),
        (True, "step must be a whole number"),
        (1.0, "step must be a whole number"),
    ],
)
def test_a_step_that_does_not_exist_names_the_range(gqa, view, step, message):
    with pytest.raises(ValueError, match=message):
        view(gqa, step)


def test_one_token_trace_step_error_says_so(one_token):
    with pytest.raises(ValueError, match="only step 0 \\(the prefill: a one-token reply\\)"):
        views.distribution_figure(one_token, 1)


def trace_views() -> list:
    """Every view of `views.__all__` that draws a Trace (its first parameter is annotated
    Trace): derived, not a hand-kept list, so a new view is checked the day it is added."""
    from viz.trace import Trace

    out = []
    for name in views.__all__:
        f = getattr(views, name)
        if inspect.isfunction(f):
            params = list(inspect.signature(f).parameters.values())
            if params and params[0].annotation in (Trace, "Trace"):
                out.append(f)
    return out


ALL_VIEWS = trace_views()


def call(view, trace, tmp_path, other):
    """`view(trace)`, with the arguments it cannot do without: the other trace of a comparison,
    a file for a report, step 0."""
    extra = {"other": other, "path": tmp_path / "report.html", "step": 0}
    params = list(inspect.signature(view).parameters.values())[1:]
    return view(
        trace,
        *[
            extra[p.name]
            for p in params
            if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD
        ],
    )


def test_every_trace_view_is_checked():
    names = {f.__name__ for f in ALL_VIEWS}
    # the list once kept by hand, and the views added since (lessons 05, 07, 14)
    assert names >= {
        "tokens_html",
        "tokens_static",
        "embeddings_figure",
        "embeddings_static",
        "distribution_figure",
        "distribution_static",
        "explorer_figure",
        "explorer_widget",
        "explorer_static",
        "whatif_figure",
        "whatif_widget",
        "whatif_static",
        "kv_figure",
        "kv_static",
        "timeline_figure",
        "timeline_static",
        "summary_html",
        "report_html",
        "attention_figure",
        "compare_figure",
        "write_report",
        "logit_lens_figure",
        "early_exit_figure",
    }
    assert not {"sweep_figure", "roofline_figure", "plotly_layout"} & names


@pytest.mark.parametrize("view", ALL_VIEWS, ids=lambda f: f.__name__)
def test_every_view_refuses_a_model_and_an_empty_trace(view, tiny_gqa, gqa, tmp_path):
    with pytest.raises(ValueError, match="record a trace from it first"):
        call(view, tiny_gqa, tmp_path, gqa)
    with pytest.raises(ValueError, match="has no steps"):
        call(view, dataclasses.replace(gqa, steps=[]), tmp_path, gqa)


@pytest.fixture(scope="module")
def one_token_all(tiny_gqa):
    """A one-token reply with everything a view may ask for (attention, the logit lens)."""
    return viz.record(tiny_gqa, "x", max_new_tokens=1, attention=True, lens=True)


@pytest.mark.parametrize("view", ALL_VIEWS, ids=lambda f: f.__name__)
def test_every_view_draws_a_one_token_trace(view, one_token_all, tmp_path):
    """A figure, widget or page draws it (an empty state says why where there is nothing to
    draw); a function that returns numbers may refuse it, saying what to record instead."""
    if view.__name__.endswith("_data"):
        try:
            call(view, one_token_all, tmp_path, one_token_all)
        except ValueError as e:
            assert "record" in str(e) and "max_new_tokens" in str(e), str(e)
        return
    out = call(view, one_token_all, tmp_path, one_token_all)
    if isinstance(out, matplotlib.figure.Figure):
        draw(out)


def test_early_exit_of_a_one_token_reply_says_why_it_is_empty(one_token_all):
    # once a TypeError (round(None)): no decode step, so no tokens per pass to draw
    fig = views.early_exit_figure(one_token_all)
    assert not fig.data and "no decode step" in fig.layout.annotations[0].text
    with pytest.raises(ValueError, match="no decode step for a draft to guess"):
        views.early_exit_data(one_token_all)


def test_no_embeddings_gives_an_error_or_an_empty_state(no_embeddings):
    with pytest.raises(ValueError, match="embeddings=False.*record it again"):
        views.embeddings_data(no_embeddings)
    fig = views.embeddings_figure(no_embeddings)
    assert not fig.data and "embeddings=False" in fig.layout.annotations[0].text
    draw(views.embeddings_static(no_embeddings))
    assert "embeddings=False" in views.report_html(no_embeddings)


def test_bad_sampling_settings_are_refused_like_record(gqa):
    with pytest.raises(ValueError, match="temperature must be a number >= 0"):
        views.whatif_data(gqa, 0, temperature=-1)
    with pytest.raises(ValueError, match="top_k must be a whole number >= 1"):
        views.whatif_figure(gqa, 0, top_k=0)
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\]"):
        views.whatif_static(gqa, 0, top_p=0)


def test_comparison_names_the_bad_trace(gqa):
    with pytest.raises(ValueError, match="the other trace has no steps"):
        views.compare_figure(gqa, dataclasses.replace(gqa, steps=[]))


def test_compare_table_escapes_for_plotly(gqa):
    # plotly draws numeric entities and &lt; &gt; &amp; as characters, but "&quot;" literally.
    said = dataclasses.replace(gqa, generated_text='He said "hi" & <b>bye</b>')
    cells = [c for column in views.compare_figure(said, said).data[-1].cells.values for c in column]
    reply = [c for c in cells if "He said" in c]
    assert reply and all("&quot;" not in c and "<b>" not in c for c in reply)
    assert all("&#34;hi&#34; &amp; &lt;b&gt;" in c for c in reply)


def test_sweep_legend_names_each_series_once():
    """One legend entry per series (and, with two runs, per run: one legend column each,
    headed by the run's name and how it is drawn)."""
    from viz import perf
    from viz.views.sweeps import sweep_figure

    for name in ("cpu-cache-sweep", "cpu-prompt-sweep", "cpu-batch-sweep"):
        sweep = perf.load_reference(name)
        shown = [t.name for t in sweep_figure(sweep).data if t.showlegend is not False]
        assert len(shown) == len(set(shown)) and shown, (name, shown)
        other = perf.load_reference(name)
        other.label = "a much longer label: my laptop, 8 threads, load 2.4"
        fig = sweep_figure(sweep, other)
        shown = [(t.legendgroup, t.name) for t in fig.data if t.showlegend is not False]
        assert len(shown) == len(set(shown)) and {g for g, _ in shown} == {"run 0", "run 1"}
        titles = {t.legendgroup: t.legendgrouptitle.text for t in fig.data}
        assert "(solid)" in titles["run 0"] and "(dashed)" in titles["run 1"]
        assert "my laptop" in titles["run 1"] and "<br>" in titles["run 1"]  # wrapped
        # the legend's rows are paid for below the axes: taller than the one-run figure
        assert fig.layout.margin.b > sweep_figure(sweep).layout.margin.b


def test_compare_figure_titles_wrap_inside_their_half():
    """Each side's title sits above its own column, left-aligned, in lines short enough for
    half a notebook's width, whatever the labels (lesson 07: a long reference label)."""
    from viz import perf
    from viz.views.compare import SIDE_TITLE_CHARS

    a, b = perf.load_reference("cpu-chat-trace"), perf.load_reference("cpu-chat-trace")
    a.label, b.label = "you", "project CPU, 2 threads, load 1.3, a long label indeed"
    fig = views.compare_figure(a, b)
    titles = [n for n in fig.layout.annotations if n.text.startswith(("A:", "B:"))]
    assert [n.xanchor for n in titles] == ["left", "left"]
    assert titles[0].x < 0.5 <= titles[1].x
    assert all(len(line) <= SIDE_TITLE_CHARS for n in titles for line in n.text.split("<br>"))
    assert "<br>" in titles[1].text


def test_timeline_ttft_label_stays_inside_when_the_prefill_is_a_sliver(tiny_gqa, fake_clock):
    """A short prompt and slow decode steps (a busy machine): TTFT is a sliver at the left of
    the axis, so its label goes right of the line instead of off the figure."""
    from viz import views

    slow = viz.record(
        tiny_gqa,
        "Hi",
        max_new_tokens=8,
        stop_at_eos=False,
        clock=fake_clock(step=0.001, growth=0.01),
    )
    label = [
        a for a in views.timeline_figure(slow).layout.annotations if a.text.startswith("TTFT")
    ][0]
    assert slow.ttft_s < 0.2 * slow.timing.end_to_end_s and label.xanchor == "left"
