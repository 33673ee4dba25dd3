"""Embeddings: each prompt token's input vector, how alike the vectors are, and a 2-D map.

Three panels from `Trace.embeddings` (the rows of the model's embedding table, stored to 8 bits):
a token × dimension heatmap, the token-to-token cosine similarity, and the vectors projected
on their two principal components. Used in lesson 01 (from text to vectors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from viz.trace import Trace
from viz.views import palette
from viz.views.base import (
    NO_EMBEDDINGS,
    check_trace,
    empty_axes,
    empty_figure,
    mpl_text,
    new_figure,
    plotly_layout,
    set_ticklabels,
)
from viz.views.text import esc, token_label


@dataclass(frozen=True)
class EmbeddingData:
    """What the embeddings view draws, one row per prompt token (repeats kept, in order)."""

    labels: list[str]  # "position: token" for each row
    ids: list[int]
    special: list[bool]
    vectors: np.ndarray  # (tokens, dim): the input embedding vectors
    cosine: np.ndarray  # (tokens, tokens): cosine similarity of each pair of vectors
    xy: np.ndarray  # (tokens, 2): the vectors projected on their 2 principal components
    explained: tuple[float, float]  # share of the variance each component holds (0-1)


def cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """cos(a, b) = a·b / (|a| |b|) for every pair of rows; 0 for an all-zero row."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1)
    safe = np.where(norms > 0, norms, 1.0)
    unit = v / safe[:, None]
    return unit @ unit.T


