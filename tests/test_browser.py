"""Every lesson in a real browser: JupyterLab in headless Chromium, driven by Playwright.

nbval proves the kernel side; this proves what a learner sees. For each notebook in notebooks/
(found by glob), on a COPY of the folder (Lab autosaves, which would overwrite the reference
outputs), in one Lab page per worker that each lesson opens in and closes after (LabPage):
open it and check what it shows before anything runs (each saved plotly figure drawn live, not
as its static picture; each widget's picture shown; no "model not found"); clear its
outputs, Run All, then check that every code cell ran in this session (prompts 1..n), that no
cell shows an error, that every plot, image and widget the saved notebook says the cell makes
is rendered, that no text in any figure overlaps other text or is cut off and no widget label
is cut short (tests/figure_text.py, in the same visit), and that moving each slider changes
what the notebook shows. The lessons of tools/other_kernels.LESSONS run in a kernel with another
CPU's kernels (another CPU's rounding), checked in the kernel's environment, so that nbval's
comparison of their runs is the other kernels' check. Screenshots go to artifacts/browser/
(figures with unreadable text: artifacts/browser/text/). Also checks that `make lab` serves the
lessons, and that `python -m viz report` output renders with the network blocked.
Run one lesson: `pytest tests/test_browser.py -k 02_predicting`.

Chromium: Debian's package (`make browser` installs it as root), or any Chrome/Chromium named by
$VIZ_CHROMIUM. Playwright's own browser download is not used. Without a browser these tests
skip and say how to get one; in CI (VIZ_CI=1) they fail instead.
Run only these: `.venv/bin/python -m pytest tests/test_browser.py -v`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import nbformat
import pytest

from figure_text import page_text_problems, shoot
from tools import course, other_kernels
from tools.fallbacks import is_fallback

pytestmark = pytest.mark.slow

ROOT = course.ROOT
ARTIFACTS = ROOT / "artifacts" / "browser"
RUN_ALL_TIMEOUT_S = 600  # one lesson, end to end
# A slider's effect must show within this. Some sliders measure (lessons 13 and 14 run a
# generation per position: a few seconds alone), and here the lessons run beside the other tests
# on two cores.
SLIDER_TIMEOUT_S = 60

# JupyterLab settings for the test server: no news pop-up over the page, and every cell
# rendered (windowing would leave off-screen cells, and their plots, out of the page).
LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    # recordTiming: each cell's start and end are saved in its metadata, so a run saved for
    # nbval (tools/nbval_replay.py) shows where a lesson's time went (tools/cell_times.py).
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none", "recordTiming": True},
    # No autosave: the test saves each run once, itself. An autosave (every 120 s) landing
    # beside that save made JupyterLab ask "File Changed ... overwrite or revert?" over lesson
    # 09 (a 138 s run), and the dialog took the slider's click (seen in a fresh-clone CI run)
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
}

KERNEL_READY_JS = """() => {
  const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
  const bar = [...document.querySelectorAll('.jp-StatusBar-TextItem')]
    .some(e => /\\| Idle$/.test(e.textContent.trim()));
  return ind && ind.dataset.status === 'idle' && bar;
}"""

# Run All has finished: the kernel is idle and no cell waits ([*]); either every code cell has
# a number, or one shows an error (Run All stops at the first error).
RUN_DONE_JS = """() => {
  const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
  if (!ind || ind.dataset.status !== 'idle') return false;
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
    .map(e => e.textContent.trim());
  if (prompts.some(t => t.includes('*'))) return false;
  const errored = [...document.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .some(e => e.textContent.includes('Traceback'));
  return errored || prompts.every(t => /^\\[\\d+\\]:$/.test(t));
}"""

# What the notebook shows, less the sliders themselves (their handle and readout move anyway):
# ipywidgets sliders, and plotly's own slider and play-button groups; and a view's status line
# (its "working…" shows before anything is drawn).
SHOWN_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea')].map(a => {
  const c = a.cloneNode(true);
  c.querySelectorAll('.widget-slider, .slider-container, .updatemenu-container, .viz-status')
    .forEach(s => s.remove());
  return c.innerHTML;
}).join('\\n')"""


# ---- JupyterLab servers --------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jupyter_env(home: Path) -> dict[str, str]:
    """Environment for a test server: its own config, runtime, data and workspace folders."""
    env = dict(os.environ)
    for var, sub in [
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
        ("IPYTHONDIR", "ipython"),
    ]:
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    settings = home / "settings"
    settings.mkdir(exist_ok=True)
    (settings / "overrides.json").write_text(json.dumps(LAB_OVERRIDES, indent=1))
    return env


# The lessons whose compared outputs are computed (tools/other_kernels.LESSONS) run in a kernel
# with another CPU's kernels, as on another CPU, and nbval compares that run with the
# notebooks saved natively (tools/nbval_replay.py): the check `make test-other-kernels` makes,
# without running those lessons a second time. Their measurements go to a folder of their own
# (they measure this machine again with those kernels); the other lessons' stay native.
PLAIN_NOTE = " with another CPU's kernels"


def add_plain_kernel(data_dir: Path, measure_dir: Path) -> None:
    """Install the other kernels' kernelspec (other_kernels.kernelspec) for a test server."""
    spec = data_dir / "kernels" / other_kernels.KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    kernel = other_kernels.kernelspec(sys.executable, str(measure_dir))
    (spec / "kernel.json").write_text(json.dumps(kernel, indent=1))


def runs_plain(path: Path) -> bool:
    """Whether the browser test runs this lesson with another CPU's kernels."""
    return path.name.split("_")[0] in other_kernels.LESSONS


def use_plain_kernel(path: Path) -> None:
    """Point the test's copy of a lesson at the other kernels' kernelspec."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {
        "name": other_kernels.KERNEL_NAME,
        "display_name": other_kernels.KERNEL_DISPLAY_NAME,
        "language": "python",
    }
    nbformat.write(nb, path)


def plain_kernel_problems(pid: Optional[int]) -> list[str]:
    """The kernel that runs a lesson, checked for the other kernels' settings."""
    import psutil

    if pid is None:
        return ["could not find the kernel's process to check its kernels' settings"]
    wrong = other_kernels.missing(psutil.Process(pid).environ())
    return [f"the lesson's kernel runs without another CPU's kernels: {wrong}"] if wrong else []


def get_json(url: str, method: str = "GET", timeout: float = 5):
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
    return json.loads(body) if body else None


@contextmanager
def lab_server(
    cmd: list[str],
    env: dict,
    port: int,
    token: str,
    log: Path,
    cwd: Path = ROOT,
    start_timeout_s: float = 300,
) -> Iterator[str]:
    """Start a Jupyter server (its own process group), yield its base URL once /api/status
    answers, and stop every process of the group afterwards."""
    base = f"http://127.0.0.1:{port}"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + start_timeout_s
            while True:
                if proc.poll() is not None:
                    raise AssertionError(
                        f"server exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
                    )
                try:
                    get_json(f"{base}/api/status?token={token}")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise AssertionError(
                            f"no answer from {base} after {start_timeout_s} s:"
                            f"\n{log.read_text()[-3000:]}"
                        )
                    time.sleep(0.5)
            yield base
        finally:
            stop_group(proc)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group started for `proc` (make and its jupyter), then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def lab_command(port: int, token: str, root_dir: Path, settings_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        f"--LabApp.app_settings_dir={settings_dir}",
        # window.jupyterapp: the test opens each lesson with Lab's own command (LabPage)
        "--LabApp.expose_app_in_browser=True",
    ]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a copy of notebooks/ (autosave must not touch the committed notebooks)."""
    home = tmp_path_factory.mktemp("lab")
    copy = home / "notebooks"
    shutil.copytree(course.NOTEBOOKS, copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    port, token = free_port(), "browser-test"
    env = jupyter_env(home)
    add_plain_kernel(Path(env["JUPYTER_DATA_DIR"]), home / "other-kernels-measurements")
    with lab_server(
        lab_command(port, token, copy, home / "settings"), env, port, token, home / "server.log"
    ) as base:
        yield base, token, copy


@pytest.fixture(scope="module")
def lab_page(browser, lab):
    """The one Lab page the lessons of this module (on this worker) open in (LabPage)."""
    base, token, _ = lab
    lab_page = LabPage(browser, base, token)
    yield lab_page
    lab_page.drop()


def kernel_pid(base: str, token: str) -> Optional[int]:
    """The process id of the one kernel the server runs (its command line names the kernel's
    connection file, `kernel-<id>.json`)."""
    import psutil

    kernels = get_json(f"{base}/api/kernels?token={token}")
    if len(kernels) != 1:
        return None
    tag = f"kernel-{kernels[0]['id']}.json"
    for proc in psutil.process_iter(["cmdline"]):
        if any(tag in part for part in proc.info["cmdline"] or []):
            return proc.pid
    return None


def save_and_read(page, path: Path, timeout_s: float = 60):
    """Save the notebook from JupyterLab (its own save, as a learner would) and read the file."""
    before = path.stat().st_mtime_ns
    menu(page, "File", "Save Notebook")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.stat().st_mtime_ns != before:
            try:
                return nbformat.read(path, as_version=4)
            except Exception:  # still being written
                pass
        time.sleep(0.25)
    raise AssertionError(f"JupyterLab did not save {path.name} within {timeout_s:.0f} s")


def shut_down_kernels(base: str, token: str) -> None:
    """Each lesson holds the model (~1 GB): stop its kernel before the next one starts."""
    for kernel in get_json(f"{base}/api/kernels?token={token}"):
        get_json(f"{base}/api/kernels/{kernel['id']}?token={token}", method="DELETE")


# ---- what the saved notebook says each cell shows ----------------------------------------
def expected_outputs(path: Path) -> dict[int, dict[str, int]]:
    """For each code cell (by its index among all cells): how many plotly figures, images and
    widgets its saved outputs hold, and the sliders and FigureWidgets that a widget's text
    fallback names (ipywidgets shortens long ones, so these are lower bounds)."""
    expected = {}
    for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "code":
            continue
        # The static pictures `make notebooks` adds (tools/fallbacks.py) are for pages that
        # draw nothing live: a cell run in the browser does not make them.
        live = [o for o in cell.outputs if not is_fallback(o)]
        e = {"outputs": len(live), "plotly": 0, "image": 0, "widget": 0, "slider": 0}
        for out in live:
            data = out.get("data", {})
            plotly = "application/vnd.plotly.v1+json" in data
            e["plotly"] += plotly
            e["image"] += not plotly and any(
                k in data for k in ("image/png", "image/jpeg", "image/svg+xml")
            )
            if "application/vnd.jupyter.widget-view+json" in data:
                e["widget"] += 1
                e["slider"] += data.get("text/plain", "").count("Slider(")
                e["plotly"] += data.get("text/plain", "").count("FigureWidget(")
        expected[i] = e
    return expected


CELL_STATE_JS = """(cell) => ({
  outputs: cell.querySelectorAll('.jp-OutputArea-child').length,
  plotly: [...cell.querySelectorAll('.js-plotly-plot')]
    .filter(p => p.querySelector('svg.main-svg') && p.getBoundingClientRect().height > 0).length,
  image: [...cell.querySelectorAll('.jp-OutputArea-output img, .jp-RenderedSVG svg')]
    .filter(i => i.tagName !== 'IMG' || (i.complete && i.naturalWidth > 0)).length,
  widget: [...cell.querySelectorAll('.jp-OutputArea-output .jupyter-widgets')]
    .filter(w => w.getBoundingClientRect().height > 0).length,
  slider: cell.querySelectorAll('.widget-slider').length,
  broken: [...cell.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent)
    .filter(t => /Error displaying widget|Error rendering output|Javascript Error/.test(t)),
  errors: [...cell.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .map(o => o.textContent).filter(t => /Traceback|^\\w*(Error|Exception)\\b/m.test(t)),
})"""


SAVED_CELL_JS = """(cell) => ({
  plotly: [...cell.querySelectorAll('.js-plotly-plot')]
    .filter(p => p.querySelector('svg.main-svg')).length,
  images: [...cell.querySelectorAll('.jp-OutputArea-output img')]
    .filter(i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().height > 0).length,
  dead: /Error displaying widget|model not found/.test(cell.textContent),
})"""


def saved_view_problems(page, path: Path) -> list[str]:
    """The saved notebook, opened and not run: each plotly figure is drawn live (JupyterLab
    prefers the plotly JSON to the picture stored beside it), each widget's static picture is
    shown (tools/fallbacks.py), and no widget says "model not found"."""
    cells = nbformat.read(path, as_version=4).cells
    want = {}
    for i, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        outs = cell.get("outputs", [])
        plotly = sum("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outs)
        pictures = sum(
            ("image/png" in o.get("data", {}) or "image/jpeg" in o.get("data", {}))
            and "application/vnd.plotly.v1+json" not in o.get("data", {})
            for o in outs
        )
        want[i] = (plotly, pictures)
    total = sum(p for p, _ in want.values())
    wait_for_plots(page, total)
    if any(
        "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        for cell in cells
        if cell.cell_type == "code"
        for o in cell.get("outputs", [])
    ):
        page.wait_for_timeout(2500)  # a widget with no saved state gives up after ~2 s
    problems = []
    located = page.locator(".jp-Notebook .jp-Cell")
    for i, (plotly, pictures) in want.items():
        got = located.nth(i).evaluate(SAVED_CELL_JS)
        if got["plotly"] < plotly:
            problems.append(
                f"saved cell {i}: {plotly} plotly figure(s), {got['plotly']} drawn "
                "live before running"
            )
        if got["images"] != pictures:
            problems.append(
                f"saved cell {i}: {pictures} picture(s) expected before running "
                f"(widgets' static pictures, plots' kept out of sight), "
                f"{got['images']} shown: run `make notebooks`"
            )
        if got["dead"]:
            problems.append(
                f"saved cell {i}: a widget shows 'model not found' before running: "
                "run `make notebooks` (it adds the widget's picture)"
            )
    return problems


def wait_for_plots(page, n: int, timeout_s: float = 30) -> None:
    """Until n plotly figures are drawn in the notebook (or timeout_s: the checks after this
    count them, cell by cell, and say which are missing)."""
    try:
        page.wait_for_function(
            f"() => document.querySelectorAll("
            f"'.jp-Notebook .js-plotly-plot svg.main-svg').length >= {n}",
            timeout=timeout_s * 1000,
            polling=250,
        )
    except Exception:
        pass


class LabPage:
    """One JupyterLab page for every lesson a worker opens. Loading Lab for each lesson took
    4-6 s and ~4 s of Chromium's CPU (the 16 lessons' "open" phases: 90.2 s in a fresh-clone
    run); opening each in a Lab already loaded took 30.5 s in all in the next run.
    Each lesson opens with Lab's own "open" command and is closed (its widgets disposed) after;
    a page left in doubt (a dialog, a notebook that would not close) is closed, and the next
    lesson loads Lab afresh."""

    def __init__(self, browser, base: str, token: str):
        self.browser, self.base, self.token = browser, base, token
        self.page = None

    def get(self):
        """The page, with Lab loaded and nothing open in its main area."""
        if self.page is None:
            page = self.browser.new_page()
            # A workspace of its own, reset: Lab must not reopen what an earlier page opened.
            page.goto(f"{self.base}/lab/workspaces/lessons?reset&token={self.token}")
            page.wait_for_function("() => window.jupyterapp", timeout=120_000, polling=250)
            page.evaluate(
                "() => { window.jupyterapp.restored.then(() => { window.vizRestored = true; });"
                " return true; }"
            )
            page.wait_for_function("() => window.vizRestored", timeout=120_000, polling=250)
            self.page = page
        return self.page

    def close_notebooks(self) -> None:
        """Dispose of every widget in Lab's main area (no "save your work?" dialog: the test
        saved what it needs), then check that the page is clean; if not, drop it."""
        if self.page is None:
            return
        try:
            clean = self.page.evaluate(
                """() => {
                  for (const w of [...window.jupyterapp.shell.widgets('main')]) w.dispose();
                  return !document.querySelector('.jp-Notebook, .jp-Dialog');
                }"""
            )
        except Exception:
            clean = False
        if not clean:
            self.drop()

    def drop(self) -> None:
        if self.page is not None:
            self.page.close()
            self.page = None


def open_notebook(page, name: str, n_cells: int) -> None:
    """Open a lesson in the loaded Lab and wait until its n_cells cells are on the page (not
    for its kernel: `wait_for_kernel`, so that the kernel starts while the saved views are
    checked)."""
    # Not awaited here: the wait below has a timeout, an evaluate has none.
    page.evaluate(
        "name => { window.jupyterapp.commands"
        ".execute('docmanager:open', {path: name, factory: 'Notebook'}); return true; }",
        name,
    )
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-Notebook .jp-Cell').length >= n",
        arg=n_cells,
        timeout=120_000,
        polling=250,
    )


def wait_for_kernel(page) -> None:
    page.wait_for_function(KERNEL_READY_JS, timeout=120_000, polling=250)


def menu(page, top: str, item: str) -> None:
    page.click(f".lm-MenuBar-item:has-text('{top}')")
    page.click(f".lm-Menu-item:has(.lm-Menu-itemLabel:text-is('{item}'))")


def screenshot_whole_notebook(page, path: Path) -> None:
    """The notebook scrolls inside the page: make the window as tall as it, then shoot."""
    height = page.evaluate("""() => {
      const els = [...document.querySelectorAll('.jp-WindowedPanel-outer, .jp-Notebook')];
      els.forEach(e => e.scrollTop = 0);
      return Math.max(...els.map(e => e.scrollHeight));
    }""")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": min(height + 300, 16000)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


def move_slider(page, slider) -> None:
    """Move a slider one notch with the keyboard: left (right when it sits at its minimum).
    Left first because some sliders measure at their value (05's tokens, 09's requests): a
    smaller value is the quicker measurement (05 at 1,280 tokens, torch's other kernels: 9 s)."""
    readout = slider.locator(".widget-readout")
    before = readout.text_content() if readout.count() else None
    handle = slider.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(300)
    if before is not None and readout.text_content() == before:
        page.keyboard.press("ArrowRight")


def move_plotly_slider(page, plot) -> None:
    """Click a plotly figure's slider rail far from the frame it shows (at 85% of its length
    when that frame is in the first half, else at 15%): it jumps to that frame."""
    rail = plot.locator(".slider-container .slider-rail-touch-rect").first
    rail.scroll_into_view_if_needed()
    box = rail.bounding_box()
    early = plot.evaluate(
        "p => { const s = p.layout.sliders[0]; return (s.active || 0) < s.steps.length / 2; }"
    )
    rail.click(position={"x": box["width"] * (0.85 if early else 0.15), "y": box["height"] / 2})


def expect_change(page, move, problems: list[str], what: str) -> None:
    """Run `move` (a control being moved); something else on the page must then change."""
    page.evaluate(f"() => {{ window.vizShownBefore = ({SHOWN_JS})(); }}")
    move()
    try:
        page.wait_for_function(
            f"() => ({SHOWN_JS})() !== window.vizShownBefore",
            timeout=SLIDER_TIMEOUT_S * 1000,
            polling=250,
        )
    except Exception:
        problems.append(f"{what} moved, but nothing else on the page changed")


# ---- the tests ----------------------------------------------------------------------------
NOTEBOOK_PATHS = course.notebook_paths()


def test_there_are_lessons_to_open():
    assert NOTEBOOK_PATHS, f"no notebooks in {course.NOTEBOOKS}"


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=[p.name for p in NOTEBOOK_PATHS])
def test_lesson_runs_in_the_browser(path, lab, lab_page):
    from tools.course import PeakRSS
    from tools.nbval_replay import replay_dir, save_run

    base, token, copy = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    expected = expected_outputs(path)
    page = lab_page.get()
    js_errors: list[str] = []

    def on_error(e) -> None:
        js_errors.append(str(e))

    page.on("pageerror", on_error)
    phases: dict[str, float] = {}  # where this lesson's time went, saved beside its screenshots
    last = [time.monotonic()]

    def done(phase: str) -> None:
        now = time.monotonic()
        phases[phase], last[0] = round(now - last[0], 1), now

    plain = runs_plain(path)
    if plain:
        use_plain_kernel(copy / path.name)
    try:
        t0 = time.monotonic()
        n_cells = len(nbformat.read(path, as_version=4).cells)
        open_notebook(page, path.name, n_cells)
        notebooks = page.locator(".jp-Notebook").count()
        assert notebooks == 1, f"{notebooks} notebooks on the page: the last lesson stayed open"
        cells = page.locator(".jp-Notebook .jp-Cell")
        assert cells.count() == n_cells, f"{cells.count()} of {n_cells} cells on the page"

        done("open")
        # What the saved notebook shows before anything runs (Binder while its kernel starts),
        # checked while this kernel starts.
        problems = saved_view_problems(page, path)
        done("saved views")
        wait_for_kernel(page)
        done("kernel")

        # Clear the saved outputs first, so that everything checked below was made now.
        menu(page, "Edit", "Clear Outputs of All Cells")
        page.wait_for_function("() => !document.querySelector('.jp-Notebook .js-plotly-plot')")
        pid = kernel_pid(base, token)
        if plain:
            problems += plain_kernel_problems(pid)
        meter = PeakRSS(pid) if pid else None  # the kernel and what it starts (lessons 09 and 10)
        menu(page, "Run", "Run All Cells")
        # (cleared cells show no number: RUN_DONE_JS cannot see the run done before it began)
        page.wait_for_function(RUN_DONE_JS, timeout=RUN_ALL_TIMEOUT_S * 1000, polling=500)
        run_s = time.monotonic() - t0
        done("run all")
        peak = meter.stop() if meter else 0
        # let plots and widgets finish drawing
        wait_for_plots(page, sum(e["plotly"] for e in expected.values()))
        page.wait_for_timeout(300)
        if replay_dir() is not None:  # nbval compares this run instead of running it again
            if not meter:
                problems.append("could not find the kernel's process to measure its memory")
            else:
                save_run(save_and_read(page, copy / path.name), path.name, peak)
        done("save")
        screenshot_whole_notebook(page, ARTIFACTS / f"{path.stem}.png")
        done("screenshot")

        # Every figure's text readable, every widget label whole, as Run All left them.
        text_problems, figs = page_text_problems(page, ".jp-Notebook")
        if text_problems:
            shoot(page, figs, text_problems, ARTIFACTS / "text", path.stem)
        problems += text_problems
        done("figure text")

        prompts = [
            t.strip()
            for t in page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").all_text_contents()
        ]
        if prompts != [f"[{n}]:" for n in range(1, len(prompts) + 1)]:
            problems.append(f"not every cell ran, in order, in this session: prompts {prompts}")
        for i, want in expected.items():
            got = cells.nth(i).evaluate(CELL_STATE_JS)
            problems += [f"cell {i} shows an error:\n{t[-1500:]}" for t in got["errors"]]
            problems += [f"cell {i} failed to render: {t[:300]}" for t in got["broken"]]
            if want["outputs"] and not got["outputs"]:
                problems.append(f"cell {i}: the saved notebook has output here, the browser none")
            for kind in ("plotly", "image", "widget", "slider"):
                if got[kind] < want[kind]:
                    problems.append(
                        f"cell {i}: {want[kind]} {kind} output(s) expected from the "
                        f"saved notebook, {got[kind]} rendered"
                    )

        done("cells")
        # The main control of each interactive view: every slider must change what is shown.
        ancestor_cell = "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' jp-Cell ')][1]"
        sliders = page.locator(".jp-Notebook .widget-slider")
        # Plotly figures with a slider of their own (frames: no kernel needed).
        plots = page.locator(".jp-Notebook .js-plotly-plot:has(.slider-container)")
        for found, move, name, tag in [
            (sliders, move_slider, "slider", "slider"),
            (plots, move_plotly_slider, "plotly slider", "plot-slider"),
        ]:
            for k in range(found.count()):
                expect_change(page, lambda: move(page, found.nth(k)), problems, f"{name} {k}")
                found.nth(k).locator(ancestor_cell).screenshot(
                    path=str(ARTIFACTS / f"{path.stem}-{tag}{k}-moved.png")
                )
        done("sliders")
        problems += [f"JavaScript error on the page: {e}" for e in js_errors]
        (ARTIFACTS / "timings").mkdir(exist_ok=True)
        (ARTIFACTS / "timings" / f"{path.stem}.json").write_text(json.dumps(phases, indent=1))
        print(
            f"{path.name}: ran in the browser in {run_s:.1f} s{PLAIN_NOTE if plain else ''}, "
            f"{sliders.count()} widget and "
            f"{plots.count()} plotly slider(s) moved; screenshots in "
            f"{ARTIFACTS.relative_to(ROOT)}; seconds by phase {phases}"
        )
        assert not problems, "\n".join(problems)
    finally:
        page.remove_listener("pageerror", on_error)
        lab_page.close_notebooks()
        shut_down_kernels(base, token)


