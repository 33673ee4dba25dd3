"""One timed decode step, and the decode loop made of them: written once, used everywhere.

A decode step feeds the newest token (with the KV cache, which holds every earlier token's
keys and values), runs one forward pass, and chooses the next token from the scores it
returns. Everything in viz that times generation goes through `timed_step`:

- `viz.record` (lessons 03 to 05): the prefill and every decode step of a recorded reply;
- `viz.perf.generate_batch` (lesson 06): the same loop with a batch dimension;
- `viz.perf.measure_compiled_step` (lesson 13): a recorded, an eager and a compiled step;
- `viz.perf.profile_decode_step` (lesson 13): the plain step beside the profiled one;
- `viz.perf.prefix_cache_sweep` and `chat_turns` (lesson 11): the time to first token;
- `viz.perf.measure_formats` (lesson 12): its torch rows are `viz.record`'s steps.

The loop itself, `decode`, is a generator: each `next()` runs one timed step and hands it
back, and the caller decides when to stop (a token budget, end-of-sequence) and what to keep.

    steps = decode(clock, forward, cache, feed, choose)
    while not finished:
        step = next(steps)          # feed the newest token, one pass, choose the next
        reply.append(step.token)    # (feed reads reply[-1]: the next pass gets it)

Where the clock starts and stops is the same for every caller (`Timed`): it starts before
the step's input is built (making a one-token tensor is the step's own work), reads again
when the forward pass returned and once more when the token is chosen. `viz.runtime.Clock`
waits for the device first, so on a GPU the time is the work done, not only its launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from viz.runtime import Clock


@dataclass(frozen=True)
class Timed:
    """One timed step: what its forward pass returned, what was chosen from it, and the three
    clock readings around them (seconds, on the caller's `Clock`)."""

    logits: Any  # what the forward pass returned (scores of the next token, on the device)
    token: Any  # what `choose` returned from them (the pass's own output when it chooses itself)
    started: float  # the clock before the step (before its input was built)
    forwarded: float  # the clock when the forward pass had returned (the device finished)
    chosen: float  # the clock when the next token was chosen (= forwarded without a choice)

    @property
    def forward_s(self) -> float:
        """The forward pass: from the start of the step until its scores were there."""
        return self.forwarded - self.started

    @property
    def choose_s(self) -> float:
        """Choosing the next token from the scores (0 when the pass chose it itself)."""
        return self.chosen - self.forwarded

    @property
    def seconds(self) -> float:
        """The whole step: its forward pass and the choice."""
        return self.chosen - self.started


def timed_step(
    clock: Clock,
    forward: Callable[[], Any],
    choose: Optional[Callable[[Any], Any]] = None,
    *,
    started: Optional[float] = None,
) -> Timed:
    """Run one step and time it: read the clock, run `forward()`, read the clock, choose the
    next token with `choose(logits)`, read the clock. Lesson 04 teaches the step; lesson 08
    takes its time apart.

    forward: the step's forward pass, with no arguments: it builds its own input (the newest
        token, a mask, a position) and runs the model with the cache, so that building the
        input counts in the step's time.
    choose: the next token from what `forward` returned (greedy `argmax`, or a sampler).
        None where the pass chooses itself (a compiled step that ends in its own argmax): the
        token is then what `forward` returned, and the clock is read twice, not three times.
    started: a clock reading taken earlier to count from, instead of reading it now: the
        prefill counts from the end of tokenizing, so making its empty cache is part of it.
    """
    if not isinstance(clock, Clock):
        raise ValueError(
            f"clock must be a viz.runtime.Clock (it waits for the device before "
            f"reading the time), not {type(clock).__name__}: pass "
            f"Clock(lm.device)"
        )
    start = clock.now() if started is None else started
    logits = forward()  # the forward pass (and building its input)
    forwarded = clock.now()  # Clock waits for the device: the pass is done, not just launched
    if choose is None:
        return Timed(
            logits=logits, token=logits, started=start, forwarded=forwarded, chosen=forwarded
        )
    token = choose(logits)  # the next token from the scores
    return Timed(logits=logits, token=token, started=start, forwarded=forwarded, chosen=clock.now())


def decode(
    clock: Clock,
    forward: Callable[..., Any],
    cache: Any,
    feed: Callable[[], Any],
    choose: Optional[Callable[[Any], Any]] = None,
    *,
    extras: Optional[Callable[[], dict]] = None,
) -> Iterator[Timed]:
    """The decode loop, one timed step per `next()`: feed the newest token(s) with the cache,
    run one forward pass, choose the next token (`timed_step`). Lesson 04 teaches it;
    `viz.record` writes the reply around it, step by step.

    forward: `forward(ids, cache, **extras())` → the scores of the next token
        (`viz.compat.last_logits` makes it).
    cache: the KV cache the prefill filled; each pass appends its token's keys and values.
        None recomputes the whole sequence every step (then `feed` gives all of it).
    feed: the next pass's input ids, built when the step starts: usually the newest token
        alone, read from the caller's reply (which the caller extends with each step's token).
    choose: the next token from the scores (see `timed_step`).
    extras: more keyword arguments for each pass, built when the step starts (a batch's
        attention mask, grown by one column, and its position ids).

    Never ends by itself: the caller stops asking at its own stop (a token budget,
    end-of-sequence), and nothing runs that it did not ask for.
    """

    def one_pass() -> Any:
        ids = feed()  # 1. the newest token(s): the only input a pass with a cache needs
        more = extras() if extras is not None else {}
        # 2. one forward pass: the newest query attends to every cached key and value, and
        #    appends its own to the cache; it returns the scores of the token after it
        return forward(ids, cache, **more)

    while True:
        yield timed_step(clock, one_pass, choose)  # 3. timed, and the next token chosen
