"""tools.course.PeakRSS: a kernel's peak memory with what it starts (the lessons' memory budget,
`make notebooks`, nbval and the browser test all read it)."""

import subprocess
import sys
import time

import psutil
import pytest

from tools.course import PeakRSS

MB = 2**20

# A process that holds `hold` MiB, then for `seconds` either runs a program of its own that holds
# `child` MiB (exec) or forks a child that only sleeps (fork: it shares the parent's pages).
PARENT = """
import os, subprocess, sys, time
hold, child, how, seconds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
kept = bytearray(os.urandom(1)) * (hold * 2**20)  # written, so resident
print("ready", flush=True)
sys.stdin.readline()
if how == "exec":
    code = f"k = bytearray(b'x') * ({child} * 2**20); import time; time.sleep({seconds})"
    subprocess.run([sys.executable, "-c", code])
else:
    pid = os.fork()
    if pid == 0:
        time.sleep(seconds)
        os._exit(0)
    os.waitpid(pid, 0)
"""


def peak_while(how: str, hold: int, child: int = 0, seconds: float = 1.5) -> tuple[int, int]:
    """(the parent's own resident size once ready, PeakRSS's peak over the run)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(hold), str(child), how, str(seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        alone = psutil.Process(proc.pid).memory_info().rss
        meter = PeakRSS(proc.pid, every_s=0.01)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        deadline = time.monotonic() + seconds / 2
        while time.monotonic() < deadline:
            time.sleep(0.05)
        peak = meter.stop()
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    return alone, peak


def test_a_program_the_kernel_starts_is_counted():
    alone, peak = peak_while("exec", hold=100, child=300)
    assert peak >= alone + 250 * MB, (alone // MB, peak // MB)


def test_a_forked_child_is_not_its_parents_memory_twice():
    alone, peak = peak_while("fork", hold=300)
    assert peak < alone + 100 * MB, (alone // MB, peak // MB)


def test_bad_pid_is_an_error():
    with pytest.raises(psutil.NoSuchProcess, match="process no longer exists|not found"):
        PeakRSS(2**22 + 12345)
