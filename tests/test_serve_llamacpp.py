"""The second real engine: llama.cpp's OpenAI server (llama-cpp-python) on the default model's
own Q4_1 GGUF file, started by viz (`viz.serve.LlamaCppServer`), recorded by the same client,
load runs and sweeps as `transformers serve`. One server for the module (~3 s to start, ~400 MB).
Marked `real_model`: it needs `make model` (the GGUF file) and `make setup` (the engine)."""

import importlib.util

import psutil
import pytest

from serve_support import gone
from viz import default_model
from viz.cli import main
from viz.serve import LlamaCppServer, ServeError, record_request, run_load, sweep_rates

pytestmark = pytest.mark.real_model

PROMPTS = [
    {"name": "colors", "prompt": "Name five colors, separated by commas.", "max_tokens": 8},
    {"name": "days", "prompt": "List the days of the week, separated by commas.", "max_tokens": 8},
]


@pytest.fixture(scope="module")
def llama():
    # one thread: llama.cpp's threads wait for each other at every operation, so on a busy
    # 2-core machine (the rest of the suite running beside it) two threads can take seconds
    # per token; one cannot be held up that way
    server = LlamaCppServer(n_threads=1).start()
    yield server
    server.stop()  # already stopped by the last test; stop() twice is harmless


def test_one_request_streams_token_by_token(llama):
    rec = record_request(llama, "What is the capital of France?", max_tokens=12).request
    assert rec.ok, rec.error
    assert rec.text.strip() and len(rec.token_times_s) >= 2
    assert rec.ttft_s > 0 and rec.tpot_s > 0
    # it sends no usage in a stream (stream_options is ignored): the count is the chunks,
    # one token each, up to the limit asked for
    assert rec.output_tokens is None and rec.n_output_tokens == len(rec.token_times_s) == 12
    assert rec.finish_reason == "length"
    info = llama.info()
    assert info.software == "llama.cpp (llama-cpp-python 0.3.36)"
    assert info.dtype == "Q4_1" and info.device == "cpu" and not info.continuous_batching
    assert llama.alive and llama.rss_bytes() > 50 * 2**20 and llama.cpu_seconds() > 0


def test_the_default_command_line_request_works_against_it(llama, capsys):
    # the first `python -m viz request` against this server got HTTP 400 with no reason: viz
    # sent an X-Request-ID that was not a UUID (starlette-context refuses it, empty body)
    assert main(["request", "What is 2 + 2?", "--url", llama.url, "--max-tokens", "4"]) == 0
    assert (
        main(["request", "The sky is", "--url", llama.url, "--max-tokens", "4", "--completions"])
        == 0
    )
    out = capsys.readouterr()
    assert "HTTP" not in out.err and out.out.count("TTFT") == 2


def test_it_serves_concurrent_streams_one_at_a_time(llama):
    run = run_load(llama, concurrency=2, n_requests=4, prompts=PROMPTS, progress=False)
    assert all(r.ok for r in run.requests), [r.error for r in run.requests]
    assert run.server is not None and run.server.dtype == "Q4_1" and run.schedule is None
    # the first two were sent together; the server ran one while the other waited: the
    # later one's first token came after the earlier one's last
    a, b = sorted(run.requests[:2], key=lambda r: r.sent_s + r.ttft_s)
    assert abs(a.sent_s - b.sent_s) < a.e2e_s / 2
    assert b.sent_s + b.ttft_s >= a.sent_s + a.e2e_s - 0.005


def test_a_sweep_runs_against_it(llama):
    sweep = sweep_rates(
        llama, n_requests=2, n_rates=1, max_tokens=4, prompts=PROMPTS, progress=False
    )
    assert [p.kind for p in sweep.points] == ["synchronous", "throughput", "rate"]
    assert all(r.ok for run in sweep.runs for r in run.requests)
    assert sweep.name == "llama.cpp, Q4_1"


def test_bad_settings_and_a_missing_engine_name_the_fix(tmp_path, monkeypatch, capsys):
    with pytest.raises(ServeError, match="no GGUF file at .*leave gguf out"):
        LlamaCppServer(gguf=str(tmp_path / "nothing.gguf"))
    # the default model's GGUF not fetched yet: the error names `make model`
    monkeypatch.setattr(default_model, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(default_model, "_installed_gguf", lambda: None)
    with pytest.raises(ValueError, match="GGUF file is not on this machine.*make model"):
        LlamaCppServer()
    monkeypatch.undo()
    with pytest.raises(ServeError, match="n_ctx must be a whole number >= 64"):
        LlamaCppServer(n_ctx=8)
    assert main(["request", "hi", "--embedded", "--engine", "llama.cpp", "--one-at-a-time"]) == 2
    assert "--one-at-a-time sets up `transformers serve`" in capsys.readouterr().err
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real(name, *a),
    )
    with pytest.raises(ServeError, match=r"not installed.*make setup.*\(missing: llama_cpp\)"):
        LlamaCppServer()
    assert main(["request", "hi", "--embedded", "--engine", "llama.cpp"]) == 2
    assert "`python -m tools.engines install`" in capsys.readouterr().err


def test_stop_leaves_no_process(llama):  # last: it stops the module's server
    proc = psutil.Process(llama.pid)
    family = [proc, *proc.children(recursive=True)]
    assert "llama_cpp.server" in " ".join(proc.cmdline())
    port = llama.port
    llama.stop()
    assert all(gone(p.pid) for p in family), "a llama.cpp process outlived stop()"
    assert not llama.alive
    assert not any(
        c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
        for c in psutil.net_connections("tcp")
    )
