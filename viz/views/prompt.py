"""What the model actually reads: the prompt as typed, inside the chat template.

With `chat=True` the tokenizer's chat template wraps the prompt: control tokens mark each turn
(`<|im_start|>`, `<|im_end|>`), role names ("system", "user", "assistant") and line breaks
sit between them, and many templates add a system prompt the user never typed (SmolLM2's
says "You are a helpful AI assistant named SmolLM, trained by Hugging Face"). Every one of
those tokens is read by the prefill and held in the KV cache. This view sorts each prompt
token into one of four kinds and counts them. Used in lessons 00 and 01.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from viz.trace import Trace
from viz.views import palette
from viz.views.base import HTML, check_trace
from viz.views.text import esc, token_label

# The four kinds of prompt token, in the order the view lists them, with their colours.
KINDS = {
    "yours": ("your text", palette.PREFILL),
    "system": ("hidden system prompt", palette.CHOSEN),
    "template": ("role names and line breaks of the template", palette.MUTED),
    "control": ("control tokens", palette.SPECIAL),
}


@dataclass(frozen=True)
class PromptToken:
    """One prompt token and what put it there."""

    position: int
    id: int
    label: str  # the token, made visible
    kind: str  # "yours", "system", "template" or "control"


@dataclass(frozen=True)
class PromptParts:
    """The prompt the model reads, token by token, sorted by origin."""

    tokens: list[PromptToken]
    prompt: str  # as the user typed it
    prompt_text: str  # as the model reads it (the template applied)
    chat: bool
    system_prompt: str  # the system prompt's text ("" when the template adds none)

    def count(self, kind: str) -> int:
        return sum(t.kind == kind for t in self.tokens)

    @property
    def added(self) -> int:
        """Tokens the template adds to the user's own."""
        return len(self.tokens) - self.count("yours")

    def summary(self) -> str:
        n = len(self.tokens)
        if not self.chat:
            return f"{n} tokens, all of them your text (recorded with chat=False: no template)"
        words = {
            "system": "of a hidden system prompt",
            "control": "control tokens",
            "template": "role names and line breaks",
        }
        parts = [
            f"{self.count(k)} {words[k]}"
            for k in ("system", "control", "template")
            if self.count(k)
        ]
        return (
            f"The model reads {n} tokens: {self.count('yours')} are your text, and the chat "
            f"template adds {self.added} ({', '.join(parts)})."
        )


def _user_span(trace: Trace) -> tuple[int, int]:
    """Where the user's own text sits in the templated prompt (its last occurrence: the user
    turn comes after any system turn)."""
    if not trace.settings.chat:
        return 0, len(trace.prompt_text)
    for text in (trace.prompt, trace.prompt.strip()):
        i = trace.prompt_text.rfind(text)
        if text and i >= 0:
            return i, i + len(text)
    return 0, 0  # the template rewrote the text: no token is counted as the user's


def _system_spans(trace: Trace) -> list[tuple[int, int]]:
    """Character spans of system-turn contents: the text after a "system" role name up to the
    next control token — in the same segment (ChatML: `<|im_start|>system\\n...<|im_end|>`) or,
    when the role name stands alone between control tokens (Llama 3's header), the next one."""
    specials = sorted((t.start, t.end) for t in trace.prompt_tokens if t.special)
    text = trace.prompt_text
    # Segments of text between control tokens.
    cuts = [0] + [p for s, e in specials for p in (s, e)] + [len(text)]
    segments = [(a, b) for a, b in zip(cuts[::2], cuts[1::2]) if b > a]
    spans = []
    for i, (a, b) in enumerate(segments):
        m = re.match(r"\s*system\b\s*", text[a:b])
        if not m:
            continue
        if a + m.end() < b:  # the content follows the role name in this segment
            spans.append((a + m.end(), b))
        elif i + 1 < len(segments):  # the role name alone: the content is the next segment
            na, nb = segments[i + 1]
            lead = len(text[na:nb]) - len(text[na:nb].lstrip())
            spans.append((na + lead, nb))
    return spans


def prompt_data(trace: Trace) -> PromptParts:
    """Each prompt token sorted into your text / hidden system prompt / template text /
    control token. Lessons 00 and 01."""
    check_trace(trace)
    ua, ub = _user_span(trace)
    system = _system_spans(trace) if trace.settings.chat else []
    out = []
    for i, t in enumerate(trace.prompt_tokens):
        inside = lambda a, b: a <= t.start and t.end <= b and t.end > t.start
        if t.special:
            kind = "control"
        elif inside(ua, ub):
            kind = "yours"
        elif any(inside(a, b) for a, b in system):
            kind = "system"
        else:
            kind = "template"
        out.append(PromptToken(i, t.id, token_label(t.text, t.piece), kind))
    return PromptParts(
        out,
        trace.prompt,
        trace.prompt_text,
        trace.settings.chat,
        " ".join(trace.prompt_text[a:b].strip() for a, b in system),
    )


_CSS = """<style>
.viz-prompt{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:13px;line-height:2.2}
.viz-prompt .viz-tok{display:inline-block;border:1px solid;border-radius:4px;padding:0 3px;
  margin:1px;line-height:1.4;white-space:pre}
.viz-prompt .viz-sum{font-family:sans-serif;font-size:13px;line-height:1.4;margin:4px 0}
.viz-prompt .viz-key span{font-family:sans-serif;font-size:12px;border:1px solid;
  border-radius:4px;padding:0 4px;margin-right:8px}
</style>"""


def prompt_html(trace: Trace) -> HTML:
    """The templated prompt as token chips coloured by origin — your text (blue), the hidden
    system prompt (vermillion), the template's role names and line breaks (grey), control
    tokens (purple) — with the count of each. Lessons 00 and 01."""
    d = prompt_data(trace)
    parts = [
        _CSS,
        '<div class="viz-prompt">',
        f'<div class="viz-sum">{esc(d.summary())}</div>',
        '<div class="viz-key">',
    ]
    for kind, (name, colour) in KINDS.items():
        if d.count(kind):
            parts.append(
                f'<span style="border-color:{colour};background:{colour}1a">'
                f"{esc(name)}: {d.count(kind)}</span>"
            )
    parts.append("</div><div>")
    for t in d.tokens:
        name, colour = KINDS[t.kind]
        parts.append(
            f'<span class="viz-tok" style="border-color:{colour};background:{colour}1a"'
            f' title="{esc(f"token {t.position}: id {t.id}, {name}")}">'
            f"{esc(t.label)}</span>"
        )
        if t.label.endswith("↵"):  # keep the template's own line breaks
            parts.append("<br>")
    parts.append("</div></div>")
    return HTML("".join(parts), "prompt view: " + d.summary())


def prompt_table(trace: Trace) -> str:
    """The counts as text, and the system prompt the template added (if any)."""
    d = prompt_data(trace)
    lines = [d.summary()]
    if d.system_prompt:
        lines.append(f"hidden system prompt: {d.system_prompt!r}")
    return "\n".join(lines)
