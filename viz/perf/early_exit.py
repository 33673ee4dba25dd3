"""Early-exit self-speculative decoding, measured: the model's own first layers draft.

Speculative decoding (lesson 13) needs cheap guesses. A small draft model with the same
vocabulary is the usual source; the course has none, but the model itself holds one: its
first L layers, followed by its final norm and output head, form a shallower model that
scores every token (LayerSkip, Elhoushi et al. 2024; transformers' `generate(...,
assistant_early_exit=L)`). Its guess is exactly the **logit lens** at layer L (`viz.lens`), so
the lens of a greedy reply says, before anything is timed, which guesses the full model will
accept (`lens_drafts`).

One round of `early_exit_generate` (written out in `_generate`):

1. **draft** k tokens one at a time with the first L layers only (`exit_after`), each pass
   reading L of the n_layers blocks and the head;
2. **verify** them with ONE full pass over the newest token and the k drafts (a short prefill:
   the full model's own choice after every position);
3. **keep** the drafts up to the first one the full model disagrees with, plus the full
   model's own token there: a pass makes 1 to k + 1 tokens, and greedy output is token for
   token plain decoding's;
4. **trim** both caches back to the kept tokens.

**Two caches, one truth.** The full model's cache holds every layer's keys and values of the
reply so far; the draft has its own cache of layers 0..L-1, started as a copy of the full
model's first L layers after the prefill (the same layers computed the same values), then
extended by the draft passes. After a round both are cut back to the kept tokens: the full
cache keeps the verify pass's entries for the newest token and the accepted drafts; the draft
cache keeps its own entries for them (the same values again, computed one token at a time),
and reads next round the kept tokens it has not seen (the full model's own token, and the
last draft when every draft was accepted). Nothing the full model uses ever comes from a
rejected draft. LayerSkip instead shares one cache and lets the verify pass skip the draft's
layers for the drafted tokens; here the verify pass recomputes them (compute, not bytes: the
weights are read once per pass either way).

**What it costs.** A draft pass reads L blocks *and* the output head, whose 49,152 × 576
weights are a fifth of the course model's bytes; a pass that accepts n drafts makes n + 1
tokens for one full pass and k draft passes. It pays when the drafts are right often enough
to cover the draft passes, which needs a model whose early layers already agree with its
last — the case LayerSkip trains for; the course model was not trained so, and its lens
agrees late.

`compare_early_exit` times plain greedy decoding (the same loop, no drafts) and early exit on
the same prompt in interleaved rounds, after a warm-up of each, and reports tokens per full
pass, the acceptance histogram, the speed-up with its spread (`viz.Spread`) and whether the
greedy tokens are identical. `viz.views.accepted_histogram_figure` draws it beside prompt
lookup; `viz.views.early_exit_figure` draws the lens's predictions against L and k.

Measured here (2026-12-06, `nproc` = 2, a shared CPU with other work running; see the
report of issue 32 for the command and the figures).
"""

from __future__ import annotations

import contextlib
import inspect
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Optional, Sequence

import torch

from viz import checks
from viz.compat import cache_layers, cache_length, last_logits, new_cache, trim_cache
from viz.load import LoadedModel
from viz.perf.speculative import AgainstPlain, DecodeTimes, median_tpot_run, prompt_token_ids
from viz.runtime import Clock, using_threads
from viz.spread import Spread
from viz.trace import Trace

# Where the speed-up's spread lies against 1.0: which mode its runs say is faster.
EARLY_EXIT_WORDS = ("plain decode is faster", "early exit is faster")


# ---- checks ------------------------------------------------------------------------------
def check_early_exit(n_layers: int, exit_layer: Any, draft_tokens: Any) -> None:
    """A ValueError naming the fix unless 1 <= exit_layer <= n_layers - 1 and draft_tokens >= 1
    (whole numbers)."""
    checks.whole(
        "exit_layer",
        exit_layer,
        1,
        n_layers - 1,
        noun="a layer number",
        fix=f"the draft runs that many of the model's {n_layers} layers, then its "
        f"final norm and head; {n_layers} would be the full model",
    )
    checks.whole(
        "draft_tokens",
        draft_tokens,
        1,
        fix="k, the tokens drafted before each full pass checks them; try 4",
    )


