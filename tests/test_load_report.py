"""The load report (`python -m viz report run.json sweep.json`): load runs and rate sweeps in
one offline HTML file — every section, several documents side by side, the same bytes twice,
nothing fetched, text escaped, bad input refused with the fix, an old file kept on failure.
Built from runs and sweeps made here without a server (test_serve_sweep's builders)."""

import re

import pytest

from test_serve_sweep import make_sweep, req, run_of
from viz.cli import main
from viz.serve import LoadRun, LoadSweep
from viz.views.load_report import SECTIONS, load_report_html, write_load_report


@pytest.fixture(scope="module")
def docs():
    a = run_of([req(i, 0.2 * i, 0.1 + 0.05 * i) for i in range(4)], "rate", 5.0, "<one & two>")
    b = run_of(
        [req(i, float(i), 0.1) for i in range(3)] + [req(3, 3.0, 0.1, ok=False)],
        "concurrency",
        label="second",
    )
    return [a, b, make_sweep("cb"), make_sweep("alone")]


@pytest.fixture(scope="module")
def html(docs):
    return load_report_html(docs)


def test_every_section_in_order_and_every_document(html, docs):
    at = [html.index(f'<section id="{key}">') for key, *_ in SECTIONS if key != "schedules"]
    assert at == sorted(at)
    for name in ("second", "cb", "alone"):
        assert name in html
    # side by side: one summary column per run
    assert html.count("<th>1. &lt;one &amp; two&gt; · 5 requests per second</th>") == 1
    assert "<th>2. second · 1 stream</th>" in html
    assert "1 failed: #3 boom" in html  # a failed request is listed with its reason
    assert "GuideLLM calls this &#x27;inter-token latency&#x27;" in html  # the definitions
    assert "limit broken first as the load rose: TTFT: first at 3.00 requests/s" in html
    for div in (
        "viz-load-tradeoff",
        "viz-load-itl",
        "viz-load-timeline-0",
        "viz-load-timeline-1",
        "viz-load-sweep",
        "viz-load-pareto",
    ):
        assert re.search(rf'Plotly.newPlot\(\s*"{div}"', html), div


def test_sections_follow_the_documents_given(docs):
    only_runs = load_report_html(docs[:2])
    assert '<section id="summary">' in only_runs and '<section id="sweeps">' not in only_runs
    only_sweep = load_report_html(docs[2])
    assert '<section id="summary">' not in only_sweep and 'id="pareto"' in only_sweep
    assert 'id="schedules"' not in only_runs  # no run recorded its scheduler


def test_needs_no_network_and_escapes_text(html):
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs() in html
    assert re.findall(r"<script[^>]*\bsrc=", html) == [] and "<link" not in html
    assert "<one & two>" not in html.replace(get_plotlyjs(), "")


def test_the_same_bytes_twice_through_saved_files(docs, tmp_path):
    paths = []
    for i, d in enumerate(docs):
        paths.append(d.save(tmp_path / f"d{i}.json"))
    back = [LoadRun.load(p) if i < 2 else LoadSweep.load(p) for i, p in enumerate(paths)]
    a = write_load_report(docs, tmp_path / "a.html").read_bytes()
    b = write_load_report(back, tmp_path / "b.html").read_bytes()
    assert a == b


def test_bad_documents_are_refused(docs):
    with pytest.raises(ValueError, match="non-empty list of load runs and rate sweeps"):
        load_report_html([])
    with pytest.raises(ValueError, match="a trace has its own report"):
        load_report_html([docs[0], "run.json"])


def test_a_failed_write_keeps_the_old_report(docs, tmp_path, monkeypatch):
    path = write_load_report(docs[:1], tmp_path / "r.html")
    before = path.read_bytes()
    import viz.views.load_report as mod

    def full_disk(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mod, "atomic_write", full_disk)
    with pytest.raises(ValueError, match="cannot write the report.*No space"):
        write_load_report(docs, path)
    assert path.read_bytes() == before


def test_the_command_line(docs, tmp_path, capsys):
    files = [str(d.save(tmp_path / f"{i}.json")) for i, d in enumerate(docs)]
    assert main(["report", *files]) == 0
    assert (tmp_path / "0.html").is_file() and "opens offline" in capsys.readouterr().out
    out = tmp_path / "sweeps.html"
    assert main(["report", files[2], files[3], "-o", str(out)]) == 0 and out.is_file()
    assert main(["report", files[0], str(tmp_path / "missing.json")]) == 2
    assert "no viz trace, load run or rate sweep file at" in capsys.readouterr().err
    odd = tmp_path / "odd.json"
    odd.write_text('{"kind": "llm-inference-sweep", "schema_version": 1}')
    assert main(["report", files[0], str(odd)]) == 2
    assert "is not a viz trace, load run or rate sweep" in capsys.readouterr().err
    assert main(["report", files[0], "--other", files[1]]) == 2
    assert "--other goes with a trace" in capsys.readouterr().err


def test_a_trace_and_load_runs_do_not_share_a_report(docs, tiny_gqa, tmp_path, capsys):
    import viz

    trace = viz.record(tiny_gqa, "Hi", max_new_tokens=2).save(tmp_path / "t.json")
    run = docs[0].save(tmp_path / "run.json")
    assert main(["report", str(trace), str(run)]) == 2
    assert "a trace and load runs or sweeps cannot share one report" in capsys.readouterr().err
    assert main(["report", str(trace), "-o", str(tmp_path / "t.html")]) == 0  # alone it can
