"""nbval with tools/nbval_tolerance.py: floats that differ only in rounding pass (another CPU's
kernels), a real change fails with nbval's own message, whether nbval runs the kernel or replays
a browser run (tools/nbval_replay.py)."""

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from tools.nbval_tolerance import NUMBER, tolerate, tolerate_outputs, tolerate_text

ROOT = Path(__file__).resolve().parents[1]
PLOTLY = "application/vnd.plotly.v1+json"
SAVED, XEON = 0.8403254747390747, 0.8403255939483643  # lesson 05's zmax, EPYC vs Xeon


def agrees(fresh, saved, digits=4):
    return tolerate(fresh, saved, digits) == saved


def float32_row(seed=0, n=40):
    return np.random.default_rng(seed).random(n, dtype=np.float32) ** 4  # tiny and large values


def nudged(row, ulps=2):
    """Each float32 moved by a few ulps, up and down in turn (another CPU's rounding), as
    plotly JSON holds them (Python floats)."""
    towards = np.where(np.arange(row.size) % 2, np.float32(np.inf), np.float32(0))
    out = np.asarray(row, dtype=np.float32)
    for _ in range(ulps):
        out = np.nextafter(out, towards.astype(np.float32))
    return [float(x) for x in out]


# -- JSON (plotly) -----------------------------------------------------------------------------


def test_last_bits_of_a_float_pass():
    assert agrees({"zmax": XEON}, {"zmax": SAVED})
    assert agrees(XEON, SAVED)


def test_a_whole_heatmap_in_other_rounding_passes():
    rows = [float32_row(seed) for seed in range(5)]
    saved = {
        "data": [{"type": "heatmap", "z": [[float(x) for x in r] for r in rows], "zmax": SAVED}]
    }
    fresh = {"data": [{"type": "heatmap", "z": [nudged(r) for r in rows], "zmax": XEON}]}
    assert fresh != saved
    assert agrees(fresh, saved)


def test_noise_near_zero_next_to_large_values_passes():
    assert agrees([1e-9, 0.5, 0.84], [-3e-9, 0.5, 0.84])  # relative to the row's largest
    assert not agrees(1e-9, -3e-9)  # a lone float: relative to itself


@pytest.mark.parametrize("where", ["scalar", "row"])
def test_a_change_of_1e_3_relative_fails(where):
    row = [float(x) for x in float32_row()]
    changed, big = list(row), int(np.argmax(row))  # a value the size of the row's largest
    changed[big] *= 1 + 1e-3
    if where == "scalar":
        assert not agrees({"zmax": SAVED * (1 + 1e-3)}, {"zmax": SAVED})
    else:
        result = tolerate(changed, row, 4)
        assert result[big] == changed[big]  # the changed value stays: nbval reports it
        assert result[:big] + result[big + 1 :] == row[:big] + row[big + 1 :]


def test_integers_strings_and_structure_are_exact():
    assert not agrees({"n": 1235}, {"n": 1234})
    assert not agrees({"b": True}, {"b": False})
    assert not agrees({"x": None}, {"x": 0.0})
    assert not agrees({"type": "bar"}, {"type": "heatmap"})
    assert not agrees([0.5, 0.6], [0.5, 0.6, 0.7])
    assert not agrees({"a": 0.5}, {"b": 0.5})
    assert not agrees({"a": 0.5, "b": 1.0}, {"a": 0.5})


def test_strings_inside_json_follow_the_text_rule():
    assert agrees({"customdata": ["id 3575, p = 0.9806"]}, {"customdata": ["id 3575, p = 0.9805"]})
    assert not agrees(
        {"customdata": ["id 3576, p = 0.9805"]}, {"customdata": ["id 3575, p = 0.9805"]}
    )


def test_the_sanitizers_apply_to_text_outputs_not_to_strings_inside_json():
    ms = lambda s: re.sub(r"\d+\.\d ms", "<time>", s)  # noqa: E731 (a sanitizer)
    assert tolerate("p 0.9806 in 12.1 ms", "p 0.9805 in 9.7 ms", 4, ms) == "p 0.9805 in 9.7 ms"
    json_fresh, json_saved = {"name": "p 0.9806 in 12.1 ms"}, {"name": "p 0.9805 in 9.7 ms"}
    assert tolerate(json_fresh, json_saved, 4, ms) != json_saved  # as nbval: JSON is not sanitized


def typed(array):
    array = np.asarray(array)
    out = {
        "dtype": array.dtype.str.lstrip("<|"),
        "bdata": base64.b64encode(array.tobytes()).decode(),
    }
    if array.ndim > 1:
        out["shape"] = ", ".join(map(str, array.shape))
    return out


