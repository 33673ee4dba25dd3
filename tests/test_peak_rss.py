"""tools.course.PeakRSS: a kernel's peak memory with what it starts (the lessons' memory budget,
`make notebooks`, nbval and the browser test all read it).

Each case waits for a handshake, not for a fixed time: the process under the meter says when its
child holds its memory (or has been forked), and the test then waits until the meter has sampled
that state, so a busy machine makes the test slower, never wrong."""

import subprocess
import sys
import time

import psutil
import pytest

from tools.course import PeakRSS

MB = 2**20

# A process that holds `hold` MiB, then either runs a program of its own that holds `child` MiB
# (exec) or forks a child that holds nothing new (fork: it shares the parent's pages). Either child
# prints "held" once in that state and keeps it until its standard input closes.
PARENT = """
import os, subprocess, sys
hold, child, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
kept = bytearray(os.urandom(1)) * (hold * 2**20)  # written, so resident
print("ready", flush=True)
sys.stdin.readline()
if how == "exec":
    code = f"import sys; k = bytearray(b'x') * ({child} * 2**20); print('held', flush=True); sys.stdin.read()"
    subprocess.run([sys.executable, "-c", code])
else:
    pid = os.fork()
    if pid == 0:
        print("held", flush=True)
        sys.stdin.read()
        os._exit(0)
    os.waitpid(pid, 0)
"""


def peak_while(how: str, hold: int, child: int = 0, enough: int = 0) -> tuple[int, int]:
    """(the parent's own resident size once ready, PeakRSS's peak while the child held its state).

    After "held", waits for at least 5 samples, and then up to 60 s more until the meter has seen
    `enough` bytes above `alone` (a meter that never counts the child fails the caller's assert
    after that wait)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(hold), str(child), how],
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
        assert proc.stdout.readline().strip() == "held"
        first = meter.samples
        deadline = time.monotonic() + 60
        while meter.samples < first + 5 or (
            meter.sampled < alone + enough and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        peak = meter.stop()
        proc.stdin.close()  # the child and its parent both end
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    return alone, peak


def test_a_program_the_kernel_starts_is_counted():
    alone, peak = peak_while("exec", hold=100, child=300, enough=250 * MB)
    assert peak >= alone + 250 * MB, (alone // MB, peak // MB)


def test_a_forked_child_is_not_its_parents_memory_twice():
    alone, peak = peak_while("fork", hold=300)
    assert peak < alone + 100 * MB, (alone // MB, peak // MB)


def test_bad_pid_is_an_error():
    with pytest.raises(psutil.NoSuchProcess, match="process no longer exists|not found"):
        PeakRSS(2**22 + 12345)
