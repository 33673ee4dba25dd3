"""Every way a server can fail a client gives a ServeError that names the fix; in a load run,
failed requests are recorded with their reason, completed ones kept, and the file written.

The misbehaving server is tests/serve_fault_server.py (real HTTP through uvicorn; only the
bytes of each reply are chosen), started through viz.serve's own ManagedProcess.
"""

import math
import subprocess
import sys
import time
import uuid

import pytest

from serve_support import fault_server, gone
from viz.serve import (
    SLO,
    LoadRun,
    ServeError,
    StreamRecord,
    Timeouts,
    check_url,
    record_request,
    run_load,
)
from viz.serve.client import request_id, request_index
from viz.serve.server import ManagedProcess, free_port


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    server = fault_server(tmp_path_factory.mktemp("faults")).start()
    yield server
    server.stop()
    assert gone(server.pid)


def url(server) -> str:
    return server.root_url + "/v1"


def test_a_correct_stream_is_timed_chunk_by_chunk(faults, tmp_path):
    rec = record_request(url(faults), "hi", model="ok", max_tokens=5)
    r = rec.request
    assert r.ok and r.error is None and r.http_status == 200
    assert r.token_texts == [f"tok{i} " for i in range(5)]
    assert rec.text == "tok0 tok1 tok2 tok3 tok4 "
    assert (r.prompt_tokens, r.output_tokens, r.finish_reason) == (5, 5, "length")
    # the definitions, recomputed here from the raw times
    assert rec.ttft_s == pytest.approx(r.token_times_s[0] - r.sent_s)
    assert rec.itl_s == pytest.approx([b - a for a, b in zip(r.token_times_s, r.token_times_s[1:])])
    assert rec.tpot_s == pytest.approx((r.end_s - r.token_times_s[0]) / 4)
    # each token has its own arrival time, in order; the server sleeps 10 ms before each of its
    # 5 chunks, so the last cannot arrive sooner than 50 ms after the request was sent. (A gap
    # between two chunks can be ~0 on a busy machine: a late read collects both at once.)
    assert len(r.token_times_s) == 5 and r.token_times_s == sorted(r.token_times_s)
    assert r.token_times_s[-1] - r.sent_s >= 0.05
    assert r.logprobs is None and rec.target.server_software == "uvicorn"
    path = rec.save(tmp_path / "one.json")
    again = StreamRecord.load(path)
    assert again.request == r and again.target.model == "ok"
    assert "TTFT" in again.summary()


def test_log_probabilities_are_kept_when_the_server_sends_them(faults):
    rec = record_request(url(faults), "hi", model="ok", max_tokens=3, logprobs=True)
    assert rec.request.logprobs == [-0.25, -0.5, -0.75]


@pytest.mark.parametrize(
    "model, kind, message",
    [
        (
            "http500",
            "http",
            r"HTTP 500 from the server: the fault server failed on purpose "
            r"\(the server failed: check its log\)",
        ),
        ("http400", "http", r"HTTP 400 from the server: max_tokens is too large for this model"),
        ("http422", "http", r"HTTP 422 from the server: Unexpected fields in the request"),
        (
            "http400-empty",
            "http",
            r"HTTP 400 from the server: it gave no reason \(an empty body\) "
            r"\(the request was refused",
        ),
        (
            "http422-long",
            "http",
            r"HTTP 422 from the server: body\.top_logprobs: Input should be less "
            r"than or equal to 20 x{200,290}…\ \(",
        ),
        ("nonstream", "protocol", r"answered with application/json, not a stream of events"),
        ("malformed", "protocol", r"a malformed event in the stream \(its data is not JSON"),
        ("truncated", "protocol", r"the stream ended after 3 text chunks without its final chunk"),
        (
            "cut",
            "connection",
            r"the connection broke mid-stream after 3 text chunks .*check the "
            r"server's log",
        ),
        ("error-event", "server", r"reported an error mid-stream after 2 text chunks"),
    ],
)
def test_each_fault_names_itself_and_the_fix(faults, model, kind, message):
    with pytest.raises(ServeError, match=message) as err:
        record_request(url(faults), "hi", model=model, max_tokens=5)
    assert err.value.kind == kind


