"""nbval over a run the browser test saved (tools/nbval_replay.py): the same comparison as
nbval's own, so a differing output still fails, a run with an error fails, a missing run is
executed in a kernel as usual, and the peak memory comes from the run."""

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


def run_nbval(tmp_path, committed, ran=None, peak=None):
    """pytest --nbval on `committed` with the replay plugin; `ran` saved as the browser's run."""
    lessons = tmp_path / "notebooks"
    lessons.mkdir()
    nbformat.write(committed, lessons / "x.ipynb")
    runs = tmp_path / "runs"
    args = [
        sys.executable,
        "-m",
        "pytest",
        str(lessons / "x.ipynb"),
        "--nbval",
        "--nbval-current-env",
        "-p",
        "tools.nbval_replay",
        "-p",
        "tools.nbval_memory",
        "--nbval-replay",
        str(runs),
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tmp_path),
    ]
    if ran is not None:  # saved "by the browser" once the plugin has emptied the folder
        code = (
            "import sys, nbformat, pytest\n"
            "from tools import nbval_replay\n"
            "class Save:\n"
            "    @pytest.hookimpl(trylast=True)\n"
            "    def pytest_configure(self, config):\n"
            f"        nbval_replay.save_run(nbformat.read({str(tmp_path / 'ran.ipynb')!r},"
            f" as_version=4), 'x.ipynb', {peak or 123 << 20})\n"
            f"sys.exit(pytest.main({args[3:]!r}, plugins=[Save()]))\n"
        )
        nbformat.write(ran, tmp_path / "ran.ipynb")
        args = [sys.executable, "-c", code]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_same_outputs_pass_and_the_peak_is_the_runs(tmp_path):
    proc = run_nbval(tmp_path, notebook("hello\n"), notebook("hello\n", count=7), 456 << 20)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout and "456 MiB" in proc.stdout  # the cell and peak-memory


def test_a_differing_output_fails(tmp_path):
    proc = run_nbval(tmp_path, notebook("hello\n"), notebook("goodbye\n"))
    assert proc.returncode == 1
    assert "Cell outputs differ (compared with the browser test's run)" in proc.stdout
    assert "goodbye" in proc.stdout


def test_an_error_in_the_run_fails(tmp_path):
    ran = notebook("hello\n")
    ran.cells[0].outputs.append(
        nbformat.v4.new_output(
            "error", ename="ValueError", evalue="boom", traceback=["ValueError: boom"]
        )
    )
    proc = run_nbval(tmp_path, notebook("hello\n"), ran)
    assert proc.returncode == 1 and "Cell execution caused an exception" in proc.stdout


@pytest.mark.slow
def test_without_a_run_nbval_runs_the_notebook_in_a_kernel(tmp_path):
    proc = run_nbval(tmp_path, notebook("hello\n"))  # the kernel prints "hello": it passes
    assert proc.returncode == 0, proc.stdout + proc.stderr
    other = tmp_path / "other"
    other.mkdir()
    proc = run_nbval(other, notebook("not what it prints\n"))
    assert proc.returncode == 1 and "Cell outputs differ" in proc.stdout
    assert "browser test's run" not in proc.stdout


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
