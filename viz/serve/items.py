"""One request a workload asks for, as built before a run (`viz.serve.Workload.build`).

Kept apart from the workload so that the modules that make items — synthetic text
(`viz.serve.synthetic`), a JSONL file (`viz.serve.jsonl`) — and the one that describes them
(`viz.serve.workload`) import it without importing each other. Lesson 09.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

MAX_TOKENS = 1_000_000  # no length beyond this is taken (no model has such a context)


@dataclass
class Item:
    """One request of a run (built before it; not saved: the run's RequestRecord keeps what
    was sent and what came back)."""

    name: str
    text: Optional[str] = None  # the prompt (or, in a chat, this turn's new message)
    messages: Optional[list[dict[str, Any]]] = None  # a whole chat (file lines with messages)
    max_tokens: int = 64  # the answer length asked (0: not given yet)
    text_tokens: Optional[int] = None  # the prompt's own tokens by the workload's tokenizer
    conversation: Optional[int] = None  # chat: which conversation, and which turn of it
    turn: Optional[int] = None
