"""Shared fixtures: tiny random-weight models (seconds, no files), the real default model, one
fake clock, the `real_model` marker, and one headless Chromium for every browser test (with
one rule for a machine without it: skip on a learner's machine, fail in CI).

The tiny models are built the way a learner builds any model from its shape:
`viz.perf.from_config` with a 2-layer Llama config and the byte tokenizer (one token per UTF-8
byte, so an emoji splits across tokens as it does in the real model). Their text is
meaningless; prefill, decode, the KV cache and grouped-query attention are the real code.
"""

import os
import shutil
from typing import Optional

import pytest

import viz
from viz import perf


def tiny_config(gqa: bool = True, n_layers: int = 2, context_length: int = 512) -> dict:
    """A Llama config: 4 query heads sharing 2 KV heads (gqa=True) or 4 KV heads (plain MHA)."""
    return {
        "name": f"tiny-{'gqa' if gqa else 'mha'}",
        "source": "tests/conftest.py",
        "config": {
            "model_type": "llama",
            "vocab_size": perf.BYTE_VOCAB,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": n_layers,
            "num_attention_heads": 4,
            "num_key_value_heads": 2 if gqa else 4,
            "head_dim": 16,
            "max_position_embeddings": context_length,
            "tie_word_embeddings": True,
        },
    }


def tiny_model(
    gqa: bool = True,
    *,
    seed: int = 0,
    device: str = "cpu",
    n_layers: int = 2,
    context_length: int = 512,
    dtype: Optional[str] = None,
) -> viz.LoadedModel:
    """A random-weight 2-layer Llama (GQA or MHA) with the byte tokenizer, seeded (dtype None:
    the device's default, float32 on a CPU and bfloat16 on CUDA)."""
    return perf.from_config(
        tiny_config(gqa, n_layers, context_length), device=device, seed=seed, dtype=dtype
    )


def fake_machine_peaks(
    read: float = 30e9,
    flops: Optional[dict] = None,
    *,
    device_name: str = "Test CPU",
    threads: int = 2,
    spread: float = 0.0,
    **fields,
) -> "perf.MachinePeaks":
    """Machine peaks made by hand: read bandwidth `read` bytes/s, matmul `flops` (dtype →
    FLOP/s; default 90 and 180 GFLOP/s), each with seven runs spread ±`spread` around it (the
    middle half then runs from -spread/2 to +spread/2, about)."""
    flops = flops or {"float32": 90e9, "bfloat16": 180e9}

    def runs(rate, amount):  # seven runs whose rates are rate × (1 - spread .. 1 + spread)
        return [amount / (rate * (1 + spread * k / 3)) for k in range(-3, 4)]

    def bw(method, dtype="float32"):
        n = 1 << 28
        return perf.Bandwidth(
            method,
            n,
            read,
            read * 1.1,
            dtype,
            threads,
            7,
            "perf_counter",
            runs_s=runs(read, n),
            moved_bytes=n,
        )

    matmul = {
        dt: perf.Matmul(
            dt, 64, f, f * 1.1, runs_s=runs(f, 2.0 * 64**3), sizes=[64], sizes_flops_per_s=[f]
        )
        for dt, f in flops.items()
    }
    args = dict(
        device="cpu",
        device_name=device_name,
        cpu_count=2,
        threads=threads,
        matmul=matmul,
        read=bw("read"),
        copy=bw("copy"),
        matvec={dt: bw("matvec", dt) for dt in flops},
        measured_at="2026-01-01 00:00 UTC",
        torch_version="x",
    )
    return perf.MachinePeaks(**{**args, **fields})


class FakeClock:
    """A clock whose k-th reading (k = 0, 1, 2, ...) is step·k + growth·k(k+1)/2 seconds.

    growth=0: every interval is `step`. growth>0: the k-th interval is step + growth·k, so
    every recorded duration is different and exactly known.
    """

    def __init__(self, step: float = 0.0, growth: float = 0.0):
        self.step, self.growth, self.k, self.t = step, growth, 0, 0.0

    def __call__(self) -> float:
        if self.k:
            self.t += self.step + self.growth * self.k
        self.k += 1
        return self.t


@pytest.fixture(scope="session")
def fake_clock():
    """The FakeClock class: `clock = fake_clock(step=0.01)`, then `viz.record(..., clock=clock)`."""
    return FakeClock


@pytest.fixture(scope="session")
def make_tiny():
    """`make_tiny(gqa=True, seed=0, device="cpu", n_layers=2, context_length=512)`."""
    return tiny_model


@pytest.fixture(scope="session")
def tiny_gqa():
    return tiny_model(gqa=True)


@pytest.fixture(scope="session")
def tiny_mha():
    return tiny_model(gqa=False)


@pytest.fixture(params=["gqa", "mha"])
def tiny(request, tiny_gqa, tiny_mha):
    """Each test using this runs twice: grouped-query attention and plain multi-head."""
    return tiny_gqa if request.param == "gqa" else tiny_mha


