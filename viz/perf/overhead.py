"""This machine's fixed cost per step, measured once per machine and reused by every lesson.

A forward pass pays a cost that does not depend on how many weights it reads: Python, the
framework's dispatch and hundreds of small kernels, layer after layer. `measure_overhead`
(in `viz.perf.wall`) measures it with models of the same depth and a tiny width: their weights
take almost no time to read, so their step time *is* the fixed cost.

Lessons 03, 04, 06, 07 and 08 all need it for the course model's depth. When each lesson
measured it once for itself, one execution of the course printed 7.3, 7.5, 7.9, 9.8 and
13.7 ms (issue 17): five numbers for one quantity. So it is measured **once per machine**, with its spread (several
recordings, the median decode step and the middle half of the steps), saved beside the peaks
in the viz cache folder (keyed on the same machine facts, `viz.perf.machine.machine_key`),
and every lesson reads the same figure:

    fixed = perf.fixed_cost(30)              # a viz.Spread, seconds; measured the first time
    floor = perf.machine_overhead("float32", [1, 30])   # the floor at several depths

`refresh=True` measures again (and saves). Lesson 08 explains the method.
"""

from __future__ import annotations

import datetime
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Optional, Sequence, Union

import torch

from viz import checks
from viz.documents import Document
from viz.perf.machine import cache_file, machine_key, same_machine
from viz.perf.wall import NARROW_VOCAB, NARROW_WIDTH, OverheadFloor, measure_overhead
from viz.runtime import resolve_device, using_threads
from viz.spread import Spread

# Each depth: this many recordings of this many decode steps (after one warm-up recording).
REPEATS, MAX_NEW_TOKENS = 3, 16


@dataclass
class FixedCosts(Document):
    """The fixed per-step cost at each measured depth, per dtype, on one machine."""

    KIND: ClassVar[str] = "llm-inference-fixed-costs"
    SCHEMA_VERSION: ClassVar[int] = 1
    WHAT: ClassVar[str] = "fixed-cost file"
    AGAIN: ClassVar[str] = "measure it again with viz.perf.fixed_cost(..., refresh=True)"

    device: str
    device_name: str
    cpu_count: int
    threads: int
    torch_version: str
    floors: list[OverheadFloor] = field(default_factory=list)  # one per dtype
    measured_at: dict[str, str] = field(default_factory=dict)  # "dtype/depth" → when (UTC)
    cpu_features: list[str] = field(default_factory=list)
    cpu_capability: str = ""

    def floor(self, dtype: str) -> Optional[OverheadFloor]:
        return next((o for o in self.floors if o.dtype == dtype), None)


# path → what this process already read or measured
_IN_PROCESS: dict[str, FixedCosts] = {}


def fixed_costs_path(device: Union[str, torch.device] = "cpu",
                     threads: Optional[int] = None) -> Path:
    """The cache file of this machine's fixed costs (beside its peaks)."""
    return cache_file("fixed-cost", device, threads)


def machine_overhead(dtype: str = "float32", depths: Sequence[int] = (30,), *,
                     device: Union[str, torch.device] = "cpu", threads: Optional[int] = None,
                     refresh: bool = False, progress: bool = True) -> OverheadFloor:
    """This machine's fixed cost at each of `depths` in `dtype`, measured once and cached.

    Depths already in the cache are read from it; the others are measured (about 1 s each on
    a 2-core CPU: a model `NARROW_WIDTH` wide, `REPEATS` recordings of `MAX_NEW_TOKENS`
    tokens) and added. refresh=True measures every one of `depths` again. The floor returned
    holds exactly `depths`, with each depth's spread. Lessons 03–08.
    """
    checks.threads(threads)
    dev = resolve_device(device)
    wanted = sorted(set(checks.whole_list("depths", depths)))
    with using_threads(threads) as n:
        file = fixed_costs_path(dev, n)
        costs = _load(file, dev, n)
        have = costs.floor(dtype)
        known = {} if have is None else dict(zip(have.layers, zip(have.seconds, have.spreads)))
        missing = list(wanted) if refresh else [d for d in wanted if d not in known]
        if missing:
            if progress:
                print(f"viz: measuring the fixed cost per step once ({dtype}, "
                      f"{', '.join(map(str, missing))} layers; about a second each)",
                      file=sys.stderr, flush=True)
            floor, _ = measure_overhead(missing, dtype, max_new_tokens=MAX_NEW_TOKENS,
                                        repeats=REPEATS, device=dev)
            when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            for d, sec, spr in zip(floor.layers, floor.seconds, floor.spreads):
                known[d] = (sec, spr)
                costs.measured_at[f"{dtype}/{d}"] = when
            every = sorted(known)
            merged = OverheadFloor(dtype=dtype, hidden_size=NARROW_WIDTH, vocab_size=NARROW_VOCAB,
                                   layers=every, seconds=[known[d][0] for d in every],
                                   spreads=[known[d][1] for d in every], note=floor.note)
            costs.floors = [o for o in costs.floors if o.dtype != dtype] + [merged]
            costs.save(file)
            _IN_PROCESS[str(file)] = costs
    return replace(costs.floor(dtype), layers=wanted, seconds=[known[d][0] for d in wanted],
                   spreads=[known[d][1] for d in wanted])


def fixed_cost(n_layers: int, dtype: str = "float32", **kwargs) -> Spread:
    """The fixed cost per step of a model `n_layers` deep in `dtype` on this machine, in
    seconds, with its spread: `machine_overhead(dtype, [n_layers], **kwargs)`."""
    return machine_overhead(dtype, [n_layers], **kwargs).spreads[0]


def _load(file: Path, dev: torch.device, threads: int) -> FixedCosts:
    if str(file) in _IN_PROCESS:
        return _IN_PROCESS[str(file)]
    costs = None
    if file.is_file():
        try:
            costs = FixedCosts.load(file)
        except ValueError:
            costs = None  # unreadable: measure again
        if costs is not None and (not same_machine(costs, dev, threads)
                                  or any(len(o.spreads) != len(o.layers) for o in costs.floors)):
            costs = None
    if costs is None:
        key = machine_key(dev, threads)
        costs = FixedCosts(**key)
    _IN_PROCESS[str(file)] = costs
    return costs


def forget_in_process() -> None:
    """Forget what this process has read or measured (tests)."""
    _IN_PROCESS.clear()
