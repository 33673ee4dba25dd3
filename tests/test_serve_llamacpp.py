"""The second real engine: llama.cpp's OpenAI server (llama-cpp-python) on the default model's
own Q4_1 GGUF file, started by viz (`viz.serve.LlamaCppServer`), recorded by the same client,
load runs and sweeps as `transformers serve`. One server for the module (~3 s to start, ~400 MB).
Marked `real_model`: it needs `make model` (the GGUF file) and `make setup` (the engine)."""

import importlib.util

import pytest

from serve_support import gone
from viz.cli import main
from viz.serve import LlamaCppServer, ServeError, record_request, run_load, sweep_rates

pytestmark = pytest.mark.real_model

PROMPTS = [{"name": "colors", "prompt": "Name five colors, separated by commas.", "max_tokens": 8},
           {"name": "days", "prompt": "List the days of the week, separated by commas.",
            "max_tokens": 8}]


@pytest.fixture(scope="module")
def llama():
    server = LlamaCppServer().start()
    yield server
    pid = server.pid
    server.stop()
    assert gone(pid), "the llama.cpp server outlived its stop()"


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
    assert info.dtype == "Q4_1" and "llama-cpp-python" in info.software
    assert not info.continuous_batching


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
    sweep = sweep_rates(llama, n_requests=2, n_rates=1, max_tokens=4, prompts=PROMPTS,
                        progress=False)
    assert [p.kind for p in sweep.points] == ["synchronous", "throughput", "rate"]
    assert all(r.ok for run in sweep.runs for r in run.requests)
    assert sweep.name == "llama.cpp, Q4_1"


def test_bad_settings_and_a_missing_engine_name_the_fix(tmp_path, monkeypatch, capsys):
    with pytest.raises(ServeError, match="no GGUF file at .*leave gguf out"):
        LlamaCppServer(gguf=str(tmp_path / "nothing.gguf"))
    with pytest.raises(ServeError, match="n_ctx must be a whole number >= 64"):
        LlamaCppServer(n_ctx=8)
    assert main(["request", "hi", "--embedded", "--engine", "llama.cpp", "--one-at-a-time"]) == 2
    assert "--one-at-a-time sets up `transformers serve`" in capsys.readouterr().err
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    with pytest.raises(ServeError, match=r"not installed.*make setup.*\(missing: llama_cpp\)"):
        LlamaCppServer()
