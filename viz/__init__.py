"""viz: watch a real language model answer, one measured step at a time.

The data flows one way: load → record → Trace → views → lessons.

    import viz
    lm = viz.load_model()                       # SmolLM2-135M-Instruct, offline
    trace = viz.record(lm, "The capital of France is", max_new_tokens=8)
    print(trace.summary())
    trace.save("trace.json")

The four faces a lesson imports from: `viz` (this module: load, record, the Trace, the
pieces of the decode loop and the exercises, then saved documents, spreads and bands, the
logit lens and the thread count), `viz.views` (figures), `viz.perf`
(measurements) and `viz.serve` (a real server, its clients and load runs: lessons 09 to 11).
"""

from viz.version import __version__
from viz.load import LoadedModel, load_model
from viz.record import record
from viz.trace import SCHEMA_VERSION, ModelSpec, Step, Token, Trace
from viz.compat import cache_layers, last_logits, new_cache
from viz.sampling import sampling_distribution
from viz.exercises import check, compare_prediction, multiple_choice
from viz.documents import load_document
from viz.spread import TOO_CLOSE, Band, Interval, Spread, band
from viz import lens  # the logit lens of a recorded trace (lesson 14)
from viz.runtime import using_threads

__all__ = [
    "__version__",
    "LoadedModel",
    "load_model",
    "record",
    "SCHEMA_VERSION",
    "ModelSpec",
    "Step",
    "Token",
    "Trace",
    "cache_layers",
    "last_logits",
    "new_cache",
    "sampling_distribution",
    "check",
    "compare_prediction",
    "multiple_choice",
    "load_document",
    "TOO_CLOSE",
    "Band",
    "Interval",
    "Spread",
    "band",
    "lens",
    "using_threads",
]
