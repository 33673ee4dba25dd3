"""A quantized KV cache on lesson 11's wall (`viz.perf.kv_quant`, `viz.compat.quantized_cache`):
the bytes counted from the backends' layouts against the bytes their live tensors hold, the
random cache against a real prefill's, cutting back within the window, greedy parity with
`generate(cache_implementation="quantized")`, the sweep's columns and the view's numbers,
agreement, and bad input refused with the fix — on tiny random models (group size 32: their
kv_heads · head_dim is 32); on the real model, what only it shows (its layout, agreement on a
real prompt)."""

import math

import pytest
import torch

from viz import compat, perf, views
from viz.perf import kv_quant as kq


def ids_of(n: int, start: int = 10) -> list[int]:
    return [start + (i * 7) % 200 for i in range(n)]


TINY_QUANTS = [kq.KVQuant(8), kq.KVQuant(4, group_size=32), kq.KVQuant(2, group_size=16)]


def live_bytes(cache) -> int:
    return sum(p["values"] + p["scales"] + p["window"] for p in compat.quantized_parts(cache))


def fake_peaks() -> perf.Peaks:
    return perf.Peaks(
        device="cpu",
        device_name="test",
        dtype="float32",
        threads=2,
        flops_per_s=1e11,
        bytes_per_s=40e9,
        matmul_n=2048,
        buffer_bytes=2**28,
        repeats=7,
        timer="perf_counter",
    )


# ---- the bytes -------------------------------------------------------------------------------
@pytest.mark.parametrize("quant", TINY_QUANTS, ids=lambda q: q.name)
def test_counted_bytes_are_the_bytes_the_cache_holds_after_a_prefill_and_steps(tiny, quant):
    model, spec = tiny.model, tiny.spec
    forward = compat.last_logits(model)
    cache = quant.cache(model)
    with torch.inference_mode():
        forward(torch.tensor([ids_of(40)]), cache)
        assert live_bytes(cache) == kq.kv_quant_bytes(spec, 40, quant, 0)
        for step in range(1, 4):  # each decode step: one more position (quanto: in the window)
            forward(torch.tensor([[5]]), cache, position_ids=torch.tensor([[39 + step]]))
            window = step if quant.backend == "quanto" else 0
            assert compat.cache_length(cache) == 40 + step
            assert live_bytes(cache) == kq.kv_quant_bytes(spec, 40 + step, quant, window)


def test_counted_bytes_by_hand_for_the_default_models_shape():
    spec = perf.config_spec("smollm2-135m", "float32")  # 30 layers, 3 KV heads of 64, fp32
    # int4, groups of 64: one group per head per position: 32 bytes packed + scale + shift
    per_position = 3 * (32 + 4 + 4)
    assert kq.kv_quant_bytes(spec, 8192, kq.KVQuant(4)) == 2 * 30 * per_position * 8192
    # int2, 90 positions quantized, 10 in the window: 270 groups packed four to a byte along
    # the groups (ceil(270 / 4) = 68 rows of 64 bytes), a scale and a shift each; the window's
    # positions at 4 bytes a value
    assert kq.kv_quant_bytes(spec, 100, kq.KVQuant(2), window_tokens=10) == 2 * 30 * (
        68 * 64 + 270 * 8 + 3 * 64 * 4 * 10
    )
    # fp8: a byte a value and one float32 scale per tensor
    assert kq.kv_quant_bytes(spec, 8192, kq.KVQuant(8)) == 2 * 30 * (3 * 64 * 8192 + 4)
    assert kq.kv_quant_bytes(spec, 8192) == spec.kv_bytes(8192)
    ratio = kq.kv_quant_bytes(spec, 8192, kq.KVQuant(4)) / spec.kv_bytes(8192)
    assert ratio == pytest.approx(5 / 32)  # 5 bits a value against 32


# ---- a cache of any length, and cutting it back -----------------------------------------------
@pytest.mark.parametrize("quant", TINY_QUANTS, ids=lambda q: q.name)
def test_a_synthetic_quantized_cache_has_the_layout_a_real_prefill_leaves(tiny_gqa, quant):
    model = tiny_gqa.model
    real = quant.cache(model)
    with torch.inference_mode():
        compat.last_logits(model)(torch.tensor([ids_of(34)]), real)
    fake = compat.synthetic_quantized_cache(
        model,
        34,
        quant.backend,
        quant.nbits,
        group_size=quant.group_size,
        residual_length=quant.residual_length,
    )
    assert compat.is_quantized_cache(fake) and not compat.is_quantized_cache(
        compat.new_cache(model)
    )
    assert compat.quantized_parts(fake) == compat.quantized_parts(real)
    assert compat.cache_length(fake) == 34
    with pytest.raises(ValueError, match="tokens >= 1"):
        compat.synthetic_quantized_cache(model, 0, quant.backend, quant.nbits)


