"""KV-cache sizes read from the live cache tensors (the formula is `ModelSpec.kv_bytes`).

This is the one place in the project that reads the cache's internals (transformers'
`DynamicCache.layers[i].keys/values`). Taught in lesson 05.
"""

from __future__ import annotations

from typing import Any


def new_cache(model: Any) -> Any:
    """An empty KV cache for `model` (keys and values are added layer by layer as it runs)."""
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def live_bytes_per_layer(cache: Any, n_layers: int) -> list[int]:
    """Bytes held right now by each layer's key and value tensors (0 for no cache)."""
    if cache is None:
        return [0] * n_layers
    sizes = []
    for layer in cache.layers:
        k, v = getattr(layer, "keys", None), getattr(layer, "values", None)
        sizes.append(sum(t.numel() * t.element_size() for t in (k, v) if t is not None))
    return sizes

