"""The saved notebooks pass nbval under another CPU's kernels (tools/other_kernels.py).

`make test` makes that check for every lesson of other_kernels.LESSONS through the browser test,
which runs them with the other kernels' kernelspec (`kernelspec`, checked below) and checks
each kernel's settings; nbval compares those runs (tools/nbval_replay.py). Here the tool that
`make test-other-kernels` runs is run end to end on lesson 01 alone, on the pytest-xdist worker
that is free while the browser test runs the lessons on the other (tests/conftest.py puts it
last there), at the lowest priority (nice 19): it takes only the CPU the lessons leave idle.
"""

import ast
import json
import os
import platform
import re
import subprocess
import sys

import pytest
from serve_support import gone

from tools import course, other_kernels

NICE = 19  # beside the browser's lessons: only the CPU they leave idle (tools/other_kernels.run)


def test_the_environment_asks_for_another_cpus_kernels(tmp_path):
    env = other_kernels.environment(
        str(tmp_path), base={"PATH": os.environ["PATH"], "PYTEST_X": "1"}
    )
    assert {k: env[k] for k in other_kernels.OTHER_KERNELS} == other_kernels.OTHER_KERNELS
    assert env["VIZ_MEASURE_DIR"] == str(tmp_path)
    assert "PYTEST_X" not in env  # the child is a pytest of its own
    assert other_kernels.kernel_level(env) == "DEFAULT"


# Softmax of a matrix product, and an RMS norm: the kinds of work a lesson's outputs come from.
ROUNDING = (
    "import torch; torch.manual_seed(0); x = torch.randn(64, 896); w = torch.randn(896, 896) / 30; "
    "y = torch.softmax(x @ w, -1); z = torch.nn.functional.rms_norm(x, (896,)); "
    "print([float(v).hex() for v in (y.sum(1)[:4].tolist() + [(x @ w).sum(), z.abs().sum()])])"
)


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="the stand-in's settings name x86 instruction sets (AVX2)",
)
def test_the_stand_in_rounds_unlike_this_machines_own_kernels(tmp_path):
    """The check proves something only if the stand-in's floats differ from the native ones
    in their last bits, as another CPU's do (a heatmap's zmax: README, 'Any machine')."""
    native = {k: v for k, v in os.environ.items() if k not in other_kernels.OTHER_KERNELS}
    other = other_kernels.environment(str(tmp_path), base=native)

    def floats(env):  # the hex strings ROUNDING prints
        return ast.literal_eval(other_kernels.python_output(ROUNDING, env))

    mine, theirs = floats(native), floats(other)
    assert len(mine) == len(theirs) == 6
    assert mine != theirs, "the stand-in rounds as this machine does: it checks nothing"
    # ... and only in the last bits: the same numbers to 4 significant digits (nbval's tolerance)
    for a, b in zip(mine, theirs):
        x, y = float.fromhex(a), float.fromhex(b)
        assert abs(x - y) <= 1e-4 * max(abs(x), abs(y)), (a, b)


def test_every_lesson_has_a_saved_notebook():
    names = [p.name.split("_")[0] for p in other_kernels.notebooks()]
    assert names == list(other_kernels.LESSONS)


def test_a_missing_notebook_names_the_fix(monkeypatch):
    monkeypatch.setattr(other_kernels, "LESSONS", ("99",))
    with pytest.raises(FileNotFoundError, match=r"lesson 99 .*make notebooks"):
        other_kernels.notebooks()


def test_the_makefile_runs_the_same_tool():
    makefile = (other_kernels.ROOT / "Makefile").read_text()
    assert "-m tools.other_kernels" in makefile
    nbval = makefile.split("NBVAL := ", 1)[1].split("\n\n", 1)[0]
    assert " ".join(course.NBVAL_ARGS) == " ".join(nbval.replace("\\\n", " ").split())


@pytest.mark.slow
def test_the_tool_passes_a_saved_notebook_with_other_kernels():
    done = other_kernels.run(["--durations=5"], capture=True, nice=NICE, lessons=("01",))
    tail = done.stdout[-6000:]
    print(tail)
    assert done.returncode == 0, f"nbval with another CPU's kernels failed:\n{tail}"
    assert re.search(r"\b\d+ passed", tail) and " failed" not in tail, tail
    assert "01_from_text_to_vectors.ipynb" in done.stdout, tail


def test_the_kernelspec_runs_another_cpus_kernels_with_measurements_of_their_own(tmp_path):
    """What the browser test installs for other_kernels.LESSONS: a Jupyter server starts the
    kernel with its own environment plus the spec's env."""
    spec = other_kernels.kernelspec(sys.executable, str(tmp_path))
    assert json.loads(json.dumps(spec)) == spec  # what kernel.json holds
    assert spec["argv"][:3] == [sys.executable, "-m", "ipykernel_launcher"]
    assert "{connection_file}" in spec["argv"]
    env = {**os.environ, **spec["env"]}
    assert other_kernels.missing(env) == {}
    assert env["VIZ_MEASURE_DIR"] == str(tmp_path)
    assert other_kernels.kernel_level(env) == "DEFAULT"


def test_a_process_without_the_settings_is_named():
    assert other_kernels.missing({}) == {k: None for k in other_kernels.OTHER_KERNELS}
    wrong = {**other_kernels.OTHER_KERNELS, "ATEN_CPU_CAPABILITY": "avx2"}
    assert other_kernels.missing(wrong) == {"ATEN_CPU_CAPABILITY": "avx2"}
    assert other_kernels.missing(dict(other_kernels.OTHER_KERNELS)) == {}


def test_the_browser_test_runs_these_lessons_with_the_kernelspec():
    """tests/test_browser.py picks the lessons of other_kernels.LESSONS, and only those."""
    import test_browser

    picked = [p.name[:2] for p in test_browser.NOTEBOOK_PATHS if test_browser.runs_plain(p)]
    assert picked == list(other_kernels.LESSONS)


def test_the_run_is_a_lower_priority_session_of_its_own():
    """What `run` starts, with nice: a session of its own (so that autogroups do not undo the
    nice), niced, its autogroup niced where there are autogroups."""
    probe = (
        "import os; g = open('/proc/self/autogroup').read().split()[-1] "
        "if os.path.exists('/proc/self/autogroup') else 'none'; "
        "print(os.getsid(0) == os.getpid(), os.nice(0), g)"
    )
    done = other_kernels.run_group(
        [sys.executable, "-c", probe], dict(os.environ), capture=True, nice=7
    )
    own_session, nice, group = done.stdout.split()
    assert (own_session, nice) == ("True", str(os.nice(0) + 7))
    assert group in ("none", "7")


def test_a_run_past_its_time_leaves_nothing_behind(tmp_path):
    """A timeout stops the run's whole group: here a child that starts a grandchild (as nbval
    starts a lesson's kernel)."""
    pid_file = tmp_path / "grandchild"
    script = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    with pytest.raises(subprocess.TimeoutExpired, match="timed out after"):
        other_kernels.run_group([sys.executable, "-c", script], dict(os.environ), timeout_s=3)
    grandchild = int(pid_file.read_text())
    assert gone(grandchild, timeout_s=5), f"the run's grandchild {grandchild} is still running"
