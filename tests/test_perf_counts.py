"""FLOP and byte counts against arithmetic done by hand, for the tiny configs and real shapes."""

import pytest

from viz.perf import configs, counts
from viz.trace import ModelSpec

# The tiny GQA test model (viz/tiny.py): h = 64 hidden, L = 2 layers, n_h = 4 heads of d = 16,
# n_kv = 2 KV heads, i = 128 MLP width, V = 259 tokens, float32 (b = 4 bytes), tied head.
H, L, NH, NKV, D, I, V, B4 = 64, 2, 4, 2, 16, 128, 259, 4


def tiny_spec(n_kv_heads=NKV, n_params=90_624):
    return ModelSpec(
        name="tiny",
        model_type="llama",
        n_layers=L,
        n_heads=NH,
        n_kv_heads=n_kv_heads,
        head_dim=D,
        hidden_size=H,
        intermediate_size=I,
        vocab_size=V,
        context_length=512,
        n_params=n_params,
        weight_bytes=n_params * 4,
        dtype="float32",
    )


def test_parameter_count_by_hand(tiny_gqa, tiny_mha):
    # q: 64·64 = 4096; k and v: 2·64·32 = 4096; o: 64·64 = 4096; MLP: 3·64·128 = 24576
    assert counts.layer_matmul_params(tiny_spec()) == 4096 + 4096 + 4096 + 24576 == 36_864
    # 2 layers · (36864 + two norms of 64) + final norm 64 + embedding 259·64 (tied head)
    assert (
        counts.param_count(tiny_spec(), tied=True)
        == 2 * (36_864 + 128) + 64 + 16_576
        == 90_624
        == tiny_gqa.spec.n_params
    )
    # MHA: k and v are 2·64·64 = 8192 instead of 4096
    mha = tiny_spec(n_kv_heads=4, n_params=tiny_mha.spec.n_params)
    assert counts.layer_matmul_params(mha) == 4096 + 8192 + 4096 + 24576 == 40_960
    assert (
        counts.param_count(mha, tied=True)
        == 2 * (40_960 + 128) + 64 + 16_576
        == tiny_mha.spec.n_params
    )
    assert counts.tied_embeddings(tiny_gqa.spec)


def test_prefill_counts_by_hand():
    c = counts.prefill_cost(tiny_spec(), prompt_tokens=10)
    # matmuls: 2 · 10 tokens · 2 layers · 36864 = 1,474,560; head once: 2 · 64 · 259 = 33,152
    assert c.matmul_flops == 1_474_560 + 33_152 == 1_507_712
    # attention: 4 · 2 layers · 4 heads · 16 · (1 + 2 + ... + 10 = 55) = 28,160
    assert c.attention_flops == 4 * 2 * 4 * 16 * 55 == 28_160
    assert c.flops == 1_535_872
    # weights: 4 bytes · 90,624 params (the tied table is read by the head) + 10 rows · 64 · 4
    assert c.weight_bytes == 362_496 + 2_560 == 365_056
    # KV: 2 (K, V) · 2 layers · 2 heads · 16 · 4 bytes = 512 per token, · 10 tokens
    assert c.kv_bytes == 5_120
    assert c.bytes == 370_176
    assert c.intensity == pytest.approx(1_535_872 / 370_176)
    assert (c.phase, c.batch, c.input_tokens, c.context_tokens) == ("prefill", 1, 10, 10)


def test_decode_counts_by_hand_with_a_batch():
    c = counts.decode_cost(tiny_spec(), context_tokens=11, batch=3)
    # matmuls: 2 · 3 requests · 1 token · 2 layers · 36864 = 442,368; head: 2 · 3 · 64 · 259
    assert c.matmul_flops == 442_368 + 99_456 == 541_824
    # attention: the one new query per request sees 11 keys: 4 · 3 · 2 · 4 · 16 · 11
    assert c.attention_flops == 16_896
    # weights once for the whole batch (362,496) + 3 embedding rows · 64 · 4 = 768
    assert c.weight_bytes == 363_264
    # KV: 3 requests · 512 bytes/token · 11 tokens
    assert c.kv_bytes == 16_896
    assert (c.flops, c.bytes) == (558_720, 380_160)


def test_decode_intensity_grows_with_batch_prefill_with_prompt():
    spec = tiny_spec()
    decode = [counts.decode_cost(spec, 64, b).intensity for b in (1, 2, 8, 32)]
    prefill = [counts.prefill_cost(spec, n).intensity for n in (1, 8, 64)]
    assert decode == sorted(decode) and decode[0] < 1 < decode[-1]
    assert prefill == sorted(prefill)


