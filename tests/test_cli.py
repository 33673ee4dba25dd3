"""`python -m viz record` end to end, on the real model, and `python -m viz peaks`, with every
network connection refused. What needs no process of its own (a refusal, reading the saved
peaks back) runs through the CLI's `main` in this one: a `python -m viz` process pays ~3 s of
imports before it does anything."""

import os
import subprocess
import sys

from viz.trace import Trace

NO_NETWORK = """
import socket
def _refuse(self, address, *a, **k):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        raise OSError("network disabled by the test")
    return _connect(self, address, *a, **k)
_connect = socket.socket.connect
socket.socket.connect = _refuse
socket.socket.connect_ex = lambda self, address: 111
"""


def run_cli(tmp_path, *args, env=None):
    (tmp_path / "sitecustomize.py").write_text(NO_NETWORK)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), **(env or {}))
    env.pop("HF_HUB_OFFLINE", None)
    return subprocess.run(
        [sys.executable, "-m", "viz", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def test_record_offline_prints_summary_and_saves(tmp_path):
    out = tmp_path / "trace.json"
    proc = run_cli(
        tmp_path,
        "record",
        "What is the capital of France?",
        "--chat",
        "--max-new-tokens",
        "12",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    for word in ("TTFT", "TPOT", "tokens/s", "KV cache", "Paris", "saved"):
        assert word in proc.stdout
    trace = Trace.load(out)
    assert "Paris" in trace.generated_text and trace.settings.chat


def test_bad_input_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    from viz import cli

    def no_model(args):
        raise AssertionError("a model was loaded for an empty prompt")

    out = tmp_path / "trace.json"
    out.write_text("keep me")
    monkeypatch.setattr(cli, "_model", no_model)  # refused before any model loads
    assert cli.main(["record", "  ", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the prompt is empty") and err.count("\n") == 1
    assert "python -m viz record 'The capital" in err  # the fix, in the CLI's words
    assert out.read_text() == "keep me"  # nothing was overwritten


def test_sitecustomize_really_blocks_the_network(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(NO_NETWORK)
    code = "import socket; socket.create_connection(('127.0.0.1', 9), timeout=1)"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
    )
    assert "network disabled by the test" in proc.stderr


def test_peaks_measured_once_then_reused_and_saved(tmp_path, capsys, monkeypatch):
    """`python -m viz peaks`: measured in seconds the first time (a new cache), in a process of
    its own; -o saves them as JSON; reused and checked by the next process (this one, through
    the CLI's `main`); a bad thread count is one line, status 2."""
    from viz import cli
    from viz.perf import MachinePeaks

    env_dir = tmp_path / "measurements"
    first = run_cli(
        tmp_path,
        "peaks",
        "--threads",
        "1",
        "-o",
        str(tmp_path / "p.json"),
        env={"VIZ_MEASURE_DIR": str(env_dir)},
    )
    assert first.returncode == 0, first.stderr
    assert "measuring this machine's peaks once" in first.stderr
    assert "matmul float32" in first.stdout and "measured now (the first time" in first.stdout
    assert MachinePeaks.load(tmp_path / "p.json").threads == 1
    monkeypatch.setenv("VIZ_MEASURE_DIR", str(env_dir))
    assert cli.main(["peaks", "--threads", "1"]) == 0
    again = capsys.readouterr().out
    assert "matmul float32" in again and "measured now (the first time" not in again
    # read from the file and checked: in line, or found off (a busy machine) and measured again
    assert "checked now: a fresh read" in again or "measured again now, because" in again
    assert cli.main(["peaks", "--threads", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: threads must be a whole number") and err.count("\n") == 1
