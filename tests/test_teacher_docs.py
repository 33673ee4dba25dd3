"""The documents for teachers (GLOSSARY.md, RULE.md, TEACHERS.md) against the lessons they cite.

Fast, no model. Each check is a function that returns the problems it finds, so that every
check is also run on a small broken document below and shown to fail there:

- every relative link in the three files points to a file that exists;
- every glossary entry is one sentence with exactly one lesson link, and the glossary is
  alphabetical with no term twice;
- the lesson a term links to mentions the term (its source in `lessons/`, the generated course
  map left out), under the term's own spelling or one of the few alternatives in `ALIASES`;
- every lesson appears in TEACHERS.md with its objective from `lessons/course.toml`, and every
  lesson with a "Check yourself" section among them;
- RULE.md's thresholds and its printed example are the library's.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("GLOSSARY.md", "RULE.md", "TEACHERS.md")
LESSONS = ROOT / "lessons"

# Other spellings under which a lesson names a glossary term. Kept small: a term whose lesson
# uses none of its spellings belongs to another lesson, or not in the glossary.
ALIASES: dict[str, tuple[str, ...]] = {
    "Acceptance rate": ("acceptance",),  # "The acceptance is lower than the agreement"
    "Cost per million tokens": ("per million tokens",),  # "$ per million tokens"
    "E2E latency": ("E2E", "end to end", "end-to-end"),
    "Early exit": ("early-exit",),
    "Quantization": ("quantized",),  # lesson 00: "a GGUF file quantized to 4 bits"
    "Quantized KV cache": ("quantized cache", "QuantizedCache"),
    "SLO": ("service-level objective",),
}
# Terms a lesson prints rather than writes: looked for in its saved notebook's outputs.
PRINTED = {"TT2T"}

ENTRY = re.compile(r"^- \*\*(?P<term>[^*]+)\*\* — (?P<text>.+)$")
LESSON_LINK = re.compile(
    r"\[lesson (?P<n>\d\d)\]\((?P<path>notebooks/(?P<stem>(?P<m>\d\d)_\w+)"
    r"\.ipynb)\)"
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
COURSE_MAP = re.compile(r"<!-- course-map:start.*?<!-- course-map:end -->", re.S)


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


# ---- the checks -------------------------------------------------------------------------------
def broken_links(text: str, base: Path) -> list[str]:
    """Relative links in a markdown text whose file does not exist under `base`."""
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address or an anchor in the same file
        if not (base / target.split("#")[0]).exists():
            bad.append(target)
    return bad


def glossary_entries(text: str) -> list[tuple[str, str]]:
    """(term, the rest of its line) for every entry of the glossary."""
    return [(m["term"], m["text"]) for m in map(ENTRY.match, text.splitlines()) if m]


def entry_problems(entries: list[tuple[str, str]], base: Path = ROOT) -> list[str]:
    """Entries without exactly one lesson link, with a link to a lesson that does not exist, or
    with more (or less) than one sentence."""
    bad = []
    for term, text in entries:
        links = list(LESSON_LINK.finditer(text))
        if len(links) != 1:
            bad.append(f"{term}: {len(links)} lesson links, not 1")
            continue
        link = links[0]
        if (
            link["n"] != link["m"]
            or not (base / link["path"]).exists()
            or not (base / "lessons" / f"{link['stem']}.py").exists()
        ):
            bad.append(f"{term}: no such lesson {link['path']}")
        sentence = text[: link.start()].strip().rstrip("(").strip()
        if not sentence.endswith(".") or re.search(r"[.!?]\s+[A-Z]", sentence):
            bad.append(f"{term}: not one sentence: {sentence!r}")
    return bad


def order_problems(terms: list[str]) -> list[str]:
    """Terms out of alphabetical order (case ignored), and terms given twice."""
    bad = [f"{a!r} before {b!r}" for a, b in zip(terms, terms[1:]) if a.casefold() > b.casefold()]
    seen: set[str] = set()
    for t in terms:
        if t.casefold() in seen:
            bad.append(f"{t!r} twice")
        seen.add(t.casefold())
    return bad


def mentions(text: str, spelling: str) -> bool:
    """True if `text` holds `spelling` as a word of its own, case ignored."""
    return (
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(spelling)}(?![A-Za-z0-9_])", text, re.I)
        is not None
    )


def lesson_source(stem: str) -> str:
    """A lesson's source, the course map (generated in lesson 00) left out, with its markdown
    lines joined: a term may be wrapped from one `# ` line to the next."""
    text = COURSE_MAP.sub("", (LESSONS / f"{stem}.py").read_text(encoding="utf-8"))
    return re.sub(r"[ \t]*\n#[ \t]*", " ", text)


def notebook_outputs(stem: str) -> str:
    """Every text output of a lesson's saved notebook, joined."""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            for text in (out.get("text"), out.get("data", {}).get("text/plain")):
                parts.append("".join(text) if isinstance(text, list) else text or "")
    return "\n".join(parts)


