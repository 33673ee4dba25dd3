"""Binder: the configuration in binder/, and a build emulated without Docker.

repo2docker (what mybinder.org runs) needs Docker, which these machines lack. The emulation does
what it would do, in the same order, in a temporary folder:

1. a clean copy of the repository: the committed files (`git archive HEAD`) in CI, the working
   tree (`git ls-files` + untracked files that are not ignored) elsewhere; VIZ_BINDER_SOURCE=head
   or =worktree chooses;
2. a fresh virtual environment of the Python named in binder/runtime.txt;
3. `pip install -r binder/requirements.txt` (the CPU-wheel index line is dropped when that
   index cannot be reached, as here; the CPU build of torch then comes from pip's other sources;
   `--no-compile`: no byte-compiling of what is never imported);
4. binder/postBuild, with HOME in the temporary folder so that the model is really fetched,
   checked and cached as it would be in the image;
5. with that HOME and the network refused (loopback allowed), what depends on the image
   beyond its packages: lesson 00 under nbval (the model postBuild baked, loaded offline) with
   its peak memory (tools/nbval_memory.py), and one streaming request to `transformers serve`
   started from the image (`python -m viz request --embedded`: the second process lesson 09
   starts, on the baked model). Every lesson runs under nbval in the project's own environment
   anyway (`make test`), with the same packages: binder/requirements.txt is
   ../requirements.txt plus the CPU build of the same torch. VIZ_BINDER_LESSONS=all runs every
   lesson here too (about five more minutes).

Timings and memory figures go to artifacts/binder.json. Takes minutes: `make test-fast` skips it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import time
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import skip_or_fail
from tools import course

ROOT = course.ROOT
BINDER = ROOT / "binder"
ARTIFACTS = ROOT / "artifacts"
# The lessons run in the emulated image (see the module docstring): by number.
IMAGE_LESSONS = ("00",)


def image_lessons() -> list[Path]:
    """The notebooks the emulation runs: IMAGE_LESSONS, or all with VIZ_BINDER_LESSONS=all."""
    every = course.notebook_paths()
    if os.environ.get("VIZ_BINDER_LESSONS", "") == "all":
        return every
    chosen = [p for p in every if p.name.split("_")[0] in IMAGE_LESSONS]
    assert len(chosen) == len(IMAGE_LESSONS), f"no notebook for each of {IMAGE_LESSONS}"
    return chosen


# Refuse every network connection except to this machine (the kernels talk to nbval on
# loopback), so that the lessons are shown to run offline once the image is built.
OFFLINE_SITECUSTOMIZE = """
import socket
_connect = socket.socket.connect
def _loopback_only(self, address, *args, **kwargs):
    if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in (
            "127.0.0.1", "localhost", "::1"):
        raise OSError(f"network disabled by the Binder emulation: {address}")
    return _connect(self, address, *args, **kwargs)
