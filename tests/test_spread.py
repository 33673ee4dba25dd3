"""A figure with its spread: medians and quartiles worked out by hand; spreads carried through
division the worst-case way; the text a lesson prints; bad input refused."""

import pytest

from viz import Spread


def test_median_and_middle_half_by_hand():
    s = Spread.of([5, 1, 4, 2, 3])  # sorted 1 2 3 4 5: median 3, quartiles 2 and 4
    assert (s.median, s.low, s.high, s.runs) == (3.0, 2.0, 4.0, 5)
    even = Spread.of([1, 2, 3, 4])  # numpy's linear quartiles: 1.75, 2.5, 3.25
    assert (even.low, even.median, even.high) == (1.75, 2.5, 3.25)
    one = Spread.of([7.0])
    assert (one.low, one.median, one.high, one.runs) == (7.0, 7.0, 7.0, 1)
    assert Spread.exact(4).runs == 0 and Spread.coerce(4) == Spread.exact(4)


def test_an_outlier_moves_the_median_little_and_the_fastest_a_lot():
    # six reads of 32 GB/s and one lucky one at 72 (what the project machine showed)
    rates = [32e9, 33e9, 31e9, 32e9, 72e9, 33e9, 32e9]
    s = Spread.of(rates)
    assert s.median == 32e9 and s.high == 33e9 and max(rates) == 72e9


def test_division_carries_the_spread_the_worst_case_way():
    a, b = Spread(10.0, 9.0, 12.0, 5), Spread(2.0, 1.5, 2.5, 7)
    r = a / b
    assert (r.median, r.low, r.high, r.runs) == (5.0, 9.0 / 2.5, 12.0 / 1.5, 5)
    assert (a / 2).median == 5.0 and (a / 2).low == 4.5
    d = a - b
    assert (d.median, d.low, d.high) == (8.0, 9.0 - 2.5, 12.0 - 1.5)
    t = Spread(0.5, 0.4, 0.8, 3)  # seconds
    rate = t.rate(100.0)  # 100 units in t seconds: slow runs give the low end
    assert (rate.median, rate.low, rate.high) == (200.0, 125.0, 250.0)
    assert a.scaled(1e3).text(1, "ms", 0) == "10,000 ms (9,000–12,000, 5 runs)"
    # a derived spread prints no count of runs of its own
    assert r.derived and d.derived and rate.derived and not a.derived
    assert r.text(digits=2) == "5.00 (3.60–8.00)"


def test_overlap_and_contains():
    a, b, c = Spread(10, 9, 11, 5), Spread(12, 10.5, 13, 5), Spread(20, 19, 21, 5)
    assert a.overlaps(b) and b.overlaps(a) and not a.overlaps(c)
    assert a.contains(9) and a.contains(11) and not a.contains(11.5)
    assert a.relative == pytest.approx(0.2)


def test_text():
    assert Spread(0.0621, 0.061, 0.063, 7).text(1e3, "ms") == "62.1 ms (61.0–63.0, 7 runs)"
    assert Spread.exact(0.5).text(1e3, "ms") == "500.0 ms"
    assert Spread.of([2.0]).text() == "2.0"
    assert Spread(0.0621, 0.061, 0.063, 7).text(1e3, "ms", runs=False) == "62.1 ms (61.0–63.0)"
    assert Spread(3.0, 3.0, 3.0, 4).text() == "3.0 (4 runs)"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: Spread.of([]), "at least one measurement"),
        (lambda: Spread.of([1.0, float("nan")]), "finite number"),
        (lambda: Spread(1.0, 2.0, 3.0, 1), "low <= median <= high"),
        (lambda: Spread(1.0, 0.5, float("inf"), 1), "high must be a finite number"),
        (lambda: Spread(1.0, 1.0, 1.0, -1), "runs must be a whole number >= 0"),
        (lambda: Spread(1.0, 1.0, 1.0, 1) / 0, "divide by a positive figure"),
        (lambda: Spread(1.0, 1.0, 1.0, 1).scaled(0), "scale by a positive number"),
        (lambda: Spread(1.0, 0.0, 1.0, 1).rate(5), "positive times"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
