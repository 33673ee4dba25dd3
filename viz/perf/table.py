"""`Sweep`: a measured table — named columns of numbers, one row per setting — and its JSON.

Every sweep in `viz.perf.sweeps` returns one. Views plot its columns
(`viz.views.sweeps`); `print(sweep)` shows it as text; `save`/`load` keep it as JSON with
the model and machine it was measured on. Units are in the column names (`_s` seconds,
`_bytes` bytes, `_per_s` per second).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from viz.trace import (Environment, ModelSpec, _atomic_write, _build, _check_header,
                       _read_document)

SWEEP_KIND = "llm-inference-sweep"
SWEEP_SCHEMA_VERSION = 1
# What to do about a sweep file that cannot be used.
SWEEP_AGAIN = "measure it again with a viz.perf sweep or `python -m viz sweep`"


@dataclass
class Sweep:
    """The result of one sweep: `columns[name][row]`, all columns the same length."""

    kind: str  # which sweep: "prompt_length", "context_length", "batch_size" or "cache"
    x: str  # the column that was varied (the natural x axis)
    columns: dict[str, list[Any]]  # name → one value per row (numbers, or None where absent)
    model: ModelSpec  # what was measured
    environment: Environment  # where it was measured
    settings: dict[str, Any] = field(default_factory=dict)  # the sweep's arguments
    label: str = ""  # a name for comparisons, e.g. "CPU" or "H200"
    schema_version: int = SWEEP_SCHEMA_VERSION

    def __post_init__(self):
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of a sweep must have equal lengths, got {sorted(lengths)}")
        if self.x not in self.columns:
            raise ValueError(f"the x column {self.x!r} is not among {list(self.columns)}")

    def __len__(self) -> int:
        return len(self.columns[self.x])

    def column(self, name: str) -> list[Any]:
        if name not in self.columns:
            raise ValueError(f"no column {name!r}; this sweep has {list(self.columns)}")
        return list(self.columns[name])

    def rows(self) -> list[dict[str, Any]]:
        """One dict per row: {column name: value}."""
        names = list(self.columns)
        return [dict(zip(names, values)) for values in zip(*self.columns.values())]

    def __str__(self) -> str:
        names = list(self.columns)
        cells = [[_fmt(v) for v in row.values()] for row in self.rows()]
        widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
        head = f"{self.kind} sweep: {self.model.name} on {self.environment.device_name} " \
               f"({self.environment.device}, {self.environment.dtype})"
        lines = [head, "  ".join(n.rjust(w) for n, w in zip(names, widths))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
        return "\n".join(lines)

    # ---- JSON -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["sweep"] = d.pop("kind")  # "kind" marks the file type, as in a trace
        return {"kind": SWEEP_KIND, **d}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False,
                          separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Any) -> "Sweep":
        version = _check_header(data, SWEEP_KIND, SWEEP_SCHEMA_VERSION, "sweep",
                                again=SWEEP_AGAIN)
        columns = data.get("columns")
        if not isinstance(columns, dict) or not all(
                isinstance(v, list) and all(_is_number(x) for x in v) for v in columns.values()):
            raise ValueError("sweep.columns must map names to lists of finite numbers")
        settings = data.get("settings", {})
        if not isinstance(settings, dict):
            raise ValueError("sweep.settings must be an object")
        if not isinstance(data.get("sweep"), str) or not isinstance(data.get("x"), str):
            raise ValueError("a sweep needs string fields \"sweep\" and \"x\"")
        return cls(kind=data["sweep"], x=data["x"], columns=columns,
                   model=_build(ModelSpec, data.get("model"), "sweep.model"),
                   environment=_build(Environment, data.get("environment"), "sweep.environment"),
                   settings=settings, label=str(data.get("label", "")), schema_version=version)

    def save(self, path: str | os.PathLike) -> Path:
        """Write as JSON, atomically (a failed save leaves any existing file intact)."""
        path = Path(path)
        _atomic_write(path, self.to_json())
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Sweep":
        """Read a sweep saved by `Sweep.save`; a ValueError says what is wrong with a bad file."""
        return _read_document(path, cls.from_dict, "sweep", again=SWEEP_AGAIN)


def _is_number(x: Any) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)
                         and math.isfinite(x))


def _fmt(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    if v == 0:
        return "0"
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:,.0f}"
