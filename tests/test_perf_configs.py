"""Models built from configs: the right shape, marked random-weight, every id decodes."""

import json

import pytest
import torch

import viz
from viz.perf import configs

TINY = {
    "name": "tiny-config",
    "config": {
        "model_type": "llama",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "vocab_size": 300,
        "max_position_embeddings": 128,
        "tie_word_embeddings": False,
    },
}


def test_shipped_configs():
    assert configs.config_names() == [
        "llama-3.1-8b",
        "llama-3.2-1b",
        "smollm2-1.7b",
        "smollm2-135m",
        "smollm2-360m",
    ]
    for name in configs.config_names():
        entry = configs.read_config(name)
        assert entry["source"].startswith("https://") and entry["params"] > 0
        # the published parameter count equals the count from the shape (no typo in a number)
        assert configs.config_spec(name).n_params == entry["params"]


def test_from_config_builds_the_described_model(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    lm = configs.from_config(path, device="cpu", seed=1)
    spec = lm.spec
    assert (spec.name, spec.n_layers, spec.n_kv_heads, spec.vocab_size) == (
        "tiny-config",
        2,
        2,
        300,
    )
    assert spec.random_weights is True
    assert spec.n_params == configs.config_spec(TINY, dtype="float32").n_params
    trace = viz.record(lm, "Hi there", chat=True, max_new_tokens=6, stop_at_eos=False)
    assert trace.model.random_weights is True
    assert "random weights" in trace.summary()
    assert trace.generated_text  # decodes (to "[id]" placeholders or bytes)
    # same seed, same weights
    again = configs.from_config(TINY, device="cpu", seed=1)
    assert torch.equal(again.model.lm_head.weight, lm.model.lm_head.weight)


def test_config_tokenizer_decodes_every_id():
    tok = configs.byte_tokenizer(300)
    assert len(tok) == 300
    assert tok.decode([72, 105]) == "Hi"
    assert tok.decode([299]) == "[299]" and tok.decode([259]) == "[259]"
    assert tok.decode([configs.EOS_ID]) == "<|im_end|>"
    assert tok("[299]")["input_ids"] == list(b"[299]")  # text is read byte by byte
    assert (
        tok.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True)[
            "input_ids"
        ][0]
        == configs.BOS_ID
    )
    with pytest.raises(ValueError, match="at least"):
        configs.byte_tokenizer(100)


def test_context_length_override():
    lm = configs.from_config(TINY, device="cpu", context_length=64)
    assert lm.spec.context_length == 64
    with pytest.raises(ValueError, match="at most 64"):
        viz.record(lm, "x" * 70, max_new_tokens=1)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("no-such-config", r"no config named 'no-such-config': use one of \[.*'smollm2-135m'"),
        ({"config": {"model_type": "gpt2"}}, r"only Llama-style configs \(model_type 'llama'\)"),
    ],
)
def test_bad_configs(bad, message):
    with pytest.raises(ValueError, match=message):
        configs.from_config(bad, device="cpu")
