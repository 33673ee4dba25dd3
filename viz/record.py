"""Record one reply: tokenize, prefill, then the decode loop, written out by hand.

`record` does what `model.generate` does, one visible step at a time, and writes down what
happens into a `Trace`. Tests prove it gives exactly `generate`'s greedy tokens.
Introduced in lesson 00; prefill is lesson 03, the decode loop lesson 04, the cache lesson 05.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

from viz import checks
from viz.compat import last_logits, live_bytes_per_layer, new_cache, watch_attention
from viz.lens import lens_of, lens_parts, watch_layers
from viz.load import LoadedModel
from viz.runtime import Clock, memory_end, memory_start, using_threads
from viz.sampling import check_sampling, choose
from viz.steps import Timed, decode, timed_step
from viz.trace import Attention, Embeddings, Lens, Memory, Settings, Step, Timing, Token, Trace


def record(
    lm: LoadedModel,
    prompt: str,
    *,
    max_new_tokens: int = 32,
    chat: bool = False,
    temperature: float = 0.0,
    top_k: Optional[int] = None,
    top_p: Optional[float] = None,
    seed: int = 0,
    log_top: int = 20,
    use_cache: bool = True,
    stop_at_eos: bool = True,
    embeddings: bool = True,
    label: str = "",
    threads: Optional[int] = None,
    clock: Optional[Callable[[], float]] = None,
    attention: bool = False,
    attention_head: int = 0,
    lens: bool = False,
    lens_top: int = 5,
) -> Trace:
    """Generate a reply to `prompt` and record every step of it into a `Trace`.

    max_new_tokens: most tokens to generate (the reply stops earlier at end-of-sequence,
        unless stop_at_eos=False).
    chat: apply the tokenizer's chat template (an instruct model then answers as an assistant).
    temperature: 0 is greedy (always the most likely token); > 0 samples, seeded by `seed`.
    top_k / top_p: restrict sampling to the k most likely tokens / the smallest set holding
        probability top_p (see `viz.sampling`).
    log_top: candidates kept per step (ids, texts, logits, probabilities).
    use_cache: False recomputes the whole sequence at every step (lesson 05's comparison).
    embeddings: store each token's input embedding vector.
    attention: also store, for every step, where its newest query looked: the attention
        weights over every earlier position, per layer (mean over heads, and head
        `attention_head`), 8 bits each (`Trace.attention`; lesson 05). Off by default: it
        switches the model to eager attention for the recording (restored afterwards; the
        tokens are the same) and adds ~2 bytes per layer per position per step to the trace.
    lens: also store, for every step, the logit lens (`Trace.lens`; lesson 14): the final
        norm and the output head applied to the residual stream after each layer, reduced to
        the `lens_top` most likely tokens per layer with their probabilities, and the chosen
        token's probability and rank per layer (~1.5 kB per step for the course model). Off by
        default: hooks copy each layer's newest vector during the passes (a few µs per
        layer), and the lens itself is computed after the loop (~1 head pass per step).
    threads: CPU threads for the model's kernels (None: torch's current count); every timing
        depends on it, and the trace records it (`trace.environment.threads`).
    clock: a function returning seconds (default `time.perf_counter`; tests inject one).

    Timing definitions are in `viz.trace.Timing` and `viz.trace.Trace`.
    """
    _check_arguments(lm, prompt, max_new_tokens, temperature, top_k, top_p, seed, log_top)
    checks.threads(threads)
    _check_attention(lm, attention, attention_head)
    _check_lens(lm, lens, lens_top)
    settings = Settings(
        max_new_tokens=max_new_tokens,
        chat=chat,
        temperature=float(temperature),
        top_k=top_k,
        top_p=None if top_p is None else float(top_p),
        seed=seed,
        log_top=log_top,
        use_cache=use_cache,
        stop_at_eos=stop_at_eos,
        attention=bool(attention),
        lens=bool(lens),
    )
    with using_threads(threads):
        return _record(lm, prompt, settings, embeddings, label, clock, attention_head, lens_top)


@dataclass
class _Pass:
    """One forward pass as the loop saw it. Tensors stay where they are (no device sync in the
    loop); `_step` reads them out into a `Step` once the reply is done."""

    logits: torch.Tensor  # the scores of every possible next token (1-D, on the device)
    token: int  # the token chosen from them
    sample_prob: float  # its probability under the distribution actually sampled
    seq_len: int  # tokens the pass could attend to (= KV-cache length after it)
    input_tokens: int  # tokens fed to the pass (the prompt, then 1 with a cache)
    kv_bytes_per_layer: list[int]  # read from the live cache tensors after the pass
    forward_s: float  # the forward pass alone
    sample_s: float  # choosing the token from the logits
    emitted_at_s: float  # seconds from the start of `record` until the token was chosen
    attention: Optional[torch.Tensor] = None  # (layers, heads, seq_len): where the newest
    #   query looked (attention=True only)
    layers: Optional[torch.Tensor] = None  # (layers + 1, hidden): the residual stream at the
    #   newest position after each layer, the embedding first (lens=True only)


def _record(
    lm: LoadedModel,
    prompt: str,
    settings: Settings,
    embeddings: bool,
    label: str,
    clock: Optional[Callable[[], float]],
    attention_head: int = 0,
    lens_top: int = 5,
) -> Trace:
    """`record` once its arguments are checked: the loop (`_generate`), the bookkeeping after
    it (`_read_out`), then the `Trace`."""
    model = lm.model
    timer = Clock(lm.device, clock)
    memory = memory_start(lm.device)

    # With attention=True, hooks keep each pass's attention weights for the newest query;
    # with lens=True, each layer's output at the newest position (for the logit lens).
    with (
        torch.inference_mode(),
        watch_attention(model, settings.attention) as looked,
        watch_layers(model, settings.lens) as residual,
    ):
        run = _generate(lm, prompt, settings, timer, looked, residual)
        memory = memory_end(lm.device, memory)
        # Bookkeeping after the loop, so it does not slow the steps it measures.
        out = _read_out(lm, settings, run, timer.name, embeddings, attention_head, lens_top)
    return _trace(lm, prompt, settings, run, out, memory, label)


@dataclass
class _Run:
    """What the loop leaves behind, for the bookkeeping after it."""

    prompt_text: str  # the text the model read (the prompt, or the chat template around it)
    prompt_ids: list[int]
    generated: list[int]  # the reply's token ids
    passes: list[_Pass]  # one per forward pass
    tokenize_s: float  # seconds spent tokenizing the prompt
    stop: str  # "eos" or "max_new_tokens"


def _generate(
    lm: LoadedModel, prompt: str, settings: Settings, timer: Clock, looked, residual
) -> _Run:
    """The loop `model.generate` runs, written out by hand: tokenize, prefill, then one decode
    pass per token. `looked` / `residual`: the attention and lens hooks (None when off).
    Each pass is one `viz.steps.timed_step` (the decode passes come from `viz.steps.decode`):
    the clock reads before it, after the forward pass and after the choice."""
    max_new_tokens, use_cache = settings.max_new_tokens, settings.use_cache
    temperature, top_k, top_p = settings.temperature, settings.top_k, settings.top_p
    model, tok, spec = lm.model, lm.tokenizer, lm.spec
    generator = torch.Generator().manual_seed(settings.seed)  # the sampler's only randomness
    eos = set(lm.eos_token_ids) if settings.stop_at_eos else set()
    scores = last_logits(model)  # (input ids, cache) → scores of the next token, per row
    passes: list[_Pass] = []  # one per forward pass, read out into Steps after the loop

    def forward(ids: torch.Tensor, cache) -> torch.Tensor:
        return scores(ids, cache)[0]  # our one reply is row 0 of a batch of one

    def pick(logits: torch.Tensor) -> tuple[int, float]:
        # greedy or sampled: the token, and its probability under what was sampled
        return choose(logits, temperature, top_k, top_p, generator)

    start = timer.now()
    # 1. Tokenize: text -> token ids (with each token's character span in the text).
    prompt_text = _render(tok, prompt, settings.chat)
    enc = tok(prompt_text, add_special_tokens=not settings.chat)
    prompt_ids: list[int] = list(enc["input_ids"])
    input_ids = torch.tensor([prompt_ids], device=lm.device)
    t_tokenized = timer.now()
    _check_length(spec, len(prompt_ids), max_new_tokens)

    # 2. Prefill: ONE forward pass over the whole prompt. Every prompt token is processed in
    #    parallel; each layer's keys and values are written into the KV cache. The logits at
    #    the last position score every possible next token.
    # 3. Choose the first token from those logits (greedy or sampled). This is the moment
    #    the user sees something: the time to first token.
    #    (Timed from the end of tokenizing: making the empty cache is part of the prefill.)
    cache = new_cache(model) if use_cache else None
    step = timed_step(timer, lambda: forward(input_ids, cache), pick, started=t_tokenized)
    token, _ = step.token  # (the token, its probability: `_pass` keeps both)
    generated = [token]
    passes.append(
        _pass(step, start, len(prompt_ids), len(prompt_ids), cache, spec, looked, residual)
    )

    def feed() -> torch.Tensor:  # the input of the next decode pass
        if use_cache:
            # Feed only the newest token. Its query attends to the keys and values of every
            # earlier token, which the cache already holds; this pass appends its own.
            return torch.tensor([[token]], device=lm.device)
        # Without a cache the model must re-read the whole sequence every step.
        return torch.tensor([prompt_ids + generated], device=lm.device)

    # 4. Decode: one token per forward pass, until end-of-sequence or max_new_tokens.
    steps = decode(timer, forward, cache, feed, pick)  # each next(): feed, one pass, choose
    while len(generated) < max_new_tokens and token not in eos:
        step = next(steps)  # scores for the token after the newest one, and the choice
        # Append the chosen token, and go round again with it as the input.
        token, _ = step.token
        generated.append(token)
        seq_len = len(prompt_ids) + len(generated) - 1  # tokens this pass could attend to
        passes.append(
            _pass(step, start, seq_len, 1 if use_cache else seq_len, cache, spec, looked, residual)
        )

    stop = "eos" if generated[-1] in eos else "max_new_tokens"  # why the loop ended
    return _Run(
        prompt_text=prompt_text,
        prompt_ids=prompt_ids,
        generated=generated,
        passes=passes,
        tokenize_s=t_tokenized - start,
        stop=stop,
    )


def _pass(
    step: Timed, start: float, seq_len: int, input_tokens: int, cache, spec, looked, residual
) -> _Pass:
    """What the loop keeps of one timed pass (`viz.steps.Timed`): its logits and choice, the
    live cache's bytes, its times from the clock's readings, and what the hooks caught."""
    token, sample_prob = step.token
    return _Pass(
        logits=step.logits,
        token=token,
        sample_prob=sample_prob,
        seq_len=seq_len,
        input_tokens=input_tokens,
        kv_bytes_per_layer=live_bytes_per_layer(cache, spec.n_layers),
        forward_s=step.forward_s,
        sample_s=step.choose_s,
        emitted_at_s=step.chosen - start,
        attention=looked.take() if looked else None,
        layers=residual.take() if residual else None,
    )


@dataclass
class _ReadOut:
    """The bookkeeping after the loop: what the `Trace` holds besides the loop's own record."""

    timing: Timing
    embeddings: Optional[Embeddings]
    texts: _TokenTexts
    output_text: str
    steps: list[Step]
    attention: Optional[Attention]
    lens: Optional[Lens]