def test_a_failed_request_can_be_kept_instead_of_raised(faults):
    rec = record_request(url(faults), "hi", model="cut", max_tokens=5, raise_on_error=False)
    assert not rec.ok and rec.request.error_kind == "connection"
    assert rec.request.token_texts == ["tok0 ", "tok1 ", "tok2 "]  # what came is kept
    assert "failed (connection)" in rec.summary()


def test_a_stalled_stream_times_out(faults):
    start = time.monotonic()
    with pytest.raises(
        ServeError,
        match=r"the stream stalled: no data for 0.5 s after 2 text "
        r"chunks",
    ) as err:
        record_request(url(faults), "hi", model="stall", timeouts=Timeouts(stall_s=0.5))
    assert err.value.kind == "timeout" and time.monotonic() - start < 10


def test_a_request_has_a_time_limit(faults):
    with pytest.raises(ServeError, match=r"took longer than 0.4 s \(its limit\)"):
        record_request(
            url(faults), "hi", model="stall", timeouts=Timeouts(stall_s=30, request_s=0.4)
        )


def test_unknown_model_lists_what_the_server_serves(faults):
    with pytest.raises(ServeError, match=r"unknown model 'nope': .* serves \['ok', "):
        record_request(url(faults), "hi", model="nope")


def test_connection_refused_says_nothing_is_serving():
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(
        ServeError,
        match=r"cannot connect to .*nothing is serving there. Start "
        r"a server",
    ) as err:
        record_request(dead, "hi")
    assert err.value.kind == "connection"


def test_an_unreachable_host_fails_fast_with_the_fix():
    # .invalid never resolves (RFC 6761): no network needed to show the message
    with pytest.raises(
        ServeError,
        match=r"cannot connect to http://no-such-host.invalid:8000/v1 "
        r"\(gaierror.*check the host and port",
    ) as err:
        record_request(
            "http://no-such-host.invalid:8000/v1",
            "hi",
            allow_remote=True,
            timeouts=Timeouts(connect_s=1, stall_s=1, request_s=2),
        )
    assert err.value.kind == "connection"


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            "http://example.com:8000/v1",
            r"refusing to contact example.com: viz sends requests only "
            r"to servers on this machine .*allow_remote=True",
        ),
        ("ftp://127.0.0.1/v1", r"is not an http\(s\) URL"),
        ("", r"the server URL must be a string"),
        (42, r"the server URL must be a string"),
        ("http://127.0.0.1:99999/v1", r"has an invalid port"),
    ],
)
def test_bad_urls(bad, message):
    with pytest.raises(ServeError, match=message):
        check_url(bad)


def test_urls_are_normalised_and_remote_needs_consent():
    assert check_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert check_url("http://localhost:8000/v1/") == "http://localhost:8000/v1"
    assert check_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert check_url("http://gpu-box:8000/v1", allow_remote=True) == "http://gpu-box:8000/v1"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(concurrency=0), r"concurrency must be a whole number from 1 to 512, not 0"),
        (dict(concurrency=-3), r"concurrency must be a whole number from 1 to 512, not -3"),
        (dict(concurrency=2.5), r"concurrency must be a whole number"),
        (dict(rate=0), r"rate must be a number from 1e-06 to 10000, not 0"),
        (dict(rate=-1.0), r"rate must be a number from 1e-06 to 10000, not -1.0"),
        (dict(rate=math.nan), r"rate must be a number"),
        (dict(rate=1.0, concurrency=2), r"give either concurrency= .* or rate= .*exactly one"),
        (dict(), r"give either concurrency= .* or rate= .*exactly one"),
        (dict(concurrency=2, n_requests=0), r"n_requests must be a whole number from 1"),
        (dict(concurrency=2, max_duration_s=0), r"max_duration_s must be a number from 0.001"),
        (dict(concurrency=2, max_duration_s=math.inf), r"max_duration_s must be a number"),
        (dict(concurrency=2, max_concurrency=2), r"max_concurrency caps a rate= run"),
        (dict(concurrency=2, prompts=[]), r"prompts must be a non-empty list"),
        (dict(concurrency=2, prompts=["ok", "  "]), r"prompt 1 is empty or not text"),
        (dict(concurrency=2, seed="x"), r"seed must be a whole number"),
    ],
)
def test_bad_load_settings_are_refused_before_any_request(kwargs, message):
    with pytest.raises(ServeError, match=message):
        run_load(f"http://127.0.0.1:{free_port()}/v1", **kwargs)


