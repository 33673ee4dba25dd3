"""pytest plugin: nbval tolerates floating-point rounding, and nothing else.

nbval compares a re-run cell's outputs with the saved ones exactly. Two CPUs round differently
(another SIMD width, another summation order, another BLAS): lesson 05's attention heatmap
saved on an AMD EPYC has `zmax` 0.8403254747390747, an Intel Xeon computes 0.8403255939483643.
Both are right; an exact comparison fails one of them. Load this with `-p tools.nbval_tolerance`
next to `--nbval` (`make test` does) and the comparison becomes:

- **Floats agree to 4 significant digits** (`--nbval-digits N`, `SIGNIFICANT_DIGITS`). In JSON
  outputs (plotly's `application/vnd.plotly.v1+json`, any dict) two floats pass when
  |fresh - saved| <= 10**-N x scale, where scale is the largest magnitude among the floats of
  the list they are in (a heatmap row, a trace's y: like numpy's allclose with that atol, so
  noise near zero next to large values passes) or, for a lone float, the larger of the two.
  Plotly typed arrays (`{"dtype", "bdata"}`, base64) are decoded and compared the same way.
- **Printed decimals agree to N significant digits or to one unit of the last printed digit.**
  In text (stdout/stderr, text/plain, text/html after nbval's sanitizers; strings inside JSON,
  which nbval does not sanitize),
  a number written with a decimal point or an exponent (`0.8403`, `12.5%`, `3.1e-05`) passes by
  the same relative rule or when it differs by at most one unit in its last digit: a value on a
  rounding boundary prints "0.84" on one CPU and "0.85" on another.
- **Everything else is exact**: integers (token ids, counts, byte sizes: in text, any number
  without a decimal point or exponent), strings and words, booleans, None, keys, the lengths and
  structure of lists and dicts. A greedy token that changes, a missing line, a value off in the
  third digit all still fail.

How: before nbval's own `IPyNbCell.compare_outputs` runs, each fresh value that equals its
saved value within tolerance is replaced by the saved value; then nbval compares and reports
exactly as it always does, so a real difference fails with nbval's usual message and diff
(only the differing numbers remain in it). This works whether nbval ran the kernel or
tools/nbval_replay.py replays a browser run: both end in `compare_outputs`. It uses nbval 0.11
internals (pinned in requirements.txt); tests/test_nbval_tolerance.py checks that a changed
value still fails. `--nbval-digits 0` turns it off (nbval's exact comparison).
"""

from __future__ import annotations

import base64
import copy
import math
import re
from decimal import Decimal, InvalidOperation

import pytest

SIGNIFICANT_DIGITS = 4

# A number as printed in text. Not part of a word or of a dotted run ("fp32", "x1.5", "2.13.0"
# are text); thousands commas allowed ("1,234.5"); a unit may follow ("12.5ms", "3.2×", "40%").
NUMBER = re.compile(
    r"""
    (?<![\w.])
    [-+−]?
    (?:\d{1,3}(?:,\d{3})+|\d+)
    (?:\.\d+)?
    (?:[eE][-+]?\d+)?
    (?!\w*\d|\.\d)
""",
    re.VERBOSE,
)


def _same(s):
    return s


def pytest_addoption(parser):
    group = parser.getgroup("nbval-tolerance")
    group.addoption(
        "--nbval-digits",
        type=int,
        default=SIGNIFICANT_DIGITS,
        metavar="N",
        help="nbval compares floats (JSON) and printed decimals to N significant "
        f"digits, printed decimals also to +-1 in their last digit "
        f"(default {SIGNIFICANT_DIGITS}; 0: exact)",
    )


def pytest_configure(config):
    if config.getoption("nbval_digits") < 0:
        raise pytest.UsageError("--nbval-digits must be 0 (exact) or more")
    _patch_nbval()


def _patch_nbval() -> None:
    """Wrap nbval's `IPyNbCell.compare_outputs`, once."""
    from nbval import plugin

    original = plugin.IPyNbCell.compare_outputs
    if getattr(original, "_viz_tolerant", False):
        return

    def compare_outputs(self, test, ref, skip_compare=None):
        digits = self.config.getoption("nbval_digits", default=None)
        if digits:  # None: this session did not load the plugin; 0: exact
            skip = skip_compare or self.parent.skip_compare
            test = tolerate_outputs(test, ref, digits, skip, self.sanitize)
        return original(self, test, ref, skip_compare)

    compare_outputs._viz_tolerant = True
    plugin.IPyNbCell.compare_outputs = compare_outputs


def tolerate_outputs(test, ref, digits: int, skip=(), sanitize=_same):
    """A copy of the fresh outputs `test` in which every value that equals its saved value in
    `ref` within the tolerance is the saved value. Values are paired as nbval pairs them: by
    output key (stream name, MIME type), in order."""
    test = copy.deepcopy(list(test))

    def slots(outputs):
        found = {}
        for out in outputs:
            if out.get("output_type") == "stream":
                found.setdefault(out.get("name"), []).append((out, "text"))
                continue
            for key in out:
                if key in skip:
                    continue
                if key == "data":
                    for mime in out["data"]:
                        if mime not in skip:
                            found.setdefault(mime, []).append((out["data"], mime))
                else:
                    found.setdefault(key, []).append((out, key))
        return found

    saved = slots(ref)
    for key, fresh_slots in slots(test).items():
        for (holder, field), (ref_holder, ref_field) in zip(fresh_slots, saved.get(key, [])):
            holder[field] = tolerate(holder[field], ref_holder[ref_field], digits, sanitize)
    return test