def test_a_lab_page_left_in_doubt_is_replaced(lab, lab_page):
    """LabPage: a notebook closed cleanly keeps the page for the next lesson; a page left with
    a dialog open (here Lab's "About" box) is closed, and the next lesson gets a fresh Lab."""
    base, token, copy = lab
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("a check of LabPage")])
    # its kernel named, as the lessons' are: without, Lab may ask which kernel (a dialog)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, copy / "labpage-check.ipynb")
    try:
        page = lab_page.get()
        open_notebook(page, "labpage-check.ipynb", 1)
        lab_page.close_notebooks()
        assert lab_page.page is page and page.locator(".jp-Notebook").count() == 0
        open_notebook(page, "labpage-check.ipynb", 1)
        page.evaluate("() => { window.jupyterapp.commands.execute('help:about'); return true; }")
        page.wait_for_selector(".jp-Dialog")
        lab_page.close_notebooks()
        assert lab_page.page is None and page.is_closed()
        fresh = lab_page.get()
        open_notebook(fresh, "labpage-check.ipynb", 1)
        assert fresh.locator(".jp-Notebook").count() == 1 and not fresh.query_selector(".jp-Dialog")
    finally:
        lab_page.close_notebooks()
        shut_down_kernels(base, token)
        (copy / "labpage-check.ipynb").unlink()


