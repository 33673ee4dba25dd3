"""Static pictures in the saved notebooks, for every place that cannot draw plotly or widgets.

GitHub's notebook preview, nbviewer and `jupyter nbconvert` draw no plotly JSON and no
widgets, and JupyterLab draws no widget before its cell has run (the saved notebook holds no
widget state: `make notebooks` strips it). So `make notebooks` (tools/course.py) leaves, in
each executed notebook:

- **beside every plotly figure**, a picture of it in the same output, as `image/svg+xml` (an
  SVG holding the PNG). JupyterLab (and VS Code) render the plotly JSON: plotly's renderer
  ranks first, and Lab never prefers an SVG to a safe renderer; a page that knows no plotly
  (GitHub, nbviewer, nbconvert) shows the picture. Not `image/png`: jupyterlab-plotly shows a
  PNG it finds in the bundle *instead of* the live figure (its own way of saving plots), and a
  saved figure's slider must work before any cell runs.
- **before every widget** (a view with sliders, a text box), one output holding only an
  `image/png` of the widget as it first appeared: its controls at their starting values and
  what they drew, captioned "a picture: run the cell for the live controls". The widget's own
  output stays (the browser test counts it), with its `model_id` emptied: JupyterLab then
  hides it instead of printing "Error displaying widget: model not found". Running the cell
  replaces both with the live widget.

nbval skips `image/png` (an output holding nothing else is not compared at all), and
tools/nbval_memory.py drops the figures' SVG pictures from what it compares
(`drop_pictures`): the lessons stay checked exactly as before. Pictures are drawn by the same
plotly.js in headless Chromium (the browser test's), at 1× and reduced to 256 colours so that
a notebook stays well under 1 MB. A widget's picture output carries `metadata.viz.fallback`;
a plotly output with its picture inside, `metadata.viz.static`.
"""

from __future__ import annotations

import base64
import html
import io
from contextlib import contextmanager
from typing import Any, Iterator, Optional

PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDTH_PX = 900  # a notebook output's width in JupyterLab at the default zoom
CAPTION = "A picture of this view as the lesson saved it: run the cell for the live controls."


# ---- the picture of a widget, from its saved state -----------------------------------------
def _ref(value: Any) -> Optional[str]:
    if isinstance(value, str) and value.startswith("IPY_MODEL_"):
        return value[len("IPY_MODEL_") :]
    return None


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def widget_html(model_id: str, state: dict, plots: list) -> str:
    """HTML that looks like the widget `model_id` at its saved state. Plotly figures inside it
    become `<div class="fallback-plot" data-plot=N>` placeholders; `plots[N]` is the figure."""
    entry = state.get(model_id)
    if entry is None:
        return ""
    name, s = entry.get("model_name", ""), entry.get("state", {})
    desc = s.get("description", "")
    label = f'<span class="w-label">{_esc(desc)}</span>' if desc else ""
    if name in (
        "VBoxModel",
        "HBoxModel",
        "BoxModel",
        "GridBoxModel",
        "AccordionModel",
        "TabModel",
        "StackModel",
    ):
        kids = "".join(widget_html(_ref(c) or "", state, plots) for c in s.get("children", []))
        return f'<div class="w-{"h" if name == "HBoxModel" else "v"}box">{kids}</div>'
    if name in ("HTMLModel", "HTMLMathModel"):
        return f'<div class="w-html">{label}{s.get("value", "")}</div>'
    if name == "LabelModel":
        return f'<div class="w-html">{_esc(s.get("value", ""))}</div>'
    if name in ("TextModel", "TextareaModel", "PasswordModel"):
        return (
            f'<div class="w-row">{label}<span class="w-text">{_esc(s.get("value", ""))}'
            "</span></div>"
        )
    if name.endswith("SliderModel"):
        if "_options_labels" in s:
            labels, index = s["_options_labels"], s.get("index", 0)
            index = index[0] if isinstance(index, list) else index
            lo, hi, pos, shown = 0, max(len(labels) - 1, 1), index, labels[index]
        else:
            lo, hi, value = s.get("min", 0), s.get("max", 100), s.get("value", 0)
            value = value[0] if isinstance(value, list) else value
            pos, shown = value, value
            fmt = s.get("readout_format", "")
            if isinstance(value, float) and fmt.startswith("."):
                shown = format(value, fmt)
        frac = 0.0 if hi == lo else (pos - lo) / (hi - lo)
        return (
            f'<div class="w-row">{label}<span class="w-track"><span class="w-handle" '
            f'style="left:{100 * frac:.1f}%"></span></span>'
            f'<span class="w-readout">{_esc(shown)}</span></div>'
        )
    if name == "PlayModel":
        return '<span class="w-button">▶</span>'
    if name in ("ButtonModel",):
        return f'<span class="w-button">{_esc(desc)}</span>'
    if name in ("ToggleButtonsModel",):
        labels, index = s.get("_options_labels", []), s.get("index")
        buttons = "".join(
            f'<span class="w-button{" w-on" if i == index else ""}">{_esc(t)}</span>'
            for i, t in enumerate(labels)
        )
        return f'<div class="w-row">{label}{buttons}</div>'
    if name in ("DropdownModel", "SelectModel", "RadioButtonsModel"):
        labels, index = s.get("_options_labels", []), s.get("index")
        shown = labels[index] if isinstance(index, int) and index < len(labels) else ""
        return f'<div class="w-row">{label}<span class="w-text">{_esc(shown)} ▾</span></div>'
    if name in ("CheckboxModel", "ToggleButtonModel"):
        return f'<div class="w-row">{"☑" if s.get("value") else "☐"} {_esc(desc)}</div>'
    if name == "OutputModel":
        return "".join(output_html(o, plots) for o in s.get("outputs", []))
    return ""


