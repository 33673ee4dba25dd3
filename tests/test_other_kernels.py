"""The saved notebooks pass nbval under another CPU's kernels (issue 29 item 3).

`make test-other-kernels` re-runs the lessons whose compared outputs are computed, not timed,
with torch's plainest kernels standing in for another CPU (the Makefile says which lessons and
which kernels: its one home), and nbval compares them with the notebooks saved natively. This
test runs that very target, so that `make test` runs it beside the lessons in the browser (on
the other pytest-xdist worker) instead of after everything else: the same check, about two
minutes less of waiting.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

ROOT = __import__("tools.course", fromlist=["ROOT"]).ROOT
TIMEOUT_S = 1200  # ~2 minutes alone on 2 cores; beside the browser's lessons, more

pytestmark = pytest.mark.slow


def test_saved_notebooks_pass_nbval_under_other_kernels():
    # the child is a pytest of its own: nothing of this run's workers or measurements
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "VIZ_MEASURE_DIR", "MAKE"))}
    proc = subprocess.Popen(["make", "--no-print-directory", "test-other-kernels"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"make test-other-kernels ran over {TIMEOUT_S} s:\n{out[-4000:]}")
    assert proc.returncode == 0, f"make test-other-kernels failed:\n{out[-8000:]}"
    # the kernels were the other ones, and every lesson's cells were compared
    assert "torch's kernels: DEFAULT" in out, out[-2000:]
    summary = re.findall(r"=+ (.*) in [\d.]+s", out)
    assert summary and "failed" not in summary[-1] and "error" not in summary[-1], out[-3000:]
    passed = int(re.search(r"(\d+) passed", summary[-1]).group(1))
    assert passed >= 100, summary[-1]  # five lessons' cells (148 on 2026-12-05)
    print(summary[-1])
