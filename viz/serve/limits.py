"""Where a workload meets the server's two budgets: the tokens of one pass and the KV pool.

A continuous-batching server (lesson 09) fills every forward pass up to a **step budget** of
tokens (prompt chunks and one token per decoding request) and gives each request **KV pages**
from a fixed pool. Which one makes requests wait depends on the workload:

- the **step budget** when prompts arrive together faster than passes can carry them: N
  streams × a prompt's tokens (chat template included) against the budget per pass — the
  prompts are prefilled in chunks over several passes, and the later ones wait their turn;
- the **KV pool** when the requests at once hold more tokens than it has room for: N × (prompt
  + answer) against pages × page size — a request waits for pages although the pass has room.

`limits(run)` reads both from a run recorded on `EmbeddedServer(record=True)`: the demand its
workload put on the server (from the requests' own token counts), and, pass by pass, what held
requests back — a pass full to its budget counts for the budget (the rest of a prompt, or a
whole one, waits for the next pass); a pass with budget to spare while requests waited (queued,
or started and left out) counts for the pool: there were no pages for them. Where the two
counts differ by one pass or less, the leader is too close to call. Lesson 09.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from viz.spread import TOO_CLOSE

LIMITS = ("the step budget", "the KV pool", "neither")


@dataclass
class Limits:
    """A run's demand on the server's budgets and the passes each one held requests back."""

    load: str  # the workload and load in words ("64 tokens in, 24 out, 4 streams")
    streams: int  # requests in flight at once (the concurrency)
    prompt_tokens: float  # mean prompt, as the server counted it (chat template included)
    answer_tokens: float  # mean answer asked (max_tokens)
    step_budget: int  # tokens one pass may carry
    pool_tokens: int  # tokens the KV pool holds (pages × page size)
    passes: int
    budget_passes: int  # full to the budget: part of a prompt (or a whole one) waited
    pool_passes: int  # budget to spare while requests waited: no pages for them
    peak_pages: int  # the most pages held at once
    total_pages: int

    @property
    def counts(self) -> dict[str, int]:
        return {LIMITS[0]: self.budget_passes, LIMITS[1]: self.pool_passes}

    @property
    def word(self) -> str:
        """Which limit held requests back in more passes: one of LIMITS, or too close to call
        where the counts (or a count and none) differ by one pass at most."""
        if self.between:
            return TOO_CLOSE
        if not self.budget_passes and not self.pool_passes:
            return "neither"
        return max(self.counts, key=self.counts.get)

    @property
    def between(self) -> tuple:
        """The answers a difference of one pass cannot separate (viz.compare_prediction counts
        either as right); () when the leader is clear."""
        (a, na), (b, nb) = sorted(self.counts.items(), key=lambda kv: -kv[1])
        if na == 0 or na - nb > 1:
            return ()
        return (a, b) if nb else (a, "neither")

    @property
    def regime(self) -> str:  # what viz.compare_prediction reads
        return self.word

    def __str__(self) -> str:
        kv = self.streams * (self.prompt_tokens + self.answer_tokens)
        prefill = self.streams * self.prompt_tokens
        return "\n".join(
            [
                f"{self.load}",
                f"demand: {self.streams} × {self.prompt_tokens:.1f} prompt tokens (the mean) = "
                f"{prefill:,.0f} to prefill when they arrive together, against {self.step_budget} "
                f"per pass (≥ {-(-prefill // self.step_budget):.0f} passes)",
                f"        {self.streams} × ({self.prompt_tokens:.1f} + {self.answer_tokens:.1f} "
                f"answer) = {kv:,.0f} tokens of KV at once, against a pool of {self.pool_tokens:,}",
                f"passes: {self.passes}; full to the budget: {self.budget_passes}; budget to spare "
                f"but requests waited for pages: {self.pool_passes}; at most {self.peak_pages} of "
                f"{self.total_pages} pages held",
                f"what held requests back: {self.word}"
                + (f" ({' or '.join(self.between)})" if self.between else ""),
            ]
        )


def limits(run) -> Limits:
    """The budgets' part in a run (module docstring); needs its server's scheduler record."""
    sched = run.schedule
    if sched is None or not sched.steps:
        raise ValueError(
            "this run has no scheduler record: run it on "
            "EmbeddedServer(record=True) with continuous batching"
        )
    budget = pool = peak = 0
    for step in sched.steps:
        held = sched.total_pages - step.free_pages - step.cached_pages
        peak = max(peak, held)
        if step.tokens >= sched.max_batch_tokens:
            budget += 1
        elif step.waiting or step.held:
            pool += 1
    done = [r for r in run.requests if r.prompt_tokens is not None]
    s = run.settings
    return Limits(
        load=run.workload_label,
        streams=s.concurrency or 1,
        prompt_tokens=statistics.mean(r.prompt_tokens for r in done) if done else 0.0,
        answer_tokens=statistics.mean(r.max_tokens for r in run.requests),
        step_budget=sched.max_batch_tokens,
        pool_tokens=sched.total_pages * sched.page_size,
        passes=len(sched.steps),
        budget_passes=budget,
        pool_passes=pool,
        peak_pages=peak,
        total_pages=sched.total_pages,
    )