socket.socket.connect = _loopback_only
"""


def requirement_lines(path: Path) -> list[str]:
    return [
        ln.split("#")[0].strip() for ln in path.read_text().splitlines() if ln.split("#")[0].strip()
    ]


# ---- the configuration ---------------------------------------------------------------------
def test_runtime_is_the_python_the_project_tests_on():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert runtime == "python-3.11", runtime
    assert (ROOT / "Makefile").read_text().count("python3.11"), "Makefile prefers another Python"


def test_requirements_take_the_cpu_build_of_torch_and_the_project():
    lines = requirement_lines(BINDER / "requirements.txt")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert "-r ../requirements.txt" in lines
    pinned = [ln for ln in requirement_lines(ROOT / "requirements.txt") if ln.startswith("torch")]
    assert len(pinned) == 1 and re.fullmatch(r"torch==[\d.]+", pinned[0]), pinned
    assert f"{pinned[0]}+cpu" in lines, f"binder/requirements.txt must pin {pinned[0]}+cpu"


def test_postbuild_stops_on_error_installs_the_project_and_bakes_the_model():
    post = BINDER / "postBuild"
    text = post.read_text()
    assert text.startswith("#!/bin/bash\n")
    assert re.search(r"^set -e", text, re.MULTILINE), "without set -e errors do not stop the build"
    assert os.access(post, os.X_OK), "postBuild must be executable (chmod +x)"
    assert re.search(r"pip install .*-e \.", text) and "viz fetch-model" in text
    start = BINDER / "start"
    if start.exists():  # optional; runs at every launch and must hand over to the server
        assert start.read_text().rstrip().endswith('exec "$@"')


def test_readme_links_open_each_lesson_on_binder():
    readme = course.README.read_text()
    for nb in course.notebook_paths():
        rel = nb.relative_to(ROOT).as_posix()
        assert course.binder_url(rel) in readme, f"README has no Binder link to {rel}"
    assert "https://mybinder.org/badge_logo.svg" in readme


# ---- the build, emulated ---------------------------------------------------------------------
def export_tree(dest: Path, source: str) -> str:
    """Copy the repository into `dest` as a fresh clone would have it; returns a description."""
    dest.mkdir(parents=True)
    git = ["git", "-C", str(ROOT)]
    if subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True).returncode != 0:
        skip_or_fail("the Binder emulation copies the repository with git; this is no git checkout")
    if source == "head":
        archive = dest.parent / "head.tar"
        subprocess.run(git + ["archive", "--format=tar", "-o", str(archive), "HEAD"], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="tar")
        archive.unlink()
        rev = subprocess.run(
            git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        return f"git archive HEAD ({rev})"
    listed = (
        subprocess.run(
            git + ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    n = 0
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the working tree is not copied
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
            n += 1
    return f"working tree ({n} files: tracked + untracked, not ignored)"


def index_reachable(url: str, timeout_s: float = 5) -> bool:
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout_s)
        return True
    except Exception:
        return False


def drop_unreachable_indexes(requirements: Path) -> list[str]:
    """Remove --extra-index-url lines whose index does not answer; returns the dropped URLs."""
    kept, dropped = [], []
    for line in requirements.read_text().splitlines():
        m = re.match(r"\s*--extra-index-url\s+(\S+)", line)
        if m and not index_reachable(m.group(1)):
            dropped.append(m.group(1))
            continue
        kept.append(line)
    requirements.write_text("\n".join(kept) + "\n")
    return dropped


# The build step that is running now (the background build's), stopped if the session ends
# before the test collects it: no pip or postBuild is left behind.
_RUNNING: list[subprocess.Popen] = []


def run(cmd, log: Path, **kwargs) -> float:
    """Run a build step, its output appended to `log`; fail with the log's tail. Returns seconds."""
    start = time.monotonic()
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(map(str, cmd))}\n")
        out.flush()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, **kwargs)
        _RUNNING.append(proc)
        try:
            proc.wait()
        finally:
            _RUNNING.remove(proc)
    if proc.returncode != 0:
        pytest.fail(
            f"`{' '.join(map(str, cmd))}` failed ({proc.returncode}):\n{log.read_text()[-5000:]}"
        )
    return time.monotonic() - start


def build_source() -> str:
    source = os.environ.get("VIZ_BINDER_SOURCE") or (
        "head" if os.environ.get("VIZ_CI") else "worktree"
    )
    assert source in ("head", "worktree"), f"VIZ_BINDER_SOURCE={source!r}: use head or worktree"
    return source


def build_image(tmp_path: Path) -> dict:
    """Steps 1-4 of the module docstring in `tmp_path`: the image, as repo2docker would build
    it. Returns where everything is and how long each step took."""
    source = build_source()
    runtime = (BINDER / "runtime.txt").read_text().strip()
    python = shutil.which(runtime.replace("-", ""))  # python-3.11 -> python3.11
    if python is None:
        skip_or_fail(f"binder/runtime.txt asks for {runtime}; no {runtime.replace('-', '')} here")

    repo, home, env_dir = tmp_path / "repo", tmp_path / "home", tmp_path / "env"
    log = tmp_path / "build.log"
    home.mkdir()
    copied = export_tree(repo, source)
    for needed in ("binder/requirements.txt", "binder/postBuild", "binder/runtime.txt"):
        assert (repo / needed).is_file(), f"{needed} is not in the {copied}: commit it"
    dropped = drop_unreachable_indexes(repo / "binder" / "requirements.txt")
    times = {}

    # A fresh environment of the runtime's Python, then binder/requirements.txt.
    times["venv_s"] = run([python, "-m", "venv", str(env_dir)], log)
    py = env_dir / "bin" / "python"
    times["pip_install_s"] = run(
        [
            py,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            # pip byte-compiles every module it installs (torch's thousands too): half this
            # step's CPU (a fresh venv here: 74.7 CPU-s with, 37.9 without), and nothing the
            # image is checked for; what the lesson and the server import compiles on import.
            "--no-compile",
            "-r",
            "binder/requirements.txt",
        ],
        log,
        cwd=repo,
    )

    # postBuild, as repo2docker runs it: from the repository root, the environment first on
    # PATH, HOME in the image (here a new folder, so nothing is cached yet).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIZ_CACHE_DIR", "JUPYTER", "VIRTUAL_ENV", "PYTHONPATH"))
    }
    env.update(HOME=str(home), PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}")
    (repo / "binder" / "postBuild").chmod(0o755)
    times["postbuild_s"] = run(["./binder/postBuild"], log, cwd=repo, env=env)
    return {
        "repo": repo,
        "home": home,
        "py": py,
        "env": env,
        "log": log,
        "copied": copied,
        "dropped": dropped,
        "python": python,
        "times": times,
    }