def test_make_lab_serves_the_lessons(browser, tmp_path):
    """`make lab` (the README's command, with a port and no browser) answers and lists every
    lesson, in its file browser too."""
    port, token = free_port(), "make-lab-test"
    env = jupyter_env(tmp_path)
    env.pop("MAKELEVEL", None)
    flags = (
        f"--no-browser --ip=127.0.0.1 --ServerApp.token={token} "
        f"--LabApp.app_settings_dir={tmp_path / 'settings'}"
    )
    cmd = ["make", "-s", "-C", str(ROOT), "lab", f"PORT={port}", f"LAB_FLAGS={flags}"]
    with lab_server(cmd, env, port, token, tmp_path / "make-lab.log") as base:
        contents = get_json(f"{base}/api/contents?token={token}")["content"]
        listed = {item["name"] for item in contents}
        want = {p.name for p in course.notebook_paths()}
        assert want <= listed, f"make lab lists {sorted(listed)}, not all of {sorted(want)}"
        page = browser.new_page()
        try:
            page.goto(f"{base}/lab?token={token}")
            page.wait_for_selector(".jp-DirListing-item", timeout=120_000)
            shown = set(page.locator(".jp-DirListing-itemText").all_text_contents())
            page.screenshot(path=str(ARTIFACTS / "make-lab.png"))
        finally:
            page.close()
        assert want <= {s.strip() for s in shown}, f"file browser shows {sorted(shown)}"


def test_report_renders_offline(browser, tmp_path):
    """`python -m viz report trace.json -o report.html` (issue 3) opens with the network
    blocked, and its plots render from the embedded plotly.js."""
    from conftest import tiny_model

    import viz

    trace = viz.record(tiny_model(gqa=True), "Hello, world", max_new_tokens=6)
    trace.save(tmp_path / "trace.json")
    report = tmp_path / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "viz", "report", str(tmp_path / "trace.json"), "-o", str(report)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    page = browser.new_page()
    requests: list[str] = []
    errors: list[str] = []

    def block(route):
        if route.request.url.startswith(("file:", "data:", "blob:")):
            return route.continue_()
        requests.append(route.request.url)
        return route.abort()

    page.route("**/*", block)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(report.as_uri())
        page.wait_for_timeout(3000)
        plots = page.locator(".js-plotly-plot").count()
        drawn = page.locator(".js-plotly-plot svg.main-svg").count()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    finally:
        page.close()
    assert plots > 0 and drawn >= plots, f"{plots} plot(s) in the report, {drawn} drawn"
    assert not errors, errors
    assert not requests, f"the report asked the network for {requests}"