@pytest.fixture(scope="session")
def smollm():
    """The real default model on the CPU. `make test` fetches it first (`make model`).

    Tests that use it are marked `real_model` automatically (see below).
    """
    return viz.load_model(device="cpu")


def pytest_configure(config):
    """Every test run starts from an empty cache of measurements (no peaks, no fixed cost), as
    a new learner's machine does: the lessons' kernels (nbval, the browser) inherit it, so the
    first lesson that asks measures this machine afresh, and the rest reuse and check that.
    (VIZ_KEEP_MEASUREMENTS=1 keeps the VIZ_MEASURE_DIR you set, for a quick rerun.)"""
    import tempfile

    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its controller's folder
        return
    if not os.environ.get("VIZ_KEEP_MEASUREMENTS"):
        folder = tempfile.mkdtemp(prefix="viz-measurements-")
        os.environ["VIZ_MEASURE_DIR"] = folder
        config._viz_measurements = folder


def pytest_unconfigure(config):
    folder = getattr(config, "_viz_measurements", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Every test that uses the real model carries the `real_model` marker, so
    `pytest -m "not real_model"` runs in seconds on a machine without the model. Then the
    order (`_run_order`)."""
    for item in items:
        if "smollm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_model)
    workers = hasattr(config, "workerinput")  # a pytest-xdist worker
    items.sort(key=lambda item: _run_order(item.nodeid, workers))  # stable: cells in order


BINDER_TEST = "tests/test_binder.py::test_binder_build_emulated"
# `make test-other-kernels` on lesson 01 alone (tools/other_kernels.py; the browser test runs
# its lessons with those kernels for nbval): the last unit of the worker that is not running the
# lessons, niced, in what CPU the lessons leave idle.
OTHER_KERNELS_FILE = "tests/test_other_kernels.py"
HEAVY_FILES = (
    OTHER_KERNELS_FILE,
    "tests/test_browser.py",
    "tests/test_report_browser.py",
    "tests/test_figure_text.py",
    "tests/test_fallbacks.py",
)
BROWSER_LESSON = "tests/test_browser.py::test_lesson_runs_in_the_browser["
# `make test` runs on two pytest-xdist workers (`-n 2`, the Makefile's TEST_WORKERS), with the
# scheduler below: a lesson's browser run and nbval's comparison of that run
# (tools/nbval_replay.py) must happen on one worker, in that order, so the lessons form units
# of whole lessons; every other test module is one unit, handed to whichever worker is free
# (its module fixtures built once). The lessons that measure run one at a time, in one unit:
# two of them side by side on two cores, each with two torch threads, ran ten times slower
# than alone in an earlier run (the long-context lesson: 82 s alone, over 13 minutes beside
# the logit lens). The shortest lessons (LESSONS_BESIDE) form a
# second unit, which the other worker runs once its own tests are done: measured with
# nbclient, the long-context lesson took 74.6 s alone and 91.0 s with lessons 15, 00 and 01
# run one after another beside it (26.1, 17.1 and 9.1 s; 15 and 00 alone: 24.9 and 16.1 s).
# Their yardsticks are measured by then: 15 asks for the peaks and the fixed cost, which the
# measuring lessons' first (03) has measured minutes before this unit starts (after the Binder
# test); 02 and 07 run with the other kernels (tests/test_browser.py), whose measurements
# are a folder of their own, which 02 fills and 07 reads. Lesson 02 joined them
# when the lessons' worker was still the longer: in a fresh clone of 033ab62 its tests took
# 902.7 s, the other worker's 833.5 s (02: 36.2 s).
# Lessons 04 and 07 joined them when nbval with other kernels stopped running five lessons a
# second time (it took 171.8 s of the other worker in a fresh clone of 70bb0d7, where the
# lessons' worker's tests took 842.8 s and the other's 845.0 s; 04: 38.6 s, 07: 38.8 s).
# Lesson 04 went back when lessons 09, 10, 11, 13 and 14 were made shorter (their saved runs
# 394 s → 263 s in all): in a fresh clone of 5d49f34 the lessons' tests took 748 s and the
# other worker's 749 s, of which 04's 44 s (each lesson with its nbval items); 15 (36 s) went
# with it, and came back after a fresh clone of c243da3 (lessons' worker 708 s, the other
# 663 s; 15: 30 s).
LESSONS_UNIT = "lessons"
LESSONS_BESIDE_UNIT = "lessons beside"
LESSONS_BESIDE = (
    "00_start_here.ipynb",
    "01_from_text_to_vectors.ipynb",
    "02_predicting_the_next_token.ipynb",
    "07_capstone.ipynb",
    "15_the_whole_course.ipynb",
)


def _lesson_of(nodeid: str) -> Optional[str]:
    """The notebook file name a lesson's browser test or nbval item is about, else None."""
    if nodeid.startswith(BROWSER_LESSON):
        return nodeid[len(BROWSER_LESSON) : -1]
    if nodeid.startswith("notebooks/") and "::" in nodeid:
        return nodeid.split("::")[0].split("/")[-1]
    return None


def work_unit(nodeid: str) -> str:
    """What pytest-xdist hands to one worker as a whole: the lessons that measure, the light
    lessons (LESSONS_BESIDE), or a test module."""
    lesson = _lesson_of(nodeid)
    if lesson is None:
        return nodeid.split("::")[0]
    return LESSONS_BESIDE_UNIT if lesson in LESSONS_BESIDE else LESSONS_UNIT


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's loadscope scheduling with `work_unit` as the scope, in the order of the
    collection (`_run_order`; `--no-loadscope-reorder`)."""
    from xdist.scheduler import LoadScopeScheduling

    class LessonGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return LessonGroups(config, log)


def _run_order(nodeid: str, workers: bool) -> float:
    """One process (a plain run): the quick tests first, while the Binder build runs in the
    background (`_binder_build_starts`: pip and postBuild, about one core); then what drives
    a kernel, a browser or a server, which wants both cores; the Binder test last, collecting
    its build. Two workers (pytest-xdist hands out the units in this order): the lessons that
    measure to one worker, the quick tests to the other (which starts the Binder build in the
    background with its first test, `_binder_build_starts_beside`), then the other browser
    tests, the Binder tests, the light lessons (LESSONS_BESIDE), and last the other kernels'
    tool on one lesson (tests/test_other_kernels.py: by then that worker has nothing else to do
    while the lessons go on)."""
    heavy = nodeid.split("::")[0] in HEAVY_FILES or not nodeid.startswith("tests/")
    if not workers:
        return 2 if nodeid == BINDER_TEST else 1 if heavy else 0
    lesson = _lesson_of(nodeid)
    if lesson is not None:
        return 4.5 if lesson in LESSONS_BESIDE else 0
    if nodeid.split("::")[0] == OTHER_KERNELS_FILE:
        return 5
    return 4 if nodeid.split("::")[0] == BINDER_TEST.split("::")[0] else 3 if heavy else 2


@pytest.fixture(scope="session", autouse=True)
def _binder_build_starts(request, tmp_path_factory):
    """A plain run: start the Binder emulation's build (tests/test_binder.py) in the background
    with the session, when its test is selected; stop whatever of it still runs at the end.
    Under pytest-xdist: `_binder_build_starts_beside`."""
    if not any(item.nodeid == BINDER_TEST for item in request.session.items):
        yield
        return
    import test_binder

    if not hasattr(request.config, "workerinput"):
        test_binder.start_build(tmp_path_factory.mktemp("binder-build"))
    yield
    test_binder.stop_build()


_FIRST_TEST: list[str] = []  # the first test this process ran


@pytest.fixture(autouse=True)
def _binder_build_starts_beside(request, tmp_path_factory):
    """Under pytest-xdist: the worker whose first test is not a lesson starts the Binder build
    in the background then, beside the lessons on the other worker (the lessons' worker never
    does: if the Binder test reaches it, the test builds in the foreground)."""
    if _FIRST_TEST or not hasattr(request.config, "workerinput"):
        return
    _FIRST_TEST.append(request.node.nodeid)
    if _lesson_of(request.node.nodeid) is None and any(
        item.nodeid == BINDER_TEST for item in request.session.items
    ):
        import test_binder

        test_binder.start_build(tmp_path_factory.mktemp("binder-build"))


# ---- one browser for every browser test -----------------------------------------------------
# Flags that let Chromium run headless as root on a machine with no network (see NOTES.md).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
CHROMIUM_CANDIDATES = [
    "/usr/bin/chromium",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
]
HOW_TO_ENABLE = (
    "no Chromium or Chrome found. To run the browser test: `sudo make browser` "
    "(Debian/Ubuntu: apt-get install chromium chromium-driver fonts-liberation), or "
    "set VIZ_CHROMIUM=/path/to/chrome"
)


def find_chromium() -> Optional[str]:
    for name in [os.environ.get("VIZ_CHROMIUM", "")] + CHROMIUM_CANDIDATES:
        if not name:
            continue
        path = shutil.which(name) or (
            name if os.path.isfile(name) and os.access(name, os.X_OK) else None
        )
        if path:
            return path
    return None


def skip_or_fail(reason: str):
    """The one rule for a check that cannot run here (no browser, no Python 3.11 for the
    Binder build): a learner's machine skips it, saying how to enable it; CI (VIZ_CI=1), which
    must run every check, fails instead."""
    if os.environ.get("VIZ_CI"):
        pytest.fail(f"{reason} (CI runs with VIZ_CI=1, where this check must run)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """A headless Chromium context with a fresh profile, shared by every browser test."""
    path = find_chromium()
    if path is None:
        skip_or_fail(HOW_TO_ENABLE)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("pip install playwright (make test does) to run the browser tests")

    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=path,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 1600},
        )
        ctx.set_default_timeout(60_000)
        yield ctx
        ctx.close()
