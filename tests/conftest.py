"""Shared fixtures: tiny random-weight models (seconds, no files) and the real default model."""

import pytest

import viz
from viz.tiny import tiny_model


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
    """The real default model on the CPU. `make test` fetches it first (`make model`)."""
    return viz.load_model(device="cpu")
