"""pytest plugin: nbval compares the outputs of a lesson run the browser test already made,
instead of running the lesson a second time in a kernel of its own.

`make test` runs every lesson in real JupyterLab (tests/test_browser.py: Run All in Chromium)
and then nbval over notebooks/. Both ran every lesson, about four minutes of kernel time twice
on a 2-core machine. With `-p tools.nbval_replay --nbval-replay DIR`:

- the browser test saves each notebook it ran (JupyterLab's own save, right after Run All,
  before any slider moves) to DIR/NAME.ipynb, with the kernel's peak memory in its metadata;
- when nbval reaches NAME.ipynb and DIR/NAME.ipynb exists, it starts no kernel: each cell's
  outputs are taken from that run and compared with the committed ones by nbval's own code
  (`IPyNbCell.compare_outputs`, the same sanitizers, markers and skipped keys; only the source
  of the outputs differs), and the peak-memory test (tools/nbval_memory.py) reads the browser
  run's figure;
- when it does not exist (no browser here, or the browser test failed before saving), nbval
  runs that notebook in a kernel as usual: nothing is skipped.

DIR is emptied when the session starts (by pytest-xdist's controller, not by its workers), so
only runs made in this session are compared. A
teacher running plain nbval (`pytest notebooks --nbval ...`) gets the usual behaviour. This
uses nbval's internals (the IPyNbFile/IPyNbCell classes of nbval 0.11, pinned in
requirements.txt); tests/test_nbval_replay.py checks that a differing output still fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest

ENV = "VIZ_NBVAL_REPLAY"  # where the browser test saves its runs (set from --nbval-replay)
PEAK_KEY = "browser_peak_rss_bytes"  # notebook metadata["viz"][PEAK_KEY]


def pytest_addoption(parser):
    group = parser.getgroup("nbval-replay")
    group.addoption(
        "--nbval-replay",
        default=None,
        metavar="DIR",
        help="compare the notebooks the browser test ran and saved in DIR "
        "(emptied first) instead of running each one again",
    )


def pytest_configure(config):
    folder = config.getoption("nbval_replay")
    if not folder:
        return
    folder = Path(folder).resolve()
    if not hasattr(config, "workerinput"):  # a pytest-xdist worker keeps its controller's runs
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    os.environ[ENV] = str(folder)
    _patch_nbval()


def replay_dir() -> Path | None:
    """Where runs are saved this session (None: no replay)."""
    value = os.environ.get(ENV)
    return Path(value) if value else None


def save_run(nb, name: str, peak_rss_bytes: int) -> Path | None:
    """Keep a notebook the browser ran for nbval to compare (tests/test_browser.py)."""
    folder = replay_dir()
    if folder is None:
        return None
    nb.metadata.setdefault("viz", {})[PEAK_KEY] = int(peak_rss_bytes)
    path = folder / name
    nbformat.write(nb, path)
    return path


def run_of(path: Path):
    """The notebook the browser ran for `path` this session, or None."""
    folder = replay_dir()
    if folder is None or not (folder / path.name).is_file():
        return None
    return nbformat.read(folder / path.name, as_version=4)


def _patch_nbval() -> None:
    from nbval import plugin

    if getattr(plugin.IPyNbFile, "_viz_replay", False):
        return
    file_setup, cell_runtest = plugin.IPyNbFile.setup, plugin.IPyNbCell.runtest

    def setup(self):
        self.replay = run_of(Path(str(self.fspath)))
        if self.replay is None:
            return file_setup(self)  # no run of it this session: nbval runs it in a kernel
        self.setup_sanitize_files()  # what nbval's setup does besides starting a kernel
        self.replay_cells = [c for c in self.replay.cells if c.cell_type == "code"]

    def runtest(self):
        if getattr(self.parent, "replay", None) is None:
            return cell_runtest(self)
        return _replayed(self, plugin)

    plugin.IPyNbFile.setup, plugin.IPyNbCell.runtest = setup, runtest
    plugin.IPyNbFile._viz_replay = True


def _replayed(cell, plugin) -> None:
    """nbval's runtest, with the outputs taken from the browser's run of the same cell."""
    if cell.options["skip"]:
        pytest.skip()
    runs = cell.parent.replay_cells
    if cell.cell_num >= len(runs) or runs[cell.cell_num].source != cell.cell.source:
        cell.raise_cell_error(
            "the browser ran a different notebook (its cells differ from the "
            "committed one): run `make notebooks`"
        )
    ran = runs[cell.cell_num]
    if ran.get("execution_count") is None:
        cell.raise_cell_error("the browser's Run All did not run this cell")
    outs = [nbformat.from_dict(o) for o in ran.get("outputs", [])]
    errors = [o for o in outs if o.output_type == "error"]
    if errors and not cell.options["check_exception"]:
        cell.raise_cell_error(
            "Cell execution caused an exception", "\n" + "\n".join(errors[0].get("traceback", []))
        )
    outs = plugin.coalesce_streams(outs)
    cell.test_outputs = outs
    unrun = cell.cell.execution_count is None
    if unrun and cell.cell.outputs:
        cell.raise_cell_error("Unrun reference cell has outputs")
    if cell.options["check"] and not unrun:
        if not cell.compare_outputs(outs, plugin.coalesce_streams(cell.cell.outputs)):
            cell.raise_cell_error(
                "Cell outputs differ (compared with the browser test's run)",
                "\n".join(cell.comparison_traceback),
            )


def replayed_peak(notebook_file) -> int | None:
    """The kernel's peak memory the browser measured for a replayed notebook, else None."""
    replay = getattr(notebook_file, "replay", None)
    if replay is None:
        return None
    return replay.metadata.get("viz", {}).get(PEAK_KEY)
