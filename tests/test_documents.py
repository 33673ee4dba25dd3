"""The saved-document base: one save/load for every type, versions upgraded on load.

The fixtures in tests/fixtures/ were saved by the release before `viz.documents` existed
(commit c587c07, schema 1 for all three types): they must keep loading and rendering.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Optional

import pytest

import viz
from viz import perf, views
from viz.documents import Document, atomic_write, document_types, load_document

FIXTURES = Path(__file__).parent / "fixtures"


def test_files_saved_by_the_previous_release_still_load_and_render():
    trace = viz.Trace.load(FIXTURES / "trace-v1.json")
    assert trace.label == "fixture" and trace.n_generated == 4
    assert trace.prompt == "Hi 🍕"
    html = views.report_html(trace)
    assert "<html" in html and "Hi" in html
    sweep = perf.Sweep.load(FIXTURES / "sweep-v1.json")
    assert sweep.name == "batch_size" and sweep.column("batch_size") == [1, 2]
    assert views.sweep_figure(sweep).data
    roof = perf.Roofline.load(FIXTURES / "roofline-v1.json")
    assert [p.label for p in roof.points][:2] == ["prefill", "decode"]


def test_an_upgraded_file_is_saved_in_the_newest_layout(tmp_path):
    old = json.loads((FIXTURES / "sweep-v1.json").read_text())
    assert old["schema_version"] == 1 and old["sweep"] == "batch_size"  # the old layout
    sweep = perf.Sweep.load(FIXTURES / "sweep-v1.json")
    new = json.loads(sweep.save(tmp_path / "s.json").read_text())
    assert new["schema_version"] == perf.Sweep.SCHEMA_VERSION == 2
    assert new["name"] == "batch_size" and "sweep" not in new
    assert perf.Sweep.load(tmp_path / "s.json") == sweep


def test_every_saved_type_writes_the_same_way(tmp_path):
    """One definition of to_json serves every type: same header, same compact format."""
    for cls, name in [(viz.Trace, "trace"), (perf.Sweep, "sweep"), (perf.Roofline, "roofline")]:
        doc = cls.load(FIXTURES / f"{name}-v1.json")
        text = doc.to_json()
        assert cls.to_json is Document.to_json and cls.save is Document.save
        assert text.startswith('{"kind":"%s","schema_version":%d,' % (cls.KIND, cls.SCHEMA_VERSION))
        assert "\n" not in text
        assert load_document(doc.save(tmp_path / f"{name}.json")) == doc


@dataclass
class _Part:
    size_bytes: int
    note: str = ""


@dataclass
class _Toy(Document):
    """A saved type as a later feature would write it: version 3, upgraded from 1 and 2."""

    name: str
    parts: list[_Part]
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: Optional[float] = None  # added later, with a default: no new version needed

    KIND: ClassVar[str] = "viz-test-toy"
    SCHEMA_VERSION: ClassVar[int] = 3
    WHAT: ClassVar[str] = "toy"
    AGAIN: ClassVar[str] = "make a new toy"
    UPGRADES: ClassVar[dict] = {
        1: lambda d: {**d, "parts": [{"size_bytes": b} for b in d.pop("sizes")]},
        2: lambda d: {**d, "name": d.pop("title")},
    }


def test_older_versions_are_upgraded_one_step_at_a_time():
    v1 = {"kind": "viz-test-toy", "schema_version": 1, "title": "a", "sizes": [3, 4]}
    toy = _Toy.from_dict(v1)
    assert toy == _Toy(name="a", parts=[_Part(3), _Part(4)])
    v2 = {"kind": "viz-test-toy", "schema_version": 2, "title": "b", "parts": []}
    assert _Toy.from_dict(v2).name == "b"
    assert toy.schema_version == 3
    assert document_types()["viz-test-toy"] is _Toy


def test_new_fields_take_their_defaults_and_unknown_fields_are_ignored():
    doc = {
        "kind": "viz-test-toy",
        "schema_version": 3,
        "name": "n",
        "parts": [{"size_bytes": 1, "from_the_future": True}],
        "also_new": 1,
    }
    toy = _Toy.from_dict(doc)
    assert toy.seconds is None and toy.extra == {} and toy.parts == [_Part(1)]


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"name": "n"},
            r"toy is missing the field 'parts'; the file is not complete: make a new toy",
        ),
        (
            {"name": "n", "parts": [{"size_bytes": 1.5}]},
            r"toy\.parts\[0\]\.size_bytes should be an "
            r"integer, found 1\.5",
        ),
        ({"name": "n", "parts": {}}, r"toy\.parts should be a list, found dict"),
        ({"name": "n", "parts": [], "extra": []}, r"toy\.extra should be an object, found list"),
        ({"name": "n", "parts": [], "seconds": "1"}, r"toy\.seconds should be a finite number"),
        ({"name": None, "parts": []}, r"toy\.name should be a str, found None"),
    ],
)
def test_a_bad_field_is_named_with_its_path(body, message):
    with pytest.raises(ValueError, match=message):
        _Toy.from_dict({"kind": "viz-test-toy", "schema_version": 3, **body})


def test_a_file_of_another_kind_says_what_it_holds(tmp_path):
    path = tmp_path / "x.json"
    path.write_text((FIXTURES / "sweep-v1.json").read_text())
    with pytest.raises(
        ValueError,
        match=r"x\.json: this is not a viz trace .* \(it holds a "
        r"sweep\); record it again",
    ):
        viz.Trace.load(path)


def test_load_document_refuses_an_unknown_kind(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"kind": "something-else", "schema_version": 1}')
    with pytest.raises(ValueError, match=r"unknown kind 'something-else'; viz reads \["):
        load_document(path)


def test_a_failed_save_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "t.json"
    atomic_write(path, "old")
    toy = _Toy(name="n", parts=[], seconds=float("nan"))  # NaN is not JSON
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        toy.save(path)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_every_shipped_file_loads_after_a_bare_import_viz():
    """A fresh process with only `import viz`: load_document reads every file in viz/data/,
    importing the module of each kind itself (issue 30: a shipped sweep once failed with
    "unknown kind 'llm-inference-sweep'" unless viz.perf had been imported)."""
    import subprocess
    import sys

    code = (
        "import sys, viz\n"
        "from pathlib import Path\n"
        "from viz.documents import load_document\n"
        "assert 'viz.perf.table' not in sys.modules\n"
        "files = sorted(Path(viz.__file__).parent.joinpath('data').glob('*.json'))\n"
        "kinds = {type(load_document(f)).__name__ for f in files}\n"
        "print(len(files), sorted(kinds))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    count = int(out.stdout.split()[0])
    assert count == len(list((Path(viz.__file__).parent / "data").glob("*.json"))) >= 10
    assert "Sweep" in out.stdout and "Trace" in out.stdout


def test_the_homes_map_names_every_document_kind():
    """viz.documents.HOMES: each kind's module defines the class of that kind, and every
    Document subclass in viz has its kind there."""
    import importlib
    import pkgutil

    from viz.documents import HOMES

    for info in pkgutil.walk_packages(viz.__path__, "viz."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    ours = {
        kind: cls for kind, cls in document_types().items() if cls.__module__.startswith("viz.")
    }
    assert set(ours) == set(HOMES)
    for kind, module in HOMES.items():
        assert ours[kind].__module__ == module, kind
