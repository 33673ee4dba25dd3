"""Several replies at once: the decode loop of `viz.record`, with a batch dimension.

A decode step for one request reads every weight from memory to do a little arithmetic with
one token. A batch of B requests reads the same weights once and does B times the arithmetic:
aggregate tokens/s rises almost for free until the arithmetic, not the memory, is the limit;
each request waits a little longer per step. Lesson 06 measures that trade-off with
`viz.perf.batch_size_sweep`, which calls `generate_batch`.

Prompts of different lengths are *left*-padded so that every request's newest token sits in
the last column: the attention mask hides the padding, and the position ids count only real
tokens, so each request gets exactly the tokens it would get alone (a test checks this
against `viz.record` and `model.generate`). Greedy only; every request runs max_new_tokens
steps (a static batch: nobody leaves early, nobody joins).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

import torch

from viz import checks
from viz.compat import last_logits, live_bytes_per_layer, new_cache
from viz.load import LoadedModel
from viz.runtime import Clock, memory_end, memory_start, using_threads
from viz.steps import decode, timed_step
from viz.trace import Memory


@dataclass
class BatchRun:
    """What one batched generation did and how long each part took (seconds).

    The clock starts after tokenization. ttft_s = prefill forward + choosing the first tokens;
    each decode step's time = its forward pass + choosing. Every request receives a token at
    every step, so each request's latency is end_to_end_s.
    """

    prompt_ids: list[list[int]]  # per request, without padding
    generated_ids: list[list[int]]  # per request, max_new_tokens each
    padded_length: int  # prompt columns after left padding (the longest prompt)
    prefill_forward_s: float  # the one forward pass over the padded prompts
    ttft_s: float  # until every request has its first token
    step_forward_s: list[float]  # per decode step: the forward pass alone
    step_s: list[float]  # per decode step: forward pass + choosing the tokens
    end_to_end_s: float  # until every request has its last token
    kv_bytes: int  # KV cache after the last step, read from the tensors (padding included)
    memory: Memory = field(default_factory=Memory)  # device memory (CUDA only)

    @property
    def batch_size(self) -> int:
        return len(self.prompt_ids)


def _ids(lm: LoadedModel, prompt: Union[str, Sequence[int]]) -> list[int]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("a prompt in the batch is empty: give every request some text")
        return list(lm.tokenizer(prompt)["input_ids"])
    ids = [int(t) for t in prompt]
    if not ids:
        raise ValueError("a prompt in the batch has no tokens")
    return ids


def generate_batch(
    lm: LoadedModel,
    prompts: Sequence[Union[str, Sequence[int]]],
    max_new_tokens: int = 16,
    *,
    threads: Optional[int] = None,
    clock: Optional[Callable[[], float]] = None,
) -> BatchRun:
    """Greedy replies to several prompts in one batch, with a KV cache, timed step by step.

    prompts: texts (tokenized as `viz.record` does with chat=False) or lists of token ids.
    threads: CPU threads for the model's kernels (None: torch's current count).
    clock: a function returning seconds (tests inject one); device work is synchronized first.
    """
    checks.threads(threads)
    with using_threads(threads):
        return _generate(lm, prompts, max_new_tokens, clock)


def _generate(
    lm: LoadedModel, prompts, max_new_tokens: int, clock: Optional[Callable[[], float]]
) -> BatchRun:
    if not prompts:
        raise ValueError("give at least one prompt")
    checks.whole("max_new_tokens", max_new_tokens, 1)
    prompt_ids = [_ids(lm, p) for p in prompts]
    longest = max(len(p) for p in prompt_ids)
    ctx = lm.spec.context_length
    if ctx and longest + max_new_tokens > ctx:
        raise ValueError(
            f"the longest prompt ({longest} tokens) plus max_new_tokens="
            f"{max_new_tokens} exceeds the model's {ctx} positions"
        )
    dev = lm.device
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    forward = last_logits(lm.model)
    timer = Clock(dev, clock)
    memory = memory_start(dev)

    # Left padding: request r's prompt fills the last len(r) columns; the mask marks them.
    ids = torch.full((len(prompt_ids), longest), pad, dtype=torch.long)
    mask = torch.zeros((len(prompt_ids), longest), dtype=torch.long)
    for r, p in enumerate(prompt_ids):
        ids[r, longest - len(p) :] = torch.tensor(p)
        mask[r, longest - len(p) :] = 1
    ids, mask = ids.to(dev), mask.to(dev)
    # Positions count real tokens only: 0, 1, 2, ... from each prompt's first token.
    positions = (mask.cumsum(-1) - 1).clamp(min=0)

    def argmax(logits: torch.Tensor) -> torch.Tensor:
        return logits.argmax(-1)  # each request's highest-scoring token, shape (B,)

    with torch.inference_mode():
        start = timer.now()
        # 1. Prefill: one forward pass over every prompt at once; the cache holds B rows.
        # 2. Each request's first token: the highest-scoring one in its row.
        cache = new_cache(lm.model)
        first = timed_step(
            timer, lambda: forward(ids, cache, mask, positions), argmax, started=start
        )
        token = first.token
        out = [token]
        step_forward, step_total = [], []
        last_position = positions[:, -1]
        end = first.chosen

        def grow() -> dict:  # each step: one more mask column, each request's next position
            nonlocal mask, last_position
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            last_position = last_position + 1
            return {"attention_mask": mask, "position_ids": last_position[:, None]}

        # 3. Decode: feed each request's newest token (a B×1 input) and extend the mask.
        steps = decode(timer, forward, cache, lambda: token[:, None], argmax, extras=grow)
        for _ in range(max_new_tokens - 1):
            step = next(steps)
            token = step.token
            out.append(token)
            step_forward.append(step.forward_s)
            step_total.append(step.seconds)
            end = step.chosen
        memory = memory_end(dev, memory)
        generated = torch.stack(out, dim=1).cpu().tolist()
        kv = sum(live_bytes_per_layer(cache, lm.spec.n_layers))

    return BatchRun(
        prompt_ids=prompt_ids,
        generated_ids=generated,
        padded_length=longest,
        prefill_forward_s=first.forward_s,
        ttft_s=first.seconds,
        step_forward_s=step_forward,
        step_s=step_total,
        end_to_end_s=end - start,
        kv_bytes=kv,
        memory=memory,
    )
