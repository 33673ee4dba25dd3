"""Workloads: what a load run sends, stated the way engineers state it ("64 in, 32 out").

    w = serve.Workload.synthetic(prompt_tokens=64, output_tokens=32)       # 64 tokens in, 32 out
    w = serve.Workload.synthetic(prompt_tokens=serve.Lengths.normal(64, 16), output_tokens=32)
    w = serve.Workload.from_file("prompts.jsonl")                          # your own prompts
    w = serve.Workload.chat(turns=3, prompt_tokens=32, output_tokens=16)   # history re-sent
    run = serve.run_load(server, concurrency=4, n_requests=16, workload=w)

Kinds, as vLLM's `bench serve` (`--random-input-len`, a ShareGPT file) and GuideLLM
(`--data kind=synthetic_text,prompt_tokens=…,output_tokens=…`) offer them:

- **synthetic**: prompts of an exact number of tokens — fixed, or drawn per request from a
  uniform or a normal distribution (`Lengths`, seeded by the run's seed) — cut from real text
  (lesson 01's paragraph, `viz.perf.SAMPLE_PARAGRAPH`, its sentences shuffled per request so
  no two prompts begin alike) with the server's tokenizer: the model's own (the default
  model's, or a local tokenizer folder given as `tokenizer=`; never the network). The length
  counts the prompt's own text; the chat template adds ~30 tokens for the default model, which
  the server's count (`RequestRecord.prompt_tokens`) includes.
- **file**: a JSONL file, one request a line: `{"prompt": "text"}` or `{"messages": [{"role":
  "user", "content": "…"}, …]}`, with an optional `"output_tokens"` (its answer length).
- **chat**: conversations of `turns` user messages of synthetic text; each turn re-sends the
  whole history, the server's real answers included (`run_load` sends a conversation's turns
  one after another on one stream).
- **shipped** / **prompts**: the course's eight prompts (`prompts.json`), or a list given in
  code, each with its own answer limit unless `output_tokens` caps them all.

**Answer length.** `output_tokens` is sent as `max_tokens`. With `exact_output` (synthetic
and chat: on), `run_load` also asks the engine not to stop before it — `min_tokens` and/or
`ignore_eos` — *only where the engine accepts them*: llama-cpp-python's server takes
`min_tokens`; vLLM both; `transformers serve` refuses any unknown field with HTTP 422, so it
gets `max_tokens` alone and may stop early at the model's end of text. Every request records
the length it got (`RequestRecord.output_tokens`, `finish_reason`), and a run's summary says
how many stopped early.

**Refused before any request is sent**, each with the fix: a length of zero or less, a prompt
(plus its answer) beyond the model's context, an empty JSONL file, a malformed line (named by
its number), a tokenizer folder that does not exist. Introduced in lesson 09.
"""

from __future__ import annotations

import importlib.resources
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from viz import checks
from viz.serve.client import ServeError
from viz.serve.items import MAX_TOKENS, Item  # noqa: F401 (Item: what build returns)
from viz.serve.jsonl import read_jsonl
from viz.serve.synthetic import build_items, context_of, load_tokenizer  # noqa: F401

KINDS = ("shipped", "prompts", "synthetic", "file", "chat")
LENGTH_KINDS = ("fixed", "uniform", "normal")
MAX_TURNS = 64
SOURCE_TEXT = "viz.perf.SAMPLE_PARAGRAPH (lesson 01's paragraph)"


