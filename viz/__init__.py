"""viz: watch a real language model answer, one measured step at a time.

The data flows one way: load → record → Trace → views → lessons.

    import viz
    lm = viz.load_model()                       # SmolLM2-135M-Instruct, offline
    trace = viz.record(lm, "The capital of France is", max_new_tokens=8)
    print(trace.summary())
    trace.save("trace.json")

The four faces a lesson imports from: `viz` (this module: load, record, the Trace, the
pieces of the decode loop and the exercises), `viz.views` (figures), `viz.perf`
(measurements) and `viz.serve` (a real server, its clients and load runs: lessons 09 and 10).
"""

from viz.version import __version__
from viz.compat import cache_layers, last_logits, new_cache
from viz.documents import load_document
from viz.exercises import check, multiple_choice
from viz.exercises import compare_prediction
from viz.load import LoadedModel, load_model
from viz.record import record
from viz import lens  # the logit lens of a recorded trace (lesson 14)
from viz.runtime import using_threads
from viz.sampling import sampling_distribution
from viz.spread import TOO_CLOSE, Band, Interval, Spread, band
from viz.trace import SCHEMA_VERSION, ModelSpec, Step, Token, Trace

__all__ = ["load_model", "LoadedModel", "record", "Trace", "Step", "Token", "ModelSpec",
           "SCHEMA_VERSION", "__version__", "load_document", "using_threads",
           "new_cache", "last_logits", "cache_layers", "sampling_distribution",
           "check", "multiple_choice", "compare_prediction", "Spread", "Band", "band",
           "Interval", "TOO_CLOSE", "lens"]
