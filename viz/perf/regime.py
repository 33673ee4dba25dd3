"""The rule that names what limits a measured step, and its verdict with the margin.

Every performance word the course prints ("overhead-bound", "memory-bound", "compute-bound")
comes from one written rule applied to four measured times (`regime`):

- t — the step's (or pass's) measured time;
- F — the fixed per-step cost: a model of the same depth and a tiny width (lesson 08);
- M — the memory floor: bytes read ÷ the measured read bandwidth;
- C — the compute floor: FLOPs ÷ the measured peak FLOP/s.

**A verdict carries its margin.** Each of the four is measured with a spread
(`viz.spread.Spread`), so `verdict` says how far the numbers were from the rule's two
boundaries (F = t/2, C = M) and, where a boundary lies inside the spread, says **too close to
call** and names the two words the measurement cannot choose between. Where a word is given but
neither roof is near (reading the bytes at the peak would take less than half the step, and so
would the arithmetic), the verdict says what the word means there: which floor is the larger,
and what the rest of the step is made of. Lessons 03–08 print it: `str(verdict)` is one line a
beginner can read (`Verdict.line`), `verdict.details()` the whole comparison with its margins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from viz import checks
from viz.spread import TOO_CLOSE, Spread

REGIMES = ("overhead-bound", "memory-bound", "compute-bound")
# Rule 1 of `regime`: a step is overhead-bound when the fixed cost is at least this share of it.
OVERHEAD_SHARE = 0.5
# A floor is "longer than the step" (no floor for it) only beyond this relative margin.
BROKEN_MARGIN = 1e-6
# A roof is "near" when the step spends at least this share of its time at it (MBU or MFU).
NEAR_ROOF = 0.5

Figure = Union[Spread, float, int]


def utilisation(floor_s: float, seconds: float) -> float:
    """The share of its peak a measured pass reached: its floor (the work at the peak: bytes ÷
    read bandwidth, or FLOPs ÷ the matmul peak) ÷ the time it took. With the memory floor this
    is the MBU (model bandwidth utilisation), with the compute floor the MFU: the one formula
    behind every MBU and MFU in viz.perf (the rule's Verdict, the roofline, the memory wall, the
    GPU's busy time)."""
    return floor_s / seconds


def check_seconds(name: str, value: Any, positive: bool) -> float:
    """`value` as a float if it is a finite number of seconds (> 0 if `positive`, else >= 0);
    a ValueError naming it otherwise, one for not a number and one for out of range."""
    checks.number(name, value, noun="a finite number of seconds")
    return float(checks.number(name, value, 0, open_low=positive, noun=""))


def regime(
    seconds: float,
    memory_floor_s: float,
    compute_floor_s: float,
    fixed_cost_s: float,
    *,
    overhead_share: float = OVERHEAD_SHARE,
) -> str:
    """The rule that names what limits a measured step: overhead-, memory- or compute-bound.

    Inputs, all in seconds: t = the step's measured time; M = its memory floor (bytes read ÷
    the measured read bandwidth); C = its compute floor (FLOPs ÷ the measured peak FLOP/s);
    F = the fixed per-step cost measured with a model of the same depth and a tiny width.

    1. **overhead-bound** if F ≥ overhead_share · t (default 0.5): at least half the step is
       the cost a model with almost no weights pays too, so fewer bytes or FLOPs would barely
       shorten it;
    2. otherwise **compute-bound** if C ≥ M: the arithmetic needs at least as long as reading
       the bytes (the pass sits at or right of the ridge point, as in `viz.perf.roofline`);
    3. otherwise **memory-bound**: reading the bytes takes longer than the arithmetic.

    Boundaries: F = overhead_share · t exactly is overhead-bound; C = M exactly is
    compute-bound. F may exceed t (a noisy measurement): still overhead-bound.
    Bad input (t ≤ 0, M ≤ 0, negative C or F, not a finite number, overhead_share outside
    (0, 1]) raises a ValueError naming it. Lesson 08; tested on hand-made points.
    """
    t = check_seconds("seconds", seconds, positive=True)
    m = check_seconds("memory_floor_s", memory_floor_s, positive=True)
    c = check_seconds("compute_floor_s", compute_floor_s, positive=False)
    f = check_seconds("fixed_cost_s", fixed_cost_s, positive=False)
    checks.number("overhead_share", overhead_share, 0, 1, open_low=True, noun="a fraction")
    if f >= overhead_share * t:
        return "overhead-bound"
    return "compute-bound" if c >= m else "memory-bound"


def explain_regime(
    seconds: float,
    memory_floor_s: float,
    compute_floor_s: float,
    fixed_cost_s: float,
    *,
    overhead_share: float = OVERHEAD_SHARE,
) -> str:
    """`regime`'s verdict with the comparison that decided it, in words (for printing)."""
    name = regime(
        seconds, memory_floor_s, compute_floor_s, fixed_cost_s, overhead_share=overhead_share
    )
    ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
    share = f"{overhead_share:g} ×" if overhead_share != 0.5 else "half of"
    if name == "overhead-bound":
        why = f"fixed cost {ms(fixed_cost_s)} ≥ {share} the step's {ms(seconds)}"
    elif name == "compute-bound":
        why = (
            f"fixed cost {ms(fixed_cost_s)} < {share} {ms(seconds)}, and compute floor "
            f"{ms(compute_floor_s)} ≥ memory floor {ms(memory_floor_s)}"
        )
    else:
        why = (
            f"fixed cost {ms(fixed_cost_s)} < {share} {ms(seconds)}, and memory floor "
            f"{ms(memory_floor_s)} > compute floor {ms(compute_floor_s)}"
        )
    return f"{name}: {why}"


# ---- the verdict, with its margin ---------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """The rule applied to four figures with spreads: a word, or "too close to call"."""

    regime: str  # one of REGIMES, or TOO_CLOSE
    rule: str  # the rule's word on the four medians alone (`regime`; a broken floor left out)
    between: tuple[str, ...]  # when too close: the two words the spreads cannot separate
    step: Spread  # t, seconds
    fixed: Spread  # F, seconds
    memory_floor: Spread  # M, seconds
    compute_floor: Spread  # C, seconds
    overhead_share: float = OVERHEAD_SHARE
    # floors ("memory", "compute") longer than the whole measured step, beyond the spreads: the
    # peak behind such a floor is not what this step's kernels reached, so it is no floor here
    broken: tuple[str, ...] = ()

    @property
    def close(self) -> bool:
        """True if a boundary of the rule lies inside the spreads."""
        return self.regime == TOO_CLOSE

    @property
    def fixed_share(self) -> Spread:
        """F ÷ t, with its spread: rule 1 compares it with `overhead_share`."""
        return self.fixed / self.step

    @property
    def floors_ratio(self) -> Spread:
        """C ÷ M, with its spread: rule 2 compares it with 1."""
        return self.compute_floor / self.memory_floor

    @property
    def mbu(self) -> float:
        """The share of the step that reading its bytes at the peak takes: M ÷ t (= bytes ÷
        time ÷ read bandwidth, the model bandwidth utilisation)."""
        return utilisation(self.memory_floor.median, self.step.median)

    @property
    def mfu(self) -> float:
        """The share of the step its arithmetic at the peak takes: C ÷ t (= MFU)."""
        return utilisation(self.compute_floor.median, self.step.median)

    def line(self) -> str:
        """The verdict in one line: its word, then the one comparison that decided it, e.g.
        "memory-bound — reading the bytes at the peak (38.0 ms) is 88% of the 43.1 ms step"."""

        def ms(x: Spread) -> str:
            return f"{x.median * 1e3:.{2 if x.median < 0.01 else 1}f} ms"

        step, share = f"the {ms(self.step)} step", self.fixed_share
        if self.close and "overhead-bound" in self.between:
            return (
                f"{TOO_CLOSE} ({self.between[0]} or {self.between[1]}) — the fixed cost is "
                f"{share.low:.0%}–{share.high:.0%} of {step}, on both sides of half"
            )
        if self.close:
            return (
                f"{TOO_CLOSE} ({self.between[0]} or {self.between[1]}) — reading the bytes "
                f"({ms(self.memory_floor)}) and the arithmetic ({ms(self.compute_floor)}) at "
                "the peaks take as long within their spreads"
            )
        if self.regime == "overhead-bound":
            return (
                f"overhead-bound — the fixed cost ({ms(self.fixed)}) is {share.median:.0%} "
                f"of {step}"
            )
        reading = self.regime == "memory-bound"
        what, floor, other = (
            ("reading the bytes", self.memory_floor, "the arithmetic")
            if reading
            else ("the arithmetic", self.compute_floor, "reading the bytes")
        )
        use = self.mbu if reading else self.mfu
        if self.broken:  # the other floor is longer than the whole step: no floor here
            return (
                f"{self.regime} — {what} at the peak takes {ms(floor)} of {step}; "
                f"{other}'s floor is longer than the step, so no floor here"
            )
        if use >= NEAR_ROOF:
            text = f"{self.regime} — {what} at the peak ({ms(floor)}) is {use:.0%} of {step}"
        else:
            text = (
                f"{self.regime} — {what} ({ms(floor)} at the peak) outweighs {other} "
                f"({ms(self.compute_floor if reading else self.memory_floor)}); the rest of "
                f"{step} is the fixed cost and kernels below the peaks"
            )
        return text

    def details(self) -> str:
        """The verdict, the comparisons that decided it and their margins (`explain`)."""
        return self.explain()

    def fits(self, word: str) -> bool:
        """True if `word` is this verdict, or one of the two it cannot separate."""
        return word == self.regime or word in self.between

    def explain(self) -> str:
        """The verdict, the comparison that decided it and its margin, in words."""

        def ms(x: Spread) -> str:
            return x.text(1e3, "ms", 2 if x.high < 0.01 else 1, runs=False)

        share, r = self.fixed_share, self.floors_ratio
        half = "half" if self.overhead_share == 0.5 else f"{self.overhead_share:g}×"
        f_part = (
            f"the fixed cost {ms(self.fixed)} is {share.median:.0%} of the step "
            f"{ms(self.step)} ({share.low:.0%}–{share.high:.0%} within their spreads)"
        )
        if self.close and "overhead-bound" in self.between:
            return (
                f"{TOO_CLOSE} between {self.between[0]} and {self.between[1]}: {f_part}, "
                f"which spans {half}; the rule on the medians alone says {self.rule}"
            )
        compute_first = r.median >= 1
        big, small = (
            (self.compute_floor, self.memory_floor)
            if compute_first
            else (self.memory_floor, self.compute_floor)
        )
        k = r if compute_first else Spread(1 / r.median, 1 / r.high, 1 / r.low, r.runs)
        names = ("compute", "memory") if compute_first else ("memory", "compute")
        floors = (
            f"the {names[0]} floor {ms(big)} is {k.median:.2f}× the {names[1]} floor "
            f"{ms(small)} ({k.low:.2f}–{k.high:.2f}×)"
        )
        if self.close:
            return (
                f"{TOO_CLOSE} between memory-bound and compute-bound: {f_part}, under "
                f"{half}; but {floors}, which spans 1×; the rule on the medians alone "
                f"says {self.rule}"
            )
        if self.regime == "overhead-bound":
            return f"overhead-bound: {f_part}, at least {half} of it"
        text = f"{self.regime}: {f_part}, under {half}; {floors}"
        if self.broken:
            which = " and ".join(f"the {b} floor" for b in self.broken)
            text += (
                f". But {which} is longer than the whole measured step: this step's kernels "
                f"went faster than the peak behind it (measured with one large kernel), so "
                f"it is no floor here, and the verdict rests on the other comparisons"
            )
            return text
        if self.mbu < NEAR_ROOF and self.mfu < NEAR_ROOF:
            rest = max(0.0, 1 - share.median - max(self.mbu, self.mfu))
            larger = "reading" if self.regime == "memory-bound" else "arithmetic"
            text += (
                f". The word names the larger floor ({larger}), not a step at a roof: "
                f"at the peaks, reading the bytes would take {self.mbu:.0%} of the step "
                f"(MBU) and the arithmetic {self.mfu:.0%} (MFU), the two overlapping; "
                f"besides the {larger}, the step is the fixed cost ({share.median:.0%}) "
                f"and kernels running below the roofs (~{rest:.0%})"
            )
        return text

    def __str__(self) -> str:
        return self.line()


def verdict(
    step: Figure,
    memory_floor: Figure,
    compute_floor: Figure,
    fixed_cost: Figure,
    *,
    overhead_share: float = OVERHEAD_SHARE,
) -> Verdict:
    """`regime` on four figures with spreads (a `Spread`, or a plain number for an exact one),
    with "too close to call" where a boundary lies inside them.

    Rule 1: F ÷ t runs from F.low ÷ t.high to F.high ÷ t.low; all of it at or above
    `overhead_share` is overhead-bound, all of it below goes on to rule 2, anything else is too
    close to call (between overhead-bound and rule 2's word). Rule 2: C ÷ M likewise against 1.

    A floor longer than the whole measured step (its low end above the step's high end) is no
    floor for this step: the peak behind it, measured with one large kernel, understates the
    kernels this step ran. Seen on a CPU without bfloat16 instructions, whose large bfloat16
    matrix product runs at ~3 GFLOP/s while a bfloat16 decode step's matrix-vector products
    do far better. Such a floor is left out of rule 2 (`Verdict.broken` names it), which then
    names the other floor; with both broken it is too close to call.
    """
    t, m, c, f = (Spread.coerce(x) for x in (step, memory_floor, compute_floor, fixed_cost))
    word = regime(t.median, m.median, c.median, f.median, overhead_share=overhead_share)
    for name, s in (("step", t), ("memory floor", m)):
        if not s.low > 0:
            raise ValueError(f"the {name}'s spread must stay above 0 s, not {s}")
    share, ratio = f / t, c / m
    # (a relative margin, so that rounding in a computed pass, whose step is its longer floor,
    # never counts as a floor longer than the step)
    broken = tuple(
        name
        for name, floor in (("memory", m), ("compute", c))
        if floor.low > t.high * (1 + BROKEN_MARGIN)
    )
    if broken == ("compute",):
        second = "memory-bound"
    elif broken == ("memory",):
        second = "compute-bound"
    else:
        second = "compute-bound" if ratio.median >= 1 else "memory-bound"
    if len(broken) == 1 and word != "overhead-bound":
        word = second  # the medians' rule, too, leaves out a floor that is no floor here
    if share.low >= overhead_share:
        name, between = "overhead-bound", ()
    elif share.high >= overhead_share:
        name, between = TOO_CLOSE, ("overhead-bound", second)
    elif len(broken) == 1:
        name, between = second, ()
    elif len(broken) == 2:
        name, between = TOO_CLOSE, ("memory-bound", "compute-bound")
    elif ratio.low >= 1:
        name, between = "compute-bound", ()
    elif ratio.high >= 1:
        name, between = TOO_CLOSE, ("memory-bound", "compute-bound")
    else:
        name, between = "memory-bound", ()
    return Verdict(
        regime=name,
        rule=word,
        between=between,
        step=t,
        fixed=f,
        memory_floor=m,
        compute_floor=c,
        overhead_share=overhead_share,
        broken=broken,
    )