# ---- the draft model: the full model stopped after L layers -------------------------------
@contextlib.contextmanager
def exit_after(model: Any, layers: int) -> Iterator[None]:
    """Run the block with `model` stopping after its first `layers` blocks: its forward then
    applies the final norm and the head to the residual stream after block `layers` (what
    transformers' early-exit assistant does: a Llama-style model loops over
    `layers[:config.num_hidden_layers]`). The depth is restored on exit, error or not."""
    base = getattr(model, getattr(model, "base_model_prefix", "model"), model)
    config = base.config
    before = config.num_hidden_layers
    config.num_hidden_layers = layers
    try:
        yield
    finally:
        config.num_hidden_layers = before


def _all_logits(model: Any) -> Callable[[torch.Tensor, Any], torch.Tensor]:
    """`forward(input_ids, cache)` → logits (positions fed, V): the scores after EVERY position
    fed (the verify pass needs one choice per draft), with the KV cache."""
    params = inspect.signature(model.forward).parameters
    cache_arg = "cache" if "cache" in params else "past_key_values"

    def forward(input_ids: torch.Tensor, cache: Any) -> torch.Tensor:
        keep = {"logits_to_keep": input_ids.shape[1]} if "logits_to_keep" in params else {}
        out = model(input_ids=input_ids, use_cache=True, **{cache_arg: cache}, **keep)
        return out.logits[0, -input_ids.shape[1] :]

    return forward


def _first_layers(model: Any, full: Any, layers: int) -> Any:
    """A new cache holding a copy of the first `layers` layers of `full` (the draft's cache)."""
    draft = new_cache(model)
    for i, (keys, values) in enumerate(cache_layers(full)[:layers]):
        draft.update(keys, values, i)  # an empty layer takes a copy of them
    return draft


# ---- one generation ----------------------------------------------------------------------
@dataclass
class DraftPass:
    """One round of early exit: k draft passes, then one full pass (plain decoding: the full
    pass alone, drafted = 0)."""

    drafted: int  # tokens the draft proposed (k; fewer next to max_new_tokens)
    made: int  # tokens the round added: the drafts accepted + the full model's own one
    draft_s: float  # the draft passes
    verify_s: float  # the full pass over the newest token and the drafts, and the trimming

    @property
    def accepted(self) -> int:
        """Drafts accepted (made - 1; a stop at end-of-sequence can cut it short)."""
        return self.made - 1


@dataclass
class DraftRun(DecodeTimes):
    """One greedy generation, plain or with early-exit drafts, timed from the outside."""

    mode: str  # "plain" or "early exit (L=24, k=4)"
    exit_layer: int  # L: the draft's layers (0 for plain decoding)
    draft_tokens: int  # k: drafts per round (0 for plain decoding)
    token_ids: list[int]  # the new tokens
    text: str  # the new tokens decoded
    passes: list[DraftPass]  # one per round after the prefill, in order
    first_token_s: float  # from the start until the prefill's token was chosen
    decode_s: float  # from the first new token until the last
    total_s: float  # the whole call

    @property
    def full_passes(self) -> int:
        """Passes of the full model: the prefill and one per round."""
        return 1 + len(self.passes)

    @property
    def draft_passes(self) -> int:
        return sum(p.drafted for p in self.passes)

    @property
    def tokens_per_pass_counts(self) -> list[int]:
        """Tokens made by each full decode pass (the prefill's not included), in order."""
        return [p.made for p in self.passes]

    def accepted_histogram(self) -> dict[int, int]:
        """{drafts accepted by one full decode pass: passes}, smallest first."""
        return {made - 1: n for made, n in self.histogram().items()}

    @property
    def tokens_per_pass(self) -> Optional[float]:
        """Tokens made by the full decode passes ÷ those passes (1.0 for plain decoding)."""
        return (self.new_tokens - 1) / len(self.passes) if self.passes else None

    @property
    def tokens_per_pass_spread(self) -> Optional[Spread]:
        """Tokens per full decode pass as a `viz.Spread` over the passes (median, middle
        half): exact counts, spread over passes, not over timed runs."""
        return Spread.of(self.tokens_per_pass_counts) if self.passes else None

    @property
    def acceptance_rate(self) -> Optional[float]:
        """Drafts accepted ÷ drafts proposed (None for plain decoding)."""
        drafted = self.draft_passes
        return sum(p.accepted for p in self.passes) / drafted if drafted else None

    @property
    def draft_pass_s(self) -> Optional[float]:
        """Median time of one draft pass (each round's draft time ÷ its drafts)."""
        per = [p.draft_s / p.drafted for p in self.passes if p.drafted]
        return statistics.median(per) if per else None

    @property
    def full_pass_s(self) -> Optional[float]:
        """Median time of one full decode pass (with its drafts to check, and the trimming)."""
        return statistics.median(p.verify_s for p in self.passes) if self.passes else None


