"""The verdict with its margin: the rule's word where the spreads keep clear of its two
boundaries (F = t/2, C = M), "too close to call" where a boundary lies inside them, and the
words a learner reads beside it. Every expected value is worked out here by hand."""

import pytest

from viz import Spread, compare_prediction
from viz.perf import TOO_CLOSE, regime, verdict

MS = 1e-3


def s(median, low, high, runs=7):
    return Spread(median * MS, low * MS, high * MS, runs)


def test_exact_figures_give_the_rule_itself():
    for t, m, c, f in [(10, 0.1, 0.01, 8), (44, 20, 1.4, 8), (200, 25, 90, 26)]:
        v = verdict(t * MS, m * MS, c * MS, f * MS)
        assert v.regime == v.rule == regime(t * MS, m * MS, c * MS, f * MS)
        assert not v.close and v.between == ()


def test_a_clear_memory_bound_step_far_from_both_roofs_says_what_the_word_means():
    # fixed share 7.8/45 .. 8.2/43 = 17–19 %, floors ratio 1.3/21 .. 1.5/19 < 1: memory-bound
    v = verdict(s(44, 43, 45), s(20, 19, 21), s(1.4, 1.3, 1.5), s(8, 7.8, 8.2))
    assert v.regime == "memory-bound" and not v.close and v.fits("memory-bound")
    assert v.mbu == pytest.approx(20 / 44) and v.mfu == pytest.approx(1.4 / 44)
    assert v.fixed_share.low == pytest.approx(7.8 / 45) and v.fixed_share.high == pytest.approx(
        8.2 / 43
    )
    text = v.details()
    assert text.startswith(
        "memory-bound: the fixed cost 8.00 ms (7.80–8.20) is 18% of the step "
        "44.0 ms (43.0–45.0) (17%–19% within their spreads), under half; the "
        "memory floor 20.0 ms (19.0–21.0) is 14.29× the compute floor 1.40 ms "
        "(1.30–1.50) (12.67–16.15×)"
    )
    assert "The word names the larger floor (reading), not a step at a roof" in text
    assert "reading the bytes would take 45% of the step (MBU)" in text
    assert "the arithmetic 3% (MFU), the two overlapping" in text
    # the larger floor, the fixed cost and the rest make the whole step: 20 + 8 + 16 = 44 ms
    assert text.endswith(
        "besides the reading, the step is the fixed cost (18%) and kernels "
        "running below the roofs (~36%)"
    )


def test_a_step_at_its_roof_gets_no_such_note():
    # the memory floor is 80 % of the step: the roof is near
    v = verdict(s(25, 24, 26), s(20, 19.5, 20.5), s(1, 0.9, 1.1), s(2, 1.9, 2.1))
    assert v.regime == "memory-bound" and "names the larger floor" not in v.details()


def test_the_fixed_share_spanning_one_half_is_too_close_to_call():
    # F/t runs from 4.8/11 = 44 % to 5.2/9 = 58 %: the boundary (50 %) lies inside
    v = verdict(s(10, 9, 11), s(3, 2.9, 3.1), s(0.2, 0.19, 0.21), s(5, 4.8, 5.2))
    assert v.regime == TOO_CLOSE and v.close and v.rule == "overhead-bound"
    assert v.between == ("overhead-bound", "memory-bound")
    assert v.fits("overhead-bound") and v.fits("memory-bound") and not v.fits("compute-bound")
    assert v.details().startswith("too close to call between overhead-bound and memory-bound")
    assert "the rule on the medians alone says overhead-bound" in v.details()


def test_overlapping_floors_are_too_close_to_call():
    # C/M runs from 11/13 = 0.85 to 14/12 = 1.17: spans 1
    v = verdict(s(60, 58, 62), s(12.5, 12, 13), s(12.6, 11, 14), s(5, 4.9, 5.1))
    assert v.regime == TOO_CLOSE and v.between == ("memory-bound", "compute-bound")
    assert v.rule == "compute-bound"  # 12.6 ≥ 12.5 on the medians
    assert "the compute floor 12.6 ms (11.0–14.0) is 1.01× the memory floor" in v.details()
    assert "which spans 1×" in v.details()


