"""A decode step compiled (viz.perf.compiled): traced once with a static cache, the same greedy
tokens as viz.record, the compile's time and an empty cache folder that is removed afterwards,
nothing left running; the derived figures from the spreads; why a growing cache needs the
static one (it recompiles); the figure; bad input. One real Inductor compile of a 1-layer tiny
model (~20 s of CPU on 2 cores: a second layer adds kernels to build and nothing to check);
the rest traces 1-layer models with the quick "aot_eager" backend."""

import dataclasses
import os
import sys
import tempfile

import psutil
import pytest
import torch

import viz
from viz import compat
from viz.documents import load_document
from viz.perf.compiled import (
    SPEEDUP_WORDS,
    CompiledStep,
    compiler_missing,
    empty_inductor_cache,
    measure_compiled_step,
)
from viz.runtime import vector_check
from viz.spread import TOO_CLOSE, Spread
from viz.views.compiled import compiled_data, compiled_figure

from conftest import tiny_model

PROMPT = "Hello, world"


@pytest.fixture(scope="module")
def one_layer():
    """A 1-layer tiny model with grouped-query attention: what a compile traces, lowers and
    builds grows with the layers (2 layers: 11 C++ kernels to build, 1 layer: 8)."""
    return tiny_model(gqa=True, n_layers=1)


@pytest.fixture(scope="module")
def inductor_run(one_layer):
    """The real remedy on the tiny model: Inductor, an empty cache folder. Also notes the
    compile's processes still running after it (a compile worker pool, a fork of this process,
    a C++ compiler), and the cache folder setting. Other processes are left out of the check:
    other tests' fixtures start and end their own at any time (a Binder build, a browser)."""
    from torch._inductor import cpu_vec_isa

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    setting = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    folders = []  # the cache folder set at each call of Inductor's vector check, in order
    real = cpu_vec_isa.pick_vec_isa

    def watched():
        folders.append(os.environ.get("TORCHINDUCTOR_CACHE_DIR"))
        return real()

    cpu_vec_isa.pick_vec_isa = watched
    try:
        run = measure_compiled_step(one_layer, prompt=PROMPT, new_tokens=5, repeats=2)
    finally:
        cpu_vec_isa.pick_vec_isa = real
    # other tests' processes: running before the compile, or a step of the Binder build running
    # in the background (tests/test_binder.py: its steps start at any time, and one compiles
    # optimum-quanto's kernel with c++, seen here in a fresh-clone run)
    binder = sys.modules.get("test_binder")
    theirs = before | {p.pid for p in getattr(binder, "_RUNNING", [])}
    left = [p for p in psutil.Process().children(recursive=True) if not _others(p, theirs)]
    return run, [what for what in map(_described, left) if _is_the_compiles(what)], setting, folders


def _others(process: psutil.Process, theirs: set[int]) -> bool:
    """Whether `process` belongs to another test's fixture: it, or a process it descends from
    below this one, is one of `theirs`."""
    try:
        line = [process] + process.parents()
    except psutil.Error:  # ended meanwhile
        return True
    for p in line:
        if p.pid == os.getpid():
            return False
        if p.pid in theirs:
            return True
    return True  # not below this process any more


def _described(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline()) or process.name()
    except psutil.Error:  # ended meanwhile
        return ""


def _is_the_compiles(command: str) -> bool:
    """A process a compile starts: Inductor's worker pool, a fork of this process (whose
    command is this one's) or a C/C++ compiler."""
    this = " ".join(psutil.Process().cmdline())
    program = os.path.basename(command.split(" ")[0]) if command else ""
    return bool(command) and (
        "_inductor" in command
        or command == this
        or program in {"cc", "c++", "gcc", "g++", "cc1plus", "ld"}
    )


@pytest.fixture(scope="module")
def quick_run():
    mha = tiny_model(gqa=False, n_layers=1)  # plain multi-head attention: the other kind
    return measure_compiled_step(mha, prompt=PROMPT, new_tokens=4, repeats=2, backend="aot_eager")


# ---- the real compile ------------------------------------------------------------------------
def test_the_step_is_traced_once_and_makes_viz_record_s_greedy_tokens(inductor_run, one_layer):
    run = inductor_run[0]
    assert run.backend == "inductor" and run.cold
    assert run.graphs == 1  # fixed shapes: one trace, never recompiled as the cache fills
    trace = viz.record(one_layer, PROMPT, max_new_tokens=5, stop_at_eos=False, embeddings=False)
    assert run.token_ids == trace.generated_ids and run.same_tokens
    assert len(run.token_ids) == 5 and run.prompt_tokens == len(trace.prompt_ids)


def test_every_way_times_every_decode_step_of_every_run(inductor_run):
    run = inductor_run[0]
    for way in (run.recorded, run.eager, run.compiled):
        assert way.runs == run.repeats * (run.new_tokens - 1) == 8
        assert 0 < way.low <= way.median <= way.high
    # compiling (tracing, generating C++, building it) takes far longer than a step it makes
    assert run.compile_s > 20 * run.compiled.high


