"""What a load run needs to know of the engine behind the URL: its tokenizer, its KV pool, and
which request fields hold an answer to its length.

Engines differ in what they accept beyond the OpenAI fields. To make an answer exactly N tokens
long a benchmark sends `max_tokens` N and asks the engine not to stop at the model's end of
text before that: vLLM takes `min_tokens` and `ignore_eos`; llama-cpp-python's server takes
`min_tokens` (and silently ignores `ignore_eos`); `transformers serve` refuses any field it
does not know with HTTP 422 ("Unexpected fields in the request: {'ignore_eos'}") — GuideLLM's
synthetic data sends `ignore_eos`, and fails there. So:

- a server viz started: known — transformers serve gets none, llama.cpp `min_tokens`;
- any other URL: asked before its first run (once per server and model in this process) with
  a one-token request carrying both fields; if the server refuses (HTTP 400 or 422), with
  `min_tokens` alone; if refused again, none.

Where none is sent, answers may end early; each request records the length it got, and the
run's summary counts those that stopped early. Lesson 09.
"""

from __future__ import annotations

from typing import Any, Optional

from viz.serve.client import Target
from viz.serve.workload import Workload

BOTH = ["min_tokens", "ignore_eos"]


def tokenizer_for(server: Any) -> str:
    """The tokenizer folder of a server viz started (its model's folder), else the default
    model's (a URL's model is not known: give `tokenizer=` / `--tokenizer` for another)."""
    from viz.serve.server import EmbeddedServer
    from viz.serve.synthetic import default_tokenizer

    if isinstance(server, EmbeddedServer):
        return str(server.model_folder)
    return default_tokenizer()


def kv_pool_tokens(server: Any) -> Optional[int]:
    """Tokens the server's KV pool holds (continuous batching's pages × page size), when viz
    started it and it has one; None otherwise."""
    info = server.info() if server is not None else None
    if info is None or not info.continuous_batching or not info.page_size or not info.num_pages:
        return None
    return info.page_size * info.num_pages


async def length_fields(server: Any, client, target: Target, w: Workload) -> tuple[list[str], str]:
    """The fields to send besides max_tokens to hold each answer to its length, and why."""
    if not w.exact_output:
        return [], ""
    info = server.info() if server is not None else None
    software = info.software if info is not None else ""
    if software.startswith("transformers serve"):
        return [], (
            "transformers serve refuses unknown request fields (HTTP 422): only "
            "max_tokens is sent, so answers may end early at the model's end of text"
        )
    if software.startswith("llama.cpp"):
        return ["min_tokens"], "llama-cpp-python's server takes min_tokens (not ignore_eos)"
    key = (target.base_url, target.model, target.endpoint)
    if key in _ASKED:  # asked once per server and model in this process
        return _ASKED[key]
    fields, note, settled = await _probe(client, target)
    if settled:  # a failed probe is asked again next run
        _ASKED[key] = (fields, note)
    return fields, note


_ASKED: dict[tuple, tuple[list[str], str]] = {}


async def _probe(client, target: Target) -> tuple[list[str], str, bool]:
    """Ask with both fields, then with min_tokens alone (see the module docstring): the
    fields, why, and whether the server settled it (False: the question itself failed)."""
    for fields in (BOTH, ["min_tokens"]):
        answer, reason = await _ask(client, target, fields)
        if answer == "accepted":
            return (
                fields,
                f"the server accepted {' and '.join(fields)} (asked before the run)",
                True,
            )
        if answer == "failed":
            return (
                [],
                (
                    f"asking the server which length fields it takes failed ({reason}): "
                    "only max_tokens is sent, so answers may end early"
                ),
                False,
            )
    return (
        [],
        (
            f"the server refused min_tokens ({reason}): only max_tokens is sent, so "
            "answers may end early"
        ),
        True,
    )


async def _ask(client, target: Target, fields: list[str]) -> tuple[str, str]:
    """("accepted", "") when the server takes a one-token request with `fields`, ("refused",
    why) when it refuses them (HTTP 400 or 422), ("failed", why) for any other failure (the
    run's own requests will meet and record it)."""
    import openai

    body = {f: 1 if f == "min_tokens" else True for f in fields}
    kwargs = dict(model=target.model, max_tokens=1, stream=True, extra_body=body)
    stream = None
    try:
        if target.endpoint == "chat":
            stream = await client.chat.completions.create(
                messages=[{"role": "user", "content": "Hi"}], **kwargs
            )
        else:
            stream = await client.completions.create(prompt="Hi", **kwargs)
        async for _ in stream:
            pass
    except openai.APIStatusError as e:
        return ("refused" if e.status_code in (400, 422) else "failed"), f"HTTP {e.status_code}"
    except (openai.APIError, ValueError) as e:
        return "failed", type(e).__name__
    finally:
        if stream is not None:
            try:
                await stream.close()
            except Exception:  # noqa: BLE001 - a broken connection has nothing left to close
                pass
    return "accepted", ""
