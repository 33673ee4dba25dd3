"""The HTML report: one self-contained file with every section, offline, byte-identical when
written twice, written atomically; `python -m viz report` exits 2 with one line on bad input."""

import json
import re

import pytest

import viz
from viz.cli import main
from viz.trace import Trace
from viz.views import report
from viz.views.report import SECTIONS, report_html, write_report
from viz.views.whatif import whatif_grid

PLOT_SECTIONS = ["embeddings", "distribution", "explorer", "whatif", "kv", "timeline"]


@pytest.fixture(scope="module")
def trace(tiny_gqa):
    return viz.record(
        tiny_gqa,
        "Hi 🍕 東京 </script>",
        max_new_tokens=5,
        chat=True,
        stop_at_eos=False,
        label="tiny",
    )


@pytest.fixture(scope="module")
def other(tiny_mha):
    return viz.record(
        tiny_mha, "Hello", max_new_tokens=3, stop_at_eos=False, use_cache=False, label="no cache"
    )


@pytest.fixture(scope="module")
def html(trace):
    return report_html(trace)


@pytest.fixture(scope="module")
def saved(trace, tmp_path_factory):
    return trace.save(tmp_path_factory.mktemp("report") / "trace.json")


def test_report_has_every_section_in_order(html):
    """Every section, in order; attention only for a trace recorded with attention=True."""
    ids = re.findall(r'<section id="([a-z]+)">', html)
    assert ids == [key for key, _, _ in SECTIONS if key != "attention"]
    for key, heading, _ in SECTIONS:
        assert (f"<h2>{heading}</h2>" in html) == (key != "attention")
    for key in PLOT_SECTIONS:
        assert f'id="viz-{key}-plot"' in html
        assert re.search(rf'Plotly.newPlot\(\s*"viz-{key}-plot"', html)


def test_report_needs_no_network(html):
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs() in html  # plotly.js itself, inline
    assert re.findall(r"<script[^>]*\bsrc=", html) == []  # no script is fetched
    assert "<link" not in html and "@import" not in html
    assert html.count("<script") == html.count("</script>")


def test_report_escapes_the_recorded_text(html):
    # The prompt holds "</script>": it must never close a script element early.
    assert html.count("</script>") == html.count("<script")
    assert "&lt;/script&gt;" in html  # shown as text in the tokens and summary sections


def test_report_sliders_hold_every_step(html, trace):
    names = re.findall(r'\{"args":\[\["(\d+)"\]', html)
    assert sorted(set(int(n) for n in names)) == list(range(len(trace.steps)))
    assert html.count('"method":"animate"') >= 2 * len(trace.steps)  # two sliders


def test_report_whatif_grid_is_computed_by_python(html, trace):
    data = re.search(r"var VIZ_WHATIF=(\{.*?\});</script>", html, re.S).group(1)
    assert json.loads(data) == json.loads(json.dumps(whatif_grid(trace)))


def test_report_is_byte_identical_when_written_twice(trace, saved, tmp_path):
    a = write_report(trace, tmp_path / "a.html")
    b = write_report(Trace.load(saved), tmp_path / "b.html")  # also through a JSON round trip
    assert a.read_bytes() == b.read_bytes()


def test_report_with_a_comparison(trace, other):
    html = report_html(trace, other)
    assert re.findall(r'<section id="([a-z]+)">', html)[-1] == "compare"
    assert 'id="viz-compare-plot"' in html and "no cache" in html


def test_report_without_embeddings_says_so(tiny_gqa):
    t = viz.record(tiny_gqa, "Hello", max_new_tokens=2, embeddings=False)
    html = report_html(t)
    assert "embeddings=False" in html and 'id="viz-embeddings-plot"' not in html


def test_failed_report_leaves_the_old_file(trace, tmp_path, monkeypatch):
    path = write_report(trace, tmp_path / "r.html")
    good = path.read_bytes()

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(report, "timeline_figure", broken)  # fails half way through the page
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_report(trace, path)
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


def test_cli_writes_the_report(saved, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(saved), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == report_html(Trace.load(saved))


def test_cli_default_output_is_beside_the_trace(saved, tmp_path):
    assert main(["report", str(saved)]) == 0
    assert saved.with_suffix(".html").is_file()


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "is not valid JSON"),
        ('{"hello": 1}', "not a viz trace"),
    ],
)
def test_cli_bad_trace_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    out = tmp_path / "r.html"
    assert main(["report", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not out.exists()


def test_cli_refuses_a_folder_as_output(saved, tmp_path, capsys):
    assert main(["report", str(saved), "-o", str(tmp_path)]) == 2
    assert "is not a regular file" in capsys.readouterr().err


def test_cli_missing_trace_names_the_fix(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.json")]) == 2
    assert "python -m viz record" in capsys.readouterr().err


def test_report_shows_attention_when_it_was_recorded(tiny_gqa):
    trace = viz.record(tiny_gqa, "Hi there", max_new_tokens=4, attention=True)
    html = report_html(trace)
    assert re.findall(r'<section id="([a-z]+)">', html) == [key for key, _, _ in SECTIONS]
    assert re.search(r'Plotly.newPlot\(\s*"viz-attention-plot"', html)
