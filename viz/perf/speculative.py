"""Speculative decoding, measured: prompt-lookup decoding against plain greedy decode.

A batch-1 decode step reads every weight to make one token (the memory wall, lesson 08).
Speculative decoding makes one weight read serve several tokens of the *same* reply: guess a
few next tokens cheaply, then run ONE forward pass over all the guesses (like a short
prefill) and keep the longest run of guesses the model itself would have chosen, plus the
model's own next token. Greedy output is unchanged, token for token; only the number of
forward passes drops, by as many guesses as were accepted: a pass that accepts n guesses
makes n + 1 tokens.

**Prompt-lookup decoding** (transformers: `generate(..., prompt_lookup_num_tokens=k)`) needs
no second model: its guesses are the k tokens that followed the last few generated tokens
where they appeared earlier in the prompt or the reply. It pays off when the reply copies
the prompt (a list to repeat, code to edit, a document to quote) and not when it does not:
then the passes still check the guesses it finds (any word pair seen before), and on a CPU
a pass over 11 positions costs more than a pass over one. In transformers 5 the prefill
checks guesses too (found in the prompt itself), so the first pass can make several tokens.

`compare_prompt_lookup` runs `model.generate` twice on the same prompt, plain and with prompt
lookup (interleaved rounds, after a warm-up of each), with:
- a streamer that timestamps every group of new tokens (TPOT = seconds between the first and
  the last new token ÷ tokens after the first, as in `viz.trace`), and
- a forward pre-hook that notes, at each forward pass, how many new tokens the streamer has
  been handed so far: the difference between one pass and the next is what that pass made
  (`GenerateRun.tokens_per_pass_counts`, `prefill_tokens`, `histogram()`). This holds
  however `generate` groups tokens for the streamer (transformers 5.24 hands it one group per
  pass: the accepted guesses and the model's own token),
so it reports tokens per decode pass and their histogram, TPOT, tokens/s, the speed-up with
its spread over the rounds and whether the greedy text is identical. `LOOKUP_PROMPTS` is the
lesson's pair: a reply that copies its prompt and one with nothing to copy
(`viz.views.speculative.accepted_histogram_figure` draws their histograms).

A second, small *draft* model (transformers' `assistant_model`) is not shown: the only model
at hand offline is SmolLM2-135M itself, and there is no smaller model with its tokenizer.

Measured here (2026-12-03, `nproc` = 2, a shared CPU with a load average of 5 to 7 from other
work during the run, so the times are slow and noisy; the token counts are exact):

    python -c "import viz; from viz.perf.speculative import *
    lm = viz.load_model()
    for p in LOOKUP_PROMPTS.values():
        print(compare_prompt_lookup(lm, p, chat=True, max_new_tokens=64, repeats=3))"

    copy a list    43 tokens; plain 43 passes, TPOT 290 ms; lookup 8 passes (prefill 1,
                   decode passes by tokens made {1: 3, 6: 1, 11: 3}: 6.00 tokens/pass),
                   TPOT 146 ms; speed-up ×1.98 (1.57–2.62): prompt lookup is faster
    write a story  64 tokens; plain 64 passes, TPOT 399 ms; lookup 63 passes ({1: 61, 2: 1}:
                   1.02 tokens/pass), TPOT 643 ms (653 ms per pass, against 399 ms);
                   speed-up ×0.62 (0.55–0.98): plain decode is faster

(an earlier run the same day: ×1.91 (1.62–2.30) and ×0.65 (0.63–0.74), the same passes).
Greedy text identical in both. "Tell me a joke." replies in 16 tokens with every pass making
one: ×0.96 (0.66–1.07), too close to call — too short a reply to show either effect.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional, Sequence

import torch

from viz import checks
from viz.compat import Hooks
from viz.load import LoadedModel
from viz.runtime import using_threads
from viz.spread import Band, Spread, band


class DecodeTimes:
    """What a timed greedy generation derives from its new tokens (`token_ids`), its decode
    time (`decode_s`) and the tokens each decode pass made (`tokens_per_pass_counts`): shared
    by `GenerateRun` (prompt lookup) and `viz.perf.early_exit.DraftRun` (early exit)."""

    @property
    def new_tokens(self) -> int:
        return len(self.token_ids)

    def histogram(self) -> dict[int, int]:
        """{tokens made in one decode pass: number of passes}, smallest first (plain decode:
        {1: decode passes})."""
        return dict(sorted(Counter(self.tokens_per_pass_counts).items()))

    @property
    def tpot_s(self) -> Optional[float]:
        """Time per output token after the first (seconds)."""
        return self.decode_s / (self.new_tokens - 1) if self.new_tokens > 1 else None

    @property
    def tokens_per_s(self) -> Optional[float]:
        """Decode speed: 1 / TPOT."""
        return 1.0 / self.tpot_s if self.tpot_s else None


def median_tpot_run(runs: Sequence[DecodeTimes]) -> Any:
    """The run whose TPOT is the (low) median of `runs`': what a comparison keeps of each mode."""
    mid = statistics.median_low([r.tpot_s for r in runs])
    return next(r for r in runs if r.tpot_s == mid)


