"""viz: watch a real language model answer, one measured step at a time.

The data flows one way: load → record → Trace → views → lessons.

    import viz
    lm = viz.load_model()                       # SmolLM2-135M-Instruct, offline
    trace = viz.record(lm, "The capital of France is", max_new_tokens=8)
    print(trace.summary())
    trace.save("trace.json")
"""

__version__ = "0.1.0"

from viz.load import LoadedModel, load_model  # noqa: E402
from viz.record import record  # noqa: E402
from viz.trace import SCHEMA_VERSION, ModelSpec, Step, Token, Trace  # noqa: E402

__all__ = ["load_model", "LoadedModel", "record", "Trace", "Step", "Token", "ModelSpec",
           "SCHEMA_VERSION", "__version__"]
