"""Weight formats side by side (viz.perf.formats): GGUF files written from the shipped Q4_1 file,
llama.cpp's greedy loop proven against transformers float32, and the comparison's rows — also
when one format's llama.cpp child process crashes (tests/test_engine_child.py: the crashes).

Marked `real_model`: they need `make model` (the default model and its GGUF file) and
`make setup` (llama-cpp-python)."""

import numpy as np
import pytest

import viz
from viz.perf import formats
from viz.perf.engine_child import FAULT_ENV
from viz.perf.formats import FormatRun, gguf_file, gguf_weight_bytes, llama_greedy, measure_formats

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """One folder for the module's GGUF files: each is written once (F32 is 540 MB)."""
    return tmp_path_factory.mktemp("gguf")


def _expected_bytes(path, bytes_2d: float) -> int:
    """Every tensor's elements × bytes: 2-D tensors in the format, 1-D ones (norms) float32."""
    from gguf import GGUFReader

    total = 0
    for t in GGUFReader(str(path)).tensors:
        n = int(np.prod([int(d) for d in t.shape]))
        total += n * (bytes_2d if len(t.shape) > 1 and int(min(t.shape)) > 1 else 4)
    return int(total)


def test_a_gguf_file_is_written_once_and_its_bytes_counted(folder):
    tmp_path = folder
    f16 = gguf_file("F16", folder=str(tmp_path))
    assert f16.name.endswith(".F16.gguf") and f16.is_file()
    assert not list(tmp_path.glob("*.part"))  # written under another name, then renamed
    assert gguf_weight_bytes(f16) == _expected_bytes(f16, 2)
    stamp = f16.stat().st_mtime_ns
    assert gguf_file("F16", folder=str(tmp_path)) == f16 and f16.stat().st_mtime_ns == stamp
    # the shipped file itself for Q4_1: 4-bit blocks with a scale and a minimum, ~0.7 bytes
    q4 = gguf_file("Q4_1")
    assert q4 == viz.default_model.default_gguf_path()
    assert 0.15 < gguf_weight_bytes(q4) / gguf_weight_bytes(f16) < 0.45
    # the header-only count equals gguf's own reader's (which parses every field)
    from gguf import GGUFReader

    assert gguf_weight_bytes(q4) == sum(int(t.n_bytes) for t in GGUFReader(str(q4)).tensors)


def test_a_file_that_is_not_a_whole_gguf_is_named(tmp_path):
    text = tmp_path / "model.gguf"
    text.write_text("not a model")
    with pytest.raises(ValueError, match="model.gguf is not a GGUF file"):
        gguf_weight_bytes(text)
    cut = tmp_path / "cut.gguf"
    with open(viz.default_model.default_gguf_path(), "rb") as shipped:
        cut.write_bytes(shipped.read(4096))
    with pytest.raises(ValueError, match="ends inside its header: the file is cut short"):
        gguf_weight_bytes(cut)


def test_bad_formats_and_files_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="fmt must be one of F32, F16, Q8_0, Q4_1"):
        gguf_file("int8")
    with pytest.raises(ValueError, match="no GGUF file at .*leave source out"):
        gguf_file("F16", source=str(tmp_path / "none.gguf"))


def test_llama_cpp_greedy_in_float32_is_transformers_float32(smollm, folder):
    # the same values in the same format: llama.cpp's loop (prefill, argmax, one eval per
    # token) must choose the very tokens viz.record chose
    trace = viz.record(
        smollm,
        "The capital of France is",
        max_new_tokens=8,
        stop_at_eos=False,
        embeddings=False,
        log_top=1,
    )
    tokens, steps = llama_greedy(
        gguf_file("F32", folder=str(folder)), trace.prompt_ids, 8, repeats=2
    )
    assert tokens == [s.token_id for s in trace.steps]
    assert len(steps) == 2 * 7 and all(t > 0 for t in steps)


def test_the_comparison_has_a_row_per_format(smollm, folder):
    run = measure_formats(
        smollm, ("float32", "Q4_1"), new_tokens=4, repeats=1, gguf_folder=str(folder)
    )
    f32, q4 = run.point("float32"), run.point("llama.cpp Q4_1")
    assert [p.label for p in run.points] == ["transformers float32", "llama.cpp Q4_1"]
    assert f32.weight_bytes == smollm.spec.weight_bytes and f32.bytes_per_weight == 4.0
    assert q4.weight_bytes == gguf_weight_bytes(viz.default_model.default_gguf_path())
    assert f32.same_tokens == len(f32.token_ids) == 4 and 0 <= q4.same_tokens <= 4
    assert f32.step.runs == 3  # new_tokens - 1 decode steps, one run
    assert q4.achieved_bytes_per_s.median == pytest.approx(q4.weight_bytes / q4.step.median)
    text = str(run)
    assert "reference" in text and f"{q4.same_tokens} of 4" in text
    again = FormatRun.from_dict(run.to_dict())
    assert again.point("Q4_1").token_ids == q4.token_ids


