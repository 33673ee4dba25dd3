"""Speculative decoding, measured: prompt-lookup decoding against plain greedy decode.

A batch-1 decode step reads every weight to make one token (the memory wall, lesson 08).
Speculative decoding makes one weight read serve several tokens of the *same* reply: guess a
few next tokens cheaply, then run ONE forward pass over all the guesses (like a short
prefill) and keep the longest run of guesses the model itself would have chosen, plus the
model's own next token. Greedy output is unchanged, token for token; only the number of
forward passes drops, by as many guesses as were accepted.

**Prompt-lookup decoding** (transformers: `generate(..., prompt_lookup_num_tokens=k)`) needs
no second model: its guesses are the k tokens that followed the last few generated tokens
where they appeared earlier in the prompt or the reply. It pays off when the reply copies
the prompt (a list to repeat, code to edit, a document to quote) and not when it does not.

`compare_prompt_lookup` runs `model.generate` twice on the same prompt, plain and with prompt
lookup (interleaved, after a warm-up of each), with:
- a streamer that timestamps every group of new tokens (TPOT = seconds between the first and
  the last new token ÷ tokens after the first, as in `viz.trace`), and
- a forward pre-hook that counts the model's forward passes (the prefill is the first),
so it reports tokens per decode pass, TPOT, tokens/s and whether the greedy text is identical.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Optional

import torch

from viz.load import LoadedModel
from viz.runtime import check_threads, using_threads


@dataclass
class GenerateRun:
    """One `model.generate` call, timed from the outside."""

    mode: str  # "plain" or "prompt lookup (k=10)"
    token_ids: list[int]  # the new tokens
    text: str  # the new tokens decoded
    forward_passes: int  # model forward calls, the prefill included
    first_token_s: float  # from the call until the first new token
    decode_s: float  # from the first new token until the last
    total_s: float  # the whole call

    @property
    def new_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def tokens_per_pass(self) -> Optional[float]:
        """New tokens after the first ÷ decode passes (1.0 for plain decode)."""
        if self.forward_passes < 2:
            return None
        return (self.new_tokens - 1) / (self.forward_passes - 1)

    @property
    def seconds_per_pass(self) -> Optional[float]:
        """Decode time ÷ decode passes: what one forward pass cost, guesses and all."""
        if self.forward_passes < 2:
            return None
        return self.decode_s / (self.forward_passes - 1)

    @property
    def tpot_s(self) -> Optional[float]:
        """Time per output token after the first (seconds)."""
        return self.decode_s / (self.new_tokens - 1) if self.new_tokens > 1 else None

    @property
    def tokens_per_s(self) -> Optional[float]:
        """Decode speed: 1 / TPOT."""
        return 1.0 / self.tpot_s if self.tpot_s else None


@dataclass
class LookupComparison:
    """Plain greedy decode and prompt-lookup decoding on the same prompt (medians of repeats)."""

    prompt: str
    num_lookup_tokens: int  # k: tokens guessed per lookup
    plain: GenerateRun  # the run with the median TPOT
    lookup: GenerateRun
    repeats: int

    @property
    def identical(self) -> bool:
        """Both produced exactly the same tokens (they must: the verification is greedy)."""
        return self.plain.token_ids == self.lookup.token_ids

    @property
    def speedup(self) -> float:
        """Plain TPOT ÷ prompt-lookup TPOT (> 1: prompt lookup is faster)."""
        return self.plain.tpot_s / self.lookup.tpot_s

    def __str__(self) -> str:
        lines = [f"{'':<24}{'tokens':>7}{'passes':>8}{'tokens/pass':>13}{'per pass':>12}"
                 f"{'TPOT':>11}{'speed':>16}"]
        for r in (self.plain, self.lookup):
            lines.append(f"{r.mode:<24}{r.new_tokens:>7}{r.forward_passes:>8}"
                         f"{r.tokens_per_pass:>13.2f}{r.seconds_per_pass * 1e3:>9.1f} ms"
                         f"{r.tpot_s * 1e3:>8.1f} ms{r.tokens_per_s:>9.1f} tokens/s")
        lines.append(f"same greedy tokens: {self.identical}; speed-up ×{self.speedup:.2f}")
        return "\n".join(lines)


class _Stamps:
    """A `generate` streamer: the time and size of every group of new tokens."""

    def __init__(self):
        self.prompt_seen, self.times, self.sizes = False, [], []

    def put(self, value):
        if not self.prompt_seen:  # generate first hands over the prompt itself
            self.prompt_seen = True
            return
        self.times.append(time.perf_counter())
        self.sizes.append(int(value.numel()))

    def end(self):
        pass


def _prompt_ids(lm: LoadedModel, prompt: str, chat: bool) -> torch.Tensor:
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("the prompt is empty: give the model some text")
    tok = lm.tokenizer
    if chat:
        if not getattr(tok, "chat_template", None):
            raise ValueError(f"{lm.spec.name}'s tokenizer has no chat template: use chat=False")
        ids = tok.apply_chat_template([{"role": "user", "content": prompt}],
                                      add_generation_prompt=True, return_dict=True)["input_ids"]
    else:
        ids = tok(prompt)["input_ids"]
    return torch.tensor([list(ids)], device=lm.device)


def _generate(lm: LoadedModel, ids: torch.Tensor, max_new_tokens: int,
              lookup: int) -> GenerateRun:
    passes = [0]

    def count(module, args, kwargs=None):
        passes[0] += 1

    stamps = _Stamps()
    extra = {"prompt_lookup_num_tokens": lookup} if lookup else {}
    hook = lm.model.register_forward_pre_hook(count)
    try:
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = lm.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                    max_new_tokens=max_new_tokens, do_sample=False,
                                    streamer=stamps, **extra)
            t1 = time.perf_counter()
    finally:
        hook.remove()
    new = out[0, ids.shape[1]:].tolist()
    if not stamps.times:
        raise ValueError("generate produced no new token")
    return GenerateRun(mode=f"prompt lookup (k={lookup})" if lookup else "plain",
                       token_ids=new, text=lm.tokenizer.decode(new), forward_passes=passes[0],
                       first_token_s=stamps.times[0] - t0,
                       decode_s=stamps.times[-1] - stamps.times[0], total_s=t1 - t0)


def compare_prompt_lookup(lm: LoadedModel, prompt: str, *, max_new_tokens: int = 48,
                          num_lookup_tokens: int = 10, chat: bool = True, repeats: int = 2,
                          threads: Optional[int] = None) -> LookupComparison:
    """Plain greedy `generate` vs prompt-lookup decoding on `prompt` (lesson 08).

    Runs a short warm-up of each, then `repeats` rounds of (plain, lookup), and keeps each
    mode's run with the median TPOT. Generation stops at end-of-sequence, as `generate` does;
    both modes stop at the same token because their tokens are the same.
    num_lookup_tokens: k, the guesses per lookup (transformers' default is 10).
    threads: CPU threads (None: torch's current count).
    """
    for name, value, low in (("max_new_tokens", max_new_tokens, 2),
                             ("num_lookup_tokens", num_lookup_tokens, 1), ("repeats", repeats, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}, not {value!r}")
    check_threads(threads)
    ids = _prompt_ids(lm, prompt, chat)
    with using_threads(threads):
        _generate(lm, ids, 3, 0)
        _generate(lm, ids, 3, num_lookup_tokens)
        plain, lookup = [], []
        for _ in range(repeats):
            plain.append(_generate(lm, ids, max_new_tokens, 0))
            lookup.append(_generate(lm, ids, max_new_tokens, num_lookup_tokens))
    if plain[0].new_tokens < 2:
        raise ValueError("the reply ended after one token: nothing to compare; use a prompt "
                         "that asks for a longer answer")

    def median_run(runs: list[GenerateRun]) -> GenerateRun:
        mid = statistics.median_low([r.tpot_s for r in runs])
        return next(r for r in runs if r.tpot_s == mid)

    return LookupComparison(prompt=prompt, num_lookup_tokens=num_lookup_tokens,
                            plain=median_run(plain), lookup=median_run(lookup), repeats=repeats)
