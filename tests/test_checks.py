"""viz.checks: every argument check accepts good values, returns them, and refuses bad ones
with the one message: "<name> must be <what> (<fix>), not <value>"."""

import math
import re

import pytest
import torch

from viz import checks
from viz.serve.client import ServeError

BAD_NUMBERS = [True, False, None, "3", [3], float("nan"), float("inf"), -math.inf]


# ---- the message ----------------------------------------------------------------------------
def test_refuse_names_the_argument_what_it_must_be_the_fix_and_the_value():
    with pytest.raises(
        ValueError,
        match=r"^repeats must be a whole number >= 1 \(timed runs\), "
        r"not 0$",
    ):
        checks.refuse("repeats", "a whole number >= 1", 0, "timed runs")
    with pytest.raises(ValueError, match=r"^x must be text, not 'a'$"):
        checks.refuse("x", "text", "a")


def test_the_error_class_can_be_chosen():
    with pytest.raises(ServeError, match="n must be a whole number >= 1") as e:
        checks.whole("n", 0, 1, error=ServeError)
    assert e.value.kind == "input"


@pytest.mark.parametrize(
    "args, words",
    [
        ((1,), ">= 1"),
        ((0, None, True), "> 0"),
        ((None, 8), "<= 8"),
        ((None, 8, False, True), "< 8"),
        ((1, 64), "from 1 to 64"),
        ((0, 1, True), "in (0, 1]"),
        ((0, 1, False, True), "in [0, 1)"),
        ((1e-6, 1e4), "from 1e-06 to 10000"),
        ((1, 1_000_000), "from 1 to 1,000,000"),
        ((), ""),
    ],
)
def test_span_says_the_bounds_in_words(args, words):
    assert checks.span(*args) == words


# ---- what counts as a number ---------------------------------------------------------------
def test_a_bool_is_not_a_number_nor_is_nan_or_an_infinity():
    assert checks.is_whole(3) and checks.is_whole(-2) and checks.is_whole(0)
    assert not any(checks.is_whole(v) for v in (True, 3.0, "3", None))
    assert checks.is_number(3) and checks.is_number(2.5) and checks.is_number(-1e300)
    assert not any(checks.is_number(v) for v in BAD_NUMBERS)


# ---- whole numbers -------------------------------------------------------------------------
def test_whole_returns_the_value_within_its_bounds():
    assert checks.whole("n", 1, 1) == 1
    assert checks.whole("n", 64, 1, 64) == 64
    assert checks.whole("seed", -5) == -5  # no bound
    assert checks.whole("n", 10**12, high=None) == 10**12


@pytest.mark.parametrize("value", [0, -1, 65, 2.0, 1.5, True, "3", None])
def test_whole_refuses_anything_else_naming_the_range_and_the_fix(value):
    with pytest.raises(
        ValueError,
        match=r"^turns must be a whole number from 1 to 64 "
        r"\(one per question\), not " + re.escape(repr(value)),
    ):
        checks.whole("turns", value, 1, 64, fix="one per question")


def test_whole_takes_a_noun_or_a_whole_description():
    with pytest.raises(
        ValueError,
        match=r"^layer must be a layer number from 0 to 3 "
        r"\(4 layers\), not 4$",
    ):
        checks.whole("layer", 4, 0, 3, noun="a layer number", fix="4 layers")
    with pytest.raises(
        ValueError,
        match=r"^buffer_bytes must be a whole number of bytes >= 1 "
        r"MiB, not 1000$",
    ):
        checks.whole("buffer_bytes", 1000, 1 << 20, what="a whole number of bytes >= 1 MiB")
    with pytest.raises(ValueError, match=r"^seed must be a whole number, not 'x'$"):
        checks.whole("seed", "x")


# ---- numbers -------------------------------------------------------------------------------
def test_number_returns_ints_and_floats_within_their_bounds():
    assert checks.number("t", 0, 0) == 0
    assert checks.number("t", 0.5, 0, 1, open_low=True) == 0.5
    assert checks.number("t", 1, 0, 1, open_low=True) == 1
    assert checks.number("t", -3.5) == -3.5
    assert checks.positive("p", 1e-9) == 1e-9


@pytest.mark.parametrize("value", BAD_NUMBERS + [-0.1])
def test_number_refuses_a_bool_nan_an_infinity_text_and_out_of_range(value):
    with pytest.raises(
        ValueError,
        match=r"^temperature must be a number >= 0 \(0 = greedy\), "
        r"not ",
    ):
        checks.number("temperature", value, 0, fix="0 = greedy")


@pytest.mark.parametrize(
    "value, open_low, open_high, words",
    [
        (0, True, False, r"in \(0, 1\]"),
        (1, False, True, r"in \[0, 1\)"),
        (1.5, False, False, "from 0 to 1"),
        (-0.1, False, False, "from 0 to 1"),
    ],
)
def test_an_open_end_excludes_its_bound(value, open_low, open_high, words):
    with pytest.raises(ValueError, match=rf"^top_p must be {words}, not {value}$"):
        checks.number("top_p", value, 0, 1, open_low=open_low, open_high=open_high, noun="")


