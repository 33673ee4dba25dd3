"""One transformer layer as the matrix products it is, drawn to the model's real shape.

A layer of a Llama-style model is six products (the norms, rotary embeddings, softmax and the
SiLU gate are cheap element-wise steps between them):

1. Q, K, V   = X · [W_q | W_k | W_v]        the input rows meet the attention weights
2. scores    = Q · Kᵀ  (per head)             each query meets every key (the KV cache)
3. mixed     = softmax(scores) · V (per head) the weights mix the values
4. out       = mixed · W_o
5. gate, up  = X · [W_gate | W_up]            the MLP's two input matrices
6. down      = (SiLU(gate) ⊙ up) · W_down

In the prefill X holds every prompt token (T rows): each product is matrix × matrix, and
each weight is used T times per read. In a decode step X is one row (the newest token): the
weight products become vector × matrix (one use per weight read), and in 2-3 the one query
meets the keys and values of every cached token. `layer_diagram_data` gives every product's
shapes, FLOPs and the bytes of its right-hand matrix; the figures draw them to scale.
Used before lesson 03 (prefill) and in lesson 05 (the KV cache).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any

from viz import checks
from viz.trace import ModelSpec
from viz.views import palette
from viz.views.base import nbytes, new_figure, plotly_layout


@dataclass(frozen=True)
class Product:
    """One matrix product of a layer: A (m × k) · B (k × n) = C (m × n), `count` times."""

    name: str
    phase: str  # "prefill" or "decode"
    a: str  # what A holds, e.g. "X (tokens × hidden)"
    b: str  # what B holds, e.g. "W_q | W_k | W_v"
    b_kind: str  # "weights" (read from memory), "KV cache" or "activations"
    m: int
    k: int
    n: int
    count: int  # 1, or the number of heads (one product per head)
    b_count: int = 1  # distinct B matrices read (KV heads, when query heads share them)

    @property
    def flops(self) -> int:
        """2·m·k·n per product (a multiply and an add per term), times `count`."""
        return 2 * self.m * self.k * self.n * self.count

    def b_elements(self) -> int:
        """Elements of B read from memory (each shared KV head once)."""
        return self.k * self.n * self.b_count

    @property
    def kind(self) -> str:
        """ "matrix × matrix" or "vector × matrix" (one row of A)."""
        return "vector × matrix" if self.m == 1 else "matrix × matrix"


@dataclass(frozen=True)
class LayerDiagram:
    spec: ModelSpec
    prompt_tokens: int  # T: rows of X in the prefill
    cached_tokens: int  # S: tokens in the KV cache when the decode step runs (its own included)
    products: list[Product]

    def phase(self, phase: str) -> list[Product]:
        return [p for p in self.products if p.phase == phase]

    def flops(self, phase: str) -> int:
        return sum(p.flops for p in self.phase(phase))

    def weight_bytes(self) -> int:
        """Bytes of the layer's weights read by one pass (the same in both phases)."""
        per = self.spec.bytes_per_element
        return sum(p.b_elements() for p in self.phase("decode") if p.b_kind == "weights") * per


def _check(spec: Any, prompt_tokens: Any, cached_tokens: Any) -> ModelSpec:
    if not isinstance(spec, ModelSpec):
        raise ValueError(
            f"layer_diagram draws a viz.ModelSpec (lm.spec or trace.model), not "
            f"{type(spec).__name__}"
        )
    for name, v in (("prompt_tokens", prompt_tokens), ("cached_tokens", cached_tokens)):
        checks.whole(name, v, 1)
    return spec