def test_clear_verdicts_just_outside_the_boundaries():
    # F/t at most 14.1/29 = 48.6 %: not overhead; C/M at least 13.1/13 > 1: compute-bound
    v = verdict(s(30, 29, 31), s(13, 12.9, 13), s(13.5, 13.1, 14), s(14, 13.9, 14.1))
    assert v.regime == "compute-bound" and not v.close
    # F/t at least 5.05/10 = 50.5 %: overhead-bound
    v = verdict(s(9.5, 9, 10), s(1, 1, 1), s(0.1, 0.1, 0.1), s(5.1, 5.05, 5.2))
    assert v.regime == "overhead-bound"
    assert v.details() == (
        "overhead-bound: the fixed cost 5.10 ms (5.05–5.20) is 54% of the step 9.5 "
        "ms (9.0–10.0) (50%–58% within their spreads), at least half of it"
    )


def test_bad_figures_are_refused():
    with pytest.raises(ValueError, match="seconds must be > 0"):
        verdict(0.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="memory floor's spread must stay above 0 s"):
        verdict(1.0, Spread(0.1, 0.0, 0.2, 3), 0.1, 0.1)


def test_a_prediction_is_checked_against_a_verdict():
    close = verdict(s(10, 9, 11), s(3, 2.9, 3.1), s(0.2, 0.19, 0.21), s(5, 4.8, 5.2))
    regimes = ["overhead-bound", "memory-bound", "compute-bound"]
    ok = compare_prediction("memory-bound", close, options=regimes)
    assert ok.ok is True and "too close to call here" in ok.message
    assert compare_prediction("compute-bound", close, options=regimes).ok is False
    clear = verdict(44 * MS, 20 * MS, 1.4 * MS, 8 * MS)
    assert compare_prediction("memory-bound", clear, options=regimes).ok is True
    no = compare_prediction("overhead-bound", clear, options=regimes)
    assert no.ok is False and "'memory-bound'" in no.message
    assert compare_prediction(None, close, options=regimes).ok is None


def test_a_floor_longer_than_the_step_is_no_floor():
    # a bfloat16 decode step on a CPU without bfloat16 instructions (the lesson 08 stand-in):
    # the step took 13.8 ms, its "compute floor" from the slow matmul peak is 82.5 ms
    v = verdict(s(13.8, 13.4, 14.1), s(6.8, 6.7, 6.9), s(82.5, 82, 90), s(5.1, 5.0, 5.2))
    assert regime(13.8, 6.8, 82.5, 5.1) == "compute-bound"  # the plain rule is fooled
    assert v.rule == "memory-bound"  # the verdict's medians leave the broken floor out too
    assert v.regime == "memory-bound" and v.broken == ("compute",)
    assert "the compute floor is longer than the whole measured step" in v.details()
    # lesson 08 on the stand-in: the fixed cost's share spans half, the compute floor is broken
    close = verdict(s(14.5, 14.0, 15.0), s(5.0, 4.9, 5.1), s(70, 68, 72), s(7.2, 6.9, 7.6))
    assert close.regime == TOO_CLOSE and close.between == ("overhead-bound", "memory-bound")
    assert "the rule on the medians alone says memory-bound" in close.details()
    both = verdict(s(10, 9, 11), s(20, 19, 21), s(30, 29, 31), s(1, 1, 1))
    assert both.regime == TOO_CLOSE and both.broken == ("memory", "compute")
    memory = verdict(s(10, 9, 11), s(20, 19, 21), s(1, 0.9, 1.1), s(1, 1, 1))
    assert memory.regime == "compute-bound" and memory.broken == ("memory",)


