"""The course's notebooks are what the lessons say, executed, small, and listed in the README.

Fast checks on the committed files (no kernel). nbval itself runs over notebooks/ in `make test`
(see the Makefile), with the sanitizers of tests/nbval-sanitize.cfg, checked here too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from nbval.plugin import get_sanitize_patterns

from tools import course

LESSONS = course.lesson_paths()
NOTEBOOKS = course.notebook_paths()
SANITIZE = Path(__file__).with_name("nbval-sanitize.cfg")


def test_the_course_has_lessons():
    assert LESSONS, f"no lessons in {course.LESSONS}"


def test_every_lesson_has_its_notebook_and_every_notebook_its_lesson():
    lessons = {p.stem for p in LESSONS}
    notebooks = {p.stem for p in NOTEBOOKS}
    assert not lessons - notebooks, (
        f"lessons without a notebook: {sorted(lessons - notebooks)}; run `make notebooks`"
    )
    assert not notebooks - lessons, f"notebooks without a lesson: {sorted(notebooks - lessons)}"


def test_jupytext_pairs_the_two_folders():
    """jupytext.toml pairs lessons/NAME.py (py:percent) with notebooks/NAME.ipynb, so that
    `jupytext --sync lessons/NAME.py` and Jupyter opened at the repository root keep them paired."""
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file
    from jupytext.formats import long_form_multiple_formats
    from jupytext.paired_paths import paired_paths

    config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(course.ROOT)))
    for lesson in LESSONS:
        nb = course.notebook_for(lesson)
        formats = config.default_formats(str(nb))
        assert formats, f"jupytext.toml pairs nothing with {nb}"
        main = [f for f in long_form_multiple_formats(formats) if f["extension"] == ".ipynb"][0]
        paths = {Path(p).resolve(): fmt for p, fmt in paired_paths(str(nb), main, formats)}
        assert lesson.resolve() in paths, f"{nb.name} is not paired with {lesson}"
        assert paths[lesson.resolve()]["format_name"] == "percent"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_cells_are_the_lesson_cells(notebook):
    problems = course.pairing_problems(notebook)
    assert not problems, (
        f"{notebook.name} differs from {course.lesson_for(notebook).name} "
        "(edit lessons/, then `make notebooks`):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_executed(notebook):
    problems = course.execution_problems(notebook)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_small_and_holds_no_widget_javascript(notebook):
    size = notebook.stat().st_size
    assert size < course.MAX_NOTEBOOK_BYTES, (
        f"{notebook.name} is {size:,} bytes: `make notebooks` strips the widget state; if it is "
        "still too big, show less (fewer steps, smaller figures, no embedded plotly.js)"
    )
    assert "widgets" not in course.read_notebook(notebook).metadata, (
        "metadata.widgets holds widget JavaScript: re-execute with `make notebooks`"
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_nbval_markers_are_well_formed(notebook):
    """nbval ignores a marker comment silently if its line holds anything else."""
    for i, cell in enumerate(course.read_notebook(notebook).cells):
        for line in cell.source.splitlines():
            if "NBVAL_" in line:
                assert re.fullmatch(
                    r"# NBVAL_(IGNORE_OUTPUT|SKIP|RAISES_EXCEPTION|CHECK_OUTPUT)", line.strip()
                ), f"cell {i}: {line!r} is not a marker nbval reads"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_each_lesson_links_to_the_next(notebook):
    i = NOTEBOOKS.index(notebook)
    if i + 1 == len(NOTEBOOKS):
        return  # the last lesson
    text = "\n".join(
        c.source for c in course.read_notebook(notebook).cells if c.cell_type == "markdown"
    )
    assert f"]({NOTEBOOKS[i + 1].name})" in text, f"no link to {NOTEBOOKS[i + 1].name}"


def test_the_course_map_lists_every_lesson_once_in_order():
    problems = course.map_problems()
    assert not problems, "lessons/course.toml and lessons/ disagree:\n" + "\n".join(problems)


def test_lesson_00_shows_the_current_course_map():
    text = course.lesson_paths()[0].read_text(encoding="utf-8")
    assert course.MAP_START in text and text == course.lesson00_with_map(text), (
        "lesson 00's course map is stale: run `make readme`"
    )


def test_reading_time_is_words_and_run_time():
    lesson = course.lesson_paths()[0]
    words = sum(
        len(re.sub(r"<!-- course-map:start.*?course-map:end -->", "", c.source, flags=re.S).split())
        for c in course.read_lesson(lesson).cells
        if c.cell_type == "markdown"
    )
    run_s = course.read_notebook(course.notebook_for(lesson)).metadata["viz"]["execution_s"]
    assert course.reading_minutes(lesson) == max(1, round(words / 200 + run_s / 60))


def test_readme_lists_every_lesson_with_its_figures():
    text = course.README.read_text(encoding="utf-8")
    assert text == course.readme_with_block(text), "README's lesson table is stale: `make readme`"


def yardstick_lines(notebook: Path) -> list[str]:
    """Every printed line of a saved notebook that begins `yardsticks:`."""
    lines = []
    for cell in course.read_notebook(notebook).cells:
        for out in cell.get("outputs", []):
            text = (
                out.get("text", "")
                if out.get("output_type") == "stream"
                else out.get("data", {}).get("text/plain", "")
            )
            lines += [ln for ln in "".join(text).splitlines() if ln.startswith("yardsticks:")]
    return lines


def test_every_lesson_that_judges_prints_the_same_yardsticks():
    """The saved course comes from one run (`make notebooks`): the peaks and the fixed cost are
    measured once, by the first lesson that asks, so every lesson shows the same figures."""
    calls = [n for n in NOTEBOOKS if "perf.yardsticks()" in course.lesson_for(n).read_text()]
    assert len(calls) >= 8, "the lessons that judge a measurement print perf.yardsticks()"
    seen = {}
    for notebook in calls:
        lines = yardstick_lines(notebook)
        assert lines, f"{notebook.name} calls perf.yardsticks() but shows no yardsticks line"
        for line in lines:
            seen.setdefault(line, []).append(notebook.name)
    assert len(seen) == 1, (
        "the saved notebooks show different yardsticks (run every lesson "
        "in one `make notebooks`):\n" + "\n".join(f"{v}: {k}" for k, v in seen.items())
    )


def test_the_saved_course_is_one_run_on_one_machine():
    runs = {
        (m.get("cpu"), m.get("course_run"))
        for m in (course.read_notebook(n).metadata.get("viz", {}) for n in NOTEBOOKS)
    }
    assert len(runs) == 1 and None not in next(iter(runs)), (
        f"notebooks from several runs or machines: {sorted(map(str, runs))}: `make notebooks`"
    )


# ---- the whole run's measurements, which a re-execution of some lessons reuses --------------
def whole_run_measurements(folder: Path, run: str, cpu: str, hashed: bool = True) -> Path:
    """A whole run's measurements as `course.course_measurements` keeps them: run.json and one
    document per kind, filed under this machine's hash (hashed=False: another machine's)."""
    from viz.perf.machine.cache import cache_file, measurements_dir

    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"run": run, "cpu": cpu}))
    for kind in course.MEASURED:
        name = cache_file(kind).relative_to(measurements_dir())
        if not hashed:
            name = name.with_name("cpu-2-threads-000000000000.json")
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
    return folder


@pytest.fixture
def committed(tmp_path, monkeypatch):
    """Where the course keeps its whole run's measurements, pointed at an empty folder."""
    monkeypatch.setenv("VIZ_KEEP_MEASUREMENTS", "")
    monkeypatch.setattr(course, "COURSE_MEASUREMENTS", tmp_path / "committed")
    return tmp_path / "committed"


