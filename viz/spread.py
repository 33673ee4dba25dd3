"""A measured figure with its spread: the median of several runs, and where the middle half fell.

Every timed figure a lesson rests a claim on (a peak, the fixed cost of a step, a step's time,
a sweep point) is measured several times. On a shared machine one run can be far off in either
direction (another program took a core; a buffer happened to sit in the cache), so:

- the **figure** is the median of the runs: half were faster, half slower. It holds still from
  one measurement to the next far better than the fastest run does (lesson 08 shows both);
- its **spread** is the range the middle half of the runs fell in, from the 25th to the 75th
  percentile (`low`, `high`). Two figures whose spreads overlap cannot be told apart by these
  runs: a verdict between them is "too close to call" (`viz.perf.verdict`).

A quantity computed from measured ones carries their spread along, taking the worst case at
each end: `a / b` runs from `a.low / b.high` to `a.high / b.low`. That is wider than a
statistician's interval, on purpose: a lesson that says "too close to call" a little too often
is better than one that calls a difference that is not there.

    s = Spread.of([0.061, 0.063, 0.060, 0.071, 0.062])
    print(s.text(1e3, "ms"))        # "62.0 ms (61.0–63.0, 5 runs)"
    rate = s.rate(538e6)            # bytes ÷ seconds: a bandwidth with its spread

Introduced in lesson 02, where the first figure with a spread is printed.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence, Union

import numpy as np

from viz import checks

Number = Union[int, float]


@dataclass(frozen=True)
class Spread:
    """The median of `runs` measurements and the middle half of them (25th–75th percentile)."""

    median: float  # the figure
    low: float  # 25th percentile of the runs (or of a derived quantity, its worst-case low end)
    high: float  # 75th percentile (or the worst-case high end)
    runs: int  # measurements behind it (0: exact, e.g. a count or a datasheet figure)
    derived: bool = False  # computed from other spreads (a ratio, a difference, a rate)

    def __post_init__(self):
        for name in ("median", "low", "high"):
            checks.number(f"a spread's {name}", getattr(self, name), noun="a finite number")
        if not self.low <= self.median <= self.high:
            raise ValueError(
                f"a spread must have low <= median <= high, not {self.low!r} <= "
                f"{self.median!r} <= {self.high!r}"
            )
        checks.whole("runs", self.runs, 0)

    # ---- making one ---------------------------------------------------------------------
    @classmethod
    def of(cls, samples: Iterable[Number]) -> "Spread":
        """The spread of measured samples: their median and 25th/75th percentiles."""
        xs = np.asarray([float(x) for x in samples], dtype=float)
        if xs.size == 0:
            raise ValueError("a spread needs at least one measurement")
        if not np.all(np.isfinite(xs)):
            raise ValueError("every measurement must be a finite number")
        low, median, high = np.percentile(xs, [25, 50, 75])
        return cls(float(median), float(min(low, median)), float(max(high, median)), int(xs.size))

    @classmethod
    def exact(cls, value: Number) -> "Spread":
        """A figure with no spread: a count, a datasheet number, an assumption."""
        return cls(float(value), float(value), float(value), 0)

    @classmethod
    def coerce(cls, value: Union["Spread", Number]) -> "Spread":
        """`value` if it is a Spread, else an exact one (a plain number has no spread)."""
        return value if isinstance(value, Spread) else cls.exact(value)

    # ---- arithmetic that carries the spread along (worst case at each end) ---------------
    def scaled(self, factor: Number) -> "Spread":
        """This figure times a positive constant (a unit change, a count per run)."""
        if not factor > 0:
            raise ValueError(f"scale by a positive number, not {factor!r}")
        return Spread(
            self.median * factor, self.low * factor, self.high * factor, self.runs, self.derived
        )

    def rate(self, amount: Number) -> "Spread":
        """`amount` ÷ this figure: a rate from times (bytes ÷ seconds), or a time from a rate
        (FLOPs ÷ FLOP/s). The low end comes from this figure's high end."""
        if not amount > 0 or not self.low > 0:
            raise ValueError("a rate needs a positive amount and positive times")
        return Spread(amount / self.median, amount / self.high, amount / self.low, self.runs, True)

    def __truediv__(self, other: Union["Spread", Number]) -> "Spread":
        o = Spread.coerce(other)
        if not o.low > 0:
            raise ValueError("divide by a positive figure only")
        return Spread(
            self.median / o.median,
            self.low / o.high,
            self.high / o.low,
            min(self.runs, o.runs) if self.runs and o.runs else self.runs or o.runs,
            True,
        )

    def __sub__(self, other: Union["Spread", Number]) -> "Spread":
        o = Spread.coerce(other)
        return Spread(
            self.median - o.median,
            self.low - o.high,
            self.high - o.low,
            min(self.runs, o.runs) if self.runs and o.runs else self.runs or o.runs,
            True,
        )

    # ---- reading it -------------------------------------------------------------------
    def contains(self, value: Number) -> bool:
        """True if `value` lies inside the spread (ends included)."""
        return self.low <= value <= self.high

    def overlaps(self, other: "Spread") -> bool:
        """True if the two spreads share any value: these runs cannot tell them apart."""
        return self.low <= other.high and other.low <= self.high

    @property
    def relative(self) -> float:
        """The spread's width as a share of the figure: (high − low) ÷ median."""
        return (self.high - self.low) / abs(self.median) if self.median else math.inf

    def text(self, scale: Number = 1.0, unit: str = "", digits: int = 1, runs: bool = True) -> str:
        """e.g. "62.0 ms (61.0–63.0, 5 runs)"; an exact figure prints alone. runs=False
        leaves out the count: "62.0 ms (61.0–63.0)"; so does a derived spread (its ends come
        from several figures' spreads, not from runs of its own)."""
        f = lambda v: f"{v * scale:,.{digits}f}"  # noqa: E731
        u = f" {unit}" if unit else ""
        count = f", {self.runs} runs" if runs and self.runs > 1 and not self.derived else ""
        if self.runs == 0 or self.low == self.high:
            return f"{f(self.median)}{u}" + (f" ({count[2:]})" if count else "")
        return f"{f(self.median)}{u} ({f(self.low)}–{f(self.high)}{count})"

    def __str__(self) -> str:
        return self.text(digits=3)


