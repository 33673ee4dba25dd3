"""Weight formats on the memory wall: time per decode step against the bytes it reads, one
marker per format and engine (`viz.perf.measure_formats`), beside the memory floor (bytes ÷ the
machine's measured read bandwidth). A format whose engine crashed (`FormatRun.failures`) has no
marker: the title names it. Lesson 12."""

from __future__ import annotations

from typing import Any, Optional

from viz.views import palette
from viz.views.base import plotly_layout

ENGINE_STYLE = {
    "transformers": (palette.PREFILL, "circle"),
    "llama.cpp": (palette.DECODE, "diamond"),
}


def formats_data(run, read_bytes_per_s: Optional[float] = None) -> dict[str, Any]:
    """The points (MB per token, ms per step with the middle half of the steps) by engine, the
    memory floor's line when a read bandwidth (bytes/s) is given, and the failed formats."""
    from viz.perf.formats import FormatRun

    if not isinstance(run, FormatRun):
        raise TypeError(
            f"formats_figure takes a FormatRun (viz.perf.measure_formats), not {type(run).__name__}"
        )
    if read_bytes_per_s is not None and not read_bytes_per_s > 0:
        raise ValueError(
            "read_bytes_per_s must be a positive bandwidth in bytes per second, "
            f"e.g. viz.perf.machine_peaks().bytes_per_s, not {read_bytes_per_s!r}"
        )
    engines: dict[str, list[dict[str, Any]]] = {}
    for p in run.points:
        engines.setdefault(p.engine, []).append(
            {
                "format": p.format,
                "mb": p.weight_bytes / 1e6,
                "ms": p.step.median * 1e3,
                "ms_low": p.step.low * 1e3,
                "ms_high": p.step.high * 1e3,
                "tokens_per_s": p.tokens_per_s,
                "gb_per_s": p.achieved_bytes_per_s.median / 1e9,
                "same": p.same_tokens,
                "of": len(p.token_ids),
            }
        )
    floor = None
    if read_bytes_per_s:
        top = max(p.weight_bytes for p in run.points) * 1.1
        floor = {
            "mb": [0.0, top / 1e6],
            "ms": [0.0, top / read_bytes_per_s * 1e3],
            "gb_per_s": read_bytes_per_s / 1e9,
        }
    return {
        "engines": engines,
        "floor": floor,
        "model": run.model,
        "threads": run.threads,
        "reference": bool(run.source),
        "failed": [f.label for f in run.failures],
    }


def formats_figure(run, read_bytes_per_s: Optional[float] = None, height: int = 440):
    """Plotly: ms per decode step against MB of weights per token, circles for transformers,
    diamonds for llama.cpp; bars span the middle half of the timed steps."""
    import plotly.graph_objects as go

    data = formats_data(run, read_bytes_per_s)
    fig = go.Figure()
    if data["floor"]:
        f = data["floor"]
        fig.add_trace(
            go.Scatter(
                x=f["mb"],
                y=f["ms"],
                mode="lines",
                line={"color": palette.FORMULA, "width": 2},
                name=f"memory floor: bytes ÷ {f['gb_per_s']:.1f} GB/s (measured read)",
                hoverinfo="skip",
            )
        )
    for engine, pts in data["engines"].items():
        colour, symbol = ENGINE_STYLE.get(engine, (palette.MUTED, "square"))
        fig.add_trace(
            go.Scatter(
                x=[p["mb"] for p in pts],
                y=[p["ms"] for p in pts],
                mode="markers+text",
                name=engine,
                text=[p["format"] for p in pts],
                textposition="middle right",
                textfont={"size": 11, "color": colour},
                marker={"color": colour, "size": 12, "symbol": symbol},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [p["ms_high"] - p["ms"] for p in pts],
                    "arrayminus": [p["ms"] - p["ms_low"] for p in pts],
                    "color": colour,
                },
                customdata=[
                    [p["format"], p["tokens_per_s"], p["gb_per_s"], p["same"], p["of"]] for p in pts
                ],
                hovertemplate=f"{engine} " + "%{customdata[0]}: %{x:.0f} MB per token, %{y:.2f} ms"
                " (%{customdata[1]:.0f} tokens/s, %{customdata[2]:.1f} GB/s)<br>"
                "greedy tokens equal to float32's: %{customdata[3]} of "
                "%{customdata[4]}<extra></extra>",
            )
        )
    fig.update_layout(
        **plotly_layout(
            ("reference machine (not this one) · " if data["reference"] else "")
            + f"fewer bytes, read by the kernel: {data['model']}, {data['threads']} threads"
            + (f" · crashed, not shown: {', '.join(data['failed'])}" if data["failed"] else ""),
            height=height,
        )
    )
    fig.update_xaxes(title="weights read per token (MB)", rangemode="tozero")
    fig.update_yaxes(title="time per decode step (ms)", rangemode="tozero")
    return fig


