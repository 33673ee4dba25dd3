"""`Sweep`: a measured table — named columns of numbers, one row per setting — and its JSON.

Every sweep in `viz.perf.sweeps` returns one. Views plot its columns
(`viz.views.sweeps`); `print(sweep)` shows it as text; `save`/`load` keep it as JSON with
the model and machine it was measured on. Units are in the column names (`_s` seconds,
`_bytes` bytes, `_per_s` per second).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from viz.documents import Document, Number
from viz.spread import Spread
from viz.trace import Environment, ModelSpec


def _v1_to_v2(data: dict) -> dict:
    """Schema 1 stored which sweep it was under "sweep"; schema 2 calls it "name". Schema 1
    settings counted tokens as "new_tokens" or (context sweep) "steps" decode steps; schema 2
    says "max_new_tokens" everywhere (tokens per request, the prefill's included)."""
    data["name"] = data.pop("sweep", None)
    settings = data.get("settings")
    if isinstance(settings, dict):
        settings = dict(settings)
        if "new_tokens" in settings:
            settings["max_new_tokens"] = settings.pop("new_tokens")
        if "steps" in settings and isinstance(settings["steps"], int):
            settings["max_new_tokens"] = settings.pop("steps") + 1
        data["settings"] = settings
    return data


@dataclass
class Sweep(Document):
    """The result of one sweep: `columns[name][row]`, all columns the same length."""

    name: str  # which sweep: "prompt_length", "context_length", "batch_size" or "cache"
    x: str  # the column that was varied (the natural x axis)
    columns: dict[str, list[Optional[Number]]]  # name → one value per row (None where absent)
    model: ModelSpec  # what was measured
    environment: Environment  # where it was measured
    settings: dict[str, Any] = field(default_factory=dict)  # the sweep's arguments
    label: str = ""  # a name for comparisons, e.g. "CPU" or "H200"
    # timed column → one spread per row: the median the column holds and the middle half of
    # the runs behind it (`viz.spread.Spread`); {} in files saved before spreads were kept
    spreads: dict[str, list[Spread]] = field(default_factory=dict)

    # Saved as JSON by `save` / `load` (see viz.documents for the rules of versions).
    KIND: ClassVar[str] = "llm-inference-sweep"
    SCHEMA_VERSION: ClassVar[int] = 2
    WHAT: ClassVar[str] = "sweep"
    AGAIN: ClassVar[str] = "measure it again with a viz.perf sweep or `python -m viz sweep`"
    UPGRADES: ClassVar[dict] = {1: _v1_to_v2}

    def __post_init__(self):
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of a sweep must have equal lengths, got {sorted(lengths)}")
        if self.x not in self.columns:
            raise ValueError(f"the x column {self.x!r} is not among {list(self.columns)}")
        for name, spreads in self.spreads.items():
            if name not in self.columns or len(spreads) != len(self.columns[name]):
                raise ValueError(f"spreads of {name!r} must match a column, one per row")

    def __len__(self) -> int:
        return len(self.columns[self.x])

    def column(self, name: str) -> list[Any]:
        if name not in self.columns:
            raise ValueError(f"no column {name!r}; this sweep has {list(self.columns)}")
        return list(self.columns[name])

    def spread(self, name: str) -> list[Spread]:
        """A timed column's spreads, one per row (each `.median` is the column's value);
        exact figures where none were kept (a count, or an older file)."""
        values = self.column(name)
        kept = self.spreads.get(name)
        if kept is None:
            return [Spread.exact(v) for v in values]
        return list(kept)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per row: {column name: value}."""
        names = list(self.columns)
        return [dict(zip(names, values)) for values in zip(*self.columns.values())]

    def merged(self, other: "Sweep") -> "Sweep":
        """This sweep's rows and `other`'s in one, in the order of the x column; a row of
        `other` replaces this sweep's row at the same x. For a sweep measured in parts (lesson
        11's slider measures one more context at a time). Both must be the same kind of sweep:
        the same name and columns; the model, machine and settings are this sweep's."""
        if not isinstance(other, Sweep):
            raise TypeError(f"merge a Sweep with another Sweep, not {type(other).__name__}")
        if (other.name, other.x, list(other.columns)) != (self.name, self.x, list(self.columns)):
            raise ValueError(
                f"only the same kind of sweep merges: {self.name!r} with columns "
                f"{list(self.columns)}, not {other.name!r} with "
                f"{list(other.columns)}"
            )
        mine, theirs = self.column(self.x), other.column(self.x)
        replaced = set(theirs)
        rows = sorted(
            [(x, 0, i) for i, x in enumerate(mine) if x not in replaced]
            + [(x, 1, i) for i, x in enumerate(theirs)],
            key=lambda r: r[0],
        )
        source = (self, other)
        columns = {n: [source[s].columns[n][i] for _, s, i in rows] for n in self.columns}
        spreads = {}
        for n in [n for n in self.spreads if n in other.spreads]:  # spreads both sides kept
            kept = (self.spread(n), other.spread(n))
            spreads[n] = [kept[s][i] for _, s, i in rows]
        return Sweep(
            self.name,
            self.x,
            columns,
            self.model,
            self.environment,
            dict(self.settings),
            self.label,
            spreads,
        )

    def __str__(self) -> str:
        names = list(self.columns)
        cells = [[_fmt(v) for v in row.values()] for row in self.rows()]
        widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
        head = (
            f"{self.name} sweep: {self.model.name} on {self.environment.device_name} "
            f"({self.environment.device}, {self.environment.dtype})"
        )
        if "cache" in self.settings:  # e.g. the long decode sweep's random KV cache
            head += f"; cache: {self.settings['cache']}"
        lines = [head, "  ".join(n.rjust(w) for n, w in zip(names, widths))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
        return "\n".join(lines)


def _fmt(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    if v == 0:
        return "0"
    if abs(v) >= 1e7:  # a rate in FLOP/s or bytes/s: digits nobody reads; 5.39e+10
        return f"{v:.3g}"
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:,.0f}"