def tolerate(fresh, saved, digits: int, sanitize=_same):
    """`fresh` with each part that equals `saved` within the tolerance replaced by that part
    of `saved` (all of `saved` when everything agrees). `sanitize` (nbval's regexes) applies to
    a whole text output only: nbval does not sanitize the strings inside JSON."""
    if isinstance(fresh, str) and isinstance(saved, str):
        a, b = sanitize(fresh), sanitize(saved)
        if a == b:
            return fresh
        merged = tolerate_text(a, b, digits)
        return saved if merged == b else (merged if merged != a else fresh)
    if isinstance(fresh, dict) and isinstance(saved, dict):
        if _is_typed_array(fresh) and _is_typed_array(saved):
            return saved if _typed_arrays_close(fresh, saved, digits) else fresh
        return {k: tolerate(v, saved[k], digits) if k in saved else v for k, v in fresh.items()}
    if isinstance(fresh, list) and isinstance(saved, list):
        if len(fresh) != len(saved):
            return fresh
        scale = max(
            (abs(x) for x in fresh + saved if _is_float(x) and math.isfinite(x)), default=0.0
        )
        return [
            y
            if _is_float(x) and _is_float(y) and _close(x, y, scale, digits)
            else tolerate(x, y, digits)
            for x, y in zip(fresh, saved)
        ]
    if _is_float(fresh) and _is_float(saved):
        return saved if _close(fresh, saved, max(abs(fresh), abs(saved)), digits) else fresh
    return fresh  # ints, bools, None, mismatched types: exact


def _is_float(x) -> bool:
    return isinstance(x, float)


def _close(a: float, b: float, scale: float, digits: int) -> bool:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return True
    return abs(a - b) <= 10.0**-digits * scale  # False for inf and nan


def tolerate_text(fresh: str, saved: str, digits: int) -> str:
    """`fresh` with each printed decimal close to the saved one at the same place (same line,
    same words around it) replaced by the saved one."""
    fresh_lines, saved_lines = fresh.split("\n"), saved.split("\n")
    if len(fresh_lines) != len(saved_lines):
        return fresh
    return "\n".join(_tolerate_line(a, b, digits) for a, b in zip(fresh_lines, saved_lines))


def _tolerate_line(fresh: str, saved: str, digits: int) -> str:
    a = NUMBER.split(fresh)  # the words between the numbers (nbval compares them after)
    a_nums, b_nums = NUMBER.findall(fresh), NUMBER.findall(saved)
    if len(a_nums) != len(b_nums):
        return fresh
    out = [a[0]]
    for x, y, rest in zip(a_nums, b_nums, a[1:]):
        out += [y if _printed_close(x, y, digits) else x, rest]
    return "".join(out)


def _printed_close(fresh: str, saved: str, digits: int) -> bool:
    if fresh == saved:
        return True
    if not (_is_decimal(fresh) and _is_decimal(saved)):
        return False  # a whole number is exact
    x, y = _decimal(fresh), _decimal(saved)
    if x is None or y is None:
        return False
    diff = abs(x - y)
    return diff <= max(_last_unit(fresh), _last_unit(saved)) or diff <= Decimal(
        10
    ) ** -digits * max(abs(x), abs(y))


def _is_decimal(token: str) -> bool:
    return "." in token or "e" in token.lower()


def _decimal(token: str) -> Decimal | None:
    try:
        return Decimal(token.replace(",", "").replace("−", "-"))
    except InvalidOperation:
        return None


def _last_unit(token: str) -> Decimal:
    """One unit in the last printed digit: 0.0001 for "0.8403", 1e-06 for "3.1e-05"."""
    mantissa, _, exponent = token.lower().partition("e")
    places = len(mantissa.partition(".")[2])
    return Decimal(10) ** (int(exponent or 0) - places)


def _is_typed_array(x) -> bool:
    return isinstance(x, dict) and {"dtype", "bdata"} <= set(x) and isinstance(x["bdata"], str)


def _typed_arrays_close(fresh: dict, saved: dict, digits: int) -> bool:
    """Plotly's typed arrays (base64 of a numpy buffer): same dtype and shape; integers equal;
    floats close row by row (the last axis), scaled like a list of floats."""
    import numpy as np

    if (
        fresh.keys() != saved.keys()
        or fresh["dtype"] != saved["dtype"]
        or fresh.get("shape") != saved.get("shape")
    ):
        return False
    try:
        a, b = (
            np.frombuffer(base64.b64decode(t["bdata"]), dtype=t["dtype"]) for t in (fresh, saved)
        )
    except (ValueError, TypeError):
        return False
    if a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    shape = saved.get("shape")
    width = int(str(shape).split(",")[-1]) if shape else a.size
    if width <= 0 or a.size % width:
        return False
    a, b = a.astype(np.float64).reshape(-1, width), b.astype(np.float64).reshape(-1, width)
    finite = np.nan_to_num(np.abs(np.concatenate([a, b], axis=1)), nan=0.0, posinf=0.0)
    scale = finite.max(axis=1, keepdims=True)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return bool(np.all(same | (np.abs(a - b) <= 10.0**-digits * scale)))