def test_bad_request_arguments():
    with pytest.raises(ServeError, match=r"the prompt is empty"):
        record_request("http://127.0.0.1:1/v1", "  ")
    with pytest.raises(ServeError, match=r"max_tokens must be a whole number >= 1, not 0"):
        record_request("http://127.0.0.1:1/v1", "hi", max_tokens=0)
    with pytest.raises(ServeError, match=r"temperature must be a number >= 0"):
        record_request("http://127.0.0.1:1/v1", "hi", temperature=-1)
    with pytest.raises(ServeError, match=r"timeout stall_s must be a number of seconds > 0"):
        Timeouts(stall_s=0)
    with pytest.raises(ValueError, match=r"SLO ttft_s must be a number of seconds > 0"):
        SLO(ttft_s=-1)


def test_a_load_run_against_an_unreachable_server_fails_before_it_starts(tmp_path):
    out = tmp_path / "run.json"
    with pytest.raises(ServeError, match=r"cannot connect to .*nothing is serving there"):
        run_load(f"http://127.0.0.1:{free_port()}/v1", concurrency=2, out=str(out))
    assert not out.exists()  # nothing was run, so nothing is claimed


def test_a_load_run_keeps_completed_requests_and_records_failed_ones(faults, tmp_path):
    out = tmp_path / "run.json"
    run = run_load(
        url(faults),
        model="flaky",
        concurrency=2,
        n_requests=6,
        max_tokens=4,
        progress=False,
        out=str(out),
    )
    saved = LoadRun.load(out)
    assert saved.requests == run.requests and len(run.requests) == 6
    for r in run.requests:  # the fault server cuts the odd-numbered requests
        if r.index % 2:
            assert not r.ok and r.error_kind == "connection"
            assert "the connection broke mid-stream after 3 text chunks" in r.error
            assert len(r.token_texts) == 3
        else:
            assert r.ok and r.error is None and r.n_output_tokens == 4
    s = run.summary()
    assert (s.n_completed, s.n_failed, s.errors) == (3, 3, {"connection": 3})
    assert s.output_tokens == 12 and run.stopped == ""


def test_a_server_dying_mid_run_is_recorded_and_the_file_written(tmp_path):
    server = fault_server(tmp_path, "dies").start()
    out = tmp_path / "died.json"
    try:
        run_load(server, model="die", concurrency=2, n_requests=4, progress=False, out=str(out))
    finally:
        server.stop()
    assert gone(server.pid)
    saved = LoadRun.load(out)
    assert [r.ok for r in saved.requests] == [False] * 4
    assert {r.error_kind for r in saved.requests} <= {"connection"}
    first = min(saved.requests, key=lambda r: r.sent_s)
    assert "broke mid-stream after 2 text chunks" in first.error
    assert "process has exited (code 1)" in first.error  # the server's own state, from viz
    assert first.token_texts == ["tok0 ", "tok1 "]


def test_a_failure_note_waits_a_moment_for_a_dying_server_to_exit(tmp_path):
    """A server process that dies closes its connections a moment before it can be seen to
    have exited: asked at once, it still runs; with settle_s the note waits for the exit, and a
    server that does not exit is still said to run once settle_s has passed."""
    dying = ManagedProcess([], host="127.0.0.1", port=1, log_path=tmp_path / "dying.log")
    dying.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    assert "the server is still running" in dying.failure_note(short=True)
    assert "the server process has exited (code 0)" in dying.failure_note(short=True, settle_s=30)
    live = ManagedProcess([], host="127.0.0.1", port=1, log_path=tmp_path / "live.log")
    live.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert "the server is still running" in live.failure_note(short=True, settle_s=0.2)
    finally:
        live.proc.kill()
        live.proc.wait()