def test_a_format_whose_engine_crashes_is_reported_and_the_others_measured(
    smollm, folder, monkeypatch
):
    from viz.views.formats import formats_figure

    # F16's child (writing the file, or decoding it) kills itself with SIGILL, as a llama.cpp
    # built for another CPU did; Q4_1's child runs as usual, and so does this process
    monkeypatch.setenv(FAULT_ENV, "SIGILL@F16")
    run = measure_formats(
        smollm, ("float32", "F16", "Q4_1"), new_tokens=3, repeats=1, gguf_folder=str(folder)
    )
    assert [p.label for p in run.points] == ["transformers float32", "llama.cpp Q4_1"]
    q4 = run.point("Q4_1")
    assert len(q4.token_ids) == 3 and q4.step.runs == 2 and q4.step.median > 0
    assert run.point("F16") is None and [f.label for f in run.failures] == ["llama.cpp F16"]
    failed = run.failures[0]
    assert "died of SIGILL (illegal instruction) while " in failed.error
    assert "make engines" in failed.advice and "make engines" not in failed.error
    # said in every place the run is shown, and kept when it is saved and read back
    assert "F16 failed: llama.cpp (llama-cpp-python" in str(run) and "`make engines`" in str(run)
    row = run.table()[-1]
    assert (
        row["format"] == "F16"
        and row["step_ms"] is None
        and row["note"].startswith("failed: llama.cpp")
    )
    fig = formats_figure(run, read_bytes_per_s=1e10)
    assert "crashed, not shown: llama.cpp F16" in fig.layout.title.text.replace("<br>", " ")
    assert [list(t.text) for t in fig.data[1:]] == [["float32"], ["Q4_1"]]
    again = FormatRun.from_dict(run.to_dict())
    assert again.failures == run.failures and again.point("Q4_1").token_ids == q4.token_ids
    # a file saved before failures were recorded still loads, with none
    old = {k: v for k, v in run.to_dict().items() if k != "failures"}
    assert FormatRun.from_dict(old).failures == []


def test_a_dtype_without_a_fast_kernel_is_timed_once(smollm):
    trace, times, note = formats._torch_point(smollm, "Hi", False, 6, 2, limit_s=1e-9)
    assert len(times) == formats.WARM_STEPS and len(trace.steps) == formats.WARM_STEPS + 1
    assert "not timed further" in note and f"first {formats.WARM_STEPS} steps" in note


def test_a_slow_first_step_alone_does_not_stop_the_timing(monkeypatch):
    """A fresh model's first decode step is slow on any CPU; the fastest of the first few
    decides. Steps of 400 ms then 30 ms, against a limit of 100 ms: timed on."""
    import importlib
    from types import SimpleNamespace

    calls = []

    def fake_record(lm, prompt, *, max_new_tokens, **_):
        calls.append(max_new_tokens)
        first = len(calls) == 1
        times = [0.5] + [0.4 if first and i == 0 else 0.03 for i in range(max_new_tokens - 1)]
        return SimpleNamespace(steps=[SimpleNamespace(forward_s=s, token_id=7) for s in times])

    # the module (`viz.record` the attribute is the function of the same name)
    monkeypatch.setattr(importlib.import_module("viz.record"), "record", fake_record)
    trace, times, note = formats._torch_point(None, "Hi", False, 6, 2, limit_s=0.1)
    assert note == "" and calls == [formats.WARM_STEPS + 1, 6, 6]
    assert times == [0.03] * 10  # 5 decode steps timed in each of the 2 runs
    slow = formats._torch_point(None, "Hi", False, 6, 2, limit_s=0.01)  # all over the limit
    assert len(slow[1]) == formats.WARM_STEPS and "not timed further" in slow[2]


def test_bad_settings_name_the_fix(smollm):
    with pytest.raises(ValueError, match="new_tokens must be a whole number >= 3"):
        measure_formats(smollm, new_tokens=2)
    with pytest.raises(ValueError, match="formats must be some of float32"):
        measure_formats(smollm, ("int4",))
    with pytest.raises(ValueError, match="repeats must be a whole number >= 1"):
        measure_formats(smollm, repeats=0)


def _run(points):
    from viz.perf.formats import FormatPoint
    from viz.spread import Spread

    return FormatRun(
        model="m",
        n_params=100,
        prompt="p",
        chat=True,
        new_tokens=4,
        repeats=1,
        threads=2,
        reference="transformers float32",
        points=[
            FormatPoint(e, f, b, b / 100, Spread(s, s * 0.9, s * 1.2, 3), [1, 2, 3, 4], n)
            for e, f, b, s, n in points
        ],
    )


