"""The saved notebooks pass nbval under another CPU's kernels (tools/other_kernels.py).

`make test` runs this on the pytest-xdist worker that is free while the browser test runs the
lessons on the other (tests/conftest.py puts it last there): the same check as
`make test-other-kernels`, which ran after everything else and added its minutes to the run.
At the lowest priority (nice 19) it takes only the CPU the lessons leave idle.
"""

import os
import re
import subprocess
import sys

import pytest
from serve_support import gone

from tools import course, other_kernels

NICE = 19  # beside the browser's lessons: only the CPU they leave idle (tools/other_kernels.run)


def test_the_environment_asks_for_the_plainest_kernels(tmp_path):
    env = other_kernels.environment(
        str(tmp_path), base={"PATH": os.environ["PATH"], "PYTEST_X": "1"}
    )
    assert {k: env[k] for k in other_kernels.OTHER_KERNELS} == other_kernels.OTHER_KERNELS
    assert env["VIZ_MEASURE_DIR"] == str(tmp_path)
    assert "PYTEST_X" not in env  # the child is a pytest of its own
    assert other_kernels.kernel_level(env) == "DEFAULT"


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
def test_saved_notebooks_pass_nbval_with_other_kernels():
    done = other_kernels.run(["--durations=5"], capture=True, nice=NICE)
    tail = done.stdout[-6000:]
    print(tail)
    assert done.returncode == 0, f"nbval with torch's plainest kernels failed:\n{tail}"
    assert re.search(r"\b\d+ passed", tail) and " failed" not in tail, tail


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
