"""A workload's requests, built and checked before a run sends anything (`Workload.build`).

Synthetic prompts are cut from real text to an exact number of tokens with the model's own
tokenizer: lesson 01's paragraph (`viz.perf.SAMPLE_PARAGRAPH`), its sentences in an order
shuffled per request and repeated as needed, starting a few tokens into the first one, so no
two prompts begin alike (a server's prefix cache would otherwise skip part of their prefill).
The cut is moved by a token or two where the decoded text would re-tokenize differently; the
prompt's token count is then checked, so "64 tokens in" is 64 tokens of the prompt's own text
(the chat template adds its own: ~30 for the default model, counted here for the checks).

Checks, each a ServeError naming the fix: the longest request (its prompt with the chat
template, plus its answer; in a chat, the last turn with the whole history) within the
model's context and, when the server says, within its KV pool; an endpoint that can carry the
workload (a chat needs the chat endpoint). Lesson 09.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Optional

from viz.serve.client import ServeError
from viz.serve.items import Item

# "Workload" in the annotations is viz.serve.workload.Workload, not imported: that module
# imports this one (tests/test_imports.py refuses a cycle, even one under TYPE_CHECKING).
OVERHEAD_PER_TURN = 12  # template tokens per extra message pair in a chat (the default model: 10)


@functools.lru_cache(maxsize=4)
def load_tokenizer(folder: str):
    """The tokenizer in a local folder (offline; loaded once per folder). With a tokenizer.json,
    only its fast tokenizer and its chat template are loaded: the same ids and the same rendered
    chats as `AutoTokenizer` (a test checks), in ~40 MB of memory instead of ~125 MB, which
    lesson 09's kernel holds beside a running server within Binder's 2 GB."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    from viz.compat import quiet_transformers

    try:
        with quiet_transformers():
            if (Path(folder) / "tokenizer.json").is_file():
                return _fast_tokenizer(Path(folder), PreTrainedTokenizerFast)
            return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as e:
        raise ServeError(
            f"cannot load a tokenizer from {folder} ({e}): give the folder of a "
            "model or of its tokenizer"
        ) from None


def _fast_tokenizer(folder: Path, fast):
    """tokenizer.json as a fast tokenizer, with tokenizer_config.json's special tokens and the
    chat template (chat_template.jinja, or the config's `chat_template`)."""
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        config = {}
    special = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        value = config.get(key)
        value = value.get("content") if isinstance(value, dict) else value
        if isinstance(value, str):
            special[key] = value
    try:
        tokenizer = fast(tokenizer_file=str(folder / "tokenizer.json"), **special)
    except Exception as e:  # the Rust parser raises a bare Exception for a file it cannot read
        raise ValueError(f"its tokenizer.json does not parse: {e}") from None
    template = folder / "chat_template.jinja"
    chat = template.read_text() if template.is_file() else config.get("chat_template")
    if isinstance(chat, str):
        tokenizer.chat_template = chat
    return tokenizer


def context_of(folder: str) -> Optional[int]:
    """The model's context in tokens, from config.json in `folder` (None if it does not say)."""
    config = Path(folder) / "config.json"
    try:
        value = json.loads(config.read_text()).get("max_position_embeddings")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None


def default_tokenizer() -> str:
    """The default model's local folder (its tokenizer and config)."""
    from viz import default_model

    return str(default_model.default_model_path())  # ValueError naming `make model`


def sentences() -> list[str]:
    from viz.perf.words import SAMPLE_PARAGRAPH

    flat = " ".join(SAMPLE_PARAGRAPH.split())
    parts = [s.strip() for s in flat.split(". ") if s.strip()]
    return [s if s.endswith(".") else s + "." for s in parts]


@functools.lru_cache(maxsize=8)
def _starts(tokenizer, seed: int) -> tuple[int, list[int]]:
    """The paragraph's length in tokens, and its token positions in an order shuffled by seed."""
    period = len(tokenizer(" ".join(sentences()), add_special_tokens=False)["input_ids"])
    starts = list(range(period))
    random.Random(f"{seed}:starts").shuffle(starts)
    return period, starts


