"""What every view shares: checking its input, the HTML result type, and figure set-up.

Views return, never display (`../shared/STYLE.md`): matplotlib figures are closed in pyplot's
registry before they are returned (so a notebook shows each once, as the cell's value), plotly
figures use a small fixed layout (no default template: notebooks stay small and diff cleanly).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from viz.runtime import short_device_name
from viz.trace import Step, Trace


# ---- input checks ----------------------------------------------------------------------------
def check_trace(trace: Any, name: str = "trace") -> Trace:
    """`trace` if it is a usable `viz.Trace`; otherwise a ValueError that names the fix."""
    if not isinstance(trace, Trace):
        hint = (
            " (that is a model: record a trace from it first, "
            "trace = viz.record(lm, 'your prompt'))"
            if hasattr(trace, "tokenizer")
            else ""
        )
        raise ValueError(
            f"views draw a viz.Trace, not {type(trace).__name__}{hint}; record one "
            f"with viz.record(lm, prompt) or load one with viz.Trace.load(path)"
        )
    if not trace.steps:
        raise ValueError(
            f"{name} has no steps (not one token was generated): record it again "
            "with viz.record(lm, prompt, max_new_tokens=8)"
        )
    return trace


def step_range(trace: Trace) -> str:
    """The valid steps of `trace`, in words (for error messages)."""
    n = len(trace.steps)
    return (
        "only step 0 (the prefill: a one-token reply)"
        if n == 1
        else f"steps 0 (prefill) to {n - 1}"
    )


def get_step(trace: Trace, step: Any) -> Step:
    """The recorded step `step` (0 = prefill); a ValueError naming the valid range otherwise."""
    check_trace(trace)
    if isinstance(step, bool) or not isinstance(step, int) and not hasattr(step, "__index__"):
        raise ValueError(
            f"step must be a whole number; this trace has {step_range(trace)}, not {step!r}"
        )
    i = int(step.__index__())
    if not 0 <= i < len(trace.steps):
        raise ValueError(f"step {i} does not exist: this trace has {step_range(trace)}")
    return trace.steps[i]


NO_EMBEDDINGS = (
    "this trace has no embeddings (it was recorded with embeddings=False): "
    "record it again with viz.record(lm, prompt), which stores them by default"
)


# ---- numbers for people -------------------------------------------------------------------------
def ms(seconds: Optional[float]) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


def per_s(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.1f} tokens/s"


def si_text(value: float, unit: str) -> str:
    """A value with an SI prefix and `unit`, as a tick label: "10 GFLOP/s", "1.5 TB"."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:g} {prefix}{unit}"
    return f"{value:g} {unit}"


def nbytes(value: float) -> str:
    """Bytes with an SI prefix (kB = 1000 bytes), as in the lessons."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f} bytes"


def trace_title(trace: Trace) -> str:
    """ "label · model · device" for titles and legends (the device's short name:
    `viz.runtime.short_device_name`)."""
    parts = [trace.label] if trace.label else []
    parts += [trace.model.name, device_text(trace.environment)]
    return " · ".join(parts)


def device_text(environment) -> str:
    """The device a measurement ran on, as a figure names it: its model's short name
    ("Xeon", "H200"; `viz.runtime.short_device_name`), else its type ("cpu"). Stored results
    keep the full name; details tables print that."""
    return short_device_name(environment.device_name or environment.device)


def step_latencies_s(trace: Trace) -> list[float]:
    """Each step's latency as the reader waits for it: TTFT for step 0, then the gap between
    consecutive tokens (`Trace.inter_token_latencies_s`). They add up to end-to-end time."""
    return [trace.ttft_s] + trace.inter_token_latencies_s


# ---- results ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HTML:
    """A view rendered as HTML: a notebook shows it through `_repr_html_`; `str()` is the HTML."""

    html: str
    summary: str  # the short text/plain form (what a terminal or nbval's text comparison sees)

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<{self.summary}>"


# ---- matplotlib ---------------------------------------------------------------------------------
def new_figure(nrows: int = 1, ncols: int = 1, **kwargs):
    """(figure, axes), already closed in pyplot's registry: the caller's notebook shows it once."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, **kwargs)
    plt.close(fig)
    return fig, axes


def blank_figure(**kwargs):
    """A figure with no axes yet (for grid layouts), closed in pyplot's registry."""
    import matplotlib.pyplot as plt

    fig = plt.figure(**kwargs)
    plt.close(fig)
    return fig


def mpl_text(text: str) -> dict[str, Any]:
    """Keyword arguments that draw `text` safely in matplotlib (fonts that have its glyphs)."""
    from viz.views.text import drawable

    s, families = drawable(text)
    return {"s": s, "fontfamily": families or None}


