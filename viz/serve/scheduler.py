"""Inside the server, step by step: transformers' continuous batching, recorded in-process.

A continuous-batching server runs one loop: choose the requests for the next forward pass
(the *batch*), run it, hand each request its new token, repeat. `StepRecorder` writes down,
for every pass of that loop,

- which requests are in the batch and how many tokens each brings: a chunk of its prompt
  (prefill, split into chunks when the prompt is longer than the step's token budget) or one
  token (decode);
- which requests wait, which finished;
- the KV cache's pages: each request's page table (which pages hold its keys and values),
  the free pages, and the pages several requests share because their prompts begin alike
  (prefix sharing).

transformers has no public hook for this: the recorder wraps two methods of its batch
processor (`prepare_next_batch`, `update_batch`) and reads the scheduler's and the paged
cache's attributes. Those are internals and move between releases, so they are pinned:
`SUPPORTED_TRANSFORMERS` is the range this was written and tested against, and any other
version fails at once with a message naming it (`check_transformers_version`).

This module holds what is recorded (`Schedule`, `SchedulerStep`, `BatchEntry`: a saved
document), the version pin, and `record_schedule`, which runs a model through continuous
batching in this process. The probes that do the recording — `StepRecorder` for the passes,
`RequestProbe` for per-request timing inside `transformers serve` — are in `viz.serve.probes`,
with `record_schedule` (a model run through continuous batching in this process);
`viz.serve.EmbeddedServer(record=True)` installs both in its server (see `viz.serve.worker`).
Introduced in lesson 09 (Serving many users).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Optional

from viz.documents import Document
from viz.provenance import environment_from_loose, loose_names, unknown_environment, utc_now
from viz.trace import Environment

# The transformers releases whose continuous-batching internals this module reads.
SUPPORTED_TRANSFORMERS = (">=5.24", "<5.25")


class UnsupportedTransformers(RuntimeError):
    """The installed transformers is outside `SUPPORTED_TRANSFORMERS`."""


def supported_range() -> str:
    return ",".join(SUPPORTED_TRANSFORMERS)


def check_transformers_version(version: Optional[str] = None) -> str:
    """The installed transformers version if this module can read its internals; otherwise
    an `UnsupportedTransformers` naming the supported range and the fix."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    if version is None:
        import transformers

        version = transformers.__version__
    try:
        ok = Version(version) in SpecifierSet(supported_range())
    except InvalidVersion:
        ok = False
    if not ok:
        raise UnsupportedTransformers(
            f"the continuous-batching recorder reads transformers internals and supports "
            f"transformers {supported_range()}, but {version} is installed: install "
            f"'transformers{supported_range()}' (pip install 'transformers{supported_range()}'), "
            "or run without it (EmbeddedServer(record=False) still serves and times every "
            "request from the client side)"
        )
    return version


def now() -> float:
    """The clock shared with the client: time.perf_counter (CLOCK_MONOTONIC on Linux)."""
    return time.perf_counter()


# ---- the recorded data ---------------------------------------------------------------------------
@dataclass
class BatchEntry:
    """One request's part in one forward pass."""

    request_id: str
    phase: str  # "prefill" (prompt tokens) or "decode" (its last output token, fed back)
    query_tokens: int  # tokens it brings to this pass (a prompt chunk, or 1 when decoding)
    cached_tokens: int  # tokens already in its KV cache before the pass (shared prefix included)
    new_token: bool  # the pass ends with a new output token for it (False: a prompt chunk
    #                  that is not the last one)
    pages: list[int]  # its page table after scheduling: the KV pages holding its tokens


@dataclass
class SchedulerStep:
    """One pass of the serving loop. Times: seconds from the schedule's origin."""

    index: int  # 0, 1, 2, ... in the order the loop ran them
    start_s: float  # the scheduler began choosing this batch
    forward_s: float  # the batch was ready: the forward pass began
    end_s: float  # forward pass, sampling and bookkeeping done: tokens handed out
    batch: list[BatchEntry]
    waiting: list[str]  # requests queued and not yet started
    held: list[str]  # started requests left out of this pass (no room for their next token)
    finished: list[str]  # requests that ended in this pass
    free_pages: int  # pages no request holds and no finished prefix keeps
    cached_pages: int  # pages no request holds that keep a finished request's full prefix
    #                    blocks for reuse (reclaimed when space runs out)
    shared_pages: list[int]  # pages held by two or more requests at once (a common prefix)

    @property
    def tokens(self) -> int:
        """Tokens in this pass (the step's share of the token budget)."""
        return sum(e.query_tokens for e in self.batch)


