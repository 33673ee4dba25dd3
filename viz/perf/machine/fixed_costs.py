"""This machine's fixed cost per step: how it is measured, and the figure, measured once per
machine and reused by every lesson.

A forward pass pays a cost that does not depend on how many weights it reads: Python, the
framework's dispatch and hundreds of small kernels, layer after layer. `measure_overhead`
measures it with models of the same depth and a tiny width (`narrow_config`: width 64, a
512-token vocabulary): their weights take almost no time to read, so their step time *is* the
fixed cost (`OverheadFloor`, one time per depth; each step timed by
`viz.perf.wall_point.measure_point`).

Lessons 03, 04, 06, 07 and 08 all need it for the course model's depth. When each lesson
measured it once for itself, one execution of the course printed 7.3, 7.5, 7.9, 9.8 and
13.7 ms (issue 17): five numbers for one quantity. So it is measured **once per machine**, with
its spread (several recordings, the median decode step and the middle half of the steps),
saved beside the peaks in the viz cache folder (keyed on the same machine facts,
`viz.perf.machine.cache`), and every lesson reads the same figure:

    fixed = perf.fixed_cost(30)              # a viz.Spread, seconds; measured the first time
    floor = perf.machine_overhead("float32", [1, 30])   # the floor at several depths

`refresh=True` measures again (and saves). Lesson 08 explains the method.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Optional, Sequence, Union

import numpy as np
import torch

from viz import checks
from viz.documents import Document
from viz.perf.configs import from_config, read_config
from viz.perf.machine.cache import MachineCache, machine_key
from viz.perf.wall_point import WallPoint, measure_point, short_dtype
from viz.provenance import (
    environment_from_loose,
    iso_utc,
    loose_names,
    unknown_environment,
    utc_now,
)
from viz.runtime import environment, release_memory, resolve_device, using_threads
from viz.spread import Spread
from viz.trace import Environment

# The tiny width and vocabulary of the models that measure the fixed cost.
NARROW_WIDTH, NARROW_VOCAB = 64, 512
# Each depth: this many recordings of this many decode steps (after one warm-up recording).
REPEATS, MAX_NEW_TOKENS = 3, 16


# ---- the method: tiny-width models of each depth -------------------------------------------------
@dataclass
class OverheadFloor:
    """The fixed per-step cost at each depth, in one dtype: tiny-width models, measured."""

    dtype: str
    hidden_size: int  # the tiny width (NARROW_WIDTH)
    vocab_size: int  # the tiny vocabulary (NARROW_VOCAB)
    layers: list[int]  # depths measured, increasing
    seconds: list[float]  # median decode step of the tiny model at each depth
    assumed: bool = False  # True: not measured here (a computed run's stated assumption)
    note: str = ""  # how it was obtained
    spreads: list[Spread] = field(default_factory=list)  # each depth's steps ([]: not kept)

    def __post_init__(self):
        if len(self.layers) != len(self.seconds) or not self.layers:
            raise ValueError("an overhead floor needs one time per depth, and at least one depth")
        if self.spreads and len(self.spreads) != len(self.layers):
            raise ValueError("an overhead floor needs one spread per depth, or none")
        if sorted(set(self.layers)) != list(self.layers):
            raise ValueError(
                f"overhead floor depths must increase with no repeats, not {self.layers}"
            )

    @property
    def per_layer_s(self) -> Optional[float]:
        """Least-squares seconds per layer across the depths (None with a single depth)."""
        if len(self.layers) < 2:
            return None
        return float(np.polyfit(self.layers, self.seconds, 1)[0])

    @property
    def constant_s(self) -> Optional[float]:
        """Least-squares intercept: the part of the fixed cost that does not grow with depth."""
        if len(self.layers) < 2:
            return None
        return float(np.polyfit(self.layers, self.seconds, 1)[1])

    def at(self, n_layers: int) -> float:
        """The fixed cost of a step through `n_layers` layers: measured at that depth when it
        was, else read off the least-squares line through the measured depths."""
        if n_layers in self.layers:
            return self.seconds[self.layers.index(n_layers)]
        if len(self.layers) < 2:
            raise ValueError(
                f"the fixed cost was measured at {self.layers} layers only: "
                f"measure it at {n_layers} layers too (measure_overhead)"
            )
        return max(0.0, self.constant_s + self.per_layer_s * n_layers)

    def spread_at(self, n_layers: int) -> Spread:
        """The fixed cost at `n_layers` with its spread: the measured steps' at a measured
        depth; exact (no spread known) where it is read off the line or was not kept."""
        if n_layers in self.layers and self.spreads:
            return self.spreads[self.layers.index(n_layers)]
        return Spread.exact(self.at(n_layers))


def narrow_config(
    config: Union[str, dict],
    hidden_size: int = NARROW_WIDTH,
    *,
    vocab_size: Optional[int] = NARROW_VOCAB,
    n_layers: Optional[int] = None,
    name: Optional[str] = None,
) -> dict:
    """A config dict for `from_config`: `config`'s depth (or `n_layers`) at a smaller width.

    Heads of 64 dimensions (one key/value head), an MLP 3× as wide as the model; vocab_size
    None keeps the original vocabulary. The default (width 64, vocabulary 512) has almost no
    bytes to read: its step time is the fixed per-step cost of that depth.
    """
    entry = read_config(config)
    if not checks.is_whole(hidden_size) or hidden_size < 8 or hidden_size % 8:
        checks.refuse("hidden_size", "a multiple of 8 that is >= 8", hidden_size)
    c = dict(entry["config"])
    head_dim = min(64, hidden_size)
    c.update(
        hidden_size=hidden_size,
        intermediate_size=3 * hidden_size,
        num_attention_heads=max(1, hidden_size // head_dim),
        num_key_value_heads=1,
        head_dim=head_dim,
    )
    if vocab_size is not None:
        c["vocab_size"] = int(vocab_size)
    if n_layers is not None:
        c["num_hidden_layers"] = checks.whole("n_layers", n_layers, 1)
    depth = c["num_hidden_layers"]
    return {
        "name": name or f"{depth} layers × width {hidden_size}",
        "source": f"{entry.get('source', entry['name'])} (narrowed by viz.perf.narrow_config)",
        "config": c,
    }


def measure_overhead(
    depths: Sequence[int],
    dtype: str = "float32",
    *,
    base: Union[str, dict] = "smollm2-135m",
    hidden_size: int = NARROW_WIDTH,
    vocab_size: int = NARROW_VOCAB,
    max_new_tokens: int = 16,
    repeats: int = 2,
    device="cpu",
    threads: Optional[int] = None,
) -> tuple[OverheadFloor, list[WallPoint]]:
    """The fixed per-step cost: a tiny-width model of each depth, built, timed and freed.

    Returns the floor and the tiny models' own points (each overhead-bound by construction:
    its fixed cost is its own time). About 1 s per depth on a 2-core CPU.
    """
    depths = sorted(set(checks.whole_list("depths", depths)))
    points = []
    for n in depths:
        lm = from_config(
            narrow_config(base, hidden_size, vocab_size=vocab_size, n_layers=n),
            device=device,
            dtype=dtype,
        )
        p = measure_point(
            lm,
            max_new_tokens=max_new_tokens,
            repeats=repeats,
            kind="fixed cost",
            label=f"{n} layer{'s' if n != 1 else ''} × {hidden_size} {short_dtype(dtype)}",
            threads=threads,
        )
        points.append(replace(p, fixed_cost_s=p.seconds))
        weight_bytes = lm.spec.weight_bytes
        del lm
        release_memory(weight_bytes)
    floor = OverheadFloor(
        dtype=dtype,
        hidden_size=hidden_size,
        vocab_size=vocab_size,
        layers=depths,
        seconds=[p.seconds for p in points],
        note=f"measured: median decode step of a model {hidden_size} wide "
        f"with a {vocab_size}-token vocabulary at each depth",
        spreads=[p.spread for p in points],
    )
    return floor, points


# ---- the figure, measured once per machine ---------------------------------------------------
# The provenance fields FixedCosts kept loose before schema 2: now its `environment`'s.
FIXED_LOOSE = (
    "device",
    "device_name",
    "threads",
    "torch_version",
    "cpu_features",
    "cpu_capability",
)
FIXED_SOURCE = "measured by viz.perf.fixed_cost"


def _fixed_costs_v1_to_v2(data: dict) -> dict:
    """Schema 1: device, threads, torch and CPU features were loose fields, and each figure's
    time read "2026-12-05 12:12 UTC". They move into `environment` (`viz.provenance`), whose
    time is the newest figure's; each figure's time becomes ISO."""
    times = {k: iso_utc(v) for k, v in (data.get("measured_at") or {}).items()}
    data = {**data, "measured_at": times}
    return environment_from_loose(
        data, FIXED_LOOSE, FIXED_SOURCE, measured_at=max(times.values(), default="")
    )


@loose_names(*FIXED_LOOSE)
@dataclass
class FixedCosts(Document):
    """The fixed per-step cost at each measured depth, per dtype, on one machine.

    Where and with what is `environment` (`viz.provenance`; its fields read as before too:
    `costs.threads`); when each figure was measured is `measured_at`, the newest of them the
    environment's."""

    KIND: ClassVar[str] = "llm-inference-fixed-costs"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: _fixed_costs_v1_to_v2}
    WHAT: ClassVar[str] = "fixed-cost file"
    AGAIN: ClassVar[str] = "measure it again with viz.perf.fixed_cost(..., refresh=True)"

    cpu_count: int
    floors: list[OverheadFloor] = field(default_factory=list)  # one per dtype
    # "dtype/depth" → when it was measured (ISO UTC, `viz.provenance.utc_now`): the file gathers
    # its figures over many lessons, so each keeps its own time.
    measured_at: dict[str, str] = field(default_factory=dict)
    environment: Environment = field(default_factory=unknown_environment)

    def floor(self, dtype: str) -> Optional[OverheadFloor]:
        return next((o for o in self.floors if o.dtype == dtype), None)