class AgainstPlain:
    """A comparison of plain greedy decoding (`plain`, every run's TPOT in `plain_tpots_s`) with
    a faster way to the same tokens (`_rival()`: its kept run and every run's TPOT), judged by
    the speed-up's spread against 1.0 in `WORDS` (slower word first). Shared by
    `LookupComparison` and `viz.perf.early_exit.EarlyExitComparison`."""

    WORDS: ClassVar[tuple[str, str]]

    def _rival(self) -> tuple[Any, list[float]]:
        raise NotImplementedError

    @property
    def identical(self) -> bool:
        """Both produced exactly the same tokens (they must: the verification is greedy)."""
        return self.plain.token_ids == self._rival()[0].token_ids

    @property
    def speedup(self) -> float:
        """Plain TPOT ÷ the rival's TPOT (> 1: the rival is faster), of the two kept runs
        (each mode's median-TPOT run). `speedup_spread` carries every run's spread."""
        return self.plain.tpot_s / self._rival()[0].tpot_s

    @property
    def speedup_spread(self) -> Spread:
        """The speed-up with its spread: the plain TPOTs' spread ÷ the rival's, worst case at
        each end (`viz.Spread`: the middle half of each mode's runs). Its median is median
        plain TPOT ÷ median rival TPOT. One round has no spread: the figure alone."""
        tpots = self._rival()[1]
        if not self.plain_tpots_s or not tpots:
            return Spread.exact(self.speedup)
        return Spread.of(self.plain_tpots_s) / Spread.of(tpots)

    @property
    def speedup_verdict(self) -> Band:
        """Which mode is faster: WORDS[1] where the speed-up's whole spread lies above 1,
        WORDS[0] where it lies below, "too close to call" (`viz.spread.TOO_CLOSE`) where it
        crosses 1.0. A `viz.Band`: `.word` is the verdict."""
        return band(self.speedup_spread, [1.0], list(self.WORDS))


@dataclass
class GenerateRun(DecodeTimes):
    """One `model.generate` call, timed from the outside."""

    mode: str  # "plain" or "prompt lookup (k=10)"
    token_ids: list[int]  # the new tokens
    text: str  # the new tokens decoded
    forward_passes: int  # model forward calls, the prefill included
    first_token_s: float  # from the call until the first new token
    decode_s: float  # from the first new token until the last
    total_s: float  # the whole call
    # tokens made by each decode pass, in order (the prefill pass not included): 1 each for
    # plain decode, 1 + the guesses accepted for prompt lookup
    tokens_per_pass_counts: list[int] = field(default_factory=list)
    prefill_tokens: int = 1  # tokens made by the first pass (> 1: lookup guesses it accepted)
    # histogram(): its values sum to forward_passes - 1, its tokens (key × value) to
    # new_tokens - prefill_tokens

    @property
    def tokens_per_pass(self) -> Optional[float]:
        """Tokens made by the decode passes ÷ decode passes (1.0 for plain decode): the mean of
        `tokens_per_pass_counts` (the prefill's tokens are not counted: its pass is a prefill)."""
        if self.forward_passes < 2:
            return None
        return (self.new_tokens - self.prefill_tokens) / (self.forward_passes - 1)

    @property
    def seconds_per_pass(self) -> Optional[float]:
        """Decode time ÷ decode passes: what one forward pass cost, guesses and all."""
        if self.forward_passes < 2:
            return None
        return self.decode_s / (self.forward_passes - 1)