def output_html(output: dict, plots: list) -> str:
    """HTML for one saved output (inside an Output widget, or a cell's own)."""
    data = output.get("data", {})
    if output.get("output_type") == "stream":
        return f'<pre class="w-pre">{_esc(output.get("text", ""))}</pre>'
    if PLOTLY in data:
        plots.append(data[PLOTLY])
        return f'<div class="fallback-plot" data-plot="{len(plots) - 1}"></div>'
    if "text/html" in data:
        text = data["text/html"]
        return f'<div class="w-html">{"".join(text) if isinstance(text, list) else text}</div>'
    for kind in ("image/png", "image/jpeg"):
        if kind in data:
            return f'<img src="data:{kind};base64,{data[kind].strip()}">'
    if "text/plain" in data:
        text = data["text/plain"]
        return f'<pre class="w-pre">{_esc("".join(text) if isinstance(text, list) else text)}</pre>'
    return ""


_PAGE_CSS = (
    """
body{margin:0;background:white;font-family:'DejaVu Sans',Arial,sans-serif;font-size:13px}
#stage{width:%dpx;padding:6px 8px;box-sizing:border-box}
.caption{color:#666;font-style:italic;font-size:12px;margin:0 0 6px}
.w-vbox{display:flex;flex-direction:column;gap:4px} .w-hbox{display:flex;flex-wrap:wrap;gap:12px}
.w-row{display:flex;align-items:center;gap:8px;min-height:28px}
.w-label{color:#222;white-space:nowrap}
.w-track{position:relative;display:inline-block;width:220px;margin:0 8px;height:4px;background:#ccc;
  border-radius:2px}
.w-handle{position:absolute;top:-6px;width:14px;height:14px;margin-left:-7px;
  border-radius:50%%;background:white;border:1px solid #888}
.w-readout{min-width:3em;color:#222}
.w-text{border:1px solid #aaa;padding:2px 6px;min-width:240px;background:white}
.w-button{display:inline-block;border:1px solid #aaa;border-radius:3px;padding:2px 10px;
  background:#eee;margin-right:4px} .w-on{background:#ccd;font-weight:bold}
.w-pre{font-family:'DejaVu Sans Mono',monospace;font-size:12px;margin:2px 0;white-space:pre-wrap}
"""
    % WIDTH_PX
)