TEXT_LINE_CHARS = 70  # a line of greedy text under `format_choice_figure` (12 px, 640 px wide)
AXIS_PX, LINE_PX, GAP_PX = 58, 17, 10  # under its plot: the x axis, a line of text, a gap


def format_choice_data(run, tokens: Optional[dict] = None) -> dict[str, Any]:
    """The numbers `format_choice_figure` draws from a `measure_formats` run of the reference
    (float32) and one or more other formats on one prompt: per format its ms per step with the
    middle half, its speed as a multiple of the reference's (with the worst case of both
    spreads), and how many greedy tokens equal the reference's before the first difference;
    with `tokens` (label → the greedy tokens as text, one string per token), each format's text
    (it departs from the reference's at token `same`). Failed formats by label and error."""
    from viz.perf.formats import FormatRun

    if not isinstance(run, FormatRun):
        raise TypeError(
            f"format_choice_figure takes a FormatRun (viz.perf.measure_formats), "
            f"not {type(run).__name__}"
        )
    ref = run.point(run.reference)
    if ref is None:
        raise ValueError(
            f"the run has no {run.reference} row to compare with: measure it with "
            "viz.perf.measure_formats(lm, ['float32', 'Q4_1'], prompt=...)"
        )
    tokens = dict(tokens or {})
    unknown = sorted(set(tokens) - {p.label for p in run.points})
    if unknown:
        raise ValueError(
            f"tokens for {unknown}, which the run has no row for: give its rows' "
            f"labels ({', '.join(p.label for p in run.points)})"
        )
    rows = []
    for p in run.points:
        speed = ref.step / p.step  # > 1: faster than the reference
        row = {
            "label": p.label,
            "engine": p.engine,
            "format": p.format,
            "ms": p.step.median * 1e3,
            "ms_low": p.step.low * 1e3,
            "ms_high": p.step.high * 1e3,
            "speed": speed.median,
            "speed_low": speed.low,
            "speed_high": speed.high,
            "same": p.same_tokens,
            "of": len(p.token_ids),
            "tokens": list(tokens.get(p.label, [])),
        }
        rows.append(row)
    return {
        "prompt": run.prompt,
        "reference": ref.label,
        "rows": rows,
        "failed": [(f.label, f.error) for f in run.failures],
    }


def _marked_text(pieces: list[str], first_different: Optional[int]) -> list[str]:
    """Token texts joined into lines of at most TEXT_LINE_CHARS visible characters, escaped
    for plotly, the token at `first_different` and after it in the highlight colour."""
    from viz.views.text import esc

    lines, line, width = [], [], 0
    for i, piece in enumerate(pieces):
        shown = piece.replace("\n", "↵")
        if width + len(shown) > TEXT_LINE_CHARS and line:
            lines.append("".join(line))
            line, width = [], 0
        text = esc(shown)
        if first_different is not None and i >= first_different:
            text = f"<span style='color:{palette.CHOSEN}'>{text}</span>"
        line.append(text)
        width += len(shown)
    if line:
        lines.append("".join(line))
    return lines