@functools.lru_cache(maxsize=32)
def _cycle_ids(tokenizer, seed: int, cycle: int, repeats: int) -> list[int]:
    """The paragraph `repeats` times over, tokenized (after the first cycle of requests, its
    sentences in an order shuffled by seed and cycle)."""
    parts = sentences()
    order = parts if cycle == 0 else random.Random(f"{seed}:{cycle}").sample(parts, len(parts))
    return tokenizer(" ".join([" ".join(order)] * repeats), add_special_tokens=False)["input_ids"]


def cut_text(tokenizer, n: int, index: int, seed: int) -> str:
    """Request `index`'s text of exactly `n` tokens (no special tokens): the paragraph from
    its own starting token (the first ~90 requests all start at different tokens; later ones
    with the sentences in another order), repeated as needed."""

    def enc(s: str) -> list[int]:
        return tokenizer(s, add_special_tokens=False)["input_ids"]

    period, starts = _starts(tokenizer, seed)
    cycle, k = divmod(index, period)
    ids = _cycle_ids(tokenizer, seed, cycle, 2 + (n + period) // period)[starts[k] :]
    for m in sorted(range(max(1, n - 3), n + 4), key=lambda m: abs(m - n)):
        candidate = tokenizer.decode(ids[:m])
        if candidate.strip() and len(enc(candidate)) == n:
            return candidate
    raise ServeError(
        f"could not cut a prompt of exactly {n} tokens with this tokenizer: try "
        f"a length one more or less ({n + 1})"
    )


def build_items(
    w: "Workload",  # noqa: F821
    n: int,
    seed: int,
    endpoint: str,
    kv_tokens: Optional[int] = None,
) -> list[Item]:
    """The n requests of a run of workload `w` (see `Workload.build`)."""
    if w.kind == "chat" and endpoint != "chat":
        raise ServeError(
            "a chat workload re-sends messages: use the chat endpoint (leave out "
            "endpoint='completions' / --completions)"
        )
    tokenizer = None
    if w.kind in ("synthetic", "chat", "file"):
        if not w.tokenizer:
            w.tokenizer = default_tokenizer()
        tokenizer = load_tokenizer(w.tokenizer)
        w.context_tokens = context_of(w.tokenizer)
    out_rng = random.Random(f"{seed}:output")
    if w.kind in ("synthetic", "chat"):
        items = _synthetic(w, n, seed, tokenizer, out_rng)
    else:
        items = _listed(w, n, seed, endpoint, out_rng)
    if tokenizer is not None:
        _check_fits(w, items, tokenizer, endpoint, kv_tokens)
    return items


def _synthetic(w: "Workload", n: int, seed: int, tokenizer, out_rng) -> list[Item]:  # noqa: F821
    rng = random.Random(f"{seed}:prompt")
    lengths = w.prompt_tokens.draw(n, rng)
    answers = w.output_tokens.draw(n, out_rng)
    items = []
    for i in range(n):
        conv, turn = (i // w.turns, i % w.turns) if w.kind == "chat" else (None, None)
        name = f"c{conv} t{turn}" if conv is not None else f"{lengths[i]} in"
        items.append(
            Item(
                name=name,
                text=cut_text(tokenizer, lengths[i], i, seed),
                max_tokens=answers[i],
                text_tokens=lengths[i],
                conversation=conv,
                turn=turn,
            )
        )
    return items


def _listed(w: "Workload", n: int, seed: int, endpoint: str, out_rng) -> list[Item]:  # noqa: F821
    """shipped / prompts / file: the set shuffled by the seed, repeated as needed."""
    if w.kind == "file":
        pool = getattr(w, "_items", None)
        if pool is None:
            from viz.serve.jsonl import read_jsonl

            pool, digest = read_jsonl(w.source)
            if w.sha256 and digest != w.sha256:
                raise ServeError(
                    f"{w.source} changed since this workload was made (its "
                    "SHA-256 differs): make the workload again from the file"
                )
    else:
        pool = [
            Item(name=p["name"] or f"prompt {i}", text=p["prompt"], max_tokens=p["max_tokens"])
            for i, p in enumerate(w.prompts)
        ]
    if not pool:
        raise ServeError("the workload has no prompts")
    order = list(range(len(pool)))
    random.Random(seed).shuffle(order)
    answers = w.output_tokens.draw(n, out_rng) if w.output_tokens is not None else None
    items = []
    for i in range(n):
        p = pool[order[i % len(order)]]
        if p.messages is not None and endpoint != "chat":
            raise ServeError(
                f'{p.name} of {w.source} is a chat ("messages"): use the chat '
                'endpoint, or write it as "prompt"'
            )
        if w.kind == "file":  # the line's own length, else the workload's
            asked = p.max_tokens or (answers[i] if answers else 0)
        else:  # the workload's cap, else the prompt's own limit
            asked = answers[i] if answers else p.max_tokens
        if not asked:
            raise ServeError(
                f'{p.name} of {w.source} has no "output_tokens" and the '
                "workload none: give output_tokens= (--output-tokens N)"
            )
        items.append(Item(name=p.name, text=p.text, messages=p.messages, max_tokens=asked))
    return items


def _rendered(tokenizer, messages: list[dict]) -> int:
    """Tokens of a chat as the server's template renders it (with the assistant's cue)."""
    try:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    except ValueError as e:  # no chat template in that folder
        raise ServeError(
            f"the tokenizer has no chat template to count chat prompts with "
            f"({str(e)[:80]}…): give the model's own folder as the tokenizer, "
            "or use the completions endpoint (--completions)"
        ) from None
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _count(tokenizer, item: Item, endpoint: str) -> int:
    """The prompt's tokens as the server counts them (the chat template included)."""
    if item.text_tokens is None and item.text is not None:
        item.text_tokens = len(tokenizer(item.text, add_special_tokens=False)["input_ids"])
    if item.messages is not None:
        return _rendered(tokenizer, item.messages)
    if endpoint == "chat":  # the template's own tokens, counted once per tokenizer
        return item.text_tokens + _template_tokens(tokenizer)
    return item.text_tokens


@functools.lru_cache(maxsize=8)
def _template_tokens(tokenizer) -> int:
    """Tokens the chat template adds around one user message (the default model: 30)."""
    return _rendered(tokenizer, [{"role": "user", "content": "Hello"}]) - len(
        tokenizer("Hello", add_special_tokens=False)["input_ids"]
    )


def _check_fits(
    w: "Workload",  # noqa: F821
    items: list[Item],
    tokenizer,
    endpoint: str,
    kv_tokens: Optional[int],
) -> None:
    """The longest request, prompt (template included) plus answer, within the context and
    the KV pool; a ServeError naming the fix otherwise."""
    if w.kind == "file":
        unique = list({id(it): it for it in items}.values())
    else:  # synthetic: the longest text with the longest answer bounds every request
        unique = [max(items, key=lambda it: it.text_tokens + it.max_tokens)]
    worst, need, prompt = None, 0, 0
    for it in unique:
        p = _count(tokenizer, it, endpoint)
        if w.kind == "chat":  # the last turn carries every earlier turn and its answer
            p += (w.turns - 1) * (w.prompt_tokens.high + w.output_tokens.high + OVERHEAD_PER_TURN)
        if p + it.max_tokens > need:
            worst, need, prompt = it, p + it.max_tokens, p
    ctx = w.context_tokens
    what = (
        "a chat's last turn (its whole history)" if w.kind == "chat" else f"request {worst.name!r}"
    )
    if ctx is not None and need > ctx:
        raise ServeError(
            f"{what} needs {prompt:,} prompt tokens (the chat template included) + "
            f"{worst.max_tokens:,} answer tokens = {need:,}, beyond the model's context of "
            f"{ctx:,} tokens: lower --prompt-tokens / prompt_tokens"
            + (" or the turns" if w.kind == "chat" else "")
            + f" (at most {max(1, ctx - worst.max_tokens - (prompt - (worst.text_tokens or 0)))}"
            f" with {worst.max_tokens}-token answers), or the answer length"
        )
    if kv_tokens is not None and need > kv_tokens:
        raise ServeError(
            f"{what} needs {need:,} tokens of KV cache (prompt {prompt:,} + answer "
            f"{worst.max_tokens:,}), more than the server's whole KV pool of {kv_tokens:,} "
            "tokens: it could never be scheduled. Start the server with more pages "
            "(num_pages=, --num-pages) or send shorter requests"
        )
