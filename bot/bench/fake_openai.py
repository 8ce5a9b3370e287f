"""A local, scriptable OpenAI-compatible HTTP server, for the tests and ``alfred bench``.

Tests and benchmarks drive the real ``openai`` client (its HTTP stack, retries, parsing,
usage accounting) against this server on 127.0.0.1, so what they check is what
production sends and receives, and what benchmarks time is Alfred's own overhead, not a
model's. The server speaks the wire format of ``POST /v1/chat/completions``
(non-streaming), ``POST /v1/embeddings`` and ``GET /v1/models``, and records every
request (``record=False`` for a long benchmark). ``latency_s`` delays every chat answer
(each connection waits on its own, as concurrent calls to a real model do).

It is written on plain :mod:`asyncio` streams (a small HTTP/1.1 subset: Content-Length
or chunked request bodies, keep-alive) so it needs no web framework.

Scripting, per endpoint (``"chat/completions"``, ``"embeddings"``, ``"models"``):

* ``fake.enqueue(*answers)`` queues canned answers, used first-in first-out;
* when the queue is empty, the endpoint's handler answers
  (``fake.set_handler(fn)``; ``fn(request) -> answer``, sync or async).

An *answer* is a :class:`Reply` (status, body, headers, delay), a ``dict`` (a JSON body
sent with status 200), a ``str`` (for chat: the assistant's content, wrapped in a full
completion), or an ``int`` (a bare status code with an OpenAI-style error body).
Helpers build the usual ones: :func:`completion`, :func:`tool_call`,
:func:`rate_limited`, :func:`server_error`, :func:`bad_request`, :func:`slow`,
:func:`malformed_body`.

By default chat answers come from :func:`json_task_handler` with :data:`DEFAULT_RULES`:
zero latency, a small valid JSON object derived from the request (``{"facts": [...]}``
for the extraction prompt, ``ADD`` decisions, no reflections, ...), so that a whole
formation pipeline can run against the fake; :func:`text_task_handler` answers from a
``(system prompt, user text)`` function with usage estimated from the texts, as the
benchmarks want. Embeddings are deterministic (see :mod:`bot.bench.fake_answers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from bot.bench.fake_answers import SIMPLE_RULES, estimate_tokens, unit_vector

CHAT = "chat/completions"
EMBEDDINGS = "embeddings"
MODELS = "models"

Handler = Callable[["RecordedRequest"], Any]
"""``request -> answer`` (or an awaitable of one); see the module docstring for answers."""

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}


@dataclass
class Reply:
    """One scripted HTTP answer.

    ``body`` may be a JSON-able object (sent as ``application/json``), ``str`` or
    ``bytes`` (sent verbatim, still labelled JSON unless ``headers`` say otherwise, which
    is how a malformed body is injected). ``delay`` sleeps before answering: longer than
    the client's timeout, it makes the client time out.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class RecordedRequest:
    """A request the fake received, for assertions."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    json: Any
    at: float

    @property
    def endpoint(self) -> str:
        """The path after ``/v1/`` (``"chat/completions"``, ``"embeddings"``, ...)."""
        return self.path.split("?", 1)[0].removeprefix("/v1/").strip("/")

    @property
    def model(self) -> str | None:
        return self.json.get("model") if isinstance(self.json, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.json, dict):
            return list(self.json.get("messages") or [])
        return []

    @property
    def system_prompt(self) -> str:
        """All system messages' text, joined (empty when there is none)."""
        return "\n".join(
            _text(m.get("content")) for m in self.messages if m.get("role") == "system"
        )

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _text(message.get("content"))
        return ""

    @property
    def tools(self) -> list[dict[str, Any]]:
        if isinstance(self.json, dict):
            return list(self.json.get("tools") or [])
        return []


