"""Workloads without a server: lengths fixed and drawn, synthetic prompts of exact token counts
with the default model's tokenizer, JSONL files, chats, the checks that refuse bad input
before any request is sent (each naming its fix), the schema-1 files that still load, and
the summary's line on answers that stopped early. The runs against a server are in
test_serve_faults.py (the fault server) and test_serve_real.py (transformers serve)."""

import json
import random
import shutil
from pathlib import Path

import pytest

from viz.serve import LoadRun, LoadSweep, Lengths, RequestRecord, ServeError, Workload, run_load
from viz.serve.server import free_port
from viz.serve.synthetic import load_tokenizer

FIXTURES = Path(__file__).with_name("fixtures")
pytestmark = pytest.mark.real_model  # the default model's tokenizer (make model)


def tokens(w: Workload, text: str) -> int:
    return len(load_tokenizer(w.tokenizer)(text, add_special_tokens=False)["input_ids"])


# ---- lengths --------------------------------------------------------------------------------------
def test_lengths_fixed_uniform_and_normal_are_seeded():
    rng = lambda: random.Random(7)  # noqa: E731
    assert Lengths(64).draw(3, rng()) == [64, 64, 64] and str(Lengths(64)) == "64"
    u = Lengths.of("32..96", "x")
    drawn = u.draw(500, rng())
    assert (u.kind, u.mean, str(u)) == ("uniform", 64, "32–96")
    assert min(drawn) == 32 and max(drawn) == 96 and drawn == u.draw(500, rng())
    n = Lengths.normal(64, 16)
    drawn = n.draw(2000, rng())
    assert (n.low, n.high) == (16, 112) and 16 <= min(drawn) and max(drawn) <= 112
    assert abs(sum(drawn) / len(drawn) - 64) < 2 and str(n) == "64 ± 16 (16–112)"
    assert Lengths.normal(4, 5).low == 1  # never under one token


@pytest.mark.parametrize(
    "value, message",
    [
        (0, r"prompt_tokens: a length must be a whole number of tokens from 1 .* not 0"),
        (-3, r"prompt_tokens: a length must be a whole number of tokens from 1 .* not -3"),
        ("96..32", r"prompt_tokens: a uniform length runs from low to high: 96 > 32; swap them"),
        ("lots", r"prompt_tokens must be a number of tokens \(\"64\"\) or a range"),
        (2.5, r"prompt_tokens must be a whole number of tokens"),
    ],
)
def test_bad_lengths_name_the_fix(value, message):
    with pytest.raises(ServeError, match=message):
        Workload.synthetic(value, 32)


def test_zero_or_negative_answers_and_turns_are_refused():
    with pytest.raises(ServeError, match=r"output_tokens: a length must be .* not 0"):
        Workload.synthetic(64, 0)
    with pytest.raises(ServeError, match=r"standard deviation must be a number of tokens > 0"):
        Lengths.normal(64, 0)
    with pytest.raises(ServeError, match=r"turns must be a whole number from 1 to 64, not 0"):
        Workload.chat(0, 16, 8)


# ---- synthetic prompts ------------------------------------------------------------------------------
def test_synthetic_prompts_have_exactly_the_asked_tokens():
    w = Workload.synthetic(Lengths.uniform(8, 300), 32)
    items = w.build(24, seed=3)
    assert all(tokens(w, it.text) == it.text_tokens for it in items)
    assert len({it.text_tokens for it in items}) > 10  # drawn, not all the same
    assert [it.text for it in w.build(24, seed=3)] == [it.text for it in items]  # seeded
    assert [it.text for it in w.build(24, seed=4)] != [it.text for it in items]
    fixed = Workload.synthetic(64, 32).build(16, seed=0)
    assert all(tokens(w, it.text) == 64 and it.max_tokens == 32 for it in fixed)
    # each prompt starts at its own token: no two begin alike (a prefix cache would skip them)
    assert len({it.text[:25] for it in fixed}) == 16
    assert "grandparents" in " ".join(it.text for it in fixed)  # lesson 01's paragraph
    assert w.context_tokens == 8192 and Path(w.tokenizer, "config.json").is_file()
    assert str(Workload.synthetic(64, 32)) == "64 tokens in, 32 out"


