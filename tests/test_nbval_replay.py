"""nbval over a run the browser test saved (tools/nbval_replay.py): the same comparison as
nbval's own, so a differing output still fails, a run with an error fails, a missing run is
executed in a kernel as usual, and the peak memory comes from the run."""

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]


def notebook(printed: str, count=1):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('hello')", execution_count=count)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


# The inner session: the "browser's" runs saved once the replay plugin has emptied its folder,
# and each test's outcome and report (its failure text) written as JSON for the tests to read.
INNER = """
import json, sys
from pathlib import Path
import nbformat, pytest

runs, outcomes = json.loads(sys.argv[1]), {}  # runs: {NAME.ipynb: [its run's file, peak]}

class Inner:
    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):  # after the replay plugin has emptied its folder
        from tools import nbval_replay

        for name, (path, peak) in runs.items():
            nbval_replay.save_run(nbformat.read(path, as_version=4), name, peak)

    def pytest_runtest_logreport(self, report):  # "NAME.ipynb::Cell 0": [outcome, report]
        key = report.nodeid.rpartition("/")[2]
        if report.when == "call" or not report.passed:
            outcomes[key] = [report.outcome, report.longreprtext]

code = pytest.main(sys.argv[3:], plugins=[Inner()])
Path(sys.argv[2]).write_text(json.dumps(outcomes))
sys.exit(code)
"""


def run_nbval(tmp_path, committed: dict, ran: dict):
    """One pytest --nbval over the notebooks `committed` ({NAME.ipynb: notebook}) with the replay
    plugin, `ran` ({NAME.ipynb: (notebook, peak)}) saved as the browser's runs: one Python,
    pytest and nbval start for every case. Returns the process and {"NAME.ipynb::Cell 0":
    (outcome, report)}."""
    lessons = tmp_path / "notebooks"
    lessons.mkdir()
    for name, nb in committed.items():
        nbformat.write(nb, lessons / name)
    saved = {}
    for name, (nb, peak) in ran.items():
        nbformat.write(nb, tmp_path / f"ran-{name}")
        saved[name] = [str(tmp_path / f"ran-{name}"), peak]
    report = tmp_path / "outcomes.json"
    args = [
        *(str(lessons / name) for name in committed),
        "--nbval",
        "--nbval-current-env",
        "-p",
        "tools.nbval_replay",
        "-p",
        "tools.nbval_memory",
        "--nbval-replay",
        str(tmp_path / "runs"),
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tmp_path),
    ]
    proc = subprocess.run(
        [sys.executable, "-c", INNER, json.dumps(saved), str(report), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), proc.stdout + proc.stderr
    return proc, {k: tuple(v) for k, v in json.loads(report.read_text()).items()}


def with_error(nb):
    nb.cells[0].outputs.append(
        nbformat.v4.new_output(
            "error", ename="ValueError", evalue="boom", traceback=["ValueError: boom"]
        )
    )
    return nb


def kernel_notebook():
    """No run of it is saved: nbval runs it in a kernel, which prints "hello" twice; the first
    cell's saved output agrees, the second's does not."""
    nb = notebook("hello\n")
    nb.cells.append(notebook("not what it prints\n", count=2).cells[0])
    return nb


@pytest.fixture(scope="module")
def nbval(request, tmp_path_factory):
    """Every case in one inner session. The kernel's case joins only when its (slow) test is
    selected: `make test-fast` starts no kernel."""
    committed = {n: notebook("hello\n") for n in ("same.ipynb", "differ.ipynb", "error.ipynb")}
    ran = {
        "same.ipynb": (notebook("hello\n", count=7), 456 << 20),
        "differ.ipynb": (notebook("goodbye\n"), 123 << 20),
        "error.ipynb": (with_error(notebook("hello\n")), 123 << 20),
    }
    kernel = test_without_a_run_nbval_runs_the_notebook_in_a_kernel
    if any(getattr(item, "function", None) is kernel for item in request.session.items):
        committed["kernel.ipynb"] = kernel_notebook()
    return run_nbval(tmp_path_factory.mktemp("nbval"), committed, ran)


def test_the_same_outputs_pass_and_the_peak_is_the_runs(nbval):
    proc, outcomes = nbval
    assert outcomes["same.ipynb::Cell 0"][0] == "passed", outcomes
    assert outcomes["same.ipynb::peak-memory"][0] == "passed", outcomes
    assert re.search(r"same\.ipynb +456 MiB", proc.stdout), proc.stdout  # the run's figure


def test_a_differing_output_fails(nbval):
    outcome, report = nbval[1]["differ.ipynb::Cell 0"]
    assert outcome == "failed"
    assert "Cell outputs differ (compared with the browser test's run)" in report
    assert "goodbye" in report


def test_an_error_in_the_run_fails(nbval):
    outcome, report = nbval[1]["error.ipynb::Cell 0"]
    assert outcome == "failed" and "Cell execution caused an exception" in report


@pytest.mark.slow
def test_without_a_run_nbval_runs_the_notebook_in_a_kernel(nbval):
    outcomes = nbval[1]
    assert outcomes["kernel.ipynb::Cell 0"][0] == "passed", outcomes  # it printed "hello"
    outcome, report = outcomes["kernel.ipynb::Cell 1"]
    assert outcome == "failed" and "Cell outputs differ" in report
    assert "browser test's run" not in report
    assert outcomes["kernel.ipynb::peak-memory"][0] == "passed", outcomes  # measured there


def test_cell_times_reads_the_timing_jupyterlab_recorded(tmp_path, capsys):
    from tools import cell_times

    nb = notebook("hello")
    slow = nbformat.v4.new_code_cell("# a comment first\ntime.sleep(2.5)", execution_count=2)
    nb.cells.append(slow)
    nb.cells[0].metadata["execution"] = {
        "iopub.execute_input": "2026-12-05T09:00:00.000Z",
        "shell.execute_reply": "2026-12-05T09:00:00.250Z",
    }
    slow.metadata["execution"] = {
        "iopub.execute_input": "2026-12-05T09:00:01.000Z",
        "shell.execute_reply": "2026-12-05T09:00:03.500Z",
    }
    nbformat.write(nb, tmp_path / "x.ipynb")
    assert cell_times.cell_seconds(tmp_path / "x.ipynb") == [
        (0.25, 0, "print('hello')"),
        (2.5, 1, "time.sleep(2.5)"),
    ]
    assert cell_times.main([str(tmp_path), "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "x.ipynb: 2.8 s in 2 cells" in out and "time.sleep(2.5)" in out
    assert "print('hello')" not in out  # only the slowest one


def test_cell_times_names_the_fix_when_there_are_no_runs(tmp_path, capsys):
    from tools import cell_times

    assert cell_times.main([str(tmp_path)]) == 2
    assert "run the browser test first" in capsys.readouterr().err
