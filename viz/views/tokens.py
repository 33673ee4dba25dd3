"""Tokens: the prompt (and the reply) drawn with token boundaries, ids on hover or below.

A token is not always a whole character. Byte-level BPE splits " 🍕" into three tokens whose
character spans overlap — (6, 8), (7, 8), (7, 8) — and each decodes alone to U+FFFD. Such
tokens are grouped under the character(s) they make together, and each shows its own bytes.
Used in lesson 01 (from text to vectors) and lesson 07 (capstone).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Optional

from viz.trace import Trace
from viz.views import palette
from viz.views.base import HTML, check_trace, mpl_text, new_figure
from viz.views.text import (
    PARTIAL,
    PARTIAL_NOTE,
    byte_label,
    drawable,
    esc,
    piece_bytes,
    token_label,
    visible,
)


@dataclass(frozen=True)
class TokenChip:
    """One token as the tokens view draws it."""

    position: int  # place in the sequence: prompt tokens first, then the reply's
    id: int  # vocabulary id
    label: str  # what the chip shows (visible whitespace; raw bytes for a partial character)
    text: str  # the token decoded alone
    piece: Optional[str]  # the vocabulary's spelling (reply tokens: only partial ones)
    start: int  # character span [start, end) in its text (prompt_text, or output_text for
    end: int  #   the reply); spans of the tokens of one character overlap
    special: bool  # a control token such as <|im_start|>
    partial: bool  # holds only part of a character
    phase: str  # "prefill" (a prompt token) or "decode" (a generated one)
    group: int  # tokens sharing characters share a group


@dataclass(frozen=True)
class TokenGroup:
    """Tokens that together make whole characters (usually one token alone)."""

    index: int
    phase: str
    text: str  # the characters they make ("" when the reply stopped mid-character)
    positions: list[int]  # the chips in it


def tokens_data(trace: Trace, include_reply: bool = True) -> list[TokenChip]:
    """Every prompt token (and, with `include_reply`, every generated one) with its span.
    Lesson 01 (the tokens exercise)."""
    check_trace(trace)
    chips: list[TokenChip] = []
    group, group_end = -1, -1
    for t in trace.prompt_tokens:
        if t.start >= group_end or t.start == t.end:  # shares no character with the group
            group += 1
        group_end = max(group_end, t.end)
        chips.append(
            TokenChip(
                len(chips),
                t.id,
                token_label(t.text, t.piece),
                t.text,
                t.piece,
                t.start,
                t.end,
                t.special,
                PARTIAL in t.text,
                "prefill",
                group,
            )
        )
    if not include_reply:
        return chips
    # A reply token spans the characters it completes: output_text[previous text_end : text_end].
    # A partial token completes nothing (empty span) and joins the token that completes it.
    group += 1
    prev_end = 0
    for s in trace.steps:
        piece = s.token_piece or None  # recorded only for partial characters
        chips.append(
            TokenChip(
                len(chips),
                s.token_id,
                token_label(s.token_text, piece),
                s.token_text,
                piece,
                prev_end,
                s.text_end,
                s.token_special,
                PARTIAL in s.token_text,
                "decode",
                group,
            )
        )
        if s.text_end > prev_end or s.token_special or not chips[-1].partial:
            group += 1
        prev_end = s.text_end
    return chips


def token_groups(trace: Trace, chips: list[TokenChip]) -> list[TokenGroup]:
    """The chips gathered by group, each with the characters it makes. Lesson 01."""
    groups: dict[int, list[TokenChip]] = {}
    for c in chips:
        groups.setdefault(c.group, []).append(c)
    out = []
    for i, members in groups.items():
        source = trace.prompt_text if members[0].phase == "prefill" else trace.output_text
        start, end = min(c.start for c in members), max(c.end for c in members)
        out.append(
            TokenGroup(i, members[0].phase, source[start:end], [c.position for c in members])
        )
    return out


def group_label(group: TokenGroup, chips: list[TokenChip]) -> str:
    """The characters a group makes, made visible; where its bytes make no whole character
    (a reply cut off mid-character, or bytes that are not valid UTF-8), those bytes as <0xNN>."""
    if PARTIAL not in group.text:
        return visible(group.text)
    raw = [
        chips[p].text.encode() if PARTIAL not in chips[p].text else piece_bytes(chips[p].piece)
        for p in group.positions
    ]
    if any(r is None for r in raw):
        return visible(group.text)
    return byte_label(b"".join(raw))


def _colour(chip: TokenChip) -> str:
    return palette.SPECIAL if chip.special else palette.PHASE[chip.phase]


def _hover(chip: TokenChip) -> str:
    where = "prompt_text" if chip.phase == "prefill" else "output_text"
    known = chip.partial and "<0x" in chip.label
    text = "none alone: decoded by itself it gives U+FFFD" if known else repr(chip.text)
    lines = [f"token {chip.position}: id {chip.id}", f"text {text}"]
    if chip.piece is not None:
        lines.append(f"piece {chip.piece!r}")
    lines.append(f"characters {chip.start}–{chip.end} of {where}")
    if chip.special:
        lines.append("special (control) token")
    if chip.partial:
        lines.append(
            "only part of a character: its bytes are shown"
            if "<0x" in chip.label
            else "only part of a character (its bytes were not recorded)"
        )
    return "\n".join(lines)


_CSS = """<style>
.viz-tokens{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:13px;line-height:2.6}
.viz-tokens .viz-group{display:inline-flex;flex-direction:column;align-items:stretch;
  vertical-align:top;margin:0 1px}