def test_a_prompt_beyond_the_context_is_refused_with_the_longest_that_fits():
    with pytest.raises(
        ServeError,
        match=r"request '9000 in' needs 9,030 prompt tokens \(the "
        r"chat template included\) \+ 32 answer tokens = 9,062, "
        r"beyond the model's context of 8,192 tokens: lower "
        r"--prompt-tokens .* \(at most 8130 with 32-token",
    ):
        Workload.synthetic(9000, 32).build(2, seed=0)
    with pytest.raises(
        ServeError,
        match=r"more than the server's whole KV pool of 1,024 tokens"
        r".*--num-pages",
    ):
        Workload.synthetic(1000, 32).build(2, seed=0, kv_tokens=1024)
    with pytest.raises(ServeError, match=r"a chat's last turn .* beyond the model's context"):
        Workload.chat(8, 1000, 100).build(8, seed=0)
    Workload.synthetic(8000, 32).build(1, seed=0)  # within the context: fine


def test_a_tokenizer_folder_is_checked_before_anything(tmp_path):
    with pytest.raises(
        ServeError,
        match=r"no tokenizer folder at '/no/such/folder': give a "
        r"local folder .* \(viz never downloads one\)",
    ):
        Workload.synthetic(64, 32, tokenizer="/no/such/folder")
    with pytest.raises(ServeError, match=r"holds no tokenizer \(no tokenizer.json"):
        Workload.synthetic(64, 32, tokenizer=str(tmp_path))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "tokenizer.json").write_text('{"model": ')
    with pytest.raises(
        ServeError,
        match=r"cannot load a tokenizer from .*broken \(its "
        r"tokenizer.json does not parse: .*\): give the folder",
    ):
        Workload.synthetic(64, 32, tokenizer=str(broken)).build(1, seed=0)
    default = Workload.synthetic(64, 32)
    default.build(1, seed=0)
    copy = tmp_path / "tok"
    copy.mkdir()
    for f in Path(default.tokenizer).iterdir():
        if f.name.startswith(("tokenizer", "chat_template")) or f.name == "config.json":
            shutil.copy(f, copy / f.name)
    w = Workload.synthetic(64, 32, tokenizer=str(copy))
    assert [it.text for it in w.build(4, seed=0)] == [it.text for it in default.build(4, seed=0)]
    bare = shutil.copytree(copy, tmp_path / "bare")  # (tokenizers are cached per folder)
    (bare / "chat_template.jinja").unlink()
    with pytest.raises(
        ServeError,
        match=r"the tokenizer has no chat template .* use the "
        r"completions endpoint",
    ):
        Workload.synthetic(64, 32, tokenizer=str(bare)).build(1, seed=0)
    assert len(Workload.synthetic(64, 32, tokenizer=str(bare)).build(1, 0, "completions")) == 1


def test_a_chat_is_turns_of_one_conversation_after_another():
    w = Workload.chat(3, 16, 8)
    items = w.build(7, seed=0)
    assert [(it.conversation, it.turn) for it in items] == [
        (0, 0),
        (0, 1),
        (0, 2),
        (1, 0),
        (1, 1),
        (1, 2),
        (2, 0),
    ]
    with pytest.raises(
        ServeError,
        match=r"a chat workload re-sends messages: use the chat "
        r"endpoint",
    ):
        w.build(3, seed=0, endpoint="completions")


# ---- JSONL files ------------------------------------------------------------------------------------
def write(tmp_path, *lines) -> str:
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_jsonl_file_of_texts_and_chats(tmp_path):
    path = write(
        tmp_path,
        '{"prompt": "Name three colours.", "output_tokens": 8}',
        "",
        '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", '
        '"content": "Say hi."}], "name": "hi"}',
    )
    w = Workload.from_file(path, output_tokens=16)
    assert (w.kind, w.lines, len(w.sha256)) == ("file", 2, 64)
    items = w.build(4, seed=0)
    by_name = {it.name: it for it in items}
    assert by_name["line 1"].max_tokens == 8 and by_name["hi"].max_tokens == 16
    assert by_name["hi"].messages[0]["content"] == "Be brief."
    assert str(w) == "prompts.jsonl (2 prompts), 16 out"
    with pytest.raises(ServeError, match=r"hi of .* is a chat \(\"messages\"\): use the chat"):
        w.build(4, seed=0, endpoint="completions")
    bare = Workload.from_file(write(tmp_path, '{"prompt": "Hi"}'))
    with pytest.raises(
        ServeError,
        match=r"has no \"output_tokens\" and the workload none: "
        r"give output_tokens=",
    ):
        bare.build(1, seed=0)