def test_a_whole_run_keeps_its_measurements_where_a_partial_one_reuses_them(committed):
    with course.course_measurements(True) as run:
        measured = Path(os.environ["VIZ_MEASURE_DIR"])
        assert not (measured / "peaks").exists(), "a whole run starts from an empty folder"
        (measured / "peaks").mkdir()
        (measured / "peaks" / "made.json").write_text('{"made": "now"}')
    saved = json.loads((committed / "run.json").read_text())
    assert saved == {"run": run, "cpu": course.cpu_label()}
    assert (committed / "peaks" / "made.json").read_text() == '{"made": "now"}'

    shutil.rmtree(committed)
    whole_run_measurements(committed, "2026-01-01 00:00 UTC", course.cpu_label())
    before = sorted((p.relative_to(committed), p.read_text()) for p in committed.rglob("*.json"))
    with course.course_measurements(False) as run:
        assert run == "2026-01-01 00:00 UTC"
        copy = Path(os.environ["VIZ_MEASURE_DIR"])
        assert copy != committed and (copy / "run.json").is_file()
        (copy / "peaks" / "new.json").write_text("{}")  # a lesson measuring: not kept
    after = sorted((p.relative_to(committed), p.read_text()) for p in committed.rglob("*.json"))
    assert after == before


def test_some_lessons_refuse_to_run_without_the_whole_runs_measurements(committed):
    with pytest.raises(
        SystemExit, match="no measurements of a whole-course run in .*make notebooks"
    ):
        with course.course_measurements(False):
            pass
    assert "VIZ_MEASURE_DIR" in os.environ  # the suite's own folder, left as it was
    assert not committed.exists()


