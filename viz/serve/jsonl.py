"""A JSONL file of prompts for a load run, read and checked line by line (`Workload.from_file`).

One request a line (blank lines are skipped):

    {"prompt": "What is the capital of France?", "output_tokens": 16}
    {"messages": [{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Name three colours."}]}

`prompt` (or `text`) is a text prompt; `messages` a whole chat (OpenAI's roles system, user,
assistant; the last one the user's). `output_tokens` (or `max_tokens`) is that request's
answer length, else the workload's. `name` labels it on the timeline. Every problem is a
ServeError naming the file, the line number and the fix, raised before any request is sent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from viz import checks
from viz.serve.client import ServeError
from viz.serve.items import MAX_TOKENS, Item

MAX_LINES = 1_000_000
ROLES = ("system", "user", "assistant")
EXAMPLE = '{"prompt": "What is the capital of France?", "output_tokens": 16}'


def read_jsonl(path: str) -> tuple[list[Item], str]:
    """The requests of a JSONL file and the file's SHA-256."""
    p = Path(str(path)).expanduser()
    if not p.is_file():
        raise ServeError(
            f"no prompts file at {path!r}: check the path (a JSONL file, one "
            f"request a line, e.g. {EXAMPLE})"
        )
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ServeError(f"{p} is not UTF-8 text ({e}): save it as UTF-8") from None
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(items) >= MAX_LINES:
            raise ServeError(f"{p} has over {MAX_LINES:,} requests: split it")
        items.append(_item(p, number, line))
    if not items:
        raise ServeError(f"{p} is empty: write one request per line, e.g. {EXAMPLE}")
    return items, hashlib.sha256(data).hexdigest()


def _item(p: Path, number: int, line: str) -> Item:
    where = f"{p} line {number}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ServeError(
            f"{where} is not JSON ({e.msg} at column {e.colno}): each line is "
            f"one object, e.g. {EXAMPLE}"
        ) from None
    if not isinstance(obj, dict):
        raise ServeError(
            f"{where} is a {type(obj).__name__}, not an object: write it like {EXAMPLE}"
        )
    text = obj.get("prompt", obj.get("text"))
    messages = obj.get("messages")
    if (text is None) == (messages is None):
        raise ServeError(
            f'{where} needs "prompt" (a text) or "messages" (a chat), one '
            f"of the two: e.g. {EXAMPLE}"
        )
    if text is not None:
        checks.text(f'{where}: "prompt"', text, error=ServeError)
    if messages is not None:
        _check_messages(where, messages)
    out = obj.get("output_tokens", obj.get("max_tokens"))
    if out is not None:  # too few and too many named apart
        for low, high in ((1, None), (None, MAX_TOKENS)):
            checks.whole(
                f'{where}: "output_tokens"',
                out,
                low,
                high,
                noun="a whole number of tokens",
                error=ServeError,
            )
    name = obj.get("name", f"line {number}")
    return Item(
        name=str(name), text=text, messages=messages, max_tokens=out if out is not None else 0
    )


def _check_messages(where: str, messages) -> None:
    if not isinstance(messages, list) or not messages:
        raise ServeError(
            f'{where}: "messages" must be a non-empty list of {{"role", "content"}} objects'
        )
    for i, m in enumerate(messages):
        ok = (
            isinstance(m, dict)
            and m.get("role") in ROLES
            and isinstance(m.get("content"), str)
            and m["content"].strip()
        )
        if not ok:
            raise ServeError(
                f'{where}: message {i} must be {{"role": one of {ROLES}, '
                f'"content": a non-empty text}}, not {m!r}'
            )
    if messages[-1]["role"] != "user":
        raise ServeError(
            f"{where}: the last message must be the user's (the model answers "
            "it), not the " + messages[-1]["role"] + "'s"
        )
