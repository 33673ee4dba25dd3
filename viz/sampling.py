"""Turning logits into a choice: greedy, temperature, top-k and top-p (nucleus) sampling.

One function, `sampling_distribution`, says which tokens remain possible and with what
probability; `choose` draws from it. `viz.record` uses them on the full vocabulary, and the
what-if view re-shapes a trace's recorded logits with the same function. Taught in lesson 02.
"""

from __future__ import annotations

from typing import Optional

import torch

from viz import checks


def check_sampling(temperature: float, top_k: Optional[int], top_p: Optional[float]) -> None:
    """Raise ValueError, naming the fix, for settings that describe no distribution."""
    checks.number("temperature", temperature, 0, fix="0 = greedy")
    if top_k is not None:
        checks.whole("top_k", top_k, 1, fix="or None for no limit")
    if top_p is not None:
        checks.number(
            "top_p",
            top_p,
            0,
            1,
            open_low=True,
            noun="",
            fix="or None for no limit; e.g. 0.9 keeps the most likely tokens until they cover 90%",
        )


def sampling_distribution(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: Optional[int] = None,
    top_p: Optional[float] = None,
) -> torch.Tensor:
    """Probabilities the sampler draws from, same shape as `logits` (a 1-D tensor).

    Order of operations (as in Hugging Face's generate):
    1. temperature: divide the logits by T (T < 1 sharpens, T > 1 flattens); T = 0 is greedy,
       all probability on the top token;
    2. top-k: keep the k highest logits;
    3. top-p: keep the smallest set of most likely tokens whose probability adds up to >= p;
    4. softmax over what is left; everything removed has probability exactly 0.
    """
    check_sampling(temperature, top_k, top_p)
    logits = logits.float()
    if temperature == 0:
        probs = torch.zeros_like(logits)
        probs[torch.argmax(logits)] = 1.0
        return probs
    scaled = logits / temperature
    keep = torch.ones_like(scaled, dtype=torch.bool)
    if top_k is not None and top_k < scaled.numel():
        kth = torch.topk(scaled, top_k).values[-1]
        keep &= scaled >= kth
    if top_p is not None and top_p < 1:
        masked = scaled.masked_fill(~keep, float("-inf"))
        order = torch.argsort(masked, descending=True)
        sorted_probs = torch.softmax(masked[order], dim=-1)
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # mass of better tokens
        keep_sorted = before < top_p  # the top token always stays (before = 0)
        keep_nucleus = torch.zeros_like(keep)
        keep_nucleus[order] = keep_sorted
        keep &= keep_nucleus
    return torch.softmax(scaled.masked_fill(~keep, float("-inf")), dim=-1)


def choose(
    logits: torch.Tensor,
    temperature: float,
    top_k: Optional[int],
    top_p: Optional[float],
    generator: torch.Generator,
) -> tuple[int, float]:
    """Pick the next token: (token id, its probability under the sampling distribution)."""
    if temperature == 0:  # greedy: the most likely token, nothing random
        return int(torch.argmax(logits)), 1.0
    probs = sampling_distribution(logits, temperature, top_k, top_p).cpu()
    token = int(torch.multinomial(probs, 1, generator=generator))
    return token, float(probs[token])
