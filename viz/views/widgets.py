"""Live controls for a kernel: ipywidgets that redraw a plain plotly figure.

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

PLOTLY_MIME = "application/vnd.plotly.v1+json"
CONFIG = {"displaylogo": False, "responsive": True}


def figure_output(fig) -> dict[str, Any]:
    """The figure as one display_data output (what plotly's `plotly_mimetype` renderer emits)."""
    data = json.loads(fig.to_json())
    data["config"] = dict(CONFIG)
    title = fig.layout.title.text or "plotly figure"
    return {"output_type": "display_data", "metadata": {},
            "data": {PLOTLY_MIME: data, "text/plain": f"<figure: {title}>"}}


class LinkedView(widgets.VBox):
    """Controls above one figure that is redrawn from their values whenever one moves.

    controls: name → value widget (sliders); `render(values)` returns a `go.Figure`.
    After each change `.figure` is the figure on screen and `.values` the values it was drawn
    from; `.error` holds the message if a setting could not be drawn (shown instead of a
    figure; the views' own tests check it stays None at every slider position).
    """

    def __init__(self, controls: dict[str, widgets.ValueWidget], rows: list[widgets.Widget],
                 render: Callable[[dict[str, Any]], Any]):
        self.controls = dict(controls)
        self._render = render
        self.output = widgets.Output(layout={"min_height": "300px"})
        self.figure = None
        self.values: dict[str, Any] = {}
        self.error: Optional[str] = None
        super().__init__(children=[*rows, self.output])
        for w in controls.values():
            w.observe(self._changed, names="value")
        self.redraw()

    def _changed(self, change) -> None:
        self.redraw()

    def redraw(self) -> None:
        self.values = {name: w.value for name, w in self.controls.items()}
        try:
            self.figure = self._render(self.values)
        except ValueError as e:  # a setting the view cannot draw: say so, in place of the figure
            self.error = str(e)
            self.output.outputs = ({"output_type": "display_data", "metadata": {},
                                    "data": {"text/plain": f"cannot draw this setting: {e}"}},)
            return
        self.error = None
        self.output.outputs = (figure_output(self.figure),)
