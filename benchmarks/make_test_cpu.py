"""Where `make test`'s CPU time goes, by role, and what it needs on a slower machine.

Runs a command (default: `make test`) and, once a second, reads every process's CPU time from
/proc (Linux only). Each process is given one role when it is first seen (again if it then
runs another program), from its command line and its parents':

- set-up: everything started before the first pytest process (venv, pip, byte-compiling, the
  default model, optimum-quanto's kernel, ruff);
- the Binder emulation (tests/test_binder.py builds an image in a folder named binder-build);
- notebook kernels, and everything a kernel starts (the lessons' servers);
- Chromium (the browser tests), Playwright's driver, the JupyterLab server;
- servers and engines the tests start, compilers (torch.compile, optimum-quanto), the pytest
  processes themselves, and anything else the command started;
- not this command: processes that were running before it, or are not its descendants.

The machine's own count of busy CPU time (/proc/stat, every process and the kernel's own work)
is read at the start and the end; what the one-second samples missed (processes that lived
less than a second, the kernel's work) is printed as its own row, so the rows add up to it.

A machine with the same number of cores at half the speed needs about twice the CPU time;
when the CPU is the limit (utilisation near 100 %), its wall time is at least
2 × (the command's CPU time) ÷ cores. The last lines print that, and how much CPU time a wall
time target there allows here.

    python3 benchmarks/make_test_cpu.py                   # make test, ~15 min here
    python3 benchmarks/make_test_cpu.py --json artifacts/make-test-cpu.json -- .ci/run
    python3 benchmarks/make_test_cpu.py --target-min 15 -- make test-fast

Standard library only: it runs before the set-up it measures. A benchmark, not a test: it
prints, and fails only when the command fails (its exit status is the command's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

SETUP = "set-up and lint (venv, pip, byte-compiling, model, kernel build, ruff)"
BINDER = "Binder emulation (its pip, postBuild, kernel, server)"
KERNELS = "notebook kernels and what they start (the lessons)"
CHROMIUM = "Chromium (browser tests)"
DRIVER = "Playwright driver"
LAB = "JupyterLab server"
SERVERS = "servers and engines started by tests"
COMPILERS = "compilers (torch.compile, C++ builds)"
PYTEST = "pytest processes (the tests themselves)"
OTHER = "other processes of the command"
NOT_OURS = "not this command (other programs on the machine)"
MISSED = "not seen by the samples (short processes, the kernel's own work)"


# Set in the command's environment: a process that carries it is the command's even when its
# parent is gone before the first sample sees it (reparented to init).
MARKER = "VIZ_CPU_SAMPLED_RUN"


@dataclass
class Proc:
    pid: int
    ppid: int
    cmd: str
    env_home: str = ""


def role(proc: Proc, ancestors: list[Proc], pytest_started: bool) -> str:
    """The role of a process of the command, from its command line and its ancestors' (nearest
    first). Pure: the samples below gather what it needs."""
    chain = [proc, *ancestors]
    if any("binder-build" in p.cmd or "binder-build" in p.env_home for p in chain):
        return BINDER
    if not pytest_started:
        return SETUP
    if any("ipykernel" in p.cmd for p in chain):
        return KERNELS
    cmd = proc.cmd
    if "chrom" in cmd or "headless_shell" in cmd:
        return CHROMIUM
    if "playwright" in cmd and "node" in cmd:
        return DRIVER
    if "jupyter" in cmd and ("lab" in cmd or "server" in cmd):
        return LAB
    name = Path(cmd.split(" ", 1)[0]).name
    if name in ("cc1plus", "cc1", "gcc", "g++", "c++", "cc", "as", "ld", "collect2", "ninja"):
        return COMPILERS
    if any(w in cmd for w in ("viz.serve", " serve ", "llama_cpp", "engine_child", "llama-server")):
        return SERVERS
    if "pytest" in cmd or "exec(eval(" in cmd:  # pytest, and pytest-xdist's workers
        return PYTEST
    return OTHER


def busy_ticks() -> int:
    """The machine's busy CPU time so far, in clock ticks: /proc/stat's first line, without
    idle, iowait and steal (time the hypervisor gave to other machines); guest time is
    already inside user time."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return user + nice + system + irq + softirq