def test_plotly_typed_arrays_are_decoded():
    rows = np.stack([float32_row(seed, 8) for seed in range(3)])
    other = np.array([nudged(r) for r in rows], dtype=np.float32)
    assert agrees({"z": typed(other)}, {"z": typed(rows)})
    changed = rows.copy()
    changed[1, 2] *= 1 + 1e-3
    assert not agrees({"z": typed(changed)}, {"z": typed(rows)})
    assert not agrees({"x": typed(np.array([1, 2, 4]))}, {"x": typed(np.array([1, 2, 3]))})
    assert not agrees({"z": typed(rows.astype(np.float64))}, {"z": typed(rows)})  # dtype


# -- text --------------------------------------------------------------------------------------


def text_agrees(fresh, saved):
    return tolerate_text(fresh, saved, 4) == saved


@pytest.mark.parametrize(
    "fresh, saved",
    [
        ("p = 0.8404", "p = 0.8403"),  # one unit in the last digit: a rounding boundary
        ("top-1 p = 0.85\n", "top-1 p = 0.84\n"),
        (f"zmax {XEON}", f"zmax {SAVED}"),  # full precision: 4 significant digits
        ("12.6% of the time", "12.5% of the time"),
        ("3.2e-05", "3.1e-05"),
        ("1,234.6 MFLOP", "1,234.5 MFLOP"),
        ("mean -0.00", "mean 0.00"),
        ("tensor([0.0012, 0.8404])", "tensor([0.0012, 0.8403])"),
    ],
)
def test_printed_decimals_in_other_rounding_pass(fresh, saved):
    assert text_agrees(fresh, saved)


@pytest.mark.parametrize(
    "fresh, saved",
    [
        ("p = 0.8413", "p = 0.8403"),  # off in the third digit
        ("p = 0.8405", "p = 0.8403"),  # two units in the last digit
        ("token 1235", "token 1234"),  # whole numbers are exact
        ("921,601 bytes", "921,600 bytes"),
        ("p = 1.0", "p = 1"),  # the way it is printed changed
        ("The capital of France is Lyon.", "The capital of France is Paris."),
        ("torch 2.13.1", "torch 2.13.0"),  # a dotted run is text, not a number
        ("p = 0.8403\nextra", "p = 0.8403"),
    ],
)
def test_real_changes_in_text_fail(fresh, saved):
    assert not text_agrees(fresh, saved)


def test_only_the_numbers_that_differ_remain():
    assert tolerate_text("a 0.8404 b 0.8413", "a 0.8403 b 0.8403", 4) == "a 0.8403 b 0.8413"


def test_what_counts_as_a_number():
    assert NUMBER.findall("12.5ms 3.2× 40% -0.5 x1.5 fp32 2.13.0 0x7f3a2c 1,234.5") == [
        "12.5",
        "3.2",
        "40",
        "-0.5",
        "1,234.5",
    ]


def test_outputs_are_paired_as_nbval_pairs_them_and_sanitized_first():
    saved = [
        nbformat.v4.new_output("stream", name="stdout", text="p = 0.8403 in 12.1 ms\n"),
        nbformat.v4.new_output("display_data", data={PLOTLY: {"zmax": SAVED}}),
    ]
    fresh = [
        nbformat.v4.new_output("display_data", data={PLOTLY: {"zmax": XEON}}),
        nbformat.v4.new_output("stream", name="stdout", text="p = 0.8404 in 9.7 ms\n"),
    ]
    sanitize = lambda s: re.sub(r"\d+\.\d ms", "<time>", s)  # noqa: E731 (a sanitizer)
    out = tolerate_outputs(fresh, saved, 4, skip=("metadata",), sanitize=sanitize)
    assert out[0].data[PLOTLY] == {"zmax": SAVED}
    assert out[1].text == "p = 0.8403 in 12.1 ms\n"
    assert fresh[0].data[PLOTLY] == {"zmax": XEON}  # the fresh outputs are not modified


# -- end to end: pytest --nbval ----------------------------------------------------------------


def plot(zmax, row):
    return {
        "data": [{"type": "heatmap", "z": [row], "zmax": zmax, "zmin": 0}],
        "layout": {"title": {"text": "layer 15"}},
    }


ROW = [float(x) for x in float32_row(n=12)]
CELLS = [  # (source, what it outputs now, its saved output, should it pass)
    (
        "print('p = 0.8403255939483643, token 1234')",
        "p = 0.8403255939483643, token 1234\n",
        "p = 0.8403254747390747, token 1234\n",
        True,
    ),
    ("print('p = 0.8404')", "p = 0.8404\n", "p = 0.8403\n", True),
    ("print('p = 0.8413')", "p = 0.8413\n", "p = 0.8403\n", False),
    ("print('token 1235')", "token 1235\n", "token 1234\n", False),
    ("print('the cat')", "the cat\n", "the dog\n", False),
    (None, plot(XEON, nudged(np.array(ROW, dtype=np.float32))), plot(SAVED, ROW), True),
    (None, plot(SAVED * (1 + 1e-3), ROW), plot(SAVED, ROW), False),
]


def output(value):
    if isinstance(value, str):
        return nbformat.v4.new_output("stream", name="stdout", text=value)
    return nbformat.v4.new_output("display_data", data={PLOTLY: value})