def test_some_lessons_refuse_to_run_with_another_machines_measurements(committed):
    whole_run_measurements(committed, "2026-01-01 00:00 UTC", "Xeon, 2 CPUs, AMX", hashed=False)
    with pytest.raises(
        SystemExit,
        match=r"measured on Xeon, 2 CPUs, AMX \(2026-01-01 00:00 UTC\).*holds no peaks/cpu-.*"
        r"another CPU, thread count or torch.*VIZ_KEEP_MEASUREMENTS=1",
    ):
        with course.course_measurements(False):
            pass


@pytest.mark.parametrize("text", ['{"run": "2026-01-01 00:00 UTC", "cpu": "x"', "[]", "{}"])
def test_a_run_file_that_is_not_a_whole_runs_is_named_with_the_fix(committed, text):
    whole_run_measurements(committed, "2026-01-01 00:00 UTC", course.cpu_label())
    (committed / course.RUN_FILE).write_text(text)
    before = sorted(p.read_text() for p in committed.rglob("*.json"))
    match = r"committed/run\.json is not what a whole `make notebooks` run writes"
    with pytest.raises(SystemExit, match=match + r".*run `make notebooks` for every lesson"):
        with course.course_measurements(False):
            pass
    with pytest.raises(SystemExit, match=match):
        course.measurement_problems(committed)
    assert sorted(p.read_text() for p in committed.rglob("*.json")) == before


def test_committed_measurements_must_be_the_saved_notebooks_run(tmp_path):
    meta = course.read_notebook(NOTEBOOKS[0]).metadata["viz"]
    same = whole_run_measurements(tmp_path / "same", meta["course_run"], meta["cpu"])
    assert course.measurement_problems(same) == []
    other = whole_run_measurements(tmp_path / "other", "2026-01-01 00:00 UTC", meta["cpu"])
    problems = course.measurement_problems(other)
    assert len(problems) == len(NOTEBOOKS) and "2026-01-01 00:00 UTC" in problems[0]
    assert course.measurement_problems(tmp_path / "none") == []  # none committed: no claim
    (tmp_path / "bare").mkdir()
    assert course.measurement_problems(tmp_path / "bare") == [
        "bare holds no run.json: run `make notebooks` for every lesson"
    ]
    assert course.measurement_problems() == []  # what is committed agrees


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_recorded_peak_memory_fits_binder(notebook):
    meta = course.read_notebook(notebook).metadata.get("viz", {})
    assert "peak_rss_mib" in meta, "not measured: re-execute with `make notebooks`"
    assert meta["peak_rss_mib"] * 2**20 < course.MEMORY_BUDGET_BYTES