# The lesson's pair of prompts: one whose reply copies the prompt, one with nothing to copy.
LOOKUP_PROMPTS = {
    "copy a list": (
        "Repeat this list exactly, once: apples, bananas, cherries, dates, "
        "elderberries, figs, grapes, honeydew melons, kiwis, lemons, mangoes, "
        "nectarines, oranges, papayas."
    ),
    "write a story": "Write a short story about a dragon who learns to bake bread.",
}
# Why each of them was chosen, in one line.
LOOKUP_WHY = {
    "copy a list": "the reply repeats the prompt's list, so the lookup's guesses are the "
    "reply's next tokens and most are accepted: prompt lookup wins",
    "write a story": "the reply is new text: the few guesses found (a word pair seen earlier) "
    "are rejected, and each pass pays for checking them: prompt lookup loses",
}


# Where the speed-up's spread lies against 1.0: which mode its runs say is faster.
SPEEDUP_WORDS = ("plain decode is faster", "prompt lookup is faster")


@dataclass
class LookupComparison(AgainstPlain):
    """Plain greedy decode and prompt-lookup decoding on the same prompt (medians of repeats)."""

    WORDS: ClassVar[tuple[str, str]] = SPEEDUP_WORDS

    prompt: str
    num_lookup_tokens: int  # k: tokens guessed per lookup
    plain: GenerateRun  # the run with the median TPOT
    lookup: GenerateRun
    repeats: int
    plain_tpots_s: list[float] = field(default_factory=list)  # every plain run's TPOT, in order
    lookup_tpots_s: list[float] = field(default_factory=list)  # every lookup run's TPOT

    def _rival(self) -> tuple[GenerateRun, list[float]]:
        return self.lookup, self.lookup_tpots_s

    def accepted_histogram(self) -> dict[int, int]:
        """{lookup guesses accepted in one decode pass: number of passes} of the lookup run
        (a pass that accepts n guesses makes n + 1 tokens; 0: every guess rejected, or none
        found)."""
        return {made - 1: n for made, n in self.lookup.histogram().items()}

    def __str__(self) -> str:
        lines = [
            f"{'':<24}{'tokens':>7}{'passes':>8}{'tokens/pass':>13}{'per pass':>12}"
            f"{'TPOT':>11}{'speed':>16}"
        ]
        for r in (self.plain, self.lookup):
            lines.append(
                f"{r.mode:<24}{r.new_tokens:>7}{r.forward_passes:>8}"
                f"{r.tokens_per_pass:>13.2f}{r.seconds_per_pass * 1e3:>9.1f} ms"
                f"{r.tpot_s * 1e3:>8.1f} ms{r.tokens_per_s:>9.1f} tokens/s"
            )
        lines.append(
            "(passes include the prefill; tokens/pass is the decode passes' alone: the "
            "tokens after the prefill's ÷ the passes after it)"
        )
        made = ", ".join(f"{k}: {v}" for k, v in self.lookup.histogram().items())
        lines.append(
            f"prompt lookup, decode passes by tokens made: {{{made}}}"
            + (
                f"; its prefill made {self.lookup.prefill_tokens}"
                if self.lookup.prefill_tokens != 1
                else ""
            )
        )
        verdict = self.speedup_verdict
        lines.append(
            f"same greedy tokens: {self.identical}; speed-up ×{self.speedup:.2f} "
            f"(all {self.repeats} rounds: ×{self.speedup_spread.text(digits=2)}): "
            f"{verdict.word}"
        )
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


def prompt_token_ids(lm: LoadedModel, prompt: str, chat: bool) -> list[int]:
    """`prompt`'s token ids, in the chat template if `chat`: what both ways of guessing
    (prompt lookup here, early exit in `viz.perf.early_exit`) decode from."""
    checks.prompt(prompt, "give the model some text, e.g. 'What is the capital of France?'")
    tok = lm.tokenizer
    if chat:
        if not getattr(tok, "chat_template", None):
            raise ValueError(f"{lm.spec.name}'s tokenizer has no chat template: use chat=False")
        return list(
            tok.apply_chat_template(
                [{"role": "user", "content": prompt}], add_generation_prompt=True, return_dict=True
            )["input_ids"]
        )
    return list(tok(prompt)["input_ids"])


