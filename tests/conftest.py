"""Shared fixtures: tiny random-weight models (seconds, no files), the real default model, one
fake clock, and the `real_model` marker.

The tiny models are built the way a learner builds any model from its shape:
`viz.perf.from_config` with a 2-layer Llama config and the byte tokenizer (one token per UTF-8
byte, so an emoji splits across tokens as it does in the real model). Their text is
meaningless; prefill, decode, the KV cache and grouped-query attention are the real code.
"""

import pytest

import viz
from viz import perf


def tiny_config(gqa: bool = True, n_layers: int = 2, context_length: int = 512) -> dict:
    """A Llama config: 4 query heads sharing 2 KV heads (gqa=True) or 4 KV heads (plain MHA)."""
    return {"name": f"tiny-{'gqa' if gqa else 'mha'}", "source": "tests/conftest.py", "config": {
        "model_type": "llama", "vocab_size": perf.BYTE_VOCAB, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": n_layers, "num_attention_heads": 4,
        "num_key_value_heads": 2 if gqa else 4, "head_dim": 16,
        "max_position_embeddings": context_length, "tie_word_embeddings": True}}


def tiny_model(gqa: bool = True, *, seed: int = 0, device: str = "cpu", n_layers: int = 2,
               context_length: int = 512) -> viz.LoadedModel:
    """A random-weight 2-layer Llama (GQA or MHA) with the byte tokenizer, seeded."""
    return perf.from_config(tiny_config(gqa, n_layers, context_length), device=device, seed=seed)


class FakeClock:
    """A clock whose k-th reading (k = 0, 1, 2, ...) is step·k + growth·k(k+1)/2 seconds.

    growth=0: every interval is `step`. growth>0: the k-th interval is step + growth·k, so
    every recorded duration is different and exactly known.
    """

    def __init__(self, step: float = 0.0, growth: float = 0.0):
        self.step, self.growth, self.k, self.t = step, growth, 0, 0.0

    def __call__(self) -> float:
        if self.k:
            self.t += self.step + self.growth * self.k
        self.k += 1
        return self.t


@pytest.fixture(scope="session")
def fake_clock():
    """The FakeClock class: `clock = fake_clock(step=0.01)`, then `viz.record(..., clock=clock)`."""
    return FakeClock


@pytest.fixture(scope="session")
def make_tiny():
    """`make_tiny(gqa=True, seed=0, device="cpu", n_layers=2, context_length=512)`."""
    return tiny_model


@pytest.fixture(scope="session")
def tiny_gqa():
    return tiny_model(gqa=True)


@pytest.fixture(scope="session")
def tiny_mha():
    return tiny_model(gqa=False)


@pytest.fixture(params=["gqa", "mha"])
def tiny(request, tiny_gqa, tiny_mha):
    """Each test using this runs twice: grouped-query attention and plain multi-head."""
    return tiny_gqa if request.param == "gqa" else tiny_mha


@pytest.fixture(scope="session")
def smollm():
    """The real default model on the CPU. `make test` fetches it first (`make model`).

    Tests that use it are marked `real_model` automatically (see below).
    """
    return viz.load_model(device="cpu")


def pytest_collection_modifyitems(config, items):
    """Every test that uses the real model carries the `real_model` marker, so
    `pytest -m "not real_model"` runs in seconds on a machine without the model."""
    for item in items:
        if "smollm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_model)

