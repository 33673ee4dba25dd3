"""Reference measurements shipped with viz (`viz/data/*.json`), loadable from any folder.

Recorded by `benchmarks/perf_lab.py`, `memory_wall.py` and `remedies.py` (this project's 2-core
CPU) and `benchmarks/gpu_check.py` (a GPU, when one was lent). Lessons compare the learner's own numbers with them (lesson 07).

    viz.perf.list_references()                 # names, e.g. "cpu-chat-trace"
    trace = viz.perf.load_reference("cpu-chat-trace")
"""

from __future__ import annotations

from importlib import resources
from typing import Union

from viz.documents import Document, load_document
from viz.perf.roofline import Roofline
from viz.perf.table import Sweep
from viz.trace import Trace


def list_references() -> list[str]:
    """Names of the shipped reference files (without `.json`)."""
    folder = resources.files("viz") / "data"
    if not folder.is_dir():
        return []
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_reference(name: str) -> Union[Trace, Sweep, Roofline, Document]:
    """A shipped reference: a `Trace`, a `Sweep`, a `Roofline`, or another viz document (a
    `WallRun`, a `FormatRun`, a `CompiledStep`), by what the file holds."""
    names = list_references()
    if name not in names:
        raise ValueError(f"no reference named {name!r}; shipped: {names}")
    with resources.as_file(resources.files("viz") / "data" / f"{name}.json") as path:
        return load_document(path)