def test_the_compile_leaves_no_process_and_no_cache_setting_behind(inductor_run):
    _, left, setting, _ = inductor_run
    assert left == []  # no compile worker, fork or compiler still running
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == setting


def test_the_process_check_knows_a_compile_s_processes_from_others():
    this = " ".join(psutil.Process().cmdline())
    worker = (
        "/usr/bin/python3 /x/site-packages/torch/_inductor/compile_worker/__main__.py "
        "--pickler=torch._inductor.compile_worker.subproc_pool.SubprocPickler --workers=2"
    )
    assert _is_the_compiles(worker) and _is_the_compiles(this)
    assert _is_the_compiles("/usr/bin/g++ /tmp/x/c2k.cpp -shared -O3 -o c2k.so")
    assert not _is_the_compiles("/bin/bash ./binder/postBuild")
    assert not _is_the_compiles("/usr/lib/chromium/chromium --type=renderer")
    assert not _is_the_compiles("")


def test_the_machines_vector_check_is_made_before_the_compile_and_not_again(inductor_run):
    """Inductor's check of this CPU's vector instructions runs before the cold compile, in the
    usual folder, and is kept for the process: a later check builds nothing (a cache hit)."""
    from torch._inductor import cpu_vec_isa

    run, _, setting, folders = inductor_run
    assert run.isa_check_s >= 0.0 and run.compile_s > 0
    assert folders and folders[0] == setting  # the first check: before the empty folder
    checked = cpu_vec_isa.valid_vec_isa_list.cache_info()
    assert checked.currsize == 1  # made in this process, once
    assert vector_check(torch.device("cpu"), "inductor") >= 0.0
    again = cpu_vec_isa.valid_vec_isa_list.cache_info()
    assert (again.hits, again.misses) == (checked.hits + 1, checked.misses)
    # where no C++ is built, nothing is checked
    assert vector_check(torch.device("cpu"), "aot_eager") == 0.0
    assert vector_check(torch.device("meta"), "inductor") == 0.0
    assert cpu_vec_isa.valid_vec_isa_list.cache_info().hits == again.hits


def test_an_empty_cache_folder_is_made_and_removed():
    setting = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with empty_inductor_cache() as folder:
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == folder
        assert os.path.isdir(folder) and os.listdir(folder) == []
        assert os.path.dirname(folder) == tempfile.gettempdir()
    assert not os.path.exists(folder)
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == setting


# ---- the figures derived from the spreads ----------------------------------------------------
def made_by_hand(eager, compiled, compile_s=10.0, **extra) -> CompiledStep:
    """A CompiledStep with chosen step spreads (seconds: median, low, high)."""
    spread = lambda m, lo, hi: Spread(m, lo, hi, 15)  # noqa: E731
    return CompiledStep(
        model="hand",
        n_layers=30,
        hidden_size=64,
        dtype="float32",
        weight_bytes=1,
        random_weights=True,
        device="cpu",
        device_name="Test CPU",
        threads=2,
        prompt_tokens=8,
        new_tokens=16,
        repeats=1,
        backend="inductor",
        compile_s=compile_s,
        cold=True,
        graphs=1,
        recorded=spread(*eager),
        eager=spread(*eager),
        compiled=spread(*compiled),
        **extra,
    )


def test_saved_speed_up_and_break_even_come_from_the_spreads():
    run = made_by_hand((0.005, 0.0045, 0.0055), (0.003, 0.0028, 0.0032))
    assert run.saved.median == pytest.approx(0.002)
    assert (run.saved.low, run.saved.high) == pytest.approx((0.0045 - 0.0032, 0.0055 - 0.0028))
    assert run.speedup.median == pytest.approx(5 / 3)
    assert (run.speedup.low, run.speedup.high) == pytest.approx((4.5 / 3.2, 5.5 / 2.8))
    assert run.speedup_verdict.word == SPEEDUP_WORDS[1] == "compiled is faster"
    assert run.break_even_tokens == pytest.approx(10.0 / 0.002)  # 5,000 tokens
    assert "pays for itself after 5,000 tokens" in str(run)


def test_the_vector_check_is_printed_apart_from_the_compile_when_it_was_made():
    run = made_by_hand((0.005, 0.0045, 0.0055), (0.003, 0.0028, 0.0032), isa_check_s=7.8)
    assert "compile: 10.0 s" in str(run)
    assert "7.8 s for Inductor's check of this CPU's vector instructions" in str(run)
    assert "vector instructions" not in str(dataclasses.replace(run, isa_check_s=0.0))


def test_a_speed_up_inside_the_noise_is_too_close_to_call():
    run = made_by_hand((0.044, 0.042, 0.052), (0.0437, 0.040, 0.046))
    assert run.speedup.low < 1 < run.speedup.high
    assert run.speedup_verdict.word == TOO_CLOSE
    assert "does not pay for itself" in str(run)
    slower = made_by_hand((0.003, 0.0029, 0.0031), (0.005, 0.0049, 0.0051))
    assert slower.speedup_verdict.word == SPEEDUP_WORDS[0] == "eager is faster"
    assert slower.break_even_tokens is None


