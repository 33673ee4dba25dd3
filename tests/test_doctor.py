"""`python -m viz doctor`: clean on this machine (the model present), FAIL with `make model` and
exit status 1 on an empty cache, and each llama.cpp verdict (missing: a WARN naming `make
setup`; AMX on or a child killed by SIGILL: a FAIL naming `make engines`), with the network
refused. The CLI runs in one subprocess (it loads the model); the rest runs in-process, the
empty cache too (a process of its own would add ~3 s of imports)."""

import importlib.util
import io
import json
import os
import re
import socket

import pytest
from conftest import fake_machine_peaks
from packaging.specifiers import SpecifierSet
from test_cli import NO_NETWORK, run_cli

from tools import course
from viz import doctor
from viz.doctor import FAIL, OK, WARN, Check
from viz.perf import engine_child

ORDER = [
    "cpu",
    "threads",
    "memory",
    "model",
    "load",
    "record",
    "llama.cpp",
    "chromium",
    "cache",
    "peaks",
    "fixed cost",
    "python",
    "torch",
    "transformers",
]


@pytest.fixture(scope="module")
def json_report(tmp_path_factory):
    """`python -m viz doctor --json` on this machine, the network refused: (process, checks)."""
    proc = run_cli(tmp_path_factory.mktemp("doctor"), "doctor", "--json")
    return proc, json.loads(proc.stdout)


@pytest.mark.real_model
def test_clean_on_this_machine_and_json_parses(json_report):
    proc, checks = json_report
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [c["check"] for c in checks] == ORDER
    assert all(set(c) == {"check", "status", "finding", "fix"} for c in checks)
    assert all(c["status"] in (OK, WARN) for c in checks), [
        c for c in checks if c["status"] == FAIL
    ]
    by = {c["check"]: c for c in checks}
    for name in ("model", "load", "record"):
        assert by[name]["status"] == OK, by[name]
    assert "SmolLM2-135M-Instruct" in by["model"]["finding"]
    assert re.search(r"in \d+\.\d s$", by["load"]["finding"])
    assert re.match(r"'Hi' → .*, 2 tokens in \d+\.\d\d s", by["record"]["finding"])
    assert all(c["fix"] for c in checks if c["status"] == WARN)


def refuse_the_network(folder, monkeypatch) -> None:
    """As in `run_cli`'s processes: this process and the children it starts (the llama.cpp
    check) refuse every network connection."""
    (folder / "sitecustomize.py").write_text(NO_NETWORK)  # for the children
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    )
    connect = socket.socket.connect

    def refuse(self, address, *a, **k):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise OSError("network disabled by the test")
        return connect(self, address, *a, **k)

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", lambda self, address: 111)


def test_empty_cache_fails_the_model_with_make_model_and_exits_1(tmp_path, monkeypatch):
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    monkeypatch.setenv("VIZ_CACHE_DIR", str(empty))
    refuse_the_network(tmp_path, monkeypatch)
    out = io.StringIO()
    assert doctor.doctor(out=out) == 1, out.getvalue()
    lines = out.getvalue().splitlines()
    model = next(i for i, s in enumerate(lines) if s.split()[1:2] == ["model"])
    assert lines[model].startswith("FAIL model") and str(empty) in lines[model]
    assert lines[model + 1].startswith("     fix: run `make model`")
    assert "python -m viz fetch-model" in lines[model + 1]
    assert lines[-1].startswith("doctor: ") and "not ready" in lines[-1]
    assert not any(empty.iterdir())  # nothing fetched, nothing written
    assert "the check itself failed" not in out.getvalue()  # every check ran to its verdict
    with pytest.raises(OSError, match="network disabled by the test"):  # refused all along
        socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_missing_llamacpp_is_a_warn_naming_make_setup(monkeypatch):
    """llama.cpp is optional (Binder goes without it): missing is a WARN, not a FAIL."""
    import viz.serve.llamacpp  # noqa: F401  (imported before find_spec is patched)

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real(name, *a),
    )
    check = doctor.check_llamacpp()
    assert check.status == WARN and check.check == "llama.cpp"
    assert check.finding.startswith("not installed (missing: llama_cpp)")
    assert check.fix == "make setup"


def banner(text: str) -> dict:
    return {"version": "0.3.36", "system_info": text}


def test_amx_banner_fails_naming_make_engines():
    check = doctor.judge_llamacpp(banner("CPU : AVX2 = 1 | AMX_INT8 = 1 | OPENMP = 1 | "))
    assert check.status == FAIL and "AMX_INT8 = 1" in check.finding
    assert "make engines" in check.fix