def _generate(lm: LoadedModel, ids: torch.Tensor, max_new_tokens: int, lookup: int) -> GenerateRun:
    stamps = _Stamps()
    streamed = []  # at each forward call: how many new tokens the streamer had been handed

    def count(module, args, kwargs=None):
        streamed.append(sum(stamps.sizes))

    extra = {"prompt_lookup_num_tokens": lookup} if lookup else {}
    with Hooks() as hooks:  # the hook removed on exit, error or not
        hooks.before(lm.model, count)
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = lm.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                streamer=stamps,
                **extra,
            )
            t1 = time.perf_counter()
    new = out[0, ids.shape[1] :].tolist()
    if not stamps.times:
        raise ValueError("generate produced no new token")
    # Tokens made by each pass: the tokens streamed between its forward call and the next (the
    # last pass: until the end). Counted between forward calls, not per streamer call, so it
    # holds however generate groups its tokens for the streamer (one put() per pass in 5.x).
    made = [b - a for a, b in zip(streamed, streamed[1:] + [len(new)])]
    if sum(made) != len(new) or min(made) < 1:
        raise RuntimeError(
            f"the streamer saw {sum(stamps.sizes)} tokens over {len(made)} "
            f"forward passes, generate returned {len(new)}: this transformers "
            "version streams its tokens differently; tokens per pass unknown"
        )
    return GenerateRun(
        mode=f"prompt lookup (k={lookup})" if lookup else "plain",
        token_ids=new,
        text=lm.tokenizer.decode(new),
        forward_passes=len(made),
        first_token_s=stamps.times[0] - t0,
        decode_s=stamps.times[-1] - stamps.times[0],
        total_s=t1 - t0,
        tokens_per_pass_counts=made[1:],
        prefill_tokens=made[0],
    )


def compare_prompt_lookup(
    lm: LoadedModel,
    prompt: str,
    *,
    max_new_tokens: int = 48,
    num_lookup_tokens: int = 10,
    chat: bool = True,
    repeats: int = 2,
    threads: Optional[int] = None,
) -> LookupComparison:
    """Plain greedy `generate` vs prompt-lookup decoding on `prompt` (lesson 08).

    Runs a short warm-up of each, then `repeats` rounds of (plain, lookup), and keeps each
    mode's run with the median TPOT; every run's TPOT is kept too, for the speed-up's spread
    (`speedup_spread`, `speedup_verdict`: use repeats >= 3 for a spread worth reading).
    Generation stops at end-of-sequence, as `generate` does; both modes stop at the same token
    because their tokens are the same.
    num_lookup_tokens: k, the guesses per lookup (transformers' default is 10).
    threads: CPU threads (None: torch's current count).
    """
    checks.whole(
        "max_new_tokens",
        max_new_tokens,
        2,
        fix="one new token has no decode pass to compare; ask for more",
    )
    checks.whole(
        "num_lookup_tokens",
        num_lookup_tokens,
        1,
        fix="k is how many tokens each lookup guesses; 10 is transformers' default",
    )
    checks.whole(
        "repeats",
        repeats,
        1,
        fix="each round times one plain and one lookup run; 3 or more give a spread",
    )
    checks.threads(threads)
    ids = torch.tensor([prompt_token_ids(lm, prompt, chat)], device=lm.device)
    with using_threads(threads):
        _generate(lm, ids, 3, 0)
        _generate(lm, ids, 3, num_lookup_tokens)
        plain, lookup = [], []
        for _ in range(repeats):
            plain.append(_generate(lm, ids, max_new_tokens, 0))
            lookup.append(_generate(lm, ids, max_new_tokens, num_lookup_tokens))
    if plain[0].new_tokens < 2:
        raise ValueError(
            "the reply ended after one token: nothing to compare; use a prompt "
            "that asks for a longer answer"
        )
    if lookup[0].forward_passes < 2:
        raise ValueError(
            "prompt lookup made every token in its first pass: no decode pass to "
            "time; raise max_new_tokens"
        )

    return LookupComparison(
        prompt=prompt,
        num_lookup_tokens=num_lookup_tokens,
        plain=median_tpot_run(plain),
        lookup=median_tpot_run(lookup),
        repeats=repeats,
        plain_tpots_s=[r.tpot_s for r in plain],
        lookup_tpots_s=[r.tpot_s for r in lookup],
    )
