"""Record one streaming request to any OpenAI-compatible server, on the client's clock.

    rec = viz.serve.record_request(server, "What is the capital of France?")
    print(rec.summary())          # TTFT, ITL, TPOT, E2E (definitions: viz.serve.metrics)
    rec.save("request.json")      # a StreamRecord document (JSON)

The HTTP and Server-Sent-Events work is the `openai` client's (a maintained library, retries
off): this module times what it yields, classifies what goes wrong, and keeps the result as
plain data. The same client speaks to every server with the OpenAI API — start one, then pass
its URL (`allow_remote=True` for one on another machine):

    transformers serve <folder> --continuous-batching       # http://127.0.0.1:8000/v1
    vllm serve HuggingFaceTB/SmolLM2-135M-Instruct           # http://127.0.0.1:8000/v1
    python -m sglang.launch_server --model-path HuggingFaceTB/SmolLM2-135M-Instruct --port 30000
                                                             # http://127.0.0.1:30000/v1
    llama-server -m SmolLM2-135M-Instruct.Q4_1.gguf --port 8080   # http://127.0.0.1:8080/v1
    ollama serve; ollama pull smollm2:135m                   # http://127.0.0.1:11434/v1

Everything that goes wrong is a `ServeError` (a ValueError) whose message names the fix; in a
load run (`viz.serve.run_load`) a failed request is recorded with that message instead.
Introduced in lesson 09 (Serving many users).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import platform
import re
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar, Optional
from urllib.parse import urlparse, urlunparse

from viz import checks
from viz.documents import Document

# utc_now: now, as every viz document writes it ("2026-12-06T03:40:12Z"), once written here in
# another ISO form ("+00:00")
from viz.provenance import environment_from_loose, loose_names, unknown_environment, utc_now
from viz.serve.metrics import RequestRecord, ServerTiming
from viz.serve.protocol import server_handle
from viz.trace import Environment

ENDPOINTS = ("chat", "completions")
REMOTE_HINT = (
    "viz sends requests only to servers on this machine (127.0.0.1, localhost, ::1); "
    "for a server you run elsewhere (vLLM on a GPU machine, say) pass "
    "allow_remote=True (`--allow-remote` on the command line)"
)


class ServeError(ValueError):
    """A server could not be reached, or answered badly. `kind` says which way:

    input (a bad argument), connection (nothing answers, or the connection broke), timeout
    (no data for too long, or the request ran past its limit), http (an HTTP error status;
    the server's message is included), protocol (not a stream, malformed or truncated
    events), server (the server reported an error inside the stream), empty (an answer with
    no text), cancelled (the run stopped it).
    """

    def __init__(self, message: str, kind: str = "input", http_status: Optional[int] = None):
        super().__init__(message)
        self.kind = kind
        self.http_status = http_status


# ---- where requests go --------------------------------------------------------------------------
@dataclass
class Target:
    """The server a request went to, as the client knows it."""

    base_url: str  # the OpenAI API root, e.g. http://127.0.0.1:8000/v1
    endpoint: str  # "chat" (/chat/completions) or "completions" (/completions)
    model: str  # the model id as the server names it (/v1/models)
    server_software: str = ""  # the HTTP `server` header, e.g. "uvicorn"
    server_label: str = ""  # what viz knows of it, e.g. "transformers serve · continuous batching"


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: Any, allow_remote: bool = False) -> str:
    """The OpenAI API root for `url` (a bare http://host:port gets /v1); a ServeError naming
    the fix for anything else, and for a host that is not this machine unless allowed."""
    if (handle := server_handle(url)) is not None:  # a server viz started
        url = handle.url
    checks.text(
        "the server URL", url, what="a string such as 'http://127.0.0.1:8000/v1'", error=ServeError
    )
    parsed = urlparse(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ServeError(f"{url!r} is not an http(s) URL: write it like 'http://127.0.0.1:8000/v1'")
    try:
        parsed.port
    except ValueError:
        raise ServeError(f"{url!r} has an invalid port: use a number from 1 to 65535") from None
    if not allow_remote and not is_loopback(parsed.hostname):
        raise ServeError(f"refusing to contact {parsed.hostname}: {REMOTE_HINT}")
    path = parsed.path.rstrip("/")
    if not path:
        path = "/v1"
    return urlunparse(parsed._replace(path=path, params="", query="", fragment=""))


# ---- timeouts and the async client --------------------------------------------------------------
@dataclass
class Timeouts:
    """How long a request may take before it is given up (seconds)."""

    connect_s: float = 5.0  # to open the connection
    stall_s: float = 60.0  # with no data at all from the server (a stalled stream; a
    #                        one-at-a-time server sends nothing while a request queues)
    request_s: float = 300.0  # for the whole request, first byte to last

    def __post_init__(self):
        for name in ("connect_s", "stall_s", "request_s"):
            checks.positive(
                f"timeout {name}", getattr(self, name), noun="a number of seconds", error=ServeError
            )


def make_client(base_url: str, timeouts: Timeouts, api_key: Optional[str] = None):
    """An `openai.AsyncOpenAI` for `base_url`: no retries (a benchmark must see every
    failure), the connect and stall limits as httpx timeouts."""
    import openai

    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "not-needed",
        max_retries=0,
        timeout=openai.Timeout(
            timeouts.request_s,
            connect=timeouts.connect_s,
            read=timeouts.stall_s,
            write=timeouts.stall_s,
            pool=timeouts.request_s,
        ),
    )


async def served_models(client, base_url: str) -> tuple[list[str], str]:
    """The model ids the server lists at /v1/models, and its HTTP `server` header; a
    ServeError naming the fix otherwise."""
    import openai

    try:
        raw = await client.models.with_raw_response.list()
        page = raw.parse()
    except openai.APITimeoutError:
        raise ServeError(
            f"no answer from {base_url} in time: is the server still starting or "
            "overloaded? wait for it, or raise the connect timeout",
            "timeout",
        ) from None
    except openai.APIConnectionError as e:
        raise ServeError(
            f"cannot connect to {base_url} ({_cause(e)}): nothing is serving "
            "there. Start a server (viz.serve.serve(), `python -m viz serve`), or "
            "check the host and port",
            "connection",
        ) from None
    except openai.APIStatusError as e:
        hint = (
            " — is the path right? OpenAI-compatible servers answer under /v1"
            if e.status_code == 404
            else ""
        )
        raise ServeError(
            f"{base_url}/models answered HTTP {e.status_code}: {_server_message(e)}{hint}",
            "http",
            e.status_code,
        ) from None
    except (json.JSONDecodeError, openai.APIResponseValidationError) as e:
        raise ServeError(
            f"{base_url}/models did not answer with OpenAI-style JSON ({e}): is "
            "this an OpenAI-compatible server? check the URL",
            "protocol",
        ) from None
    return [m.id for m in page.data], raw.headers.get("server", "")


async def resolve_target(
    client, base_url: str, model: Optional[str], endpoint: str, server_label: str = ""
) -> Target:
    """Check the server answers and serves `model` (None: the first model it lists)."""
    checks.one_of("endpoint", endpoint, ENDPOINTS, error=ServeError)
    models, software = await served_models(client, base_url)
    if not models:
        raise ServeError(f"{base_url} lists no models: load one into the server first")
    if model is None:
        model = models[0]
    elif model not in models:
        raise ServeError(
            f"unknown model {model!r}: {base_url} serves {models}; pass one of "
            "these as model= (or leave model out to use the first)"
        )
    return Target(
        base_url=base_url,
        endpoint=endpoint,
        model=model,
        server_software=software,
        server_label=server_label,
    )


def _cause(e: BaseException) -> str:
    """The innermost cause of an exception, in a few words."""
    while e.__cause__ is not None or e.__context__ is not None:
        e = e.__cause__ or e.__context__
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _short(text: str, n: int = 300) -> str:
    """`text` on one line, cut to about `n` characters (an ellipsis says where)."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _reason(v: Any) -> str:
    """A FastAPI validation list ([{"loc": [...], "msg": ...}, ...]) as "loc: msg; ...", any
    other JSON value as JSON."""
    if isinstance(v, str):
        return v
    if isinstance(v, list) and v and all(isinstance(d, dict) and "msg" in d for d in v):
        return "; ".join(
            ".".join(str(x) for x in d.get("loc") or []) + ": " + str(d["msg"])
            if d.get("loc")
            else str(d["msg"])
            for d in v
        )
    return json.dumps(v)


def _server_message(e) -> str:
    """The reason a server put in an HTTP error body (OpenAI `error.message`, FastAPI
    `detail`, or the raw text), shortened to one line of ~300 characters."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            if body.get(key):
                return _short(_reason(body[key]))
    if isinstance(body, str) and body.strip():
        return _short(body)
    try:
        text = e.response.text.strip()
    except Exception:
        text = ""
    return _short(text) if text else "it gave no reason (an empty body)"


# A request's id (sent as X-Request-ID) is a UUID: llama-cpp-python's server (starlette-context)
# refuses any other X-Request-ID with HTTP 400 and an empty body. The id still carries the run
# and the request's index, which the views print: <run, 8 hex>-7669-4a7a-8000-<index, 12 digits>.
_REQUEST_ID = re.compile(r"^[0-9a-f]{8}-7669-4a7a-8000-(\d{12})$")


def request_id(run_id: str, index: int) -> str:
    """The X-Request-ID of request `index` of run `run_id` (8 hex digits): a valid UUID."""
    if not re.fullmatch(r"[0-9a-f]{8}", run_id) or not 0 <= index < 10**12:
        raise ValueError(
            f"a run id is 8 hex digits and an index < 10^12, not {run_id!r}, {index!r}"
        )
    return f"{run_id}-7669-4a7a-8000-{index:012d}"


def request_index(rid: str) -> Optional[int]:
    """The index a request id from `request_id` carries (also an older file's "viz-<run>-N"),
    else None."""
    m = _REQUEST_ID.match(rid)
    if m:
        return int(m.group(1))
    tail = rid.rsplit("-", 1)[-1]
    return int(tail) if rid.startswith("viz-") and tail.isdigit() else None


# ---- one streaming request ----------------------------------------------------------------------
def now() -> float:
    """The client's clock (CLOCK_MONOTONIC on Linux, shared by every process on the machine)."""
    return time.perf_counter()


def _fail(rec: RequestRecord, kind: str, message: str, t0: float) -> None:
    rec.error_kind, rec.error = kind, message
    if rec.end_s is None:
        rec.end_s = now() - t0


async def stream_request(
    client,
    target: Target,
    rec: RequestRecord,
    t0: float,
    *,
    prompt: Optional[str] = None,
    system: Optional[str] = None,
    temperature: float = 0.0,
    seed: Optional[int] = None,
    logprobs: bool = False,
    timeouts: Timeouts = Timeouts(),
    on_failure: Optional[Callable[[RequestRecord], str]] = None,
    messages: Optional[list[dict[str, Any]]] = None,
    extra: Optional[dict[str, Any]] = None,
) -> None:
    """Send one streaming request and fill `rec` as chunks arrive (times: seconds since `t0`).

    prompt (with an optional system message), or messages (a whole chat); extra: more fields
    of the request body (e.g. {"min_tokens": 32}, for the engines that accept them).
    Never raises for a failed request: `rec.error` / `rec.error_kind` say what happened
    (`on_failure(rec)` may add to the message, e.g. the server's log). Cancelling the task
    records kind "cancelled" (the text received so far is kept) and re-raises.
    """
    chat = target.endpoint == "chat"
    stream = None
    rec.sent_s = now() - t0
    try:
        async with asyncio.timeout(timeouts.request_s):
            # 1. send the request; the reply's headers arrive (or an HTTP error is raised)
            kwargs = _request_arguments(target, rec, temperature, seed, logprobs)
            if extra:
                kwargs["extra_body"] = dict(extra)
            stream = await _open_stream(client, chat, prompt, system, kwargs, messages)
            rec.http_status = stream.response.status_code
            _check_streaming(stream.response.headers.get("content-type", ""))
            # 2. every chunk timed as it arrives
            async for chunk in stream:
                _take_chunk(rec, chunk, now() - t0, chat)
        rec.end_s = now() - t0
        # 3. a complete reply ends with a finish reason and carried some text
        _check_complete(rec)
    except asyncio.CancelledError:
        _fail(
            rec,
            "cancelled",
            f"stopped by the run after {len(rec.token_times_s)} text "
            "chunks (its time limit, or an interrupt)",
            t0,
        )
        raise
    except Exception as e:
        failure = _explain_failure(e, rec, target, timeouts)
        if failure is None:
            raise
        _fail(rec, *failure, t0)
    finally:
        await _close_quietly(stream)
    if rec.error is not None and on_failure is not None:
        extra = await asyncio.to_thread(on_failure, rec)  # it may wait (server_note)
        if extra:
            rec.error += extra


def _request_arguments(
    target: Target, rec: RequestRecord, temperature: float, seed: Optional[int], logprobs: bool
) -> dict[str, Any]:
    """The OpenAI client's arguments for one streaming request (its id in X-Request-ID)."""
    kwargs: dict[str, Any] = {
        "model": target.model,
        "stream": True,
        "max_tokens": rec.max_tokens,
        "temperature": temperature,
        "stream_options": {"include_usage": True},
        "extra_headers": {"X-Request-ID": rec.request_id},
    }
    if seed is not None:
        kwargs["seed"] = seed
    if logprobs:
        kwargs["logprobs"] = True if target.endpoint == "chat" else 1
    return kwargs


async def _open_stream(
    client,
    chat: bool,
    prompt: Optional[str],
    system: Optional[str],
    kwargs: dict[str, Any],
    messages: Optional[list[dict[str, Any]]] = None,
):
    if chat:
        if messages is None:
            messages = ([{"role": "system", "content": system}] if system else []) + [
                {"role": "user", "content": prompt}
            ]
        return await client.chat.completions.create(messages=messages, **kwargs)
    if messages is not None:
        raise ServeError("a chat (messages) needs the chat endpoint, not completions")
    return await client.completions.create(prompt=prompt, **kwargs)


def _check_streaming(content_type: str) -> None:
    if "text/event-stream" not in content_type:
        raise ServeError(
            f"the server answered with {content_type or 'no content type'}, not a stream of "
            "events (text/event-stream): it ignored stream=true. Use a server that "
            "streams (transformers serve, vLLM, SGLang, llama.cpp, Ollama)",
            "protocol",
        )


def _check_complete(rec: RequestRecord) -> None:
    if rec.finish_reason is None:
        raise ServeError(
            f"the stream ended after {len(rec.token_times_s)} text chunks without its "
            "final chunk (no finish_reason): the reply was truncated — the server closed "
            "the stream early; check the server's log",
            "protocol",
        )
    if not rec.token_times_s:
        raise ServeError(
            f"the server finished (finish_reason {rec.finish_reason!r}) "
            "without sending any text: nothing to time; ask for a longer "
            "answer or another prompt",
            "empty",
        )


_HTTP_HINTS = {
    400: "the request was refused: read the server's message",
    404: "wrong URL path or unknown model: check both",
    422: "the server rejected a field of the request: read its message",
    429: "the server is rate-limiting: lower the request rate",
    503: "the server is unavailable or unhealthy: check its log",
}


def _explain_failure(
    e: Exception, rec: RequestRecord, target: Target, timeouts: Timeouts
) -> Optional[tuple[str, str]]:
    """(kind, message) for a failed request: what happened and what to do; None for an
    exception that is not a request's failure (a bug: it propagates)."""
    import openai

    chunks = f"{len(rec.token_times_s)} text chunks"
    answered = rec.http_status is not None
    if isinstance(e, ServeError):
        return e.kind, str(e)
    if isinstance(e, TimeoutError):
        return "timeout", (
            f"the request took longer than {timeouts.request_s:g} s (its "
            "limit) and was stopped: raise request_s in Timeouts, or lower "
            "the load"
        )
    if isinstance(e, openai.APITimeoutError):  # before APIConnectionError: a subclass of it
        if not answered:
            return "timeout", (
                f"the server did not answer within {timeouts.connect_s:g} s / "
                f"{timeouts.stall_s:g} s ({_cause(e)}): is it overloaded? "
                "lower the load, or raise the timeouts"
            )
        return "timeout", (
            f"the stream stalled: no data for {timeouts.stall_s:g} s after "
            f"{chunks}; the server hangs or is overloaded (raise stall_s if "
            "it is just slow)"
        )
    if isinstance(e, openai.APIConnectionError):
        if not answered:
            return "connection", (
                f"cannot connect to {target.base_url} ({_cause(e)}): is the "
                "server running? start it, or check the host and port"
            )
        return "connection", (
            f"the connection broke mid-stream after {chunks} ({_cause(e)}): "
            "the server closed it or died; check the server's log"
        )
    if isinstance(e, openai.APIStatusError):  # before APIError: a subclass of it
        rec.http_status = e.status_code
        hint = _HTTP_HINTS.get(
            e.status_code,
            "the server failed: check its log"
            if e.status_code >= 500
            else "read the server's message",
        )
        return "http", f"HTTP {e.status_code} from the server: {_server_message(e)} ({hint})"
    if isinstance(e, openai.APIError):  # an {"error": ...} event inside the stream
        return "server", (
            f"the server reported an error mid-stream after {chunks}: "
            f"{e.message} (check the server's log)"
        )
    if isinstance(e, (json.JSONDecodeError, UnicodeDecodeError)):
        return "protocol", (
            f"a malformed event in the stream (its data is not JSON: {e}): "
            "the server does not speak the OpenAI streaming format; check "
            "the URL and the server"
        )
    return None


async def _close_quietly(stream) -> None:
    """Close the reply's stream (its connection back to the pool), even when cancelled."""
    if stream is not None:
        try:
            await asyncio.shield(stream.close())
        except BaseException:
            pass


def _take_chunk(rec: RequestRecord, chunk: Any, t: float, chat: bool) -> None:
    """Record one chunk: its text and arrival time, usage, finish reason, log-probabilities."""
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        rec.prompt_tokens = getattr(usage, "prompt_tokens", None)
        rec.output_tokens = getattr(usage, "completion_tokens", None)
    for choice in getattr(chunk, "choices", None) or []:
        if chat:
            delta = choice.delta
            text = (
                getattr(delta, "content", None) or getattr(delta, "reasoning_content", None)
                if delta is not None
                else None
            )
        else:
            text = getattr(choice, "text", None)
        if text:
            rec.token_times_s.append(t)
            rec.token_texts.append(text)
        lp = getattr(choice, "logprobs", None)
        if lp is not None:
            values = (
                [c.logprob for c in (lp.content or [])]
                if chat
                else list(getattr(lp, "token_logprobs", None) or [])
            )
            if values:
                rec.logprobs = (rec.logprobs or []) + [float(v) for v in values]
        if getattr(choice, "finish_reason", None):
            rec.finish_reason = choice.finish_reason


# ---- running coroutines from ordinary code (and from a notebook) --------------------------------
def run_coroutine(make: Callable[[], Any], on_interrupt: Optional[Callable[[], None]] = None):
    """Run `make()` (a coroutine) to completion on a fresh event loop in a helper thread.

    A notebook's kernel already runs an event loop, so `asyncio.run` cannot be used there;
    a thread works everywhere. Ctrl-C / a kernel interrupt cancels the coroutine (it records
    what was in flight), waits for it to finish, calls `on_interrupt`, and re-raises.
    """
    box: dict[str, Any] = {}
    ready = threading.Event()

    def main():
        loop = asyncio.new_event_loop()
        box["loop"] = loop
        try:
            task = loop.create_task(make())
            box["task"] = task
            ready.set()
            box["value"] = loop.run_until_complete(task)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e
        finally:
            ready.set()
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    thread = threading.Thread(target=main, name="viz-serve-client", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        ready.wait(5)
        loop, task = box.get("loop"), box.get("task")
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        thread.join(30)
        if on_interrupt is not None:
            on_interrupt()
        raise
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ---- the saved document of one request ----------------------------------------------------------
@dataclass
class ClientInfo:
    """Where the client ran."""

    platform: str
    python_version: str
    viz_version: str
    openai_version: str  # the client library that spoke HTTP and SSE
    cpu: str = ""  # the client machine's CPU (`viz.runtime.cpu_name`)
    cpu_features: list[str] = field(default_factory=list)  # `viz.runtime.cpu_features`

    @classmethod
    def here(cls) -> "ClientInfo":
        import openai

        from viz.runtime import cpu_features, cpu_name
        from viz.version import __version__

        return cls(
            platform.platform(),
            platform.python_version(),
            __version__,
            openai.__version__,
            cpu_name(),
            cpu_features(),
        )


def _client_fields(client: dict[str, Any]) -> dict[str, Any]:
    """What a ClientInfo (as a dict) says of the machine whose clock took the timings, as
    `Environment` fields (device "cpu": the client's, not the server's: see its ServerInfo)."""
    return {
        "device": "cpu",
        "device_name": client.get("cpu", ""),
        "platform": client.get("platform", ""),
        "python_version": client.get("python_version", ""),
        "viz_version": client.get("viz_version", ""),
        "cpu_features": list(client.get("cpu_features", [])),
    }


def client_environment(client: ClientInfo, source: str) -> Environment:
    """Where and when a client took its timings, now, and by what (`viz.provenance`)."""
    return unknown_environment(
        **_client_fields(asdict(client)), measured_at=utc_now(), source=source
    )


def recorded_at_to_environment(
    data: dict[str, Any], source: str, client: Optional[dict[str, Any]]
) -> dict[str, Any]:
    """An upgrade step of a document that kept its time loose in `recorded_at` (ISO, with
    "+00:00"): it moves into `environment` (`viz.provenance`), with the client machine that
    `client` (a ClientInfo's dict) describes."""
    data = dict(data)
    when = data.pop("recorded_at", "")
    return environment_from_loose(
        data, (), source, measured_at=when, **_client_fields(client or {})
    )


RECORD_SOURCE = "recorded by viz.serve.record_request"


def _stream_v1_to_v2(data: dict) -> dict:
    """Schema 1: the time was a loose `recorded_at`; it moves into `environment`."""
    return recorded_at_to_environment(data, RECORD_SOURCE, data.get("client"))


@loose_names(recorded_at="measured_at")
@dataclass
class StreamRecord(Document):
    """One streaming request, timed by its client (`record_request`). Lesson 09.

    Where, when and by what is `environment` (`viz.provenance`; `record.recorded_at` reads its
    time, as before)."""

    KIND: ClassVar[str] = "llm-inference-stream"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: _stream_v1_to_v2}
    WHAT: ClassVar[str] = "stream record"
    AGAIN: ClassVar[str] = (
        "record it again with viz.serve.record_request(...) or "
        '`python -m viz request "prompt" -o FILE`'
    )

    target: Target
    prompt: str
    system: Optional[str]  # the system message sent before the prompt (chat only)
    temperature: float
    request: RequestRecord
    client: ClientInfo
    label: str = ""
    # the client machine, when (ISO UTC: `viz.provenance.utc_now`) and by what
    environment: Environment = field(default_factory=unknown_environment)

    @property
    def ok(self) -> bool:
        return self.request.ok

    @property
    def text(self) -> str:
        return self.request.text

    @property
    def ttft_s(self) -> Optional[float]:
        return self.request.ttft_s

    @property
    def itl_s(self) -> list[float]:
        return self.request.itl_s

    @property
    def tpot_s(self) -> Optional[float]:
        return self.request.tpot_s

    @property
    def e2e_s(self) -> Optional[float]:
        return self.request.e2e_s

    def summary(self) -> str:
        r = self.request
        head = f"{self.target.model} at {self.target.base_url} ({self.target.endpoint})"
        if not r.ok:
            return f"{head}\nfailed ({r.error_kind}): {r.error}"
        ms = lambda v: "n/a" if v is None else f"{v * 1000:.1f} ms"  # noqa: E731
        itl = r.itl_s
        return "\n".join(
            [
                head,
                f"TTFT       {ms(r.ttft_s)}",
                f"ITL        median {ms(sorted(itl)[len(itl) // 2] if itl else None)} over "
                f"{len(itl)} gaps",
                f"TPOT       {ms(r.tpot_s)}",
                f"E2E        {ms(r.e2e_s)} for {r.n_output_tokens} tokens "
                f"({len(r.token_times_s)} chunks), finish_reason {r.finish_reason}",
                f"text       {r.text!r}",
            ]
        )


def record_request(
    url: Any,
    prompt: str,
    *,
    model: Optional[str] = None,
    endpoint: str = "chat",
    system: Optional[str] = None,
    max_tokens: int = 64,
    temperature: float = 0.0,
    seed: Optional[int] = None,
    logprobs: bool = False,
    timeouts: Optional[Timeouts] = None,
    allow_remote: bool = False,
    api_key: Optional[str] = None,
    label: str = "",
    raise_on_error: bool = True,
) -> StreamRecord:
    """Send one streaming request and record when each piece of text arrived. Lesson 09.

    url: the server's API root ("http://127.0.0.1:8000/v1"), or an `EmbeddedServer`.
    model: the model id (None: the first the server lists). endpoint: "chat" (the chat
    template is applied by the server) or "completions" (the prompt as raw text).
    logprobs: ask for the chosen tokens' log-probabilities (kept when the server sends them;
    transformers serve ignores the request). raise_on_error: a failed request raises its
    ServeError (False: return the record with `request.error` set).
    """
    checks.prompt(prompt, "give the text to send", error=ServeError)
    checks.whole("max_tokens", max_tokens, 1, error=ServeError)
    checks.number("temperature", temperature, 0, error=ServeError)
    base_url = check_url(url, allow_remote)
    timeouts = timeouts or Timeouts()
    label_from_server = h.label if (h := server_handle(url)) is not None else ""
    rec = RequestRecord(
        index=0,
        request_id=request_id(uuid.uuid4().hex[:8], 0),
        prompt_name="",
        max_tokens=max_tokens,
        scheduled_s=0.0,
    )

    async def go() -> tuple[Target, float]:
        client = make_client(base_url, timeouts, api_key)
        try:
            target = await resolve_target(client, base_url, model, endpoint, label_from_server)
            t0 = now()
            await stream_request(
                client,
                target,
                rec,
                t0,
                prompt=prompt,
                system=system,
                temperature=float(temperature),
                seed=seed,
                logprobs=logprobs,
                timeouts=timeouts,
                on_failure=_server_hint(url),
            )
            return target, t0
        finally:
            await client.close()

    target, t0 = run_coroutine(go)
    attach_server_timing(url, [rec], t0)
    client = ClientInfo.here()
    record = StreamRecord(
        target=target,
        prompt=prompt,
        system=system,
        temperature=float(temperature),
        request=rec,
        client=client,
        label=label,
        environment=client_environment(client, RECORD_SOURCE),
    )
    if rec.error is not None and raise_on_error:
        raise ServeError(rec.error, rec.error_kind or "input", rec.http_status)
    return record


# A server process that dies closes its connections a moment before it can be seen to have
# exited: the note on a broken connection waits up to this long for the exit to show (in a
# thread of its own, so the run's other requests go on).
CONNECTION_SETTLE_S = 0.5


def server_note(handle: Any, rec: RequestRecord, short: bool = False) -> str:
    """`handle.failure_note` for `rec`'s failure: after a broken connection it waits up to
    CONNECTION_SETTLE_S for a dying server's exit, so the note says the server exited."""
    settle_s = CONNECTION_SETTLE_S if rec.error_kind == "connection" else 0.0
    return handle.failure_note(short=short, settle_s=settle_s)


def _server_hint(server: Any) -> Optional[Callable[[RequestRecord], str]]:
    """For an embedded server: a failure message gains the server's state and log tail."""
    handle = server_handle(server)
    if handle is None:
        return None
    return lambda rec: server_note(handle, rec)


def attach_server_timing(server: Any, requests: list[RequestRecord], t0: float) -> None:
    """Give each request the server's own timestamps, when the server recorded them
    (`EmbeddedServer(record=True)`), as seconds from `t0` (the client's clock: the same
    monotonic clock, both processes being on this machine)."""
    handle = server_handle(server)
    if handle is None:
        return
    by_id = handle.server_timings()
    for r in requests:
        s = by_id.get(r.request_id)
        if s is None:
            continue
        rel = lambda v: None if v is None else v - t0  # noqa: E731
        r.server = ServerTiming(
            received_s=rel(s["received"]),
            started_s=rel(s.get("started")),
            token_times_s=[v - t0 for v in s.get("tokens", [])],
            finished_s=rel(s.get("finished")),
            prompt_tokens=int(s.get("prompt_tokens", 0)),
        )
