"""Saved documents: the one way viz writes and reads its JSON files.

Every file viz saves — a trace, a sweep, a roofline, a load run against a server — is a small
dataclass that subclasses `Document`. The base carries what they all need, written once:

- **the header**: a file is one JSON object `{"kind": KIND, "schema_version": N, ...fields}`.
  `kind` says which type the file holds, so a sweep is never read as a trace.
- **to_dict / to_json / save**: plain JSON (never pickle), UTF-8, no NaN or infinity (a
  missing value is `null`). `save` writes atomically: a failed save leaves an existing file as
  it was and no temporary file behind.
- **from_dict / load**: every field is checked against its type annotation; an error names
  the file, the field (`trace.steps[3].prob`) and the fix.
- **versions**: `SCHEMA_VERSION` is the newest layout this code writes. An older file is
  *upgraded* on load, one version at a time, by `UPGRADES[v]` (a function from a version-v
  dict to a version-(v+1) dict); a newer file is refused with "upgrade viz".

The rule for changing a saved type:

1. **A new field gets a default** (`= None`, `= ""`, `field(default_factory=list)`). Then no
   new version is needed: older files load and the field takes its default; and an older
   viz reading a newer file ignores the field it does not know.
2. **Renaming, removing or changing the meaning or unit of a field** bumps `SCHEMA_VERSION`
   and adds `UPGRADES[old_version]`, so every file ever saved still loads.

Why hand-written validation and not pydantic or cattrs: the types here are a handful of
JSON-native dataclasses; this checker is ~100 lines with no dependency, loads a 64-step trace
of the default model (147 kB) in ~8 ms on a 2-core CPU (field types resolved once per class;
a list of numbers checked in one pass), and its messages name the exact field path
(`trace.steps[1].top_probs[2]`) and what to do about it. A library would add an import (and its
own error wording) to every lesson for no gain.

    @dataclass
    class LoadRun(Document):
        KIND: ClassVar[str] = "llm-inference-load-run"
        SCHEMA_VERSION: ClassVar[int] = 1
        WHAT: ClassVar[str] = "load run"
        AGAIN: ClassVar[str] = "run it again with viz.serve.run_load(...)"
        requests: list[RequestRecord] = field(default_factory=list)

    run.save("run.json");  LoadRun.load("run.json")  # ValueError naming the file if bad
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import tempfile
import typing
from pathlib import Path
from typing import Any, Callable, ClassVar, Union

from viz import checks

# A column of a measured table holds whole numbers and measurements alike.
Number = Union[int, float]

_REGISTRY: dict[str, type] = {}  # kind -> Document subclass (for `load_document`)


class Document:
    """Base of every saved type. Subclasses are dataclasses that set the class constants."""

    KIND: ClassVar[str] = ""  # the "kind" written into the file, e.g. "llm-inference-trace"
    SCHEMA_VERSION: ClassVar[int] = 1  # the newest layout this code writes
    WHAT: ClassVar[str] = "document"  # how messages name it, e.g. "trace"
    AGAIN: ClassVar[str] = "make it again"  # what to do about a file that cannot be used
    # UPGRADES[v] turns a version-v dict (header included) into a version-(v+1) dict.
    UPGRADES: ClassVar[dict[int, Callable[[dict], dict]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.KIND:
            _REGISTRY[cls.KIND] = cls

    @property
    def schema_version(self) -> int:
        """The layout this object is in: always the newest (older files are upgraded on load)."""
        return self.SCHEMA_VERSION

    # ---- writing ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The header, then every field as JSON-native values."""
        return {
            "kind": self.KIND,
            "schema_version": self.SCHEMA_VERSION,
            **dataclasses.asdict(self),
        }

    def to_json(self) -> str:
        # allow_nan=False: a NaN or infinity is not JSON; fail here rather than write it.
        return json.dumps(
            self.to_dict(), ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write as JSON, atomically: a failed save leaves any existing file intact."""
        path = Path(path)
        text = self.to_json()  # serialise first: nothing touches the disk if this fails
        atomic_write(path, text)
        return path

    # ---- reading ----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any):
        """Build from a parsed JSON object: header checked, older versions upgraded, fields
        checked against their types. A ValueError names the bad field and the fix."""
        data = upgrade(cls, data)
        body = {k: v for k, v in data.items() if k not in ("kind", "schema_version")}
        return build(cls, body, cls.WHAT, again=cls.AGAIN)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a file saved by `save`; every failure is a ValueError naming the file."""
        data = read_json(path, cls.WHAT, cls.AGAIN)
        try:
            return cls.from_dict(data)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


def read_json(path: str | os.PathLike, what: str, again: str) -> Any:
    """The parsed JSON in `path`; a ValueError naming the file if it is missing or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no {what} file at {path}: check the path, or {again}")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(
            f"cannot read {path}: it is not valid JSON ({e}); the file is corrupt "
            f"or truncated: {again}"
        ) from None


def upgrade(cls: type, data: Any) -> dict[str, Any]:
    """`data` checked to be a `cls` document, and brought up to `cls.SCHEMA_VERSION`."""
    what, again = cls.WHAT, cls.AGAIN
    if not isinstance(data, dict) or data.get("kind") != cls.KIND:
        found = data.get("kind") if isinstance(data, dict) else None
        holds = f" (it holds a {_REGISTRY[found].WHAT})" if found in _REGISTRY else ""
        raise ValueError(f'this is not a viz {what} (no "kind": "{cls.KIND}"){holds}; {again}')
    version = data.get("schema_version")
    if not checks.is_whole(version) or version < 1:
        raise ValueError(f"{what} schema_version {version!r} is not valid; {again}")
    if version > cls.SCHEMA_VERSION:
        raise ValueError(
            f"{what} schema_version {version} is newer than this viz understands "
            f"({cls.SCHEMA_VERSION}); upgrade viz (git pull, then `make test`)"
        )
    while version < cls.SCHEMA_VERSION:
        step = cls.UPGRADES.get(version)
        if step is None:  # a bug in the subclass: every old version needs its upgrade
            raise TypeError(f"{cls.__name__} has no upgrade from schema_version {version}")
        data = {**step(dict(data)), "kind": cls.KIND, "schema_version": version + 1}
        version += 1
    return data


# kind -> the module that defines its Document subclass: `load_document` imports it when the
# kind is not registered yet, so any file loads after a bare `import viz`, whatever else was
# imported (issue 30). tests/test_documents.py checks the map against every subclass.
HOMES: dict[str, str] = {
    "llm-inference-trace": "viz.trace",
    "llm-inference-stream": "viz.serve.client",
    "llm-inference-load-run": "viz.serve.loadgen",
    "llm-inference-schedule": "viz.serve.scheduler",
    "llm-inference-load-sweep": "viz.serve.sweep",
    "llm-inference-prefix-sharing": "viz.serve.prefix",
    "llm-inference-compiled-step": "viz.perf.compiled",
    "llm-inference-fixed-costs": "viz.perf.machine.fixed_costs",
    "llm-inference-roofline": "viz.perf.roofline",
    "llm-inference-machine-peaks": "viz.perf.machine.peaks",
    "llm-inference-memory-wall": "viz.perf.wall",
    "llm-inference-sweep": "viz.perf.table",
    "llm-inference-step-profile": "viz.perf.profile",
    "llm-inference-formats": "viz.perf.formats",
}


def load_document(path: str | os.PathLike) -> Document:
    """Read any viz document (trace, sweep, roofline, ...) by the kind its file names,
    importing the module of its kind (`HOMES`) if it was not imported yet."""
    import importlib

    data = read_json(path, "viz document", "check the path")
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in _REGISTRY and kind in HOMES:
        importlib.import_module(HOMES[kind])
    if kind not in _REGISTRY:
        known = sorted(set(HOMES) | set(_REGISTRY))
        raise ValueError(f"{path}: unknown kind {kind!r}; viz reads {known}")
    try:
        return _REGISTRY[kind].from_dict(data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def document_types() -> dict[str, type]:
    """kind -> Document subclass, for every kind imported so far."""
    return dict(_REGISTRY)


# ---- atomic writes -----------------------------------------------------------------------
def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file beside `path`, then rename it over `path` in one step.

    A failure at any point leaves an existing file as it was and no temporary file behind.
    A symlink is followed (its target is replaced); a target that exists but is not a regular
    file (a folder, a device such as /dev/stdout) is refused rather than replaced.
    """
    path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():
        raise ValueError(f"{path} exists and is not a regular file: choose a file name to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # mkstemp makes the file owner-only; give it the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---- checked construction from JSON ------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _hints(tp: type) -> dict[str, Any]:
    """A dataclass's resolved field types (resolved once per class, not once per object)."""
    return typing.get_type_hints(tp)


# What `build` accepts for each scalar type, and what the error says it should be. One test
# per type, used for a single field and for a whole list of them at once (a column of
# numbers is checked in one pass; its index is named only when one is bad).
_SCALARS: dict[Any, tuple[Callable[[Any], bool], str]] = {
    float: (checks.is_number, "a finite number"),
    int: (checks.is_whole, "an integer"),
    bool: (lambda v: isinstance(v, bool), "a bool"),
    str: (lambda v: isinstance(v, str), "a str"),
}


def build(tp: Any, value: Any, where: str, *, again: str = "make it again") -> Any:
    """Build `tp` from JSON `value`, checking every type; a ValueError names the bad field.

    Supported: dataclasses (missing fields take their defaults; unknown keys are ignored),
    list[X], dict[str, X], Optional[X] and other unions (first arm that fits), Any (any JSON
    value), int, float (finite; an int is accepted), bool and str.
    """
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueError(f"{where} should be an object, found {type(value).__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            if f.name in value:
                kwargs[f.name] = build(
                    hints[f.name], value[f.name], f"{where}.{f.name}", again=again
                )
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(
                    f"{where} is missing the field {f.name!r}; the file is not complete: {again}"
                )
        try:
            return tp(**kwargs)
        except ValueError as e:  # the dataclass's own consistency check (__post_init__)
            raise ValueError(f"{where}: {e}") from None
    origin = typing.get_origin(tp)
    if origin is Union:
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise ValueError(f"{where} should not be null")
        arms = [a for a in args if a is not type(None)]
        for arm in arms:
            try:
                return build(arm, value, where, again=again)
            except ValueError:
                if arm is arms[-1]:
                    raise
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"{where} should be a list, found {type(value).__name__}")
        (item,) = typing.get_args(tp)
        if item in _SCALARS and all(map(_SCALARS[item][0], value)):  # the fast path
            return [float(v) for v in value] if item is float else list(value)
        return [build(item, v, f"{where}[{i}]", again=again) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{where} should be an object, found {type(value).__name__}")
        _, item = typing.get_args(tp)
        return {str(k): build(item, v, f"{where}[{k!r}]", again=again) for k, v in value.items()}
    if tp is Any:
        return value
    if tp in _SCALARS:
        check, what = _SCALARS[tp]
        if not check(value):
            raise ValueError(f"{where} should be {what}, found {value!r}")
        return float(value) if tp is float else value
    raise TypeError(f"unsupported field type {tp!r} at {where}")  # a bug in a Document subclass