# The build runs in the background from the start of the session (`start_build`, called by
# tests/conftest.py), while the quick tests run: it waits on pip and the disk and uses about
# one core, for minutes. Its test runs last and collects it.
_BUILD: dict[str, Future] = {}


def start_build(tmp_path: Path) -> None:
    tmp_path.mkdir(parents=True, exist_ok=True)  # the test's own tmp_path / "build" is new
    if "image" not in _BUILD:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="binder-build")
        _BUILD["image"] = pool.submit(build_image, tmp_path)
        pool.shutdown(wait=False)


def stop_build() -> None:
    """End of the session: stop a build step still running (the test was never reached)."""
    for proc in list(_RUNNING):
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    if "image" in _BUILD:
        try:
            _BUILD["image"].exception()  # let the thread finish (its step was stopped)
        finally:
            _BUILD.clear()


@pytest.mark.slow
def test_binder_build_emulated(tmp_path):
    if "image" not in _BUILD:  # run on its own (pytest -k binder): build now
        start_build(tmp_path / "build")
    built = _BUILD["image"].result()  # re-raises the build's failure or skip
    repo, home, py, env, log = (built[k] for k in ("repo", "home", "py", "env", "log"))
    times, copied, dropped, python = (built[k] for k in ("times", "copied", "dropped", "python"))

    check = (
        "import viz, viz.default_model as d; from pathlib import Path; "
        "assert Path(viz.__file__).resolve().is_relative_to(Path.cwd()), viz.__file__; "
        "assert d.read_converted(d.converted_dir(d.GGUF_SHA256)), 'model not cached'; "
        "print('model cached in', d.cache_dir())"
    )
    run([py, "-c", check], log, cwd=repo, env=env)
    cache = home / ".cache" / "llm-inference-viz"
    assert cache.is_dir(), f"postBuild left no model cache in {cache}"

    # The lessons under nbval, offline, in the built environment.
    offline = tmp_path / "offline"
    offline.mkdir()
    (offline / "sitecustomize.py").write_text(OFFLINE_SITECUSTOMIZE)
    memory_json = tmp_path / "peak-memory.json"
    lessons = image_lessons()
    nbval = [
        py,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        *[str(p.relative_to(ROOT)) for p in lessons],
        *course.NBVAL_ARGS,
        f"--peak-memory-json={memory_json}",
    ]
    times["nbval_s"] = run(nbval, log, cwd=repo, env=dict(env, PYTHONPATH=str(offline)))

    # The server lesson 09 starts, from the image, offline: one streaming request.
    answer = tmp_path / "request.json"
    times["server_request_s"] = run(
        [py, "-m", "viz", "request", "Hi", "--embedded", "--max-tokens", "4", "-o", str(answer)],
        log,
        cwd=repo,
        env=dict(env, PYTHONPATH=str(offline)),
    )
    request = json.loads(answer.read_text())["request"]
    assert request["error"] is None and request["output_tokens"] == 4, request
    assert len(request["token_times_s"]) == 4 and "".join(request["token_texts"]).strip()

    figures = {
        "source": copied,
        "dropped_indexes": dropped,
        "python": python,
        **{k: round(v, 1) for k, v in times.items()},
        "image_cache_bytes": sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()),
        "peak_rss_mib": {
            k: round(v / 2**20) for k, v in json.loads(memory_json.read_text()).items()
        },
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "binder.json").write_text(json.dumps(figures, indent=1) + "\n")
    shutil.copy(log, ARTIFACTS / "binder-build.log")
    print(json.dumps(figures, indent=1))
    assert set(figures["peak_rss_mib"]) == {p.name for p in lessons}