# What a verdict or a band says where a boundary lies inside the spreads.
TOO_CLOSE = "too close to call"


# ---- a measured figure put in one of a few ranges, with its margin -----------------------------
@dataclass(frozen=True)
class Band:
    """Which of a few ranges a measured figure falls in (`band`): `word` is the range its
    spread lies in, or "too close to call" where the spread crosses a boundary; `between` then
    holds the two ranges it cannot separate (the median's and the nearer neighbour's).
    `viz.compare_prediction` takes it as it takes a regime verdict: either word of `between`
    counts as right. Lessons 04, 06, 07, 08, 09, 10, 11."""

    value: Spread
    word: str
    between: tuple = ()

    @property
    def regime(self) -> str:  # the attribute viz.compare_prediction reads
        return self.word

    def __str__(self) -> str:
        if self.between:
            return f"{TOO_CLOSE} between {self.between[0]!r} and {self.between[1]!r}"
        return self.word


def band(value: Any, edges: Sequence[float], words: Sequence[str]) -> Band:
    """Put `value` (a `viz.Spread`, or a plain number) in one of len(edges) + 1 ranges:
    words[0] below edges[0], words[i] from edges[i - 1] up to edges[i], the last word from
    edges[-1] up. Where its spread (low–high) crosses a boundary it is too close to call."""
    edges, words = [float(e) for e in edges], list(words)
    if len(words) != len(edges) + 1 or not edges or edges != sorted(set(edges)):
        raise ValueError("give increasing edges and one word more than edges")
    value = Spread.coerce(value)
    where = lambda x: bisect.bisect_right(edges, x)  # noqa: E731
    lo, mid, hi = where(value.low), where(value.median), where(value.high)
    if lo == hi:
        return Band(value, words[mid])
    if mid == lo:
        other = mid + 1
    elif mid == hi:
        other = mid - 1
    else:  # across two boundaries: the one nearer the median, relative to it
        down = (value.median - edges[mid - 1]) / abs(value.median)
        up = (edges[mid] - value.median) / abs(value.median)
        other = mid - 1 if down <= up else mid + 1
    return Band(value, TOO_CLOSE, tuple(words[i] for i in sorted((mid, other))))