def _read_out(
    lm: LoadedModel,
    settings: Settings,
    run: _Run,
    clock_name: str,
    embeddings: bool,
    attention_head: int,
    lens_top: int,
) -> _ReadOut:
    """Read the loop's passes out into Steps, timings, embeddings, attention and lens."""
    model, tok, spec = lm.model, lm.tokenizer, lm.spec
    passes, generated = run.passes, run.generated
    timing = Timing(
        tokenize_s=run.tokenize_s,
        prefill_forward_s=passes[0].forward_s,
        prefill_sample_s=passes[0].sample_s,
        ttft_s=passes[0].emitted_at_s,
        end_to_end_s=passes[-1].emitted_at_s,
        clock=clock_name,
    )
    vectors = _embeddings(model, run.prompt_ids + generated) if embeddings else None

    texts = _TokenTexts(tok)
    output_text = tok.decode(generated, skip_special_tokens=False)
    k = min(settings.log_top, spec.vocab_size)
    steps = [_step(i, p, k, texts, spec, generated, output_text, tok) for i, p in enumerate(passes)]
    attention = _attention(passes, spec, attention_head) if settings.attention else None
    # The logit lens: the final norm and head applied to every layer's kept vector.
    lens = (
        lens_of(
            model,
            [p.layers for p in passes],
            generated,
            min(lens_top, spec.vocab_size),
            lambda t: (texts(t), texts.piece(t)),
        )
        if settings.lens
        else None
    )
    return _ReadOut(
        timing=timing,
        embeddings=vectors,
        texts=texts,
        output_text=output_text,
        steps=steps,
        attention=attention,
        lens=lens,
    )


