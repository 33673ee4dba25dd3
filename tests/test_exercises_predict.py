"""Predict, then measure: `viz.exercises.compare_prediction` says by how much a prediction
missed, and shows nothing of the measurement before a prediction is written."""

import pytest

from viz.exercises import compare_prediction

REGIMES = ["overhead-bound", "memory-bound", "compute-bound"]


def test_no_prediction_yet_shows_no_measurement():
    fb = compare_prediction(None, 24.3, unit="ms", hint="halve the bytes")
    assert fb.ok is None and "24.3" not in repr(fb) and "replace None" in repr(fb)
    assert "Hint: halve the bytes" in repr(fb)
    fb = compare_prediction(None, "memory-bound", options=REGIMES)
    assert fb.ok is None and "'compute-bound'" in repr(fb)  # lists the choices ...
    assert "measurement says" not in repr(fb)  # ... but not the answer


@pytest.mark.parametrize(
    "prediction, ok, words",
    [
        (30, True, "off by 23% (too high). Within 25%"),  # (30 - 24.4) / 24.4 = 0.23
        (20, True, "off by 18% (too low)"),  # (20 - 24.4) / 24.4 = -0.18
        (24.4, True, "off by 0% (exactly right)"),
        (31, False, "off by 27% (too high). More than 25% away. Hint: h"),
        (12.2, False, "off by 50% (too low)"),
    ],
)
def test_numbers_say_how_far_and_which_way(prediction, ok, words):
    fb = compare_prediction(prediction, 24.4, unit="ms", hint="h")
    assert fb.ok is ok and words in repr(fb)
    assert "measured 24.4 ms" in repr(fb)


def test_tolerance_and_bad_values():
    assert compare_prediction(31, 24.4, rel_tol=0.3).ok is True
    assert compare_prediction("fast", 24.4).ok is False
    with pytest.raises(ValueError, match="the measured value must be a finite non-zero number"):
        compare_prediction(1.0, 0.0)
    with pytest.raises(ValueError, match="the measured value must be a finite non-zero number"):
        compare_prediction(1.0, "x")


def test_choices():
    assert compare_prediction("memory-bound", "memory-bound", options=REGIMES).ok is True
    fb = compare_prediction("compute-bound", "memory-bound", options=REGIMES, hint="h")
    assert fb.ok is False and "the measurement says 'memory-bound'" in repr(fb)
    assert compare_prediction("slow", "memory-bound", options=REGIMES).ok is False
    with pytest.raises(ValueError, match="the measured answer 'fast' is not among the options"):
        compare_prediction("memory-bound", "fast", options=REGIMES)