def _generate(
    lm: LoadedModel,
    prompt_ids: list[int],
    exit_layer: int,
    k: int,
    max_new_tokens: int,
    stop_at_eos: bool = True,
) -> DraftRun:
    """Greedy decoding with early-exit drafts (k >= 1) or plain (k = 0), written out."""
    model, timer = lm.model, Clock(lm.device)
    eos = set(lm.eos_token_ids) if stop_at_eos else set()
    forward = last_logits(model)  # (ids, cache) → scores of the token after the last one
    score_all = _all_logits(model)  # (ids, cache) → scores after every position fed
    ids = lambda tokens: torch.tensor([tokens], device=lm.device)  # noqa: E731
    with torch.inference_mode():
        start = timer.now()
        # 1. Prefill: one full pass over the prompt fills the full model's cache and makes the
        #    first token, as in plain decoding.
        full = new_cache(model)
        token = int(torch.argmax(forward(ids(prompt_ids), full)[0]))
        generated = [token]
        t_first = timer.now()
        # 2. The draft's cache: a copy of the full model's first L layers (the same layers read
        #    the same prompt: the same keys and values).
        draft = _first_layers(model, full, exit_layer) if k else None
        pending = [token]  # reply tokens the draft's cache has not read yet
        passes, t_last = [], t_first
        while len(generated) < max_new_tokens and token not in eos:
            k_now = min(k, max_new_tokens - len(generated) - 1)  # never draft past the end
            t0 = timer.now()
            # 3. Draft: k tokens, one pass each, through the first L layers, the final norm
            #    and the head (the logit lens at layer L, read greedily).
            drafts: list[int] = []
            if k_now:
                with exit_after(model, exit_layer):
                    feed = pending
                    for _ in range(k_now):
                        drafts.append(int(torch.argmax(forward(ids(feed), draft)[0])))
                        feed = drafts[-1:]
            t1 = timer.now()
            # 4. Verify: ONE full pass over the newest token and every draft. Row j holds the
            #    full model's own choice after the newest token and drafts 1..j.
            choices = score_all(ids([token] + drafts), full).argmax(dim=-1).tolist()
            # 5. Keep the drafts up to the first one the full model disagrees with, then the
            #    full model's own token there (its token after the last draft if all agreed).
            m = 0
            while m < k_now and drafts[m] == choices[m]:
                m += 1
            new = drafts[:m] + [choices[m]]
            if eos & set(new):  # a reply ends at its first end-of-sequence token
                new = new[: min(i for i, t in enumerate(new) if t in eos) + 1]
            # 6. Forget the rejected drafts: the full cache keeps the newest token and the
            #    accepted drafts; the draft's cache keeps what it read of them.
            kept = len(prompt_ids) + len(generated) + m  # positions whose keys stay cached
            trim_cache(full, kept)
            generated += new
            token = generated[-1]
            if draft is not None:
                trim_cache(draft, min(kept, cache_length(draft)))
                pending = (prompt_ids + generated)[cache_length(draft) :]
            t_last = timer.now()  # the round's tokens are out
            passes.append(
                DraftPass(drafted=k_now, made=len(new), draft_s=t1 - t0, verify_s=t_last - t1)
            )
    return DraftRun(
        mode=f"early exit (L={exit_layer}, k={k})" if k else "plain",
        exit_layer=exit_layer if k else 0,
        draft_tokens=k,
        token_ids=generated,
        text=lm.tokenizer.decode(generated),
        passes=passes,
        first_token_s=t_first - start,
        decode_s=t_last - t_first,
        total_s=t_last - start,
    )