def mpl_title(target, text: str, **kwargs) -> None:
    """Set an axes' title (or a figure's suptitle) to `text`, drawn safely."""
    from viz.views.text import drawable

    s, families = drawable(text)
    setter = target.set_title if hasattr(target, "set_title") else target.suptitle
    setter(s, fontfamily=families or None, **kwargs)


def mpl_ticklabels(labels: list[str]) -> tuple[list[str], list[str]]:
    """Tick labels made drawable, and the font families they need together."""
    from viz.views.text import drawable

    out, families = [], []
    for label in labels:
        s, fams = drawable(label)
        out.append(s)
        families += [f for f in fams if f not in families]
    return out, families


def set_ticklabels(ax, axis: str, positions, labels: list[str], **kwargs) -> None:
    """Put `labels` at `positions` on the x or y axis, drawn safely."""
    texts, families = mpl_ticklabels(labels)
    getattr(ax, f"set_{axis}ticks")(list(positions))
    getattr(ax, f"set_{axis}ticklabels")(texts, fontfamily=families or None, **kwargs)


def bytes_axis(ax, axis: str = "y") -> None:
    """Label an axis in bytes with SI prefixes (2.3 MB), the values themselves staying bytes."""
    from matplotlib.ticker import EngFormatter

    getattr(ax, f"{axis}axis").set_major_formatter(EngFormatter(unit="B", sep=" "))


def empty_axes(ax, message: str) -> None:
    """An axes that says why it is empty (the sensible empty state, instead of an error)."""
    ax.set_axis_off()
    ax.text(
        0.5,
        0.5,
        message,
        ha="center",
        va="center",
        wrap=True,
        color="#555555",
        transform=ax.transAxes,
    )


# ---- plotly -------------------------------------------------------------------------------------
TITLE_CHARS = 95  # longer title lines are wrapped: a 900-px notebook output holds ~100 at 15 px
LEGEND_BELOW_PX = 105  # bottom margin that holds tick labels, the axis title and a legend row
LEGEND_ROW_PX = 19  # one more row of a legend (an entry, or a line of a column's title)
# The narrowest notebook output a figure is laid out for (JupyterLab's is ~840 px in a 1280-px
# window with the file browser open; narrower windows happen): legends in columns fit it.
NARROWEST_FIGURE_PX = 700
LEGEND_CHAR_PX = 7.2  # one character of a 12-px legend entry (DejaVu Sans: ~0.6 em)
LEGEND_SYMBOL_PX = 45  # an entry's line or marker and the gap before its text


def title_text(title: str) -> tuple[str, int]:
    """`title` escaped for plotly and wrapped into lines of at most TITLE_CHARS characters
    (joined with <br>), and how many lines that makes."""
    import textwrap

    from viz.views.text import esc

    lines = textwrap.wrap(title, TITLE_CHARS, break_long_words=False) or [""]
    return "<br>".join(esc(line) for line in lines), len(lines)


