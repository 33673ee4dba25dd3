"""The Trace: everything one recorded reply is made of, as plain JSON-native data.

A `Trace` is what `viz.record` produces and what every view consumes. It holds no tensors
and no model, so a trace recorded on a GPU last week renders on a laptop today. It is saved
as JSON (never pickle) with a `schema_version`; `Trace.load` refuses files it cannot trust
and says why.

Units are in the field names: `_s` is seconds, `_bytes` is bytes, `_per_s` is per second.
Introduced in lesson 00 (Start here); the timing definitions are taught in lessons 03 and 04.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Optional

import numpy as np

from viz.documents import Document
from viz.spread import Spread

# Bytes per element of the dtypes a model (and its KV cache) can be stored in.
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a dtype name such as "float32" or "bfloat16"."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}: use one of {sorted(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


@dataclass
class ModelSpec:
    """The shape of a causal LM: enough to compute its weight and KV-cache sizes by hand."""

    name: str  # what was asked for: the default model's name, a hub id, a path, a config
    model_type: str  # the architecture family, e.g. "llama"
    n_layers: int  # transformer blocks
    n_heads: int  # attention (query) heads per layer
    n_kv_heads: int  # key/value heads per layer (< n_heads means grouped-query attention)
    head_dim: int  # size of one head's query/key/value vectors
    hidden_size: int  # size of the residual stream (the embedding dimension)
    intermediate_size: int  # width of each MLP's hidden layer
    vocab_size: int  # number of distinct tokens
    context_length: int  # most positions the model accepts (prompt + generated)
    n_params: int  # parameters, tied weights counted once
    weight_bytes: int  # bytes those parameters occupy in `dtype`
    dtype: str  # element type of weights and KV cache, e.g. "float32"
    random_weights: bool = False  # True: built from a config; timings real, text meaningless

    @property
    def bytes_per_element(self) -> int:
        return dtype_bytes(self.dtype)

    def kv_bytes_per_token(self, n_kv_heads: Optional[int] = None) -> int:
        """KV-cache bytes one token adds: 2 (K and V) · layers · kv_heads · head_dim · bytes.

        Pass `n_kv_heads=self.n_heads` to get what the model would need without grouped-query
        attention. Taught in lesson 05.
        """
        kv = self.n_kv_heads if n_kv_heads is None else n_kv_heads
        return 2 * self.n_layers * kv * self.head_dim * self.bytes_per_element

    def kv_bytes(self, seq_len: int, n_kv_heads: Optional[int] = None) -> int:
        """KV-cache bytes for `seq_len` tokens, by the formula (see `kv_bytes_per_token`)."""
        return self.kv_bytes_per_token(n_kv_heads) * seq_len


@dataclass
class Environment:
    """Where, when and with what a trace or any other measurement was made: the one shape of
    provenance every measurement document carries (`viz.provenance`)."""

    device: str  # "cpu", "cuda" or "mps"
    device_name: str  # e.g. the CPU model or "NVIDIA H200"
    dtype: str  # dtype the model ran in
    threads: int  # torch intra-op threads (CPU parallelism)
    torch_version: str
    transformers_version: str
    python_version: str
    platform: str
    viz_version: str
    # The CPU's instruction-set features that decide its kernels' speed (bfloat16 is fast only
    # with AVX-512 BF16 or AMX), as /proc/cpuinfo names them: `viz.runtime.cpu_features`.
    cpu_features: list[str] = field(default_factory=list)
    cpu_capability: str = ""  # the instructions torch's own kernels used, e.g. "AVX512"
    # When, ISO 8601 UTC to the second ("2026-12-06T03:40:12Z", `viz.provenance.utc_now`); "":
    # not known (a trace saved before viz recorded it).
    measured_at: str = ""
    # What produced the numbers: "measured by viz.perf.machine_peaks", a shipped reference's
    # origin, ...; "": not known.
    source: str = ""


@dataclass
class Settings:
    """The arguments `viz.record` was called with."""

    max_new_tokens: int
    chat: bool  # True: the tokenizer's chat template was applied to the prompt
    temperature: float  # 0 means greedy (always the top token)
    top_k: Optional[int]  # None: no top-k filter
    top_p: Optional[float]  # None: no nucleus filter
    seed: int  # seeds the sampler, so a sampled run can be repeated exactly
    log_top: int  # candidates kept per step
    use_cache: bool  # False: every step recomputes the whole sequence (no KV cache)
    stop_at_eos: bool  # False: always run max_new_tokens steps
    attention: bool = False  # True: each step's attention weights were recorded (Trace.attention)
    lens: bool = False  # True: each step's logit lens was recorded (Trace.lens; lesson 14)


@dataclass
class Token:
    """One prompt token and where it sits in the prompt text."""

    id: int  # index into the vocabulary
    text: str  # the token decoded alone; U+FFFD where it holds only part of a character
    piece: str  # the vocabulary's own spelling (byte-level BPE writes a space as "Ġ")
    start: int  # character span [start, end) in Trace.prompt_text; spans of the
    end: int  #   tokens of one multi-byte character overlap
    special: bool  # a control token such as <|im_start|>


@dataclass
class Step:
    """One forward pass and the token chosen from it. Step 0 is prefill; the rest are decode."""

    index: int  # 0 = prefill, 1.. = decode steps
    phase: str  # "prefill" or "decode"
    token_id: int  # the chosen token
    token_text: str  # the chosen token decoded alone
    token_special: bool  # the chosen token is a control token (e.g. end of sequence)
    logit: float  # the chosen token's raw score
    prob: float  # the chosen token's probability under the model (softmax of raw logits)
    sample_prob: float  # its probability under the distribution actually sampled (1 when greedy)
    rank: int  # its place among the model's candidates, 0 = most likely
    top_ids: list[int]  # the `log_top` most likely tokens, most likely first
    top_texts: list[str]
    top_logits: list[float]
    top_probs: list[float]  # softmax over the whole vocabulary, at temperature 1
    logsumexp: float  # log of the softmax denominator: p(token) = exp(logit - logsumexp)
    entropy_bits: float  # uncertainty of the whole next-token distribution, in bits
    seq_len: int  # tokens the forward pass could attend to (= KV-cache length after it)
    input_tokens: int  # tokens fed to this forward pass (prompt length, then 1 with a cache)
    kv_bytes_per_layer: list[int]  # read from the live cache tensors after this step
    kv_bytes_formula: int  # 2 · layers · kv_heads · head_dim · seq_len · bytes_per_element
    forward_s: float  # the forward pass alone
    sample_s: float  # turning logits into the chosen token
    emitted_at_s: float  # seconds from the start of `record` until this token was chosen
    text_end: int  # characters of Trace.output_text written once this token is appended
    # The vocabulary's spelling (as Token.piece) of tokens whose text holds only part of a
    # character, so views can show their bytes; "" where the text is whole (it is then exact).
    # Traces recorded before viz stored them have "" and [] (views then show U+FFFD).
    token_piece: str = ""  # of the chosen token
    top_pieces: list[str] = field(default_factory=list)  # of each candidate in top_ids

    @property
    def kv_bytes(self) -> int:
        """Total KV-cache bytes after this step, as read from the tensors."""
        return sum(self.kv_bytes_per_layer)


@dataclass
class Timing:
    """How long the reply took. All clocks start when `record` is called.

    - ttft_s (time to first token): start → first token chosen = tokenize + prefill forward
      + sample (+ a little bookkeeping).
    - end_to_end_s: start → last token chosen.
    On CUDA the clock is read only after `torch.cuda.synchronize()`, so it measures the device's
    work, not the launch of it.
    """

    tokenize_s: float  # text → token ids
    prefill_forward_s: float  # the one forward pass over the whole prompt
    prefill_sample_s: float  # choosing the first token from the prefill logits
    ttft_s: float  # time to first token
    end_to_end_s: float  # time to last token
    clock: str  # what measured it, e.g. "perf_counter" or "perf_counter+cuda.synchronize"


@dataclass
class Embeddings:
    """Input embedding vectors (rows of the embedding table), one per distinct token id.

    Stored compactly: each vector is scaled so its largest |value| is 127 and rounded to int8
    (error at most scale/2 per element, ~0.4% of the largest value), then base64. The scale of
    each row is kept, so `matrix()` returns the vectors in their original units.
    """

    token_ids: list[int]  # distinct ids, ascending
    dim: int  # vector length (the model's hidden size)
    scales: list[float]  # per row: value = int8 · scale
    data_b64: str  # int8, row-major, rows in the order of token_ids

    @classmethod
    def from_array(cls, token_ids: list[int], vectors: np.ndarray) -> "Embeddings":
        x = np.asarray(vectors, dtype=np.float32)
        scales = np.abs(x).max(axis=1) / 127.0
        scales[scales == 0] = 1.0
        scales = scales.astype(np.float32)
        q = np.clip(np.rint(x / scales[:, None]), -127, 127).astype(np.int8)
        return cls(
            [int(t) for t in token_ids],
            int(x.shape[1]),
            [float(np.format_float_positional(v, unique=True, trim="-")) for v in scales],
            base64.b64encode(q.tobytes()).decode("ascii"),
        )

    def matrix(self) -> np.ndarray:
        """All stored vectors as a float32 array of shape (len(token_ids), dim)."""
        q = np.frombuffer(base64.b64decode(self.data_b64), dtype=np.int8)
        q = q.reshape(len(self.token_ids), self.dim).astype(np.float32)
        return q * np.asarray(self.scales, dtype=np.float32)[:, None]

    def vectors(self, ids: list[int]) -> np.ndarray:
        """The vectors of `ids` (repeats allowed), shape (len(ids), dim)."""
        row = {t: i for i, t in enumerate(self.token_ids)}
        missing = [t for t in ids if t not in row]
        if missing:
            raise ValueError(f"no embedding stored for token ids {missing[:5]}")
        return self.matrix()[[row[t] for t in ids]]


@dataclass
class Attention:
    """Where each step looked: the attention weights of the step's newest query over every
    position it could read (the prompt and the tokens generated so far), per layer.

    Row [l, j] of step s is how much layer l's query for the token fed in at step s weighed
    position j (0 ≤ j < Step.seq_len; at step 0, the prefill, the query of the last prompt
    token). Two rows per layer and step: the mean over all query heads, and head `head` alone.
    Stored compactly: each row scaled so its largest weight is 255 and rounded to 8 bits
    (error at most scale/2, i.e. 0.2 % of the row's largest weight), all rows in one
    zlib-compressed base64 blob; the per-row scales (float32) in another. Recorded by
    `viz.record(..., attention=True)`; taught in lesson 05.
    """

    n_layers: int
    n_heads: int  # query heads the mean is taken over
    head: int  # the one head stored beside the mean
    lengths: list[int]  # per step: positions its query read (= Step.seq_len)
    scales_b64: str  # float32, one per row, in the order of the rows; zlib, base64
    weights_b64: str  # uint8, rows step by step, within a step layer by layer, mean then head

    @classmethod
    def from_rows(cls, rows: list[np.ndarray], n_heads: int, head: int) -> "Attention":
        """From one array per step, shaped (layers, 2, positions): [:, 0] the mean over heads,
        [:, 1] head `head`."""
        scales, parts = [], []
        for r in rows:
            r = np.asarray(r, dtype=np.float32)
            top = r.max(axis=-1, keepdims=True) / 255.0
            top[top == 0] = 1.0
            parts.append(np.clip(np.rint(r / top), 0, 255).astype(np.uint8).ravel())
            scales.append(top.astype(np.float32).ravel())
        pack = lambda a: base64.b64encode(zlib.compress(a.tobytes(), 9)).decode("ascii")
        return cls(
            n_layers=int(rows[0].shape[0]) if rows else 0,
            n_heads=n_heads,
            head=head,
            lengths=[int(r.shape[-1]) for r in rows],
            scales_b64=pack(np.concatenate(scales) if scales else np.zeros(0, np.float32)),
            weights_b64=pack(np.concatenate(parts) if parts else np.zeros(0, np.uint8)),
        )

    def step(self, step: int) -> np.ndarray:
        """Step `step`'s weights as float32, shaped (layers, 2, positions): [:, 0] the mean over
        heads, [:, 1] head `self.head`."""
        if not 0 <= step < len(self.lengths):
            raise ValueError(
                f"no attention stored for step {step}: this trace has steps 0 to "
                f"{len(self.lengths) - 1}"
            )
        unpack = lambda b, t: np.frombuffer(zlib.decompress(base64.b64decode(b)), dtype=t)
        q, scales = unpack(self.weights_b64, np.uint8), unpack(self.scales_b64, np.float32)
        rows_before = 2 * self.n_layers * step
        start = 2 * self.n_layers * sum(self.lengths[:step])
        n = self.lengths[step]
        block = q[start : start + 2 * self.n_layers * n].reshape(self.n_layers, 2, n)
        s = scales[rows_before : rows_before + 2 * self.n_layers].reshape(self.n_layers, 2, 1)
        return block.astype(np.float32) * s


def _pack(array: np.ndarray) -> str:
    """An array's bytes (native order), zlib-compressed and base64: `Lens`'s compact blobs."""
    return base64.b64encode(zlib.compress(np.ascontiguousarray(array).tobytes(), 9)).decode("ascii")


def _unpack(blob: str, dtype, shape: tuple) -> np.ndarray:
    return np.frombuffer(zlib.decompress(base64.b64decode(blob)), dtype=dtype).reshape(shape)


@dataclass
class Lens:
    """The logit lens of every step: what the model would have answered had it stopped after
    each of its layers.

    Row l of step s is the final norm and the output head applied to the residual stream
    after l transformer blocks, at the position the step fed last (at step 0, the prefill, the
    last prompt token): row 0 is the token's input embedding alone, row n_layers the model's
    own output (its top ids are the step's `Step.top_ids`). Per row: the `top` most likely tokens and
    their probabilities (softmax over the whole vocabulary), and the probability and rank of
    the token the step chose. Stored compactly, never as logits: int32 ids and ranks, float32
    probabilities, each array zlib-compressed and base64 (~1.5 kB per step for 31 rows of 5).
    Recorded by `viz.record(..., lens=True)`; read by `viz.lens`; taught in lesson 14.
    """

    n_layers: int  # transformer blocks; each step has n_layers + 1 rows (0 = the embedding)
    top: int  # candidates kept per row
    steps: int  # steps stored (= len(Trace.steps))
    ids_b64: str  # int32 (steps, rows, top): each row's most likely tokens, most likely first
    probs_b64: str  # float32 (steps, rows, top): their probabilities
    chosen_probs_b64: str  # float32 (steps, rows): the probability each row gives the chosen token
    chosen_ranks_b64: str  # int32 (steps, rows): its rank there (0 = the row's top-1)
    # Every token id the lens names, ascending, with its text decoded alone and (as
    # Token.piece) the vocabulary's spelling where the text holds part of a character ("").
    token_ids: list[int]
    token_texts: list[str]
    token_pieces: list[str]

    @classmethod
    def from_arrays(
        cls, ids, probs, chosen_probs, chosen_ranks, texts: Callable[[int], tuple[str, str]]
    ) -> "Lens":
        """From arrays shaped (steps, rows, top), (steps, rows, top), (steps, rows) and
        (steps, rows); `texts(token_id)` gives (text, piece) of each id they name."""
        ids = np.asarray(ids, dtype=np.int32)
        steps, rows, top = ids.shape
        named = [int(t) for t in np.unique(ids)]
        spelt = [texts(t) for t in named]
        return cls(
            n_layers=rows - 1,
            top=top,
            steps=steps,
            ids_b64=_pack(ids),
            probs_b64=_pack(np.asarray(probs, dtype=np.float32)),
            chosen_probs_b64=_pack(np.asarray(chosen_probs, dtype=np.float32)),
            chosen_ranks_b64=_pack(np.asarray(chosen_ranks, dtype=np.int32)),
            token_ids=named,
            token_texts=[t for t, _ in spelt],
            token_pieces=[p for _, p in spelt],
        )

    def token(self, token_id: int) -> tuple[str, str]:
        """(text, piece) of a token id the lens names (("", "") for one it does not)."""
        i = int(np.searchsorted(self.token_ids, token_id))
        if i < len(self.token_ids) and self.token_ids[i] == token_id:
            return self.token_texts[i], self.token_pieces[i]
        return "", ""

    @property
    def rows(self) -> int:
        """Rows per step: the embedding, then one after each block."""
        return self.n_layers + 1

    def ids(self) -> np.ndarray:
        """(steps, rows, top) token ids, each row's most likely first."""
        return _unpack(self.ids_b64, np.int32, (self.steps, self.rows, self.top))

    def probs(self) -> np.ndarray:
        """(steps, rows, top) probabilities of `ids()`."""
        return _unpack(self.probs_b64, np.float32, (self.steps, self.rows, self.top))

    def chosen_probs(self) -> np.ndarray:
        """(steps, rows): the probability each row gives the token its step chose."""
        return _unpack(self.chosen_probs_b64, np.float32, (self.steps, self.rows))

    def chosen_ranks(self) -> np.ndarray:
        """(steps, rows): that token's rank in each row (0 = the row's most likely)."""
        return _unpack(self.chosen_ranks_b64, np.int32, (self.steps, self.rows))


@dataclass
class Memory:
    """Device memory (CUDA only; None elsewhere)."""

    device_weights_bytes: Optional[int] = None  # allocated on the device before recording
    device_peak_bytes: Optional[int] = None  # peak allocated during recording
    device_end_bytes: Optional[int] = None  # allocated after the last step (weights + KV cache)


@dataclass
class Trace(Document):
    """One recorded reply: prompt, tokens, every step's candidates, KV cache and timing.

    Derived figures (properties) and their definitions, N = generated tokens:
    - ttft_s: time to first token (see `Timing`).
    - tpot_s: time per output token after the first = (end_to_end − TTFT) / (N − 1).
    - inter_token_latencies_s: gaps between consecutive tokens (TTFT excluded), N − 1 values.
    - decode_tokens_per_s: (N − 1) / (end_to_end − TTFT) = 1 / TPOT, the streaming speed.
    - prefill_tokens_per_s: prompt tokens / prefill forward time.
    """

    model: ModelSpec
    environment: Environment
    settings: Settings
    prompt: str  # as the caller gave it
    prompt_text: str  # what was tokenized (the chat template applied, when chat=True)
    prompt_tokens: list[Token]
    steps: list[Step]
    output_text: str  # the generated tokens decoded, special tokens kept
    generated_text: str  # the same without special tokens: what a user would be shown
    stop_reason: str  # "eos" or "max_new_tokens"
    timing: Timing
    embeddings: Optional[Embeddings]
    memory: Memory = field(default_factory=Memory)
    label: str = ""  # a name for comparisons, e.g. "CPU" or "H200"
    attention: Optional[Attention] = None  # recorded with viz.record(..., attention=True)
    lens: Optional[Lens] = None  # recorded with viz.record(..., lens=True)

    # Saved as JSON by `save` / `load` (see viz.documents for the rules of versions).
    KIND: ClassVar[str] = "llm-inference-trace"
    SCHEMA_VERSION: ClassVar[int] = 1
    WHAT: ClassVar[str] = "trace"
    AGAIN: ClassVar[str] = (
        'record it again with viz.record(...) or `python -m viz record "your prompt" -o FILE`'
    )

    # ---- derived figures -------------------------------------------------------------
    @property
    def prompt_ids(self) -> list[int]:
        return [t.id for t in self.prompt_tokens]

    @property
    def generated_ids(self) -> list[int]:
        return [s.token_id for s in self.steps]

    @property
    def n_generated(self) -> int:
        return len(self.steps)

    @property
    def ttft_s(self) -> float:
        return self.timing.ttft_s

    @property
    def inter_token_latencies_s(self) -> list[float]:
        t = [s.emitted_at_s for s in self.steps]
        return [b - a for a, b in zip(t, t[1:])]

    @property
    def tpot_s(self) -> Optional[float]:
        """None for a one-token reply (there is no second token to time)."""
        n = self.n_generated
        if n < 2:
            return None
        return (self.timing.end_to_end_s - self.timing.ttft_s) / (n - 1)

    @property
    def decode_step_spread(self) -> Optional[Spread]:
        """The decode steps' forward passes (sampling excluded): their median and middle half.
        None for a one-token reply. The step time lessons 04 and 07 set beside the floors."""
        if self.n_generated < 2:
            return None
        return Spread.of(s.forward_s for s in self.steps[1:])

    @property
    def decode_tokens_per_s(self) -> Optional[float]:
        tpot = self.tpot_s
        return None if not tpot else 1.0 / tpot

    @property
    def prefill_tokens_per_s(self) -> float:
        return len(self.prompt_tokens) / self.timing.prefill_forward_s

    @property
    def kv_bytes(self) -> list[int]:
        """KV-cache bytes after each step, read from the tensors."""
        return [s.kv_bytes for s in self.steps]

    def summary(self) -> str:
        """A few lines for a terminal: TTFT, TPOT, tokens/s, KV bytes and the text."""
        tpot = self.tpot_s
        tps = self.decode_tokens_per_s
        lines = [
            f"model      {self.model.name} ({self.model.n_params / 1e6:.1f} M params, "
            f"{self.environment.device}, {self.environment.dtype})"
            + (
                " — random weights: real timings, meaningless text"
                if self.model.random_weights
                else ""
            ),
            f"prompt     {len(self.prompt_tokens)} tokens; generated {self.n_generated} "
            f"({self.stop_reason})",
            f"TTFT       {self.ttft_s * 1000:.1f} ms "
            f"(prefill {self.prefill_tokens_per_s:.0f} tokens/s)",
            f"TPOT       {'n/a' if tpot is None else f'{tpot * 1000:.1f} ms'}"
            f"   decode {'n/a' if tps is None else f'{tps:.1f} tokens/s'}",
            f"KV cache   {self.steps[-1].kv_bytes:,} bytes at {self.steps[-1].seq_len} tokens "
            f"(formula {self.steps[-1].kv_bytes_formula:,})",
            f"text       {self.generated_text!r}",
        ]
        return "\n".join(lines)


SCHEMA_VERSION = Trace.SCHEMA_VERSION  # the trace layout this viz writes
