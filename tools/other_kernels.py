"""nbval over the saved notebooks with another CPU's kernels: the check that the course holds on a
machine whose float rounding differs from the one it was saved on.

torch's kernels set as another CPU's stand in for it: ATen without vector instructions (on
every x86 machine unlike its own: softmax, norms and sums round differently) and the matrix
products of oneDNN and MKL at AVX2 (what a laptop without AVX-512 runs). Until 2026-12-07 they
were at SSE4.1/SSE4.2, which no learner's machine runs and which cost more: lessons 05, 07 and
14 took 43.1, 33.1 and 48.8 s alone on a 2-core Xeon (AVX-512, no AMX), 29.5, 27.0 and 35.0 s
at AVX2 (each lesson executed alone with nbclient, from an empty folder of measurements;
natively: 24.5–32.2, 27.9 and 40.4 s). tests/test_other_kernels.py checks that they round
unlike the machine's own kernels, in the last bits only.

The lessons run are those whose compared outputs are computed, not timed; they run from an
empty folder of measurements, in a pytest of their own (the environment must be set before
torch starts in each lesson's kernel).

    python -m tools.other_kernels      # what `make test-other-kernels` runs; exit status of pytest

`make test` makes the same check without running these lessons twice: the browser test runs
them in JupyterLab with a kernel of these settings (`kernelspec`: tests/test_browser.py), and
nbval compares that run with the notebooks saved natively (tools/nbval_replay.py). It also runs
this tool on lesson 01 alone (tests/test_other_kernels.py), so that the command stays tested.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from tools.course import NBVAL_ARGS, ROOT


# Another CPU's kernels: what `make test-other-kernels` and tests/test_other_kernels.py set.
OTHER_KERNELS = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}
# The lessons whose compared outputs are computed, not timed (by number).
LESSONS = ("01", "02", "05", "07", "14")
# A Jupyter kernel with these settings (`kernelspec`), for a JupyterLab that runs LESSONS.
KERNEL_NAME = "python3-other-kernels"
KERNEL_DISPLAY_NAME = "Python 3 (another CPU's kernels)"


def notebooks(lessons: Optional[tuple[str, ...]] = None) -> list[Path]:
    """The saved notebooks of `lessons` (default LESSONS), in order; an error naming the lesson
    when one is missing."""
    found = []
    for number in LESSONS if lessons is None else lessons:
        match = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
        if not match:
            raise FileNotFoundError(
                f"no saved notebook for lesson {number} in notebooks/: run `make notebooks`"
            )
        found.append(match[0])
    return found


def environment(measure_dir: str, base: Optional[dict] = None) -> dict:
    """The environment of the run: `base` (default os.environ) with the other kernels and an
    empty folder of measurements (the lessons measure this machine again, with these kernels)."""
    env = dict(os.environ if base is None else base)
    for name in [k for k in env if k.startswith("PYTEST_")]:  # a pytest of its own
        del env[name]
    env.update(OTHER_KERNELS)
    env["VIZ_MEASURE_DIR"] = measure_dir
    env.pop("VIZ_KEEP_MEASUREMENTS", None)
    return env


def kernelspec(python: str, measure_dir: str) -> dict:
    """A Jupyter kernelspec (kernel.json) that runs `python` with the other kernels and a
    folder of measurements of its own, as `environment` sets them for nbval (a Jupyter server
    adds this env to its own for the kernel)."""
    return {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL_DISPLAY_NAME,
        "language": "python",
        "env": environment(measure_dir, base={}),  # only what the run sets on top
    }


def missing(environ: dict) -> dict:
    """The settings of OTHER_KERNELS that a process's environment lacks (name: its value)."""
    return {k: environ.get(k) for k, v in OTHER_KERNELS.items() if environ.get(k) != v}


def python_output(code: str, env: dict) -> str:
    """What `code` prints in a fresh Python process with `env` (torch reads its kernel settings
    only when it starts); an error if the process fails."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.strip()


def kernel_level(env: dict) -> str:
    """What torch reports for its kernels in a fresh process with `env` ("DEFAULT" here)."""
    return python_output("import torch; print(torch.backends.cpu.get_cpu_capability())", env)


def lower_priority(nice: int) -> None:
    """In a child before it starts (`run`'s preexec): lower its priority by `nice`, where Linux
    honours it. With autogroups (/proc/sys/kernel/sched_autogroup_enabled = 1, the default on
    many distributions) a process's nice counts only against its own session's processes;
    between sessions the CPU is shared by each session's autogroup nice. So the child starts a
    session of its own (`run` passes start_new_session) and sets both."""
    try:
        with open("/proc/self/autogroup", "w") as group:
            group.write(str(nice))
    except OSError:  # no autogroups here (macOS, a kernel without them): nice alone
        pass
    os.nice(nice)


def run(
    extra_args: Optional[list[str]] = None,
    capture: bool = False,
    timeout_s: float = 1800,
    nice: int = 0,
    lessons: Optional[tuple[str, ...]] = None,
):
    """Run nbval over `notebooks(lessons)` (default LESSONS) with the other kernels, from ROOT;
    returns the CompletedProcess (stdout and stderr together when `capture`).

    nice: the run's lower priority (its lessons' kernels inherit it). `make test` uses 19, so
    that beside the browser's lessons it takes only the CPU they leave idle (a lesson compiling
    on one thread, waiting for its server, for Chromium): run at the same priority, side by side
    on two cores, both took about twice as long."""
    with tempfile.TemporaryDirectory(prefix="viz-measurements-") as measure:
        env = environment(measure)
        print(f"torch's kernels: {kernel_level(env)}", flush=True)
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
        command += [str(p.relative_to(ROOT)) for p in notebooks(lessons)] + NBVAL_ARGS
        command += list(extra_args or [])
        return run_group(command, env, capture=capture, timeout_s=timeout_s, nice=nice)


def run_group(command: list[str], env: dict, *, capture=False, timeout_s=1800.0, nice=0):
    """Run `command` from ROOT as a session and process group of its own, `nice` lower in
    priority (`lower_priority`); on a timeout or an interrupt it and everything it started
    (the lessons' kernels) are stopped, and the error goes on."""
    import signal

    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        text=True,
        start_new_session=True,
        preexec_fn=(lambda: lower_priority(nice)) if nice else None,
        **({"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT} if capture else {}),
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except BaseException:  # a timeout, Ctrl-C: nothing of the run is left behind
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, out)


def main(argv: Optional[list[str]] = None) -> int:
    return run(["--durations=5"] + list(sys.argv[1:] if argv is None else argv)).returncode


if __name__ == "__main__":
    sys.exit(main())