# The fixed costs' file in `measurements_dir()/fixed-cost`, and what this process already read
# or measured there.
_CACHE = MachineCache("fixed-cost", FixedCosts)


def fixed_costs_path(
    device: Union[str, torch.device] = "cpu", threads: Optional[int] = None
) -> Path:
    """The cache file of this machine's fixed costs (beside its peaks)."""
    return _CACHE.path(device, threads)


def machine_overhead(
    dtype: str = "float32",
    depths: Sequence[int] = (30,),
    *,
    device: Union[str, torch.device] = "cpu",
    threads: Optional[int] = None,
    refresh: bool = False,
    progress: bool = True,
) -> OverheadFloor:
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
                print(
                    f"viz: measuring the fixed cost per step once ({dtype}, "
                    f"{', '.join(map(str, missing))} layers; about a second each)",
                    file=sys.stderr,
                    flush=True,
                )
            floor, _ = measure_overhead(
                missing, dtype, max_new_tokens=MAX_NEW_TOKENS, repeats=REPEATS, device=dev
            )
            when = utc_now()
            costs.environment.measured_at = when  # the newest figure's time
            for d, sec, spr in zip(floor.layers, floor.seconds, floor.spreads):
                known[d] = (sec, spr)
                costs.measured_at[f"{dtype}/{d}"] = when
            every = sorted(known)
            merged = OverheadFloor(
                dtype=dtype,
                hidden_size=NARROW_WIDTH,
                vocab_size=NARROW_VOCAB,
                layers=every,
                seconds=[known[d][0] for d in every],
                spreads=[known[d][1] for d in every],
                note=floor.note,
            )
            costs.floors = [o for o in costs.floors if o.dtype != dtype] + [merged]
            _CACHE.write(file, costs)
    return replace(
        costs.floor(dtype),
        layers=wanted,
        seconds=[known[d][0] for d in wanted],
        spreads=[known[d][1] for d in wanted],
    )


