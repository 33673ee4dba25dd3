"""A Trace survives JSON unchanged; bad trace files are refused with a clear reason."""

import json
import os

import pytest

import viz
from viz.trace import SCHEMA_VERSION, Trace


@pytest.fixture(scope="module")
def trace(tiny_gqa):
    return viz.record(
        tiny_gqa, "Round trip: 🍕 and 東京", max_new_tokens=8, temperature=0.9, seed=2, label="tiny"
    )


def test_json_round_trip_is_equal(trace, tmp_path):
    path = trace.save(tmp_path / "t.json")
    again = Trace.load(path)
    assert again == trace
    assert again.embeddings.matrix().tobytes() == trace.embeddings.matrix().tobytes()
    assert again.to_json() == trace.to_json()


def test_file_is_plain_json_with_schema_version(trace, tmp_path):
    path = trace.save(tmp_path / "t.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == SCHEMA_VERSION and data["kind"] == "llm-inference-trace"
    assert data["steps"][0]["phase"] == "prefill"
    assert b"\x80" not in path.read_bytes()[:2]  # not a pickle (protocol 2+ starts with 0x80)


def test_corrupt_file_is_refused(trace, tmp_path):
    path = trace.save(tmp_path / "t.json")
    path.write_text(path.read_text()[:500])  # truncated
    with pytest.raises(ValueError, match="not valid JSON.*record it again"):
        Trace.load(path)


def test_other_json_is_not_a_trace(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(ValueError, match="not a viz trace"):
        Trace.load(path)


def test_newer_schema_is_refused(trace, tmp_path):
    data = trace.to_dict()
    data["schema_version"] = SCHEMA_VERSION + 1
    path = tmp_path / "new.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="newer than this viz understands.*upgrade"):
        Trace.load(path)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["steps"][0].pop("top_probs"), "missing the field 'top_probs'"),
        (lambda d: d["steps"][1].update(seq_len="7"), r"steps\[1\].seq_len should be an integer"),
        (lambda d: d["timing"].update(ttft_s=None), "timing.ttft_s should be a finite number"),
        (lambda d: d.update(steps={}), "steps should be a list"),
        # a bad number inside a list of numbers is named with its index
        (
            lambda d: d["steps"][1]["top_probs"].__setitem__(2, "0.5"),
            r"steps\[1\].top_probs\[2\] should be a finite number, found '0.5'",
        ),
        (
            lambda d: d["steps"][0]["top_ids"].__setitem__(1, True),
            r"steps\[0\].top_ids\[1\] should be an integer, found True",
        ),
    ],
)
def test_damaged_fields_are_named(trace, tmp_path, mutate, message):
    data = json.loads(trace.to_json())
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        Trace.load(path)


def test_missing_file_names_the_fix(tmp_path):
    with pytest.raises(ValueError, match="no trace file.*python -m viz record"):
        Trace.load(tmp_path / "nope.json")


def test_failed_save_keeps_the_old_file(trace, tmp_path):
    path = trace.save(tmp_path / "t.json")
    before = path.read_bytes()
    bad = Trace.from_dict(json.loads(trace.to_json()))
    bad.steps[0].top_probs[0] = float("nan")  # not representable in JSON
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        bad.save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["t.json"]  # no temporary file left behind


def test_write_error_midway_keeps_the_old_file(trace, tmp_path, monkeypatch):
    path = trace.save(tmp_path / "t.json")
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        trace.save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["t.json"]


def test_trace_file_is_compact(tiny_gqa, smollm, tmp_path):
    """Budget: a 64-step trace of the real model stays under 200 KB."""
    t = viz.record(
        smollm, "Tell me a story about a robot.", chat=True, max_new_tokens=64, stop_at_eos=False
    )
    size = t.save(tmp_path / "t.json").stat().st_size
    assert t.n_generated == 64 and size < 200_000, size


def test_save_refuses_a_target_that_is_not_a_file(trace, tmp_path):
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        trace.save(tmp_path / "folder.json")
    assert (tmp_path / "folder.json").is_dir()


def test_save_follows_a_symlink_and_keeps_permissions(trace, tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    trace.save(link)
    assert link.is_symlink() and Trace.load(real) == trace
    assert real.stat().st_mode & 0o777 == 0o640
    fresh = trace.save(tmp_path / "fresh.json")
    assert fresh.stat().st_mode & 0o044  # readable by others, like any file the user writes


def test_every_record_says_which_cpu_made_it(tiny_gqa):
    """A trace, and a serving client's record, carry the CPU's instruction-set features (what
    decides its kernels' speed), so a reference says what machine made it."""
    from viz.runtime import CPU_FEATURES, cpu_capability, cpu_features
    from viz.serve.client import ClientInfo

    trace = viz.record(tiny_gqa, "Hi", max_new_tokens=2)
    env = trace.environment
    assert env.cpu_features == cpu_features() and env.cpu_capability == cpu_capability()
    assert set(env.cpu_features) <= set(CPU_FEATURES) and env.cpu_capability
    again = Trace.from_dict(json.loads(trace.to_json()))
    assert again.environment.cpu_features == env.cpu_features
    client = ClientInfo.here()
    assert client.cpu_features == cpu_features() and client.cpu
    # a file from before the features were recorded loads, with none listed
    old = json.loads(trace.to_json())
    del old["environment"]["cpu_features"], old["environment"]["cpu_capability"]
    assert Trace.from_dict(old).environment.cpu_features == []