def test_the_figure_puts_each_engine_and_the_floor_on_one_chart():
    from viz.views.formats import formats_data, formats_figure

    run = _run(
        [
            ("transformers", "float32", 400, 0.04, 4),
            ("llama.cpp", "F32", 400, 0.01, 4),
            ("llama.cpp", "Q4_1", 72, 0.006, 2),
        ]
    )
    fig = formats_figure(run, read_bytes_per_s=40e3)  # 400 bytes in 10 ms
    names = [t.name for t in fig.data]
    assert names[0].startswith("memory floor: bytes ÷ 0.0 GB/s") and names[1:] == [
        "transformers",
        "llama.cpp",
    ]
    llama = fig.data[2]
    assert list(llama.text) == ["F32", "Q4_1"] and list(llama.y) == pytest.approx([10.0, 6.0])
    assert list(llama.error_y.array) == pytest.approx([2.0, 1.2])
    # the floor at the largest point's bytes: 400 B ÷ 40 kB/s = 10 ms
    floor = formats_data(run, 40e3)["floor"]
    assert floor["ms"][1] == pytest.approx(440 / 40e3 * 1e3)
    assert len(formats_figure(run).data) == 2  # no bandwidth, no floor
    with pytest.raises(ValueError, match="read_bytes_per_s must be a positive bandwidth"):
        formats_figure(run, read_bytes_per_s=0)
    with pytest.raises(TypeError, match="takes a FormatRun"):
        formats_figure({"points": []})


def test_another_model_gets_only_its_own_rows(tiny_gqa):
    with pytest.raises(ValueError, match="default model's GGUF files, not tiny-gqa's"):
        measure_formats(tiny_gqa, ("float32", "Q4_1"))
    run = measure_formats(tiny_gqa, ("float32",), prompt="ab", chat=False, new_tokens=3)
    assert [p.label for p in run.points] == ["transformers float32"] and run.model == "tiny-gqa"


def test_another_model_s_bfloat16_row_is_its_own(tiny_gqa):
    """bfloat16 of a model other than the default is that model rounded (it was the default
    model loaded from its file: 269 MB for a tiny model, and tokens of another vocabulary)."""
    run = measure_formats(
        tiny_gqa, ("float32", "bfloat16"), prompt="ab", chat=False, new_tokens=3, repeats=1
    )
    f32, b16 = run.points
    assert b16.label == "transformers bfloat16"
    assert b16.weight_bytes * 2 == f32.weight_bytes == tiny_gqa.spec.weight_bytes
    assert b16.bytes_per_weight == 2.0
    assert str(next(tiny_gqa.model.parameters()).dtype) == "torch.float32"  # lm untouched


def test_the_choice_figure_names_speed_agreement_and_where_the_text_departs():
    from viz.views.formats import format_choice_data, format_choice_figure

    run = _run([("transformers", "float32", 400, 0.04, 4), ("llama.cpp", "Q4_1", 72, 0.01, 2)])
    tokens = {
        "transformers float32": ["The", " sky", " is", " blue"],
        "llama.cpp Q4_1": ["The", " sky", " looks", " <b>"],
    }
    d = format_choice_data(run, tokens)
    q4 = d["rows"][1]
    assert q4["speed"] == pytest.approx(4.0) and (q4["same"], q4["of"]) == (2, 4)
    assert q4["speed_low"] == pytest.approx(0.036 / 0.012)  # the worst case of both spreads
    fig = format_choice_figure(run, tokens)
    assert fig.layout.title.text == (
        "Q4_1 on this prompt: ×4.00 the speed of float32, the same greedy tokens for 2 of 4"
    )
    bars = [t for t in fig.data if t.type == "bar"]
    labels = [t for t in fig.data if t.type == "scatter"]
    assert [list(t.y) for t in bars] == [["transformers float32"], ["llama.cpp Q4_1"]]
    assert labels[1].text[0].strip() == "10.0 ms: ×4.00 the speed, 2 of 4 tokens the same"
    assert list(labels[1].x) == pytest.approx([12.0])  # past the spread's end
    f32_text, q4_text = [a.text for a in fig.layout.annotations]
    assert f32_text == "<b>float32</b>: The sky is blue"  # the reference: nothing marked
    # Q4_1's text marked from its first token that differs; a token's own markup escaped
    assert q4_text.startswith("<b>Q4_1</b>: The sky<span style=") and "&lt;b&gt;" in q4_text
    assert " looks</span>" in q4_text
    assert format_choice_figure(run, tokens).to_json() == fig.to_json()
    assert not format_choice_figure(run).layout.annotations  # no tokens given: bars alone
    with pytest.raises(ValueError, match="tokens for \\['llama.cpp F16'\\]"):
        format_choice_figure(run, {"llama.cpp F16": ["x"]})
    with pytest.raises(TypeError, match="takes a FormatRun"):
        format_choice_figure([])
