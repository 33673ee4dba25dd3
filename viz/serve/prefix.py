"""Prefix caching inside a serving engine: transformers' continuous batching, sharing on and off.

The engine behind `transformers serve --continuous-batching` keeps the KV cache in pages of a
fixed number of tokens. With block sharing on (its default; the server's command line has no
switch for it), a new request whose prompt begins with *full* pages that an earlier request
already computed — the same token ids, page for page — gets those pages instead of computing
them again: only the rest of its prompt is prefilled. The last, partial page is always
recomputed, so the reuse is a whole number of pages and never the whole prompt.

`measure_prefix_sharing` sends the same prompts one at a time through the engine in this
process, once with sharing on and once off, and reads from the recorded schedule
(`viz.serve.scheduler.record_schedule`) what each request computed:

- `reused_tokens`: prompt tokens it did not compute (its first pass starts with them cached);
- `hit_rate`: reused ÷ prompt tokens over all requests — what vLLM and SGLang report as the
  prefix-cache hit rate;
- `first_token_s`: from the first pass that carried the request to the end of the pass that
  gave its first token — the engine's side of the time to first token (no HTTP, no queue).

Lesson 11.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, ClassVar

from viz.documents import Document
from viz.provenance import environment_from_loose, loose_names, unknown_environment
from viz.serve.probes import record_schedule
from viz.serve.scheduler import Schedule
from viz.trace import Environment


@dataclass
class RequestPrefix:
    """What one request computed in the engine."""

    request_id: str
    prompt_tokens: int
    reused_tokens: int  # prompt tokens found in shared pages, not computed
    first_token_s: float  # first pass carrying it → end of the pass with its first token


PREFIX_SOURCE = "measured by viz.serve.measure_prefix_sharing"


def _prefix_v1_to_v2(data: dict) -> dict:
    """Schema 1 kept only the transformers version, loose; it moves into `environment`
    (`viz.provenance`), where nothing else is known of where or when."""
    return environment_from_loose(data, ("transformers_version",), PREFIX_SOURCE)


@loose_names("transformers_version")
@dataclass
class PrefixSharing(Document):
    """The same prompts through the engine with prefix sharing on and off (a saved document:
    `save` / `load`, see `viz.documents`). Where, when and with what (the transformers
    version: the engine measured) is `environment` (`viz.provenance`)."""

    KIND: ClassVar[str] = "llm-inference-prefix-sharing"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: _prefix_v1_to_v2}
    WHAT: ClassVar[str] = "prefix-sharing run"
    AGAIN: ClassVar[str] = "measure it again with viz.serve.measure_prefix_sharing(...)"

    page_size: int
    on: list[RequestPrefix]
    off: list[RequestPrefix]
    same_tokens: bool  # every request generated the same tokens both ways
    environment: Environment = field(default_factory=unknown_environment)

    @staticmethod
    def hit_rate(requests: list[RequestPrefix]) -> float:
        return sum(r.reused_tokens for r in requests) / sum(r.prompt_tokens for r in requests)

    def median_first_token_s(self, sharing: bool, skip_first: bool = True) -> float:
        """Median engine time to first token; `skip_first` leaves out request 0 (it finds
        nothing to share either way)."""
        rows = self.on if sharing else self.off
        rows = rows[1:] if skip_first and len(rows) > 1 else rows
        return statistics.median(r.first_token_s for r in rows)

    def text(self) -> str:
        on, off = self.median_first_token_s(True), self.median_first_token_s(False)
        return (
            f"hit rate {self.hit_rate(self.on):.0%} with sharing, "
            f"{self.hit_rate(self.off):.0%} without; engine time to first token of the "
            f"later requests {on * 1e3:.0f} ms vs {off * 1e3:.0f} ms "
            f"(×{off / on:.1f}); same tokens both ways: {self.same_tokens}"
        )


def request_prefixes(schedule: Schedule) -> list[RequestPrefix]:
    """Per request, from a recorded schedule: prompt tokens, tokens reused, engine TTFT."""
    rows = []
    for rid in schedule.request_ids():
        steps = [(s, e) for s in schedule.steps for e in s.batch if e.request_id == rid]
        if not steps:
            continue
        first_step, first_entry = steps[0]
        done = next((s for s, e in steps if e.new_token), None)
        if done is None:
            continue
        rows.append(
            RequestPrefix(
                request_id=rid,
                prompt_tokens=schedule.prompt_tokens[rid],
                reused_tokens=first_entry.cached_tokens,
                first_token_s=done.end_s - first_step.start_s,
            )
        )
    return rows


def measure_prefix_sharing(
    model: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int = 4,
    page_size: int = 16,
    num_blocks: int = 128,
    max_batch_tokens: int = 256,
) -> PrefixSharing:
    """Send `prompts` (token ids) one at a time through transformers' continuous batching,
    with block sharing on and then off; see the module docstring. Greedy; the first request
    warms the engine up in both runs, so compare the later ones."""
    if len(prompts) < 2:
        raise ValueError(
            "measure_prefix_sharing needs two prompts or more: the first finds nothing to share"
        )
    results = {}
    outputs = {}
    for sharing in (True, False):
        schedule, out = record_schedule(
            model,
            prompts,
            max_new_tokens=max_new_tokens,
            page_size=page_size,
            num_blocks=num_blocks,
            max_batch_tokens=max_batch_tokens,
            one_at_a_time=True,
            prefix_sharing=sharing,
        )
        results[sharing] = request_prefixes(schedule)
        outputs[sharing] = out
    return PrefixSharing(
        page_size=page_size,
        on=results[True],
        off=results[False],
        same_tokens=outputs[True] == outputs[False],
        environment=_environment(model),
    )


def _environment(model: Any) -> Environment:
    """Where `model` (a transformers causal LM) ran, now: its device and dtype."""
    import torch

    from viz.runtime import dtype_name, environment

    dtype = getattr(model, "dtype", None)
    return environment(
        torch.device(getattr(model, "device", "cpu")),
        dtype_name(dtype) if dtype is not None else "",
        source=PREFIX_SOURCE,
    )
