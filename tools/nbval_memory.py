"""pytest plugin: the peak memory of every notebook that nbval runs, checked against a budget.

Load it with `-p tools.nbval_memory` next to `--nbval` (`make test` does). After the last cell
of each notebook one more test runs in the same kernel, `NAME.ipynb::peak-memory`: it fails
when the kernel's peak resident memory is over the budget (a Binder session has ~2 GB for the
server and the kernel together). The figures are printed at the end of the run and, with
`--peak-memory-json FILE`, written as JSON. It also keeps the static pictures of plotly
figures (tools/fallbacks.py) out of nbval's comparison. When nbval compares a run the
browser test made (tools/nbval_replay.py), the figure is the one the browser test measured on
that run's kernel.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.course import MEMORY_BUDGET_BYTES, PeakRSS

METERS = pytest.StashKey[dict]()
RESULTS = pytest.StashKey[dict]()


def pytest_addoption(parser):
    group = parser.getgroup("nbval-memory")
    group.addoption(
        "--peak-memory-budget-mib",
        type=float,
        default=MEMORY_BUDGET_BYTES / 2**20,
        help="fail a notebook whose kernel peaks above this (MiB)",
    )
    group.addoption("--peak-memory-json", default=None, help="write the figures to this file")


def pytest_configure(config):
    config.stash[METERS] = {}
    config.stash[RESULTS] = {}


def _is_nbval_cell(item) -> bool:
    return type(item.parent).__name__ == "IPyNbFile" and not isinstance(item, PeakMemory)


class PeakMemory(pytest.Item):
    """The kernel's peak resident memory after the notebook's last cell, within budget."""

    def runtest(self):
        from tools.nbval_replay import replayed_peak

        peak = replayed_peak(self.parent)  # the browser test's run, when nbval replays it
        if peak is None:
            meter = self.config.stash[METERS].get(self.parent.nodeid)
            if meter is None or self.parent.kernel is None:
                pytest.skip("the notebook's kernel did not start")
            peak = meter.stop()
        self.config.stash[RESULTS][self.parent.path.name] = peak
        budget = self.config.getoption("peak_memory_budget_mib") * 2**20
        if peak > budget:
            pytest.fail(
                f"{self.parent.path.name}: the kernel peaked at {peak / 2**20:.0f} MiB, "
                f"over the {budget / 2**20:.0f} MiB budget (Binder has ~2 GB in all): "
                "load less, keep fewer steps",
                pytrace=False,
            )

    def reportinfo(self):
        return self.path, None, f"{self.parent.path.name}::peak-memory"


def pytest_collection_modifyitems(session, config, items):
    """Insert one PeakMemory test after the last cell of each notebook; and leave out of the
    comparison the figures' static pictures `make notebooks` stores (tools/fallbacks.py: the
    kernel makes the figure, not its picture)."""
    from tools.fallbacks import drop_pictures

    out = []
    for i, item in enumerate(items):
        if _is_nbval_cell(item) and getattr(item, "cell", None) is not None:
            item.cell.outputs = drop_pictures(item.cell.get("outputs", []))
        out.append(item)
        last_of_file = i + 1 == len(items) or items[i + 1].parent is not item.parent
        if _is_nbval_cell(item) and last_of_file:
            out.append(PeakMemory.from_parent(item.parent, name="peak-memory"))
    items[:] = out


@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item):
    """Once the notebook's kernel is up (nbval starts it when its first cell is set up),
    start watching its memory."""
    if not _is_nbval_cell(item):
        return
    meters = item.config.stash[METERS]
    kernel = getattr(item.parent, "kernel", None)
    if item.parent.nodeid not in meters and kernel is not None:
        meters[item.parent.nodeid] = PeakRSS(kernel.km.provisioner.process.pid)


WORKER_KEY = "viz_peak_memory"  # a pytest-xdist worker's figures, sent to its controller


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its figures to the controller, which prints them."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput[WORKER_KEY] = dict(session.config.stash[RESULTS])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """The controller: gather a finished worker's figures."""
    node.config.stash[RESULTS].update(getattr(node, "workeroutput", {}).get(WORKER_KEY, {}))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    results = dict(sorted(config.stash[RESULTS].items()))
    if not results:
        return
    terminalreporter.section("kernel peak memory per notebook")
    for name, peak in results.items():
        terminalreporter.write_line(f"{name:48} {peak / 2**20:7.0f} MiB")
    path = config.getoption("peak_memory_json")
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps({k: v for k, v in results.items()}, indent=1) + "\n")
