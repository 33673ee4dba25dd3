"""KV growth: the cache's bytes after each step, stacked by layer, against the formula.

The bars are what `viz.record` read from the live cache tensors; the black line is the formula
2 · layers · kv_heads · head_dim · seq_len · bytes_per_element; the grey dashed line is what the
same model would hold without grouped-query attention (one K and V head per query head).
Used in lesson 05 (the KV cache) and inside the decode explorer.
"""

from __future__ import annotations

from dataclasses import dataclass

from viz.trace import Trace
from viz.views import palette
from viz.views.base import bytes_axis, check_trace, nbytes, new_figure, plotly_layout


@dataclass(frozen=True)
class KVGrowth:
    """The cache size after each step (index 0 = after prefill)."""

    seq_len: list[int]  # tokens held in the cache after each step
    phase: list[str]
    per_layer: list[list[int]]  # per_layer[layer][step]: bytes read from that layer's tensors
    total: list[int]  # bytes after each step, all layers (as recorded)
    formula: list[int]  # the recorded formula value for each step
    no_gqa: list[int]  # the formula with n_kv_heads = n_heads (what MHA would need)
    bytes_per_token: int
    bytes_per_token_no_gqa: int
    n_kv_heads: int
    n_heads: int
    use_cache: bool  # False: recorded without a cache (every bar is 0)

    @property
    def gqa(self) -> bool:
        return self.n_kv_heads < self.n_heads

    def note(self) -> str:
        """One sentence on what the lines show, for titles and captions."""
        if not self.use_cache:
            return (
                "recorded without a KV cache: nothing was stored; the formula line shows "
                "what a cache would hold"
            )
        if self.gqa:
            return (
                f"{self.n_heads} query heads share {self.n_kv_heads} KV heads: "
                f"{self.n_heads / self.n_kv_heads:g}× less than without GQA"
            )
        return "no grouped-query attention (KV heads = query heads): the two lines coincide"


def kv_data(trace: Trace) -> KVGrowth:
    """The recorded KV bytes per step and layer, with the formula and no-GQA lines. Lesson 05."""
    check_trace(trace)
    spec = trace.model
    steps = trace.steps
    n_layers = max(len(s.kv_bytes_per_layer) for s in steps)
    per_layer = [
        [s.kv_bytes_per_layer[i] if i < len(s.kv_bytes_per_layer) else 0 for s in steps]
        for i in range(n_layers)
    ]
    return KVGrowth(
        seq_len=[s.seq_len for s in steps],
        phase=[s.phase for s in steps],
        per_layer=per_layer,
        total=[s.kv_bytes for s in steps],
        formula=[s.kv_bytes_formula for s in steps],
        no_gqa=[spec.kv_bytes(s.seq_len, n_kv_heads=spec.n_heads) for s in steps],
        bytes_per_token=spec.kv_bytes_per_token(),
        bytes_per_token_no_gqa=spec.kv_bytes_per_token(n_kv_heads=spec.n_heads),
        n_kv_heads=spec.n_kv_heads,
        n_heads=spec.n_heads,
        use_cache=trace.settings.use_cache,
    )


def formula_text(trace: Trace) -> str:
    """The KV formula with this model's numbers filled in."""
    m = trace.model
    return (
        f"2 · {m.n_layers} layers · {m.n_kv_heads} KV heads · {m.head_dim} head_dim · "
        f"{m.bytes_per_element} bytes ({m.dtype}) = {m.kv_bytes_per_token():,} bytes per token"
    )


def _title(trace: Trace, d: KVGrowth) -> str:
    return (
        f"KV cache: {nbytes(d.total[-1])} after {d.seq_len[-1]} tokens "
        f"({len(d.per_layer)} layers stacked)"
    )


def _layer_in_legend(i: int, n: int) -> bool:
    return n <= 8 or i in (0, n - 1)


def kv_figure(trace: Trace):
    """Plotly: bytes per step stacked by layer, the formula line and the no-GQA line. Lesson 05."""
    import plotly.graph_objects as go

    d = kv_data(trace)
    x = d.seq_len
    colours = palette.shades(len(d.per_layer))
    fig = go.Figure(
        layout=plotly_layout(_title(trace, d), height=430, barmode="stack", bargap=0.15)
    )
    for i, series in enumerate(d.per_layer):
        fig.add_trace(
            go.Bar(
                x=x,
                y=series,
                name=f"layer {i}",
                marker={"color": colours[i]},
                legendgroup="layers",
                showlegend=_layer_in_legend(i, len(d.per_layer)),
                hovertemplate=f"layer {i}: " + "%{y:,} bytes at %{x} tokens<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=d.formula,
            name="formula",
            mode="lines+markers",
            line={"color": palette.FORMULA, "width": 2},
            marker={"size": 5},
            hovertemplate="formula: %{y:,} bytes<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=d.no_gqa,
            name="without GQA (formula)",
            mode="lines",
            line={"color": palette.MUTED, "width": 2, "dash": "dash"},
            hovertemplate="without GQA: %{y:,} bytes<extra></extra>",
        )
    )
    fig.update_xaxes(title="tokens in the cache (prompt + generated so far)")
    fig.update_yaxes(title="bytes", rangemode="tozero")
    fig.add_annotation(
        text=f"{formula_text(trace)}<br>{d.note()}",
        xref="paper",
        yref="paper",
        x=0,
        y=1.0,
        xanchor="left",
        yanchor="bottom",
        showarrow=False,
        align="left",
        font={"size": 11},
    )
    fig.update_layout(margin={"t": 95})
    return fig


def kv_static(trace: Trace):
    """Matplotlib: bytes per step stacked by layer, with the formula and no-GQA lines. Lesson 05."""
    import matplotlib as mpl
    import numpy as np

    d = kv_data(trace)
    colours = palette.shades(len(d.per_layer))
    fig, ax = new_figure(figsize=(9, 4.8))
    bottom = np.zeros(len(d.seq_len))
    for i, series in enumerate(d.per_layer):
        ax.bar(d.seq_len, series, bottom=bottom, color=colours[i], width=0.85)
        bottom += np.asarray(series, dtype=float)
    ax.plot(d.seq_len, d.formula, color=palette.FORMULA, marker="o", ms=3, lw=1.5, label="formula")
    ax.plot(
        d.seq_len, d.no_gqa, color=palette.MUTED, ls="--", lw=1.5, label="without GQA (formula)"
    )
    bytes_axis(ax)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("tokens in the cache (prompt + generated so far)")
    ax.legend(loc="upper left", fontsize=8)
    cmap = mpl.colors.ListedColormap(colours)
    bar = fig.colorbar(
        mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(-0.5, len(colours) - 0.5), cmap=cmap),
        ax=ax,
        fraction=0.04,
    )
    bar.set_label("layer (stacked, 0 at the bottom)")
    ax.set_title(f"{_title(trace, d)}\n{formula_text(trace)}\n{d.note()}", loc="left", fontsize=9)
    fig.tight_layout()
    return fig
