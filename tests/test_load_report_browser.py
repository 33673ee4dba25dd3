"""The load report in a real browser, with the network cut: every plot renders, no script
error, nothing is fetched, and no text in any figure overlaps other text or is cut off
(tests/figure_text.py; screenshots in artifacts/browser/). Uses the shared `browser` fixture
(tests/conftest.py): without Chromium it skips on a learner's machine and fails in CI."""

import pytest

from figure_text import open_offline, page_text_problems, shoot
from test_load_report import make_sweep, req, run_of
from tools.course import ROOT
from viz.views.load_report import write_load_report

ARTIFACTS = ROOT / "artifacts" / "browser"


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    runs = [
        run_of([req(i, 0.2 * i, 0.1 + 0.05 * i) for i in range(4)], "rate", 5.0, "batched"),
        run_of([req(i, float(i), 0.1) for i in range(4)], "concurrency", label="alone"),
    ]
    docs = [*runs, make_sweep("continuous batching"), make_sweep("one at a time")]
    path = write_load_report(docs, tmp_path_factory.mktemp("browser") / "load.html")
    pg = open_offline(browser, path, 6)
    yield pg
    pg.close()


def test_every_plot_renders_offline_without_errors(page):
    # tradeoff, ITL, two timelines, the sweeps' latency and their Pareto
    assert page.locator(".js-plotly-plot").count() == 6
    assert page.locator("table.viz-grid").count() >= 4
    assert page.errors == [] and page.fetched == []
    n = page.evaluate("document.getElementById('viz-load-sweep').data.length")
    assert n == 12  # six lines for each of the two sweeps


def test_no_figure_text_overlaps_or_is_cut_off(page):
    problems, figs = page_text_problems(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "load-report-full.png"), full_page=True)
    shoot(page, figs, problems, ARTIFACTS / "text", "load-report")
    assert len(figs) == 6
    assert not problems, "unreadable text in the load report:\n" + "\n".join(problems)
