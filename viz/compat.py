"""The one place that knows transformers' API, which moves between releases.

- **a forward pass with a KV cache**: transformers 5 renamed `past_key_values` to `cache`,
  and asks for `logits_to_keep` to score only the last position; `last_logits` picks what
  this version's forward takes.
- **the cache object**: `new_cache` makes an empty `DynamicCache`; `cache_layers` and
  `live_bytes_per_layer` read its keys and values (`DynamicCache.layers[i].keys/values`) —
  the only code in viz that reads the cache's internals. Sizes by formula are
  `ModelSpec.kv_bytes`. Taught in lesson 05.
- **attention weights**: `watch_attention` switches a model to the eager attention
  implementation (the only one that computes the weights as a tensor), hooks each layer's
  attention module to keep the newest query's row of weights, and restores both afterwards.
  Taught in lesson 05.
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


class AttentionRows:
    """The attention weights of the newest query of each forward pass, per layer.

    Filled by the hooks of `watch_attention`: after a pass, `take()` returns them as one tensor
    (layers, heads, positions) — row [l, h, j] is how much head h of layer l weighed position j
    when reading the cache for the last token fed in. Tensors stay on the device.
    """

    def __init__(self, n_layers: int):
        self.n_layers = n_layers
        self._rows: list[torch.Tensor] = []

    def hook(self, module: Any, inputs: Any, output: Any) -> None:
        weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        if weights is None:
            raise ValueError("this model's attention returned no weights even with the eager "
                             "implementation: record it with attention=False")
        self._rows.append(weights[0, :, -1, :].detach().clone())  # batch 0, the last query

    def take(self) -> torch.Tensor:
        """The rows of the pass that just ran, (layers, heads, positions); then forget them."""
        if len(self._rows) != self.n_layers:
            raise RuntimeError(f"expected attention from {self.n_layers} layers, "
                               f"got {len(self._rows)}")
        rows, self._rows = torch.stack(self._rows), []
        return rows


def attention_modules(model: Any) -> list[Any]:
    """Each decoder layer's self-attention module, in layer order (`...layers.N.self_attn`)."""
    return [m for name, m in model.named_modules() if name.endswith(".self_attn")]


@contextlib.contextmanager
def watch_attention(model: Any, enabled: bool = True) -> Iterator[Optional[AttentionRows]]:
    """Record where each forward pass's newest query looked, for `viz.record(attention=True)`.

    Switches the model to transformers' eager attention (sdpa and flash attention never form
    the weights), hooks every layer's attention module, and yields an `AttentionRows`; on exit
    — error or not — removes every hook and restores the attention implementation the model
    had. Eager and sdpa compute the same function, so the greedy tokens are unchanged (tests
    check it). `enabled=False` yields None and touches nothing.
    """
    if not enabled:
        yield None
        return
    modules = attention_modules(model)
    n_layers = getattr(model.config, "num_hidden_layers", None)
    if not modules or (n_layers and len(modules) != n_layers):
        raise ValueError(f"attention=True needs a model whose {n_layers} layers each have a "
                         f"self_attn module (found {len(modules)}): record it with "
                         "attention=False")
    before = getattr(model.config, "_attn_implementation", None)
    rows = AttentionRows(len(modules))
    handles = []
    try:
        if before != "eager":
            model.set_attn_implementation("eager")
        handles = [m.register_forward_hook(rows.hook) for m in modules]
        yield rows
    finally:
        for h in handles:
            h.remove()
        if before is not None and before != "eager":
            model.set_attn_implementation(before)


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