# ---- lengths ---------------------------------------------------------------------------------
@dataclass
class Lengths:
    """A length in tokens for each request: fixed, or drawn per request (seeded).

    Lengths(64): every request 64. Lengths.uniform(32, 96): each from 32 to 96, every length as
    likely. Lengths.normal(64, 16): around 64, standard deviation 16, rounded and clipped to
    [low, high] (default: mean ± 3 standard deviations, never under 1)."""

    mean: float  # tokens: the fixed length, the normal's mean, or the uniform's midpoint
    kind: str = "fixed"  # "fixed", "uniform" (low to high) or "normal"
    stdev: float = 0.0  # the normal's standard deviation (tokens)
    low: int = 0  # the shortest a request gets (0: the kind's default)
    high: int = 0  # the longest a request gets (0: the kind's default)

    def __post_init__(self):
        checks.one_of("a length's kind", self.kind, LENGTH_KINDS, error=ServeError)
        if self.kind == "fixed":
            _check_tokens("a length", self.mean)
            self.low = self.high = int(self.mean)
        elif self.kind == "uniform":
            _check_tokens("a uniform length's low end", self.low)
            _check_tokens("a uniform length's high end", self.high)
            if self.high < self.low:
                raise ServeError(
                    f"a uniform length runs from low to high: {self.low} > {self.high}; swap them"
                )
            self.mean, self.stdev = (self.low + self.high) / 2, 0.0
        else:
            _check_tokens("a normal length's mean", self.mean, whole=False)
            checks.positive(
                "a normal length's standard deviation",
                self.stdev,
                noun="a number of tokens",
                fix="0: give a fixed length",
                error=ServeError,
            )
            self.low = self.low or max(1, math.floor(self.mean - 3 * self.stdev))
            self.high = self.high or math.ceil(self.mean + 3 * self.stdev)
            _check_tokens("a normal length's low clip", self.low)
            _check_tokens("a normal length's high clip", self.high)
            if not self.low <= self.mean <= self.high:
                raise ServeError(
                    f"a normal length's mean {self.mean:g} must lie between its "
                    f"clips {self.low} and {self.high}"
                )

    @classmethod
    def uniform(cls, low: int, high: int) -> "Lengths":
        return cls(0, "uniform", low=low, high=high)

    @classmethod
    def normal(cls, mean: float, stdev: float, low: int = 0, high: int = 0) -> "Lengths":
        return cls(mean, "normal", stdev, low, high)

    @classmethod
    def of(cls, value: Any, what: str) -> "Lengths":
        """`value` as Lengths: a Lengths, a whole number (fixed), or a string "64" or
        "32..96" (uniform); a ServeError naming `what` otherwise."""
        if isinstance(value, Lengths):
            return value
        if isinstance(value, str):
            text = value.strip()
            try:
                if ".." in text:
                    lo, hi = text.split("..", 1)
                    return cls.uniform(int(lo), int(hi))
                return cls(int(text))
            except ValueError as e:
                if isinstance(e, ServeError):
                    raise ServeError(f"{what}: {e}") from None
                raise ServeError(
                    f'{what} must be a number of tokens ("64") or a range ("32..96"), not {value!r}'
                ) from None
        checks.whole(
            what,
            value,
            what='a whole number of tokens, a range "32..96" or serve.Lengths(...)',
            error=ServeError,
        )
        try:
            return cls(value)
        except ServeError as e:
            raise ServeError(f"{what}: {e}") from None

    def draw(self, n: int, rng: random.Random) -> list[int]:
        """n lengths (tokens), one per request."""
        if self.kind == "fixed":
            return [int(self.mean)] * n
        if self.kind == "uniform":
            return [rng.randint(self.low, self.high) for _ in range(n)]
        return [
            min(self.high, max(self.low, round(rng.gauss(self.mean, self.stdev)))) for _ in range(n)
        ]

    def __str__(self) -> str:
        if self.kind == "fixed":
            return f"{int(self.mean)}"
        if self.kind == "uniform":
            return f"{self.low}–{self.high}"
        return f"{self.mean:g} ± {self.stdev:g} ({self.low}–{self.high})"


def _check_tokens(what: str, v: Any, whole: bool = True) -> None:
    """A length in tokens; a float of whole value (64.0) counts as whole."""
    if not checks.is_number(v) or (whole and v != int(v)) or not 1 <= v <= MAX_TOKENS:
        checks.refuse(
            what,
            f"a whole number of tokens {checks.span(1, MAX_TOKENS)}",
            v,
            "a request needs at least one token in and one out",
            ServeError,
        )


# ---- the course's prompt set -------------------------------------------------------------------
@dataclass
class Prompt:
    """One prompt of a set."""

    name: str
    prompt: str
    max_tokens: int  # this prompt's answer limit