# ---- the sanitizers: what varies is replaced, what is fixed is still compared -------------
def sanitize(text: str) -> str:
    for regex, replace in get_sanitize_patterns(SANITIZE.read_text()):
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.parametrize(
    "varies, fixed",
    [
        ("TTFT       598.5 ms (prefill 63 tokens/s)", "TTFT       <time> (prefill <rate>)"),
        ("TPOT       57.9 ms   decode 17.3 tokens/s", "TPOT       <time>   decode <rate>"),
        ("took 2.5 s, then 12 µs", "took <time>, then <time>"),
        ("copy 3.7 GB/s, matmul 1.2 TFLOP/s", "copy <rate>, matmul <rate>"),
        ("kernel peak RSS 984 MiB", "kernel peak RSS <memory>"),
        ("<Figure at 0x7f3a2c1b0d90>", "<Figure at 0x<address>>"),
        ("'uid': 'f3a0c1b2-1234-4abc-9def-0123456789ab'", "'uid': '<uuid>'"),
        (" 40%|####      | 4/10 [00:01<00:02,  2.91it/s]", " 40%|####      | 4/10 [<elapsed>]"),
    ],
)
def test_sanitizers_replace_what_varies(varies, fixed):
    assert sanitize(varies) == fixed


@pytest.mark.parametrize(
    "text",
    [
        "The capital of France is Paris.",
        "KV cache   2,027,520 bytes at 44 tokens (formula 2,027,520)",
        "weight bytes      538,060,032 (float32, 538 MB)",
        "prompt     37 tokens; generated 8 (eos)",
        "[504, 3575, 282, 4649, 314, 7042, 30, 2]",
        "step 3 (decode): chose ' France' with probability 0.99",
        "30 layers, 9 heads, 3 KV heads, 64 dims, 8 steps",
    ],
)
def test_sanitizers_keep_what_is_fixed(text):
    assert sanitize(text) == text


def test_the_lessons_are_handed_out_as_units_of_whole_lessons():
    """`make test`'s workers (tests/conftest.py): every lesson's browser test and its nbval
    items (cells and peak memory) go to one worker, in one unit (the light lessons in a unit of
    their own); other tests by module."""
    import conftest

    units = {}
    for p in course.notebook_paths():
        units[p.name] = {
            conftest.work_unit(f"tests/test_browser.py::test_lesson_runs_in_the_browser[{p.name}]"),
            conftest.work_unit(f"notebooks/{p.name}::Cell 3"),
            conftest.work_unit(f"notebooks/{p.name}::peak-memory"),
        }
    beside = {name for name, u in units.items() if u == {conftest.LESSONS_BESIDE_UNIT}}
    assert beside == set(conftest.LESSONS_BESIDE)
    assert all(u == {conftest.LESSONS_UNIT} for name, u in units.items() if name not in beside)
    assert conftest.work_unit("tests/test_spread.py::test_text") == "tests/test_spread.py"
    assert (
        conftest.work_unit("tests/test_browser.py::test_make_lab_serves_the_lessons")
        == "tests/test_browser.py"
    )


