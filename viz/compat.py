"""The one place that knows transformers' API, which moves between releases.

- **a forward pass with a KV cache**: transformers 5 renamed `past_key_values` to `cache`,
  and asks for `logits_to_keep` to score only the last position; `last_logits` picks what
  this version's forward takes.
- **the cache object**: `new_cache` makes an empty `DynamicCache`; `cache_layers` and
  `live_bytes_per_layer` read its keys and values (`DynamicCache.layers[i].keys/values`) —
  the only code in viz that reads the cache's internals. Sizes by formula are
  `ModelSpec.kv_bytes`. Taught in lesson 05. `static_cache` makes a `StaticCache` of a fixed
  length instead (fixed shapes for `torch.compile`; lesson 11).
- **attention weights**: `watch_attention` switches a model to the eager attention
  implementation (the only one that computes the weights as a tensor), hooks each layer's
  attention module to keep the newest query's row of weights, and restores both afterwards.
  Taught in lesson 05.
- **attention's own time**: `timed_attention` registers a wrapper of the model's attention
  function (transformers' `AttentionInterface`) that adds up the seconds spent inside it: the
  scores q·kᵀ, the softmax and the weighted sum of v — the part of a pass that grows with the
  square of the prompt. Taught in lesson 10. `labelled_attention` wraps it in a profiler scope
  instead (`viz.perf.profile`).
- **a cache of any length, cheaply**: `synthetic_cache` fills a `DynamicCache` with random keys
  and values of the model's real shapes (what a decode step reads does not depend on the
  values); `trim_cache` cuts one back to a length. Taught in lesson 10.
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


def static_cache(model: Any, length: int) -> Any:
    """A KV cache of fixed size: keys and values for `length` positions allocated at once; each
    step writes its position and a mask hides the rest, so every decode step has the same
    shapes (what `torch.compile` needs to trace a step once; `viz.perf.compiled`)."""
    from transformers import StaticCache

    return StaticCache(config=model.config, max_cache_len=int(length))


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


class AttentionClock:
    """Seconds spent inside the attention function since the last `reset` (see
    `timed_attention`); `calls` counts its calls (one per layer per pass)."""

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0

    def reset(self) -> None:
        self.seconds, self.calls = 0.0, 0


@contextlib.contextmanager
def timed_attention(model: Any) -> Iterator[AttentionClock]:
    """Time attention inside the model's own forward passes (CPU; lesson 10).

    Registers, under a name of its own, a function that calls the attention function the
    model uses now (sdpa, eager, ...) and adds the seconds it took to the yielded clock, and
    switches the model to it; on exit — error or not — the model gets its implementation
    back. What it times is the attention proper (q·kᵀ, softmax, weights · v): the projections
    before and after it are matrix products with the weights, timed as "the rest". The
    wrapper adds two clock reads per layer (well under a microsecond each).
    """
    import time

    clock = AttentionClock()

    def wrap(inner: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                clock.seconds += time.perf_counter() - start
                clock.calls += 1
        return timed

    with _wrapped_attention(model, "viz_timed", wrap):
        yield clock


@contextlib.contextmanager
def labelled_attention(model: Any, label: str = "viz::attention") -> Iterator[None]:
    """Run the model's attention function inside `torch.profiler.record_function(label)`.

    A profile then shows every op of the attention proper (q·kᵀ, softmax, weights · v, and
    the key/value repeats of grouped-query attention) under one scope, apart from the
    projections around it (`viz.perf.profile`). Same switch and restore as `timed_attention`.
    """
    from torch.profiler import record_function

    def wrap(inner: Callable[..., Any]) -> Callable[..., Any]:
        def labelled(*args, **kwargs):
            with record_function(label):
                return inner(*args, **kwargs)
        return labelled

    with _wrapped_attention(model, "viz_labelled", wrap):
        yield


@contextlib.contextmanager
def _wrapped_attention(model: Any, prefix: str,
                       wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    """Switch `model` to `wrap(its attention function)`, registered as `prefix_<impl>`, with
    the masks of the implementation it wraps; on exit, error or not, switch it back."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    before = getattr(model.config, "_attn_implementation", None)
    if before not in ALL_ATTENTION_FUNCTIONS and before != "eager":
        raise ValueError(f"cannot wrap attention implementation {before!r}: load the model "
                         "with attn_implementation='sdpa' or 'eager'")
    if before == "eager":
        module = type(attention_modules(model)[0])
        inner = getattr(__import__(module.__module__, fromlist=["eager_attention_forward"]),
                        "eager_attention_forward")
    else:
        inner = ALL_ATTENTION_FUNCTIONS[before]
    name = f"{prefix}_{before}"
    AttentionInterface.register(name, wrap(inner))
    # the same masks as the implementation it wraps (an unknown name would get none: no causal
    # mask for eager, and the wrong keys for sdpa over a cache)
    AttentionMaskInterface.register(name, ALL_MASK_ATTENTION_FUNCTIONS[before])
    try:
        model.set_attn_implementation(name)
        yield
    finally:
        if before is not None:
            model.set_attn_implementation(before)


def synthetic_cache(model: Any, tokens: int, seed: int = 0) -> Any:
    """A `DynamicCache` holding `tokens` positions of random keys and values, shaped and typed
    as `model`'s own (batch 1). A decode step over it runs the same kernels on the same bytes
    as over a cache a real prefill filled: only the values differ, and no kernel here looks at
    them (lesson 10 checks it against a real prefill)."""
    cache = new_cache(model)
    if tokens < 0:
        raise ValueError(f"tokens must be >= 0, not {tokens}")
    if tokens == 0:
        return cache
    cfg = model.config
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    p = next(model.parameters())
    gen = torch.Generator(device="cpu").manual_seed(seed)
    for i in range(cfg.num_hidden_layers):
        # one position more than asked, held as a view of the first `tokens`: the decode step
        # concatenates each layer into a new tensor of tokens + 1 positions, the size of the
        # one it frees, so the allocator reuses that memory instead of growing by a cache
        k, v = (torch.randn(1, heads, tokens + 1, head_dim, generator=gen, dtype=torch.float32)
                .to(device=p.device, dtype=p.dtype) for _ in range(2))
        # `update` would copy them (it concatenates onto an empty tensor): start the layer
        # with no positions, then hand it the tensors themselves
        cache.update(k[..., :0, :], v[..., :0, :], i)
        layer = cache.layers[i]
        layer.keys, layer.values = k[..., :tokens, :], v[..., :tokens, :]
    return cache


def cache_length(cache: Any) -> int:
    """Positions held by a `DynamicCache` (0 when empty)."""
    return int(cache.get_seq_length())


def trim_cache(cache: Any, tokens: int) -> None:
    """Cut a `DynamicCache` back to its first `tokens` positions, in place (no copy: the
    tensors become views of their first positions)."""
    extra = cache_length(cache) - tokens
    if extra < 0:
        raise ValueError(f"cannot trim a cache of {cache_length(cache)} positions to {tokens}")
    if extra:
        cache.crop(-extra)


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