def notebook(which):
    """The notebook of CELLS with their outputs now (which=1) or as saved (which=2)."""
    nb = nbformat.v4.new_notebook()
    for i, cell in enumerate(CELLS):
        code = cell[0] or (
            "from IPython.display import display\n"
            f"display({{{PLOTLY!r}: {json.dumps(cell[1])}}}, raw=True)"
        )
        nb.cells.append(
            nbformat.v4.new_code_cell(code, execution_count=i + 1, outputs=[output(cell[which])])
        )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


# The inner sessions, one after another in one process (Python, pytest and nbval start once):
# each saves its "browser's" runs once the replay plugin has emptied its folder, and writes each
# test's outcome and report (its failure text) as JSON for the tests to read. The session
# without the tolerance plugin comes first, before that plugin has wrapped nbval's comparison
# (the wrap stays in the process and does nothing where the plugin is not loaded; the first
# session does not even depend on that).
INNER = """
import json, sys
from pathlib import Path
import nbformat, pytest

class Inner:
    def __init__(self, runs):
        self.runs, self.outcomes = runs, {}

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):  # after the replay plugin has emptied its folder
        from tools import nbval_replay

        for name, path in self.runs.items():
            nbval_replay.save_run(nbformat.read(path, as_version=4), name, 1)

    def pytest_runtest_logreport(self, report):  # "NAME.ipynb::Cell 0": [outcome, report]
        key = report.nodeid.rpartition("/")[2]
        if report.when == "call" or not report.passed:
            self.outcomes[key] = [report.outcome, report.longreprtext]

for session in json.loads(sys.argv[1]):
    inner = Inner(session["runs"])
    pytest.main(session["args"], plugins=[inner])
    Path(session["report"]).write_text(json.dumps(inner.outcomes))
"""


def session(folder: Path, *options, kernel=False):
    """pytest --nbval on the notebook of CELLS as saved, replay.ipynb, its outputs to compare
    from a 'browser run' (tools/nbval_replay.py) of it; with `kernel`, also kernel.ipynb, the
    same notebook with no run saved: nbval runs it in a kernel."""
    lessons = folder / "notebooks"
    lessons.mkdir(parents=True)
    names = ["replay.ipynb", "kernel.ipynb"] if kernel else ["replay.ipynb"]
    for name in names:
        nbformat.write(notebook(2), lessons / name)
    nbformat.write(notebook(1), folder / "ran.ipynb")
    args = [*(str(lessons / name) for name in names), "--nbval", "--nbval-current-env", "-q"]
    args += ["-p", "no:cacheprovider", "--rootdir", str(folder), *options]
    args += ["-p", "tools.nbval_replay", "--nbval-replay", str(folder / "runs")]
    runs = {"replay.ipynb": str(folder / "ran.ipynb")}
    return {"args": args, "runs": runs, "report": str(folder / "outcomes.json")}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """{name: {"NAME.ipynb::Cell N": (outcome, report)}} of the three sessions, in one process."""
    tmp = tmp_path_factory.mktemp("nbval")
    plan = {
        "without the plugin": session(tmp / "exact"),
        "0 digits": session(tmp / "zero", "-p", "tools.nbval_tolerance", "--nbval-digits", "0"),
        "tolerant": session(tmp / "tolerant", "-p", "tools.nbval_tolerance", kernel=True),
    }
    proc = subprocess.run(
        [sys.executable, "-c", INNER, json.dumps(list(plan.values()))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = {}
    for name, planned in plan.items():
        report = Path(planned["report"])
        assert report.exists(), f"{name}: no outcomes\n" + proc.stdout + proc.stderr
        found[name] = {k: tuple(v) for k, v in json.loads(report.read_text()).items()}
    return found


def cells(outcomes: dict, name: str) -> list:
    return [outcomes.get(f"{name}::Cell {i}", ("not run",))[0] for i in range(len(CELLS))]


EXPECTED = ["passed" if ok else "failed" for *_, ok in CELLS]


@pytest.mark.parametrize("name", ["kernel.ipynb", "replay.ipynb"], ids=["kernel", "replay"])
def test_nbval_passes_rounding_and_fails_a_change(sessions, name):
    outcomes = sessions["tolerant"]
    assert cells(outcomes, name) == EXPECTED, outcomes
    reports = "\n".join(report for key, (_, report) in outcomes.items() if key.startswith(name))
    assert "Cell outputs differ" in reports  # nbval's own report of a real change
    assert "mismatch 'stdout'" in reports and f"mismatch '{PLOTLY}'" in reports
    assert "0.8413" in reports and "token 1235" in reports


def test_without_the_plugin_or_with_0_digits_rounding_fails(sessions):
    # exact: every cell here differs
    assert cells(sessions["without the plugin"], "replay.ipynb") == ["failed"] * len(CELLS)
    assert cells(sessions["0 digits"], "replay.ipynb") == ["failed"] * len(CELLS)
