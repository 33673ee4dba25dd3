"""How much arithmetic and how many bytes one forward pass needs, from the model's shape alone.

For a Llama-style model (the shape in `viz.ModelSpec`): h = hidden size, L = layers,
n_h = attention heads, n_kv = key/value heads, d = head dim, i = MLP width, V = vocabulary,
b = bytes per element, B = batch size. Taught in lessons 04 (decode) and 06 (roofline).

**Parameters** per layer that take part in matrix products ("matmul parameters"):

    P_layer = h·(n_h·d)       query projection
            + 2·h·(n_kv·d)    key and value projections
            + (n_h·d)·h       output projection
            + 3·h·i           MLP: gate, up and down

Every layer also has 2 norm vectors of h; the model has one final norm (h), the embedding
table (V·h) and the output head (V·h, the same tensor as the embedding when tied).

**FLOPs** of one forward pass that feeds `n` new tokens per request and leaves `c` tokens in
the sequence (so `c − n` were already in the KV cache):

    matmul    = 2 · B · n · L · P_layer     a multiply and an add per parameter per token
              + 2 · B · h · V               the output head, for the last position only
                                            (`viz.record` asks for `logits_to_keep=1`)
    attention = 4 · B · L · n_h · d · S     scores q·k and the weighted sum of v, where
                S = Σ_{t=c−n+1..c} t        the query at position t sees t keys (causal)

Norms, rotary embeddings, softmax and activations are left out (well under 1% here), and so
is work a kernel does on masked-out positions: these are the *useful* FLOPs, the convention
behind MFU.

**Bytes** moved to and from memory, a lower bound:

    weights = b · (L·(P_layer + 2h) + h + V·h)   every layer's weights, the final norm and the
                                                 output head (V·h), each read whole once per
                                                 pass
            + b · B · n · h                      the embedding table: only the rows of the
                                                 B·n new tokens are read
    kv      = B · 2 · L · n_kv · d · b · c       the cached keys and values read, and the
                                                 new ones written: each of the c tokens once

Tied or untied, the count is the same. The output head multiplies the last hidden state by
all V rows, so it is read whole; the embedding table is only looked up, one row per new token.
A tied head *is* the embedding table (read whole as the head, its looked-up rows counted once
more); an untied model has a second V·h table that a pass never reads whole. So for an untied
model (Llama-3.1-8B) the weights a step reads are fewer than its parameters' bytes
(`ModelSpec.weight_bytes`, what the weights *occupy*): b·V·h fewer, 1.05 GB in bfloat16.

Activations, logits and attention re-reading its inputs are not counted in `PassCost.bytes`:
the real traffic is at least this. Arithmetic intensity = FLOPs / bytes.
`knee_context` solves these counts for the context past which no batch of decode steps
reaches a machine's ridge (lesson 06).

**Activation bytes** (`activation_bytes`, lesson 05), an estimate kept apart from
`PassCost.bytes`: the loads and stores *between* operations, counted as if every operation
read its inputs from memory and wrote its output back (no fusion), with a = bytes per
element, q = n_h·d, i = MLP width and c the tokens each new token attends to:

    per layer, per request:
      2 norms                 2 · (read n·h + write n·h)                =  4·n·h
      q, k, v projections     read 3·n·h, write n·q (k, v go to the cache: counted in kv)
      attention scores q·kᵀ   read n·q, write n_h·n·c   (if `scores`)
      softmax                 read and write n_h·n·c    (if `scores`)
      scores · v              read n_h·n·c (if `scores`), write n·q
      output projection       read n·q, write n·h
      2 residual adds         2 · (read 2·n·h + write n·h)              =  6·n·h
      MLP gate and up         read 2·n·h, write 2·n·i
      silu(gate) × up         read 2·n·i, write n·i
      MLP down                read n·i, write n·h
    = a·B·(17·n·h + 4·n·q + 6·n·i + 4·n_h·n·c)        (the n_h·n·c term only with `scores`)
    plus, once per pass: the embedding rows written (n·h), the final norm (2·n·h), the output
    head reading the last position (h) and writing its logits (V): a·B·(3·n·h + h + V).

`scores=False` is a fused attention kernel (PyTorch's scaled_dot_product_attention, which
the default model uses) that keeps the n_h·n·c attention scores in fast on-chip memory. Either
way it is an upper estimate of what reaches main memory: a tensor smaller than the processor's
cache (tens of MB on a server CPU) may be read back from the cache instead. An independent
analytic model, LLM-Viewer (`model_analyzer.py`, without flash attention), counts 146 MB in
the 30 layers of a 64-token prefill of SmolLM2-135M in float32 (~148 MB with its output head)
where this count gives 181 MB: it counts a residual add as reading one input (not two), the
MLP's gating at the model's width h (not the MLP's width i), and the queries read by q·kᵀ as
KV-cache traffic (tests/test_perf_claims.py reconciles the two exactly).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from viz import checks
from viz.trace import ModelSpec


def layer_matmul_params(spec: ModelSpec) -> int:
    """P_layer: the parameters of one layer that take part in matrix products."""
    h, i = spec.hidden_size, spec.intermediate_size
    q_width, kv_width = spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim
    return h * q_width + 2 * h * kv_width + q_width * h + 3 * h * i


def param_count(spec: ModelSpec, tied: bool) -> int:
    """Parameters of a Llama-style model of this shape (no biases), tied or untied head."""
    h = spec.hidden_size
    head = 0 if tied else spec.vocab_size * h
    return spec.n_layers * (layer_matmul_params(spec) + 2 * h) + h + spec.vocab_size * h + head


def tied_embeddings(spec: ModelSpec) -> bool:
    """Whether the output head shares the embedding table: the count closer to n_params."""
    return abs(param_count(spec, True) - spec.n_params) <= abs(
        param_count(spec, False) - spec.n_params
    )


@dataclass
class PassCost:
    """FLOPs and bytes of one forward pass, from the formulas in this module's docstring."""

    phase: str  # "prefill" or "decode"
    batch: int  # requests processed together (B)
    input_tokens: int  # new tokens per request fed to the pass (n)
    context_tokens: int  # tokens per request in the sequence after it (c)
    matmul_flops: int  # 2·B·n·L·P_layer + 2·B·h·V
    attention_flops: int  # 4·B·L·n_h·d·Σ t
    weight_bytes: int  # layers, final norm and output head once, + new tokens' embedding rows
    kv_bytes: int  # every cached key and value once (c tokens per request)

    @property
    def flops(self) -> int:
        return self.matmul_flops + self.attention_flops

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.kv_bytes

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved."""
        return self.flops / self.bytes


def forward_cost(
    spec: ModelSpec, input_tokens: int, context_tokens: int, batch: int = 1, phase: str = ""
) -> PassCost:
    """The cost of a pass feeding `input_tokens` per request with `context_tokens` after it."""
    n, c, B = int(input_tokens), int(context_tokens), int(batch)
    if n < 1 or c < n or B < 1:
        raise ValueError(
            f"need 1 <= input_tokens <= context_tokens and batch >= 1 (got {n}, {c}, {B})"
        )
    h, L, b = spec.hidden_size, spec.n_layers, spec.bytes_per_element
    past = c - n
    keys_seen = (c * (c + 1) - past * (past + 1)) // 2  # Σ t for t = past+1 .. c
    matmul = 2 * B * n * L * layer_matmul_params(spec) + 2 * B * h * spec.vocab_size
    attention = 4 * B * L * spec.n_heads * spec.head_dim * keys_seen
    # the layers, the final norm and the output head whole; of the embedding table (the head
    # itself when tied, a second table when not) only the rows of the B·n new tokens
    weights = (
        b * (L * (layer_matmul_params(spec) + 2 * h) + h + spec.vocab_size * h) + b * B * n * h
    )
    return PassCost(
        phase=phase or ("decode" if n == 1 and c > 1 else "prefill"),
        batch=B,
        input_tokens=n,
        context_tokens=c,
        matmul_flops=matmul,
        attention_flops=attention,
        weight_bytes=weights,
        kv_bytes=B * spec.kv_bytes(c),
    )


def prefill_cost(spec: ModelSpec, prompt_tokens: int, batch: int = 1) -> PassCost:
    """Prefill: the whole prompt (n = c = prompt_tokens) in one pass."""
    return forward_cost(spec, prompt_tokens, prompt_tokens, batch, "prefill")


def decode_cost(spec: ModelSpec, context_tokens: int, batch: int = 1) -> PassCost:
    """One decode step: one new token per request, `context_tokens` in the sequence after it."""
    return forward_cost(spec, 1, context_tokens, batch, "decode")


def knee_context(spec: ModelSpec, ridge_flop_per_byte: float) -> Optional[float]:
    """The context past which no batch's decode step reaches the ridge (lesson 06).

    A decode step at batch B with c tokens per request in the sequence (`decode_cost`: n = 1)
    counts, from this module's formulas, with W = L·(P_layer + 2h) + h + V·h and
    K = 2·L·n_kv·d·b (KV bytes per token):

        FLOPs = B · F(c),          F(c) = 2·L·P_layer + 2·h·V + 4·L·n_h·d·c
        bytes = b·W + B · M(c),    M(c) = b·h + K·c

    Its intensity B·F / (b·W + B·M) grows with B (the weights are shared, b·W is paid once)
    toward F(c) / M(c), the intensity of one request's own work over its own bytes. A batch
    reaches the ridge R only if F(c) / M(c) > R. Each cached token adds 4·L·n_h·d FLOPs for K
    bytes, 2·n_h / (n_kv·b) FLOP per byte (4 for Llama-3.1-8B in bfloat16), so where that is
    below R, F/M falls toward it as c grows, and F(c) = R·M(c) solves to

        c* = (2·L·P_layer + 2·h·V − R·b·h) / (R·K − 4·L·n_h·d)

    Below c* some batch crosses (`viz.perf.ridge_batch` finds it; it grows without bound as c
    nears c*); past c* none does: the knee stops existing. Returns c* in tokens in the sequence
    at the step, the new one included (c* − 1 cached), as `decode_cost` counts; or None when
    R·K ≤ 4·L·n_h·d (the attention alone is above the ridge: a batch crosses at any context).
    Counted, so like the counts it leaves out the cache's copies (`DynamicCache`'s
    concatenation), which make a long-context step read more still.
    """
    ridge = checks.positive(
        "ridge_flop_per_byte", float(ridge_flop_per_byte), noun="a finite number"
    )  # float(): a numpy scalar is welcome
    h, L, b = spec.hidden_size, spec.n_layers, spec.bytes_per_element
    per_token_flops = 4 * L * spec.n_heads * spec.head_dim  # attention FLOPs per cached token
    per_token_bytes = 2 * L * spec.n_kv_heads * spec.head_dim * b  # K
    below = ridge * per_token_bytes - per_token_flops
    if below <= 0:
        return None
    fixed_flops = 2 * L * layer_matmul_params(spec) + 2 * h * spec.vocab_size
    return max(0.0, (fixed_flops - ridge * b * h) / below)


def activation_bytes(
    spec: ModelSpec, input_tokens: int, context_tokens: int, batch: int = 1, *, scores: bool = True
) -> int:
    """Bytes of activations read and written by one forward pass (estimate; lesson 05).

    The formula in this module's docstring: every operation reads its inputs and writes its
    output once (no fusion); `scores=True` also counts the attention score matrices (n_h × n
    × c per layer) written, softmaxed and read back, as a kernel without fusion does; False
    leaves them on chip, as a fused attention kernel does. Not part of `PassCost.bytes`.
    """
    n, c, B = int(input_tokens), int(context_tokens), int(batch)
    if n < 1 or c < n or B < 1:
        raise ValueError(
            f"need 1 <= input_tokens <= context_tokens and batch >= 1 (got {n}, {c}, {B})"
        )
    h, i, q = spec.hidden_size, spec.intermediate_size, spec.n_heads * spec.head_dim
    per_layer = 17 * n * h + 4 * n * q + 6 * n * i + (4 * spec.n_heads * n * c if scores else 0)
    once = 3 * n * h + h + spec.vocab_size
    return spec.bytes_per_element * B * (spec.n_layers * per_layer + once)