def mention_problems(
    entries: list[tuple[str, str]],
    source: Callable[[str], str] = lesson_source,
    printed: Callable[[str], str] = notebook_outputs,
) -> list[str]:
    """Terms whose linked lesson names them under none of their spellings."""
    bad = []
    for term, text in entries:
        link = LESSON_LINK.search(text)
        if not link:
            continue  # entry_problems reports it
        where = printed if term in PRINTED else source
        spellings = (term, *ALIASES.get(term, ()))
        if not any(mentions(where(link["stem"]), s) for s in spellings):
            bad.append(f"{term}: lesson {link['n']} never says {' or '.join(map(repr, spellings))}")
    return bad


def lessons_with_check_yourself() -> list[str]:
    """The stems of the lessons that have a "Check yourself" section."""
    return sorted(
        p.stem
        for p in LESSONS.glob("[0-9][0-9]_*.py")
        if re.search(r"^# ## Check yourself", p.read_text(encoding="utf-8"), re.M)
    )


def teacher_problems(teachers: str, stems: list[str], objectives: dict[str, str]) -> list[str]:
    """Lessons without a section of their own in TEACHERS.md (a heading with the lesson's number
    and a link to its notebook), or whose objective is not quoted there."""
    bad = []
    for stem in stems:
        n = stem[:2]
        if not re.search(rf"^### {n} · .*\(notebooks/{re.escape(stem)}\.ipynb\)", teachers, re.M):
            bad.append(f"lesson {n}: no section '### {n} · …' linking notebooks/{stem}.ipynb")
        if n in objectives and f"Objective: {objectives[n]}." not in teachers:
            bad.append(f"lesson {n}: its objective from course.toml is not quoted")
    return bad


def course_objectives() -> dict[str, str]:
    with open(LESSONS / "course.toml", "rb") as f:
        return {n: lesson["objective"] for n, lesson in tomllib.load(f)["lesson"].items()}


# ---- the documents ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", DOCS)
def test_every_relative_link_points_to_a_file(name):
    assert broken_links(read(name), ROOT) == []


def test_the_glossary_has_its_entries_each_with_one_lesson():
    entries = glossary_entries(read("GLOSSARY.md"))
    assert 60 <= len(entries) <= 75, f"{len(entries)} terms"
    assert entry_problems(entries) == []


def test_the_glossary_is_alphabetical_with_no_term_twice():
    assert order_problems([t for t, _ in glossary_entries(read("GLOSSARY.md"))]) == []


def test_each_term_is_named_by_the_lesson_it_links_to():
    assert mention_problems(glossary_entries(read("GLOSSARY.md"))) == []


def test_the_teachers_notes_cover_every_lesson_with_its_objective():
    stems = sorted(p.stem for p in LESSONS.glob("[0-9][0-9]_*.py"))
    assert set(lessons_with_check_yourself()) <= set(stems)
    assert lessons_with_check_yourself(), "no lesson has a 'Check yourself' section any more"
    assert teacher_problems(read("TEACHERS.md"), stems, course_objectives()) == []


