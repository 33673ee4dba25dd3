"""Readable figures, measured in a real browser (issue 14, item 2): the text of every plotly
figure on a page — title, axis titles, tick labels, legend entries, colour bars, annotations,
point and bar labels, slider labels — must not overlap other text, nor be cut off by the
figure's edge; an ipywidgets label must not be cut short ("tep (0 = prefill)").

Used by the lesson browser test (in the same visit as Run All), the report's browser test and
the quick figure test (tests/test_figure_text.py). `page_text_problems(page)` measures; each
problem names the figure (its title) and the two texts; `shoot(...)` saves a picture of each
figure with a problem under artifacts/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# Every text element plotly draws, by kind. Boxes are the elements' client rectangles, after
# transforms (rotated tick labels are measured as drawn).
MEASURE_JS = r"""(root) => {
  const kinds = [
    ['title', '.infolayer .g-gtitle text.gtitle'],
    ['axis title', '.infolayer text[class*="title"]:not(.gtitle):not(.legendtitletext)'],
    ['tick label', 'g.xtick > text, g.ytick > text, g.x2tick > text, g.y2tick > text'],
    ['legend', '.legend text.legendtext, .legend text.legendtitletext'],
    ['colour bar', '.colorbar text'],
    ['annotation', '.annotation text.annotation-text'],
    ['point label', 'g.textpoint text'],
    ['bar label', 'text.bartext'],
    ['slider', '.slider-container text'],
    ['button', '.updatemenu-container g.updatemenu-button'],
  ];
  const visible = (el) => {
    for (let e = el; e && e instanceof Element; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0)
        return false;
    }
    return true;
  };
  const scope = root || document;
  const plots = scope.matches && scope.matches('.js-plotly-plot') ? [scope]
    : [...scope.querySelectorAll('.js-plotly-plot')];
  return plots.map((plot, index) => {
      const svg = plot.querySelector('svg.main-svg');
      if (!svg || plot.offsetParent === null) return null;
      const frame = svg.getBoundingClientRect();
      const seen = new Set(), texts = [];
      for (const [kind, sel] of kinds) {
        for (const el of plot.querySelectorAll(sel)) {
          if (seen.has(el)) continue;
          seen.add(el);
          const text = el.textContent.trim();
          const r = el.getBoundingClientRect();
          if (!text || r.width < 1 || r.height < 1 || !visible(el)) continue;
          texts.push({kind, text, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom});
        }
      }
      const title = plot.querySelector('.g-gtitle text.gtitle');
      return {index, id: plot.id || '', title: title ? title.textContent.trim() : '',
              frame: {x0: frame.left, y0: frame.top, x1: frame.right, y1: frame.bottom},
              texts};
    }).filter(p => p);
}"""

# ipywidgets labels (and readouts, buttons) whose text does not fit their box: the browser
# cuts them with an ellipsis or hides the overflow.
WIDGET_LABELS_JS = r"""(root) => {
  const scope = root || document;
  return [...scope.querySelectorAll(
      '.widget-label, .widget-readout, .jupyter-button, .widget-toggle-button')]
    .filter(e => e.offsetParent !== null && e.textContent.trim() &&
                 e.scrollWidth > e.clientWidth + 1)
    .map(e => ({text: e.textContent.trim(), width: e.clientWidth, needs: e.scrollWidth}));
}"""

SLACK_PX = 1.5  # boxes include a little line spacing: touching is not overlapping


def _overlap(a: dict, b: dict) -> bool:
    w = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
    h = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
    return w > SLACK_PX and h > SLACK_PX


def _name(t: dict) -> str:
    text = t["text"] if len(t["text"]) <= 40 else t["text"][:37] + "…"
    return f"{t['kind']} {text!r}"


def figure_problems(fig: dict) -> list[str]:
    """Overlapping texts and texts cut off by the figure's edge, in one measured figure."""
    where = f"figure {fig['title'][:70]!r}" if fig["title"] else f"figure #{fig['index']}"
    out = []
    texts, frame = fig["texts"], fig["frame"]
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if _overlap(a, b):
                out.append(f"{where}: {_name(a)} overlaps {_name(b)}")
        cut = [
            side
            for side, bad in (
                ("left", a["x0"] < frame["x0"] - SLACK_PX),
                ("right", a["x1"] > frame["x1"] + SLACK_PX),
                ("top", a["y0"] < frame["y0"] - SLACK_PX),
                ("bottom", a["y1"] > frame["y1"] + SLACK_PX),
            )
            if bad
        ]
        if cut:
            out.append(f"{where}: {_name(a)} is cut off at the {' and '.join(cut)} edge")
    return out


def page_text_problems(page, root_selector: str | None = None) -> tuple[list[str], list[dict]]:
    """(problems, the measured figures) of every plotly figure and widget label on `page`
    (or inside the element `root_selector`)."""
    root = page.locator(root_selector).element_handle() if root_selector else None
    figs = page.evaluate(MEASURE_JS, root)
    problems = [p for f in figs for p in figure_problems(f)]
    for w in page.evaluate(WIDGET_LABELS_JS, root):
        problems.append(
            f"widget label {w['text']!r} is cut short: {w['width']} px wide, needs {w['needs']} px"
        )
    return problems, figs


def shoot(page, figs: list[dict], problems: list[str], folder: Path, stem: str) -> list[Path]:
    """A screenshot of each figure with a problem (and the problems as JSON) under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    plots = page.locator(".js-plotly-plot")
    for f in figs:
        mine = [p for p in problems if f["title"] and f["title"][:70] in p]
        if not mine:
            continue
        path = folder / f"{stem}-fig{f['index']}.png"
        try:
            plots.nth(f["index"]).screenshot(path=str(path))
            saved.append(path)
        except Exception:  # a figure scrolled away or gone: the JSON still lists it
            pass
    (folder / f"{stem}-text-problems.json").write_text(
        json.dumps(problems, indent=1, ensure_ascii=False)
    )
    return saved


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60] or "figure"


def open_offline(browser, path: Path, n_plots: int):
    """A page of `browser` showing the file at `path` with the network cut (anything but the
    file itself is refused and listed in `page.fetched`), script errors collected in
    `page.errors`, once `n_plots` plotly figures have rendered."""
    pg = browser.new_page()
    pg.set_viewport_size({"width": 1200, "height": 900})
    pg.errors, pg.fetched = [], []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)

    def offline(route):
        if not route.request.url.startswith("file:"):
            pg.fetched.append(route.request.url)
            return route.abort()
        return route.continue_()

    pg.route("**/*", offline)
    pg.goto(path.as_uri())
    pg.wait_for_function(
        f"document.querySelectorAll('.js-plotly-plot').length >= {n_plots}", timeout=20000
    )
    return pg
