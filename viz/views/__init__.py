"""Views: every recorded quantity of a `viz.Trace`, static (matplotlib) and interactive
(plotly, ipywidgets), and the offline HTML report.

Each view takes a Trace — never a model — and returns a figure or an object; nothing is
displayed by the library (the notebook shows what a cell returns).

    from viz import views
    views.tokens_html(trace)          # lesson 01
    views.explorer_figure(trace)      # lesson 04: slider + play, no kernel needed
    views.whatif_widget(trace)        # lesson 02: live sliders (needs a kernel)

Naming: `<view>_static` → matplotlib Figure, `<view>_figure` → plotly Figure,
`<view>_widget` → ipywidgets, `<view>_data` → the numbers a view draws (for tests/exercises).
"""

from viz.views.compare import compare_card, compare_data, compare_figure, compare_static
from viz.views.distribution import distribution_data, distribution_figure, distribution_static
from viz.views.embeddings import embedding_data, embeddings_figure, embeddings_static
from viz.views.explorer import explorer_figure, explorer_static, explorer_step, explorer_widget
from viz.views.kv import kv_data, kv_figure, kv_static
from viz.views.report import report_html, write_report
from viz.views.roofline import roofline_data, roofline_figure, roofline_static, roofline_table
from viz.views.sweeps import sweep_figure, throughput_latency_figure
from viz.views.timeline import summary_card, timeline_data, timeline_figure, timeline_static
from viz.views.tokens import token_chips, token_groups, tokens_html, tokens_static
from viz.views.whatif import whatif_distribution, whatif_figure, whatif_static, whatif_widget

__all__ = [
    "tokens_html", "tokens_static", "token_chips", "token_groups",
    "embeddings_figure", "embeddings_static", "embedding_data",
    "distribution_figure", "distribution_static", "distribution_data",
    "explorer_figure", "explorer_widget", "explorer_static", "explorer_step",
    "whatif_figure", "whatif_widget", "whatif_static", "whatif_distribution",
    "kv_figure", "kv_static", "kv_data",
    "timeline_figure", "timeline_static", "timeline_data", "summary_card",
    "compare_figure", "compare_static", "compare_card", "compare_data",
    "report_html", "write_report",
    "roofline_figure", "roofline_static", "roofline_data", "roofline_table",
    "sweep_figure", "throughput_latency_figure",
]
