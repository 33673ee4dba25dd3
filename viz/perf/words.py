"""How many tokens an answer is: tokens per word, measured with the model's own tokenizer.

Every token a model writes costs one forward pass (lessons 03 and 04), so the length of an
answer in *tokens*, not words, sets how long it takes. Lesson 01 measures the ratio on a
paragraph (written out there for teaching); lesson 04 turns "a 500-word answer" into tokens
with `tokens_per_word` on the same paragraph, then into seconds with the learner's TTFT and
TPOT.

    ratio = perf.tokens_per_word(lm.tokenizer)     # about 1.2 for SmolLM2 on plain English
    tokens = round(500 * ratio)

Words are what `str.split()` returns (runs of non-space characters); tokens are the
tokenizer's ids with no special tokens added. Numbers, names, code and other languages take
more tokens per word than everyday English: measure on text like the answers you expect.
"""

from __future__ import annotations

from typing import Optional

# Everyday English (the paragraph of lesson 01): no numbers, names or code.
SAMPLE_PARAGRAPH = """Last weekend my sister and I drove to the coast to visit our grandparents. The
weather was cold and windy, but the sea looked beautiful, and we spent the afternoon walking
along the beach and collecting shells. In the evening our grandmother cooked fish soup, and our
grandfather told stories about the small boat he used to sail when he was young. We stayed up
late talking, and on Sunday morning we helped them fix the garden fence before driving home."""


def count_words_tokens(tokenizer, text: Optional[str] = None) -> tuple[int, int]:
    """(words, tokens) of `text` (default `SAMPLE_PARAGRAPH`) with this tokenizer."""
    text = SAMPLE_PARAGRAPH if text is None else text
    if not isinstance(text, str) or not text.split():
        raise ValueError(
            "tokens per word needs a text with at least one word, e.g. a "
            "paragraph like the answers you expect"
        )
    return len(text.split()), len(tokenizer(text, add_special_tokens=False)["input_ids"])


def tokens_per_word(tokenizer, text: Optional[str] = None) -> float:
    """Tokens ÷ words of `text` (default `SAMPLE_PARAGRAPH`), measured with `tokenizer`.

    Lesson 01 computes it by hand on the same paragraph; lesson 04 uses it to turn words into
    tokens.
    """
    words, tokens = count_words_tokens(tokenizer, text)
    return tokens / words
