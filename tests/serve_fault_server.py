"""A small OpenAI-compatible server that misbehaves on purpose, for viz.serve's fault tests.

    python tests/serve_fault_server.py --port 8123      (tests start it through viz.serve's
                                                          ManagedProcess, tied to pytest)

`/v1/models` lists one model per behaviour; a request picks its behaviour by the model it
names. Every stream is made by Starlette's StreamingResponse and served by uvicorn (real
HTTP and chunked encoding); only the bytes inside the stream are chosen here.

- ok: a correct stream — role chunk, `n` text chunks 10 ms apart (with log-probabilities
  −0.25, −0.5, ... when asked for), final chunk with usage.
- http500 / http400 / http422: an error status with an OpenAI / FastAPI error body.
- nonstream: a complete JSON reply although stream=true was asked.
- malformed: two chunks, then an event whose data is not JSON.
- truncated: three chunks, then the stream ends cleanly without its final chunk.
- cut: three chunks, then the connection is dropped mid-body.
- error-event: two chunks, then `data: {"error": ...}` (what transformers serve sends when
  generation fails).
- stall: two chunks, then nothing for a minute.
- die: two chunks, then the whole server process exits.
- flaky: "cut" for requests whose X-Request-ID ends in an odd digit, "ok" for the others.
- http400-empty: HTTP 400 with an empty body (no reason given).
- http422-long: HTTP 422 with FastAPI's validation list, its reason ~1,000 characters long.
- uuid-id: as llama-cpp-python's server (starlette-context's RequestIdPlugin): HTTP 400 with an
  empty body unless the X-Request-ID header is a UUID; "ok" when it is.
- early: a model that reaches its end of text early: half of `max_tokens` (at least 1) with
  finish_reason "stop", unless the request holds it with `min_tokens` or `ignore_eos`.
- strict: "early", but, as transformers serve, HTTP 422 for any field it does not know
  ("Unexpected fields in the request: {'ignore_eos'}").
- echo: "ok" whose first chunk says how many chat messages came ("m3 ").
"""

import argparse
import asyncio
import json
import os
import time
import uuid

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MODES = [
    "ok",
    "http500",
    "http400",
    "http422",
    "nonstream",
    "malformed",
    "truncated",
    "cut",
    "error-event",
    "stall",
    "die",
    "flaky",
    "http400-empty",
    "uuid-id",
    "http422-long",
    "early",
    "strict",
    "echo",
]
# What transformers serve's chat endpoint knows (the strict mode refuses anything else).
KNOWN = {
    "model",
    "messages",
    "stream",
    "stream_options",
    "max_tokens",
    "temperature",
    "seed",
    "logprobs",
    "top_logprobs",
    "stop",
    "top_p",
}


def chunk(
    rid: str, model: str, content=None, role=None, finish=None, usage=None, logprob=None
) -> str:
    delta = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    if logprob is not None:
        choice["logprobs"] = {
            "content": [{"token": content, "logprob": logprob, "bytes": None, "top_logprobs": []}]
        }
    body = {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
    }
    if usage:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n"


async def health(request: Request):
    return JSONResponse({"status": "ok"})


async def models(request: Request):
    return JSONResponse(
        {
            "object": "list",
            "data": [{"id": m, "object": "model", "owned_by": "tests"} for m in MODES],
        }
    )


async def chat(request: Request):
    body = await request.json()
    mode, n = body.get("model"), int(body.get("max_tokens") or 8)
    rid = request.headers.get("x-request-id", "fault")
    if mode == "flaky":
        mode = "cut" if rid[-1:] in "13579" and rid[-1:] else "ok"
    if mode == "uuid-id":
        try:
            uuid.UUID(rid)
            mode = "ok"
        except ValueError:
            return Response(status_code=400)
    if mode == "http400-empty":
        return Response(status_code=400)
    if mode == "strict" and set(body) - KNOWN:
        return JSONResponse(
            {"detail": f"Unexpected fields in the request: {set(body) - KNOWN}"}, status_code=422
        )
    finish = "length"
    if mode in ("early", "strict") and not (
        body.get("ignore_eos") or int(body.get("min_tokens") or 0) >= n
    ):
        n, finish = max(1, n // 2), "stop"
    if mode == "http422-long":
        reason = "Input should be less than or equal to 20 " + "x" * 1000
        return JSONResponse(
            {
                "detail": [
                    {
                        "type": "less_than_equal",
                        "msg": reason,
                        "input": 99,
                        "loc": ["body", "top_logprobs"],
                    }
                ]
            },
            status_code=422,
        )
    if mode == "http500":
        return JSONResponse(
            {"error": {"message": "the fault server failed on purpose", "type": "server_error"}},
            status_code=500,
        )
    if mode == "http400":
        return JSONResponse(
            {
                "error": {
                    "message": "max_tokens is too large for this model",
                    "type": "invalid_request_error",
                }
            },
            status_code=400,
        )
    if mode == "http422":
        return JSONResponse(
            {"detail": "Unexpected fields in the request: {'bogus'}"}, status_code=422
        )
    if mode == "nonstream":
        return JSONResponse(
            {
                "id": rid,
                "object": "chat.completion",
                "model": mode,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "hi"},
                    }
                ],
            }
        )

    async def events():
        yield chunk(rid, mode, role="assistant")
        stop_after = {
            "malformed": 2,
            "truncated": 3,
            "cut": 3,
            "error-event": 2,
            "stall": 2,
            "die": 2,
        }.get(mode, n)
        for i in range(min(n, stop_after)):
            await asyncio.sleep(0.01)
            text = (
                f"m{len(body.get('messages') or [])} " if mode == "echo" and i == 0 else f"tok{i} "
            )
            yield chunk(
                rid, mode, content=text, logprob=-0.25 * (i + 1) if body.get("logprobs") else None
            )
        if mode == "malformed":
            yield "data: {this is not json\n\n"
        elif mode == "truncated":
            return
        elif mode == "cut":
            raise RuntimeError("dropping the connection on purpose")
        elif mode == "error-event":
            yield 'data: {"error": "CUDA out of memory (on purpose)"}\n\n'
        elif mode == "stall":
            await asyncio.sleep(60)
        elif mode == "die":
            await asyncio.sleep(0.05)
            os._exit(1)
        else:
            yield chunk(
                rid,
                mode,
                finish=finish,
                usage={"prompt_tokens": 5, "completion_tokens": n, "total_tokens": 5 + n},
            )

    return StreamingResponse(events(), media_type="text/event-stream")


app = Starlette(
    routes=[
        Route("/health", health),
        Route("/v1/models", models),
        Route("/v1/chat/completions", chat, methods=["POST"]),
    ]
)

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
