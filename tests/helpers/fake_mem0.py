"""Local HTTP fakes of the mem0 Platform API and of an OpenAI-compatible embeddings API.

Tests drive the real ``mem0.AsyncMemoryClient`` (its httpx stack, headers, error
mapping) against :class:`FakeMem0` on 127.0.0.1, so what they check is what production
sends. The fake speaks the endpoints mem0ai 2.2.1's client calls for Alfred's use:

========================================  =============================================
``GET  /v1/ping/``                        API-key check the client makes in ``__init__``
``POST /v3/memories/add/``                add; answers ``{"status": "PENDING", "event_id"}``
``GET  /v1/event/{event_id}/``            the add's event (PENDING → SUCCEEDED, results)
``POST /v3/memories/search/``             search; entity ids only inside ``filters``
``POST /v3/memories/``                    list (``get_all``), ``page``/``page_size`` params
``GET  /v1/memories/{id}/``               one memory
``DELETE /v1/memories/{id}/``             delete one memory (404 when unknown)
========================================  =============================================

Like the service, writes are processed in the background: an added memory becomes
searchable, and its event ``SUCCEEDED``, only after ``processing_s``. Search filters by
entity ids exactly (``user_id`` etc. with ``AND``/``OR``/``NOT``, ``in``, ``ne``, ``*``),
rejects top-level entity ids and filters without one (HTTP 400), applies ``threshold``
(default 0.1, as v3) and ``top_k`` (default 10), and scores by word overlap.

Fault injection: :meth:`FakeMem0.go_down` closes the listening socket (connection
refused) until :meth:`FakeMem0.come_back`; ``fail_status`` answers every request with
that HTTP status; ``delay_s`` sleeps before answering; ``leak_across_users`` makes
search ignore the entity filter (a buggy or poisoned service);
``event_results_with_ids=False`` answers events without memory ids.

The server runs on its own event loop in a thread: the mem0 client validates its key
with a *blocking* ``requests.get`` in its constructor, which would deadlock against a
server sharing the caller's loop (and a real service is not in our loop either).

:class:`FakeEmbeddings` serves ``POST /v1/embeddings`` (bag-of-words hashed unit
vectors, so texts sharing words are similar) for mem0's OSS mode.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

import numpy as np
from aiohttp import web

ENTITY_FIELDS = ("user_id", "agent_id", "app_id", "run_id")
WORD = re.compile(r"\w+")
#: Where the middleware leaves the parsed JSON body for the handlers.
BODY = web.RequestKey("body", Any)


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def overlap_score(query: str, memory: str) -> float:
    """Cosine similarity of the two word sets: 1.0 for the same words, 0.0 for none shared."""
    q, m = words(query), words(memory)
    if not q or not m:
        return 0.0
    return len(q & m) / math.sqrt(len(q) * len(m))


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


@dataclass
class RecordedRequest:
    """One request the fake received (for assertions on what the client sent)."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]


