"""Static pictures in the saved notebooks (issue 14, item 1): where nothing live renders —
GitHub's preview, nbviewer, `jupyter nbconvert`, JupyterLab before a cell has run — every
interactive cell still shows what it draws.

- Each committed notebook, rendered with `jupyter nbconvert --to html` (no kernel), has no cell
  whose only output is a widget placeholder or an error text, and every plotly figure carries a
  picture beside it (`tools/fallbacks.py`, added by `make notebooks`).
- The tool itself, end to end on a small lesson written here: executed, pictured, written,
  converted; and nbval's comparison still passes on the result (the pictures are PNG only).
The browser test checks the JupyterLab side (the live plot wins; the picture shows before the
cell runs).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import course, fallbacks

NOTEBOOKS = course.notebook_paths()
ERROR_TEXT = re.compile(
    r"Error displaying widget|model not found|Traceback \(most recent|"
    r"ModuleNotFoundError|No such file or directory"
)


def convert(paths: list[Path], out: Path) -> dict[str, str]:
    """`jupyter nbconvert --to html` (one process for all), → {notebook name: its HTML}."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "html",
            "--output-dir",
            str(out),
            *map(str, paths),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {p.name: (out / (p.stem + ".html")).read_text(encoding="utf-8") for p in paths}


def cells_html(page: str) -> list[str]:
    """The HTML of each code cell of an nbconvert page (its input and outputs)."""
    parts = re.split(r'<div[^>]*class="[^"]*jp-Cell jp-CodeCell', page)
    return parts[1:]