@pytest.mark.parametrize("quant", TINY_QUANTS, ids=lambda q: q.name)
def test_a_quantized_cache_is_cut_back_to_the_same_step(tiny_gqa, quant):
    model = tiny_gqa.model
    forward = compat.last_logits(model)
    cache = compat.synthetic_quantized_cache(
        model,
        30,
        quant.backend,
        quant.nbits,
        group_size=quant.group_size,
        residual_length=quant.residual_length,
    )
    before = compat.quantized_parts(cache)
    x, pos = torch.tensor([[7]]), torch.tensor([[30]])
    with torch.inference_mode():
        first = forward(x, cache, position_ids=pos)
        compat.trim_cache(cache, 30)
        assert compat.quantized_parts(cache) == before
        again = forward(x, cache, position_ids=pos)
    assert torch.equal(first, again)  # the same step over the same cache


def test_a_quanto_cache_is_cut_back_only_within_its_window(tiny_gqa):
    model = tiny_gqa.model
    quant = kq.KVQuant(4, group_size=32)
    cache = compat.synthetic_quantized_cache(model, 30, "quanto", 4, group_size=32)
    with torch.inference_mode():
        compat.last_logits(model)(torch.tensor([[7]]), cache, position_ids=torch.tensor([[30]]))
    with pytest.raises(ValueError, match="only its 1 newest positions are held in full precision"):
        compat.trim_cache(cache, 29)
    assert quant.residual_length == 128


# ---- parity with generate -------------------------------------------------------------------
@pytest.mark.parametrize("quant", TINY_QUANTS[:2], ids=lambda q: q.name)
def test_the_greedy_loop_over_a_quantized_cache_is_generates(tiny_gqa, quant):
    model, prompt = tiny_gqa.model, ids_of(24)
    [agreement] = kq.kv_quant_agreement(tiny_gqa, [quant], steps=10, prompt=prompt)
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([prompt]),
            max_new_tokens=10,
            min_new_tokens=10,
            do_sample=False,
            **quant.generate_kwargs(),
        )
    assert agreement.tokens == out[0, len(prompt) :].tolist()
    assert agreement.tokens[0] == agreement.reference[0]  # the prefill attends to float keys


# ---- the sweep, the verdicts, the view --------------------------------------------------------
def test_kv_quant_sweep_times_each_cache_and_counts_its_bytes(tiny_gqa):
    quants = [8, kq.KVQuant(4, group_size=32)]
    sweep = perf.kv_quant_sweep(tiny_gqa, [64, 200], quants, repeats=2, progress=False)
    spec = tiny_gqa.spec
    assert sweep.column("kv_bits") == [32, 8, 4, 32, 8, 4]
    assert sweep.column("context_tokens") == [64, 64, 64, 200, 200, 200]
    assert kq.cache_names(sweep) == {32: "float32", 8: "fp8", 4: "int4"}
    kinds = [None, kq.KVQuant(8), kq.KVQuant(4, group_size=32)] * 2
    for row, quant in zip(sweep.rows(), kinds):
        c = row["context_tokens"]
        window = 1 if quant is not None and quant.backend == "quanto" else 0
        assert row["kv_bytes"] == kq.kv_quant_bytes(spec, c + 1, quant, window)
        assert row["step_bytes"] == row["weight_bytes"] + row["kv_bytes"]
        assert row["decode_step_s"] > 0 and row["empty_step_s"] > 0
        cost = perf.decode_cost(spec, c + 1)
        if quant is None:
            assert row["kv_bytes"] == cost.kv_bytes and row["flops"] == cost.flops
            assert row["dequantize_s"] == row["flush_s"] == row["dequantized_bytes"] == 0
        else:
            assert row["kv_bytes"] < cost.kv_bytes and row["flops"] > cost.flops
            assert row["dequantize_s"] > 0 and row["dequantized_bytes"] == spec.kv_bytes(c)
            assert (row["flush_s"] > 0) == (quant.backend == "quanto")
    assert sweep.spread("decode_step_s")[0].runs == 2
    assert "int4 (quanto, groups of 32)" in sweep.settings["int4"]
    assert "float32" in str(sweep)

    row = kq.kv_quant_row(sweep, "int4")
    assert row["context_tokens"] == 200 and row["step"].median == row["decode_step_s"]
    with pytest.raises(ValueError, match="no cache 'int2'"):
        kq.kv_quant_row(sweep, "int2")
    with pytest.raises(ValueError, match="no row for 100 cached tokens"):
        kq.kv_quant_row(sweep, "int4", 100)

    verdicts = perf.kv_quant_verdicts(sweep, fake_peaks(), 1e-4)
    assert list(verdicts) == ["float32", "fp8", "int4"]
    assert all(v.regime in perf.REGIMES or v.between for v in verdicts.values())

    d = views.kv_quant_data(sweep, fake_peaks())
    line = d["lines"]["int4"]
    assert line["context_tokens"] == [0, 64, 200]
    assert line["step_mb"][0] == pytest.approx(sweep.column("weight_bytes")[0] / 1e6)
    assert line["step_mb"][1:] == pytest.approx([b / 1e6 for b in sweep.column("step_bytes")[2::3]])
    assert d["floor"]["floor_ms"][1] == pytest.approx(max(sweep.column("step_bytes")) / 40e9 * 1e3)
    fig = views.kv_quant_figure(sweep, fake_peaks())
    assert [t.name for t in fig.data][1:] == ["float32", "fp8", "int4"]
    assert views.kv_quant_data(sweep)["floor"] is None
    with pytest.raises(ValueError, match="expected a kv_quant_decode sweep"):
        views.kv_quant_figure(perf.long_decode_sweep(tiny_gqa, [0, 8], repeats=1, progress=False))