# ---- drawing pictures in Chromium ---------------------------------------------------------------
class Painter:
    """One headless Chromium page with plotly.js loaded, drawing figures and widget HTML to PNG."""

    def __init__(self, page):
        self.page = page

    def _shoot(self, body: str, plots: list, caption: bool) -> bytes:
        cap = f'<p class="caption">{_esc(CAPTION)}</p>' if caption else ""
        self.page.evaluate("(h) => { document.getElementById('stage').innerHTML = h; }", cap + body)
        self.page.evaluate(
            """async (plots) => {
          for (const div of document.querySelectorAll('.fallback-plot')) {
            const fig = plots[+div.dataset.plot];
            const layout = Object.assign({}, fig.layout || {});
            delete layout.width;  // as wide as the stage, as in a notebook
            await Plotly.newPlot(div, fig.data || [], layout,
                                 {staticPlot: true, responsive: false});
          }
        }""",
            plots,
        )
        self.page.wait_for_timeout(50)
        # A screenshot of an element stops at the window's bottom edge: the window is made as
        # tall as the stage (figures of 775 to 1,017 px were cut at 800: the layer diagram's
        # last row, the embeddings map's axis title, the capstone's table).
        height = self.page.evaluate("() => document.getElementById('stage').scrollHeight")
        size = self.page.viewport_size
        if height + 40 > size["height"]:
            self.page.set_viewport_size({"width": size["width"], "height": height + 40})
        try:
            return _small_png(self.page.locator("#stage").screenshot())
        finally:
            self.page.set_viewport_size(size)

    def figure(self, fig: dict) -> bytes:
        """A PNG of one plotly figure (its initial frame, sliders drawn as they start)."""
        return self._shoot('<div class="fallback-plot" data-plot="0"></div>', [fig], False)

    def widget(self, model_id: str, state: dict) -> Optional[bytes]:
        """A PNG of a widget as saved, captioned; None when its state was not saved."""
        plots: list = []
        body = widget_html(model_id, state, plots)
        if not body:
            return None
        return self._shoot(body, plots, True)


# The flags tests/conftest.py gives Chromium to run headless as root with no network.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def find_chromium() -> Optional[str]:
    """$VIZ_CHROMIUM, else Debian's /usr/bin/chromium or a chromium / chrome on PATH."""
    import os
    import shutil

    for name in [
        os.environ.get("VIZ_CHROMIUM", ""),
        "/usr/bin/chromium",
        "chromium",
        "chromium-browser",
        "google-chrome",
    ]:
        found = name and (shutil.which(name) or (name if os.path.isfile(name) else None))
        if found:
            return found
    return None


@contextmanager
def painter(chromium: Optional[str] = None, context: Any = None) -> Iterator[Painter]:
    """A Painter on a headless Chromium (the browser test's; `make browser` installs it).
    `context`: a Playwright browser context already open (the tests' shared one) to use."""
    import tempfile

    if context is not None:
        page = context.new_page()
        try:
            yield _ready(page)
        finally:
            page.close()
        return
    from playwright.sync_api import sync_playwright

    path = chromium or find_chromium()
    if path is None:
        raise SystemExit(
            "the notebooks' static pictures are drawn in Chromium: install it "
            "(`sudo make browser`) or set VIZ_CHROMIUM=/path/to/chrome"
        )
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=path, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield _ready(ctx.new_page())
        finally:
            ctx.close()


def _ready(page) -> Painter:
    """`page` set up to draw: the stage, its CSS and plotly.js (inline: no network)."""
    from plotly.offline import get_plotlyjs

    page.set_viewport_size({"width": WIDTH_PX + 40, "height": 800})
    page.set_content(
        f"<html><head><meta charset='utf-8'><style>{_PAGE_CSS}</style>"
        f"</head><body><div id='stage'></div></body></html>"
    )
    page.add_script_tag(content=get_plotlyjs())
    return Painter(page)


def _small_png(png: bytes) -> bytes:
    """The screenshot cropped to what is drawn and reduced to 256 colours (charts have few;
    a notebook stays small)."""
    from PIL import Image, ImageChops

    im = Image.open(io.BytesIO(png)).convert("RGB")
    drawn = ImageChops.difference(im, Image.new("RGB", im.size, "white")).getbbox()
    if drawn:
        im = im.crop((0, 0, im.width, min(im.height, drawn[3] + 8)))
    out = io.BytesIO()
    im.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        out, format="PNG", optimize=True
    )
    return out.getvalue()