class _ThreadedServer:
    """An aiohttp application served on 127.0.0.1 from a private loop in a thread."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self.port = 0
        self.requests: list[RecordedRequest] = []
        self.lock = threading.RLock()

    def build_app(self) -> web.Application:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        assert self._loop is not None
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout=10)

    def start(self) -> Self:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=serve, name=type(self).__name__, daemon=True)
        self._thread.start()
        ready.wait()
        self._run(self._start())
        return self

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.build_app(), access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await self._site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _shutdown(self) -> None:
        # Cleaning the runner up also closes kept-alive connections, so a client that
        # had one open sees the outage too (stopping only the site would not).
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._site = None

    def go_down(self) -> None:
        """Stop serving: clients get "connection refused" until :meth:`come_back`."""
        self._run(self._shutdown())

    def come_back(self) -> None:
        """Serve again on the same port (the state is kept)."""
        if self._runner is None:
            self._run(self._start())

    def stop(self) -> None:
        if self._loop is None:
            return
        self._run(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(timeout=10)
        self._loop = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def _record(self, request: web.Request) -> Any:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = await request.json() if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
        with self.lock:
            self.requests.append(
                RecordedRequest(
                    request.method,
                    request.path,
                    dict(request.query),
                    body,
                    dict(request.headers),
                )
            )
        return body


def _error(status: int, detail: str) -> web.Response:
    return web.json_response({"detail": detail}, status=status)


@dataclass
class StoredMemory:
    """A memory as the fake keeps it."""

    id: str
    memory: str
    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    #: When background processing finishes (searchable and listed from then on).
    ready_at: float = 0.0
    event_id: str | None = None

    def as_json(self, score: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "memory": self.memory,
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "app_id": self.app_id,
            "run_id": self.run_id,
            "metadata": dict(self.metadata),
            "categories": [],
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.created_at),
        }
        if score is not None:
            out["score"] = round(score, 6)
        return out


def _has_entity(filters: Any) -> bool:
    if not isinstance(filters, dict):
        return False
    for key, value in filters.items():
        if key in ENTITY_FIELDS:
            return True
        if (
            key in ("AND", "OR", "NOT")
            and isinstance(value, list)
            and any(_has_entity(v) for v in value)
        ):
            return True
    return False


def _match_value(actual: Any, condition: Any) -> bool:
    if condition == "*":
        return actual is not None
    if isinstance(condition, dict):
        ok = True
        for op, expected in condition.items():
            if op == "in":
                ok &= actual in expected
            elif op == "ne":
                ok &= actual != expected
            elif op == "eq":
                ok &= actual == expected
            elif op == "icontains":
                ok &= isinstance(actual, str) and str(expected).lower() in actual.lower()
            else:
                raise ValueError(f"unsupported operator {op!r}")
        return ok
    return bool(actual == condition)


def matches(memory: StoredMemory, filters: dict[str, Any]) -> bool:
    """Whether ``memory`` satisfies a v2/v3 filter document (the subset Alfred uses)."""
    for key, value in filters.items():
        if key == "AND":
            if not all(matches(memory, f) for f in value):
                return False
        elif key == "OR":
            if not any(matches(memory, f) for f in value):
                return False
        elif key == "NOT":
            if any(matches(memory, f) for f in value):
                return False
        elif key in ENTITY_FIELDS:
            if not _match_value(getattr(memory, key), value):
                return False
        elif key == "metadata":
            if not all(_match_value(memory.metadata.get(k), v) for k, v in value.items()):
                return False
        else:
            raise ValueError(f"unsupported filter field {key!r}")
    return True


class FakeMem0(_ThreadedServer):
    """A scriptable stand-in for ``https://api.mem0.ai``; see the module docstring."""

    def __init__(self, api_key: str = "m0-test-key", *, processing_s: float = 0.0) -> None:
        super().__init__()
        self.api_key = api_key
        self.processing_s = processing_s
        self.memories: dict[str, StoredMemory] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.fail_status: int | None = None
        self.delay_s = 0.0
        self.leak_across_users = False
        self.event_results_with_ids = True

    # --- direct access for tests -----------------------------------------------------

    def insert(
        self,
        memory: str,
        *,
        user_id: str,
        memory_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Put a memory straight into the store (bypassing the API), ready at once."""
        mid = memory_id or str(uuid.uuid4())
        with self.lock:
            self.memories[mid] = StoredMemory(
                mid, memory, user_id=user_id, metadata=dict(metadata or {})
            )
        return mid

    def calls(self, method: str, path_prefix: str) -> list[RecordedRequest]:
        with self.lock:
            return [
                r for r in self.requests if r.method == method and r.path.startswith(path_prefix)
            ]

    def reset_faults(self) -> None:
        self.fail_status = None
        self.delay_s = 0.0
        self.leak_across_users = False
        self.come_back()

    # --- the HTTP application --------------------------------------------------------

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/v1/ping/", self._ping)
        app.router.add_post("/v3/memories/add/", self._add)
        app.router.add_get("/v1/event/{event_id}/", self._event)
        app.router.add_post("/v3/memories/search/", self._search)
        app.router.add_post("/v3/memories/", self._list)
        app.router.add_get("/v1/memories/{memory_id}/", self._get)
        app.router.add_delete("/v1/memories/{memory_id}/", self._delete)
        return app

    @web.middleware
    async def _middleware(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        request[BODY] = await self._record(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_status is not None:
            return _error(self.fail_status, "injected failure")
        if request.headers.get("Authorization") != f"Token {self.api_key}":
            return _error(401, "Invalid API key")
        try:
            return await handler(request)
        except ValueError as exc:
            return _error(400, str(exc))

    async def _ping(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "org_id": "org-fake", "project_id": "proj-fake"})

    async def _add(self, request: web.Request) -> web.Response:
        body = request[BODY]
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "messages must be a list")
        scope = {k: body.get(k) for k in ENTITY_FIELDS}
        nested = body.get("filters") or {}
        for k in ENTITY_FIELDS:
            scope[k] = scope[k] or nested.get(k)
        if not any(scope.values()):
            return _error(400, "At least one of user_id, agent_id, app_id or run_id is required")
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            return _error(400, "metadata must be an object")
        event_id = str(uuid.uuid4())
        now = time.time()
        created = []
        with self.lock:
            for message in body["messages"]:
                if not isinstance(message, dict) or message.get("role") == "system":
                    continue
                content = str(message.get("content") or "").strip()
                if not content:
                    continue
                mem = StoredMemory(
                    str(uuid.uuid4()),
                    content,
                    metadata=dict(metadata),
                    created_at=now,
                    ready_at=now + self.processing_s,
                    event_id=event_id,
                    **scope,
                )
                self.memories[mem.id] = mem
                created.append(mem.id)
            self.events[event_id] = {
                "created_at": now,
                "ready_at": now + self.processing_s,
                "memory_ids": created,
                "payload": body,
            }
        return web.json_response(
            {
                "message": "Memory processing has been queued for background execution",
                "status": "PENDING",
                "event_id": event_id,
            }
        )

    async def _event(self, request: web.Request) -> web.Response:
        event_id = request.match_info["event_id"]
        with self.lock:
            event = self.events.get(event_id)
            if event is None:
                return _error(404, "Event not found")
            done = time.time() >= event["ready_at"]
            results = []
            if done:
                for mid in event["memory_ids"]:
                    mem = self.memories.get(mid)
                    if mem is None:
                        continue
                    item: dict[str, Any] = {"event": "ADD", "data": {"memory": mem.memory}}
                    if self.event_results_with_ids:
                        item["id"] = mid
                    results.append(item)
        return web.json_response(
            {
                "id": event_id,
                "event_type": "ADD",
                "status": "SUCCEEDED" if done else "PENDING",
                "payload": {},
                "metadata": {},
                "results": results,
                "created_at": _iso(event["created_at"]),
                "updated_at": _iso(time.time()),
                "started_at": _iso(event["created_at"]),
                "completed_at": _iso(event["ready_at"]) if done else None,
                "latency": round((event["ready_at"] - event["created_at"]) * 1000, 3),
            }
        )

    def _visible(self, filters: dict[str, Any]) -> list[StoredMemory]:
        now = time.time()
        with self.lock:
            ready = [m for m in self.memories.values() if m.ready_at <= now]
        if self.leak_across_users:
            return ready
        return [m for m in ready if matches(m, filters)]

    async def _search(self, request: web.Request) -> web.Response:
        body = request[BODY]
        if not isinstance(body, dict):
            return _error(400, "expected a JSON object")
        top = [k for k in ENTITY_FIELDS if k in body]
        if top:
            return _error(400, f"Entity ids must be passed inside filters, not {top}")
        query = str(body.get("query") or "").strip()
        if not query:
            return _error(400, "query is required")
        filters: dict[str, Any] = body.get("filters") or {}
        if not _has_entity(filters):
            return _error(400, "filters must contain at least one entity id")
        top_k = int(body.get("top_k") or 10)
        threshold = body.get("threshold")
        threshold = 0.1 if threshold is None else float(threshold)
        scored = [(overlap_score(query, m.memory), m) for m in self._visible(filters)]
        scored = [(s, m) for s, m in scored if s >= threshold and s > 0]
        scored.sort(key=lambda sm: (-sm[0], sm[1].id))
        return web.json_response({"results": [m.as_json(s) for s, m in scored[:top_k]]})

    async def _list(self, request: web.Request) -> web.Response:
        body = request[BODY]
        filters: dict[str, Any] = (body.get("filters") if isinstance(body, dict) else None) or {}
        if not _has_entity(filters):
            return _error(400, "filters must contain at least one entity id")
        page = int(request.query.get("page", "1"))
        size = int(request.query.get("page_size", "100"))
        found = sorted(self._visible(filters), key=lambda m: (m.created_at, m.id))
        chunk = found[(page - 1) * size : page * size]
        more = page * size < len(found)
        return web.json_response(
            {
                "count": len(found),
                "next": f"{self.base_url}/v3/memories/?page={page + 1}&page_size={size}"
                if more
                else None,
                "previous": None if page == 1 else "previous",
                "results": [m.as_json() for m in chunk],
            }
        )

    async def _get(self, request: web.Request) -> web.Response:
        with self.lock:
            mem = self.memories.get(request.match_info["memory_id"])
        if mem is None:
            return _error(404, "Memory not found")
        return web.json_response(mem.as_json())

    async def _delete(self, request: web.Request) -> web.Response:
        with self.lock:
            mem = self.memories.pop(request.match_info["memory_id"], None)
        if mem is None:
            return _error(404, "Memory not found")
        return web.json_response({"message": "Memory deleted successfully!"})


class FakeEmbeddings(_ThreadedServer):
    """``POST /v1/embeddings`` of an OpenAI-compatible server, with hashed bag-of-words
    unit vectors: texts sharing words are similar, texts sharing none are orthogonal."""

    def __init__(self, dimensions: int = 64) -> None:
        super().__init__()
        self.dimensions = dimensions
        self.fail_status: int | None = None
        self.delay_s = 0.0

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def vector(self, text: str) -> list[float]:
        out = np.zeros(self.dimensions, dtype=np.float64)
        for word in WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            out[int.from_bytes(digest, "little") % self.dimensions] += 1.0
        norm = float(np.linalg.norm(out))
        if norm > 0:
            out /= norm
        else:
            out[0] = 1.0
        return [float(x) for x in out]

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        return app

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_status is not None:
            return web.json_response(
                {"error": {"message": "injected failure"}}, status=self.fail_status
            )
        inputs = body.get("input") if isinstance(body, dict) else None
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return web.json_response({"error": {"message": "input must be text"}}, status=400)
        data = [
            {"object": "embedding", "index": i, "embedding": self.vector(t)}
            for i, t in enumerate(inputs)
        ]
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake"),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        )
