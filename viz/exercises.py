"""Self-check exercises with automatic feedback, for the "check yourself" beat of each lesson.

An exercise cell holds the learner's answer in a variable that starts as `None`; the next
line calls `check(...)`, which returns a `Feedback` (never displays it: the notebook does).
The feedback is deterministic text, so executed notebooks stay comparable under nbval.

    answer = None          # ← replace None with your estimate, in seconds
    check(answer, expected=700 * trace.tpot_s, rel_tol=0.10, unit="s",
          hint="TTFT once, then one TPOT per remaining token")
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from viz import checks


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: `ok` is True, False, or None (not answered yet)."""

    ok: Optional[bool]
    message: str

    def __bool__(self) -> bool:
        return bool(self.ok)

    def __repr__(self) -> str:
        mark = {True: "✅ Correct", False: "❌ Not yet", None: "✏️ Your turn"}[self.ok]
        return f"{mark}: {self.message}"

    def _repr_html_(self) -> str:
        colour = {True: "#009E73", False: "#D55E00", None: "#0072B2"}[self.ok]
        return (
            f'<div style="border-left:4px solid {colour};padding:4px 10px">'
            f"{html.escape(repr(self))}</div>"
        )


def _fmt(x: Any, unit: str) -> str:
    if isinstance(x, float):
        text = f"{x:.3g}" if abs(x) < 1e4 else f"{x:,.0f}"
    elif isinstance(x, int) and not isinstance(x, bool):
        text = f"{x:,}"
    else:
        text = repr(x)
    return f"{text} {unit}".rstrip()


def check(
    answer: Any,
    expected: Any,
    *,
    rel_tol: float = 0.0,
    abs_tol: float = 0.0,
    unit: str = "",
    hint: str = "",
    reveal: bool = True,
) -> Feedback:
    """Compare an answer with the expected value.

    Numbers are right within `rel_tol` (relative) or `abs_tol`; anything else must be equal.
    `hint` is shown when the answer is wrong or missing; with `reveal`, a right answer also
    shows the exact expected value.
    """
    if answer is None or answer is Ellipsis:
        return Feedback(
            None,
            "replace None with your answer and run the cell again."
            + (f" Hint: {hint}" if hint else ""),
        )
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            return Feedback(False, f"the answer should be a number, not {answer!r}.")
        ok = math.isclose(answer, expected, rel_tol=rel_tol, abs_tol=abs_tol)
    elif isinstance(expected, str) and isinstance(answer, str):
        ok = answer.strip().lower() == expected.strip().lower()
    else:
        ok = answer == expected
    if ok:
        return Feedback(True, f"the value is {_fmt(expected, unit)}." if reveal else "well done.")
    near = ""
    if isinstance(expected, (int, float)) and isinstance(answer, (int, float)) and expected:
        near = " (too high)" if answer > expected else " (too low)"
    return Feedback(
        False, f"{_fmt(answer, unit)} is not it{near}." + (f" Hint: {hint}" if hint else "")
    )


def multiple_choice(
    answer: Optional[str], options: Iterable[str], correct: str, *, why: str = "", hint: str = ""
) -> Feedback:
    """A multiple-choice question: `answer` must be one of `options`, exactly as written."""
    options = list(options)
    if correct not in options:
        raise ValueError(f"the correct answer {correct!r} is not among the options {options}")
    if answer is None:
        return Feedback(None, "set the answer to one of: " + "; ".join(map(repr, options)) + ".")
    if answer not in options:
        return Feedback(False, f"{answer!r} is not one of the options {options}.")
    if answer == correct:
        return Feedback(True, why or "that's it.")
    return Feedback(False, hint or "not this one; read the measurement above again.")


