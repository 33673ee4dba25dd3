"""The HTML report: every view of one trace in ONE self-contained file that opens offline.

`python -m viz report trace.json -o report.html` (or `write_report`). plotly.js is embedded
inline (no CDN, no network); the controls are plotly sliders and play buttons (frames), and the
what-if sliders read a grid computed here by `viz.views.whatif.whatif_grid` — no kernel. The
file is byte-identical when written twice from the same trace (fixed ids, no timestamps), and
it is written atomically: a failed report never replaces a good one.
Used in lesson 07 (capstone), and to share a trace with someone who has no Python.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Optional

from viz.version import __version__
from viz.documents import atomic_write
from viz.trace import Trace
from viz.views.attention import attention_figure
from viz.views.base import NO_EMBEDDINGS, check_trace, trace_title
from viz.views.compare import compare_figure
from viz.views.distribution import distribution_figure
from viz.views.embeddings import embeddings_figure
from viz.views.explorer import explorer_figure
from viz.views.kv import kv_figure
from viz.views.prompt import prompt_html
from viz.views.text import esc, reply_text
from viz.views.timeline import summary_html, timeline_figure
from viz.views.tokens import tokens_html
from viz.views.whatif import whatif_data, whatif_figure, whatif_grid
from viz.views.widgets import CONFIG

# (id, heading, what the section shows). The report holds each, in this order.
SECTIONS = [
    (
        "summary",
        "Summary",
        "How long the reply took: time to first token (TTFT), time per "
        "output token after it (TPOT) and the streaming speed.",
    ),
    (
        "prompt",
        "What the model reads",
        "The prompt as typed, inside the chat template: the "
        "template's control tokens, role names and any hidden system prompt are read too.",
    ),
    (
        "tokens",
        "Tokens",
        "The prompt and the reply as the model saw them: one chip per token, "
        "its id underneath; hover for details. Tokens that share a character (an emoji split "
        "into bytes) are grouped over it.",
    ),
    (
        "embeddings",
        "Embeddings",
        "Each prompt token's input vector, how alike the vectors are, and a 2-D map of them.",
    ),
    (
        "distribution",
        "Next-token distribution",
        "At each step, the most likely next tokens and "
        "the one chosen (vermillion). Move the slider through the steps.",
    ),
    (
        "explorer",
        "Decode step explorer",
        "One slider moves through the steps; the text so far, "
        "the distribution, the KV-cache size and the step's latency follow it. Press ▶ to play.",
    ),
    (
        "whatif",
        "Sampling what-if",
        "Re-shape a step's recorded logits with temperature, top-k "
        "and top-p and see which tokens remain possible.",
    ),
    (
        "attention",
        "Attention over the KV cache",
        "Where each step's new query looked: its "
        "attention weights over every token in the cache (mean over heads, one layer). Move the "
        "slider through the steps.",
    ),
    (
        "kv",
        "KV-cache growth",
        "Bytes held by the cache after each step, stacked by layer, "
        "against the formula and against the same model without grouped-query attention.",
    ),
    (
        "timeline",
        "Timeline",
        "Prefill as one bar, each decode step its own; TTFT marked; the latency of each step.",
    ),
]
COMPARE = ("compare", "Comparison", "This trace (A) beside another (B), on the same scales.")
# Shown only for a trace recorded with the logit lens (viz.record(..., lens=True); lesson 14).
LENS = (
    "lens",
    "The logit lens",
    "Each layer's guess of the next token: the model's final "
    "norm and output head applied after every layer. Dots mark the layers whose guess is "
    "the token finally chosen; below, one step layer by layer (move the slider).",
)

REPORT_CSS = """
body{font-family:'DejaVu Sans',Arial,sans-serif;max-width:1150px;margin:0 auto;padding:0 18px;
  color:#222}
h1{font-size:24px;margin:22px 0 4px} h2{font-size:19px;margin:0 0 4px}
section{border-top:1px solid #ddd;padding:16px 0 10px}
nav a{margin-right:12px} .viz-lead{color:#555;margin:0 0 10px;font-size:14px}
.viz-meta{font-size:13px;color:#444} .viz-meta td{padding:1px 12px 1px 0;vertical-align:top}
.viz-controls label{display:inline-block;margin:4px 18px 4px 0;font-size:13px}
.viz-controls output{display:inline-block;min-width:3.5em;font-weight:bold}
.viz-note{font-size:12px;color:#444;max-width:900px} .viz-empty{color:#777;font-style:italic}
footer{font-size:12px;color:#777;border-top:1px solid #ddd;padding:10px 0 30px}
"""


def plotly_div(fig, div_id: str) -> str:
    """The figure as a <div> and its <script>, with a fixed id (no random ids, no plotly.js)."""
    import plotly.io as pio

    return pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        config=dict(CONFIG),
        auto_play=False,
    )


def _script_json(value) -> str:
    """JSON safe inside a <script> element (no "</script>" can end it early)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _meta(trace: Trace) -> str:
    m, e, s = trace.model, trace.environment, trace.settings
    sampling = (
        "greedy"
        if s.temperature == 0
        else (f"temperature {s.temperature:g}, top-k {s.top_k}, top-p {s.top_p}, seed {s.seed}")
    )
    rows = [
        (
            "model",
            f"{m.name} ({m.model_type}, {m.n_params / 1e6:.1f} M parameters, {m.n_layers} "
            f"layers, {m.n_heads} heads, {m.n_kv_heads} KV heads, {m.dtype})"
            + (" — random weights: timings real, text meaningless" if m.random_weights else ""),
        ),
        (
            "device",
            f"{e.device_name} ({e.device}, {e.threads} threads); torch "
            f"{e.torch_version}, transformers {e.transformers_version}",
        ),
        (
            "settings",
            f"{sampling}; max {s.max_new_tokens} new tokens; "
            f"KV cache {'on' if s.use_cache else 'off'}; chat {s.chat}",
        ),
        ("prompt", repr(trace.prompt)),
        ("reply", repr(reply_text(trace)) + f" (stopped: {trace.stop_reason})"),
    ]
    body = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="viz-meta">{body}</table>'


def _whatif_section(trace: Trace) -> str:
    """The what-if figure, four range inputs, and a short script that looks the chosen
    setting up in `whatif_grid` (every number was computed here, in Python)."""
    grid = whatif_grid(trace)
    t0 = grid["temperatures"].index(1.0) if 1.0 in grid["temperatures"] else 0
    first = whatif_data(trace, 0, grid["temperatures"][t0])
    fig = whatif_figure(trace, 0, first.temperature)
    fig.layout.annotations = ()  # the note is a <p> under the figure, kept current by the script
    fig.update_layout(margin={"b": 50})

    def control(key: str, label: str, values: list, start: int) -> str:
        shown = ["off" if v is None else f"{v:g}" for v in values]
        return (
            f'<label>{esc(label)} <input type="range" id="viz-wi-{key}" min="0" '
            f'max="{len(values) - 1}" step="1" value="{start}" '
            f"data-labels='{esc(json.dumps(shown))}'> "
            f'<output id="viz-wi-{key}-v">{esc(shown[start])}</output></label>'
        )

    controls = "".join(
        [
            control("step", "step", list(range(len(trace.steps))), 0),
            control("t", "temperature", grid["temperatures"], t0),
            control("k", "top-k", grid["top_ks"], 0),
            control("p", "top-p", grid["top_ps"], 0),
        ]
    )
    return (
        f'<div class="viz-controls">{controls}</div>'
        f"{plotly_div(fig, 'viz-whatif-plot')}"
        f'<p class="viz-note" id="viz-wi-note">{esc(first.note())}</p>'
        f"<script>var VIZ_WHATIF={_script_json(grid)};</script>"
        f"<script>{_WHATIF_JS}</script>"
    )


# Looks up the precomputed distribution for the four inputs and redraws (no maths here).
_WHATIF_JS = """
(function(){
  var G = VIZ_WHATIF, gd = document.getElementById('viz-whatif-plot');
  var ids = ['step','t','k','p'];
  function el(k){ return document.getElementById('viz-wi-' + k); }
  function draw(){
    var v = {};
    ids.forEach(function(k){
      var i = parseInt(el(k).value, 10); v[k] = i;
      el(k + '-v').textContent = JSON.parse(el(k).dataset.labels)[i];
    });
    var cell = G.index[v.step][v.t][v.k][v.p], probs = G.vectors[cell[0]];
    var st = G.steps[v.step], n = probs.length, y = [], kept = 0;
    for (var i = 0; i < n; i++) { y.push(i); if (probs[i] > 0) kept++; }
    var colours = probs.map(function(p){ return p > 0 ? st.colour : G.removed; });
    var text = probs.map(function(p){ return p > 0 ? (100 * p).toFixed(1) + '%' : 'removed'; });
    var rest = cell[2], restText = rest === null ? G.unknown : (100 * rest).toFixed(1) + '%';
    Plotly.restyle(gd, {x: [st.recorded, probs, [rest === null ? 0 : rest]], y: [y, y, [n]],
                        customdata: [st.labels, st.labels, null],
                        text: [null, text, [restText]],
                        'marker.color': [gd.data[0].marker.color, colours, G.removed]},
                   [0, 1, 2]);
    Plotly.relayout(gd, {'title.text': st.title + G.settings[v.t][v.k][v.p],
                         'yaxis.tickvals': y.concat([n]),
                         'yaxis.ticktext': st.labels.concat([st.rest_label]),
                         'yaxis.range': [n + 0.5, -0.5]});
    document.getElementById('viz-wi-note').textContent =
      G.kept.replace('{kept}', kept).replace('{n}', n) + st.coverage + G.accuracy[cell[1]];
  }
  ids.forEach(function(k){ el(k).addEventListener('input', draw); });
  draw();
})();
"""


def _sections(trace: Trace, other: Optional[Trace]) -> list[tuple[str, str, str, Callable]]:
    """(id, heading, lead, body) for every section, the comparison last when given."""

    def embeddings() -> str:
        if trace.embeddings is None:
            return f'<p class="viz-empty">{esc(NO_EMBEDDINGS)}</p>'
        return plotly_div(embeddings_figure(trace), "viz-embeddings-plot")

    bodies = {
        "summary": lambda: str(summary_html(trace)) + _meta(trace),
        "prompt": lambda: str(prompt_html(trace)),
        "tokens": lambda: str(tokens_html(trace)),
        "attention": lambda: plotly_div(
            attention_figure(trace, layer=trace.attention.n_layers // 2), "viz-attention-plot"
        ),
        "embeddings": embeddings,
        "distribution": lambda: plotly_div(distribution_figure(trace), "viz-distribution-plot"),
        "explorer": lambda: plotly_div(explorer_figure(trace), "viz-explorer-plot"),
        "whatif": lambda: _whatif_section(trace),
        "kv": lambda: plotly_div(kv_figure(trace), "viz-kv-plot"),
        "timeline": lambda: plotly_div(timeline_figure(trace), "viz-timeline-plot"),
    }
    out = [
        (key, head, lead, bodies[key])
        for key, head, lead in SECTIONS
        if key != "attention" or trace.attention is not None
    ]  # recorded only on request
    if trace.lens is not None:
        from viz.views.lens import logit_lens_figure, logit_lens_step_figure

        key, head, lead = LENS
        out.append(
            (
                key,
                head,
                lead,
                lambda: (
                    plotly_div(logit_lens_figure(trace), "viz-lens-plot")
                    + plotly_div(logit_lens_step_figure(trace), "viz-lens-step-plot")
                ),
            )
        )
    if other is not None:
        key, head, lead = COMPARE
        out.append(
            (key, head, lead, lambda: plotly_div(compare_figure(trace, other), "viz-compare-plot"))
        )
    return out


def report_html(trace: Trace, other: Optional[Trace] = None) -> str:
    """The whole report as one HTML string (plotly.js inline). `other`: a second trace to
    show beside this one. Lesson 07."""
    from plotly.offline import get_plotlyjs

    check_trace(trace)
    if other is not None:
        check_trace(other, "the other trace")
    sections = _sections(trace, other)
    title = f"LLM inference report: {trace_title(trace)}"
    nav = "".join(f'<a href="#{key}">{esc(head)}</a>' for key, head, _, _ in sections)
    body = "".join(
        f'<section id="{key}"><h2>{esc(head)}</h2><p class="viz-lead">{esc(lead)}'
        f"</p>{make()}</section>"
        for key, head, lead, make in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{REPORT_CSS}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head>\n<body>'
        f"<h1>{esc(title)}</h1><nav>{nav}</nav>{body}"
        f"<footer>Made by viz {esc(__version__)} from one recorded trace (schema version "
        f"{trace.schema_version}). Everything here was recorded or computed from it; "
        f"nothing is fetched from the network.</footer></body></html>\n"
    )


def write_report(trace: Trace, path: str | os.PathLike, other: Optional[Trace] = None) -> Path:
    """Write `report_html(trace, other)` to `path`, atomically: the page is built first, then
    written beside `path` and renamed over it, so a failure never leaves a half file. Lesson 07."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a folder, /dev/stdout, a pipe: never replace it
        raise ValueError(
            f"{path} is not a regular file: give the report a file name, e.g. -o report.html"
        )
    if path.is_symlink():
        path = path.resolve()  # replace the file the link points to, not the link itself
    html = report_html(trace, other)  # everything that can fail, before the disk is touched
    try:
        atomic_write(path, html)
    except OSError as e:
        raise ValueError(
            f"cannot write the report to {path}: {e.strerror or e}; choose another place with -o"
        ) from None
    return path
