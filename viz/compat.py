"""The one place that knows transformers' API, which moves between releases.

- **a forward pass with a KV cache**: transformers 5 renamed `past_key_values` to `cache`,
  and asks for `logits_to_keep` to score only the last position; `last_logits` picks what
  this version's forward takes.
- **the cache object**: `new_cache` makes an empty `DynamicCache`; `cache_layers` and
  `live_bytes_per_layer` read its keys and values (`DynamicCache.layers[i].keys/values`) —
  the only code in viz that reads the cache's internals. Sizes by formula are
  `ModelSpec.kv_bytes`. Taught in lesson 05. `static_cache` makes a `StaticCache` of a fixed
  length instead (fixed shapes for `torch.compile`; lesson 13).
- **attention weights**: `watch_attention` switches a model to the eager attention
  implementation (the only one that computes the weights as a tensor), hooks each layer's
  attention module to keep the newest query's row of weights, and restores both afterwards.
  Taught in lesson 05.
- **attention's own time**: `timed_attention` registers a wrapper of the model's attention
  function (transformers' `AttentionInterface`) that adds up the seconds spent inside it: the
  scores q·kᵀ, the softmax and the weighted sum of v — the part of a pass that grows with the
  square of the prompt. Taught in lesson 11. `labelled_attention` wraps it in a profiler scope
  instead (`viz.perf.profile`).
- **a cache of any length, cheaply**: `synthetic_cache` fills a `DynamicCache` with random keys
  and values of the model's real shapes (what a decode step reads does not depend on the
  values); `trim_cache` cuts one back to a length. Taught in lesson 11.
- **a quantized KV cache**: `quantized_cache` makes transformers' `QuantizedCache` (backends
  `quanto`: optimum-quanto's integers in groups, and `fp8`: transformers' own float8) and
  `quantized_generate_kwargs` asks `generate` for the same; `synthetic_quantized_cache` fills
  one with random keys and values through the backend's own quantization; `quantized_parts`
  reads the bytes its layers hold; `dequantize_cache` runs the dequantization a step runs;
  `trim_cache` cuts it back within its full-precision window. Taught in lesson 11.
- **its logs**: `quiet_transformers` silences progress bars and advice while loading.
- **its modules, hooked**: `Hooks` registers PyTorch forward hooks for one block and removes
  every one when it ends (after an error too); every hook in viz goes through it.
- **its classes, patched**: `Patches` replaces methods on transformers' classes and puts every
  original back (in reverse order, after an error too); the server's probes
  (`viz.serve.probes`) are its users. Models are never patched: attention is wrapped through
  transformers' own `AttentionInterface` (above).

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

    def forward(
        input_ids: torch.Tensor,
        cache: Any,
        attention_mask: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        masks = {} if attention_mask is None else {"attention_mask": attention_mask}
        if position_ids is not None:
            masks["position_ids"] = position_ids
        out = model(
            input_ids=input_ids, use_cache=cache is not None, **{cache_arg: cache}, **masks, **extra
        )
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
            raise ValueError(
                "this model's attention returned no weights even with the eager "
                "implementation: record it with attention=False"
            )
        self._rows.append(weights[0, :, -1, :].detach().clone())  # batch 0, the last query

    def take(self) -> torch.Tensor:
        """The rows of the pass that just ran, (layers, heads, positions); then forget them."""
        if len(self._rows) != self.n_layers:
            raise RuntimeError(
                f"expected attention from {self.n_layers} layers, got {len(self._rows)}"
            )
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
        raise ValueError(
            f"attention=True needs a model whose {n_layers} layers each have a "
            f"self_attn module (found {len(modules)}): record it with "
            "attention=False"
        )
    before = getattr(model.config, "_attn_implementation", None)
    rows = AttentionRows(len(modules))
    with Hooks() as hooks:  # every hook removed on exit, error or not
        try:
            if before != "eager":
                model.set_attn_implementation("eager")
            for m in modules:
                hooks.after(m, rows.hook)
            yield rows
        finally:
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
    """Time attention inside the model's own forward passes (CPU; lesson 11).

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
def _wrapped_attention(
    model: Any, prefix: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> Iterator[None]:
    """Switch `model` to `wrap(its attention function)`, registered as `prefix_<impl>`, with
    the masks of the implementation it wraps; on exit, error or not, switch it back."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    before = getattr(model.config, "_attn_implementation", None)
    if before not in ALL_ATTENTION_FUNCTIONS and before != "eager":
        raise ValueError(
            f"cannot wrap attention implementation {before!r}: load the model "
            "with attn_implementation='sdpa' or 'eager'"
        )
    if before == "eager":
        module = type(attention_modules(model)[0])
        inner = getattr(
            __import__(module.__module__, fromlist=["eager_attention_forward"]),
            "eager_attention_forward",
        )
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
    them (lesson 11 checks it against a real prefill)."""
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
        k, v = (
            torch.randn(1, heads, tokens + 1, head_dim, generator=gen, dtype=torch.float32).to(
                device=p.device, dtype=p.dtype
            )
            for _ in range(2)
        )
        # `update` would copy them (it concatenates onto an empty tensor): start the layer
        # with no positions, then hand it the tensors themselves
        cache.update(k[..., :0, :], v[..., :0, :], i)
        layer = cache.layers[i]
        layer.keys, layer.values = k[..., :tokens, :], v[..., :tokens, :]
    return cache


def cache_length(cache: Any) -> int:
    """Positions held by a `DynamicCache` or a `QuantizedCache` (0 when empty)."""
    return int(cache.get_seq_length())


def trim_cache(cache: Any, tokens: int) -> None:
    """Cut a `DynamicCache` back to its first `tokens` positions, in place (no copy: the
    tensors become views of their first positions). A `QuantizedCache` (which transformers
    cannot crop) is cut within what it holds apart from its quantized block: the quanto
    backend's full-precision window, the fp8 backend's appended positions
    (`_trim_quantized`)."""
    extra = cache_length(cache) - tokens
    if extra < 0:
        raise ValueError(f"cannot trim a cache of {cache_length(cache)} positions to {tokens}")
    if extra and is_quantized_cache(cache):
        _trim_quantized(cache, tokens)
    elif extra:
        cache.crop(-extra)


# ---- a quantized KV cache (lesson 11) -----------------------------------------------------
# transformers 5.24's `QuantizedCache` backends and the bits each accepts (its layers refuse
# others): optimum-quanto's integers in groups (`QuantoQuantizedLayer`: 2 or 4), and float8
# with one scale per tensor, in transformers itself (`Fp8QuantizedLayer`: 8).
QUANTIZED_BACKENDS = {"quanto": (4, 2), "fp8": (8,)}
QUANTO_PIN = "optimum-quanto==0.2.7"


def quantized_cache_missing(backend: str = "quanto") -> Optional[str]:
    """None where transformers' quantized cache can run here with `backend`; else what is
    missing and the fix (the fp8 backend is part of transformers and needs nothing)."""
    if backend not in QUANTIZED_BACKENDS:
        raise ValueError(
            f"unknown quantized-cache backend {backend!r}: use one of {sorted(QUANTIZED_BACKENDS)}"
        )
    if backend == "fp8":
        return None
    from transformers.utils import is_optimum_quanto_available

    if not is_optimum_quanto_available():
        return _QUANTO_MISSING
    return quanto_kernel_missing()


_QUANTO_MISSING = (
    f"the quanto backend of the quantized KV cache needs optimum-quanto, which "
    f"is not installed: run `make setup` (it installs requirements.txt), or "
    f"`pip install {QUANTO_PIN}`"
)


def quantized_cache(
    model: Any, backend: str, nbits: int, *, group_size: int = 64, residual_length: int = 128
) -> Any:
    """An empty `QuantizedCache` for `model` (batch 1), as `generate(...,
    cache_implementation="quantized")` makes it. quanto: `nbits` 4 or 2, `group_size` values
    sharing one scale and one shift, the newest `residual_length` positions kept in full
    precision; fp8: 8 bits, one scale per tensor (group_size and residual_length unused).
    Checked by `viz.perf.kv_quant.KVQuant`; transformers checks again."""
    missing = quantized_cache_missing(backend)
    if missing:
        raise ImportError(missing)
    from transformers import QuantizedCache

    return QuantizedCache(
        backend, model.config, **_quantized_options(backend, nbits, group_size, residual_length)
    )


def _quantized_options(backend: str, nbits: int, group_size: int, residual_length: int) -> dict:
    if backend == "fp8":  # per-tensor: transformers refuses the group-wise options
        return {}
    return {
        "nbits": int(nbits),
        "q_group_size": int(group_size),
        "residual_length": int(residual_length),
    }


def quantized_generate_kwargs(
    backend: str, nbits: int, *, group_size: int = 64, residual_length: int = 128
) -> dict:
    """The arguments that make `model.generate` build the same cache as `quantized_cache`."""
    missing = quantized_cache_missing(backend)
    if missing:
        raise ImportError(missing)
    return {
        "cache_implementation": "quantized",
        "cache_config": {
            "backend": backend,
            **_quantized_options(backend, nbits, group_size, residual_length),
        },
    }


def quanto_kernel_missing() -> Optional[str]:
    """None where optimum-quanto's C++ kernel is built, or can be (a C++ compiler is on the
    PATH); else what is missing and the fix. quanto compiles it (portable flags, no
    -march=native) the first time it dequantizes on a CPU, into its own folder."""
    import importlib.util
    import shutil
    from pathlib import Path

    spec = importlib.util.find_spec("optimum.quanto")
    if spec is None or not spec.submodule_search_locations:
        return _QUANTO_MISSING
    built = Path(
        list(spec.submodule_search_locations)[0],
        "library",
        "extensions",
        "cpp",
        "build",
        "quanto_cpp.so",
    )
    if built.is_file() or shutil.which("c++"):
        return None
    return (
        "optimum-quanto builds a small C++ kernel the first time it runs on a CPU, and no "
        "C++ compiler is on the PATH: install one (Debian/Ubuntu: apt-get install g++), "
        "then run `make setup` again"
    )


def build_quanto_kernel() -> float:
    """Have optimum-quanto build its C++ kernel now (unpacking its 4- and 2-bit integers): it
    does so the first time it dequantizes on a CPU, ~35 s and ~1.5 GB of compiler memory on
    a 2-core machine, once per environment. Setup runs this so that no lesson pays for it.
    Returns the seconds it took (about 0 once built)."""
    import time

    missing = quantized_cache_missing("quanto")
    if missing:
        raise ImportError(missing)
    from transformers import LlamaConfig, QuantizedCache

    config = LlamaConfig(
        vocab_size=16,
        hidden_size=64,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=64,
    )
    layer = QuantizedCache("quanto", config, nbits=4).layers[0]
    start = time.perf_counter()
    with torch.inference_mode():
        x = torch.zeros(1, 1, 2, 64)
        layer.update(x, x)  # quantizes
        layer.update(x[..., :1, :], x[..., :1, :])  # dequantizes: the first call builds
    return time.perf_counter() - start


def is_quantized_cache(cache: Any) -> bool:
    """Whether `cache` is a `QuantizedCache` (its layers hold quantized keys and values)."""
    layers = getattr(cache, "layers", None) or []
    return bool(layers) and hasattr(layers[0], "_quantized_keys")


def synthetic_quantized_cache(
    model: Any,
    tokens: int,
    backend: str,
    nbits: int,
    *,
    group_size: int = 64,
    residual_length: int = 128,
    seed: int = 0,
) -> Any:
    """A `QuantizedCache` holding `tokens` positions of random keys and values (batch 1).

    Each layer gets its random keys and values through the layer's own `update`, the call a
    prefill makes: the backend quantizes them all at once (quanto: every position into the
    quantized block, the full-precision window empty, as after a real prefill; fp8: the scale
    set from them). So the layout, the bytes and the kernels a decode step runs are the real
    ones; only the values are random, and dequantizing does the same arithmetic on any
    values. What random values cannot stand for is the *error* quantization makes: measure
    agreement on a real prompt (`viz.perf.kv_quant_agreement`). One layer's random tensors
    exist at a time."""
    if tokens < 1:
        raise ValueError(
            f"a quantized cache needs tokens >= 1 (an empty one has nothing to "
            f"quantize), not {tokens}"
        )
    cache = quantized_cache(
        model, backend, nbits, group_size=group_size, residual_length=residual_length
    )
    cfg = model.config
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    p = next(model.parameters())
    gen = torch.Generator(device="cpu").manual_seed(seed)
    for i, layer in enumerate(cache.layers):
        k, v = (
            torch.randn(1, heads, tokens, head_dim, generator=gen, dtype=torch.float32).to(
                device=p.device, dtype=p.dtype
            )
            for _ in range(2)
        )
        layer.update(k, v)
        del k, v
        # the random tensors and the backend's temporaries, freed, go back to the system now:
        # left to the allocator, 30 layers' worth of them stay resident (~1 GB at 8,191)
        trim_heap()
    return cache


def trim_heap() -> None:
    """glibc's `malloc_trim(0)`: hand every free page of the heap back to the system (a
    fraction of a millisecond; no garbage collection, unlike `viz.runtime.release_memory`).
    Nothing elsewhere than Linux."""
    import ctypes
    import platform

    if platform.system() != "Linux":
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def quantized_parts(cache: Any) -> list[dict[str, int]]:
    """Bytes each layer of a `QuantizedCache` holds, keys and values together, read from its
    tensors: "values" the quantized numbers as stored (quanto: integers packed into uint8;
    fp8: one byte each), "scales" their scales and shifts (quanto: one of each per group;
    fp8: one scale per tensor), "window" the positions held in full precision (quanto's
    residual window), and "positions" the positions held in all."""
    out = []
    for layer in cache.layers:
        values = scales = 0
        for q in (layer._quantized_keys, layer._quantized_values):
            if q is None:
                continue
            if isinstance(q, tuple):  # fp8: (float8 tensor, scale)
                data, meta = q[0], [q[1]]
            else:  # quanto: a WeightQBitsTensor over a PackedTensor of uint8
                packed = q._data
                data, meta = getattr(packed, "_data", packed), [q._scale, q._shift]
            values += data.numel() * data.element_size()
            scales += sum(t.numel() * t.element_size() for t in meta)
        window = sum(
            t.numel() * t.element_size()
            for t in (layer.keys, layer.values)
            if t is not None and t.dim() == 4
        )
        out.append(
            {
                "values": values,
                "scales": scales,
                "window": window,
                "positions": int(layer.get_seq_length()),
            }
        )
    return out


def dequantize_cache(cache: Any) -> None:
    """Dequantize every layer's keys and values once, as each decode step does before
    attention (`QuantizedLayer.update` / `Fp8QuantizedLayer.update`), and drop the result:
    for timing that work alone."""
    for layer in cache.layers:
        for q in (layer._quantized_keys, layer._quantized_values):
            layer._dequantize(q)


def _trim_quantized(cache: Any, tokens: int) -> None:
    """Cut a `QuantizedCache` back to `tokens` positions, in place. quanto: only positions of
    the full-precision window can go (the quantized block is one tensor quantized at once);
    fp8: positions appended one by one, each quantized with the frozen scale, are cut off the
    float8 tensors."""
    for layer in cache.layers:
        held = int(layer.get_seq_length())
        extra = held - tokens
        if extra <= 0:
            continue
        if isinstance(layer._quantized_keys, tuple):  # fp8
            (qk, ks), (qv, vs) = layer._quantized_keys, layer._quantized_values
            layer._quantized_keys, layer._quantized_values = (
                (qk[..., :tokens, :], ks),
                (qv[..., :tokens, :], vs),
            )
        else:
            window = layer.keys.shape[-2] if layer.keys.dim() == 4 else 0
            if extra > window:
                raise ValueError(
                    f"cannot cut a quantized cache back to {tokens} positions: only its "
                    f"{window} newest positions are held in full precision, the other "
                    f"{held - window} were quantized together (cut it back before the window "
                    "fills, or make a new cache)"
                )
            keep = window - extra
            layer.keys, layer.values = layer.keys[..., :keep, :], layer.values[..., :keep, :]
        layer.cumulative_length = tokens


class Hooks:
    """PyTorch hooks on a model's modules for one block, every one removed when it ends:

        with Hooks() as hooks:
            hooks.after(layer, keep_output)   # register_forward_hook
            hooks.before(model, count_calls)  # register_forward_pre_hook
            model(...)

    The one way viz hooks a module (as TransformerLens' `hooks()`): an error inside the block
    never leaves a hook behind to poison the next recording. Users: `watch_attention`,
    `viz.lens.watch_layers`, `viz.perf.profile.profile_scopes`, `viz.perf.speculative`."""

    def __init__(self):
        self._handles: list[Any] = []

    def before(self, module: Any, fn: Callable) -> None:
        """`fn(module, args)` before each forward call of `module`."""
        self._handles.append(module.register_forward_pre_hook(fn))

    def after(self, module: Any, fn: Callable, *, always_call: bool = False) -> None:
        """`fn(module, args, output)` after each forward call of `module` (`always_call`:
        after one that raised too)."""
        self._handles.append(module.register_forward_hook(fn, always_call=always_call))

    def remove(self) -> None:
        while self._handles:
            self._handles.pop().remove()

    def __len__(self) -> int:
        return len(self._handles)

    def __enter__(self) -> "Hooks":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


_ABSENT = object()  # an attribute the class did not define itself (it inherited it)


class Patches:
    """Methods replaced on classes, each original recorded, all put back by `restore()`:

        patches = Patches()
        try:
            patches.set(SomeClass, "method", wrapper)   # wrapper calls the original itself
            ...
        finally:
            patches.restore()

    (or `with Patches() as patches:`). `restore` goes in reverse order, so a name patched twice
    ends as it began; a name the class only inherited is deleted again, not copied onto it;
    what the class held (a staticmethod, a classmethod) is put back as it was."""

    def __init__(self):
        self._originals: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        if not hasattr(owner, name):
            raise AttributeError(
                f"{getattr(owner, '__name__', owner)!r} has no {name!r} to "
                "patch: transformers' internals moved"
            )
        self._originals.append((owner, name, vars(owner).get(name, _ABSENT)))
        setattr(owner, name, value)

    def restore(self) -> None:
        while self._originals:
            owner, name, value = self._originals.pop()
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)

    def __len__(self) -> int:
        return len(self._originals)

    def __enter__(self) -> "Patches":
        return self

    def __exit__(self, *exc) -> None:
        self.restore()


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