def layer_diagram_data(
    spec: ModelSpec, prompt_tokens: int = 37, cached_tokens: int = 64
) -> LayerDiagram:
    """Every product of one layer in the prefill of `prompt_tokens` tokens and in one decode
    step with `cached_tokens` tokens in the KV cache. Lessons 03 and 05."""
    _check(spec, prompt_tokens, cached_tokens)
    d, h, kv, hd, i = (
        spec.hidden_size,
        spec.n_heads,
        spec.n_kv_heads,
        spec.head_dim,
        spec.intermediate_size,
    )
    qkv = (h + 2 * kv) * hd
    products = []
    for phase, rows, keys in (
        ("prefill", prompt_tokens, prompt_tokens),
        ("decode", 1, cached_tokens),
    ):
        x = "X (tokens × hidden)" if rows > 1 else "x (the new token)"
        q = "Q (one row per token)" if rows > 1 else "q (the new query)"
        products += [
            Product("Q, K, V", phase, x, "W_q | W_k | W_v", "weights", rows, d, qkv, 1),
            Product(
                "scores = Q·Kᵀ",
                phase,
                q,
                "Kᵀ (cached keys)" if rows == 1 else "Kᵀ",
                "KV cache" if rows == 1 else "activations",
                rows,
                hd,
                keys,
                h,
                kv,
            ),
            Product(
                "mix = weights·V",
                phase,
                "softmax(scores)",
                "V (cached values)" if rows == 1 else "V",
                "KV cache" if rows == 1 else "activations",
                rows,
                keys,
                hd,
                h,
                kv,
            ),
            Product(
                "attention out", phase, "mix (heads joined)", "W_o", "weights", rows, h * hd, d, 1
            ),
            Product("MLP gate, up", phase, x, "W_gate | W_up", "weights", rows, d, 2 * i, 1),
            Product("MLP down", phase, "SiLU(gate) ⊙ up", "W_down", "weights", rows, i, d, 1),
        ]
    return LayerDiagram(spec, prompt_tokens, cached_tokens, products)


def _flops(v: float) -> str:
    for unit, scale in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if v >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} FLOP"


def _caption(p: Product, per: int) -> str:
    heads = f" × {p.count} heads" if p.count > 1 else ""
    b = nbytes(p.b_elements() * per)
    what = {
        "weights": f"weights {b} read",
        "KV cache": f"cache {b} read",
        "activations": "computed in this pass",
    }[p.b_kind]
    return f"{p.name}: ({p.m} × {p.k}) · ({p.k} × {p.n}){heads} = {_flops(p.flops)}; {what}"


def _caption_lines(caption: str) -> list[str]:
    """A caption in one line, or two (what was computed; what was read) when it would not fit
    its column, each wrapped again if it still does not."""
    if len(caption) <= CAPTION_CHARS:
        return [caption]
    head, _, tail = caption.partition("; ")
    return [
        line
        for part in (head + (";" if tail else ""), tail)
        if part
        for line in textwrap.wrap(part, CAPTION_CHARS)
    ]


# ---- geometry shared by both drawings ---------------------------------------------------------
UNIT = 9.0  # drawing units per doubling of a dimension (sides on a log scale)
MIN_SIDE = 3.0  # a single row (a vector) is still visible
CAPTION_CHARS = 70  # a product's caption is wrapped to fit its column (420 units wide)
CAPTION_LINE = 12.0  # drawing units per caption line


def _boxes(dg: LayerDiagram):
    """Rectangles (x0, y0, x1, y1, colour, label) and texts (x, y, text, anchor, size) for
    the two columns, each product a row: A · B = C. Sides grow with the log of the dimension
    (3072 and 1 both fit), so one row stays a thin vector and T rows a block."""
    per = dg.spec.bytes_per_element
    side = lambda v: MIN_SIDE + UNIT * math.log2(v)
    colours = {"weights": palette.PREFILL, "KV cache": palette.DECODE, "activations": palette.SKY}
    rects, texts = [], []
    for col, phase in enumerate(("prefill", "decode")):
        x_base = col * 420.0
        y = 0.0
        for p in dg.phase(phase):
            a_w, a_h, b_w, b_h = side(p.k), side(p.m), side(p.n), side(p.k)
            c_w, c_h = side(p.n), side(p.m)
            height = max(a_h, b_h, c_h)
            caption = _caption_lines(_caption(p, per))
            top = y + 6 + CAPTION_LINE * len(caption)  # room for the caption above
            sign_y = top + max(MIN_SIDE, min(a_h, c_h)) / 2  # level with the thinner operand
            x = x_base
            for w_, h_, colour, label, sep in (
                (a_w, a_h, palette.MUTED, p.a, "·"),
                (b_w, b_h, colours[p.b_kind], p.b, "="),
                (c_w, c_h, palette.MUTED, "", ""),
            ):
                rects.append((x, top, x + w_, top + h_, colour, label))
                if label and sep == "=":  # name the right-hand matrix inside its box
                    texts.append((x + w_ / 2, top + h_ / 2, label, "middle center", 9))
                x += w_
                if sep:
                    texts.append((x + 7, max(sign_y, top + 5), sep, "middle center", 12))
                    x += 14
            for j, line in enumerate(caption):  # wrapped: a column holds ~65 characters
                texts.append((x_base, y + 2 + CAPTION_LINE * j, line, "top left", 10))
            y = top + height + 14
    return rects, texts