def test_banner_without_amx_is_ok():
    check = doctor.judge_llamacpp(banner("CPU : AVX2 = 1 | AMX_INT8 = 0 | OPENMP = 1 | "))
    assert check.status == OK, check
    assert check.finding == "llama-cpp-python 0.3.36, no AMX; uses AVX2 OPENMP"
    assert not engine_child.uses_amx("AMX_INT8 = 0 | AVX512 = 1")
    assert engine_child.uses_amx("AVX2 = 1 | AMX_TILE = 1")


def test_child_killed_by_sigill_is_named(monkeypatch):
    monkeypatch.setenv(engine_child.FAULT_ENV, "SIGILL")  # the child kills itself with it
    check = doctor.probe_llamacpp()
    assert check.status == FAIL and "killed by SIGILL" in check.finding
    assert "make engines" in check.fix


def test_child_error_and_timeout_fail(monkeypatch):
    monkeypatch.setenv(engine_child.FAULT_ENV, "3")
    broken = doctor.probe_llamacpp()
    assert broken.status == FAIL and "exit 3" in broken.finding
    monkeypatch.setenv(engine_child.FAULT_ENV, "hang")
    slow = doctor.probe_llamacpp(timeout_s=0.5)
    assert slow.status == FAIL and "did not finish in 0.5 s" in slow.finding


def test_isa_override_warns(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    check = doctor.check_cpu()
    assert check.status == WARN and "ATEN_CPU_CAPABILITY=avx2" in check.finding
    assert check.fix.startswith("unset ATEN_CPU_CAPABILITY")


def test_memory_budget_in_step_with_the_course():
    assert doctor.LESSON_MEMORY_BUDGET_BYTES == course.MEMORY_BUDGET_BYTES
    assert doctor.check_memory().status in (OK, WARN)  # this machine holds a lesson


def test_pins_are_requirements_txts():
    pins = doctor.requirements()
    txt = {}
    for raw in (course.ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"(torch|transformers)\s*([<>=!~][^#]*)", raw)
        if m:
            txt[m.group(1)] = m.group(2).strip()
    assert set(txt) == {"torch", "transformers"}
    for name, spec in txt.items():
        assert SpecifierSet(pins[name]) == SpecifierSet(spec)
    assert doctor.check_version("torch", "2.13.0+cpu", "==2.13.0").status == OK
    off = doctor.check_version("transformers", "5.25.1", ">=5.24,<5.25")
    assert off.status == FAIL and "outside the project's pin >=5.24,<5.25" in off.finding
    assert "make setup" in off.fix


def test_cached_measurements_are_read_and_judged(tmp_path, monkeypatch):
    from viz.perf.machine import peaks_path

    monkeypatch.setenv("VIZ_MEASURE_DIR", str(tmp_path))
    assert doctor.check_peaks().status == OK  # none yet: the first lesson measures them
    file = peaks_path("cpu")
    fake_machine_peaks(measured_at="2020-01-01 00:00 UTC").save(file)
    old = doctor.check_peaks()
    assert old.status == WARN and "read 30.0 GB/s" in old.finding and "days old" in old.finding
    assert "python -m viz peaks --refresh" in old.fix
    fake_machine_peaks(
        measured_at=doctor.datetime.datetime.now(doctor.datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC"
        ),
        load_average=[9.0, 9.0, 9.0],
    ).save(file)
    busy = doctor.check_peaks()
    assert busy.status == WARN and "busy (load average 9.0 on 2 CPUs)" in busy.finding
    file.write_text("{not json")
    assert doctor.check_peaks().status == WARN


def test_report_lines_summary_and_exit_status():
    checks = [Check("cpu", OK, "fine"), Check("chromium", WARN, "none", "sudo make browser")]
    out = io.StringIO()
    assert doctor.doctor(checks=iter(checks), out=out) == 0
    assert out.getvalue().splitlines() == [
        "OK   cpu          fine",
        "WARN chromium     none",
        "     fix: sudo make browser",
        "doctor: 1 OK, 1 WARN, 0 FAIL: ready",
    ]
    out = io.StringIO()
    failed = [*checks, Check("model", FAIL, "missing", "make model")]
    assert doctor.doctor(as_json=True, checks=iter(failed), out=out) == 1
    assert json.loads(out.getvalue())[2] == {
        "check": "model",
        "status": FAIL,
        "finding": "missing",
        "fix": "make model",
    }


def test_a_broken_check_is_a_fail_not_a_crash():
    def broken():
        raise RuntimeError("boom")

    check = doctor._safely("peaks", broken)
    assert check.status == FAIL and "RuntimeError: boom" in check.finding