def early_exit_generate(
    lm: LoadedModel,
    prompt: str,
    *,
    exit_layer: int,
    draft_tokens: int = 4,
    max_new_tokens: int = 32,
    chat: bool = True,
    stop_at_eos: bool = True,
) -> DraftRun:
    """Greedy decoding of `prompt` with drafts from the model's first `exit_layer` layers,
    `draft_tokens` (k) per full pass, verified in one full pass each; the same tokens as plain
    greedy decoding (lesson 14). Bad input is refused with a message naming the fix."""
    check_early_exit(lm.spec.n_layers, exit_layer, draft_tokens)
    _check_length(max_new_tokens)
    ids = prompt_token_ids(lm, prompt, chat)
    return _generate(lm, ids, exit_layer, draft_tokens, max_new_tokens, stop_at_eos)


def plain_generate(
    lm: LoadedModel,
    prompt: str,
    *,
    max_new_tokens: int = 32,
    chat: bool = True,
    stop_at_eos: bool = True,
) -> DraftRun:
    """Plain greedy decoding of `prompt` with the same loop (one full pass per token): what
    `early_exit_generate` is timed against."""
    _check_length(max_new_tokens)
    return _generate(lm, prompt_token_ids(lm, prompt, chat), 0, 0, max_new_tokens, stop_at_eos)


def _check_length(max_new_tokens: Any) -> None:
    checks.whole(
        "max_new_tokens", max_new_tokens, 2, fix="one new token has no decode pass to draft for"
    )


# ---- the comparison ------------------------------------------------------------------------
@dataclass
class EarlyExitComparison(AgainstPlain):
    """Plain greedy decoding and early-exit drafts on the same prompt (medians of repeats)."""

    WORDS: ClassVar[tuple[str, str]] = EARLY_EXIT_WORDS

    prompt: str
    exit_layer: int  # L
    draft_tokens: int  # k
    n_layers: int  # the full model's layers
    plain: DraftRun  # the run with the median TPOT
    early: DraftRun
    repeats: int
    plain_tpots_s: list[float] = field(default_factory=list)  # every plain run's TPOT
    early_tpots_s: list[float] = field(default_factory=list)  # every early-exit run's TPOT

    def _rival(self) -> tuple[DraftRun, list[float]]:
        return self.early, self.early_tpots_s

    @property
    def tokens_per_pass(self) -> float:
        """Tokens per full decode pass with early exit (plain decoding: 1)."""
        return self.early.tokens_per_pass

    @property
    def acceptance_rate(self) -> float:
        """Drafts accepted ÷ drafts proposed."""
        return self.early.acceptance_rate

    def accepted_histogram(self) -> dict[int, int]:
        """{drafts accepted in one full decode pass: passes} of the early-exit run."""
        return self.early.accepted_histogram()

    @property
    def draft_cost(self) -> float:
        """One draft pass ÷ one plain decode pass (medians, measured): what a guess costs in
        full passes. A round breaks even when it makes 1 + k · draft_cost tokens (plus what
        checking k drafts adds to the full pass)."""
        return self.early.draft_pass_s / self.plain.full_pass_s

    @property
    def draft_cost_spread(self) -> Spread:
        """`draft_cost` with its spread: every draft pass's time (its round's draft time ÷ its
        drafts) over every plain decode pass's, middle halves, worst case at each end."""
        drafts = [p.draft_s / p.drafted for p in self.early.passes if p.drafted]
        return Spread.of(drafts) / Spread.of(p.verify_s for p in self.plain.passes)

    @property
    def break_even(self) -> float:
        """Tokens a round must make to pay for itself: (k draft passes + its full pass) ÷ one
        plain pass, all measured medians."""
        return (
            self.draft_tokens * self.early.draft_pass_s + self.early.full_pass_s
        ) / self.plain.full_pass_s

    def __str__(self) -> str:
        lines = [
            f"{'':<24}{'tokens':>7}{'full passes':>13}{'tokens/pass':>13}{'TPOT':>11}{'speed':>16}"
        ]
        for r in (self.plain, self.early):
            lines.append(
                f"{r.mode:<24}{r.new_tokens:>7}{r.full_passes:>13}"
                f"{r.tokens_per_pass:>13.2f}{r.tpot_s * 1e3:>8.1f} ms"
                f"{r.tokens_per_s:>9.1f} tokens/s"
            )
        hist = ", ".join(f"{k}: {v}" for k, v in self.accepted_histogram().items())
        lines.append(
            f"drafts accepted per full pass: {{{hist}}}; acceptance "
            f"{self.acceptance_rate:.0%} of {self.early.draft_passes} drafts"
        )
        lines.append(
            f"one draft pass (L={self.exit_layer} of {self.n_layers} layers + head) "
            f"costs {self.draft_cost:.2f} of a plain pass: a round of "
            f"k={self.draft_tokens} breaks even at {self.break_even:.2f} tokens per "
            f"full pass, it made {self.tokens_per_pass:.2f}"
        )
        lines.append(
            f"same greedy tokens: {self.identical}; speed-up ×{self.speedup:.2f} (all "
            f"{self.repeats} rounds: ×{self.speedup_spread.text(digits=2)}): "
            f"{self.speedup_verdict}"
        )
        return "\n".join(lines)