# Schedules are recorded inside the server by its step probe, and read by the client.
SCHEDULE_SOURCE = "recorded by viz.serve.probes.StepRecorder (the server's scheduler)"


def schedule_v1_to_v2(d: dict) -> dict:
    """A schema-1 Schedule dict as schema 2: the server's loose `transformers_version` moves
    into `environment` (`viz.provenance`); when it was recorded is not known."""
    return environment_from_loose(d, ("transformers_version",), SCHEDULE_SOURCE)


@loose_names("transformers_version")
@dataclass
class Schedule(Document):
    """Every pass of a continuous-batching loop (`StepRecorder`). Lesson 09.

    Where, when and by what is `environment` (`viz.provenance`): the server's transformers
    version (`schedule.transformers_version` reads it, as before), when the client read the
    steps, and the recorder."""

    KIND: ClassVar[str] = "llm-inference-schedule"
    # 2: transformers_version became environment.transformers_version (one shape of provenance)
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: schedule_v1_to_v2}
    WHAT: ClassVar[str] = "schedule"
    AGAIN: ClassVar[str] = (
        "record it again with viz.serve.record_schedule(...) or a load run "
        "on EmbeddedServer(record=True)"
    )

    page_size: int  # tokens per KV page
    total_pages: int  # pages in the cache
    first_page: int  # the lowest page id (ids run first_page .. first_page + total_pages - 1)
    bytes_per_page: int  # KV bytes of one page, over every layer
    max_batch_tokens: int  # the token budget of one pass
    steps: list[SchedulerStep]
    prompt_tokens: dict[str, int]  # request id -> prompt length in tokens
    label: str = ""
    environment: Environment = field(default_factory=unknown_environment)

    def request_ids(self) -> list[str]:
        """Every request seen, in order of first appearance (waiting or in a batch)."""
        seen: dict[str, None] = {}
        for s in self.steps:
            for rid in [e.request_id for e in s.batch] + s.waiting + s.held:
                seen.setdefault(rid, None)
        return list(seen)

    def between(self, start_s: float, end_s: float) -> "Schedule":
        """The steps that began within [start_s, end_s]."""
        steps = [s for s in self.steps if start_s <= s.start_s <= end_s]
        return self.with_steps(steps)

    def with_steps(self, steps: list[SchedulerStep]) -> "Schedule":
        """The same schedule (pages, budget, prompts, provenance) with other steps."""
        return replace(
            self,
            steps=steps,
            prompt_tokens=dict(self.prompt_tokens),
            environment=replace(self.environment),
        )

    def shifted(self, origin: float) -> "Schedule":
        """The same steps with times measured from `origin` (in this schedule's clock)."""

        def move(s: SchedulerStep) -> SchedulerStep:
            return SchedulerStep(
                s.index,
                s.start_s - origin,
                s.forward_s - origin,
                s.end_s - origin,
                s.batch,
                s.waiting,
                s.held,
                s.finished,
                s.free_pages,
                s.cached_pages,
                s.shared_pages,
            )

        return self.with_steps([move(s) for s in self.steps])


def schedule_from_lines(
    header: dict[str, Any], lines: list[dict[str, Any]], origin: float = 0.0, label: str = ""
) -> Schedule:
    """A Schedule from the probe's JSON lines (absolute clock), with times from `origin`."""
    steps = []
    prompt_tokens: dict[str, int] = {}
    for i, d in enumerate(lines):
        prompt_tokens.update(d.get("prompt_tokens", {}))
        steps.append(
            SchedulerStep(
                index=i,
                start_s=d["start"] - origin,
                forward_s=d["forward"] - origin,
                end_s=d["end"] - origin,
                batch=[BatchEntry(**e) for e in d["batch"]],
                waiting=d["waiting"],
                held=d["held"],
                finished=d["finished"],
                free_pages=d["free_pages"],
                cached_pages=d["cached_pages"],
                shared_pages=d["shared_pages"],
            )
        )
    return Schedule(
        page_size=header["page_size"],
        total_pages=header["total_pages"],
        first_page=header["first_page"],
        bytes_per_page=header["bytes_per_page"],
        max_batch_tokens=header["max_batch_tokens"],
        steps=steps,
        prompt_tokens=prompt_tokens,
        label=label,
        # the server's transformers; the time the client read the steps (just after the run)
        environment=unknown_environment(
            transformers_version=header["transformers_version"],
            measured_at=utc_now(),
            source=SCHEDULE_SOURCE,
        ),
    )