def _text(content: Any) -> str:
    """Message content as text (the API also allows a list of content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


# ---------------------------------------------------------------------------------------
# Building answers


_ids = itertools.count(1)


def tool_call(
    name: str, arguments: Mapping[str, Any] | str, id: str | None = None
) -> dict[str, Any]:
    """A ``tool_calls`` entry; ``arguments`` as a dict, or a raw (possibly broken) string."""
    args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return {
        "id": id or f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    model: str = "fake-model",
    prompt_tokens: int = 10,
    completion_tokens: int | None = None,
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A full ``chat.completion`` body, as the real API sends it."""
    if completion_tokens is None:
        completion_tokens = max(1, len((content or "").split()))
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-fake{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error body."""
    return {
        "error": {
            "message": message or f"fake error {status}",
            "type": _ERROR_TYPES.get(status, "server_error"),
            "param": None,
            "code": None,
        }
    }


def rate_limited(retry_after: float | None = 0.01, *, ms: bool = False) -> Reply:
    """A 429, with ``Retry-After`` (seconds) or ``retry-after-ms`` when given."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        if ms:
            headers["retry-after-ms"] = str(int(retry_after * 1000))
        else:
            headers["retry-after"] = str(retry_after)
    return Reply(429, error_body(429, "Rate limit reached"), headers)


def server_error(status: int = 500, message: str | None = None) -> Reply:
    return Reply(status, error_body(status, message))


def bad_request(message: str = "invalid request") -> Reply:
    return Reply(400, error_body(400, message))


def slow(seconds: float, then: Any = None) -> Reply:
    """An answer sent only after ``seconds`` (to exceed a client timeout)."""
    reply = _to_reply(then if then is not None else completion("{}"), CHAT)
    reply.delay = seconds
    return reply


def malformed_body(body: bytes = b'{"id": "chatcmpl-x", "choices": [{') -> Reply:
    """A 200 whose body is not JSON at all, although labelled so."""
    return Reply(200, body)


def _to_reply(answer: Any, endpoint: str) -> Reply:
    if isinstance(answer, Reply):
        return answer
    if isinstance(answer, bool):
        raise TypeError("a bool is not an answer")
    if isinstance(answer, int):
        return Reply(answer, error_body(answer))
    if isinstance(answer, str) and endpoint == CHAT:
        return Reply(200, completion(answer))
    if isinstance(answer, dict | list | str | bytes):
        return Reply(200, answer)
    raise TypeError(f"cannot answer with {type(answer).__name__}")


# ---------------------------------------------------------------------------------------
# Default handlers


def embeddings_handler(
    dimensions: int, vector: Callable[[str, int], list[float]] = unit_vector
) -> Handler:
    """``POST /v1/embeddings`` with ``vector(text, dimensions)`` (hash-seeded unit vectors
    unless told otherwise)."""

    def handle(request: RecordedRequest) -> dict[str, Any]:
        body = request.json if isinstance(request.json, dict) else {}
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        dims = int(body.get("dimensions") or dimensions)
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": vector(t, dims)}
                for i, t in enumerate(texts)
            ],
            "model": body.get("model", "fake-embedding"),
            "usage": {
                "prompt_tokens": sum(len(t.split()) for t in texts),
                "total_tokens": sum(len(t.split()) for t in texts),
            },
        }

    return handle


def models_handler(names: list[str]) -> Handler:
    def handle(request: RecordedRequest) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": n, "object": "model", "created": 0, "owned_by": "fake"} for n in names],
        }

    return handle


def _on_prompt(rule: Callable[[str], Any]) -> Callable[[RecordedRequest], Any]:
    return lambda request: rule(request.last_user_text)


#: Default answers for JSON tasks, keyed by a marker found in the system prompt.
DEFAULT_RULES: dict[str, Callable[[RecordedRequest], Any]] = {
    marker: _on_prompt(rule) for marker, rule in SIMPLE_RULES.items()
}

_FIRST_KEY = re.compile(r'\{\s*"(?P<key>\w+)"\s*:?\s*\[')


def json_task_handler(
    rules: Mapping[str, Callable[[RecordedRequest], Any]] | None = None,
    *,
    chat_text: str = "Noted.",
) -> Handler:
    """A zero-latency chat handler: the first rule whose marker is in the system prompt
    answers (its result sent as the content, JSON-encoded unless it is a ``str``).

    Without a matching rule, a request with ``tools`` (the chat path) gets ``chat_text``,
    and a JSON task gets ``{"<key>": []}`` for the first ``{"key": [`` in its system
    prompt, else ``{}``.
    """
    table = dict(DEFAULT_RULES if rules is None else rules)

    def handle(request: RecordedRequest) -> Any:
        system = request.system_prompt
        for marker, rule in table.items():
            if marker in system:
                result = rule(request)
                if isinstance(result, Reply | int):
                    return result
                content = result if isinstance(result, str) else json.dumps(result)
                return completion(content, model=request.model or "fake-model")
        if request.tools:
            return completion(chat_text, model=request.model or "fake-model")
        key = _FIRST_KEY.search(system)
        content = json.dumps({key["key"]: []}) if key else "{}"
        return completion(content, model=request.model or "fake-model")

    return handle


def text_task_handler(answer: Callable[[str, str], Any]) -> Handler:
    """Chat answers from ``answer(system prompt, last user text)`` (JSON-encoded unless a
    ``str``), with token usage estimated from the texts (four characters a token)."""

    def handle(request: RecordedRequest) -> dict[str, Any]:
        result = answer(request.system_prompt, request.last_user_text)
        content = result if isinstance(result, str) else json.dumps(result)
        return completion(
            content,
            model=request.model or "fake",
            prompt_tokens=sum(estimate_tokens(_text(m.get("content"))) for m in request.messages),
            completion_tokens=estimate_tokens(content),
        )

    return handle


