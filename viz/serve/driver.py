"""How a load run sends its requests: closed-loop streams or open-loop arrivals, bounded.

`run_load` (viz.serve.loadgen) builds the requests and the record; `drive` sends them. A
*job* is what one stream takes at a time: one request, or a chat workload's conversation, whose
turns go one after another, each re-sending the history with the server's real answers.

- concurrency N (closed loop): N streams, each takes the next job as soon as its last ends.
- rate λ (open loop): each job starts at its own arrival time (Poisson, drawn by `run_load`),
  at most `settings.concurrency` in flight when that caps the rate.

Everything stops at `settings.max_duration_s`: nothing is sent after it, and what still streams
is cancelled (recorded as such, with the text it got). Lesson 09.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Optional

from viz.serve.client import Target, now, stream_request
from viz.serve.metrics import RequestRecord
from viz.serve.workload import Item


def jobs_of(items: list[Item]) -> list[list[int]]:
    """Request indices grouped into jobs: a conversation's turns together, in turn order; any
    other request alone."""
    jobs: list[list[int]] = []
    by_conversation: dict[int, list[int]] = {}
    for i, it in enumerate(items):
        if it.conversation is None:
            jobs.append([i])
        elif it.conversation in by_conversation:
            by_conversation[it.conversation].append(i)
        else:
            by_conversation[it.conversation] = [i]
            jobs.append(by_conversation[it.conversation])
    return jobs


async def drive(
    client,
    state: dict,
    requests: list[RequestRecord],
    items: list[Item],
    jobs: list[list[int]],
    settings,
    extra: Optional[dict],
    on_failure,
    progress: bool,
) -> None:
    """Send the jobs as the settings say, until done or out of time."""
    from tqdm import tqdm

    target: Target = state["target"]
    bar = tqdm(
        total=len(requests),
        unit="request",
        disable=not progress,
        file=sys.stderr,
        desc=f"load ({settings.mode})",
        leave=False,
    )
    t0 = now()
    state["t0"] = t0
    deadline = t0 + settings.max_duration_s
    started: list[asyncio.Task] = []

    async def one(i: int, history: list[dict[str, Any]]) -> None:
        it = items[i]
        messages = None
        if it.messages is not None:
            messages = it.messages
        elif it.conversation is not None:
            messages = history + [{"role": "user", "content": it.text}]
        fields = {k: it.max_tokens if k == "min_tokens" else True for k in (extra or {})}
        try:
            await stream_request(
                client,
                target,
                requests[i],
                t0,
                prompt=it.text,
                messages=messages,
                temperature=settings.temperature,
                timeouts=settings.timeouts,
                on_failure=on_failure,
                extra=fields or None,
            )
        finally:
            bar.update(1)
        if messages is not None and it.conversation is not None:
            history[:] = messages + [{"role": "assistant", "content": requests[i].text}]

    async def job(k: int, closed: bool) -> None:
        history: list[dict[str, Any]] = []
        for n, i in enumerate(jobs[k]):
            if now() >= deadline:
                return
            if n and not requests[jobs[k][n - 1]].ok:  # a chat cannot go on without its answer
                requests[i].error_kind = "cancelled"
                requests[i].error = (
                    f"not sent: turn {n - 1} of this conversation failed, "
                    "so there is no history to re-send"
                )
                bar.update(1)
                continue
            if closed or n:
                requests[i].scheduled_s = now() - t0
            await one(i, history)

    send = _closed_loop if settings.mode == "concurrency" else _open_loop
    main = asyncio.create_task(send(job, jobs, requests, settings, t0, deadline, started))
    await _until_done(main, started, state, bar, deadline)
    state["t_end"] = now()
    state["stopped"] = state["stopped"] or stop_reason(requests, settings)
    _mark_unsent(requests)


async def _until_done(
    main: asyncio.Task, started: list[asyncio.Task], state: dict, bar, deadline: float
) -> None:
    """Wait for the sending task `main` until the deadline, then cancel what is left (also
    on an interrupt, which goes on up); the progress bar closed either way."""
    try:
        await asyncio.wait_for(asyncio.shield(main), timeout=max(0.0, deadline - now()))
    except (TimeoutError, asyncio.TimeoutError):
        await _cancel(main, started)
    except asyncio.CancelledError:  # an interrupt: record what was in flight, then stop
        await _cancel(main, started)
        state["t_end"] = now()
        raise
    finally:
        bar.close()


def _mark_unsent(requests: list[RequestRecord]) -> None:
    """Give each request that was never sent its reason."""
    for r in requests:  # never sent: say why, so no request is silently missing
        if r.sent_s is None and r.error is None:
            r.error_kind, r.error = "cancelled", "not sent: the run's time limit came first"


async def _closed_loop(job, jobs, requests, settings, t0, deadline, started) -> None:
    """N streams: each takes its next job as soon as its last one ends."""
    nxt = iter(range(len(jobs)))

    async def stream_worker() -> None:
        for k in nxt:
            if now() >= deadline:
                return
            await job(k, closed=True)

    workers = [
        asyncio.create_task(stream_worker()) for _ in range(min(settings.concurrency, len(jobs)))
    ]
    started.extend(workers)
    await asyncio.gather(*workers)


async def _open_loop(job, jobs, requests, settings, t0, deadline, started) -> None:
    """Each job at its own arrival time (its first request's `scheduled_s`), whether or not
    earlier ones have ended (at most `settings.concurrency` in flight when that caps the
    rate)."""
    cap = asyncio.Semaphore(settings.concurrency) if settings.concurrency else None

    async def capped(k: int) -> None:
        if cap is None:
            await job(k, closed=False)
            return
        async with cap:
            await job(k, closed=False)

    tasks = []
    for k, indices in enumerate(jobs):
        delay = t0 + requests[indices[0]].scheduled_s - now()
        if delay > 0:
            await asyncio.sleep(delay)
        if now() >= deadline:
            break
        tasks.append(asyncio.create_task(capped(k)))
        started.append(tasks[-1])
    await asyncio.gather(*tasks)


async def _cancel(main: asyncio.Task, started: list[asyncio.Task]) -> None:
    """Cancel the sender and every request in flight, and wait until they have stopped."""
    for t in started:
        t.cancel()
    main.cancel()
    await asyncio.gather(main, *started, return_exceptions=True)


def stop_reason(requests: list[RequestRecord], settings) -> str:
    """Why a run ended before every request was sent or finished ("" if it did not)."""
    unsent = sum(1 for r in requests if r.sent_s is None and r.error is None)
    if unsent:
        return (
            f"time limit of {settings.max_duration_s:g} s reached: "
            f"{len(requests) - unsent} of {len(requests)} requests sent"
        )
    if any(r.error_kind == "cancelled" and r.sent_s is not None for r in requests):
        return (
            f"time limit of {settings.max_duration_s:g} s reached with "
            "requests still streaming (cancelled)"
        )
    return ""
