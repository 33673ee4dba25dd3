"""The one place that knows transformers' API, which moves between releases.

- **a forward pass with a KV cache**: transformers 5 renamed `past_key_values` to `cache`,
  and asks for `logits_to_keep` to score only the last position; `last_logits` picks what
  this version's forward takes.
- **the cache object**: `new_cache` makes an empty `DynamicCache`; `cache_layers` and
  `live_bytes_per_layer` read its keys and values (`DynamicCache.layers[i].keys/values`) —
  the only code in viz that reads the cache's internals. Sizes by formula are
  `ModelSpec.kv_bytes`. Taught in lesson 05.
- **its logs**: `quiet_transformers` silences progress bars and advice while loading.

Everything else in viz calls these instead of probing transformers itself.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Iterator, Optional

import torch


def last_logits(model: Any) -> Callable[..., torch.Tensor]:
    """`forward(input_ids, cache, attention_mask=None, position_ids=None)` → logits (B, V).

    The scores of the next token after each row's last position. Asks the model for the last
    position only (`logits_to_keep=1`), as `generate` does: scoring every prompt position
    would be wasted work. `cache=None` runs without a KV cache (everything recomputed).
    """
    params = inspect.signature(model.forward).parameters
    cache_arg = "cache" if "cache" in params else "past_key_values"
    keep_last = "logits_to_keep" in params
    extra = {"logits_to_keep": 1} if keep_last else {}

    def forward(input_ids: torch.Tensor, cache: Any, attention_mask: Optional[torch.Tensor] = None,
                position_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        masks = {} if attention_mask is None else {"attention_mask": attention_mask}
        if position_ids is not None:
            masks["position_ids"] = position_ids
        out = model(input_ids=input_ids, use_cache=cache is not None, **{cache_arg: cache},
                    **masks, **extra)
        last = out.logits[:, -1]
        # Without logits_to_keep the output scores every position; copy the last one out so
        # that keeping it does not keep the whole (batch, tokens, vocabulary) tensor alive.
        return last if keep_last else last.clone()

    return forward


def new_cache(model: Any) -> Any:
    """An empty KV cache for `model` (keys and values are added layer by layer as it runs)."""
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def cache_layers(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(keys, values) of each layer, each shaped (batch, kv_heads, tokens, head_dim)."""
    return [(layer.keys, layer.values) for layer in cache.layers]


def live_bytes_per_layer(cache: Any, n_layers: int) -> list[int]:
    """Bytes held right now by each layer's key and value tensors (0 for no cache)."""
    if cache is None:
        return [0] * n_layers
    sizes = []
    for layer in cache.layers:
        k, v = getattr(layer, "keys", None), getattr(layer, "values", None)
        sizes.append(sum(t.numel() * t.element_size() for t in (k, v) if t is not None))
    return sizes


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' progress bars and advice while loading (notebooks stay clean)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()