.viz-tokens .viz-group.viz-multi{border-bottom:2px solid #999;}
.viz-tokens .viz-row{display:inline-flex}
.viz-tokens .viz-tok{display:inline-flex;flex-direction:column;align-items:center;
  border:1px solid;border-radius:4px;padding:0 3px;margin:1px;line-height:1.3;white-space:pre}
.viz-tokens .viz-id{font-size:9px;color:#555}
.viz-tokens .viz-chars{font-size:11px;text-align:center;color:#333;line-height:1.3}
.viz-tokens .viz-note{font-size:11px;color:#555;line-height:1.4;font-family:sans-serif}
.viz-tokens .viz-legend span{border:1px solid;border-radius:4px;padding:0 4px;margin-right:8px}
</style>"""


def tokens_html(trace: Trace, include_reply: bool = True, show_ids: bool = True) -> HTML:
    """The prompt (and reply) as coloured token chips; hover a chip for its id, piece and span.

    Prompt tokens are blue (prefill), reply tokens orange (decode), control tokens purple.
    Tokens that share characters (an emoji split into bytes) are grouped, and the characters
    they make are written under the group. Lesson 01.
    """
    chips = tokens_data(trace, include_reply)
    parts = [
        _CSS,
        '<div class="viz-tokens">',
        '<div class="viz-legend">',
        f'<span style="border-color:{palette.PREFILL}">prompt (prefill)</span>',
    ]
    if include_reply:
        parts.append(f'<span style="border-color:{palette.DECODE}">reply (decode)</span>')
    parts += [
        f'<span style="border-color:{palette.SPECIAL}">control token</span>',
        f"{len(trace.prompt_tokens)} prompt tokens"
        + (f", {len(trace.steps)} generated" if include_reply else "")
        + "</div>",
    ]
    if any("<0x" in c.label for c in chips):
        parts.append(f'<div class="viz-note">{esc(PARTIAL_NOTE)}</div>')
    for g in token_groups(trace, chips):
        members = [chips[p] for p in g.positions]
        multi = len(members) > 1 or members[0].partial
        parts.append(
            f'<span class="viz-group{" viz-multi" if multi else ""}"'
            f' title="{esc(f"{len(members)} token(s) make {group_label(g, chips)!r}")}">'
            '<span class="viz-row">'
        )
        for c in members:
            colour = _colour(c)
            ident = f'<span class="viz-id">{c.id}</span>' if show_ids else ""
            parts.append(
                f'<span class="viz-tok" style="border-color:{colour};'
                f'background:{colour}1a" title="{esc(_hover(c))}">'
                f"{esc(c.label)}{ident}</span>"
            )
        parts.append("</span>")
        if multi:
            parts.append(f'<span class="viz-chars">{esc(group_label(g, chips))}</span>')
        parts.append("</span>")
        if "\n" in g.text:  # keep the text's own line breaks
            parts.append("<br>")
    parts.append("</div>")
    n = len(chips)
    return HTML("".join(parts), f"tokens view: {n} tokens ({len(trace.prompt_tokens)} prompt)")


# ---- static (matplotlib) ------------------------------------------------------------------------
def _width(label: str) -> float:
    """Width of a chip in character cells, as drawn (wide East Asian characters take two;
    a character no font has is drawn as U+XXXX)."""
    shown, _ = drawable(label)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in shown) + 1.2


def tokens_static(trace: Trace, include_reply: bool = True, width: int = 90):
    """The token chips as a matplotlib Figure, each id written under its chip. Lesson 01.

    Characters no installed font can draw are written as U+XXXX (see `viz.views.text`).
    `width` is the line length in character cells.
    """
    from matplotlib.patches import FancyBboxPatch

    chips = tokens_data(trace, include_reply)
    groups = token_groups(trace, chips)
    # Lay out groups left to right, wrapping lines; a newline in the text starts a new line.
    placed, x, row = [], 0.0, 0
    for g in groups:
        w = sum(_width(chips[p].label) for p in g.positions)
        if x > 0 and x + w > width:
            x, row = 0.0, row + 1
        placed.append((g, x, row))
        x += w + 0.4
        if "\n" in g.text:
            x, row = 0.0, row + 1
    rows = row + 1
    fig, ax = new_figure(figsize=(12, 0.75 + 0.62 * rows))
    ax.set_xlim(-0.5, width + 0.5)
    ax.set_ylim(rows * 2.2, -0.6)
    ax.set_axis_off()
    for g, gx, r in placed:
        y = r * 2.2
        cx = gx
        for p in g.positions:
            c = chips[p]
            w = _width(c.label)
            colour = _colour(c)
            ax.add_patch(
                FancyBboxPatch(
                    (cx + 0.1, y),
                    w - 0.2,
                    0.9,
                    boxstyle="round,pad=0.02",
                    facecolor=colour + "22",
                    edgecolor=colour,
                    lw=1,
                )
            )
            ax.text(cx + w / 2, y + 0.47, ha="center", va="center", fontsize=8, **mpl_text(c.label))
            ax.text(
                cx + w / 2,
                y + 1.25,
                str(c.id),
                ha="center",
                va="center",
                fontsize=6,
                color="#555555",
            )
            cx += w
        if len(g.positions) > 1 or chips[g.positions[0]].partial:
            ax.plot([gx + 0.1, cx - 0.1], [y + 1.55, y + 1.55], color=palette.MUTED, lw=1)
            ax.text(
                (gx + cx) / 2,
                y + 1.85,
                ha="center",
                va="center",
                fontsize=7,
                **mpl_text(group_label(g, chips)),
            )
    title = f"{len(trace.prompt_tokens)} prompt tokens (blue)"
    if include_reply:
        title += f", {len(trace.steps)} generated (orange)"
    ax.set_title(title + "; control tokens purple; token id under each", loc="left", fontsize=10)
    fig.tight_layout()
    return fig
