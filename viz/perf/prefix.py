"""Prefix caching, in this process: keep the KV cache of a prompt's beginning and reuse it.

Many prompts begin alike: the chat template, a system prompt, a document, the conversation so
far. A request whose first k tokens were already prefilled by an earlier one needs only its
last n − k tokens computed: their queries attend to the kept keys and values, and the first
token comes out the same (up to rounding; `same_first_token` checks it). Lesson 11.

- `prefix_cache_sweep`: prompts of one length whose first share is a prefix already in the
  cache; time to first token with the prefix recomputed (`ttft_full_s`) and reused
  (`ttft_cached_s`), against the share of the prompt that was shared.
- `chat_turns`: a chat whose every turn re-sends the whole history, as the OpenAI API does;
  each turn's time to first token with the history recomputed and with the history's KV kept
  from the turn before (the longest common prefix of token ids, matched as servers match it).

Both keep the prefix in a `DynamicCache` and cut it back (`viz.compat.trim_cache`) after each
use, so no copy of the prefix is made; the prefill over it still concatenates (see
`viz.perf.context`). The time counted is the forward passes that produce the first token,
with greedy choice; tokenization is left out of both columns alike. Each pass is timed by
`viz.steps.timed_step` (on a GPU, until the device has finished it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from viz import checks, compat
from viz.load import LoadedModel
from viz.perf.context import prompt_ids
from viz.perf.sweeps import progress_bar, check_fits, measured, add_timed
from viz.perf.table import Sweep
from viz.runtime import Clock
from viz.spread import Spread
from viz.steps import decode, timed_step


def _first_token(clock: Clock, forward, ids: torch.Tensor, cache) -> tuple[float, torch.Tensor]:
    """The seconds of the forward pass that scores the first token (`viz.steps.timed_step`),
    and those scores; the greedy choice is read from them afterwards, untimed."""
    step = timed_step(clock, lambda: forward(ids, cache))
    return step.seconds, step.logits[0]


@measured
def prefix_cache_sweep(
    lm: LoadedModel,
    prompt_tokens: int = 512,
    shares: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 0.95),
    *,
    repeats: int = 3,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """Share of the prompt already cached → time to first token, recomputed vs reused.

    For each share s, the first k = round(s·n) of n prompt tokens are a prefix prefilled once
    (untimed: an earlier request paid for it). Timed, in `repeats` rounds: the whole prompt
    prefilled into an empty cache (once a round: the same pass whatever the share), then, for
    each share, the last n − k tokens prefilled over the kept prefix.
    Columns (medians over `repeats`):
      shared_tokens       k
      shared_share        k / n
      new_tokens          n − k, the tokens computed when the prefix is reused
      ttft_full_s         the whole prompt's prefill (the same runs on every row)
      ttft_cached_s       the new tokens' prefill over the cached prefix
      speedup             ttft_full_s / ttft_cached_s
      same_first_token    1 if both choose the same greedy first token, else 0
      max_logit_gap       the largest difference between the two passes' last logits
    """
    checks.whole("prompt_tokens", prompt_tokens, 2)
    shares = checks.number_list(
        "shares",
        shares,
        0,
        1,
        open_high=True,
        noun="fractions",
        increasing=True,
        fix="at least one token of each prompt must be new",
    )
    check_fits(lm, prompt_tokens, "the prompt")
    forward = compat.last_logits(lm.model)
    clock = Clock(lm.device)
    ids = prompt_ids(lm, prompt_tokens)
    shared = [min(prompt_tokens - 1, round(s * prompt_tokens)) for s in shares]
    full: list[float] = []  # the whole prompt's prefill, once a round: every row's times
    cached: dict[int, list[float]] = {k: [] for k in shared}
    logits: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    with (
        torch.inference_mode(),
        progress_bar(len(shared) * (1 + repeats), "prefix cache", progress) as bar,
    ):
        caches = _prefill_prefixes(lm, forward, ids, shared, bar)
        _first_token(clock, forward, ids, compat.new_cache(lm.model))  # warm-up, not kept
        for _ in range(repeats):
            # The whole prompt into an empty cache: the same pass whatever share is cached,
            # so timed once a round, beside the round's cached passes.
            t_full, l_full = _first_token(clock, forward, ids, compat.new_cache(lm.model))
            full.append(t_full)
            for k in shared:
                t_cached, l_cached = _first_token(clock, forward, ids[:, k:], caches[k])
                compat.trim_cache(caches[k], k)
                cached[k].append(t_cached)
                logits[k] = (l_full, l_cached)
                bar.update()
    cols, spreads = _prefix_columns(shared, prompt_tokens, full, cached, logits)
    return Sweep(
        name="prefix_cache",
        x="shared_share",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={"prompt_tokens": prompt_tokens, "repeats": repeats},
        label=label,
        spreads=spreads,
    )


def _prefill_prefixes(
    lm: LoadedModel, forward, ids: torch.Tensor, shared: list[int], bar
) -> dict[int, Any]:
    """A cache per prefix length k in `shared`, holding the prompt's first k tokens: each
    prefix prefilled once, untimed (an earlier request paid for it)."""
    caches = {}
    for k in shared:  # each prefix prefilled once, untimed
        cache = compat.new_cache(lm.model)
        if k:
            forward(ids[:, :k], cache)
        caches[k] = cache
        bar.update()
    return caches


def _prefix_columns(
    shared: list[int],
    prompt_tokens: int,
    full: list[float],
    cached: dict[int, list[float]],
    logits: dict[int, tuple[torch.Tensor, torch.Tensor]],
) -> tuple[dict[str, list[Any]], dict[str, list[Spread]]]:
    """`prefix_cache_sweep`'s table: one row per prefix length, medians over the repeats."""
    cols: dict[str, list[Any]] = {
        c: []
        for c in (
            "shared_tokens",
            "shared_share",
            "new_tokens",
            "ttft_full_s",
            "ttft_cached_s",
            "speedup",
            "same_first_token",
            "max_logit_gap",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    for k in shared:
        a = add_timed(cols, spreads, "ttft_full_s", full)
        b = add_timed(cols, spreads, "ttft_cached_s", cached[k])
        l_full, l_cached = logits[k]
        cols["shared_tokens"].append(k)
        cols["shared_share"].append(k / prompt_tokens)
        cols["new_tokens"].append(prompt_tokens - k)
        cols["speedup"].append(a / b)
        cols["same_first_token"].append(int(int(l_full.argmax()) == int(l_cached.argmax())))
        cols["max_logit_gap"].append(float((l_full.float() - l_cached.float()).abs().max()))
    return cols, spreads


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading token ids two prompts share: what a prefix cache can reuse."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _chat_ids(tok, messages: list[dict]) -> list[int]:
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(i) for i in ids]


@dataclass
class _Turn:
    prompt: int
    reused: int
    full: list[float]
    cached: list[float]
    same: bool


@measured
def chat_turns(
    lm: LoadedModel,
    questions: Sequence[str],
    *,
    reply_tokens: int = 12,
    repeats: int = 2,
    progress: bool = True,
    label: str = "",
    threads: Optional[int] = None,
) -> Sweep:
    """A chat that re-sends its history every turn → each turn's time to first token with the
    history recomputed and with its KV kept from the turn before.

    Turn t's prompt is the chat template over every earlier question and reply plus question
    t. The kept cache holds the previous turn's prompt and its reply (greedy, `reply_tokens`
    tokens, made with the cache as `viz.record` makes them); the new prompt's longest common
    prefix with those tokens is reused, the rest prefilled over it. The reply of each turn is
    the greedy reply to the full prompt (both ways give it; `same_first_token` checks the first).
    Columns (medians over `repeats`):
      turn                  1, 2, ...
      prompt_tokens         the tokens sent this turn (the whole history and the question)
      reused_tokens         tokens whose keys and values were kept (0 on the first turn)
      new_tokens            prompt_tokens − reused_tokens
      ttft_full_s           the whole prompt prefilled
      ttft_cached_s         only the new tokens, over the kept cache
      saved_s               ttft_full_s − ttft_cached_s
      same_first_token      1 if both give the same greedy first token
    """
    questions = _check_chat(lm, questions, reply_tokens)
    forward = compat.last_logits(lm.model)
    clock = Clock(lm.device)
    tok = lm.tokenizer
    messages: list[dict] = []
    kept = compat.new_cache(lm.model)
    kept_ids: list[int] = []
    turns: list[_Turn] = []
    with torch.inference_mode(), progress_bar(len(questions), "chat turns", progress) as bar:
        for question in questions:
            messages.append({"role": "user", "content": question})
            ids = _chat_ids(tok, messages)
            check_fits(lm, len(ids) + reply_tokens, f"turn {len(turns) + 1}")
            x = torch.tensor([ids], device=lm.device)
            reused = min(common_prefix(kept_ids, ids), len(ids) - 1)
            compat.trim_cache(kept, reused)
            if not turns:
                _first_token(clock, forward, x, compat.new_cache(lm.model))  # warm-up, not kept
            full, cached = [], []
            for r in range(repeats):
                t_full, l_full = _first_token(clock, forward, x, compat.new_cache(lm.model))
                t_cached, l_cached = _first_token(clock, forward, x[:, reused:], kept)
                full.append(t_full)
                cached.append(t_cached)
                if r < repeats - 1:
                    compat.trim_cache(kept, reused)
            # the kept cache now holds the whole prompt: make the reply with it
            reply = _reply(
                clock, forward, kept, int(l_full.argmax()), len(ids), reply_tokens, lm.device
            )
            kept_ids = ids + reply[:-1]  # the last token chosen is not in the cache yet
            compat.trim_cache(kept, len(kept_ids))
            messages.append(
                {"role": "assistant", "content": tok.decode(reply, skip_special_tokens=True)}
            )
            turns.append(
                _Turn(
                    prompt=len(ids),
                    reused=reused,
                    full=full,
                    cached=cached,
                    same=int(l_full.argmax()) == int(l_cached.argmax()),
                )
            )
            bar.update()
    return _chat_sweep(lm, turns, questions, reply_tokens, repeats, label)


def _check_chat(lm: LoadedModel, questions: Sequence[str], reply_tokens: int) -> list[str]:
    """`chat_turns`'s argument checks; the questions as a list."""
    questions = list(questions)
    if not questions or any(not isinstance(q, str) or not q.strip() for q in questions):
        raise ValueError("questions must be a non-empty list of non-empty strings, one per turn")
    checks.whole("reply_tokens", reply_tokens, 1)
    if not getattr(lm.tokenizer, "chat_template", None):
        raise ValueError(
            f"{lm.spec.name}'s tokenizer has no chat template: chat_turns needs an "
            "instruction-tuned model (the default one has it)"
        )
    return questions


def _reply(
    clock: Clock,
    forward,
    kept: Any,
    first: int,
    n_prompt: int,
    reply_tokens: int,
    device: torch.device,
) -> list[int]:
    """The greedy reply of `reply_tokens` tokens, `first` and then one decode step per token
    over the kept cache (which holds the `n_prompt` prompt tokens): `viz.steps.decode`, its
    times not kept."""
    reply = [first]

    def position() -> dict:  # the newest token's position: after the prompt and the reply
        return {"position_ids": torch.tensor([[n_prompt + len(reply) - 1]], device=device)}

    steps = decode(
        clock,
        forward,
        kept,
        lambda: torch.tensor([[reply[-1]]], device=device),
        lambda logits: int(logits[0].argmax()),
        extras=position,
    )
    for _ in range(reply_tokens - 1):
        reply.append(next(steps).token)
    return reply


def _chat_sweep(
    lm: LoadedModel,
    turns: list[_Turn],
    questions: list[str],
    reply_tokens: int,
    repeats: int,
    label: str,
) -> Sweep:
    """`chat_turns`'s table: one row per turn, medians over the repeats."""
    cols: dict[str, list[Any]] = {
        c: []
        for c in (
            "turn",
            "prompt_tokens",
            "reused_tokens",
            "new_tokens",
            "ttft_full_s",
            "ttft_cached_s",
            "saved_s",
            "same_first_token",
        )
    }
    spreads: dict[str, list[Spread]] = {}
    for i, t in enumerate(turns, start=1):
        a = add_timed(cols, spreads, "ttft_full_s", t.full)
        b = add_timed(cols, spreads, "ttft_cached_s", t.cached)
        cols["turn"].append(i)
        cols["prompt_tokens"].append(t.prompt)
        cols["reused_tokens"].append(t.reused)
        cols["new_tokens"].append(t.prompt - t.reused)
        cols["saved_s"].append(a - b)
        cols["same_first_token"].append(int(t.same))
    return Sweep(
        name="chat_turns",
        x="turn",
        columns=cols,
        model=lm.spec,
        environment=lm.environment(),
        settings={"questions": questions, "reply_tokens": reply_tokens, "repeats": repeats},
        label=label,
        spreads=spreads,
    )
