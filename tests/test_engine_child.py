"""llama.cpp in a child process (viz.perf.engine_child): a native crash there is an EngineCrash
here, naming the signal, the engine, what it was doing and the fix; this process lives on.

The crashes are made on purpose by the child's test hook (FAULT_ENV, set with monkeypatch),
before the child loads llama.cpp: each test costs one child start (~0.1 s), no model."""

import ast
import signal
import time
from pathlib import Path

import pytest

from viz.perf import engine_child
from viz.perf.engine_child import FAULT_ENV, EngineCrash
from viz.perf.formats import gguf_file, llama_greedy

ENGINE = r"llama\.cpp \(llama-cpp-python [0-9][0-9.]*\)"
FIX = (
    r"rebuild it for this CPU with `make engines` \(tools/engines\.py builds llama\.cpp "
    r"without -march=native and without AMX\)"
)


def test_a_child_that_dies_of_sigill_is_an_engine_crash_naming_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv(FAULT_ENV, "SIGILL")
    with pytest.raises(
        EngineCrash,
        match=rf"^{ENGINE} died of SIGILL \(illegal instruction\) "
        rf"while decoding x\.F16\.gguf\. .*{FIX}\.$",
    ) as e:
        llama_greedy(tmp_path / "x.F16.gguf", [1, 2, 3], 3, repeats=1)
    assert e.value.signal_name == "SIGILL" and e.value.returncode == -signal.SIGILL
    assert e.value.summary.endswith("while decoding x.F16.gguf.") and not e.value.timed_out
    # the quantizer too: and the file it was writing is not left half-made
    source = tmp_path / "m.Q4_1.gguf"
    source.write_bytes(b"GGUF")
    with pytest.raises(
        EngineCrash,
        match=r"died of SIGILL \(illegal instruction\) while "
        r"writing m\.F16\.gguf \(F16\) from m\.Q4_1\.gguf",
    ):
        gguf_file("F16", source=str(source), folder=str(tmp_path / "out"))
    assert list((tmp_path / "out").iterdir()) == []


def test_sigkill_points_at_memory_first(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "SIGKILL")
    with pytest.raises(
        EngineCrash,
        match=rf"died of SIGKILL \(killed\) while decoding a\.gguf\. "
        rf"Most likely the system ran out of memory.*{FIX}",
    ):
        engine_child.call("greedy", {}, doing="decoding a.gguf")


def test_a_non_zero_exit_quotes_the_childs_last_lines(monkeypatch, tmp_path):
    monkeypatch.setenv(FAULT_ENV, "3")
    with pytest.raises(
        EngineCrash,
        match=rf"^{ENGINE} exited with code 3 while decoding a\.gguf"
        rf"\. .*{FIX}",
    ) as e:
        engine_child.call("greedy", {}, doing="decoding a.gguf")
    assert e.value.returncode == 3 and e.value.signal_name == ""
    # a Python error in the child (llama-cpp-python refusing a missing file): its last line
    # says why, in the first sentence, and the traceback's end follows
    monkeypatch.delenv(FAULT_ENV)
    with pytest.raises(
        EngineCrash,
        match=r"exited with code 1 while decoding none\.gguf: "
        r"ValueError: Model path does not exist: .*none\.gguf"
        r"\. (.|\n)*Its last lines on stderr:\n    ",
    ) as e:
        llama_greedy(tmp_path / "none.gguf", [1, 2], 3, repeats=1)
    assert "Traceback" not in e.value.summary and len(e.value.stderr_tail.splitlines()) <= 8


def test_a_hung_child_is_stopped_at_its_timeout(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "hang")
    t0 = time.perf_counter()
    with pytest.raises(
        EngineCrash,
        match=rf"^{ENGINE} ran past its timeout \(timeout_s=0\.5 s\) "
        rf"while decoding a\.gguf\. .*larger timeout_s",
    ) as e:
        engine_child.call("greedy", {}, doing="decoding a.gguf", timeout_s=0.5)
    assert e.value.timed_out and time.perf_counter() - t0 < 10
    with pytest.raises(ValueError, match="timeout_s must be a positive number of seconds"):
        engine_child.call("greedy", {}, doing="decoding a.gguf", timeout_s=0)


def test_only_the_child_ever_imports_llama_cpp():
    # "every call into llama.cpp runs in a child": no module of viz but engine_child imports
    # llama_cpp, and engine_child only inside the functions its child runs
    root = Path(engine_child.__file__).resolve().parents[1]
    importers = {}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.split(".")[0] == "llama_cpp" for n in names):
                importers.setdefault(path.relative_to(root).as_posix(), []).append(node.lineno)
    assert list(importers) == ["perf/engine_child.py"], importers
    child = ast.parse(Path(engine_child.__file__).read_text())
    top = [n for n in child.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any("llama_cpp" in ast.dump(n) for n in top)