@pytest.mark.parametrize("value", [0, -1, 0.0, float("nan"), float("inf"), True, "1"])
def test_positive_refuses_zero_and_below(value):
    with pytest.raises(ValueError, match=r"^stall_s must be a number of seconds > 0, not "):
        checks.positive("stall_s", value, noun="a number of seconds")
    with pytest.raises(ValueError, match=r"^rate must be a positive number, not "):
        checks.positive("rate", value, what="a positive number")


# ---- threads, flags, texts, choices ----------------------------------------------------------
def test_threads_is_none_or_a_whole_number_of_at_least_one():
    assert checks.threads(None) is None
    assert checks.threads(2) == 2
    for bad in (0, -1, 1.0, True, "2"):
        with pytest.raises(
            ValueError,
            match=rf"^threads must be a whole number >= 1 \(or None "
            rf"for torch's current {torch.get_num_threads()}\)",
        ):
            checks.threads(bad)


def test_flag_is_true_or_false_only():
    assert checks.flag("lens", True) is True and checks.flag("lens", False) is False
    for bad in (1, 0, "yes", None):
        with pytest.raises(ValueError, match=r"^lens must be True or False, not "):
            checks.flag("lens", bad)


def test_text_needs_something_other_than_spaces():
    assert checks.text("name", " a ") == " a "
    for bad in ("", "  \n", None, 3):
        with pytest.raises(
            ValueError,
            match=r"^name must be a non-empty string \(or None for "
            r"the default model\), not ",
        ):
            checks.text("name", bad, what="a non-empty string", fix="or None for the default model")
        with pytest.raises(ValueError, match=r"^\"prompt\" must be a non-empty text, not "):
            checks.text('"prompt"', bad)


def test_an_empty_prompt_names_the_fix():
    assert checks.prompt("Hello") == "Hello"
    for bad in ("", " \t", None, 42):
        with pytest.raises(ValueError, match=r"^the prompt is empty: give some text$"):
            checks.prompt(bad, "give some text")
    with pytest.raises(ServeError, match="the prompt is empty: give the model some text"):
        checks.prompt("", error=ServeError)


def test_one_of_lists_the_choices():
    assert checks.one_of("dtype", "auto", ("float32", "auto")) == "auto"
    assert checks.one_of("nbits", 4, [2, 4, 8]) == 4
    with pytest.raises(ValueError, match=r"^dtype must be one of 'float32', 'auto', not 'int3'$"):
        checks.one_of("dtype", "int3", ("float32", "auto"))
    with pytest.raises(ValueError, match=r"^nbits must be one of 1, 2 \(use 2\), not True$"):
        checks.one_of("nbits", True, [1, 2], fix="use 2")  # True == 1, but it is no bit width
    assert checks.one_of("flag", True, [True, False]) is True


# ---- lists ---------------------------------------------------------------------------------
def test_whole_list_returns_a_list_and_can_ask_for_increasing_values():
    assert checks.whole_list("depths", (3, 1, 3)) == [3, 1, 3]
    assert checks.whole_list("contexts", iter([0, 4]), 0, increasing=True) == [0, 4]
    for bad in ([], [0, 1], [1.5], [True], ["2"]):
        with pytest.raises(
            ValueError,
            match=r"^lengths must be a non-empty list of whole numbers "
            r">= 1, not ",
        ):
            checks.whole_list("lengths", bad)
    for bad in ([4, 2], [2, 2]):
        with pytest.raises(ValueError, match=r"^lengths must be increasing with no repeats, not "):
            checks.whole_list("lengths", bad, increasing=True)
    with pytest.raises(ValueError, match=r"^batch_sizes must be whole numbers >= 1, not \[0\]$"):
        checks.whole_list("batch_sizes", [0], what="whole numbers >= 1")


def test_number_list_checks_every_value_against_the_bounds():
    assert checks.number_list("shares", [0.0, 0.5], 0, 1, open_high=True) == [0.0, 0.5]
    for bad in ([], [1.0], [-0.1], [float("nan")], [True], ["0.5"]):
        with pytest.raises(
            ValueError,
            match=r"^shares must be a non-empty list of fractions in "
            r"\[0, 1\) \(one token new\), not ",
        ):
            checks.number_list(
                "shares", bad, 0, 1, open_high=True, noun="fractions", fix="one token new"
            )
    with pytest.raises(ValueError, match="shares must be increasing with no repeats"):
        checks.number_list("shares", [0.5, 0.25], 0, 1, increasing=True)


# ---- the module stands alone ----------------------------------------------------------------
def test_checks_imports_nothing_from_viz():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(checks.__file__).read_text(encoding="utf-8"))
    modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in modules if m and m.split(".")[0] == "viz"]