def test_a_sweep_without_the_float_cache_is_drawn_beside_a_long_decode_sweep(tiny_gqa):
    quant = perf.kv_quant_sweep(
        tiny_gqa,
        [100],
        [kq.KVQuant(4, group_size=32)],
        repeats=1,
        float_cache=False,
        progress=False,
    )
    assert quant.column("kv_bits") == [4] and kq.cache_names(quant) == {4: "int4"}
    decode = perf.long_decode_sweep(tiny_gqa, [0, 50, 100], repeats=1, progress=False)
    d = views.kv_quant_data(quant, float_sweep=decode)
    assert list(d["lines"]) == ["float32", "int4"]
    assert d["lines"]["float32"]["context_tokens"] == [0, 50, 100]
    assert d["lines"]["float32"]["step_mb"] == pytest.approx(
        [b / 1e6 for b in decode.column("step_bytes")]
    )
    fig = views.kv_quant_figure(quant, fake_peaks(), float_sweep=decode)
    assert [t.name for t in fig.data][1:] == ["float32", "int4"]
    with pytest.raises(ValueError, match="float_sweep must be a long_decode sweep"):
        views.kv_quant_data(quant, float_sweep=quant)
    both = perf.kv_quant_sweep(tiny_gqa, [100], [8], repeats=1, progress=False)
    with pytest.raises(ValueError, match="has its own float32 rows"):
        views.kv_quant_data(both, float_sweep=decode)
    with pytest.raises(ValueError, match="nothing to measure"):
        perf.kv_quant_sweep(tiny_gqa, [100], [], float_cache=False, progress=False)


def test_agreement_counts_the_tokens_before_the_first_difference():
    a = kq.Agreement(
        cache="int4",
        prompt_tokens=9,
        tokens=[1, 2, 3, 9, 5],
        reference=[1, 2, 3, 4, 5],
        first_step_logit_diff=0.25,
    )
    assert (a.same_until, a.steps) == (3, 5)
    assert "int4: 3 of 5 greedy tokens equal" in a.line() and "the first 3" in a.line()
    same = kq.Agreement("fp8", 9, [1, 2], [1, 2], 0.0)
    assert "2 of 2" in same.line() and "all of them" in same.line()


# ---- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("nbits", [3, 16, 1, True, "4"])
def test_a_bit_width_the_backends_lack_is_refused_with_the_ones_they_have(nbits):
    with pytest.raises(ValueError, match=r"use 4 or 2 \(optimum-quanto.*or 8 \(its own fp8"):
        kq.KVQuant(nbits)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("group_size", 0, "group_size must be a whole number >= 1"),
        ("residual_length", 1, "at 1 every step would quantize the whole cache again"),
        ("residual_length", 2.5, "residual_length must be a whole number >= 2"),
    ],
)
def test_bad_settings_are_refused(field, value, match):
    with pytest.raises(ValueError, match=match):
        kq.KVQuant(4, **{field: value})


def test_a_group_size_that_does_not_divide_a_positions_keys_is_refused(tiny_gqa):
    # the tiny model holds 2 KV heads of 16 per position: 32 values; 64 would fail on odd lengths
    with pytest.raises(
        ValueError, match="group_size=64 does not divide the 32 key values.*e.g. 32"
    ):
        perf.kv_quant_sweep(tiny_gqa, [8], [4], repeats=1, progress=False)
    kq.KVQuant(8).check(tiny_gqa.spec)  # fp8 has no groups