@pytest.mark.parametrize(
    "lines, message",
    [
        ((), r"prompts.jsonl is empty: write one request per line, e.g. \{\"prompt\""),
        (("", "   "), r"prompts.jsonl is empty"),
        (
            ('{"prompt": "ok"}', '{"prompt": "fine"', '{"prompt": "ok"}'),
            r"prompts.jsonl line 2 is not JSON \(Expecting .* at column \d+\): each line is one object",
        ),
        (
            ('{"prompt": "ok"}', "", '["a", "list"]'),
            r"prompts.jsonl line 3 is a list, not an object",
        ),
        (('{"output_tokens": 3}',), r"line 1 needs \"prompt\" \(a text\) or \"messages\""),
        (('{"prompt": "  "}',), r"line 1: \"prompt\" must be a non-empty text"),
        (
            ('{"prompt": "a", "output_tokens": 0}',),
            r"line 1: \"output_tokens\" must be a whole "
            r"number of tokens >= 1, not 0",
        ),
        (
            (
                '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", '
                '"content": "b"}]}',
            ),
            r"line 1: the last message must be the user's",
        ),
        (('{"messages": [{"role": "robot", "content": "a"}]}',), r"line 1: message 0 must be"),
    ],
)
def test_a_bad_jsonl_file_is_refused_naming_the_line(tmp_path, lines, message):
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(ServeError, match=message):
        Workload.from_file(str(path))


def test_a_missing_file_and_one_too_long_for_the_context(tmp_path):
    with pytest.raises(ServeError, match=r"no prompts file at '.*nope.jsonl': check the path"):
        Workload.from_file(str(tmp_path / "nope.jsonl"))
    long = " ".join(["word"] * 9000)
    w = Workload.from_file(write(tmp_path, json.dumps({"prompt": long, "output_tokens": 8})))
    with pytest.raises(ServeError, match=r"beyond the model's context of 8,192 tokens"):
        w.build(1, seed=0)


