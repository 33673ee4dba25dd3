"""The argument checks of viz: one way to check a setting, one wording for a bad one.

Every check returns the value it accepts, so a caller checks and keeps it in one line, and
refuses anything else with one sentence: the argument, what it must be, the fix where there is
one (in parentheses), and the value given.

    repeats must be a whole number >= 1 (timed runs of each way), not 0

The error is a ValueError, or the subclass passed as `error=` (viz.serve passes its
ServeError). A bool is never a number here: True is an int to Python, but `repeats=True` is a
mistake, not 1. Nor is NaN or an infinity. This module imports nothing from viz, so that every
module can use it without an import cycle.
"""

import math
from typing import Any, Callable, NoReturn, Optional

Bound = Optional[float]


# ---- the message ----------------------------------------------------------------------------
def refuse(
    name: str, what: str, value: Any, fix: str = "", error: type[ValueError] = ValueError
) -> NoReturn:
    """Raise `error` with the one message every check gives:
    "<name> must be <what> (<fix>), not <value>"."""
    hint = f" ({fix})" if fix else ""
    raise error(f"{name} must be {what}{hint}, not {value!r}")


def span(
    low: Bound = None, high: Bound = None, open_low: bool = False, open_high: bool = False
) -> str:
    """Bounds in words: ">= 1", "> 0", "from 1 to 64", "in (0, 1]"; "" for none. An open end
    excludes its bound. Floats print short (1e-06), whole numbers with thousands (1,000,000)."""
    if low is not None and high is not None:
        if not open_low and not open_high:
            return f"from {_show(low)} to {_show(high)}"
        left, right = "(" if open_low else "[", ")" if open_high else "]"
        return f"in {left}{_show(low)}, {_show(high)}{right}"
    if low is not None:
        return f"{'>' if open_low else '>='} {_show(low)}"
    if high is not None:
        return f"{'<' if open_high else '<='} {_show(high)}"
    return ""


def _show(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def _describe(
    noun: str, low: Bound, high: Bound, open_low: bool = False, open_high: bool = False
) -> str:
    return " ".join(p for p in (noun, span(low, high, open_low, open_high)) if p)


def _inside(value: float, low: Bound, high: Bound, open_low: bool, open_high: bool) -> bool:
    above = low is None or value > low or (not open_low and value == low)
    below = high is None or value < high or (not open_high and value == high)
    return above and below


# ---- what counts as a number -----------------------------------------------------------------
def is_whole(value: Any) -> bool:
    """True for an int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """True for a finite int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---- single values ---------------------------------------------------------------------------
def whole(
    name: str,
    value: Any,
    low: Bound = None,
    high: Bound = None,
    *,
    noun: str = "a whole number",
    what: str = "",
    fix: str = "",
    error: type[ValueError] = ValueError,
) -> int:
    """`value` if it is a whole number from `low` to `high` (either may be None: no bound).

    noun: what the value is, e.g. "a layer number" (the bounds follow it in the message);
    what: the whole description instead; fix: what the setting means, or a value to try."""
    if not is_whole(value) or not _inside(value, low, high, False, False):
        refuse(name, what or _describe(noun, low, high), value, fix, error)
    return value


def number(
    name: str,
    value: Any,
    low: Bound = None,
    high: Bound = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
    noun: str = "a number",
    what: str = "",
    fix: str = "",
    error: type[ValueError] = ValueError,
) -> float:
    """`value` if it is a finite number from `low` to `high` (an open end excludes its bound;
    either may be None: no bound). noun, what, fix: as `whole`."""
    if not is_number(value) or not _inside(value, low, high, open_low, open_high):
        refuse(name, what or _describe(noun, low, high, open_low, open_high), value, fix, error)
    return value


def positive(
    name: str,
    value: Any,
    *,
    noun: str = "a number",
    what: str = "",
    fix: str = "",
    error: type[ValueError] = ValueError,
) -> float:
    """`value` if it is a finite number > 0 (a time, a rate, a size, a price)."""
    return number(name, value, 0, open_low=True, noun=noun, what=what, fix=fix, error=error)


def threads(value: Any, name: str = "threads") -> Optional[int]:
    """`value` if it is None (keep torch's current thread count) or a whole number >= 1."""
    if value is None or (is_whole(value) and value >= 1):
        return value
    import torch  # only to name the current count in the message

    refuse(
        name, "a whole number >= 1", value, f"or None for torch's current {torch.get_num_threads()}"
    )


def flag(name: str, value: Any, *, fix: str = "", error: type[ValueError] = ValueError) -> bool:
    """`value` if it is True or False (not 0, 1 or "yes")."""
    if not isinstance(value, bool):
        refuse(name, "True or False", value, fix, error)
    return value


def text(
    name: str,
    value: Any,
    *,
    what: str = "a non-empty text",
    fix: str = "",
    error: type[ValueError] = ValueError,
) -> str:
    """`value` if it is a string with something other than spaces in it."""
    if not isinstance(value, str) or not value.strip():
        refuse(name, what, value, fix, error)
    return value


def prompt(
    value: Any, fix: str = "give the model some text", error: type[ValueError] = ValueError
) -> str:
    """`value` if it is a prompt with something in it; "the prompt is empty: <fix>" otherwise
    (an empty prompt has no value worth showing, so this one message names only the fix)."""
    if not isinstance(value, str) or not value.strip():
        raise error(f"the prompt is empty: {fix}")
    return value


def one_of(
    name: str, value: Any, choices: Any, *, fix: str = "", error: type[ValueError] = ValueError
) -> Any:
    """`value` if it is one of `choices` (a bool never stands for 0 or 1 among them)."""
    a_bool_for_a_number = isinstance(value, bool) and not any(c is value for c in choices)
    if a_bool_for_a_number or value not in choices:
        refuse(name, "one of " + ", ".join(repr(c) for c in choices), value, fix, error)
    return value


# ---- lists -----------------------------------------------------------------------------------
def whole_list(
    name: str,
    values: Any,
    low: int = 1,
    *,
    increasing: bool = False,
    what: str = "",
    fix: str = "",
    error: type[ValueError] = ValueError,
) -> list[int]:
    """`values` as a list if it holds at least one whole number and all are >= `low`;
    increasing with no repeats too if `increasing` (a sweep's settings, run in order)."""
    return _listed(
        name,
        values,
        lambda v: is_whole(v) and v >= low,
        what or "a non-empty list of " + _describe("whole numbers", low, None),
        increasing,
        fix,
        error,
    )


def number_list(
    name: str,
    values: Any,
    low: Bound = None,
    high: Bound = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
    noun: str = "numbers",
    increasing: bool = False,
    what: str = "",
    fix: str = "",
    error: type[ValueError] = ValueError,
) -> list[float]:
    """`values` as a list if it holds at least one finite number and all are within the
    bounds (as `number`); increasing with no repeats too if `increasing`."""
    return _listed(
        name,
        values,
        lambda v: is_number(v) and _inside(v, low, high, open_low, open_high),
        what or "a non-empty list of " + _describe(noun, low, high, open_low, open_high),
        increasing,
        fix,
        error,
    )


def _listed(
    name: str,
    values: Any,
    ok: Callable[[Any], bool],
    what: str,
    increasing: bool,
    fix: str,
    error: type[ValueError],
) -> list:
    values = list(values)
    if not values or not all(ok(v) for v in values):
        refuse(name, what, values, fix, error)
    if increasing and sorted(set(values)) != values:
        refuse(name, "increasing with no repeats", values, "", error)
    return values