def test_a_computed_pass_whose_step_is_its_floor_keeps_its_floor():
    # the step of a computed pass is its longer floor; rounding may put the floor one ulp above
    m = 2.1640444179104478e-4
    v = verdict(2.1640444179104476e-4, m, 1e-6, 0.0)
    assert v.regime == "memory-bound" and v.broken == ()


def test_a_verdict_prints_as_one_line_a_beginner_can_read():
    """str(verdict) is one short line: the word, then the comparison that decided it (lesson
    03 on); .details() keeps the whole comparison with its margins."""
    near = verdict(s(25, 24, 26), s(20, 19.5, 20.5), s(1, 0.9, 1.1), s(2, 1.9, 2.1))
    assert str(near) == (
        "memory-bound — reading the bytes at the peak (20.0 ms) is 80% of the 25.0 ms step"
    )
    far = verdict(s(44, 43, 45), s(20, 19, 21), s(1.4, 1.3, 1.5), s(8, 7.8, 8.2))
    assert str(far) == (
        "memory-bound — reading the bytes (20.0 ms at the peak) outweighs the "
        "arithmetic (1.40 ms); the rest of the 44.0 ms step is the fixed cost and "
        "kernels below the peaks"
    )
    over = verdict(s(9.5, 9, 10), s(1, 1, 1), s(0.1, 0.1, 0.1), s(5.1, 5.05, 5.2))
    assert str(over) == "overhead-bound — the fixed cost (5.10 ms) is 54% of the 9.50 ms step"
    half = verdict(s(10, 9, 11), s(3, 2.9, 3.1), s(0.2, 0.19, 0.21), s(5, 4.8, 5.2))
    assert str(half) == (
        "too close to call (overhead-bound or memory-bound) — the fixed cost is "
        "44%–58% of the 10.0 ms step, on both sides of half"
    )
    floors = verdict(s(60, 58, 62), s(12.5, 12, 13), s(12.6, 11, 14), s(5, 4.9, 5.1))
    assert str(floors).startswith(
        "too close to call (memory-bound or compute-bound) — reading "
        "the bytes (12.5 ms) and the arithmetic (12.6 ms)"
    )
    compute = verdict(s(30, 29, 31), s(13, 12.9, 13), s(13.5, 13.1, 14), s(14, 13.9, 14.1))
    assert str(compute).startswith(
        "compute-bound — the arithmetic (13.5 ms at the peak) outweighs reading the bytes (13.0 ms)"
    )
    broken = verdict(s(13.8, 13.4, 14.1), s(6.8, 6.7, 6.9), s(82.5, 82, 90), s(5.1, 5.0, 5.2))
    assert str(broken) == (
        "memory-bound — reading the bytes at the peak takes 6.80 ms of the "
        "13.8 ms step; the arithmetic's floor is longer than the step, so no "
        "floor here"
    )
    for v in (near, far, over, half, floors, compute, broken):
        assert "\n" not in str(v) and len(str(v)) < 180, str(v)
        assert v.details() == v.explain() and len(v.details()) > len(str(v))


def test_every_mbu_and_mfu_is_the_one_utilisation_formula():
    """MBU and MFU are one formula (`viz.perf.regime.utilisation`: floor ÷ time), not one per
    module: every `mbu`/`mfu` in viz/perf calls it."""
    import ast
    from pathlib import Path

    from viz.perf.regime import utilisation

    assert utilisation(20e-3, 44e-3) == pytest.approx(20 / 44)
    found = []
    for path in sorted(Path(__file__).parents[1].joinpath("viz", "perf").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and node.name in ("mbu", "mfu"):
                body = ast.get_source_segment(source, node)
                found.append(f"{path.name}:{node.name}")
                assert "utilisation(" in body, (
                    f"{path.name}:{node.lineno} {node.name} has its own formula"
                )
    assert len(found) >= 6, found  # regime (2), roofline (2), wall, gpu (4)