def house_template() -> str:
    """The name of the views' plotly template: nothing but tick labels standing a few pixels
    off their axes (registered once; a name, so that it replaces a figure's template rather
    than merging into plotly's default one)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    if "viz" not in pio.templates:
        pio.templates["viz"] = go.layout.Template(
            layout={"xaxis": {"ticklabelstandoff": 3}, "yaxis": {"ticklabelstandoff": 4}}
        )
    return "viz"


def plotly_layout(title: str, height: int = 380, **extra) -> dict[str, Any]:
    """The layout every plotly view starts from: white, small, no template, fixed margins.

    Readable by construction (the browser tests measure it): a long title is wrapped and the
    top margin grows with it; the legend sits in its own row at the very bottom of the figure
    (`yref: container`), below the x axis title, never over it; tick labels stand a little off
    their axes, so the two zeros at the corner of a from-zero plot do not touch.
    """
    text, lines = title_text(title)
    margin = {"l": 60, "r": 20, "t": 60, "b": 50}
    legend_below = extra.get("showlegend", True) and "legend" not in extra
    if legend_below:
        margin["b"] = LEGEND_BELOW_PX
        height += LEGEND_BELOW_PX - 50
    margin.update(extra.pop("margin", {}))
    margin["t"] = max(margin["t"], 40 + 22 * lines)
    height += 22 * (lines - 1)
    layout: dict[str, Any] = {
        "template": house_template(),
        "title": {"text": text, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        "height": height,
        "margin": margin,
        "font": {"family": "DejaVu Sans, Arial, sans-serif", "size": 12},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "hoverlabel": {"namelength": -1},
        "showlegend": True,
        "legend": {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "yref": "container",
            "y": 0,
            "yanchor": "bottom",
        },
    }
    layout.update(extra)
    return layout


EMPTY_LINE_CHARS = 80  # an empty figure's message, wrapped: ~560 px at 12 px (notebooks: 650+)


def empty_figure(title: str, message: str, height: int = 160):
    """A plotly figure that says why it is empty (the sensible empty state, instead of an error)."""
    import plotly.graph_objects as go

    from viz.views.text import esc

    fig = go.Figure(layout=plotly_layout(title, height=height, showlegend=False))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    lines = textwrap.wrap(message, EMPTY_LINE_CHARS) or [""]  # a long message never runs off
    fig.add_annotation(
        text="<br>".join(esc(line) for line in lines),
        x=0.5,
        y=0.5,
        xref="paper",
        yref="paper",
        showarrow=False,
        font={"color": "#555555"},
    )
    return fig


def finite(values) -> list[Optional[float]]:
    """Floats for JSON, NaN and infinities as None (plotly leaves a gap)."""
    return [float(v) if v is not None and math.isfinite(v) else None for v in values]


# ---- labels that do not collide ---------------------------------------------------------------
LABEL_POSITIONS = [
    "bottom center",
    "top center",
    "middle right",
    "middle left",
    "bottom right",
    "top right",
    "bottom left",
    "top left",
]


def place_labels(
    points: list[tuple[float, float]],
    labels: list[str],
    size_px: tuple[float, float],
    font_px: float = 11,
    marker_px: float = 6,
    *,
    obstacles: Sequence[tuple[float, float]] = (),
    boxes: Sequence[tuple[float, float, float, float]] = (),
    prefer: Optional[Sequence[Optional[str]]] = None,
) -> list[Optional[str]]:
    """A plotly `textposition` for each point's label such that no label overlaps another label,
    another point or the plot's edge — or None where none fits (leave that label out: the hover
    still names it). Greedy, in the order given (put the labels that matter most first).

    points: pixel positions in the plot area (x right, y down); size_px: the area's size.
    obstacles: more points (pixels) that no label may cover, e.g. unlabelled markers.
    boxes: areas (x0, y0, x1, y1 in pixels) no label may cover, e.g. an annotation's text.
    prefer: a position to try first for each point (None: the usual order).
    An empty label is not placed (None). Label boxes are estimated from the text length
    (DejaVu Sans: ~0.62 em per character). Place them for the narrowest plot the figure is
    drawn in: there the points sit closest together.
    """
    width, height = size_px
    placed: list[tuple[float, float, float, float]] = []
    dots = [(x - marker_px, y - marker_px, x + marker_px, y + marker_px) for x, y in points]
    fixed = [(x - marker_px, y - marker_px, x + marker_px, y + marker_px) for x, y in obstacles]
    fixed += [tuple(b) for b in boxes]

    def hits(box, others) -> bool:
        return any(
            box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3] for o in others
        )

    out: list[Optional[str]] = []
    for i, ((x, y), label) in enumerate(zip(points, labels)):
        w, h, r = 0.62 * font_px * max(len(label), 1) + 2, 1.3 * font_px, marker_px
        boxes = {
            "bottom center": (x - w / 2, y + r, x + w / 2, y + r + h),
            "top center": (x - w / 2, y - r - h, x + w / 2, y - r),
            "middle right": (x + r, y - h / 2, x + r + w, y + h / 2),
            "middle left": (x - r - w, y - h / 2, x - r, y + h / 2),
            "bottom right": (x + r / 2, y + r / 2, x + r / 2 + w, y + r / 2 + h),
            "top right": (x + r / 2, y - r / 2 - h, x + r / 2 + w, y - r / 2),
            "bottom left": (x - r / 2 - w, y + r / 2, x - r / 2, y + r / 2 + h),
            "top left": (x - r / 2 - w, y - r / 2 - h, x - r / 2, y - r / 2),
        }
        others = dots[:i] + dots[i + 1 :] + fixed
        choice = None
        first = [prefer[i]] if prefer is not None and prefer[i] else []
        for pos in (first + LABEL_POSITIONS) if label else []:
            b = boxes[pos]
            if b[0] < 0 or b[1] < 0 or b[2] > width or b[3] > height:
                continue
            if not hits(b, placed) and not hits(b, others):
                choice = pos
                placed.append(b)
                break
        out.append(choice)
    return out


def to_pixels(
    values: list[float], lo: float, hi: float, length: float, log: bool = False, flip: bool = False
) -> list[float]:
    """Data values → pixels along an axis of `length` px showing [lo, hi] (log: log10 axis;
    flip: y axes, which grow upwards while pixels grow down)."""
    import math

    f = (lambda v: math.log10(v)) if log else (lambda v: v)
    a, b = f(lo), f(hi)
    span = (b - a) or 1.0
    out = [(f(v) - a) / span * length for v in values]
    return [length - p for p in out] if flip else out
