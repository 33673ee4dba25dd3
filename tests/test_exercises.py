"""The self-check helper used by every lesson gives the right verdict."""

import pytest

from viz.exercises import check, multiple_choice


def test_unanswered_is_neither_right_nor_wrong():
    fb = check(None, 3.0, hint="look at TTFT")
    assert fb.ok is None and "replace None" in repr(fb) and "look at TTFT" in repr(fb)


@pytest.mark.parametrize("answer, ok", [(10.4, True), (9.6, True), (11.0, False), (8.0, False)])
def test_numbers_within_relative_tolerance(answer, ok):
    assert check(answer, 10.0, rel_tol=0.05).ok is ok


def test_wrong_answer_says_which_way_and_hints():
    fb = check(20, 10, hint="halve it")
    assert fb.ok is False and "too high" in repr(fb) and "halve it" in repr(fb)
    assert "too low" in repr(check(5, 10))


def test_non_number_for_a_number():
    assert check("ten", 10).ok is False


def test_strings_ignore_case_and_spaces():
    assert check(" Decode ", "decode").ok is True


def test_multiple_choice():
    opts = ["prefill", "decode"]
    assert multiple_choice(None, opts, "decode").ok is None
    assert multiple_choice("decode", opts, "decode", why="one token per pass").ok is True
    assert multiple_choice("prefill", opts, "decode").ok is False
    assert multiple_choice("neither", opts, "decode").ok is False
    with pytest.raises(ValueError, match="the correct answer 'batching' is not among the options"):
        multiple_choice("a", opts, "batching")


def test_html_is_deterministic():
    assert check(1, 1)._repr_html_() == check(1, 1)._repr_html_()
