"""`pip install .` installs what viz needs: pyproject.toml's dependencies agree with
requirements.txt and requirements-engines.txt (same ranges), together they list every line of
them, and every third-party module viz imports is installed by a dependency (llama.cpp runs in
a process of its own: viz never imports it)."""

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Modules viz imports that come with a listed dependency, not listed themselves.
COMES_WITH = {"packaging": "transformers", "tokenizers": "transformers"}
# Import name → distribution name, where they differ.
DISTRIBUTION = {}


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
    for line in project["dependencies"] + [d for extra in project["optional-dependencies"].values()
                                           for d in extra]:
        k, v = requirement(line)
        assert req.get(k) == v, f"{k}: pyproject says {v!r}, requirements.txt {req.get(k)!r}"
        listed[k] = v
    assert set(req) <= set(listed), f"in requirements.txt only: {sorted(set(req) - set(listed))}"


def test_every_module_viz_imports_is_installed_by_a_dependency():
    deps = {requirement(d)[0] for d in pyproject()["dependencies"]}
    imported = set()
    for path in (ROOT / "viz").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"viz"}
    assert third_party, "no import found: the scan is broken"
    for module in sorted(third_party):
        dist = COMES_WITH.get(module, DISTRIBUTION.get(module, module)).replace("_", "-")
        assert dist in deps, f"viz imports {module} but pyproject's dependencies lack {dist}"