def _trace(
    lm: LoadedModel,
    prompt: str,
    settings: Settings,
    run: _Run,
    out: _ReadOut,
    memory: Memory,
    label: str,
) -> Trace:
    """The recorded reply, put together."""
    tok = lm.tokenizer
    return Trace(
        model=lm.spec,
        # the thread count `threads=` set is still in effect; the time is now
        environment=lm.environment("recorded by viz.record"),
        settings=settings,
        prompt=prompt,
        prompt_text=run.prompt_text,
        prompt_tokens=_prompt_tokens(tok, run.prompt_text, run.prompt_ids, out.texts),
        steps=out.steps,
        output_text=out.output_text,
        generated_text=tok.decode(run.generated, skip_special_tokens=True),
        stop_reason=run.stop,
        timing=out.timing,
        embeddings=out.embeddings,
        memory=memory,
        label=label,
        attention=out.attention,
        lens=out.lens,
    )


# ---- checks ------------------------------------------------------------------------------
def _check_arguments(lm, prompt, max_new_tokens, temperature, top_k, top_p, seed, log_top):
    if not isinstance(lm, LoadedModel):
        raise ValueError(
            f"the first argument must be a model from viz.load_model(), not {type(lm).__name__}"
        )
    if not isinstance(prompt, str):
        raise ValueError(f"prompt must be a string, not {type(prompt).__name__}")
    checks.prompt(
        prompt,
        "give the model some text to continue, e.g. viz.record(lm, 'The capital of France is')",
    )
    checks.whole("max_new_tokens", max_new_tokens, 1)
    check_sampling(temperature, top_k, top_p)
    checks.whole("seed", seed)
    checks.whole("log_top", log_top, 1)