# ---- a median across repeated runs, with a confidence interval ---------------------------------
@dataclass(frozen=True)
class Interval:
    """The median of `runs` repeated measurements of one figure (e.g. a load run's p50 TTFT,
    each repeat a whole run) and a distribution-free confidence interval for the true median:
    two order statistics of the runs, `low` the k-th smallest and `high` the k-th largest. With
    n runs, the true median lies between them with probability `coverage` = 1 − 2·P(B ≤ k − 1),
    B ~ Binomial(n, ½), whatever the figure's distribution (no normality assumed): k is the
    largest that keeps `coverage` ≥ the level asked for. Few runs cannot reach a high level:
    3 runs give at best 75 % (their min and max), 5 give 94 %, 6 give 97 %; `coverage` says what
    was reached, and `text` prints it. One run has no interval (coverage 0). Used by
    `viz.serve.sweep_rates` for repeated load runs (lesson 10, `benchmarks/serving.py`)."""

    median: float
    low: float
    high: float
    runs: int
    coverage: float  # the probability that [low, high] holds the true median (0 for one run)

    @classmethod
    def of(cls, samples: Iterable[Number], level: float = 0.95) -> "Interval":
        xs = sorted(float(x) for x in samples)
        if not xs:
            raise ValueError("an interval needs at least one measurement")
        if not all(math.isfinite(x) for x in xs):
            raise ValueError("every measurement must be a finite number")
        if not 0 < level < 1:
            raise ValueError(f"level must be between 0 and 1, not {level!r}")
        n, median = len(xs), float(np.median(xs))
        if n == 1:
            return cls(median, xs[0], xs[0], 1, 0.0)
        k, cov = 1, median_coverage(n, 1)
        while k + 1 <= n // 2 and median_coverage(n, k + 1) >= level:
            k += 1
            cov = median_coverage(n, k)
        return cls(median, xs[k - 1], xs[n - k], n, cov)

    def overlaps(self, other: "Interval") -> bool:
        return self.low <= other.high and other.low <= self.high

    def text(self, scale: Number = 1.0, unit: str = "", digits: int = 1) -> str:
        """e.g. "62.0 ms (CI 75 %: 58.0–66.0, 3 runs)"; one run: "62.0 ms (1 run)"."""
        f = lambda v: f"{v * scale:,.{digits}f}"  # noqa: E731
        u = f" {unit}" if unit else ""
        if self.runs == 1:
            return f"{f(self.median)}{u} (1 run)"
        return (
            f"{f(self.median)}{u} (CI {self.coverage:.0%}: {f(self.low)}–{f(self.high)}, "
            f"{self.runs} runs)"
        )

    def __str__(self) -> str:
        return self.text(digits=3)


def median_coverage(n: int, k: int) -> float:
    """The probability that the k-th smallest and k-th largest of n independent runs enclose
    the true median: 1 − 2·P(Binomial(n, ½) ≤ k − 1)."""
    if not 1 <= k <= n // 2 + (n % 2):
        raise ValueError(f"k must be from 1 to {n // 2 + n % 2} for {n} runs, not {k}")
    tail = sum(math.comb(n, i) for i in range(k)) / 2**n
    return max(0.0, 1.0 - 2.0 * tail)