def test_bad_arguments():
    with pytest.raises(ValueError, match="input_tokens"):
        counts.forward_cost(tiny_spec(), input_tokens=5, context_tokens=4)
    with pytest.raises(ValueError, match=r"batch >= 1 \(got 1, 4, 0\)"):
        counts.decode_cost(tiny_spec(), context_tokens=4, batch=0)


def test_published_configs_param_counts():
    # SmolLM2-135M: per layer 576·576 + 2·576·192 + 576·576 + 3·576·1536 = 3,538,944 (+1152
    # norms); 30 layers + final norm 576 + tied table 49152·576 = 134,515,008 (the GGUF's count).
    spec = configs.config_spec("smollm2-135m", dtype="float32")
    assert counts.layer_matmul_params(spec) == 3_538_944
    assert spec.n_params == 30 * (3_538_944 + 1_152) + 576 + 49_152 * 576 == 134_515_008
    # Llama-3.2-1B (tied): 16 · (2·2048² + 2·2048·512 + 3·2048·8192 + 4096) + 2048
    #   + 128256·2048 = 1,235,814,400
    assert (
        configs.config_spec("llama-3.2-1b").n_params
        == 16 * (2 * 2048**2 + 2 * 2048 * 512 + 3 * 2048 * 8192 + 4096) + 2048 + 128_256 * 2048
        == 1_235_814_400
    )
    # Llama-3.1-8B (untied head): 32 · (2·4096² + 2·4096·1024 + 3·4096·14336 + 8192) + 4096
    #   + 2 · 128256·4096 = 8,030,261,248; 16.06 GB in bfloat16
    spec8 = configs.config_spec("llama-3.1-8b")
    assert (
        spec8.n_params
        == 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 8192)
        + 4096
        + 2 * 128_256 * 4096
        == 8_030_261_248
    )
    assert spec8.weight_bytes == 2 * 8_030_261_248  # what the weights occupy
    # An untied head is a second V·h table, but a pass reads only the head whole: of the
    # embedding table it reads the new tokens' rows (one row of 4096 bf16 values here).
    assert (
        counts.decode_cost(spec8, 16).weight_bytes
        == 2 * (8_030_261_248 - 128_256 * 4096) + 2 * 4096
    )
    for name in configs.config_names():
        assert configs.config_spec(name).n_params == configs.read_config(name)["params"]


def test_decode_bytes_by_hand_tied_and_untied():
    """A decode step reads every layer's weights, the final norm and the output head whole, and
    of the embedding table only the new tokens' rows (issue 34): tied or untied, the same count."""
    # Tied: the default model's shape, SmolLM2-135M, float32 (b = 4): h = 576, L = 30, 9 heads,
    # 3 KV heads of d = 64, MLP 1536, V = 49,152.
    #   P_layer = 576·576 + 2·576·(3·64) + (9·64)·576 + 3·576·1536
    #           = 331,776 + 221,184 + 331,776 + 2,654,208 = 3,538,944
    #   read whole: 30·(3,538,944 + 2·576) + 576 + 49,152·576 (the head, which is the table)
    #           = 106,202,880 + 576 + 28,311,552 = 134,515,008 weights = every parameter
    #   KV: 2 · 30 layers · 3 heads · 64 · 4 bytes = 46,080 bytes per token; 64 tokens: 2,949,120
    small = configs.config_spec("smollm2-135m", dtype="float32")
    assert 30 * (3_538_944 + 2 * 576) + 576 + 49_152 * 576 == 134_515_008 == small.n_params
    one = counts.decode_cost(small, context_tokens=64)
    assert one.weight_bytes == 4 * 134_515_008 + 4 * 1 * 576 == 538_062_336
    assert one.kv_bytes == 46_080 * 64 == 2_949_120
    assert one.bytes == 538_062_336 + 2_949_120 == 541_011_456
    four = counts.decode_cost(small, context_tokens=64, batch=4)
    assert four.weight_bytes == 4 * 134_515_008 + 4 * 4 * 576 == 538_069_248  # 4 rows looked up
    assert four.kv_bytes == 4 * 2_949_120 == 11_796_480  # each request its own cache
    assert four.bytes == 538_069_248 + 11_796_480 == 549_865_728

    # Untied: Llama-3.1-8B, bfloat16 (b = 2): h = 4096, L = 32, 32 heads, 8 KV heads of
    # d = 128, MLP 14,336, V = 128,256, a separate output head.
    #   P_layer = 4096·4096 + 2·4096·(8·128) + (32·128)·4096 + 3·4096·14,336
    #           = 16,777,216 + 8,388,608 + 16,777,216 + 176,160,768 = 218,103,808
    #   read whole: 32·(218,103,808 + 2·4096) + 4096 + 128,256·4096 (the head)
    #           = 6,979,584,000 + 4096 + 525,336,576 = 7,504,924,672 weights
    #   not read whole: the embedding table, 128,256·4096 = 525,336,576 weights (1.05 GB)
    #   KV: 2 · 32 · 8 · 128 · 2 bytes = 131,072 bytes per token; 62 tokens: 8,126,464
    big = configs.config_spec("llama-3.1-8b", dtype="bfloat16")
    assert (
        32 * (218_103_808 + 2 * 4096) + 4096 + 128_256 * 4096
        == 7_504_924_672
        == big.n_params - 128_256 * 4096
    )
    one = counts.decode_cost(big, context_tokens=62)
    assert one.weight_bytes == 2 * 7_504_924_672 + 2 * 1 * 4096 == 15_009_857_536
    assert one.weight_bytes <= 15.1e9  # issue 34's "done when": ≤ 15.1 GB at batch 1
    assert big.weight_bytes - one.weight_bytes == 2 * 128_256 * 4096 - 2 * 4096  # 1.05 GB less
    assert one.kv_bytes == 131_072 * 62 == 8_126_464
    assert one.bytes == 15_009_857_536 + 8_126_464 == 15_017_984_000
    four = counts.decode_cost(big, context_tokens=62, batch=4)
    assert four.weight_bytes == 2 * 7_504_924_672 + 2 * 4 * 4096 == 15_009_882_112
    assert four.kv_bytes == 4 * 8_126_464 == 32_505_856
    assert four.bytes == 15_009_882_112 + 32_505_856 == 15_042_387_968