def test_a_live_server_that_cuts_a_stream_is_said_to_be_still_running(faults):
    run = run_load(faults, model="flaky", concurrency=2, n_requests=2, max_tokens=4, progress=False)
    (cut,) = [r for r in run.requests if not r.ok]
    assert cut.index == 1 and cut.error_kind == "connection"
    assert "the connection broke mid-stream after 3 text chunks" in cut.error
    assert "fault server is still running; its log:" in cut.error
    assert [r.ok for r in run.requests if r.index == 0] == [True]


def test_a_load_run_stops_at_its_time_limit_and_keeps_what_streamed(faults, tmp_path):
    out = tmp_path / "late.json"
    start = time.monotonic()
    run = run_load(
        url(faults),
        model="stall",
        rate=20.0,
        n_requests=50,
        max_duration_s=1.0,
        progress=False,
        out=str(out),
        timeouts=Timeouts(stall_s=30),
    )
    took = time.monotonic() - start
    assert took < 8, f"the run took {took:.1f} s despite a 1 s limit"
    assert "time limit of 1 s reached" in run.stopped
    sent = [r for r in run.requests if r.sent_s is not None]
    assert 0 < len(sent) < 50
    assert all(r.error_kind == "cancelled" for r in run.requests)
    # a request sent well before the limit got its two chunks (10 ms apart) before the stall
    assert all(r.token_texts == ["tok0 ", "tok1 "] for r in sent if r.sent_s < 0.5)
    assert all(
        r.error == "not sent: the run's time limit came first"
        for r in run.requests
        if r.sent_s is None
    )
    assert LoadRun.load(out).stopped == run.stopped


# ---- the command line -----------------------------------------------------------------------------
def test_the_load_and_request_commands(faults, tmp_path, capsys):
    from viz.cli import main

    out = tmp_path / "cli-run.json"
    assert (
        main(
            [
                "load",
                url(faults),
                "--concurrency",
                "2",
                "--n-requests",
                "3",
                "--model-id",
                "ok",
                "--max-tokens",
                "4",
                "--quiet",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "requests   3 completed, 0 failed" in printed and f"saved      {out}" in printed
    assert len(LoadRun.load(out).requests) == 3
    one = tmp_path / "cli-one.json"
    assert (
        main(
            [
                "request",
                "hi",
                "--url",
                url(faults),
                "--model-id",
                "ok",
                "--max-tokens",
                "3",
                "-o",
                str(one),
            ]
        )
        == 0
    )
    assert StreamRecord.load(one).text == "tok0 tok1 tok2 "
    assert main(["request", "hi", "--url", url(faults), "--model-id", "http500"]) == 2
    assert "failed (http): HTTP 500 from the server" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["load", "--concurrency", "2"], "give the server's URL, or --embedded"),
        (
            ["load", "http://example.com/v1", "--concurrency", "2"],
            "refusing to contact example.com",
        ),
        (["load", "http://127.0.0.1:1/v1", "--rate", "-1"], "rate must be a number from"),
        (["request", "hi"], "give the server's --url, or --embedded"),
    ],
)
def test_command_line_errors_are_one_line_and_status_2(argv, message, capsys):
    from viz.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_request_ids_are_uuids_that_a_strict_server_accepts(faults):
    # llama-cpp-python's server refuses an X-Request-ID that is not a UUID (HTTP 400, empty
    # body): the one viz sends for a request, and for each request of a load run, is one.
    rec = record_request(faults, "hi", model="uuid-id", max_tokens=3)
    assert rec.request.ok and uuid.UUID(rec.request.request_id)
    run = run_load(
        faults, model="uuid-id", concurrency=2, n_requests=3, max_tokens=2, progress=False
    )
    assert all(r.ok for r in run.requests), [r.error for r in run.requests]
    assert [request_index(r.request_id) for r in run.requests] == [0, 1, 2]
    assert request_index("viz-3f2a1b0c-7") == 7  # an older file's id still reads
    assert request_index("req_3") is None
    with pytest.raises(ValueError, match="a run id is 8 hex digits"):
        request_id("not-hex", 0)


