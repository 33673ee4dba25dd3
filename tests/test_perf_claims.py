"""The library pieces behind the performance claims of lessons 00–07 (issue 12): activation
bytes by hand and against LLM-Viewer, tokens per word, the cached peaks in the roofline's form,
and the regime rule applied to one measured pass."""

import pytest
import torch

from viz import perf
from viz.perf import counts, words
from viz.perf.machine import peaks
from viz.trace import ModelSpec

from conftest import fake_machine_peaks

# The tiny GQA shape of tests/test_perf_counts.py: h = 64, L = 2, n_h = 4 heads of d = 16
# (q = 64), i = 128, V = 259, float32 (a = 4 bytes).
H, L, NH, D, I, V = 64, 2, 4, 16, 128, 259


def tiny_spec():
    return ModelSpec(
        name="tiny",
        model_type="llama",
        n_layers=L,
        n_heads=NH,
        n_kv_heads=2,
        head_dim=D,
        hidden_size=H,
        intermediate_size=I,
        vocab_size=V,
        context_length=512,
        n_params=90_624,
        weight_bytes=90_624 * 4,
        dtype="float32",
    )


def layer_elements_by_hand(n, c, scores=True):
    """One layer, operation by operation: (elements read, elements written)."""
    q = NH * D
    ops = [
        (n * H, n * H),
        (n * H, n * H),  # the two norms
        (3 * n * H, n * q),  # q, k, v projections (k, v go to the cache)
        (n * q, NH * n * c if scores else 0),  # q·kᵀ writes the scores
        (NH * n * c if scores else 0,) * 2,  # softmax reads and writes them
        (NH * n * c if scores else 0, n * q),  # scores · v
        (n * q, n * H),  # output projection
        (2 * n * H, n * H),
        (2 * n * H, n * H),  # the two residual adds
        (2 * n * H, 2 * n * I),  # MLP gate and up
        (2 * n * I, n * I),  # silu(gate) × up
        (n * I, n * H),  # MLP down
    ]
    return sum(r + w for r, w in ops)


@pytest.mark.parametrize(
    "n, c, batch, scores",
    [(10, 10, 1, True), (10, 10, 1, False), (1, 11, 3, True), (4, 9, 2, False)],
)
def test_activation_bytes_by_hand(n, c, batch, scores):
    once = n * H + 2 * n * H + H + V  # embedding rows written, final norm, head in and logits
    expected = 4 * batch * (L * layer_elements_by_hand(n, c, scores) + once)
    assert counts.activation_bytes(tiny_spec(), n, c, batch, scores=scores) == expected


def test_activation_bytes_prefill_of_ten_tokens_worked_out():
    # per layer: 17·10·64 + 4·10·64 + 6·10·128 + 4·4·10·10 = 10,880 + 2,560 + 7,680 + 1,600
    # once: 3·10·64 + 64 + 259 = 2,243; total 2·22,720 + 2,243 = 47,683 elements × 4 bytes
    assert counts.activation_bytes(tiny_spec(), 10, 10) == 190_732


def test_activation_bytes_reconciled_with_llm_viewer():
    """LLM-Viewer's layers for a 64-token prefill of SmolLM2-135M in float32 (its
    model_analyzer.py without flash attention), written out; ours differs by three choices."""
    spec = perf.config_spec("smollm2-135m", dtype="float32")
    n, h, q, i, nh = (
        64,
        spec.hidden_size,
        spec.n_heads * spec.head_dim,
        spec.intermediate_size,
        spec.n_heads,
    )
    linear = 7 * n * h + 2 * n * q + 3 * n * i  # loads and stores of the 7 projections
    attention = nh * n * n + (nh * n * n + n * q) + 2 * nh * n * n  # qk, sv, softmax
    norms, adds, act = 4 * n * h, 4 * n * h, 3 * n * h
    viewer = 4 * spec.n_layers * (linear + attention + norms + adds + act)
    assert viewer == 145_981_440  # "~148 MB" with its output head
    ours_layers = counts.activation_bytes(spec, n, n) - 4 * (3 * n * h + h + spec.vocab_size)
    # adds read two inputs (+2nh), gating at the MLP's width (+3n(i-h)), q·kᵀ reads q (+nq)
    assert ours_layers - viewer == 4 * spec.n_layers * (2 * n * h + 3 * n * (i - h) + n * q)
    assert 0.25 < viewer / spec.weight_bytes < 0.30  # the "+28 %" of the issue


def test_activation_bytes_bad_input():
    with pytest.raises(ValueError, match="input_tokens <= context_tokens"):
        counts.activation_bytes(tiny_spec(), 5, 4)


class SpaceTokenizer:
    """One token per character that is not a space: enough to count by hand."""

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [ord(ch) for ch in text if not ch.isspace()]}


def test_tokens_per_word_by_hand():
    assert words.count_words_tokens(SpaceTokenizer(), "ab cde  f") == (3, 6)
    assert words.tokens_per_word(SpaceTokenizer(), "ab cde  f") == 2.0
    n_words = len(words.SAMPLE_PARAGRAPH.split())
    assert words.count_words_tokens(SpaceTokenizer())[0] == n_words == 81
    with pytest.raises(ValueError, match="at least one word"):
        words.tokens_per_word(SpaceTokenizer(), "   ")


def test_tokens_per_word_on_the_real_tokenizer(smollm):
    # lesson 01 measures the same paragraph: 81 words, 94 tokens
    assert words.count_words_tokens(smollm.tokenizer) == (81, 94)


