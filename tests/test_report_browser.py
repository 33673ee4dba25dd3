"""The report in a real browser, with the network cut: every plot renders, no script error,
nothing is fetched, moving each control changes what is drawn, and no text in any figure
overlaps other text or is cut off (tests/figure_text.py; screenshots in artifacts/browser/).

Uses the shared `browser` fixture (tests/conftest.py): Debian's Chromium driven by Playwright;
without it the test skips on a learner's machine and fails in CI.
"""

import pytest

import viz
from figure_text import open_offline, page_text_problems, shoot
from tools.course import ROOT
from viz.views.report import write_report

ARTIFACTS = ROOT / "artifacts" / "browser"


@pytest.fixture(scope="module")
def page(browser, tiny_gqa, tmp_path_factory):
    a = viz.record(
        tiny_gqa, "Hi 🍕 東京", max_new_tokens=5, stop_at_eos=False, label="A", attention=True
    )
    b = viz.record(tiny_gqa, "Hello", max_new_tokens=4, stop_at_eos=False, use_cache=False)
    path = write_report(a, tmp_path_factory.mktemp("browser") / "report.html", other=b)
    pg = open_offline(browser, path, 8)
    yield pg
    pg.close()


def data(page, div, trace, attr):
    return page.evaluate(f"document.getElementById('{div}').data[{trace}].{attr}")


def test_every_plot_renders_offline_without_errors(page):
    assert page.locator(".js-plotly-plot").count() == 8  # 7 views + the comparison
    assert page.locator(".viz-tokens .viz-tok").count() > 0
    assert page.errors == [] and page.fetched == []


def test_whatif_controls_redraw_the_bars(page):
    before = data(page, "viz-whatif-plot", 1, "x")
    page.evaluate(
        "var e=document.getElementById('viz-wi-k'); e.value=1;e.dispatchEvent(new Event('input'))"
    )  # top-k 1: one token left
    after = data(page, "viz-whatif-plot", 1, "x")
    assert after != before and sum(1 for p in after if p > 0) == 1
    assert "1 of the" in page.inner_text("#viz-wi-note")
    page.evaluate(
        "var e=document.getElementById('viz-wi-step'); e.value=3;"
        "e.dispatchEvent(new Event('input'))"
    )
    assert "step 3" in page.evaluate("document.getElementById('viz-whatif-plot').layout.title.text")
    assert page.errors == []


def test_explorer_slider_moves_the_linked_panels(page):
    kv_before = data(page, "viz-explorer-plot", 3, "y")
    page.evaluate(
        "Plotly.animate('viz-explorer-plot', ['4'], {mode: 'immediate', "
        "frame: {duration: 0, redraw: true}, transition: {duration: 0}})"
    )
    page.wait_for_timeout(300)
    assert data(page, "viz-explorer-plot", 3, "x") == [4]
    assert data(page, "viz-explorer-plot", 3, "y") != kv_before
    assert page.errors == []


def test_no_figure_text_overlaps_or_is_cut_off(page):
    page.set_viewport_size({"width": 1200, "height": 900})
    problems, figs = page_text_problems(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-full.png"), full_page=True)
    shoot(page, figs, problems, ARTIFACTS / "text", "report")
    assert len(figs) == 8
    assert not problems, "unreadable text in the report:\n" + "\n".join(problems)