def load_prompts() -> list[Prompt]:
    """The shipped prompt set (viz/serve/prompts.json): eight prompts, 36 to 270 tokens with
    the default model's chat template, answers of 8 to 64 tokens at most."""
    text = importlib.resources.files("viz.serve").joinpath("prompts.json").read_text("utf-8")
    return [
        Prompt(p["name"], p["prompt"], int(p["max_tokens"])) for p in json.loads(text)["prompts"]
    ]


# ---- the workload ------------------------------------------------------------------------------
@dataclass
class Workload:
    """What a load run sends (module docstring). Kept in every `LoadRun` (`settings.workload`)."""

    kind: str = "shipped"  # one of KINDS
    prompt_tokens: Optional[Lengths] = None  # synthetic and chat: each prompt's (turn's) length
    output_tokens: Optional[Lengths] = None  # the answer length asked (None: each prompt's own)
    exact_output: bool = False  # also ask the engine not to stop early, where it accepts that
    turns: int = 1  # chat: user turns per conversation
    tokenizer: str = ""  # the tokenizer folder that counted and cut the prompts ("" none)
    context_tokens: Optional[int] = None  # the model's context, from that folder's config
    source: str = ""  # synthetic: the text cut into prompts; file: its path
    lines: int = 0  # file: its requests (non-blank lines)
    sha256: str = ""  # file: its digest, so a run names exactly what it sent
    prompts: list[Any] = field(default_factory=list)  # shipped / prompts: the set
    #   ({"name", "prompt", "max_tokens"} each)

    def __post_init__(self):
        checks.one_of("a workload's kind", self.kind, KINDS, error=ServeError)
        if self.kind in ("synthetic", "chat") and self.prompt_tokens is None:
            raise ServeError(f"a {self.kind} workload needs prompt_tokens (e.g. 64)")
        checks.whole("turns", self.turns, 1, MAX_TURNS, error=ServeError)
        if self.kind != "chat" and self.turns != 1:
            raise ServeError("turns= goes with a chat workload (Workload.chat)")

    # ---- the ways to make one ----------------------------------------------------------------
    @classmethod
    def synthetic(
        cls,
        prompt_tokens: Union[int, str, Lengths],
        output_tokens: Union[int, str, Lengths],
        *,
        exact_output: bool = True,
        tokenizer: Optional[str] = None,
    ) -> "Workload":
        """Prompts of `prompt_tokens` tokens cut from real text, answers of `output_tokens`."""
        return cls(
            "synthetic",
            Lengths.of(prompt_tokens, "prompt_tokens"),
            Lengths.of(output_tokens, "output_tokens"),
            bool(exact_output),
            tokenizer=_tokenizer_path(tokenizer),
            source=SOURCE_TEXT,
        )

    @classmethod
    def chat(
        cls,
        turns: int,
        prompt_tokens: Union[int, str, Lengths],
        output_tokens: Union[int, str, Lengths],
        *,
        exact_output: bool = True,
        tokenizer: Optional[str] = None,
    ) -> "Workload":
        """Conversations of `turns` messages of `prompt_tokens`, each re-sending its history."""
        return cls(
            "chat",
            Lengths.of(prompt_tokens, "prompt_tokens"),
            Lengths.of(output_tokens, "output_tokens"),
            bool(exact_output),
            turns,
            tokenizer=_tokenizer_path(tokenizer),
            source=SOURCE_TEXT,
        )

    @classmethod
    def from_file(
        cls,
        path: str,
        output_tokens: Union[None, int, str, Lengths] = None,
        *,
        exact_output: bool = False,
        tokenizer: Optional[str] = None,
    ) -> "Workload":
        """A JSONL file of prompts (module docstring); `output_tokens` for lines without one."""
        items, digest = read_jsonl(path)
        w = cls(
            "file",
            None,
            None if output_tokens is None else Lengths.of(output_tokens, "output_tokens"),
            bool(exact_output),
            tokenizer=_tokenizer_path(tokenizer),
            source=str(path),
            lines=len(items),
            sha256=digest,
        )
        w._items = items
        return w

    @classmethod
    def shipped(cls, output_tokens: Union[None, int, str, Lengths] = None) -> "Workload":
        """The course's eight prompts, each with its own answer limit (or `output_tokens`)."""
        return cls(
            "shipped",
            None,
            None if output_tokens is None else Lengths.of(output_tokens, "max_tokens"),
            prompts=[_prompt_dict(p) for p in load_prompts()],
        )

    @classmethod
    def of_prompts(
        cls, prompts: list, output_tokens: Union[None, int, str, Lengths] = None
    ) -> "Workload":
        """A list of prompts given in code (`viz.serve.Prompt`s, strings or dicts)."""
        return cls(
            "prompts",
            None,
            None if output_tokens is None else Lengths.of(output_tokens, "max_tokens"),
            prompts=[_prompt_dict(p) for p in prompts],
        )

    # ---- in words --------------------------------------------------------------------------------
    def __str__(self) -> str:
        out = (
            f"{self.output_tokens} out"
            if self.output_tokens is not None
            else "answers as each prompt says"
        )
        if self.kind == "synthetic":
            return f"{self.prompt_tokens} tokens in, {out}"
        if self.kind == "chat":
            return (
                f"chats of {self.turns} turns, {self.prompt_tokens} tokens in per turn, "
                f"{out}, history re-sent"
            )
        if self.kind == "file":
            return f"{Path(self.source).name} ({self.lines} prompts), {out}"
        what = "the shipped prompt set" if self.kind == "shipped" else "given prompts"
        cap = (
            f"answers capped at {self.output_tokens}"
            if self.output_tokens is not None
            else "each its own answer limit"
        )
        return f"{what} ({len(self.prompts)} prompts), {cap}"

    @property
    def details(self) -> str:
        """Where the text came from and what counted it, in words."""
        parts = []
        if self.source and self.kind != "file":
            parts.append(f"text: {self.source}")
        if self.sha256:
            parts.append(f"sha256 {self.sha256[:12]}")
        if self.tokenizer:
            parts.append(f"counted by the tokenizer in {self.tokenizer}")
        if self.exact_output:
            parts.append("answer length held where the engine accepts it")
        return "; ".join(parts)

    # ---- the requests ----------------------------------------------------------------------------
    def build(
        self, n: int, seed: int, endpoint: str = "chat", *, kv_tokens: Optional[int] = None
    ) -> list[Item]:
        """The n requests of a run (chat: n conversations' turns in order, n // turns whole
        conversations at least one), checked against the model's context (and `kv_tokens`,
        the server's KV pool, when known) before anything is sent."""
        return build_items(self, n, seed, endpoint, kv_tokens)


def _prompt_dict(p: Any) -> dict[str, Any]:
    if isinstance(p, dict):
        return {
            "name": str(p.get("name", "")),
            "prompt": p["prompt"],
            "max_tokens": int(p.get("max_tokens", 64)),
        }
    if isinstance(p, str):
        return {"name": "", "prompt": p, "max_tokens": 64}
    return {"name": p.name, "prompt": p.prompt, "max_tokens": int(p.max_tokens)}


# ---- the tokenizer -------------------------------------------------------------------------------
def _tokenizer_path(path: Optional[str]) -> str:
    """A tokenizer folder that exists (checked now), or "" for the server's model's own."""
    if path is None or path == "":
        return ""
    folder = Path(str(path)).expanduser()
    if not folder.is_dir():
        raise ServeError(
            f"no tokenizer folder at {path!r}: give a local folder holding "
            "tokenizer.json (or tokenizer_config.json), such as a model folder; "
            "leave it out for the server's model's own (viz never downloads one)"
        )
    if not any(
        (folder / f).is_file()
        for f in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
    ):
        raise ServeError(
            f"{folder} holds no tokenizer (no tokenizer.json or "
            "tokenizer_config.json): give the folder of a model or of its "
            "tokenizer"
        )
    return str(folder.resolve())
