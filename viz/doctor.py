"""`python -m viz doctor`: a check of the machine you are on, before a lesson meets a failure.

Like `flutter doctor` or `brew doctor`: one command, one line per check, each saying OK with the
figure found, or WARN / FAIL with what is wrong and, on the next line, the fix:

    OK   cpu          Intel(R) Xeon(R) ...; features avx2 fma ...; torch's kernels AVX512
    WARN chromium     no Chromium or Chrome found (optional: only the browser test needs it)
         fix: `sudo make browser` (Debian/Ubuntu), or set VIZ_CHROMIUM=/path/to/chrome

The checks, in order (`CHECKS`): the CPU and the threads torch uses, memory, the default model
in the cache, loading it and recording two tokens, llama.cpp (optional), Chromium (optional),
the viz cache with this machine's cached peaks and fixed cost, then Python, torch and
transformers against the project's pins.

**What counts as a failure.** FAIL: something a lesson needs is missing or broken (the model,
its load, a record, a package outside the pins, a llama.cpp build that would crash). WARN:
it works, with a caveat (little free memory, an instruction-set override, stale measurements),
or an optional part is missing: llama.cpp (not installed on Binder; only lesson 09's second
engine and the formats comparison use it) and Chromium (only the browser test uses it).
The exit status is 1 when any check FAILs, else 0.

**Quick and offline.** Doctor never reaches the network and never measures: it reads the
cached peaks and fixed cost, it does not make them. It takes a few seconds plus one model load.
llama.cpp is only ever imported in a child process (`probe_llamacpp`): a build for another CPU
can die with SIGILL, and the doctor must live to say so.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence, TextIO

from viz.provenance import parse_utc, shown_utc


OK, WARN, FAIL = "OK", "WARN", "FAIL"

# A lesson's kernel may peak at this much memory: the same figure as tools/course.py's
# MEMORY_BUDGET_BYTES (tests/test_doctor.py keeps the two in step); a Binder session has ~2 GB.
LESSON_MEMORY_BUDGET_BYTES = 1_650_000_000  # = tools.course.MEMORY_BUDGET_BYTES (a test checks)
BINDER_MEMORY_BYTES = 2_000_000_000
# Less available than this: a WARN (a lesson's kernel, the browser and the OS need room).
LOW_MEMORY_BYTES = 2_500_000_000
# Cached measurements older than this are called stale (the machine may have changed since).
STALE_DAYS = 90
# The llama.cpp child process: its import, the Q4_1 file's load and a few tokens.
LLAMACPP_TIMEOUT_S = 60.0
LLAMACPP_PROMPT, LLAMACPP_TOKENS = "The capital of France is", 4

FETCH_FIX = "run `make model` (or `python -m viz fetch-model`): it downloads the model once"
ENGINES_FIX = "rebuild it for this CPU with `make engines`"
REFRESH_FIX = "measure them again: `python -m viz peaks --refresh`"


@dataclass
class Check:
    """One line of the report."""

    check: str  # a short name: "cpu", "memory", "model", ...
    status: str  # OK, WARN (works with a caveat, or an optional part is missing) or FAIL
    finding: str  # what was found, with the figure
    fix: str = ""  # for WARN and FAIL: what to run or change


# ---- 1. the CPU and its threads ---------------------------------------------------------------
def check_cpu() -> Check:
    """The CPU's name, the features that matter to torch, and the kernels torch uses."""
    import torch

    from viz.runtime import ISA_OVERRIDES, cpu_features, cpu_name

    try:
        level = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):
        level = "unknown"
    features = " ".join(cpu_features()) or "none listed"
    found = f"{cpu_name()}; features {features}; torch's kernels {level}"
    overrides = [f"{k}={os.environ[k]}" for k in ISA_OVERRIDES if os.environ.get(k)]
    if overrides:
        return Check(
            "cpu",
            WARN,
            f"{found}, capped by {', '.join(overrides)}: every "
            "measurement shows a smaller CPU than this one",
            f"unset {' '.join(o.split('=')[0] for o in overrides)} unless you mean to "
            "stand in for a smaller CPU",
        )
    return Check("cpu", OK, f"{found}; no instruction-set override")


