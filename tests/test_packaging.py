"""`pip install .` installs what viz needs: pyproject.toml's dependencies agree with
requirements.txt and requirements-engines.txt (same ranges), together they list every line of
them, and every third-party module viz imports is installed by a dependency — or, for the
`engines` extra (llama.cpp), imported only inside a function, so `import viz` works without it
(its server runs in a process of its own; `viz.perf.formats` calls it in a child process,
`viz/perf/engine_child.py`)."""

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Modules viz imports that come with a listed dependency, not listed themselves.
COMES_WITH = {"packaging": "transformers", "tokenizers": "transformers"}
# Import name → distribution name, where they differ.
DISTRIBUTION = {"llama_cpp": "llama-cpp-python[server]", "pynvml": "nvidia-ml-py"}


def requirement(line: str) -> tuple[str, str]:
    m = re.match(r"\s*([A-Za-z0-9_.\-]+(?:\[[^\]]*\])?)\s*([<>=!~].*)?$", line)
    assert m, f"not a requirement: {line!r}"
    return m.group(1).lower(), (m.group(2) or "").replace(" ", "")


def requirements_txt(name: str = "requirements.txt") -> dict[str, str]:
    out = {}
    for raw in (ROOT / name).read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            k, v = requirement(line)
            out[k] = v
    return out


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_pyproject_agrees_with_requirements():
    req = {**requirements_txt(), **requirements_txt("requirements-engines.txt")}
    project = pyproject()
    listed = {}
    extras = project["optional-dependencies"]
    for line in extras.pop("gpu"):  # GPU machines only: not in requirements.txt, still bounded
        k, v = requirement(line)
        assert k not in req and ">=" in v and "<" in v, f"{k}: give it a bounded range ({v!r})"
    for line in project["dependencies"] + [d for extra in extras.values() for d in extra]:
        k, v = requirement(line)
        assert req.get(k) == v, f"{k}: pyproject says {v!r}, requirements.txt {req.get(k)!r}"
        listed[k] = v
    assert set(req) <= set(listed), f"in requirements.txt only: {sorted(set(req) - set(listed))}"


def _imports(tree) -> tuple[set[str], set[str]]:
    """(modules imported at a module's top level, modules imported inside a function)."""
    top, lazy = set(), set()

    def names(node):
        if isinstance(node, ast.Import):
            return {a.name.split(".")[0] for a in node.names}
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            return {node.module.split(".")[0]}
        return set()

    def walk(node, inside):
        for child in ast.iter_child_nodes(node):
            here = inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            (lazy if here else top).update(names(child))
            walk(child, here)

    walk(tree, False)
    return top, lazy


def test_every_module_viz_imports_is_installed_by_a_dependency():
    project = pyproject()
    deps = {requirement(d)[0] for d in project["dependencies"]}
    optional = {
        requirement(d)[0]
        for group in ("engines", "gpu")
        for d in project["optional-dependencies"][group]
    }
    top, lazy = set(), set()
    for path in (ROOT / "viz").rglob("*.py"):
        t, z = _imports(ast.parse(path.read_text()))
        top |= t
        lazy |= z
    third_party = (top | lazy) - set(sys.stdlib_module_names) - {"viz"}
    assert third_party, "no import found: the scan is broken"
    assert "llama_cpp" in lazy and "llama_cpp" not in top  # the scan sees where it is imported
    for module in sorted(third_party):
        dist = COMES_WITH.get(module, DISTRIBUTION.get(module, module)).replace("_", "-")
        if dist in optional and module not in top:
            continue  # an engine or the GPU's counter, imported only where it is used
        assert dist in deps, f"viz imports {module} but pyproject's dependencies lack {dist}"


def test_the_set_up_byte_compiled_the_installed_modules():
    """`make setup` installs with `pip --no-compile` and byte-compiles every installed module
    itself, beside the model's set-up (the Makefile's PYC). Without it, a Python started with
    PYTHONDONTWRITEBYTECODE=1 (set where these tests were written, and in many containers)
    compiles torch and transformers again at every start: 14.7 s instead of 7.8 s to import
    torch, transformers, Jupyter and the plotting modules, measured. A module nothing here
    imports proves that the step ran, not an import."""
    import importlib.util
    import sysconfig

    purelib = Path(sysconfig.get_path("purelib"))
    for source in [
        purelib / "torch" / "__init__.py",
        purelib / "transformers" / "models" / "bert" / "modeling_bert.py",
    ]:
        assert source.is_file(), f"{source} is not installed"
        compiled = Path(importlib.util.cache_from_source(str(source)))
        assert compiled.is_file(), (
            f"{source.relative_to(purelib)} was never byte-compiled ({compiled.name} missing): "
            "run `make setup` (its byte-compiling step), or `python -m compileall` over "
            f"{purelib}"
        )
