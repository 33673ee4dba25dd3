"""benchmarks/make_test_cpu.py: where a command's CPU time goes, by role (Linux /proc)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "make_test_cpu", ROOT / "benchmarks/make_test_cpu.py"
)
mtc = importlib.util.module_from_spec(_spec)
sys.modules["make_test_cpu"] = mtc
_spec.loader.exec_module(mtc)

needs_proc = pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="reads Linux's /proc")


def P(cmd: str, home: str = "/root") -> "mtc.Proc":
    return mtc.Proc(pid=0, ppid=0, cmd=cmd, env_home=home)


KERNEL = P("/repo/.venv/bin/python -m ipykernel_launcher -f /tmp/kernel-1.json")
WORKER = P("/repo/.venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))")
LAB = P("/repo/.venv/bin/python /repo/.venv/bin/jupyter-lab --no-browser --port 41235")


@pytest.mark.parametrize(
    "proc, ancestors, started, want",
    [
        (P("/repo/.venv/bin/python -m pip install -r requirements.txt"), [], False, mtc.SETUP),
        (P("cc1plus -O3 quanto.cpp"), [], False, mtc.SETUP),  # optimum-quanto during set-up
        (P("python -m viz fetch-model", home="/tmp/p/binder-build0/home"), [], True, mtc.BINDER),
        (
            P("/tmp/pytest-of-root/binder-build0/venv/bin/python -m pip install"),
            [],
            True,
            mtc.BINDER,
        ),
        (P("python -m viz.serve.worker --parent-pid 9"), [KERNEL, LAB], True, mtc.KERNELS),
        (P("python -m viz.serve.worker --parent-pid 9"), [WORKER], True, mtc.SERVERS),
        (P("/usr/lib/chromium/chromium --type=renderer"), [WORKER], True, mtc.CHROMIUM),
        (
            P("/repo/.venv/lib/python3.11/site-packages/playwright/driver/node cli.js run-driver"),
            [WORKER],
            True,
            mtc.DRIVER,
        ),
        (LAB, [WORKER], True, mtc.LAB),
        (
            P("/usr/libexec/gcc/x86_64-linux-gnu/12/cc1plus -O3 kernel.cpp"),
            [WORKER],
            True,
            mtc.COMPILERS,
        ),
        (WORKER, [], True, mtc.PYTEST),
        (P("ruff check ."), [], True, mtc.OTHER),
    ],
)
def test_each_process_gets_its_role_from_itself_and_its_parents(proc, ancestors, started, want):
    assert mtc.role(proc, ancestors, started) == want


def test_the_report_adds_up_and_projects_a_slower_machine():
    """Hand-computed: 1,000 busy core-seconds, 100 of them not the command's, 2 cores, a
    machine twice as slow: the command's 900 core-s need 2 × 900 ÷ 2 = 900 s there; a 15-minute
    target there allows 15 × 60 × 2 ÷ 2 = 900 core-s here, so ×1.00."""
    r = {
        "command": "make test",
        "returncode": 0,
        "wall_s": 600.0,
        "cores": 2,
        "busy_cpu_s": 1000.0,
        "missed_s": 50.0,
        "by_role": {mtc.KERNELS: 500.0, mtc.CHROMIUM: 350.0, mtc.NOT_OURS: 100.0},
    }
    lines = mtc.report_lines(r, target_min=15, slower=2)
    assert "busy 1000 core-seconds (83% of what it had)" in lines[0]
    assert any(ln.strip().startswith("50 core-s") and mtc.MISSED in ln for ln in lines)
    assert lines[-3].endswith("900 core-seconds")
    assert "at least 900 s (15.0 min)" in lines[-2]
    assert lines[-1].endswith("allows 900 core-seconds here: 1.00× that now")


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


@needs_proc
def test_a_real_run_finds_its_processes_cpu_under_their_roles(tmp_path):
    """A command that starts a 'pytest' process burning 0.8 s of CPU, then a 'cc1plus' (a
    compiler's name, through bash's exec -a) burning 0.8 s: each is found under its role, and
    the rows stay within what the machine counted."""
    script = tmp_path / "cmd.py"
    script.write_text(
        textwrap.dedent(f"""
        import subprocess, sys
        burn = {BURN.format(s=0.8)!r}
        subprocess.run([sys.executable, "-c", "# pytest\\n" + burn], check=True)
        subprocess.run(["bash", "-c", 'exec -a cc1plus "$0" -c "$1"', sys.executable, burn],
                       check=True)
    """)
    )
    r = mtc.measure([sys.executable, str(script)], every_s=0.1)
    assert r["returncode"] == 0
    assert 0.6 <= r["by_role"][mtc.PYTEST] <= 1.2, r
    assert 0.6 <= r["by_role"][mtc.COMPILERS] <= 1.2, r
    seen = sum(v for v in r["by_role"].values())
    # the samples never find more than the machine counted (each process's time and the
    # machine's are kept by two clocks of the kernel, which differ by a few per cent)
    assert seen <= 1.1 * r["busy_cpu_s"] + 0.5, r


@needs_proc
def test_a_failing_command_keeps_its_exit_status(tmp_path):
    r = mtc.measure([sys.executable, "-c", "raise SystemExit(3)"], every_s=0.1)
    assert r["returncode"] == 3


@pytest.mark.parametrize("flag", ["--target-min", "--slower", "--every"])
def test_bad_numbers_are_refused_with_the_fix(monkeypatch, flag):
    monkeypatch.setattr(sys, "argv", ["make_test_cpu.py", flag, "0", "--", "true"])
    with pytest.raises(SystemExit, match="must be above 0"):
        mtc.main()


@needs_proc
def test_the_command_itself_gets_its_role(tmp_path):
    """pytest run directly (the command is pytest, not make): its own CPU is the tests'."""
    script = tmp_path / "pytest_stand_in.py"  # 'pytest' in its command line
    script.write_text(BURN.format(s=0.8))
    r = mtc.measure([sys.executable, str(script)], every_s=0.1)
    assert 0.6 <= r["by_role"].get(mtc.PYTEST, 0.0) <= 1.2, r


@needs_proc
def test_a_command_that_cannot_run_is_named_with_the_fix(tmp_path):
    with pytest.raises(SystemExit, match=r"cannot run 'no-such-command-x'.*-- make test"):
        mtc.measure(["no-such-command-x"])