def layer_diagram_figure(spec: ModelSpec, prompt_tokens: int = 37, cached_tokens: int = 64):
    """Plotly: the six products of one layer, prefill (left: matrix × matrix over the
    `prompt_tokens` rows) beside one decode step (right: vector × matrix, and one query meeting
    `cached_tokens` cached keys), every side to scale. Weights blue, the KV cache orange.
    Lessons 03 and 05."""
    import plotly.graph_objects as go

    from viz.views.text import esc

    dg = layer_diagram_data(spec, prompt_tokens, cached_tokens)
    rects, texts = _boxes(dg)
    bottom = max(r[3] for r in rects) + 10
    fig = go.Figure()
    for x0, y0, x1, y1, colour, label in rects:
        fig.add_shape(
            type="rect",
            x0=x0,
            y0=y0,
            x1=x1,
            y1=y1,
            line={"color": colour, "width": 1},
            fillcolor=colour,
            opacity=0.55,
        )
    for x, y, text, anchor, size in texts:
        v, hz = anchor.split()
        fig.add_annotation(
            x=x,
            y=y,
            text=esc(text),
            showarrow=False,
            xanchor=hz,
            yanchor=v,
            font={"size": size},
            align="left",
        )
    for col, phase in enumerate(("prefill", "decode")):
        head = (
            f"prefill: {prompt_tokens} tokens, {_flops(dg.flops('prefill'))}"
            if col == 0
            else f"one decode step, {cached_tokens} tokens cached: {_flops(dg.flops('decode'))}"
        )
        fig.add_annotation(
            x=col * 420.0,
            y=-14,
            text=f"<b>{esc(head)}</b>",
            showarrow=False,
            xanchor="left",
            yanchor="bottom",
            font={"size": 12},
        )
    hidden = {"visible": False, "fixedrange": True}
    fig.update_layout(
        **plotly_layout(
            f"One layer of {spec.name} ({spec.n_layers} in all) as matrix products (sides on a log "
            f"scale). Its weights, {nbytes(dg.weight_bytes())}, are read once per pass: used "
            f"{prompt_tokens}× in the prefill, once in a decode step",
            height=int(bottom * 1.25) + 110,
            showlegend=False,
            xaxis={**hidden, "range": [-5, 845]},
            yaxis={**hidden, "range": [bottom, -40], "scaleanchor": "x"},
            margin={"l": 10, "r": 10, "b": 10},
        )
    )
    return fig


def layer_diagram_static(spec: ModelSpec, prompt_tokens: int = 37, cached_tokens: int = 64):
    """Matplotlib: the same drawing as `layer_diagram_figure`. Lessons 03 and 05."""
    from matplotlib.patches import Rectangle

    from viz.views.base import mpl_title

    dg = layer_diagram_data(spec, prompt_tokens, cached_tokens)
    rects, texts = _boxes(dg)
    bottom = max(r[3] for r in rects) + 10
    fig, ax = new_figure(figsize=(13, max(4.0, bottom / 55)))
    for x0, y0, x1, y1, colour, _ in rects:
        ax.add_patch(
            Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=colour, alpha=0.55, edgecolor=colour)
        )
    for x, y, text, anchor, size in texts:
        v, hz = anchor.split()
        ax.text(
            x,
            y,
            text,
            ha={"left": "left", "center": "center"}[hz],
            va={"top": "top", "middle": "center"}[v],
            fontsize=size * 0.7,
        )
    for col, phase in enumerate(("prefill", "decode")):
        head = (
            f"prefill: {prompt_tokens} tokens, {_flops(dg.flops('prefill'))}"
            if col == 0
            else f"one decode step, {cached_tokens} cached: {_flops(dg.flops('decode'))}"
        )
        ax.text(col * 420.0, -8, head, fontweight="bold", fontsize=9, va="bottom")
    ax.set_xlim(-5, 845)
    ax.set_ylim(bottom, -30)
    ax.set_aspect("equal")
    ax.set_axis_off()
    mpl_title(
        ax,
        f"One layer of {spec.name}: weights {nbytes(dg.weight_bytes())} read per pass",
        loc="left",
        fontsize=10,
    )
    fig.tight_layout()
    return fig