# ---------------------------------------------------------------------------------------
# The server


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1 and a random free port.

    Use as ``async with FakeOpenAI() as fake:``; point a client at ``fake.base_url``.
    """

    def __init__(
        self,
        *,
        chat_handler: Handler | None = None,
        embedding_dimensions: int = 1536,
        models: list[str] | None = None,
        api_key: str | None = None,
        vector: Callable[[str, int], list[float]] = unit_vector,
        latency_s: float = 0.0,
        record: bool = True,
    ) -> None:
        """``api_key``, when set, is required as ``Authorization: Bearer`` (else 401);
        ``vector(text, dimensions)`` makes the embeddings; ``latency_s`` delays every chat
        answer; ``record=False`` keeps no requests (a benchmark makes many)."""
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        self.embedding_dimensions = embedding_dimensions
        self.api_key = api_key
        self.latency_s = latency_s
        self.record = record
        self.requests: list[RecordedRequest] = []
        self.errors: list[Exception] = []
        self._queues: dict[str, deque[Any]] = {}
        self._defaults: dict[str, Handler] = {
            CHAT: chat_handler or json_task_handler(),
            EMBEDDINGS: embeddings_handler(embedding_dimensions, vector),
            MODELS: models_handler(models or ["gpt-4o-mini", "gpt-4o", "text-embedding-3-small"]),
        }
        self._handlers = dict(self._defaults)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> FakeOpenAI:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> FakeOpenAI:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop; then, if the block itself succeeded, surface any handler exception."""
        await self.stop()
        if exc_type is None:
            self.raise_errors()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, what ``AsyncOpenAI(base_url=...)`` wants."""
        return f"http://127.0.0.1:{self.port}/v1"

    def settings_overrides(self) -> dict[str, Any]:
        """Settings fields that point Alfred's LLM and embeddings at this fake."""
        return {"openai_api_key": self.api_key or "test-key", "openai_base_url": self.base_url}

    # -- scripting ------------------------------------------------------------------------

    def enqueue(self, *answers: Any, endpoint: str = CHAT) -> None:
        """Queue canned answers for ``endpoint``; they are used before its handler."""
        self._queues.setdefault(endpoint, deque()).extend(answers)

    def set_handler(self, handler: Handler | None, endpoint: str = CHAT) -> None:
        """Answer ``endpoint`` with ``handler`` (``None`` restores the default)."""
        self._handlers[endpoint] = handler or self._defaults[endpoint]

    def pending(self, endpoint: str = CHAT) -> int:
        """Queued answers not used yet."""
        return len(self._queues.get(endpoint, ()))

    def reset(self) -> None:
        """Forget requests, handler errors, queues and custom handlers."""
        self.requests.clear()
        self.errors.clear()
        self._queues.clear()
        self._handlers = dict(self._defaults)

    def raise_errors(self) -> None:
        """Re-raise the first exception a handler raised (they are answered as 500s)."""
        if self.errors:
            raise self.errors[0]

    def requests_to(self, endpoint: str = CHAT) -> list[RecordedRequest]:
        return [r for r in self.requests if r.endpoint == endpoint]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.requests_to(CHAT)

    # -- HTTP -----------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()  # asyncio.start_server runs each client in a task
        if task is not None:
            self._connections.add(task)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    break
                reply = await self._answer(request)
                delay = reply.delay + (self.latency_s if request.endpoint == CHAT else 0.0)
                if delay:
                    await asyncio.sleep(delay)  # the "model" thinking
                await self._write(writer, reply)
                if request.headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                chunks.append(chunk[:-2])
            raw = b"".join(chunks)
        else:
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(method, target, headers, raw, body, time.monotonic())
        if self.record:
            self.requests.append(request)
        return request

    async def _answer(self, request: RecordedRequest) -> Reply:
        endpoint = request.endpoint
        if endpoint not in self._defaults:
            return Reply(404, error_body(404, f"no route {request.path}"))
        wanted = "GET" if endpoint == MODELS else "POST"
        if request.method != wanted:
            return Reply(405, error_body(405, f"{request.method} not allowed"))
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return Reply(401, error_body(401, "Incorrect API key provided"))
        queue = self._queues.get(endpoint)
        try:
            answer = queue.popleft() if queue else self._handlers[endpoint](request)
            if inspect.isawaitable(answer):
                answer = await answer
            if callable(answer) and not isinstance(answer, Reply):
                answer = answer(request)  # a queued per-request handler
                if inspect.isawaitable(answer):
                    answer = await answer
            return _to_reply(answer, endpoint)
        except Exception as exc:
            # A bug in a test's handler: answer 500 (so the client does not hang) and keep
            # the exception for the test to re-raise with ``fake.raise_errors()``.
            self.errors.append(exc)
            return Reply(500, error_body(500, f"fake handler failed: {exc!r}"))

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, reply: Reply) -> None:
        body = reply.body
        if isinstance(body, bytes):
            payload = body
        elif isinstance(body, str):
            payload = body.encode("utf-8")
        elif body is None:
            payload = b""
        else:
            payload = json.dumps(body).encode("utf-8")
        headers = {
            "content-type": "application/json",
            "x-request-id": f"req_fake{next(_ids)}",
            **{k.lower(): v for k, v in reply.headers.items()},
            "content-length": str(len(payload)),
            "connection": "keep-alive",
        }
        reason = _REASONS.get(reply.status, "Unknown")
        head = f"HTTP/1.1 {reply.status} {reason}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()
        )
        writer.write(head.encode("latin-1") + b"\r\n" + payload)
        await writer.drain()
