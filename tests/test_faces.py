"""The four faces a lesson imports from (`viz`, `viz.views`, `viz.perf`, `viz.serve`) each read
top to bottom (issue 30): the docstring, then one block of imports, then one `__all__` list
with no name twice, its names grouped per import in the order of the imports. `viz.perf`'s
docstring has a `| module | its one job |` table: it lists exactly the package's modules, and
the face imports them in the table's order. Checked by parsing the files (`ast`), not by
importing them."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FACES = {
    "viz": ROOT / "viz" / "__init__.py",
    "viz.perf": ROOT / "viz" / "perf" / "__init__.py",
    "viz.views": ROOT / "viz" / "views" / "__init__.py",
    "viz.serve": ROOT / "viz" / "serve" / "__init__.py",
}
TABLED = ["viz.perf"]  # the faces whose docstring has a module table


def is_all(target: ast.AST) -> bool:
    return isinstance(target, ast.Name) and target.id == "__all__"


def bound_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import statement binds in the module that runs it."""
    if isinstance(node, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    return [a.asname or a.name for a in node.names]


def face_problems(source: str) -> list[str]:
    """What keeps a face's source from reading docstring → one import block → one `__all__`
    (grouped per import, in the imports' order); [] when nothing does."""
    tree = ast.parse(source)
    body = list(tree.body)
    problems = []
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    else:
        problems.append("the face does not start with its docstring")
    n = 0
    while n < len(body) and isinstance(body[n], (ast.Import, ast.ImportFrom)):
        n += 1
    imports, rest = body[:n], body[n:]
    if not imports:
        problems.append("no import block right after the docstring")
    stray = [s.lineno for s in rest if isinstance(s, (ast.Import, ast.ImportFrom))]
    if stray:
        problems.append(f"imports outside the block after the docstring, at lines {stray}")

    assigns = [
        s
        for s in ast.walk(tree)
        if (isinstance(s, ast.Assign) and any(is_all(t) for t in s.targets))
        or (isinstance(s, ast.AnnAssign) and is_all(s.target))
    ]
    grown = [
        s.lineno
        for s in ast.walk(tree)
        if (isinstance(s, ast.AugAssign) and is_all(s.target))
        or (isinstance(s, ast.Call) and isinstance(s.func, ast.Attribute) and is_all(s.func.value))
    ]
    if grown:
        problems.append(f"__all__ grown after its assignment (+=, .extend, ...) at lines {grown}")
    if len(assigns) != 1:
        problems.append(
            f"{len(assigns)} assignments of __all__, not one (lines {[s.lineno for s in assigns]})"
        )
        return problems
    (assign,) = assigns
    if not rest or rest[0] is not assign:
        problems.append(f"__all__ (line {assign.lineno}) does not come right after the imports")
    try:
        names = ast.literal_eval(assign.value)
    except ValueError:
        return problems + [f"__all__ (line {assign.lineno}) is not one list literal"]
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        return problems + [f"__all__ (line {assign.lineno}) is not a list of strings"]
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        problems.append(f"in __all__ twice: {twice}")

    where = {}  # name → index of the import that binds it (the last one, as Python does)
    for i, node in enumerate(imports):
        for name in bound_names(node):
            where[name] = i
    unbound = [x for x in names if x not in where]
    if unbound:
        problems.append(f"in __all__ but not imported by the block: {unbound}")
    order = [(where[x], x) for x in names if x in where]
    for (i, a), (j, b) in zip(order, order[1:]):
        if j < i:
            problems.append(
                f"__all__ is not grouped in the imports' order: {b!r} (import at "
                f"line {imports[j].lineno}) comes after {a!r} (line "
                f"{imports[i].lineno})"
            )
            break
    return problems


def table_modules(source: str, package: str) -> list[str]:
    """The modules a face's docstring table lists, as dotted names: the first column of each
    row, `counts.py` → `<package>.counts`, `machine/` → `<package>.machine`."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|", doc, re.M)
    return [package + "." + re.sub(r"(\.py|/)$", "", row) for row in rows]


def first_imported(source: str, package: str) -> list[str]:
    """The package's own modules in the order the face first imports them (a sub-submodule
    counts as its parent: `viz.perf.machine.peaks` → `viz.perf.machine`), and any module from
    outside the package (e.g. `viz.runtime`), as written."""
    seen = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            if node.module == package:  # `from viz.views import palette`: submodules by name
                mods = [f"{package}.{a.name}" for a in node.names]
            else:
                mods = [node.module]
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        else:
            continue
        for mod in mods:
            if mod.startswith(package + "."):
                mod = ".".join(mod.split(".")[: len(package.split(".")) + 1])
            if mod not in seen:
                seen.append(mod)
    return seen


def table_order_problems(source: str, package: str) -> list[str]:
    """Where the face imports its package's modules out of its docstring table's order, or
    imports one the table does not list; [] when it follows the table. A module from outside
    the package (`viz.runtime` in viz.perf) is not in the table and may come anywhere."""
    table = table_modules(source, package)
    if not table:
        return [f"{package}'s docstring has no `| module | its one job |` table"]
    problems = []
    ours = [m for m in first_imported(source, package) if m.startswith(package + ".")]
    missing = [m for m in ours if m not in table]
    if missing:
        problems.append(f"imported but not in the docstring's table: {missing}")
    ranked = [m for m in ours if m in table]
    for a, b in zip(ranked, ranked[1:]):
        if table.index(b) < table.index(a):
            problems.append(f"{b} is first imported after {a}, but the table lists it before")
            break
    return problems


def package_modules(package: str) -> set[str]:
    """The package's modules on disk: its .py files and its subpackages (a folder with an
    __init__.py; a data folder such as viz/perf/configs/ is none)."""
    folder = ROOT.joinpath(*package.split("."))
    out = {f"{package}.{p.stem}" for p in folder.glob("*.py") if p.name != "__init__.py"}
    out |= {f"{package}.{p.name}" for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return out


@pytest.mark.parametrize("face", sorted(FACES))
def test_a_face_is_docstring_then_one_import_block_then_one_all(face):
    assert face_problems(FACES[face].read_text()) == []


@pytest.mark.parametrize("face", TABLED)
def test_a_face_imports_its_modules_in_its_tables_order(face):
    assert table_order_problems(FACES[face].read_text(), face) == []


@pytest.mark.parametrize("face", TABLED)
def test_a_faces_table_lists_exactly_its_packages_modules(face):
    table = table_modules(FACES[face].read_text(), face)
    assert len(table) == len(set(table)), f"a module twice in {face}'s table: {table}"
    assert set(table) == package_modules(face), (
        f"in the table, no such module: {sorted(set(table) - package_modules(face))}; "
        f"a module the table misses: {sorted(package_modules(face) - set(table))}"
    )


BAD_FACE = '''"""A face.