def machine(read=30e9, **fields):
    return fake_machine_peaks(
        read, {"float32": 90e9, "bfloat16": 180e9}, **{"torch_version": torch.__version__, **fields}
    )


def test_peaks_from_machine_use_the_read_bandwidth():
    p = peaks.peaks_from_machine(machine(), "bfloat16")
    assert (p.flops_per_s, p.bytes_per_s, p.dtype) == (180e9, 30e9, "bfloat16")
    assert p.ridge_intensity == 6.0 and p.flops_spread.median == 180e9
    assert p.bytes_spread.median == 30e9 and p.bytes_spread.runs == 7
    assert "read bandwidth: torch.sum" in p.how and "2026-01-01" in p.how
    with pytest.raises(ValueError, match="no matmul peak"):
        peaks.peaks_from_machine(machine(), "float16")
    with pytest.raises(ValueError, match="MachinePeaks"):
        peaks.peaks_from_machine(p, "float32")


def test_cached_peaks_read_the_cache_once(tmp_path, monkeypatch):
    monkeypatch.setenv("VIZ_MEASURE_DIR", str(tmp_path))
    from viz.perf.machine import machine_key

    peaks.forget_in_process()
    key = machine_key("cpu")
    saved = machine(**{k: v for k, v in key.items() if k != "device"})
    saved.save(perf.peaks_path("cpu"))
    # the check on reuse reads the buffer afresh: here it reads exactly what was cached (the
    # check itself is tested in test_perf_wall.py)
    monkeypatch.setattr(peaks, "measure_bandwidth", lambda *a, **k: saved.read)
    p = perf.cached_peaks("cpu")
    assert p.bytes_per_s == 30e9 and p.flops_per_s == 90e9  # from the file, not measured
    assert p.how.startswith("cached machine peaks, measured 2026-01-01")
    assert perf.machine_peaks().status.startswith("checked now")
    assert perf.cached_peaks("cpu", "bfloat16").flops_per_s == 180e9  # the same file, once
    peaks.forget_in_process()


@pytest.mark.parametrize(
    "seconds, fixed, nbytes, flops, expected",
    [
        (0.010, 0.006, 1e8, 1e8, "overhead-bound"),  # fixed cost ≥ half the step
        (0.020, 0.002, 3e8, 8e8, "memory-bound"),  # memory floor 10 ms > compute floor 8.9 ms
        (0.020, 0.002, 3e8, 9e8, "compute-bound"),  # the boundary: both floors 10 ms
        (0.020, 0.002, 3e8, 1e9, "compute-bound"),  # compute floor 11.1 ms ≥ memory floor 10 ms
    ],
)
def test_pass_regime_is_the_rule_on_the_floors(seconds, fixed, nbytes, flops, expected):
    pk = peaks.peaks_from_machine(machine(), "float32")  # 90 GFLOP/s, 30 GB/s
    assert perf.pass_regime(flops, nbytes, seconds, pk, fixed) == expected
    assert perf.pass_regime(flops, nbytes, seconds, pk, fixed, explain=True).startswith(
        expected + ":"
    )


def test_lesson_01_measures_the_paragraph_the_library_uses():
    """Lesson 01 writes the paragraph out for teaching; lesson 04 measures it again through
    `tokens_per_word`: they must be the same text."""
    from pathlib import Path

    lesson = Path(__file__).resolve().parents[1] / "lessons" / "01_from_text_to_vectors.py"
    assert words.SAMPLE_PARAGRAPH in lesson.read_text(encoding="utf-8")


def test_time_kernel_and_linear_seconds():
    calls = []
    t = perf.time_kernel(lambda: calls.append(1), repeats=3)
    assert len(calls) == 4 and t >= 0  # one warm-up, three timed
    w = torch.ones(8, 4)
    assert perf.linear_seconds(w, 2, repeats=2) > 0
    with pytest.raises(ValueError, match="rows must be"):
        perf.linear_seconds(w, 0)
    with pytest.raises(ValueError, match="2-D tensor"):
        perf.linear_seconds(torch.ones(3), 1)
    with pytest.raises(ValueError, match="repeats must be"):
        perf.time_kernel(lambda: None, repeats=0)


def test_kernel_and_linear_spreads():
    calls = []
    s = perf.kernel_spread(lambda: calls.append(1), repeats=5)
    assert len(calls) == 6 and s.runs == 5 and 0 <= s.low <= s.median <= s.high
    w = torch.ones(64, 32)
    lin = perf.linear_spread(w, 3, repeats=4)
    assert lin.runs == 4 and lin.median > 0
    with pytest.raises(ValueError, match="rows must be"):
        perf.linear_spread(w, 0)


def test_floors_verdict_on_a_computed_pass():
    """A pass from a datasheet: no fixed cost, the step as long as the longer floor."""
    cost = perf.prefill_cost(perf.config_spec("smollm2-135m", dtype="bfloat16"), 128)
    v = perf.floors_verdict(cost, 989e12, 3.35e12)  # the H100's datasheet
    memory, compute = cost.bytes / 3.35e12, cost.flops / 989e12
    assert v.regime == ("compute-bound" if compute >= memory else "memory-bound")
    assert v.step.median == max(memory, compute) and v.fixed.median == 0
    # with spreads that straddle the ridge: too close to call
    ridge = cost.flops / cost.bytes  # FLOP/byte of this pass: put the ridge right on it
    close = perf.floors_verdict(cost, viz_spread(ridge * 1e12, 0.1), 1e12)
    assert close.regime == perf.TOO_CLOSE


def viz_spread(median, rel):
    from viz import Spread

    return Spread(median, median * (1 - rel), median * (1 + rel), 5)