def page_problems(nb, page: str) -> list[str]:
    """What a reader of the converted page would miss, cell by cell."""
    problems = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    shown = cells_html(page)
    assert len(shown) == len(code), f"{len(shown)} code cells on the page, {len(code)} saved"
    for i, (cell, html) in enumerate(zip(code, shown)):
        outs = cell.get("outputs", [])
        plotly = sum(fallbacks.PLOTLY in o.get("data", {}) for o in outs)
        widgets = sum(fallbacks.WIDGET in o.get("data", {}) for o in outs)
        images = html.count("<img")
        if ERROR_TEXT.search(html):
            problems.append(
                f"code cell {i}: shows an error text: {ERROR_TEXT.search(html).group(0)!r}"
            )
        if images < plotly + widgets:
            problems.append(
                f"code cell {i}: {plotly} plotly figure(s) and {widgets} widget(s),"
                f" but {images} picture(s) on the page"
            )
    return problems


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return convert(NOTEBOOKS, tmp_path_factory.mktemp("html"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_interactive_cell_has_a_picture_in_the_saved_notebook(path):
    problems = fallbacks.fallback_problems(nbformat.read(path, as_version=4))
    assert not problems, (
        f"{path.name}: run `make notebooks` to add the static pictures:\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_the_converted_page_shows_every_interactive_cell(path, pages):
    problems = page_problems(nbformat.read(path, as_version=4), pages[path.name])
    assert not problems, f"{path.name} as HTML (nbconvert, no kernel):\n" + "\n".join(problems)


# ---- the tool, end to end -------------------------------------------------------------------
LESSON = """# %%
import viz
from viz import views, perf
lm = perf.from_config({"name": "t", "source": "t",
    "config": {"model_type": "llama", "vocab_size": perf.BYTE_VOCAB, "hidden_size": 32,
               "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
               "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 64}})
trace = viz.record(lm, "Hi 🍕", max_new_tokens=3, stop_at_eos=False)

# %%
views.kv_figure(trace)

# %%
views.whatif_widget(trace)

# %%
print("plain text stays as it is")
"""


@pytest.mark.slow  # two kernels (the run, nbval), Chromium, nbconvert: about half a minute
def test_make_notebooks_adds_pictures_that_convert_and_pass_nbval(browser, tmp_path):
    """What `make notebooks` does, on the tests' shared Chromium (`browser`: skipped, or failed
    in CI, where there is none)."""
    lesson = tmp_path / "90_fallback_check.py"
    lesson.write_text(LESSON, encoding="utf-8")
    run = course.execute(lesson)
    code = [i for i, cell in enumerate(run.notebook.cells) if cell.cell_type == "code"]
    assert sorted(run.cell_seconds) == code  # every code cell timed, for `make notebooks`' list
    assert all(seconds > 0 for seconds in run.cell_seconds.values())
    ran = copy.deepcopy(run.notebook)  # the kernel's outputs, before any picture
    out = tmp_path / "90_fallback_check.ipynb"
    with fallbacks.painter(context=browser) as paint:
        course.write_notebook(run, out, paint)
    nb = nbformat.read(out, as_version=4)
    assert fallbacks.fallback_problems(nb) == []
    kv, widget = nb.cells[1].outputs, nb.cells[2].outputs
    # The figure's picture sits beside it as an SVG (JupyterLab draws the plotly JSON; a PNG
    # there would make jupyterlab-plotly show the picture instead).
    assert fallbacks.PICTURE in kv[0]["data"] and fallbacks.PLOTLY in kv[0]["data"]
    assert (
        "image/png" not in kv[0]["data"]
        and "data:image/png;base64," in kv[0]["data"][fallbacks.PICTURE]
    )
    assert kv[0]["metadata"][fallbacks.PICTURE]["alt"].startswith("figure: KV cache")
    assert fallbacks.is_fallback(widget[0]) and list(widget[0]["data"]) == ["image/png"]
    assert widget[1]["data"][fallbacks.WIDGET]["model_id"] == ""  # Lab hides the dead view
    assert nb.cells[3].outputs[0]["text"] == "plain text stays as it is\n"
    assert "widgets" not in nb.metadata and out.stat().st_size < 300_000
    page = convert([out], tmp_path / "html")[out.name]
    assert page_problems(nb, page) == []

    # nbval re-runs it in a kernel and compares, as `make test` runs it: the pictures change
    # nothing. Without the plugin that leaves them out, nbval would miss them in the kernel's
    # output: that session compares the outputs course.execute's kernel made (no second kernel).
    nbformat.write(ran, tmp_path / "ran.ipynb")
    proc = subprocess.run(
        [sys.executable, "-c", NBVAL_TWICE, str(out), str(tmp_path / "ran.ipynb")],
        capture_output=True,
        text=True,
        cwd=course.ROOT,
        timeout=600,
    )
    *outputs, codes = proc.stdout.split(SPLIT)
    assert len(outputs) == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    (kernel, bare), (kernel_code, bare_code) = outputs, json.loads(codes)
    assert kernel_code == 0, kernel[-3000:]
    assert "5 passed" in kernel  # four cells and the peak memory
    assert bare_code != 0 and "image/svg+xml" in bare


SPLIT = "\n--- next nbval session ---\n"
# nbval twice in one process (Python, pytest and nbval start once): with tools.nbval_memory,
# the notebook run in a kernel; then without it, on the kernel outputs saved in `ran` (as a
# browser test's run: tools/nbval_replay.py). The kernel's session comes first, before the
# replay plugin has wrapped nbval.
NBVAL_TWICE = f"""
import json, sys
from pathlib import Path
import nbformat, pytest

notebook, ran = sys.argv[1:3]
common = ["-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env", notebook]

class SaveRun:
    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):  # once the replay plugin has emptied its folder
        from tools import nbval_replay

        nbval_replay.save_run(nbformat.read(ran, as_version=4), Path(notebook).name, 1)

codes = [int(pytest.main([*common, "-p", "tools.nbval_memory"]))]
print({SPLIT!r}, flush=True)
runs = str(Path(ran).parent / "runs")
replay = ["-p", "tools.nbval_replay", "--nbval-replay", runs]
codes.append(int(pytest.main([*common, *replay], plugins=[SaveRun()])))
print({SPLIT!r} + json.dumps(codes), flush=True)
"""


def test_a_tall_figure_is_pictured_whole(browser):
    """The picture of a figure taller than the drawing window holds all of it: figures of 840
    to 1,017 px (lesson 01's map, 03's layer diagram, 07's table) were cut at 800 px."""
    import io

    import plotly.graph_objects as go
    from PIL import Image

    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    fig.update_layout(
        height=1200,
        margin={"t": 20, "b": 20},
        paper_bgcolor="white",
        xaxis_title="the bottom edge's title",
    )
    with fallbacks.painter(context=browser) as paint:
        png = paint.figure(json.loads(fig.to_json()))
        short = paint.figure(json.loads(fig.update_layout(height=300).to_json()))
    assert Image.open(io.BytesIO(png)).height >= 1150
    assert 250 <= Image.open(io.BytesIO(short)).height < 400  # the window is put back


def test_a_notebook_without_pictures_is_reported():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "fig",
            outputs=[
                nbformat.v4.new_output(
                    "display_data", data={fallbacks.PLOTLY: {"data": []}, "text/plain": "fig"}
                )
            ],
        )
    ]
    assert fallbacks.fallback_problems(nb) == ["cell 0: a plotly figure without a static picture"]


def test_nbval_compares_the_figure_not_its_picture():
    out = nbformat.v4.new_output(
        "display_data",
        data={fallbacks.PLOTLY: {"data": []}, fallbacks.PICTURE: "<svg/>"},
        metadata={"viz": {"static": fallbacks.PICTURE}},
    )
    kept = nbformat.v4.new_output("display_data", data={fallbacks.PICTURE: "<svg>mine</svg>"})
    a, b = fallbacks.drop_pictures([out, kept])
    assert list(a.data) == [fallbacks.PLOTLY] and a.metadata == out.metadata
    assert b == kept  # an SVG the cell itself made is still compared