def compare_early_exit(
    lm: LoadedModel,
    prompt: str,
    *,
    exit_layer: int,
    draft_tokens: int = 4,
    max_new_tokens: int = 32,
    chat: bool = True,
    repeats: int = 3,
    threads: Optional[int] = None,
) -> EarlyExitComparison:
    """Plain greedy decoding vs early-exit drafts on `prompt` (lesson 14).

    A warm-up of each, then `repeats` rounds of (plain, early exit); each mode's run with the
    median TPOT is kept, and every run's TPOT for the speed-up's spread (`speedup_spread`,
    `speedup_verdict`: use repeats >= 3). Both stop at end-of-sequence, at the same token.
    exit_layer: L, 1 to n_layers - 1; draft_tokens: k >= 1; threads: CPU threads (None:
    torch's current count)."""
    check_early_exit(lm.spec.n_layers, exit_layer, draft_tokens)
    _check_length(max_new_tokens)
    checks.whole(
        "repeats",
        repeats,
        1,
        fix="each round times one plain and one early-exit run; 3 or more give a spread",
    )
    checks.threads(threads)
    ids = prompt_token_ids(lm, prompt, chat)
    with using_threads(threads):
        _generate(lm, ids, 0, 0, 3)
        _generate(lm, ids, exit_layer, draft_tokens, 3)
        plain, early = [], []
        for _ in range(repeats):
            plain.append(_generate(lm, ids, 0, 0, max_new_tokens))
            early.append(_generate(lm, ids, exit_layer, draft_tokens, max_new_tokens))
    if plain[0].new_tokens < 2:
        raise ValueError(
            "the reply ended after one token: nothing to compare; use a prompt "
            "that asks for a longer answer"
        )

    return EarlyExitComparison(
        prompt=prompt,
        exit_layer=exit_layer,
        draft_tokens=draft_tokens,
        n_layers=lm.spec.n_layers,
        plain=median_tpot_run(plain),
        early=median_tpot_run(early),
        repeats=repeats,
        plain_tpots_s=[r.tpot_s for r in plain],
        early_tpots_s=[r.tpot_s for r in early],
    )


# ---- what a draft pass reads ---------------------------------------------------------------
def draft_bytes_share(spec: Any, exit_layer: int) -> float:
    """Bytes of weights a draft pass reads ÷ those a full decode pass reads, from the model's
    shape (`viz.perf.counts`): L layers of n_layers, plus the final norm and the output head,
    which both read whole (V·h: for the course model a fifth of the weights). Lesson 14."""
    from viz.perf.counts import layer_matmul_params

    check_early_exit(spec.n_layers, exit_layer, 1)
    layer = layer_matmul_params(spec) + 2 * spec.hidden_size  # its matrices and two norms
    rest = spec.hidden_size + spec.vocab_size * spec.hidden_size  # final norm, output head
    return (exit_layer * layer + rest) / (spec.n_layers * layer + rest)