def project_2d(vectors: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Principal-component projection to 2-D: (points, share of variance per component).

    The sign of each component is fixed (its largest loading positive), so the picture is the
    same on every machine. With fewer than 2 distinct vectors every point sits at the origin.
    """
    v = np.asarray(vectors, dtype=np.float64)
    centred = v - v.mean(axis=0)
    if v.shape[0] < 2 or not np.any(centred):
        return np.zeros((v.shape[0], 2)), (0.0, 0.0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    comps = vt[:2]
    signs = np.sign(comps[np.arange(len(comps)), np.abs(comps).argmax(axis=1)])
    comps = comps * signs[:, None]
    xy = centred @ comps.T
    if xy.shape[1] < 2:  # only one component exists
        xy = np.hstack([xy, np.zeros((xy.shape[0], 1))])
    var = s**2
    share = var / var.sum()
    return xy, (float(share[0]), float(share[1]) if len(share) > 1 else 0.0)


def _round(values: np.ndarray, digits: int) -> list[list[float]]:
    """Rows of floats rounded to `digits` significant digits (JSON-native)."""
    return [[float(f"{v:.{digits}g}") for v in row] for row in np.asarray(values).tolist()]


def embeddings_data(trace: Trace) -> EmbeddingData:
    """The prompt tokens' vectors, their cosine similarities and 2-D projection. Lesson 01.

    Raises ValueError when the trace was recorded without embeddings.
    """
    check_trace(trace)
    if trace.embeddings is None:
        raise ValueError(NO_EMBEDDINGS)
    toks = trace.prompt_tokens
    vectors = trace.embeddings.vectors([t.id for t in toks])
    xy, explained = project_2d(vectors)
    return EmbeddingData(
        labels=[f"{i}: {token_label(t.text, t.piece)}" for i, t in enumerate(toks)],
        ids=[t.id for t in toks],
        special=[t.special for t in toks],
        vectors=vectors,
        cosine=cosine_similarity(vectors),
        xy=xy,
        explained=explained,
    )


def _title(trace: Trace, d: EmbeddingData) -> str:
    return (
        f"Input embeddings of the {len(d.ids)} prompt tokens "
        f"({d.vectors.shape[1]} numbers each, stored to 8 bits)"
    )


def embeddings_figure(trace: Trace):
    """Plotly: heatmap (token × dimension), cosine similarity, and the 2-D projection.

    Hover a cell for the token, dimension and value. A trace without embeddings gives a figure
    that says so (not an error). Lesson 01.
    """
    import plotly.graph_objects as go

    if check_trace(trace).embeddings is None:
        return empty_figure("Input embeddings", NO_EMBEDDINGS)
    d = embeddings_data(trace)
    n = len(d.ids)
    names = [esc(s) for s in d.labels]  # unique: each starts with the token's position
    # Two rows: the heatmaps side by side (rows aligned: the same tokens), the 2-D map below.
    row1, gap, row2 = max(260, 14 * n), 110, SCATTER_PX[1]
    total = row1 + gap + row2
    top = [(row2 + gap) / total, 1.0]
    positions = list(range(n))
    every = max(1, -(-n // 20))  # the cosine map's position numbers: at most ~20 per side
    bar = {
        "len": (row1 - 10) / total,
        "y": top[0] + (top[1] - top[0]) / 2,
        "yanchor": "middle",
        "thickness": 10,
    }
    fig = go.Figure()
    _add_heatmaps(fig, d, names, positions, bar)
    _add_map(fig, trace, d, names)
    _layout(fig, trace, d, positions[::every], top, (total, row2))
    _panel_titles(fig, row2 / total)
    return fig


def _add_heatmaps(fig, d: EmbeddingData, names: list[str], positions: list[int], bar: dict):
    """The first row: the vectors (token × dimension) and their cosine similarities."""
    import plotly.graph_objects as go

    lim = float(np.abs(d.vectors).max()) or 1.0
    # 3 significant digits: the stored vectors hold 8 bits (~2.4 digits) per number anyway,
    # and the figure stays small enough for a committed notebook.
    fig.add_trace(
        go.Heatmap(
            z=_round(d.vectors, 3),
            y=names,
            colorscale=palette.DIVERGING,
            zmin=-lim,
            zmax=lim,
            reversescale=True,
            name="vector",
            hovertemplate="%{y}<br>dimension %{x}<br>value %{z}<extra></extra>",
            colorbar={
                **bar,
                "x": 0.555,
                "xanchor": "left",
                "title": {"text": "value", "side": "right"},
            },
            xaxis="x",
            yaxis="y",
        )
    )
    fig.add_trace(
        go.Heatmap(
            z=_round(d.cosine, 4),
            x=positions,
            y=positions,
            colorscale=palette.SEQUENTIAL,
            zmin=-1,
            zmax=1,
            name="cosine",
            hovertemplate="tokens at positions %{y} and %{x}: cosine %{z}<extra></extra>",
            colorbar={
                **bar,
                "x": 1.01,
                "xanchor": "left",
                "title": {"text": "cosine", "side": "right"},
            },
            xaxis="x2",
            yaxis="y2",
        )
    )


def _add_map(fig, trace: Trace, d: EmbeddingData, names: list[str]):
    """The second row: the 2-D projection, each point labelled where its label fits."""
    import plotly.graph_objects as go

    labels = [token_label(t.text, t.piece) for t in trace.prompt_tokens]
    where = _scatter_labels(d, labels)
    fig.add_trace(
        go.Scatter(
            x=d.xy[:, 0].tolist(),
            y=d.xy[:, 1].tolist(),
            mode="markers+text",
            text=[esc(lab) if w else "" for lab, w in zip(labels, where)],
            textposition=[w or "top center" for w in where],
            textfont={"size": 11},
            customdata=names,
            name="tokens",
            marker={
                "color": [palette.SPECIAL if s else palette.PREFILL for s in d.special],
                "size": 8,
            },
            hovertemplate="%{customdata}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
            xaxis="x3",
            yaxis="y3",
        )
    )


def _layout(
    fig,
    trace: Trace,
    d: EmbeddingData,
    ticks: list[int],
    top: list[float],
    heights: tuple[int, int],
):
    """The axes of the three panels: `ticks` the cosine map's numbered positions, `top` the
    first row's share of the height, `heights` (the plot area's, the 2-D map's) in pixels."""
    total, row2 = heights
    rows = {"autorange": "reversed", "tickfont": {"size": 9}, "domain": top}
    x3, y3 = _scatter_ranges(d)
    fig.update_layout(
        **plotly_layout(
            _title(trace, d),
            height=total + 150,
            showlegend=False,
            margin={"l": 130, "r": 60, "t": 80, "b": 60},
            xaxis={"title": "dimension", "domain": [0, 0.55], "anchor": "y"},
            yaxis={**rows, "anchor": "x", "type": "category", "title": None},
            xaxis2={
                "domain": [0.72, 1.0],
                "anchor": "y2",
                "tickmode": "array",
                "tickvals": ticks,
                "title": "token position",
                "tickfont": {"size": 9},
            },
            yaxis2={**rows, "anchor": "x2", "tickmode": "array", "tickvals": ticks, "title": None},
            xaxis3={
                "domain": [0, 1.0],
                "anchor": "y3",
                "range": x3,
                "title": f"PC1 ({d.explained[0]:.0%} of the variance)",
            },
            yaxis3={
                "domain": [0, row2 / total],
                "anchor": "x3",
                "range": y3,
                "title": f"PC2 ({d.explained[1]:.0%})",
            },
        )
    )


def _panel_titles(fig, map_top: float):
    """Each panel's title, above its top left corner (`map_top`: the 2-D map's top, paper)."""
    for text, x, y in (
        ("token × dimension (rows: the prompt's tokens)", 0, 1.0),
        ("cosine similarity (by position)", 0.72, 1.0),
        ("2-D projection: tokens with similar vectors sit close (hover a dot)", 0, map_top),
    ):
        fig.add_annotation(
            text=text,
            x=x,
            y=y,
            xref="paper",
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            showarrow=False,
            yshift=4,
            font={"size": 12},
        )


# The 2-D map's plot area, in which its labels are placed: an 800 px figure's (margins 190 px;
# JupyterLab's output area is ~840 px in a 1280 px window), so that labels placed for it do not
# collide when the figure is wider.
SCATTER_PX = (610, 320)


def _scatter_ranges(d: EmbeddingData) -> tuple[list[float], list[float]]:
    """The 2-D map's axis ranges: the points with a 6 % margin on every side."""
    out = []
    for col in (0, 1):
        lo, hi = float(d.xy[:, col].min()), float(d.xy[:, col].max())
        pad = (hi - lo) * 0.06 or 1.0
        out.append([lo - pad, hi + pad])
    return out[0], out[1]


def _scatter_labels(d: EmbeddingData, labels: list[str]):
    """Where each point's label goes on the 2-D map, or None (left out: it would collide; the
    hover names it). A token that repeats sits on the same point and is labelled once; the
    prompt's own tokens are placed before control tokens."""
    from viz.views.base import place_labels, to_pixels

    x3, y3 = _scatter_ranges(d)
    w, h = SCATTER_PX
    xs = to_pixels(d.xy[:, 0].tolist(), x3[0], x3[1], w)
    ys = to_pixels(d.xy[:, 1].tolist(), y3[0], y3[1], h, flip=True)
    order = sorted(range(len(labels)), key=lambda i: (d.special[i], i))
    seen, first = set(), []
    for i in order:
        if d.ids[i] not in seen:
            seen.add(d.ids[i])
            first.append(i)
    placed = place_labels([(xs[i], ys[i]) for i in first], [labels[i] for i in first], (w, h))
    where = [None] * len(labels)
    for i, pos in zip(first, placed):
        where[i] = pos
    return where


def embeddings_static(trace: Trace):
    """Matplotlib: heatmap (token × dimension), cosine similarity, and the 2-D projection.

    A trace without embeddings gives a figure that says so (not an error). Lesson 01.
    """
    if check_trace(trace).embeddings is None:
        fig, ax = new_figure(figsize=(10, 1.5))
        empty_axes(ax, NO_EMBEDDINGS)
        return fig
    d = embeddings_data(trace)
    n = len(d.ids)
    fig, axes = new_figure(
        1, 3, figsize=(15, max(4.5, 0.16 * n + 1.5)), gridspec_kw={"width_ratios": [1.4, 1, 1]}
    )
    lim = float(np.abs(d.vectors).max()) or 1.0
    im = axes[0].imshow(
        d.vectors, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest"
    )
    axes[0].set_xlabel("dimension")
    axes[0].set_title("token × dimension", fontsize=10)
    fig.colorbar(im, ax=axes[0], fraction=0.04)
    im2 = axes[1].imshow(
        d.cosine, aspect="auto", cmap="viridis", vmin=-1, vmax=1, interpolation="nearest"
    )
    axes[1].set_title("cosine similarity (rows and columns: the same tokens)", fontsize=10)
    axes[1].set_xticks([])
    axes[1].set_yticks([])
    fig.colorbar(im2, ax=axes[1], fraction=0.04)
    set_ticklabels(axes[0], "y", range(n), d.labels, fontsize=7)
    colours = [palette.SPECIAL if s else palette.PREFILL for s in d.special]
    axes[2].scatter(d.xy[:, 0], d.xy[:, 1], c=colours, s=18)
    for (x, y), t in zip(d.xy, trace.prompt_tokens):
        label = mpl_text(token_label(t.text, t.piece))
        axes[2].annotate(
            label["s"],
            xy=(x, y),
            xytext=(2, 3),
            textcoords="offset points",
            fontsize=7,
            fontfamily=label["fontfamily"],
        )
    axes[2].set_xlabel(f"PC1 ({d.explained[0]:.0%} of variance)")
    axes[2].set_ylabel(f"PC2 ({d.explained[1]:.0%} of variance)")
    axes[2].set_title("2-D projection", fontsize=10)
    fig.suptitle(_title(trace, d), x=0.01, ha="left", fontsize=11)
    fig.tight_layout()
    return fig