def _check_attention(lm, attention, head) -> None:
    checks.flag("attention", attention)
    n = lm.spec.n_heads
    checks.whole(
        "attention_head",
        head,
        0,
        n - 1,
        noun="a head number",
        fix=f"{lm.spec.name} has {n} query heads per layer",
    )


def _check_lens(lm, lens, top) -> None:
    checks.flag("lens", lens)
    checks.whole("lens_top", top, 1, fix="candidates kept per layer; 5 is the default")
    if lens:
        lens_parts(lm.model)  # a ValueError naming the fix for a model the lens cannot read


def _check_length(spec, n_prompt: int, max_new_tokens: int) -> None:
    ctx = spec.context_length
    if ctx and n_prompt > ctx:
        raise ValueError(
            f"the prompt is {n_prompt} tokens but {spec.name} reads at most {ctx}: "
            "shorten the prompt"
        )
    if ctx and n_prompt + max_new_tokens > ctx:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} does not fit: the prompt already uses "
            f"{n_prompt} of the model's {ctx} positions, so ask for at most "
            f"{ctx - n_prompt} new tokens (or shorten the prompt)"
        )


def _render(tok, prompt: str, chat: bool) -> str:
    """The text the model will read: the prompt itself, or wrapped in the chat template."""
    if not chat:
        return prompt
    if not getattr(tok, "chat_template", None):
        raise ValueError("this model's tokenizer has no chat template: use chat=False")
    return tok.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
    )


# ---- reading out each step -------------------------------------------------------------------
def _f32(values) -> list[float]:
    """Floats rounded to float32 precision, written as short decimals (smaller JSON)."""
    arr = np.asarray(values, dtype=np.float32).ravel()
    return [
        float(np.format_float_positional(v, unique=True, trim="-"))
        if math.isfinite(v)
        else float(v)
        for v in arr
    ]