# ---- workloads against the fault server (the tokenizer is the default model's) ------------------
@pytest.mark.real_model
def test_answer_lengths_are_held_where_the_engine_accepts_it(faults):
    from viz.serve import Workload

    w = Workload.synthetic(16, 6)
    held = run_load(
        url(faults), model="early", concurrency=2, n_requests=4, workload=w, progress=False
    )  # takes min_tokens and ignore_eos: asked before the run
    assert held.settings.length_fields == ["min_tokens", "ignore_eos"]
    assert [r.n_output_tokens for r in held.requests] == [6] * 4
    assert held.summary().n_stopped_early == 0 and "\nanswers " not in str(held.summary())
    # as transformers serve: HTTP 422 for an unknown field, so only max_tokens goes, and the
    # answers that end early are recorded and shown
    strict = run_load(
        url(faults), model="strict", concurrency=2, n_requests=4, workload=w, progress=False
    )
    assert strict.settings.length_fields == [] and all(r.ok for r in strict.requests)
    assert "refused min_tokens (HTTP 422)" in strict.settings.length_note
    assert [(r.n_output_tokens, r.finish_reason) for r in strict.requests] == [(3, "stop")] * 4
    assert "answers    asked p50 6 tokens, got p50 3: 4 of 4 stopped early" in str(strict)
    assert all(r.prompt_text_tokens == 16 for r in strict.requests)
    loose = run_load(
        url(faults),
        model="early",
        concurrency=2,
        n_requests=2,
        progress=False,
        workload=Workload.synthetic(16, 6, exact_output=False),
    )
    assert loose.settings.length_fields == [] and loose.summary().n_stopped_early == 2


@pytest.mark.real_model
def test_a_chat_re_sends_its_history_turn_after_turn(faults, tmp_path):
    from viz.serve import Workload

    run = run_load(
        url(faults),
        model="echo",
        concurrency=2,
        n_requests=6,
        progress=False,
        workload=Workload.chat(3, 12, 4),
        out=str(tmp_path / "chat.json"),
    )
    for r in run.requests:  # turn t carries t earlier questions, t answers, and its own
        assert r.ok and r.text.startswith(f"m{2 * r.turn + 1} "), (r.turn, r.text)
    by_chat = {}
    for r in run.requests:
        by_chat.setdefault(r.conversation, []).append(r)
    for turns in by_chat.values():  # one after another: each turn sent after the last ended
        assert all(b.sent_s >= a.end_s for a, b in zip(turns, turns[1:]))
    assert LoadRun.load(tmp_path / "chat.json").requests[4].turn == 1
    cut = run_load(
        url(faults),
        model="cut",
        concurrency=1,
        n_requests=2,
        progress=False,
        workload=Workload.chat(2, 12, 4),
    )
    assert (
        cut.requests[1].sent_s is None
        and "turn 0 of this conversation failed" in cut.requests[1].error
    )


@pytest.mark.real_model
def test_a_jsonl_file_and_the_load_command_with_a_workload(faults, tmp_path, capsys):
    from viz.cli import main

    data = tmp_path / "prompts.jsonl"
    data.write_text(
        '{"prompt": "Name three colours.", "output_tokens": 3}\n'
        '{"messages": [{"role": "user", "content": "Hi"}], "name": "hi"}\n'
    )
    out = tmp_path / "file.json"
    assert (
        main(
            [
                "load",
                url(faults),
                "--model-id",
                "ok",
                "--concurrency",
                "2",
                "--n-requests",
                "4",
                "--data",
                str(data),
                "--output-tokens",
                "5",
                "--quiet",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    run = LoadRun.load(out)
    assert sorted(r.max_tokens for r in run.requests) == [3, 3, 5, 5]
    assert (
        run.settings.workload.sha256
        and "prompts.jsonl (2 prompts), 5 out" in capsys.readouterr().out
    )
    assert (
        main(
            [
                "load",
                url(faults),
                "--model-id",
                "ok",
                "--concurrency",
                "2",
                "--n-requests",
                "4",
                "--prompt-tokens",
                "10..20",
                "--output-tokens",
                "4",
                "--quiet",
            ]
        )
        == 0
    )
    assert "workload   10–20 tokens in, 4 out, 2 streams" in capsys.readouterr().out