# ---- the notebook --------------------------------------------------------------------------------
def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


PICTURE = "image/svg+xml"  # the type a figure's picture is stored as


def svg_picture(png: bytes, title: str) -> str:
    """An SVG that shows `png` at its size (pages that draw SVG show the picture)."""
    from PIL import Image

    w, h = Image.open(io.BytesIO(png)).size
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
        f' width="{w}" height="{h}" viewBox="0 0 {w} {h}"><title>{_esc(title)}</title>'
        f'<image width="{w}" height="{h}" xlink:href="data:image/png;base64,{_b64(png)}"/>'
        "</svg>"
    )


def drop_pictures(outputs: list) -> list:
    """`outputs` without the figures' pictures this module stored (for nbval, which compares
    `image/svg+xml`: the kernel makes the figure, `make notebooks` its picture)."""
    import nbformat

    out = []
    for o in outputs:
        if o.get("metadata", {}).get("viz", {}).get("static") == PICTURE:
            o = nbformat.from_dict(
                dict(o, data={k: v for k, v in o.get("data", {}).items() if k != PICTURE})
            )
        out.append(o)
    return out


def figure_title(fig: dict) -> str:
    """A plotly figure's title as plain text (its pseudo-HTML tags dropped)."""
    import re

    title = fig.get("layout", {}).get("title") or {}
    text = title.get("text", "") if isinstance(title, dict) else str(title)
    return html.unescape(re.sub(r"<[^>]+>", " ", text)).strip() or "a plotly figure"


def is_fallback(output: dict) -> bool:
    """Whether `output` is a widget's picture this module added (not something the cell
    made: a plotly output keeps its place, with a picture inside)."""
    return bool(output.get("metadata", {}).get("viz", {}).get("fallback"))


def add_fallbacks(nb, painter_: Painter) -> dict[str, int]:
    """Add the pictures to an executed notebook, in place (before its widget state is
    stripped: the widgets' pictures are drawn from it). Returns counts of what was added."""
    import nbformat

    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    counts = {"plotly": 0, "widget": 0, "widget without state": 0}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.get("outputs", []):
            if is_fallback(out):
                continue  # pictures from an earlier run are drawn again
            data = out.get("data", {})
            if PLOTLY in data:
                alt = "figure: " + figure_title(data[PLOTLY])
                data.pop("image/png", None)  # jupyterlab-plotly would show it, not the figure
                data[PICTURE] = svg_picture(painter_.figure(data[PLOTLY]), alt)
                meta = out.setdefault("metadata", {})
                meta["viz"] = {"static": PICTURE}  # a picture inside a live output
                meta[PICTURE] = {"alt": alt}
                counts["plotly"] += 1
            elif WIDGET in data:
                model_id = data[WIDGET].get("model_id", "")
                png = painter_.widget(model_id, state) if model_id else None
                if png is None:
                    counts["widget without state"] += 1
                else:
                    outputs.append(
                        nbformat.v4.new_output(
                            "display_data",
                            data={"image/png": _b64(png)},
                            metadata={
                                "viz": {"fallback": "widget", "caption": CAPTION},
                                "image/png": {"alt": CAPTION},
                            },
                        )
                    )
                    counts["widget"] += 1
                # No state is saved, so this view can never come back: let Lab hide it.
                data[WIDGET] = dict(data[WIDGET], model_id="")
            outputs.append(out)
        cell["outputs"] = outputs
    return counts


def fallback_problems(nb) -> list[str]:
    """What a page without plotly or widgets would miss in a saved notebook: a plotly figure
    with no picture beside it, a widget with no picture before it."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        outs = cell.get("outputs", [])
        for j, out in enumerate(outs):
            data = out.get("data", {})
            if PLOTLY in data and PICTURE not in data:
                problems.append(f"cell {i}: a plotly figure without a static picture")
            if WIDGET in data and not (
                j > 0 and is_fallback(outs[j - 1]) and "image/png" in outs[j - 1].get("data", {})
            ):
                problems.append(f"cell {i}: a widget without a static picture before it")
    return problems