def check_threads() -> Check:
    """The threads torch's kernels use, against the CPUs the operating system reports."""
    import torch

    threads, cpus = torch.get_num_threads(), os.cpu_count() or 0
    found = f"torch uses {threads} thread{'s' if threads != 1 else ''} of {cpus} logical CPUs"
    omp = os.environ.get("OMP_NUM_THREADS")
    if omp:
        found += f" (OMP_NUM_THREADS={omp})"
    if cpus and threads > cpus:
        return Check(
            "threads",
            WARN,
            f"{found}: more threads than CPUs, so they take turns "
            "and every timing is slower and noisier",
            f"set OMP_NUM_THREADS={cpus} or less (or unset it)",
        )
    return Check("threads", OK, found)


# ---- 2. memory -------------------------------------------------------------------------------
def _cgroup_memory() -> Optional[tuple[int, int]]:
    """(limit, used) bytes of this container's memory cgroup (Binder, Docker), if it has one."""
    for limit_file, used_file in (
        ("memory.max", "memory.current"),  # cgroup v2
        ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"),
    ):
        try:
            limit = (Path("/sys/fs/cgroup") / limit_file).read_text().strip()
            used = int((Path("/sys/fs/cgroup") / used_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # "max" or a huge number: no limit
            return int(limit), used
    return None


def check_memory() -> Check:
    """Total and available memory against a lesson's budget and Binder's ~2 GB."""
    import psutil

    mem = psutil.virtual_memory()
    total, available = mem.total, mem.available
    found = f"{total / 1e9:.1f} GB in all, {available / 1e9:.1f} GB available"
    limited = _cgroup_memory()
    if limited and limited[0] < total:
        limit, used = limited
        total, available = limit, min(available, max(limit - used, 0))
        found += (
            f"; this container may use {limit / 1e9:.1f} GB ({available / 1e9:.1f} GB of it free)"
        )
    need = (
        f"a lesson's kernel peaks at up to {LESSON_MEMORY_BUDGET_BYTES / 1e9:.1f} GB "
        f"(Binder gives a session ~{BINDER_MEMORY_BYTES / 1e9:.0f} GB)"
    )
    if total < LESSON_MEMORY_BUDGET_BYTES:
        return Check(
            "memory",
            FAIL,
            f"{found}: {need}",
            "use a machine with more memory, or the course on Binder",
        )
    if available < LOW_MEMORY_BYTES:
        return Check(
            "memory",
            WARN,
            f"{found}, under {LOW_MEMORY_BYTES / 1e9:.1f} GB: {need}",
            "close other programs (or other notebooks' kernels) before a lesson",
        )
    return Check("memory", OK, f"{found}; {need}")


# ---- 3. the default model in the cache --------------------------------------------------------
def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def check_model() -> Check:
    """The default model's dequantized cache: there (OK), only its GGUF source (WARN: the first
    load converts it), or nothing (FAIL: `make model`). Never downloads."""
    from viz import default_model as dm

    folder = dm.converted_dir(dm.GGUF_SHA256)
    if dm.read_converted(folder):
        return Check(
            "model",
            OK,
            f"{dm.DEFAULT_MODEL} in {folder} ({_folder_bytes(folder) / 1e6:,.0f} MB, float32)",
        )
    root = dm.cache_dir()
    sources = [p for p in (root / dm.GGUF_NAME, root / dm.WHEEL_NAME) if p.is_file()]
    if sources:
        return Check(
            "model",
            WARN,
            f"{dm.DEFAULT_MODEL} is not dequantized yet (its source "
            f"{sources[0]} is here): the first load converts it, about 20 s",
            FETCH_FIX.split(":")[0] + " to convert it now",
        )
    return Check(
        "model",
        FAIL,
        f"{dm.DEFAULT_MODEL} is not in the cache ({root}; VIZ_CACHE_DIR moves it)",
        FETCH_FIX,
    )


# ---- 4. it loads, and records ----------------------------------------------------------------
def check_load() -> tuple[Check, object]:
    """`viz.load_model(device="cpu")`, timed; the check and the model (None if it failed)."""
    import viz

    start = time.perf_counter()
    try:
        lm = viz.load_model(device="cpu")
    except Exception as e:  # any failure is the finding; the doctor goes on
        return Check("load", FAIL, f"viz.load_model() failed: {e}", FETCH_FIX), None
    return Check("load", OK, f"{lm!r} in {time.perf_counter() - start:.1f} s"), lm


def check_record(lm) -> Check:
    """A 2-token greedy `viz.record` on the loaded model, timed."""
    import viz

    if lm is None:
        return Check("record", FAIL, "not tried: the model did not load", FETCH_FIX)
    start = time.perf_counter()
    try:
        trace = viz.record(lm, "Hi", max_new_tokens=2)
    except Exception as e:
        return Check(
            "record",
            FAIL,
            f"viz.record(lm, 'Hi', max_new_tokens=2) failed: {type(e).__name__}: {e}",
            "run `make setup` again; if it persists, "
            "send this line (python -m viz doctor --json) with the report",
        )
    return Check(
        "record",
        OK,
        f"'Hi' → {trace.generated_text!r}, {len(trace.steps)} tokens in "
        f"{time.perf_counter() - start:.2f} s (TTFT {trace.ttft_s * 1e3:.0f} ms)",
    )


# ---- 5. llama.cpp, in a child process ---------------------------------------------------------
def probe_llamacpp(
    gguf: str = "", threads: int = 1, timeout_s: float = LLAMACPP_TIMEOUT_S
) -> Check:
    """llama.cpp's banner, and with `gguf` a few greedy tokens of it, read in a child process
    (`viz.perf.engine_child`, task "check"): a child killed by a signal (SIGILL: instructions
    this CPU lacks), an error, a timeout or a banner with AMX on FAIL with `make engines`."""
    from viz.perf.engine_child import EngineCrash, call

    try:
        info = call(
            "check",
            {
                "gguf": gguf,
                "prompt": LLAMACPP_PROMPT,
                "n_tokens": LLAMACPP_TOKENS if gguf else 0,
                "threads": threads,
            },
            doing="checking its build",
            timeout_s=timeout_s,
        )
    except EngineCrash as e:
        if e.timed_out:
            finding = f"the llama.cpp check did not finish in {timeout_s:g} s"
        elif e.signal_name:
            why = " (instructions this CPU lacks)" if e.signal_name == "SIGILL" else ""
            finding = f"llama-cpp-python was killed by {e.signal_name}{why}"
        else:
            last = (e.stderr_tail.splitlines() or ["no message"])[-1]
            finding = f"llama-cpp-python failed (exit {e.returncode}): {last}"
        return Check("llama.cpp", FAIL, finding, ENGINES_FIX)
    return judge_llamacpp(info, ran=bool(gguf))


def judge_llamacpp(info: dict, ran: bool = False) -> Check:
    """The verdict on what the child reported: its banner (AMX on: FAIL) and the tokens."""
    from viz.perf.engine_child import switched_on, uses_amx

    banner = str(info.get("system_info", ""))
    version = f"llama-cpp-python {info['version']}" if "version" in info else "llama-cpp-python"
    on = switched_on(banner)
    if uses_amx(banner):
        return Check(
            "llama.cpp",
            FAIL,
            f"{version} was built with AMX kernels "
            f"({', '.join(o for o in on if 'AMX' in o)} = 1), which died with SIGILL "
            "on a cloud VM",
            ENGINES_FIX,
        )
    found = f"{version}, no AMX; uses {' '.join(on) or 'no listed instructions'}"
    if "text" in info:
        found += (
            f"; the Q4_1 file: {len(info['tokens'])} tokens in {info['seconds']:.1f} s "
            f"({LLAMACPP_PROMPT!r} → {info['text']!r})"
        )
    elif ran:
        found += "; the model was not run (the child printed no result)"
    return Check("llama.cpp", OK, found)


def check_llamacpp(timeout_s: float = LLAMACPP_TIMEOUT_S) -> Check:
    """llama-cpp-python, an optional engine: missing is a WARN (`make setup` builds it; Binder
    goes without it); installed, `probe_llamacpp` runs it in a child on the default model's
    GGUF file (if it is here)."""
    from viz import default_model
    from viz.serve.client import ServeError
    from viz.serve.llamacpp import VERSION, check_installed

    try:
        installed = check_installed()
    except ServeError as e:
        missing = str(e).rsplit("(missing: ", 1)[-1].rstrip(")")
        return Check(
            "llama.cpp",
            WARN,
            f"not installed (missing: {missing}); optional: only "
            "lesson 09's second engine and the formats comparison use it",
            "make setup",
        )
    try:  # checked by its digest; copied out of the cached wheel the first time, as the
        # llama.cpp server does (no download)
        gguf = str(default_model.default_gguf_path())
    except ValueError:  # no GGUF file here: the model check says how to fetch it
        gguf = ""
    check = probe_llamacpp(gguf, os.cpu_count() or 1, timeout_s)
    if check.status == OK and installed != VERSION:
        return Check(
            "llama.cpp",
            WARN,
            f"{check.finding}; viz is tested with {VERSION}",
            "make setup (installs the tested release)",
        )
    if check.status == OK and not gguf:
        check.finding += "; no GGUF file here, so no model was run"
    return check


# ---- 6. Chromium, for the browser test ---------------------------------------------------------
# Where tests/conftest.py looks (after $VIZ_CHROMIUM): the same list, in the same order.
CHROMIUM_CANDIDATES = (
    "/usr/bin/chromium",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
)


def check_chromium() -> Check:
    """A Chrome or Chromium for the browser test (teachers running the tests): optional."""
    for name in [os.environ.get("VIZ_CHROMIUM", ""), *CHROMIUM_CANDIDATES]:
        if not name:
            continue
        path = shutil.which(name) or (
            name if os.path.isfile(name) and os.access(name, os.X_OK) else None
        )
        if path:
            return Check("chromium", OK, f"{path} (for the browser test)")
    return Check(
        "chromium",
        WARN,
        "no Chromium or Chrome found (optional: only the browser test "
        "needs it, and skips without it)",
        "`sudo make browser` (Debian/Ubuntu), or set VIZ_CHROMIUM=/path/to/chrome",
    )


# ---- 7. the viz cache and this machine's measurements -------------------------------------------
def check_cache() -> Check:
    """The viz cache folder: where, how big, writable."""
    from viz.default_model import cache_dir
    from viz.perf.machine.cache import measurements_dir

    root, measured = cache_dir(), measurements_dir()
    where = f"; measurements in {measured} ($VIZ_MEASURE_DIR)" if measured != root else ""
    if not root.exists():
        return Check("cache", OK, f"{root} (not made yet){where}")
    if not os.access(root, os.W_OK):
        return Check(
            "cache",
            FAIL,
            f"{root} is not writable{where}",
            "make it writable, or point VIZ_CACHE_DIR at a folder that is",
        )
    return Check("cache", OK, f"{root}, {_folder_bytes(root) / 1e6:,.0f} MB{where}")


def _age(measured_at: str) -> Optional[datetime.timedelta]:
    """How long ago "2026-01-01T12:00:00Z" (or an old file's "2026-01-01 12:00 UTC") was;
    None if it does not parse (`viz.provenance.parse_utc`)."""
    then = parse_utc(measured_at)
    if then is None:
        return None
    return datetime.datetime.now(datetime.timezone.utc) - then


def _when(measured_at: str) -> tuple[str, bool]:
    """("2026-01-01 12:00 UTC, 3 days ago", stale?)."""
    age = _age(measured_at)
    if age is None:
        return f"{measured_at or 'at an unknown time'}", False
    seconds = age.total_seconds()
    ago = (
        f"{seconds / 86400:.0f} days ago"
        if seconds >= 2 * 86400
        else f"{seconds / 3600:.0f} h ago"
        if seconds >= 3600
        else "within the hour"
    )
    return f"{shown_utc(measured_at)}, {ago}", seconds > STALE_DAYS * 86400


def check_peaks() -> Check:
    """This machine's cached peaks, read (never measured): when, and the figures."""
    from viz.perf.machine.peaks import MachinePeaks, peaks_path

    file = peaks_path("cpu")
    if not file.is_file():
        return Check(
            "peaks",
            OK,
            "not measured yet for this CPU, thread count and torch: the "
            "first lesson that needs them measures them (a few seconds)",
        )
    try:
        p = MachinePeaks.load(file)
    except ValueError as e:
        return Check("peaks", WARN, f"{file} is unreadable: {e}", REFRESH_FIX)
    when, stale = _when(p.measured_at)
    flops = ", ".join(f"{dt} matmul {f / 1e9:,.1f} GFLOP/s" for dt, f in p.flops_per_s.items())
    found = f"read {p.bytes_per_s / 1e9:,.1f} GB/s, {flops}; measured {when}, {p.threads} threads"
    busy = p.load_average and p.load_average[0] > p.cpu_count
    if stale or busy:
        why = (
            f"over {STALE_DAYS} days old"
            if stale
            else f"measured while the machine was busy (load average {p.load_average[0]:.1f} "
            f"on {p.cpu_count} CPUs)"
        )
        return Check("peaks", WARN, f"{found}: {why}", REFRESH_FIX)
    return Check("peaks", OK, found)


def check_fixed_cost() -> Check:
    """This machine's cached fixed cost per step, read (never measured)."""
    from viz.perf.machine.fixed_costs import FixedCosts, fixed_costs_path

    file = fixed_costs_path("cpu")
    fix = (
        'measure it again: `python -c "from viz import perf; perf.fixed_cost(30, '
        'refresh=True)"` (or delete ' + str(file) + ")"
    )
    if not file.is_file():
        return Check(
            "fixed cost",
            OK,
            "not measured yet for this CPU, thread count and torch: "
            "the first lesson that needs it measures it (about a second per depth)",
        )
    try:
        costs = FixedCosts.load(file)
    except ValueError as e:
        return Check("fixed cost", WARN, f"{file} is unreadable: {e}", fix)
    parts, whens = [], []
    for floor in costs.floors:
        for i, (depth, seconds) in enumerate(zip(floor.layers, floor.seconds)):
            figure = (
                floor.spreads[i].text(1e3, "ms", runs=False)
                if floor.spreads
                else f"{seconds * 1e3:.1f} ms"
            )
            parts.append(f"{floor.dtype} {depth} layer{'s' if depth != 1 else ''} {figure}")
            whens.append(costs.measured_at.get(f"{floor.dtype}/{depth}", ""))
    if not parts:
        return Check("fixed cost", OK, f"{file} holds no depth yet")
    when, stale = _when(min(whens))  # the oldest figure's time
    found = (
        f"per step: {'; '.join(parts)}; measured {when}"
        + (" (the oldest)" if len(set(whens)) > 1 else "")
        + f", {costs.threads} threads"
    )
    if stale:
        return Check("fixed cost", WARN, f"{found}: over {STALE_DAYS} days old", fix)
    return Check("fixed cost", OK, found)


# ---- 8. Python and the packages, against the project's pins --------------------------------------
def requirements() -> dict[str, str]:
    """name → version specifier of viz's dependencies, and "python" → requires-python: from the
    pyproject.toml beside the package (a checkout), else the installed package's metadata.
    pyproject.toml holds requirements.txt's ranges (tests/test_packaging.py keeps them in step)."""
    from packaging.requirements import Requirement

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        project = tomllib.loads(pyproject.read_text())["project"]
        lines, python = project.get("dependencies", []), project.get("requires-python", "")
    else:
        from importlib import metadata

        try:
            lines = metadata.requires("llm-inference-viz") or []
            python = metadata.metadata("llm-inference-viz").get("Requires-Python", "")
        except metadata.PackageNotFoundError:
            lines, python = [], ""
    pins = {"python": python}
    for line in lines:
        req = Requirement(line)
        if req.marker is None:  # extras ("lessons", "test") are not viz's own
            lower_first = sorted(map(str, req.specifier), key=lambda s: not s.startswith(">"))
            pins[req.name.lower()] = ",".join(lower_first)  # ">=5.24,<5.25"
    return pins


def check_version(name: str, installed: Optional[str], wanted: Optional[str]) -> Check:
    """`installed` against the specifier `wanted` (e.g. "==2.13.0"): FAIL outside it."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion

    if installed is None:
        return Check(name, FAIL, "not installed", "make setup")
    if not wanted:
        return Check(
            name,
            WARN,
            f"{installed} (no pin found to compare with)",
            "run from the repository's checkout, or `make setup`",
        )
    try:
        fits = SpecifierSet(wanted).contains(installed, prereleases=True)
    except InvalidVersion:
        fits = False
    if fits:
        return Check(name, OK, f"{installed} (the project pins {wanted})")
    return Check(
        name,
        FAIL,
        f"{installed}, outside the project's pin {wanted}: the lessons "
        "are tested with the pinned release only",
        "make setup, then run with .venv/bin/python",
    )


def check_versions() -> list[Check]:
    """Python, torch and transformers against pyproject.toml's (= requirements.txt's) pins."""
    from importlib import metadata

    pins = requirements()
    found = [("python", platform.python_version())]
    for package in ("torch", "transformers"):
        try:
            found.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            found.append((package, None))
    return [check_version(name, version, pins.get(name)) for name, version in found]


# ---- the report ---------------------------------------------------------------------------------
def _safely(name: str, fn: Callable[[], Check]) -> Check:
    """`fn()`, or a FAIL naming the error: one broken check never hides the others."""
    try:
        return fn()
    except Exception as e:
        return Check(
            name,
            FAIL,
            f"the check itself failed: {type(e).__name__}: {e}",
            "send this line (python -m viz doctor --json) with the report",
        )


def run_checks() -> Iterator[Check]:
    """Every check, in order, each as soon as it is done (the model load takes a moment)."""
    yield _safely("cpu", check_cpu)
    yield _safely("threads", check_threads)
    yield _safely("memory", check_memory)
    model = _safely("model", check_model)
    yield model
    if model.status == FAIL:  # nothing to load: say so once more rather than try
        lm = None
        yield Check("load", FAIL, "not tried: the model is not here", FETCH_FIX)
        yield Check("record", FAIL, "not tried: the model is not here", FETCH_FIX)
    else:
        try:
            load, lm = check_load()
        except Exception as e:
            load, lm = Check("load", FAIL, f"{type(e).__name__}: {e}", FETCH_FIX), None
        yield load
        yield _safely("record", lambda: check_record(lm))
    lm = None  # let go (a closure above read it: not `del`)
    yield _safely("llama.cpp", check_llamacpp)
    yield _safely("chromium", check_chromium)
    yield _safely("cache", check_cache)
    yield _safely("peaks", check_peaks)
    yield _safely("fixed cost", check_fixed_cost)
    try:
        yield from check_versions()
    except Exception as e:
        yield Check(
            "versions", FAIL, f"the check itself failed: {type(e).__name__}: {e}", "make setup"
        )


def line(check: Check) -> str:
    """ "OK   cpu          finding", and for WARN/FAIL a second line "     fix: ..."."""
    text = f"{check.status:<4} {check.check:<12} {check.finding}"
    return text + (f"\n     fix: {check.fix}" if check.fix and check.status != OK else "")


def summary(checks: Sequence[Check]) -> str:
    counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL)}
    verdict = (
        "ready"
        if not counts[FAIL]
        else "not ready: fix the FAIL lines above, then run `python -m viz doctor` again"
    )
    return f"doctor: {counts[OK]} OK, {counts[WARN]} WARN, {counts[FAIL]} FAIL: {verdict}"


def exit_status(checks: Sequence[Check]) -> int:
    """1 if any check FAILed, else 0."""
    return int(any(c.status == FAIL for c in checks))


def doctor(
    as_json: bool = False, out: TextIO = sys.stdout, checks: Optional[Iterator[Check]] = None
) -> int:
    """Print every check (one line each, or a JSON list of {check, status, finding, fix}) and
    return the exit status: 1 when anything FAILs."""
    done = []
    for check in checks if checks is not None else run_checks():
        done.append(check)
        if not as_json:
            print(line(check), file=out, flush=True)
    if as_json:
        print(json.dumps([asdict(c) for c in done], indent=1), file=out)
    else:
        print(summary(done), file=out)
    return exit_status(done)