def test_contexts_beyond_the_model_or_empty_are_refused(tiny_gqa):
    with pytest.raises(
        ValueError, match="needs 513 positions but tiny-gqa has 512: use smaller values"
    ):
        perf.kv_quant_sweep(tiny_gqa, [512], [8], repeats=1, progress=False)
    with pytest.raises(ValueError, match="contexts must be a non-empty list of whole numbers >= 1"):
        perf.kv_quant_sweep(tiny_gqa, [0, 8], [8], repeats=1, progress=False)
    with pytest.raises(ValueError, match="each cache once"):
        perf.kv_quant_sweep(tiny_gqa, [8], [8, 8], repeats=1, progress=False)
    with pytest.raises(ValueError, match="the prompt plus the greedy tokens needs 520"):
        kq.kv_quant_agreement(tiny_gqa, [8], steps=20, prompt=ids_of(500))
    with pytest.raises(ValueError, match="steps must be a whole number >= 2"):
        kq.kv_quant_agreement(tiny_gqa, [8], steps=1, prompt=ids_of(5))


def test_a_missing_backend_names_make_setup(tiny_gqa, monkeypatch):
    import transformers.utils

    monkeypatch.setattr(transformers.utils, "is_optimum_quanto_available", lambda: False)
    assert "make setup" in compat.quantized_cache_missing("quanto")
    assert compat.quantized_cache_missing("fp8") is None  # part of transformers
    with pytest.raises(ImportError, match=r"needs optimum-quanto.*run `make setup`"):
        kq.KVQuant(4, group_size=32).cache(tiny_gqa.model)
    with pytest.raises(ImportError, match="make setup"):
        perf.kv_quant_sweep(
            tiny_gqa, [8], [kq.KVQuant(4, group_size=32)], repeats=1, progress=False
        )
    with pytest.raises(ValueError, match="unknown quantized-cache backend 'hqq'"):
        compat.quantized_cache_missing("hqq")


def test_a_missing_compiler_for_quantos_kernel_is_named(monkeypatch, tmp_path):
    import importlib.util
    import shutil

    class Spec:  # optimum.quanto found in a folder where its kernel was never built
        submodule_search_locations = [str(tmp_path)]

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: Spec())
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert "apt-get install g++" in compat.quanto_kernel_missing()
    built = tmp_path / "library" / "extensions" / "cpp" / "build"
    built.mkdir(parents=True)
    (built / "quanto_cpp.so").write_bytes(b"")
    assert compat.quanto_kernel_missing() is None


def test_quantos_kernel_is_built_once():
    compat.build_quanto_kernel()  # builds it if this environment never did (~35 s, once)
    assert compat.build_quanto_kernel() < 5  # then it is there


# ---- the real model ---------------------------------------------------------------------------
def test_the_real_models_cache_holds_the_counted_bytes_and_agrees_on_a_real_prompt(
    smollm, monkeypatch
):
    spec = smollm.spec
    prompt = kq.chat_prompt_ids(smollm)
    assert 150 < len(prompt) < 400  # a real document and question in the chat template
    made = []  # the quantized caches the agreement decodes over: their bytes are counted after
    real_cache = kq.KVQuant.cache

    def kept(quant, model):
        made.append((quant, real_cache(quant, model)))
        return made[-1][1]

    monkeypatch.setattr(kq.KVQuant, "cache", kept)
    fp8, int4, int2 = kq.kv_quant_agreement(smollm, [8, 4, 2], steps=8)
    # each holds the prompt and 7 tokens (the 8th is never fed); quanto keeps the 7 in its
    # full-precision window, fp8 quantizes every position
    assert [q.nbits for q, _ in made] == [8, 4, 2]
    for quant, cache in made:
        window = 7 if quant.backend == "quanto" else 0
        assert compat.cache_length(cache) == len(prompt) + 7
        assert live_bytes(cache) == kq.kv_quant_bytes(spec, len(prompt) + 7, quant, window)
    for a in (fp8, int4, int2):
        assert a.prompt_tokens == len(prompt) and a.steps == 8
        assert a.tokens[0] == a.reference[0]  # the prefill's token: it attends to float keys
        assert math.isfinite(a.first_step_logit_diff) and a.first_step_logit_diff > 0
    # fewer bits, more error: 2-bit integers move the logits far more than 4-bit ones
    assert int2.first_step_logit_diff > int4.first_step_logit_diff
    assert int4.same_until >= 2 and fp8.same_until >= 2
    assert "The lighthouse" in int4.reference_text
