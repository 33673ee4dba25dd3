"""Token text made drawable: visible whitespace, escaped control bytes, safe for each renderer.

A token is not always a whole character (byte-level BPE splits an emoji into several tokens,
each decoding alone to U+FFFD), and its text can hold spaces, newlines, `$` or `<`. Every view
draws token text through these functions, so a token looks the same in each of them.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache
from typing import Optional

# Whitespace a learner must see: a leading space belongs to the token.
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
PARTIAL = "\N{REPLACEMENT CHARACTER}"  # what a token holding part of a character decodes to


def visible(text: str) -> str:
    """`text` with whitespace shown (␣ ↵ ⇥) and control characters escaped (\\x14, \\u200b)."""
    if text == "":
        return "∅"
    out = []
    for ch in text:
        if ch in _VISIBLE:
            out.append(_VISIBLE[ch])
        elif unicodedata.category(ch)[0] == "C":  # control, format, unassigned, private use
            code = ord(ch)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(ch)
    return "".join(out)


@lru_cache(maxsize=1)
def _byte_alphabet() -> dict[str, int]:
    """Byte-level BPE's stand-in characters (GPT-2's table), mapped back to the byte each means."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    stand_ins = {chr(b): b for b in printable}
    rest = (b for b in range(256) if b not in stand_ins.values())
    stand_ins.update({chr(0x100 + i): b for i, b in enumerate(rest)})
    return stand_ins


def piece_bytes(piece: Optional[str]) -> Optional[bytes]:
    """The bytes a vocabulary piece stands for, when its spelling says (else None).

    Byte-level BPE spells bytes with stand-in characters ("ĠðŁ" is b" \\xf0\\x9f");
    SentencePiece's byte fallback spells one byte as "<0xF0>".
    """
    if not piece:
        return None
    m = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", piece)
    if m:
        return bytes([int(m.group(1), 16)])
    table = _byte_alphabet()
    if all(c in table for c in piece):
        return bytes(table[c] for c in piece)
    return None


def token_label(text: str, piece: Optional[str] = None) -> str:
    """What a token's chip or bar shows: its visible text, or its bytes when it holds only part
    of a character (" 🍕" split in three shows as ␣<0xF0><0x9F>, <0x8D>, <0x95>: the same
    spelling as SentencePiece's byte tokens). Without a known piece (a trace recorded before
    viz stored them) the text is shown as decoded, U+FFFD included."""
    if PARTIAL in text:
        raw = piece_bytes(piece)
        if raw is not None:
            return byte_label(raw)
    return visible(text)


def byte_label(raw: bytes) -> str:
    """Bytes as text: whole UTF-8 characters as themselves (made visible), every byte of an
    incomplete one as <0xNN>."""
    out = []
    for ch in raw.decode("utf-8", errors="surrogateescape"):
        code = ord(ch)
        out.append(f"<0x{code - 0xDC00:02X}>" if 0xDC80 <= code <= 0xDCFF else visible(ch))
    return "".join(out)


def cut_text(text: str, trailing_pieces: list[str]) -> str:
    """`text` with a U+FFFD at its end (a reply cut off in the middle of a character) written
    as the bytes of the trailing partial tokens, when their pieces are known."""
    if not text.endswith(PARTIAL) or not trailing_pieces:
        return text
    raw = [piece_bytes(p) for p in trailing_pieces]
    if any(r is None for r in raw):
        return text
    return text[:-1] + byte_label(b"".join(raw))


def reply_text(trace) -> str:
    """What the user was shown (`generated_text`), a character cut off at its end shown as the
    bytes of its tokens (<0xF0><0x9F>) when the trace knows them."""
    tail = []
    for s in reversed(trace.steps):
        if PARTIAL not in s.token_text or s.token_special:
            break
        tail.insert(0, s.token_piece)
    return cut_text(trace.generated_text, tail)


PARTIAL_NOTE = (
    "<0xNN>: one byte of a character that the tokenizer split across several "
    "tokens (byte-level BPE); the bytes join into the character"
)


def esc(text: str) -> str:
    """Escape for HTML and for plotly's pseudo-HTML labels (`<|im_end|>` is text, not a tag).

    Quotes become numeric entities: plotly converts `&#34;` and `&#x27;` back to characters
    but shows a named `&quot;` literally; in HTML (attributes too) both forms are the same.
    """
    return html.escape(text, quote=True).replace("&quot;", "&#34;")


# ---- matplotlib -------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _font_charmaps() -> list[tuple[str, frozenset]]:
    """(family, code points it can draw) for matplotlib's default font, then every other font."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    default = font_manager.findfont(font_manager.FontProperties())
    # "Last Resort" draws a placeholder box for every code point: it draws nothing real.
    others = {f.fname for f in font_manager.fontManager.ttflist if "Last Resort" not in f.name}
    paths = [default] + sorted(others - {default})
    out = []
    for path in paths:
        try:
            font = FT2Font(path)
            out.append((font.family_name, frozenset(font.get_charmap())))
        except (OSError, RuntimeError, ValueError):  # a font matplotlib cannot open: skip it
            continue
    return out


def drawable(text: str) -> tuple[str, list[str]]:
    """(`text` ready for matplotlib, the font families that draw it).

    A character no installed font has is written as U+XXXX instead (a CJK character on a
    machine without CJK fonts), so matplotlib never warns "Glyph missing" into a notebook.
    `$` is escaped so it is never read as mathtext.
    """
    fonts = _font_charmaps()
    families: list[str] = [fonts[0][0]] if fonts else []
    out = []
    for ch in text:
        if ch == "\n":  # a line break, not a glyph
            out.append(ch)
            continue
        owner = next((fam for fam, chars in fonts if ord(ch) in chars), None)
        if owner is None:
            out.append(f"U+{ord(ch):04X}")
            continue
        if owner not in families:
            families.append(owner)
        out.append("\\$" if ch == "$" else ch)
    return "".join(out), families