def test_it_round_trips_through_json(quick_run, tmp_path):
    assert quick_run.backend == "aot_eager" and quick_run.graphs == 1 and quick_run.same_tokens
    back = load_document(quick_run.save(tmp_path / "compiled.json"))
    assert isinstance(back, CompiledStep) and back == quick_run
    reference = dataclasses.replace(quick_run, source="a test")
    assert "reference, not measured here: a test" in str(reference)


# ---- why a static cache ----------------------------------------------------------------------
def test_a_growing_cache_makes_torch_compile_trace_again(one_layer):
    """The reason for the static cache: with a DynamicCache every step has new shapes."""
    forward = compat.last_logits(one_layer.model)
    step = torch.compile(
        lambda t, c: forward(t, c).argmax(-1, keepdim=True),
        backend="aot_eager",
        fullgraph=True,
        dynamic=False,
    )
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters["stats"]
    before = counters["unique_graphs"]
    ids = torch.tensor([one_layer.tokenizer(PROMPT)["input_ids"]])
    with torch.no_grad():
        cache = compat.new_cache(one_layer.model)
        token = forward(ids, cache).argmax(-1, keepdim=True)
        for _ in range(2):  # the second step's cache is one position longer
            token = step(token, cache)
    torch._dynamo.reset()
    assert counters["unique_graphs"] - before >= 2  # each of the two steps traced anew


# ---- the figure ------------------------------------------------------------------------------
def test_the_figure_draws_each_way_s_step_and_spread(quick_run):
    reference = dataclasses.replace(quick_run, source="benchmarks/remedies.py")
    d = compiled_data([quick_run, reference])
    assert d["ways"] == ["eager, growing cache", "eager, static cache", "compiled, static cache"]
    first = d["panels"][0]
    assert first["ms"] == pytest.approx(
        [
            quick_run.recorded.median * 1e3,
            quick_run.eager.median * 1e3,
            quick_run.compiled.median * 1e3,
        ]
    )
    assert first["low_ms"][2] == pytest.approx(quick_run.compiled.low * 1e3)
    assert "measured here" in first["title"] and "reference" in d["panels"][1]["title"]
    fig = compiled_figure([quick_run, reference])
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 6 and [b.x[0] for b in bars[:3]] == pytest.approx(first["ms"])
    with pytest.raises(ValueError, match="measure one with viz.perf.measure_compiled_step"):
        compiled_figure([])


# ---- bad input -------------------------------------------------------------------------------
def test_without_a_cpp_compiler_it_says_what_to_install(tiny_gqa):
    import torch._inductor.config as inductor_config

    with inductor_config.patch({"cpp.cxx": ("viz-no-such-compiler++",)}):
        why = compiler_missing()
        assert why and "apt install g++" in why
        with pytest.raises(RuntimeError, match="needs a C\\+\\+ compiler"):
            measure_compiled_step(tiny_gqa)
    assert compiler_missing() is None  # and the setting is back


def test_a_cpp_compiler_is_found_here():
    assert compiler_missing() is None  # CI and Binder have g++ (lesson 13 compiles)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"new_tokens": 2}, "new_tokens must be a whole number >= 3"),
        ({"new_tokens": 4.0}, "new_tokens must be a whole number"),
        ({"repeats": 0}, "repeats must be a whole number >= 1"),
        ({"backend": "fastest"}, "unknown torch.compile backend 'fastest'"),
        ({"prompt": "  "}, "the prompt is empty"),
        ({"threads": 0}, "threads"),
        ({"mode": "max-autotune"}, "unknown torch.compile mode 'max-autotune'"),
        ({"mode": "reduce-overhead"}, "needs a CUDA device, not cpu: use mode='default' here"),
    ],
)
def test_bad_arguments_are_refused(tiny_gqa, kwargs, match):
    with pytest.raises(ValueError, match=match):
        measure_compiled_step(tiny_gqa, **kwargs)


def test_a_prompt_too_long_for_the_model_is_refused():
    short = tiny_model(context_length=16)
    with pytest.raises(ValueError, match="do not fit .* 16 positions: use a shorter prompt"):
        measure_compiled_step(short, prompt="x" * 14, new_tokens=4)


def test_only_a_loaded_model_is_accepted():
    with pytest.raises(ValueError, match="expected a viz.LoadedModel, not str"):
        measure_compiled_step("SmolLM2")


def test_a_process_started_now_counts_and_other_fixtures_processes_do_not():
    import subprocess

    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    old = subprocess.Popen(sleeper)  # another fixture's, running before the compile
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    new = subprocess.Popen(sleeper)  # started during the compile: the compile's
    try:
        assert not _others(psutil.Process(new.pid), before)
        assert _others(psutil.Process(old.pid), before)
    finally:
        for p in (old, new):
            p.kill()
            p.wait()