| module | its one job |
|---|---|
| `b.py` | first |
| `a/` | second |
"""

from pkg.a import x
from pkg.b import y
__all__ = ["y", "x"]
from pkg.c import z

__all__ += ["z", "x"]
'''


def test_the_checks_find_what_they_look_for():
    problems = " | ".join(face_problems(BAD_FACE))
    for expected in ["imports outside the block", "grown after its assignment"]:
        assert expected in problems, problems
    twice = BAD_FACE.replace("__all__ += ", "VERSION = 1\n__all__ = ")
    assert "2 assignments of __all__, not one" in " | ".join(face_problems(twice))
    late = BAD_FACE.replace(
        '__all__ = ["y", "x"]\nfrom pkg.c import z\n\n__all__ += ["z", "x"]',
        'VERSION = 1\n__all__ = ["x", "y"]',
    )
    assert face_problems(late) == ["__all__ (line 12) does not come right after the imports"]
    problems = face_problems(
        BAD_FACE.replace('\n__all__ += ["z", "x"]\n', "")
        .replace("from pkg.c import z\n", "")
        .replace('["y", "x"]', '["y", "x", "y", "w"]')
    )
    problems = " | ".join(problems)
    for expected in [
        "not grouped in the imports' order",
        "twice: ['y']",
        "not imported by the block: ['w']",
    ]:
        assert expected in problems, problems
    assert table_modules(BAD_FACE, "pkg") == ["pkg.b", "pkg.a"]
    problems = " | ".join(table_order_problems(BAD_FACE, "pkg"))
    assert "pkg.b is first imported after pkg.a" in problems, problems
    assert "not in the docstring's table: ['pkg.c']" in problems, problems
    good = (
        '"""F.\n\n| module | its one job |\n|---|---|\n| `a.py` | one |\n"""\n\n'
        "from pkg.a import x\n# a comment between imports is fine\nimport other\n\n"
        '__all__ = ["x", "other"]\n'
    )
    assert face_problems(good) == []
    assert table_order_problems(good, "pkg") == []


# ---- viz.perf exports what its users use, and no more -------------------------------------------
# Where the face's users are: the lessons, the command line, the benchmarks and tools, the tests,
# the documents, and viz's own messages and docstrings that send a reader to `viz.perf.NAME`. A
# name none of them reaches through `perf.` (or `from viz.perf import`) is an internal of its
# module, reachable there (issue 30: the face had grown to 172 names).
USERS = [
    "lessons/*.py",
    "viz/**/*.py",
    "benchmarks/*.py",
    "tools/*.py",
    "tests/*.py",
    "*.md",
    "lessons/*.md",
    "tests/nbval-sanitize.cfg",
]


def unused_face_names(names: list[str], texts: list[str]) -> list[str]:
    """The names no text uses as `perf.NAME` or imports with `from viz.perf import`."""
    used = set()
    for text in texts:
        used |= set(re.findall(r"\bperf\.([A-Za-z_][A-Za-z0-9_]*)", text))
        for block in re.findall(r"from viz\.perf import \(?([^)\n]*(?:\n[^)]*)?)\)?", text):
            used |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", block))
    return [n for n in names if n not in used]


def test_every_name_viz_perf_exports_has_a_user():
    from viz import perf

    assert unused_face_names(["used", "lonely"], ["x = perf.used(1)"]) == ["lonely"]
    assert unused_face_names(["a", "b"], ["from viz.perf import (\n    a,\n    b,\n)"]) == []
    this = Path(__file__).resolve()
    texts = [
        p.read_text(encoding="utf-8")
        for pattern in USERS
        for p in ROOT.glob(pattern)
        if p.resolve() not in (this, FACES["viz.perf"])
    ]
    assert unused_face_names(list(perf.__all__), texts) == []