def test_bad_workloads_are_refused_before_any_request():
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: a request would fail otherwise
    with pytest.raises(ServeError, match=r"beyond the model's context"):
        run_load(url, concurrency=1, workload=Workload.synthetic(9000, 32))
    with pytest.raises(
        ServeError,
        match=r"give the prompts and the answer length in the "
        r"workload, not also prompts= or max_tokens=",
    ):
        run_load(url, concurrency=1, workload=Workload.synthetic(64, 32), max_tokens=4)
    with pytest.raises(ServeError, match=r"workload must be a viz.serve.Workload"):
        run_load(url, concurrency=1, workload="64 in 32 out")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--prompt-tokens", "0", "--output-tokens", "8"], r"--prompt-tokens: a length must be"),
        (["--prompt-tokens", "64"], r"needs its answer length too: add --output-tokens N"),
        (
            ["--prompt-tokens", "64", "--output-tokens", "8", "--max-tokens", "8"],
            r"--max-tokens caps the shipped prompts' answers",
        ),
        (
            ["--prompt-tokens", "32..64", "--prompt-tokens-stdev", "4", "--output-tokens", "8"],
            r"--prompt-tokens-stdev makes a normal distribution around one length",
        ),
        (["--output-tokens", "8"], r"--output-tokens, --turns and --tokenizer go with"),
        (
            ["--prompt-tokens", "64", "--output-tokens", "8", "--tokenizer", "/no/such"],
            r"no tokenizer folder at '/no/such'",
        ),
        (["--data", "/no/such.jsonl"], r"no prompts file at '/no/such.jsonl'"),
        (
            ["--embedded", "--prompt-tokens", "2000", "--output-tokens", "8"],
            r"more than the server's whole KV pool of 1,024 tokens",
        ),
    ],
)
def test_load_command_workload_errors(argv, message, capsys):
    from viz.cli import main

    url = [] if "--embedded" in argv else [f"http://127.0.0.1:{free_port()}/v1"]
    assert main(["load", *url, "--concurrency", "2", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and __import__("re").search(message, err), err


# ---- saved runs: schema 2, and schema 1 upgraded --------------------------------------------------
def test_schema_1_files_load_with_their_prompts_as_the_workload():
    run = LoadRun.load(FIXTURES / "load-run-v1.json")
    w = run.settings.workload
    assert (w.kind, str(w.output_tokens), len(w.prompts)) == ("shipped", "24", 2)
    assert (
        run.settings.max_tokens == 24 and run.schema_version == 4
    )  # 3: provenance, 4: its schedule's
    assert "the shipped prompt set (2 prompts), answers capped at 24, 2 streams" in str(
        run.summary()
    )
    sweep = LoadSweep.load(FIXTURES / "load-sweep-v1.json")
    assert sweep.settings.max_tokens == 12
    assert all(r.settings.max_tokens == 12 for r in sweep.runs) and len(sweep.runs) == 5
    assert json.loads(run.to_json())["schema_version"] == 4


def test_a_workload_survives_a_save(tmp_path):
    run = LoadRun.load(FIXTURES / "load-run-v1.json")
    run.settings.workload = Workload.synthetic(Lengths.normal(64, 8), "16..48")
    run.settings.length_fields = ["min_tokens"]
    back = LoadRun.load(run.save(tmp_path / "run.json"))
    assert back.settings.workload == run.settings.workload and back == run
    assert str(back.settings.workload) == "64 ± 8 (40–88) tokens in, 16–48 out"


def test_the_summary_says_how_many_answers_stopped_early():
    run = LoadRun.load(FIXTURES / "load-run-v1.json")
    base = run.requests[0]
    reqs = []
    for i, (got, why) in enumerate([(8, "length"), (3, "stop"), (5, "stop"), (8, "stop")]):
        times = [0.1 * (k + 1) for k in range(got)]
        reqs.append(
            RequestRecord(
                index=i,
                request_id=f"r{i}",
                prompt_name="p",
                max_tokens=8,
                scheduled_s=0.0,
                sent_s=0.0,
                token_times_s=times,
                token_texts=["x"] * got,
                end_s=times[-1],
                finish_reason=why,
                output_tokens=got,
            )
        )
    run.requests = reqs
    s = run.summary()
    assert (s.n_stopped_early, s.shortest_early) == (2, 3)
    assert (
        "answers    asked p50 8 tokens, got p50 6.5: 2 of 4 stopped early at the model's "
        "end of text (shortest 3)" in str(s)
    )
    run.requests = [base]
    assert "\nanswers " not in str(run.summary())


def test_the_report_shows_the_workload_and_the_answers_that_stopped_early():
    from viz.views.load_report import load_report_html

    run = LoadRun.load(FIXTURES / "load-run-v1.json")
    run.settings.workload = Workload.synthetic(64, 8)
    run.settings.length_note = "transformers serve refuses unknown request fields (HTTP 422)"
    times = [0.1, 0.2, 0.3]
    run.requests = [
        RequestRecord(
            index=0,
            request_id="r0",
            prompt_name="64 in",
            max_tokens=8,
            scheduled_s=0.0,
            sent_s=0.0,
            token_times_s=times,
            token_texts=["x"] * 3,
            end_s=0.3,
            finish_reason="stop",
            output_tokens=3,
            prompt_tokens=94,
            prompt_text_tokens=64,
        )
    ]
    html = load_report_html([run])
    assert "<td>workload</td><td>64 tokens in, 8 out</td>" in html
    assert "load run: 64 tokens in, 8 out, 2 streams, 2 requests, seed 0; text: " in html
    assert "<td>8 *</td>" in html and "1 answer stopped before the length asked" in html
    assert "(HTTP 422)" in html and "<td>answers stopped early</td><td>1 of 1</td>" in html


@pytest.mark.real_model
def test_the_light_tokenizer_counts_and_renders_as_autotokenizer_does():
    from transformers import AutoTokenizer

    from viz.serve import synthetic

    folder = synthetic.default_tokenizer()
    light = synthetic.load_tokenizer(folder)
    full = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    texts = [
        "Hello",
        " cooked fish soup, and our grandfather",
        "Ünïcödé ✓ 12 345\n\ttabs",
        synthetic.cut_text(light, 64, 3, 0),
    ]
    for text in texts:
        assert (
            light(text, add_special_tokens=False)["input_ids"]
            == full(text, add_special_tokens=False)["input_ids"]
        )
        ids = full(text, add_special_tokens=False)["input_ids"]
        assert light.decode(ids) == full.decode(ids)
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Why?"},
    ]
    assert light.apply_chat_template(
        chat, add_generation_prompt=True, tokenize=False
    ) == full.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