class _TokenTexts:
    """Decodes token ids one at a time, remembering each (steps repeat many candidates)."""

    def __init__(self, tok):
        self.tok = tok
        self.special = set(getattr(tok, "all_special_ids", []) or [])
        self._cache: dict[int, str] = {}

    def __call__(self, token_id: int) -> str:
        if token_id not in self._cache:
            self._cache[token_id] = self.tok.decode([token_id], skip_special_tokens=False)
        return self._cache[token_id]

    def piece(self, token_id: int) -> str:
        """The vocabulary's spelling of a token whose text holds only part of a character (its
        bytes can be read from it, see viz.views.text.piece_bytes); "" for a whole one."""
        if "\N{REPLACEMENT CHARACTER}" not in self(token_id):
            return ""
        return str(self.tok.convert_ids_to_tokens(int(token_id)))


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _step(
    i: int,
    p: _Pass,
    k: int,
    texts: "_TokenTexts",
    spec,
    generated: list[int],
    output_text: str,
    tok,
) -> Step:
    """The saved form of pass `i`: its candidates, probabilities and timings."""
    logits = p.logits.float()
    lse = torch.logsumexp(logits, dim=-1)
    top = torch.topk(logits, k)
    entropy_nats = lse - (torch.exp(logits - lse) * logits).sum()  # H = log Z − Σ p·logit
    lse_f = float(lse)
    top_logits = top.values.cpu().numpy()
    top_ids = top.indices.cpu().tolist()
    logit = float(logits[p.token])
    return Step(
        index=i,
        phase="prefill" if i == 0 else "decode",
        token_id=p.token,
        token_text=texts(p.token),
        token_special=p.token in texts.special,
        logit=_f32([logit])[0],
        prob=_f32([math.exp(logit - lse_f)])[0],
        sample_prob=_f32([p.sample_prob])[0],
        rank=int((logits > logits[p.token]).sum()),
        top_ids=top_ids,
        top_texts=[texts(t) for t in top_ids],
        top_logits=_f32(top_logits),
        top_probs=_f32(np.exp(top_logits.astype(np.float64) - lse_f)),
        logsumexp=_f32([lse_f])[0],
        entropy_bits=_f32([float(entropy_nats) / math.log(2)])[0],
        seq_len=p.seq_len,
        input_tokens=p.input_tokens,
        kv_bytes_per_layer=p.kv_bytes_per_layer,
        kv_bytes_formula=spec.kv_bytes(p.seq_len),
        forward_s=p.forward_s,
        sample_s=p.sample_s,
        emitted_at_s=p.emitted_at_s,
        # Characters of the reply on screen once this token is added. A token holding part of
        # a multi-byte character adds nothing until the character is complete.
        text_end=_common_prefix(
            tok.decode(generated[: i + 1], skip_special_tokens=False), output_text
        ),
        token_piece=texts.piece(p.token),
        top_pieces=[texts.piece(t) for t in top_ids],
    )


def _attention(passes: list[_Pass], spec, head: int) -> Attention:
    """The recorded attention rows of every pass: the mean over heads and head `head`."""
    rows = []
    for p in passes:
        a = p.attention.float()  # (layers, heads, seq_len)
        rows.append(torch.stack([a.mean(dim=1), a[:, head]], dim=1).cpu().numpy())
    return Attention.from_rows(rows, n_heads=spec.n_heads, head=head)


def _prompt_tokens(tok, text: str, ids: list[int], texts: _TokenTexts) -> list[Token]:
    pieces = tok.convert_ids_to_tokens(ids)
    spans = _spans(tok, text, ids)
    return [
        Token(id=t, text=texts(t), piece=str(p), start=s, end=e, special=t in texts.special)
        for t, p, (s, e) in zip(ids, pieces, spans)
    ]


def _spans(tok, text: str, ids: list[int]) -> list[tuple[int, int]]:
    """Each token's character span in `text`, from the tokenizer's offsets when it has them."""
    if getattr(tok, "is_fast", False):
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        if list(enc["input_ids"]) == ids:
            return [(int(s), int(e)) for s, e in enc["offset_mapping"]]
        if list(enc["input_ids"]) == ids[1:]:  # the tokenizer added a BOS token in front
            return [(0, 0)] + [(int(s), int(e)) for s, e in enc["offset_mapping"]]
    # Fallback: grow the decoded text one token at a time.
    spans, prev = [], 0
    for i in range(len(ids)):
        end = _common_prefix(tok.decode(ids[: i + 1], skip_special_tokens=False), text)
        spans.append((min(prev, end), end))
        prev = end
    return spans


def _embeddings(model, ids: list[int]) -> Embeddings:
    """The input embedding vector (a row of the embedding table) of each distinct token."""
    unique = sorted(set(ids))
    table = model.get_input_embeddings()
    index = torch.tensor(unique, device=table.weight.device)
    return Embeddings.from_array(unique, table(index).float().cpu().numpy())
