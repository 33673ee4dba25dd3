"""Weight formats on the memory wall: time per decode step against the bytes it reads, one
marker per format and engine (`viz.perf.measure_formats`), beside the memory floor (bytes ÷ the
machine's measured read bandwidth). A format whose engine crashed (`FormatRun.failures`) has no
marker: the title names it. Lesson 12."""

from __future__ import annotations

from typing import Any, Optional

from viz.views import palette
from viz.views.base import plotly_layout

ENGINE_STYLE = {"transformers": (palette.PREFILL, "circle"),
                "llama.cpp": (palette.DECODE, "diamond")}


def formats_data(run, read_bytes_per_s: Optional[float] = None) -> dict[str, Any]:
    """The points (MB per token, ms per step with the middle half of the steps) by engine, the
    memory floor's line when a read bandwidth (bytes/s) is given, and the failed formats."""
    from viz.perf.formats import FormatRun

    if not isinstance(run, FormatRun):
        raise TypeError(f"formats_figure takes a FormatRun (viz.perf.measure_formats), not "
                        f"{type(run).__name__}")
    if read_bytes_per_s is not None and not read_bytes_per_s > 0:
        raise ValueError("read_bytes_per_s must be a positive bandwidth in bytes per second, "
                         f"e.g. viz.perf.machine_peaks().bytes_per_s, not {read_bytes_per_s!r}")
    engines: dict[str, list[dict[str, Any]]] = {}
    for p in run.points:
        engines.setdefault(p.engine, []).append({
            "format": p.format, "mb": p.weight_bytes / 1e6, "ms": p.step.median * 1e3,
            "ms_low": p.step.low * 1e3, "ms_high": p.step.high * 1e3,
            "tokens_per_s": p.tokens_per_s, "gb_per_s": p.achieved_bytes_per_s.median / 1e9,
            "same": p.same_tokens, "of": len(p.token_ids)})
    floor = None
    if read_bytes_per_s:
        top = max(p.weight_bytes for p in run.points) * 1.1
        floor = {"mb": [0.0, top / 1e6], "ms": [0.0, top / read_bytes_per_s * 1e3],
                 "gb_per_s": read_bytes_per_s / 1e9}
    return {"engines": engines, "floor": floor, "model": run.model, "threads": run.threads,
            "reference": bool(run.source), "failed": [f.label for f in run.failures]}


def formats_figure(run, read_bytes_per_s: Optional[float] = None, height: int = 440):
    """Plotly: ms per decode step against MB of weights per token, circles for transformers,
    diamonds for llama.cpp; bars span the middle half of the timed steps."""
    import plotly.graph_objects as go

    data = formats_data(run, read_bytes_per_s)
    fig = go.Figure()
    if data["floor"]:
        f = data["floor"]
        fig.add_trace(go.Scatter(
            x=f["mb"], y=f["ms"], mode="lines", line={"color": palette.FORMULA, "width": 2},
            name=f"memory floor: bytes ÷ {f['gb_per_s']:.1f} GB/s (measured read)",
            hoverinfo="skip"))
    for engine, pts in data["engines"].items():
        colour, symbol = ENGINE_STYLE.get(engine, (palette.MUTED, "square"))
        fig.add_trace(go.Scatter(
            x=[p["mb"] for p in pts], y=[p["ms"] for p in pts], mode="markers+text",
            name=engine, text=[p["format"] for p in pts], textposition="middle right",
            textfont={"size": 11, "color": colour},
            marker={"color": colour, "size": 12, "symbol": symbol},
            error_y={"type": "data", "symmetric": False,
                     "array": [p["ms_high"] - p["ms"] for p in pts],
                     "arrayminus": [p["ms"] - p["ms_low"] for p in pts], "color": colour},
            customdata=[[p["format"], p["tokens_per_s"], p["gb_per_s"], p["same"], p["of"]]
                        for p in pts],
            hovertemplate=f"{engine} " + "%{customdata[0]}: %{x:.0f} MB per token, %{y:.2f} ms"
                          " (%{customdata[1]:.0f} tokens/s, %{customdata[2]:.1f} GB/s)<br>"
                          "greedy tokens equal to float32's: %{customdata[3]} of "
                          "%{customdata[4]}<extra></extra>"))
    fig.update_layout(**plotly_layout(
        ("reference machine (not this one) · " if data["reference"] else "") +
        f"fewer bytes, read by the kernel: {data['model']}, {data['threads']} threads" +
        (f" · crashed, not shown: {', '.join(data['failed'])}" if data["failed"] else ""),
        height=height))
    fig.update_xaxes(title="weights read per token (MB)", rangemode="tozero")
    fig.update_yaxes(title="time per decode step (ms)", rangemode="tozero")
    return fig