def _read(pid: str) -> Optional[tuple[int, int, float, str]]:
    """(ppid, start time, CPU seconds, command line) of a process, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cmd = (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return None
    cpu = (int(stat[11]) + int(stat[12])) / TICK  # utime + stime
    return int(stat[1]), int(stat[19]), cpu, cmd.strip()


def _environ(pid: int, marker: bytes) -> tuple[str, bool]:
    """(HOME, whether it carries `marker`) of a process's environment; read once per program
    a process runs, not at every sample."""
    home, marked = "", False
    try:
        for var in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if var.startswith(b"HOME="):
                home = var[5:].decode(errors="replace")
            marked = marked or bool(marker and var == marker)
    except OSError:
        pass
    return home, marked


@dataclass
class Sampler:
    """Samples /proc every `every_s` seconds in a thread; `roles()` sums the CPU by role."""

    root_pid: int
    every_s: float = 1.0
    marker: str = ""  # MARKER=value in the command's environment
    # (pid, start) -> [role, CPU s, CPU s not the command's, command line]
    seen: dict = field(default_factory=dict)
    procs: dict = field(default_factory=dict)  # pid -> Proc (the latest process of that pid)
    pytest_started: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)

    def _ancestors(self, ppid: int) -> Optional[list[Proc]]:
        """The process's ancestors, nearest first, up to the command; None if not its own."""
        out: list[Proc] = []
        while ppid not in (0, 1) and len(out) < 64:
            if ppid == self.root_pid:
                return out + [self.procs[ppid]] if ppid in self.procs else out
            parent = self.procs.get(ppid)
            if parent is None:
                return None
            out.append(parent)
            ppid = parent.ppid
        return None

    def sample(self) -> None:
        found = {}
        for pid in os.listdir("/proc"):
            if pid.isdigit() and (info := _read(pid)) is not None:
                found[int(pid)] = info
        marker = f"{MARKER}={self.marker}".encode() if self.marker else b""
        # a new process, or one that has since run another program (fork, then exec: until the
        # exec it shows its parent's command line): its environment, then its role
        fresh = []
        for pid, (ppid, start, _cpu, cmd) in found.items():
            known = self.seen.get((pid, start))
            if known is None or (cmd and cmd != known[3]):
                home, marked = _environ(pid, marker)
                fresh.append((pid, marked))
            else:  # seen before, so self.procs holds it
                home = self.procs[pid].env_home
            self.procs[pid] = Proc(pid, ppid, cmd, home)
        # parents before children: a child's role needs its parents known
        for pid, marked in sorted(fresh, key=lambda pm: found[pm[0]][1]):
            ppid, start, cpu, cmd = found[pid]
            known = self.seen.get((pid, start))
            if known is None:
                kind, base = self._classify(pid, ppid, cpu, cmd, marked)
                self.seen[(pid, start)] = [kind, cpu, base, cmd]
            else:
                if known[0] != NOT_OURS:  # another program of the command's: another role?
                    known[0] = self._classify(pid, ppid, cpu, cmd, marked)[0]
                known[3] = cmd
        for pid, (_ppid, start, cpu, _cmd) in found.items():
            known = self.seen[(pid, start)]
            known[1] = max(known[1], cpu)

    def _classify(self, pid: int, ppid: int, cpu: float, cmd: str, marked: bool):
        """(role, CPU time not to count) of a process seen with this command line."""
        if not cmd:
            return None, 0.0  # a kernel thread, or a process already gone: the remainder
        # the command itself (`make test`, or pytest run directly) has no ancestors of its own
        ancestors = [] if pid == self.root_pid else self._ancestors(ppid)
        if ancestors is None and marked:
            ancestors = []  # the command's, its parents gone
        if ancestors is None:
            return NOT_OURS, cpu  # what it used before this first sight is not the command's
        if "pytest" in cmd or "exec(eval(" in cmd:
            self.pytest_started = True
        return role(self.procs[pid], ancestors, self.pytest_started), 0.0

    def run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()

    def roles(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for kind, cpu, base, _cmd in self.seen.values():
            if kind is not None:
                out[kind] = out.get(kind, 0.0) + cpu - base
        return out


def measure(command: list[str], every_s: float = 1.0) -> dict:
    """Run `command`, sampling; the report as a dict (see `report_lines`)."""
    token = f"{os.getpid()}-{time.time_ns()}"
    busy0, t0 = busy_ticks(), time.monotonic()
    try:
        child = subprocess.Popen(command, env={**os.environ, MARKER: token})
    except OSError as e:  # not found, not executable
        raise SystemExit(
            f"error: cannot run {' '.join(command)!r} ({e.strerror}): name a command this "
            "shell finds, e.g. `-- make test` or `-- .ci/run` from the repository's root"
        ) from None
    sampler = Sampler(child.pid, every_s, token)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    try:
        rc = child.wait()
    except KeyboardInterrupt:
        child.terminate()
        rc = child.wait()
    sampler.sample()
    sampler.stop()
    thread.join()
    wall, busy = time.monotonic() - t0, (busy_ticks() - busy0) / TICK
    by_role = sampler.roles()
    seen_total = sum(by_role.values())
    return {
        "command": " ".join(command),
        "returncode": rc,
        "wall_s": round(wall, 1),
        "cores": os.cpu_count(),
        "busy_cpu_s": round(busy, 1),
        "by_role": {k: round(v, 1) for k, v in sorted(by_role.items(), key=lambda kv: -kv[1])},
        "missed_s": round(max(busy - seen_total, 0.0), 1),
    }


def report_lines(r: dict, target_min: float = 15.0, slower: float = 2.0) -> list[str]:
    """The printed report: CPU by role, the total, and what a slower machine needs."""
    ours = r["busy_cpu_s"] - r["by_role"].get(NOT_OURS, 0.0)
    lines = [
        f"{r['command']}: exit {r['returncode']}, {r['wall_s']:.0f} s wall on "
        f"{r['cores']} cores; the machine was busy {r['busy_cpu_s']:.0f} core-seconds "
        f"({r['busy_cpu_s'] / (r['wall_s'] * r['cores']):.0%} of what it had)"
    ]
    rows = [*r["by_role"].items(), (MISSED, r["missed_s"])]
    for k, v in sorted(rows, key=lambda kv: -kv[1]):
        lines.append(f"  {v:8.0f} core-s  {v / r['busy_cpu_s']:5.1%}  {k}")
    need = slower * ours / r["cores"]
    allowed = target_min * 60 * r["cores"] / slower
    lines += [
        f"the command's CPU time (all but '{NOT_OURS}'; the unseen remainder counted as its "
        f"own): {ours:.0f} core-seconds",
        f"on {r['cores']} cores {slower:g}× slower, with the CPU the limit: at least "
        f"{need:.0f} s ({need / 60:.1f} min) of wall time",
        f"a {target_min:g}-minute target there allows {allowed:.0f} core-seconds here: "
        f"{ours / allowed:.2f}× that now",
    ]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", nargs="*", default=["make", "test"], help="default: make test")
    ap.add_argument("--json", type=Path, help="also write the report here (JSON)")
    ap.add_argument("--target-min", type=float, default=15.0, help="wall-time target (minutes)")
    ap.add_argument("--slower", type=float, default=2.0, help="how much slower the machine is")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    a = ap.parse_args()
    if not Path("/proc/stat").is_file():
        sys.exit("error: this benchmark reads /proc (Linux); run it on a Linux machine")
    if a.target_min <= 0 or a.slower <= 0 or a.every <= 0:
        sys.exit("error: --target-min, --slower and --every must be above 0")
    r = measure(a.command, a.every)
    print("\n".join(report_lines(r, a.target_min, a.slower)))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        tmp = a.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(r, indent=1))
        os.replace(tmp, a.json)
    return r["returncode"]


if __name__ == "__main__":
    sys.exit(main())
