"""Views: every recorded quantity of a `viz.Trace` (and of what `viz.perf` and `viz.serve`
measure: sweeps, rooflines, walls, load runs…), static (matplotlib) and interactive (plotly,
ipywidgets), and the offline HTML report.

Each view takes a recorded result (a Trace, a Sweep, a Roofline, a run of `viz.perf` or
`viz.serve`) — never a model — and returns a figure or an object; nothing is displayed by the
library (the notebook shows what a cell returns).

    from viz import views
    views.tokens_html(trace)          # lesson 01
    views.explorer_figure(trace)      # lesson 04: slider + play, no kernel needed
    views.whatif_widget(trace)        # lesson 02: live sliders (needs a kernel)

Naming, one rule for every view `<view>`:
  `<view>_data`   the numbers the view draws (for tests and exercises)
  `<view>_figure` a plotly Figure          `<view>_static` a matplotlib Figure
  `<view>_widget` live ipywidgets          `<view>_html`   an HTML block
  `<view>_table`  the numbers as text
A view of two things takes the second as `other` (`compare_figure(trace, other)`,
`sweep_figure(sweep, other)`); `roofline_figure(roofline, *others)` takes several.
Also here for lessons that build their own small figures: `plotly_layout` (the house layout),
`palette` (the colours), `LinkedView` / `figure_output` (controls redrawing a figure),
`LinkedText` (a text box run on Enter or after a pause, with a "recording…" status),
`piece_bytes` (the bytes behind a byte-level BPE token's spelling) and `request_names` (short
labels for the requests of a load run, shared by the serving views).
"""

from viz.views import palette
from viz.views.attention import (
    attention_data,
    attention_figure,
    attention_matrix,
    attention_static,
    attention_widget,
)
from viz.views.base import plotly_layout
from viz.views.batch import batch_timeline_data, batch_timeline_figure, batch_timeline_static
from viz.views.context import (
    long_decode_data,
    long_decode_figure,
    long_decode_parts,
    long_decode_widget,
)
from viz.views.compare import compare_data, compare_figure, compare_html, compare_static
from viz.views.distribution import distribution_data, distribution_figure, distribution_static
from viz.views.embeddings import embeddings_data, embeddings_figure, embeddings_static
from viz.views.explorer import explorer_data, explorer_figure, explorer_static, explorer_widget
from viz.views.kv import kv_data, kv_figure, kv_static
from viz.views.load_sweep import pareto_data, pareto_figure, rate_sweep_data, rate_sweep_figure
from viz.views.layer import layer_diagram_data, layer_diagram_figure, layer_diagram_static
from viz.views.report import report_html, write_report
from viz.views.roofline import roofline_data, roofline_figure, roofline_static, roofline_table
from viz.views.serving import (
    itl_distribution_data,
    itl_distribution_figure,
    page_table_data,
    page_table_figure,
    request_names,
    request_timeline_data,
    request_timeline_figure,
    schedule_data,
    schedule_figure,
    serving_tradeoff_data,
    serving_tradeoff_figure,
)
from viz.views.sweeps import sweep_data, sweep_figure, throughput_latency_figure
from viz.views.text import piece_bytes
from viz.views.timeline import summary_html, timeline_data, timeline_figure, timeline_static
from viz.views.prompt import prompt_data, prompt_html, prompt_table
from viz.views.tokens import tokens_data, tokens_html, tokens_static
from viz.views.whatif import whatif_data, whatif_figure, whatif_static, whatif_widget
from viz.views.widgets import LinkedText, LinkedView, figure_output
from viz.views.wall import (
    bytes_whatif_data,
    bytes_whatif_figure,
    wall_data,
    wall_figure,
    wall_table,
)
from viz.views.formats import format_choice_data, format_choice_figure, formats_data, formats_figure
from viz.views.generations import generations_data, generations_figure
from viz.views.compiled import compiled_data, compiled_figure, graph_step_data, graph_step_figure
from viz.views.step_profile import step_profile_data, step_profile_figure
from viz.views.speculative import (
    accepted_histogram_data,
    accepted_histogram_figure,
    draft_length_data,
    draft_length_figure,
)
from viz.views.lens import (
    logit_lens_data,
    logit_lens_figure,
    logit_lens_settle_figure,
    logit_lens_step_figure,
)
from viz.views.early_exit import early_exit_data, early_exit_figure
from viz.views.cost import cost_data, cost_figure
from viz.views.kv_quant import kv_quant_data, kv_quant_figure

__all__ = [
    "palette",
    "attention_data",
    "attention_figure",
    "attention_matrix",
    "attention_static",
    "attention_widget",
    "plotly_layout",
    "batch_timeline_data",
    "batch_timeline_figure",
    "batch_timeline_static",
    "long_decode_data",
    "long_decode_figure",
    "long_decode_parts",
    "long_decode_widget",
    "compare_data",
    "compare_figure",
    "compare_html",
    "compare_static",
    "distribution_data",
    "distribution_figure",
    "distribution_static",
    "embeddings_data",
    "embeddings_figure",
    "embeddings_static",
    "explorer_data",
    "explorer_figure",
    "explorer_static",
    "explorer_widget",
    "kv_data",
    "kv_figure",
    "kv_static",
    "pareto_data",
    "pareto_figure",
    "rate_sweep_data",
    "rate_sweep_figure",
    "layer_diagram_data",
    "layer_diagram_figure",
    "layer_diagram_static",
    "report_html",
    "write_report",
    "roofline_data",
    "roofline_figure",
    "roofline_static",
    "roofline_table",
    "itl_distribution_data",
    "itl_distribution_figure",
    "page_table_data",
    "page_table_figure",
    "request_names",
    "request_timeline_data",
    "request_timeline_figure",
    "schedule_data",
    "schedule_figure",
    "serving_tradeoff_data",
    "serving_tradeoff_figure",
    "sweep_data",
    "sweep_figure",
    "throughput_latency_figure",
    "piece_bytes",
    "summary_html",
    "timeline_data",
    "timeline_figure",
    "timeline_static",
    "prompt_data",
    "prompt_html",
    "prompt_table",
    "tokens_data",
    "tokens_html",
    "tokens_static",
    "whatif_data",
    "whatif_figure",
    "whatif_static",
    "whatif_widget",
    "LinkedText",
    "LinkedView",
    "figure_output",
    "bytes_whatif_data",
    "bytes_whatif_figure",
    "wall_data",
    "wall_figure",
    "wall_table",
    "format_choice_data",
    "format_choice_figure",
    "formats_data",
    "formats_figure",
    "generations_data",
    "generations_figure",
    "compiled_data",
    "compiled_figure",
    "graph_step_data",
    "graph_step_figure",
    "step_profile_data",
    "step_profile_figure",
    "accepted_histogram_data",
    "accepted_histogram_figure",
    "draft_length_data",
    "draft_length_figure",
    "logit_lens_data",
    "logit_lens_figure",
    "logit_lens_settle_figure",
    "logit_lens_step_figure",
    "early_exit_data",
    "early_exit_figure",
    "cost_data",
    "cost_figure",
    "kv_quant_data",
    "kv_quant_figure",
]