def test_knee_context_by_hand():
    # The tiny tied model at a ridge of R = 2 FLOP/byte. Per request, a decode step at c tokens:
    #   F(c) = 2·L·P_layer + 2·h·V + 4·L·n_h·d·c = 2·2·36,864 + 2·64·259 + 4·2·4·16·c
    #        = 147,456 + 33,152 + 512·c
    #   M(c) = b·h + K·c = 4·64 + (2·2·2·16·4 = 512)·c = 256 + 512·c
    # F = R·M:  180,608 + 512·c = 512 + 1024·c  →  c* = 180,096 / 512 = 351.75
    assert counts.knee_context(tiny_spec(), 2.0) == 351.75
    # At R = 1 each cached token's attention (512 FLOPs) already pays for its K = 512 bytes:
    # F/M stays above the ridge at any context, and the knee never stops existing.
    assert counts.knee_context(tiny_spec(), 1.0) is None
    # Llama-3.1-8B in bfloat16 at R = 181:
    #   2·32·218,103,808 + 2·4096·128,256 − 181·2·4096 = 13,958,643,712 + 1,050,673,152
    #       − 1,482,752 = 15,007,834,112
    #   181·131,072 − 4·32·32·128 = 23,724,032 − 524,288 = 23,199,744
    big = configs.config_spec("llama-3.1-8b", dtype="bfloat16")
    assert counts.knee_context(big, 181) == pytest.approx(15_007_834_112 / 23_199_744)  # 646.9
    with pytest.raises(ValueError, match="ridge_flop_per_byte must be a finite number > 0"):
        counts.knee_context(big, 0)


@pytest.mark.parametrize("name, ridge", [("tiny", 2.0), ("llama-3.1-8b", 181.0)])
def test_no_batch_crosses_the_ridge_past_the_knee_context(name, ridge):
    from viz.perf.gpu import ridge_batch

    spec = tiny_spec() if name == "tiny" else configs.config_spec(name, dtype="bfloat16")
    c = counts.knee_context(spec, ridge)
    # a ridge of R FLOP/byte: R FLOP/s over 1 byte/s; batches searched up to 2^40
    assert ridge_batch(spec, ridge, 1.0, int(c), largest=1 << 40) is not None
    assert ridge_batch(spec, ridge, 1.0, int(c) + 1, largest=1 << 40) is None


def test_smollm2_shape_matches_the_real_model(smollm):
    spec = configs.config_spec("smollm2-135m", dtype="float32")
    for field in (
        "n_layers",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "hidden_size",
        "intermediate_size",
        "vocab_size",
        "context_length",
        "n_params",
        "weight_bytes",
    ):
        assert getattr(spec, field) == getattr(smollm.spec, field), field
    # Decode at batch 1 in float32: about one multiply-add (2 FLOPs) per 4-byte weight.
    c = counts.decode_cost(smollm.spec, 64)
    assert 0.4 < c.intensity < 0.6
