"""The shape of the library: no import cycle, no private name borrowed from another module,
and lessons that import only from the faces (`viz`, `viz.views`, `viz.perf`, and `viz.serve`
for the serving lesson).

Every import statement counts, also those inside functions: an import deferred to call time
is still a dependency, and a cycle hidden that way still ties two modules together.
"""

import ast
from pathlib import Path

import pytest

import viz
from viz import perf, serve, views

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "viz"
FACES = {"viz": viz, "viz.views": views, "viz.perf": perf, "viz.serve": serve}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path, modules: set[str]) -> list[tuple[str, str, int]]:
    """(module imported, name imported or "", line) for every viz import in a file.

    `from viz import perf` imports the module viz.perf; `from viz import record` imports
    the name `record` from the package face `viz`.
    """
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [
                (a.name, "", node.lineno) for a in node.names if a.name.split(".")[0] == "viz"
            ]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "viz"
        ):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.append(
                    (sub, "", node.lineno) if sub in modules else (node.module, a.name, node.lineno)
                )
    return found


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], list[str]]:
    """module → the viz modules it imports; and every private name imported across modules.

    root: the folder holding the `viz` package (the repository, or a test's copy).
    """
    files = {module_name(p, root): p for p in (root / "viz").rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    private = []
    for mod, path in files.items():
        for target, name, line in imports(path, set(files)):
            if target != mod:
                graph[mod].add(target)
            if name.startswith("_") and not name.startswith("__"):
                private.append(f"{path.relative_to(root)}:{line} imports {name} from {target}")
    return graph, private


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as [a, b, ..., a], or [] if there is none (depth-first search)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        state[node] = 2
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return []


def test_the_cycle_finder_finds_cycles_and_only_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_a_cycle_added_to_viz_is_caught(tmp_path):
    """The real graph plus one back edge (what `from viz.cli import main` inside
    viz/runtime.py would add) must be reported."""
    graph, _ = import_graph()
    assert "viz.runtime" in graph["viz.cli"] or any(
        "viz.runtime" in graph[m] for m in graph["viz.cli"]
    )
    graph["viz.runtime"] = graph["viz.runtime"] | {"viz.cli"}
    assert "viz.runtime" in find_cycle(graph)


def test_viz_has_no_import_cycle():
    graph, _ = import_graph()
    assert len(graph) > 20  # the walk found the package
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_no_private_name_is_imported_from_another_module():
    _, private = import_graph()
    assert private == []


def test_private_imports_and_cycles_in_files_are_detected(tmp_path):
    """The checks themselves, on a small package written here: a private helper imported
    from another module, and a cycle made by an import inside a function."""
    (tmp_path / "viz").mkdir()
    (tmp_path / "viz" / "__init__.py").write_text("")
    (tmp_path / "viz" / "a.py").write_text("from viz.b import _helper\n")
    (tmp_path / "viz" / "b.py").write_text("def f():\n    from viz import a\n")
    graph, private = import_graph(tmp_path)
    assert private == ["viz/a.py:1 imports _helper from viz.b"]
    assert find_cycle(graph) == ["viz.a", "viz.b", "viz.a"]


@pytest.mark.parametrize(
    "lesson", sorted((ROOT / "lessons").glob("[0-9]*.py")), ids=lambda p: p.stem
)
def test_lessons_import_only_from_the_faces(lesson):
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    bad = []
    for target, name, line in imports(lesson, modules):
        parent, _, last = target.rpartition(".")
        if not name and parent in FACES and last in FACES[parent].__all__:
            continue  # a module the face exports, e.g. `from viz.views import palette`
        if name:
            if target not in FACES or name not in FACES[target].__all__:
                bad.append(f"line {line}: {name} from {target}")
        elif target not in FACES:
            bad.append(f"line {line}: module {target}")
    assert bad == [], f"{lesson.name} reaches past the faces {sorted(FACES)}: {bad}"


def raises_without_match(path: Path) -> list[int]:
    """Lines of `pytest.raises(...)` calls that do not say which message they expect."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "raises"
            and getattr(node.func.value, "id", "") == "pytest"
            and not any(k.arg == "match" for k in node.keywords)
        ):
            lines.append(node.lineno)
    return lines


def test_every_expected_error_names_its_message(tmp_path):
    """`pytest.raises(ValueError)` alone passes for the wrong ValueError too: ask for match=."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import pytest\nwith pytest.raises(ValueError):\n    pass\n"
        "with pytest.raises(ValueError, match='x'):\n    pass\n"
    )
    assert raises_without_match(probe) == [2]
    found = {p.name: raises_without_match(p) for p in (ROOT / "tests").glob("*.py")}
    assert {name: lines for name, lines in found.items() if lines} == {}


MAX_FUNCTION_LINES = 80  # as `ruff format` lays it out (`make lint` checks the layout)


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """`name (N lines)` for every function or method in a file longer than `limit` lines,
    its decorators, docstring and comments counted."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if node.end_lineno - first + 1 > limit:
                found.append(f"{node.name} ({node.end_lineno - first + 1} lines)")
    return found


def test_no_function_in_viz_is_over_80_lines(tmp_path):
    """A function that does one job fits on a screen or two: split a longer one into named
    steps (issue 30). The probe proves the check counts a long one."""
    probe = tmp_path / "probe.py"
    probe.write_text("def short():\n    pass\n\n\ndef long():\n" + "    x = 1\n" * 80)
    assert long_functions(probe) == ["long (81 lines)"]
    found = {str(p.relative_to(ROOT)): long_functions(p) for p in PACKAGE.rglob("*.py")}
    assert {name: fns for name, fns in found.items() if fns} == {}