def test_each_lessons_browser_run_comes_before_its_nbval_items():
    """Under two workers the collection is sorted by `_run_order` (stably): within each unit of
    lessons, a lesson's browser run (which nbval replays) is ordered before its nbval items,
    and the light lessons come after every other test but nbval with other kernels."""
    import conftest

    names = [p.name for p in course.notebook_paths()]
    collected = ["tests/test_spread.py::test_text", conftest.OTHER_KERNELS_FILE + "::test_x"]
    collected += [f"{conftest.BROWSER_LESSON}{n}]" for n in names]
    collected += [conftest.BINDER_TEST]
    collected += [f"notebooks/{n}::{cell}" for n in names for cell in ("Cell 1", "peak-memory")]
    ordered = sorted(collected, key=lambda n: conftest._run_order(n, workers=True))
    for n in names:
        browser = ordered.index(f"{conftest.BROWSER_LESSON}{n}]")
        assert browser < ordered.index(f"notebooks/{n}::Cell 1"), n
    first_beside = min(
        i for i, n in enumerate(ordered) if conftest.work_unit(n) == conftest.LESSONS_BESIDE_UNIT
    )
    assert ordered[first_beside - 1] == conftest.BINDER_TEST
    assert ordered[-1] == conftest.OTHER_KERNELS_FILE + "::test_x"


def test_a_run_puts_the_environment_back_even_after_an_error(monkeypatch):
    """tools.course sets VIZ_MEASURE_DIR and VIZ_CHECK_PEAKS for a run's kernels (`_env`):
    afterwards what was set is set again, what was not is gone, even if the run failed."""
    monkeypatch.setenv("VIZ_TEST_SET", "before")
    monkeypatch.delenv("VIZ_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError, match="a lesson failed"):
        with course._env(VIZ_TEST_SET="during", VIZ_TEST_UNSET="during"):
            assert os.environ["VIZ_TEST_SET"] == os.environ["VIZ_TEST_UNSET"] == "during"
            raise RuntimeError("a lesson failed")
    assert os.environ["VIZ_TEST_SET"] == "before" and "VIZ_TEST_UNSET" not in os.environ


def checks_hidden(source: str) -> bool:
    """True when a cell calls compare_prediction(...) as a statement that is not its last: the
    verdict it returns is then never shown (only a cell's last expression is displayed)."""
    import ast

    try:
        body = ast.parse(source).body
    except SyntaxError:  # IPython syntax (magics): not a check cell of ours
        return False
    calls = [
        n
        for n in body
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and getattr(n.value.func, "id", "") == "compare_prediction"
    ]
    return bool(calls) and calls[-1] is not body[-1]


def test_a_check_hidden_by_a_later_statement_is_found():
    assert checks_hidden("compare_prediction(p, x)\nassert x")
    assert not checks_hidden("assert x\ncompare_prediction(p, x)")
    assert not checks_hidden("print(1)")


@pytest.mark.parametrize("lesson", course.lesson_paths(), ids=lambda p: p.name)
def test_every_check_shows_its_verdict(lesson):
    # lesson 13's prompt-lookup check once ended in an assert: its verdict never showed
    hidden = [
        i
        for i, c in enumerate(course.read_lesson(lesson).cells)
        if c.cell_type == "code" and checks_hidden(c.source)
    ]
    assert not hidden, f"cells {hidden}: compare_prediction(...) must be the cell's last line"


def test_make_notebooks_names_a_lessons_slowest_cells():
    """`make notebooks` prints each lesson's slowest cells: slowest first, with the cell's first
    line of code (blank and comment lines skipped) and its time."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# a lesson"),
        nbformat.v4.new_code_cell("\nquick = 1"),
        nbformat.v4.new_code_cell("# the sweep\nsweep = perf.sweep(lm)\nprint(sweep)"),
        nbformat.v4.new_code_cell("middle = 2"),
    ]
    run = course.Run(nb, 9.0, 0, cell_seconds={1: 0.5, 2: 7.25, 3: 1.0})
    assert course.slowest_cells(run, count=2) == [
        "cell 2, 7.2 s: sweep = perf.sweep(lm)",
        "cell 3, 1.0 s: middle = 2",
    ]
    assert course.slowest_cells(run)[-1] == "cell 1, 0.5 s: quick = 1"