# ---- predict, then measure ----------------------------------------------------------------
def compare_prediction(
    prediction: Any,
    measured: Any,
    *,
    unit: str = "",
    rel_tol: float = 0.25,
    options: Optional[Iterable[str]] = None,
    hint: str = "",
) -> Feedback:
    """Compare a prediction the learner wrote BEFORE a measuring cell with what it measured.

    measured may be a verdict of the regime rule (`viz.perf.verdict`, `pass_verdict`,
    `WallRun.verdict`): where it is too close to call, either of the two words it cannot
    separate counts as right, and the feedback says so.

    The lesson puts `prediction = None` above the cell that measures, and this check after
    it, with the measured value as a variable from that cell (never computed here in plain
    sight). Numbers: says by how much the prediction missed, signed, in percent of the
    measurement; within `rel_tol` it counts as a good prediction. Choices (`options` given):
    right or not. `None` asks for a prediction first and shows nothing of the measurement (so
    the saved notebook's output does not depend on the machine). `hint` explains a method.
    """
    between = getattr(measured, "between", None)  # a viz.perf.Verdict: its word and margin
    if between is not None:
        if between:  # too close to call: either word the measurement cannot separate fits
            return _predicted_close(prediction, list(between), options, hint)
        measured = measured.regime
    if options is not None:
        options = list(options)
        if measured not in options:
            raise ValueError(f"the measured answer {measured!r} is not among the options {options}")
    if prediction is None or prediction is Ellipsis:
        ask = (
            "write your prediction in the cell above the measurement (replace None), then "
            "run that cell, the measurement and this check again."
        )
        if options is not None:
            ask += " Choose one of: " + "; ".join(map(repr, options)) + "."
        return Feedback(None, ask + (f" Hint: {hint}" if hint else ""))
    if options is not None:
        if prediction not in options:
            return Feedback(False, f"{prediction!r} is not one of the options {options}.")
        if prediction == measured:
            return Feedback(True, f"you predicted {prediction!r}, and that is what was measured.")
        return Feedback(
            False,
            f"you predicted {prediction!r}; the measurement says "
            f"{measured!r}." + (f" Hint: {hint}" if hint else ""),
        )
    if not checks.is_number(measured) or measured == 0:
        checks.refuse("the measured value", "a finite non-zero number", measured)
    if not checks.is_number(prediction):
        return Feedback(False, f"a prediction should be a number, not {prediction!r}.")
    miss = (prediction - measured) / abs(measured)
    verdict = "too high" if miss > 0 else "too low" if miss < 0 else "exactly right"
    text = (
        f"you predicted {_fmt(float(prediction), unit)}; measured {_fmt(float(measured), unit)}"
        f": off by {abs(miss):.0%} ({verdict})."
    )
    if abs(miss) <= rel_tol:
        return Feedback(True, text + f" Within {rel_tol:.0%}: a good prediction.")
    return Feedback(
        False, text + f" More than {rel_tol:.0%} away." + (f" Hint: {hint}" if hint else "")
    )


def _predicted_close(
    prediction: Any, between: list[str], options: Optional[Iterable[str]], hint: str
) -> Feedback:
    """A choice checked against a verdict that is too close to call between two words."""
    options = list(options) if options is not None else between
    if prediction is None or prediction is Ellipsis:
        return Feedback(
            None,
            "write your prediction in the cell above the measurement (replace "
            "None), then run that cell, the measurement and this check again. "
            "Choose one of: "
            + "; ".join(map(repr, options))
            + "."
            + (f" Hint: {hint}" if hint else ""),
        )
    if prediction not in options:
        return Feedback(False, f"{prediction!r} is not one of the options {options}.")
    both = f"{between[0]!r} and {between[1]!r}"
    if prediction in between:
        return Feedback(
            True,
            f"you predicted {prediction!r}; the measurement is too close to "
            f"call here between {both} (a boundary of the rule lies inside "
            "the spread of the numbers), so it counts.",
        )
    return Feedback(
        False,
        f"you predicted {prediction!r}; the measurement is too close to call "
        f"between {both}, and {prediction!r} is neither." + (f" Hint: {hint}" if hint else ""),
    )