def test_the_rule_card_quotes_the_library():
    from viz import perf
    from viz.perf.regime import NEAR_ROOF, OVERHEAD_SHARE

    card = read("RULE.md")
    assert len(card.splitlines()) <= 70, "RULE.md is one printed page"
    assert OVERHEAD_SHARE == 0.5 and "F ≥ 0.5 × t (`OVERHEAD_SHARE`" in card
    assert NEAR_ROOF == 0.5 and "under 0.5 (`NEAR_ROOF`)" in card
    call = re.search(r"print\((perf\.verdict\(([^)]*)\))\)", card)
    args = [float(x) for x in call[2].split(",")]
    shown = re.search(r"^# (.+)$", card[call.end() :], re.M)[1]  # the line below the call
    assert shown == str(perf.verdict(*args))


# ---- each check fails where it should -------------------------------------------------------
def test_a_link_to_a_missing_file_is_reported(tmp_path):
    (tmp_path / "here.md").write_text("x")
    text = "[ok](here.md) [web](https://example.com) [anchor](#top) [gone](missing.md#part)"
    assert broken_links(text, tmp_path) == ["missing.md#part"]


def test_an_entry_without_one_lesson_link_or_of_two_sentences_is_reported():
    link = "([lesson 03](notebooks/03_prefill.ipynb))"
    entries = glossary_entries(
        "\n".join(
            [
                f"- **Good** — One sentence. {link}",
                "- **Unlinked** — One sentence, and no lesson.",
                f"- **Twice** — One. {link} {link}",
                f"- **Chatty** — One sentence. Then another. {link}",
                "- **Missing** — One sentence. ([lesson 42](notebooks/42_nothing.ipynb))",
            ]
        )
    )
    assert [p.split(":")[0] for p in entry_problems(entries)] == [
        "Unlinked",
        "Twice",
        "Chatty",
        "Missing",
    ]


def test_an_unsorted_or_repeated_term_is_reported():
    assert order_problems(["Decode", "prefill", "TTFT"]) == []
    assert order_problems(["TTFT", "Decode"]) == ["'TTFT' before 'Decode'"]
    assert order_problems(["KV cache", "kv cache"]) == ["'kv cache' twice"]


def test_a_term_its_lesson_does_not_name_is_reported():
    link = "([lesson 09](notebooks/09_continuous_batching.ipynb))"
    entries = [
        ("Goodput", f"x {link}"),
        ("SLO", f"x {link}"),
        ("TT2T", f"x {link}"),
        ("Page", f"x {link}"),
    ]
    lesson = "goodput counts requests that met a service-level objective; pages of 16"
    bad = mention_problems(entries, source=lambda stem: lesson, printed=lambda stem: "")
    assert bad == ["TT2T: lesson 09 never says 'TT2T'", "Page: lesson 09 never says 'Page'"]
    assert not mentions("the ITLs", "ITL") and not mentions("title", "ITL")
    assert mentions("`perf.yardsticks()`", "yardsticks") and mentions("(Q4_1)", "Q4_1")


def test_the_course_map_does_not_count_as_a_mention_and_a_wrapped_term_does():
    text = lesson_source("00_start_here")
    assert "course-map" not in text and not mentions(text, "logit lens")
    assert mentions((LESSONS / "00_start_here.py").read_text(encoding="utf-8"), "logit lens")
    raw = (LESSONS / "03_prefill.py").read_text(encoding="utf-8")
    assert not mentions(raw, "arithmetic intensity")  # "**arithmetic\n# intensity**"
    assert mentions(lesson_source("03_prefill"), "arithmetic intensity")


def test_a_lesson_missing_from_the_teachers_notes_is_reported():
    notes = (
        "### 00 · Start here ([notebook](notebooks/00_start_here.ipynb))\n\nObjective: run it.\n"
    )
    assert teacher_problems(notes, ["00_start_here"], {"00": "run it"}) == []
    assert teacher_problems(notes, ["00_start_here"], {"00": "run something else"}) == [
        "lesson 00: its objective from course.toml is not quoted"
    ]
    assert teacher_problems(notes, ["11_long_context"], {}) == [
        "lesson 11: no section '### 11 · …' linking notebooks/11_long_context.ipynb"
    ]
