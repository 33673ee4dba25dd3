"""Live controls for a kernel: ipywidgets that redraw a plain plotly figure (`LinkedView`), and
a text box that runs a function on Enter or after a pause (`LinkedText`).

No `go.FigureWidget` (it puts a random uid in its text form and needs anywidget): each change
of a control builds an ordinary `go.Figure` and hands its plotly JSON to an `Output` widget,
which JupyterLab and Voilà render with their plotly renderer. Nothing is displayed by the
library: the notebook shows the returned `LinkedView` as a cell's value. Its text form is the
first 110 characters of the widget's repr, which hold no random ids, so nbval can compare it.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

import ipywidgets as widgets

from viz import checks

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WORKING = '<span style="color:#E69F00"><b>working…</b></span>'  # a LinkedView while it redraws
CONFIG = {"displaylogo": False, "responsive": True}


def figure_output(fig) -> dict[str, Any]:
    """The figure as one display_data output (what plotly's `plotly_mimetype` renderer emits)."""
    data = json.loads(fig.to_json())
    data["config"] = dict(CONFIG)
    title = fig.layout.title.text or "plotly figure"
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {PLOTLY_MIME: data, "text/plain": f"<figure: {title}>"},
    }


class LinkedView(widgets.VBox):
    """Controls above one figure that is redrawn from their values whenever one moves.

    controls: name → value widget (sliders); `render(values)` returns a `go.Figure`.
    After each change `.figure` is the figure on screen and `.values` the values it was drawn
    from; `.error` holds the message if a setting could not be drawn (shown instead of a
    figure; the views' own tests check it stays None at every slider position). A status line
    (`.status`, class "viz-status") says "working…" while `render` runs — a render that
    measures takes seconds — then how long it took, when that was a second or more.
    """

    def __init__(
        self,
        controls: dict[str, widgets.ValueWidget],
        rows: list[widgets.Widget],
        render: Callable[[dict[str, Any]], Any],
    ):
        self.controls = dict(controls)
        self._render = render
        self.output = widgets.Output(layout={"min_height": "300px"})
        self.status = widgets.HTML()
        self.status.add_class("viz-status")
        self.figure = None
        self.values: dict[str, Any] = {}
        self.error: Optional[str] = None
        super().__init__(children=[*rows, self.status, self.output])
        for w in controls.values():
            w.observe(self._changed, names="value")
        self.redraw()

    def _changed(self, change) -> None:
        self.redraw()

    def redraw(self) -> None:
        import time

        self.values = {name: w.value for name, w in self.controls.items()}
        self.status.value = WORKING
        start = time.perf_counter()
        try:
            self.figure = self._render(self.values)
        except ValueError as e:  # a setting the view cannot draw: say so, in place of the figure
            self.error = str(e)
            self.output.outputs = (
                {
                    "output_type": "display_data",
                    "metadata": {},
                    "data": {"text/plain": f"cannot draw this setting: {e}"},
                },
            )
            self.status.value = ""
            return
        self.error = None
        self.output.outputs = (figure_output(self.figure),)
        took = time.perf_counter() - start
        self.status.value = (
            f'<span style="color:#555">done in {took:.1f} s</span>' if took >= 1 else ""
        )


class LinkedText(widgets.VBox):
    """A text box that runs `run(text)` when the learner presses Enter or pauses typing — not
    at every keystroke — with a visible status, and shows what `run` returned below it.

    run: text → something to show: a plotly figure, an object with `_repr_html_` (a view's
        HTML), a string (shown as it is, lines and all), or anything else (shown as its
        repr). A ValueError it raises (an empty prompt, say)
        is shown in the status line instead.
    pause_s: seconds of no typing after which the text is run (None: only Enter or leaving the
        box runs it). The status reads "recording…" while `run` works, then how long it took.
    schedule: `schedule(delay_s, callback)` → a handle with `.cancel()`; default: the kernel's
        event loop (`loop.call_later`). Tests inject their own.

    After each run `.result` is what `run` returned, `.error` the message of a ValueError (else
    None) and `.runs` how many times it ran. Lesson 01 (type a text, see its tokens).
    """

    def __init__(
        self,
        run: Callable[[str], Any],
        value: str = "",
        description: str = "text",
        pause_s: Optional[float] = 0.8,
        schedule: Optional[Callable[[float, Callable[[], None]], Any]] = None,
        width: str = "95%",
    ):
        if pause_s is not None:
            checks.positive(
                "pause_s", pause_s, noun="a number of seconds", fix="or None to run only on Enter"
            )
        self._run, self.pause_s = run, pause_s
        self._schedule = schedule or _call_later
        self._pending: Any = None
        self._last: Optional[str] = None
        self.result: Any = None
        self.error: Optional[str] = None
        self.runs = 0
        self.box = widgets.Text(
            value=value,
            description=description,
            continuous_update=pause_s is not None,
            style={"description_width": "initial"},
            layout={"width": width},
        )
        self.status = widgets.HTML()
        self.output = widgets.Output()
        super().__init__(children=[self.box, self.status, self.output])
        self.box.observe(self._typed, names="value")
        self.box.on_msg(self._message)  # Enter sends a "submit" event
        self.run()

    def _typed(self, change) -> None:
        if self.pause_s is None:  # the value only changes on Enter or leaving the box
            self.run()
            return
        if self._pending is not None:
            self._pending.cancel()
        self.status.value = (
            f'<span style="color:#555">waiting for a {self.pause_s:g} s pause '
            "(or press Enter)…</span>"
        )
        self._pending = self._schedule(self.pause_s, self.run)

    def _message(self, widget, content, buffers) -> None:
        if content.get("event") == "submit":
            self.run()

    def run(self) -> None:
        """Run the text now (what a pause or Enter triggers); a text already shown is not
        run again."""
        import time

        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        text = self.box.value
        if text == self._last:
            self.status.value = '<span style="color:#555">unchanged</span>'
            return
        self.status.value = '<span style="color:#E69F00"><b>recording…</b></span>'
        start = time.perf_counter()
        try:
            result = self._run(text)
        except ValueError as e:
            self.error, self._last = str(e), text
            self.status.value = f'<span style="color:#D55E00">{_escape(str(e))}</span>'
            return
        self.runs += 1
        self.result, self.error, self._last = result, None, text
        self.output.outputs = (_display(result),)
        self.status.value = (
            f'<span style="color:#555">done in {time.perf_counter() - start:.1f} s</span>'
        )


def _escape(text: str) -> str:
    import html

    return html.escape(text)


def _display(result: Any) -> dict[str, Any]:
    """One display_data output for what a LinkedText's function returned."""
    if hasattr(result, "to_plotly_json"):
        return figure_output(result)
    data = {"text/plain": result if isinstance(result, str) else repr(result)}  # text as it is
    if hasattr(result, "_repr_html_"):
        data["text/html"] = result._repr_html_()
    return {"output_type": "display_data", "metadata": {}, "data": data}


def _call_later(delay_s: float, callback: Callable[[], None]) -> Any:
    """Run `callback` after `delay_s` on the kernel's event loop (ipykernel runs one)."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = asyncio.get_event_loop()
    return loop.call_later(delay_s, callback)