def format_choice_figure(run, tokens: Optional[dict] = None):
    """Plotly: one bar per format (ms per decode step, the middle half of the steps as a bar),
    each labelled with its speed against the reference (float32) and how many of its greedy
    tokens equal the reference's; with `tokens` (label → one string per greedy token), each
    format's text under the bars, in the highlight colour from its first token that differs.
    The title names the last format's speed and agreement. Lesson 12's prompt box. Returned,
    never displayed."""
    import plotly.graph_objects as go

    from viz.views.text import esc

    d = format_choice_data(run, tokens)
    rows = d["rows"]
    fig = go.Figure()
    _format_bars(fig, d)
    blocks = []  # (format, its text's lines) under the bars
    for r in rows:
        if r["tokens"]:  # coloured from the first token unlike the reference's (FormatPoint)
            differs = r["same"] if r["same"] < r["of"] else None
            blocks.append((r["format"], _marked_text(r["tokens"], differs)))
    title = _choice_title(d)
    # pixels under the plot: the axis (ticks and title), then each text block
    below = AXIS_PX + sum(LINE_PX * len(lines) + GAP_PX for _, lines in blocks)
    plot_px = 160 + 60 * len(rows)  # the figure without the text below: title, bars, 50-px axis
    layout = plotly_layout(
        title, height=plot_px, showlegend=False, margin={"l": 20, "r": 40, "b": below}
    )
    layout["height"] += below - 50  # plotly_layout's height counts a 50-px bottom margin
    fig.update_layout(**layout)
    inner = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]  # the plot's px
    offset = AXIS_PX
    for fmt, lines in blocks:
        fig.add_annotation(
            text=f"<b>{esc(fmt)}</b>: " + "<br>".join(lines),
            xref="paper",
            yref="paper",
            x=0,
            y=-offset / inner,
            xanchor="left",
            yanchor="top",
            align="left",
            showarrow=False,
            font={"size": 12},
        )
        offset += LINE_PX * len(lines) + GAP_PX
    top = max(r["ms_high"] for r in rows)
    fig.update_xaxes(title="time per decode step (ms)", rangemode="tozero", range=[0, top * 2.2])
    fig.update_yaxes(automargin=True, autorange="reversed")
    return fig


def _format_bars(fig, d: dict[str, Any]) -> None:
    """One bar per format with its spread, and its label past the spread's end."""
    import plotly.graph_objects as go

    for r in d["rows"]:
        colour = ENGINE_STYLE.get(r["engine"], (palette.MUTED, ""))[0]
        words = (
            "the reference"
            if r["label"] == d["reference"]
            else f"×{r['speed']:.2f} the speed, {r['same']} of {r['of']} tokens the same"
        )
        fig.add_trace(
            go.Bar(
                y=[r["label"]],
                x=[r["ms"]],
                orientation="h",
                marker_color=colour,
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [r["ms_high"] - r["ms"]],
                    "arrayminus": [r["ms"] - r["ms_low"]],
                },
                hovertemplate=f"{r['label']}: %{{x:.2f}} ms per step<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(  # its label, past the spread's end
                y=[r["label"]],
                x=[r["ms_high"]],
                mode="text",
                text=[f"  {r['ms']:.1f} ms: {words}"],
                textposition="middle right",
                cliponaxis=False,
                hoverinfo="skip",
            )
        )


def _choice_title(d: dict[str, Any]) -> str:
    """The last format's speed and agreement with the reference, and the formats that crashed."""
    rows = d["rows"]
    last = rows[-1]
    if len(rows) == 1:
        title = f"{d['reference']} alone: no other format to compare"
    else:
        title = (
            f"{last['format']} on this prompt: ×{last['speed']:.2f} the speed of "
            f"{rows[0]['format']}, the same greedy tokens for {last['same']} of "
            f"{last['of']}"
        )
    if d["failed"]:
        title += " · crashed, not shown: " + ", ".join(label for label, _ in d["failed"])
    return title
