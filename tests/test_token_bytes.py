"""Honest token labels (issue 14, item 4): a token that holds only part of a UTF-8 character
(byte-level BPE splits an emoji or a CJK character into several tokens) is drawn as its bytes,
<0xF0><0x9F>, everywhere a token is drawn — token chips, candidates, the explorer, the
what-if, the timeline, the report — never as "�", whenever its bytes are known. Traces recorded
before the pieces were stored still load and draw (U+FFFD is all they know).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import viz
from viz import views
from viz.views.report import report_html
from viz.views.text import PARTIAL, piece_bytes, reply_text, token_label

PARTIAL_PROMPTS = ["Pizza: 🍕🍕🍕 and 🍣", "東京と大阪と京都", "I love 🍕 in 東京!"]
FIXTURES = Path(__file__).parent / "fixtures"


def drawn_labels(trace) -> list[str]:
    """Every token label the views compute for `trace`."""
    labels = [c.label for c in views.tokens_data(trace)]
    for s in trace.steps:
        d = views.distribution_data(trace, s.index)
        labels += [b.label for b in d.bars()] + [d.chosen_label]
        labels += views.whatif_data(trace, s.index).labels
        labels.append(views.explorer_data(trace, s.index).token)
    labels += [seg.token for seg in views.timeline_data(trace).segments]
    return labels


@pytest.mark.parametrize("prompt", PARTIAL_PROMPTS)
def test_tiny_model_partial_tokens_show_their_bytes(tiny_gqa, prompt):
    """The byte tokenizer makes every byte of an emoji or CJK character its own token."""
    trace = viz.record(tiny_gqa, prompt, max_new_tokens=8, stop_at_eos=False, log_top=30)
    partial = [s for s in trace.steps if PARTIAL in s.token_text]
    for s in trace.steps:  # the recorded pieces spell exactly the token's bytes
        for text, piece in [(s.token_text, s.token_piece), *zip(s.top_texts, s.top_pieces)]:
            assert (piece == "") == (PARTIAL not in text)
            if piece:
                assert piece_bytes(piece).decode("utf-8", errors="replace") == text
    labels = drawn_labels(trace)
    assert any("<0x" in lab for lab in labels)  # partial tokens were drawn, as bytes
    assert not [lab for lab in labels if PARTIAL in lab]
    assert partial or any(PARTIAL in t for s in trace.steps for t in s.top_texts)


def test_group_of_a_split_character_shows_the_character(tiny_gqa):
    trace = viz.record(tiny_gqa, "🍕", max_new_tokens=1)
    chips = views.tokens_data(trace, include_reply=False)
    assert [c.label for c in chips] == ["<0xF0>", "<0x9F>", "<0x8D>", "<0x95>"]
    html = str(views.tokens_html(trace, include_reply=False))
    assert "🍕" in html and "one byte of a character" in html


@pytest.mark.parametrize("prompt", PARTIAL_PROMPTS)
def test_real_model_draws_no_replacement_character(smollm, prompt):
    trace = viz.record(smollm, prompt + " Repeat it:", max_new_tokens=8, chat=True)
    assert any(PARTIAL in t.text for t in trace.prompt_tokens)  # the prompt has split characters
    labels = drawn_labels(trace)
    assert any("<0x" in lab for lab in labels)
    assert not [lab for lab in labels if PARTIAL in lab]
    # ... and no figure or page draws one, even where the reply was cut off mid-character
    # (max_new_tokens reached inside an emoji: its last tokens are shown as bytes).
    for fig in (
        views.distribution_figure(trace),
        views.explorer_figure(trace),
        views.whatif_figure(trace, 1),
        views.timeline_figure(trace),
    ):
        assert PARTIAL not in fig.to_json()
    assert PARTIAL not in str(views.tokens_html(trace))
    from plotly.offline import get_plotlyjs

    assert PARTIAL not in report_html(trace).replace(get_plotlyjs(), "")  # plotly.js has one
    if trace.generated_text.endswith(PARTIAL):
        assert reply_text(trace).endswith(">") and "<0x" in reply_text(trace)


def test_a_reply_cut_mid_character_shows_its_last_bytes(tiny_gqa):
    """Forcing the cut: the prompt ends in the first bytes of an emoji, and one token of reply."""
    trace = viz.record(tiny_gqa, "ab", max_new_tokens=3, stop_at_eos=False)
    pieces = ["ðŁ", "į"]  # b"\xf0\x9f", b"\x8d": three bytes of 🍕's four
    for s, piece in zip(trace.steps[1:], pieces):
        s.token_text, s.token_piece = PARTIAL, piece
    trace.generated_text = trace.generated_text[:1] + PARTIAL
    assert reply_text(trace) == trace.generated_text[:1] + "<0xF0><0x9F><0x8D>"
    e = views.explorer_data(trace, 2)
    assert e.token == "<0x8D>" and PARTIAL not in views.explorer_figure(trace, 2).to_json()


def test_an_old_trace_without_pieces_still_draws(tmp_path):
    """A v1 trace (no pieces stored) loads; its partial candidates show U+FFFD, told apart
    by their ids, and nothing fails."""
    trace = viz.Trace.load(FIXTURES / "trace-v1.json")
    assert all(s.top_pieces == [] and s.token_piece == "" for s in trace.steps)
    for s in trace.steps:
        views.distribution_figure(trace, s.index)
        views.whatif_figure(trace, s.index)
    views.explorer_figure(trace)
    report_html(trace)


def test_token_label_spells_bytes_like_sentencepiece():
    assert token_label("\N{REPLACEMENT CHARACTER}", "ĠðŁ") == "␣<0xF0><0x9F>"
    assert token_label("\N{REPLACEMENT CHARACTER}", "<0x8D>") == "<0x8D>"
    assert token_label("\N{REPLACEMENT CHARACTER}") == "\N{REPLACEMENT CHARACTER}"  # unknown
    assert token_label("東", "æĿ±") == "東"  # a whole character is drawn as itself


def test_pieces_are_stored_only_for_partial_tokens(tiny_gqa, tmp_path):
    """Whole tokens keep "" (their text is exact), so the pieces cost little."""
    trace = viz.record(tiny_gqa, "plain ascii", max_new_tokens=3, stop_at_eos=False)
    trace.save(tmp_path / "t.json")
    saved = json.loads((tmp_path / "t.json").read_text())
    for s, raw in zip(trace.steps, saved["steps"]):
        assert raw["top_pieces"] == [
            "" if PARTIAL not in t else raw["top_pieces"][i] for i, t in enumerate(s.top_texts)
        ]