def fixed_cost(n_layers: int, dtype: str = "float32", **kwargs) -> Spread:
    """The fixed cost per step of a model `n_layers` deep in `dtype` on this machine, in
    seconds, with its spread: `machine_overhead(dtype, [n_layers], **kwargs)`."""
    return machine_overhead(dtype, [n_layers], **kwargs).spreads[0]


def _load(file: Path, dev: torch.device, threads: int) -> FixedCosts:
    """This process's fixed costs for `file`: what it already has, else the file's if it was
    measured on this machine, else none yet (an empty `FixedCosts` keyed on this machine)."""
    costs = _CACHE.in_process(file)
    if costs is not None:
        return costs
    costs = _CACHE.read(file, dev, threads)
    if costs is not None and any(len(o.spreads) != len(o.layers) for o in costs.floors):
        costs = None  # a floor saved without its spreads: measure again
    if costs is None:
        costs = _this_machine(dev, threads)
    return _CACHE.remember(file, costs)


def _this_machine(dev: torch.device, threads: int) -> FixedCosts:
    """An empty FixedCosts keyed on this machine (`machine_key`: what `MachineCache.read`
    compares a file with), nothing measured yet."""
    key = machine_key(dev, threads)
    # dtype "": the floors are in several (one per dtype)
    env = replace(environment(dev, "", source=FIXED_SOURCE), **{n: key[n] for n in FIXED_LOOSE})
    return FixedCosts(cpu_count=key["cpu_count"], environment=env)


def forget_in_process() -> None:
    """Forget what this process has read or measured (tests)."""
    _CACHE.forget()