# ---- what the logit lens predicts, before anything runs -------------------------------------
@dataclass
class LensDrafts:
    """The rounds a greedy reply would take with early-exit drafts, read from its logit lens:
    the draft at layer L proposes row L's top-1 at every position, so it is accepted exactly
    where the lens agrees with the token the reply chose (`viz.lens.agreement`)."""

    exit_layer: int  # L
    draft_tokens: int  # k
    drafted: list[int]  # per round: drafts proposed
    made: list[int]  # per round: tokens made (accepted + the full model's own)
    agreement: float  # share of decode steps where the lens at L agrees with the reply

    @property
    def tokens_per_pass(self) -> Optional[float]:
        """Tokens per full decode pass."""
        return sum(self.made) / len(self.made) if self.made else None

    @property
    def acceptance_rate(self) -> Optional[float]:
        """Drafts accepted ÷ drafts proposed."""
        return sum(m - 1 for m in self.made) / sum(self.drafted) if sum(self.drafted) else None

    def accepted_histogram(self) -> dict[int, int]:
        """{drafts accepted in one full decode pass: passes}, smallest first."""
        return dict(sorted(Counter(m - 1 for m in self.made).items()))

    def speedup_if_bytes(self, draft_share: float) -> Optional[float]:
        """The speed-up over plain decoding if a pass costs its bytes: a draft pass costs
        `draft_share` of a full one (`draft_bytes_share`), the checking pass costs one, and
        plain decoding makes one token per full pass. Tokens made ÷ (drafts × share + rounds),
        in full passes. A memory-bound step's price, before any run; lesson 14 measures it."""
        if not self.made:
            return None
        if not 0 < draft_share <= 1:
            raise ValueError(
                f"draft_share is a fraction of a full pass's bytes, above 0 and at "
                f"most 1, not {draft_share!r}: use perf.draft_bytes_share(spec, L)"
            )
        return sum(self.made) / (sum(self.drafted) * draft_share + len(self.made))


def best_lens_draft(
    trace: Trace, spec: Any, layers: Optional[Sequence[int]] = None, ks: Sequence[int] = (1, 2, 4)
) -> LensDrafts:
    """The (L, k) the lens of `trace` says is fastest if each pass costs its bytes: the
    `lens_draft_grid` entry with the largest `speedup_if_bytes(draft_bytes_share(spec, L))`
    (the smaller L, then k, on a tie). Lesson 14 measures the speed-up there."""
    grid = lens_draft_grid(trace, layers, ks)
    if not grid:
        raise ValueError("no (L, k) to choose from: give at least one exit layer and one k")
    return max(
        grid,
        key=lambda g: (
            g.speedup_if_bytes(draft_bytes_share(spec, g.exit_layer)),
            -g.exit_layer,
            -g.draft_tokens,
        ),
    )


def lens_drafts(trace: Trace, exit_layer: int, draft_tokens: int) -> LensDrafts:
    """What early exit at layer `exit_layer` with k = `draft_tokens` would do on `trace`'s
    reply (a greedy trace recorded with lens=True): the rounds, tokens per full pass and
    acceptance, with no model run. `early_exit_generate` on the same prompt and length makes
    the same rounds (tests check it), up to a near-tie that a draft pass and the recorded
    pass round differently."""
    from viz.lens import agreement, check_lens

    lens = check_lens(trace)
    check_early_exit(lens.n_layers, exit_layer, draft_tokens)
    if trace.settings.temperature != 0:
        raise ValueError(
            "the lens predicts greedy drafts, and this reply was sampled: record "
            "it with temperature=0 (the default)"
        )
    agree = agreement(trace)[:, exit_layer]
    n, limit = len(trace.steps), trace.settings.max_new_tokens
    drafted, made = [], []
    p = 1  # the reply's next position (step 0 is the prefill's token: no draft)
    while p < n:
        k_now = min(draft_tokens, limit - p - 1)  # as the loop: never draft past the end
        m = 0
        while m < k_now and p + m < n and agree[p + m]:
            m += 1
        drafted.append(k_now)
        made.append(min(m + 1, n - p))  # the reply may end (end-of-sequence) inside a round
        p += made[-1]
    rate = float(agree[1:].mean()) if n > 1 else 0.0
    return LensDrafts(exit_layer, draft_tokens, drafted, made, rate)


def lens_draft_grid(
    trace: Trace, layers: Optional[Sequence[int]] = None, ks: Sequence[int] = (1, 2, 4, 8)
) -> list[LensDrafts]:
    """`lens_drafts` for every exit layer in `layers` (default: all, 1 to n_layers - 1) and
    every k in `ks`: the acceptance against L and k, read from one recorded lens."""
    from viz.lens import check_lens

    n = check_lens(trace).n_layers
    layers = list(range(1, n)) if layers is None else list(layers)
    return [lens_drafts(trace, L, k) for k in ks for L in layers]
