"""A tiny local OpenAI-compatible server for benchmarks: deterministic, zero latency
unless told otherwise.

Benchmarks drive Alfred's real OpenAI adapter (the ``openai`` SDK, HTTP, JSON parsing,
usage accounting) against this server, so what they time is Alfred's own overhead, not
a model's. ``latency_s`` delays every chat answer (each connection waits on its own, as
concurrent calls to a real model do) to show what a model's latency does to a rate;
embeddings answer at once. It speaks just enough HTTP/1.1 (Content-Length bodies, keep-alive) for
``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models``.

Chat answers come from a handler ``(system prompt, user text) -> JSON-able answer``;
:func:`formation_handler` answers Alfred's formation tasks the way a sensible model
would (statements become facts, near-duplicates are ``NONE``, one session note per
batch). Embeddings are bag-of-words vectors (each word hashed to a dimension), so texts
that share words are similar, which makes the update step run as it does for real.
Token counts are estimated at four characters per token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import time
from collections.abc import Callable
from typing import Any

ChatHandler = Callable[[str, str], Any]

_LINE = re.compile(
    r"^\[(?P<id>[^\]]+)\] \((?P<role>\w+), weight [\d.]+\) (?P<who>[^:]+): (?P<text>.*)$"
)
_PERSON = re.compile(r"(?P<name>[^,()]+?) \(id (?P<id>[^)]+)\)")
_CANDIDATE = re.compile(r"^\s+existing (?P<id>\S+) \(similarity (?P<sim>[\d.]+)\)", re.M)


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def bag_of_words(text: str, dimensions: int) -> list[float]:
    """A unit vector with one hashed dimension per word (deterministic)."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % dimensions] += 1.0
    norm = sum(x * x for x in vector) ** 0.5
    if norm == 0:
        vector[0] = 1.0
        return vector
    return [x / norm for x in vector]


# --- formation answers ----------------------------------------------------------------


def prompt_lines(user: str) -> list[dict[str, str]]:
    """The journal lines of a formation prompt (``[id] (role, weight w) who: text``)."""
    return [m.groupdict() for raw in user.splitlines() if (m := _LINE.match(raw.strip()))]


def prompt_people(user: str) -> dict[str, str]:
    """Name → id from the prompt's ``People:`` line."""
    for raw in user.splitlines():
        if raw.startswith("People:"):
            return {m["name"].strip(): m["id"] for m in _PERSON.finditer(raw[7:])}
    return {}


def _facts(user: str) -> dict[str, Any]:
    """Up to three facts: user statements of four words or more (no questions)."""
    people = prompt_people(user)
    facts = []
    for line in prompt_lines(user):
        text = line["text"].strip()
        if line["role"] != "user" or len(text.split()) < 4 or text.endswith("?"):
            continue
        who = line["who"].strip()
        circle = text.lower().startswith(("we ", "our "))
        facts.append(
            {
                "content": f"{who}: {' '.join(text.split()[:24])}",
                "category": "context" if circle else "fact",
                "importance": 6,
                "about": "circle" if circle else "speaker",
                "speaker_id": people.get(who),
                "source_message_ids": [line["id"]],
            }
        )
        if len(facts) == 3:
            break
    return {"facts": facts}


def _decisions(user: str) -> dict[str, Any]:
    """NONE for a near-duplicate (similarity ≥ 0.95), ADD otherwise."""
    decisions = []
    for block in re.split(r"^(?=New fact \d+:)", user, flags=re.M):
        head = re.match(r"New fact (\d+):", block)
        if not head:
            continue
        best = max((float(m["sim"]) for m in _CANDIDATE.finditer(block)), default=0.0)
        decisions.append({"new_index": int(head[1]), "action": "NONE" if best >= 0.95 else "ADD"})
    return {"decisions": decisions}


def _reflections(user: str) -> dict[str, Any]:
    lines = [x for x in prompt_lines(user) if x["role"] == "user"]
    if not lines:
        return {"reflections": []}
    topics = sorted({w for x in lines for w in x["text"].split() if w.istitle()})[:6]
    about = ", ".join(topics) or "everyday plans"
    return {"reflections": [{"scope": "session", "content": f"This conversation covers {about}."}]}


def consolidated_answer(user: str) -> dict[str, Any]:
    """The consolidation task's answer: the current note and the new reflections, cut to
    the word limit."""
    limit = re.search(r"Word limit: (\d+)", user)
    current = re.search(r"<current_note>\n(.*?)\n</current_note>", user, re.S)
    new = re.search(r"<new_reflections>\n(.*?)\n</new_reflections>", user, re.S)
    parts = []
    if current and current.group(1).strip() != "(empty)":
        parts.append(current.group(1).strip())
    if new:
        parts += [r.removeprefix("- ").strip() for r in new.group(1).splitlines() if r.strip()]
    words = " ".join(parts).split()[: int(limit.group(1)) if limit else 200]
    return {"content": " ".join(words) or "Nothing to remember yet."}


_FORMATION_RULES: dict[str, Callable[[str], dict[str, Any]]] = {
    '{"facts"': _facts,
    '{"decisions"': _decisions,
    '{"reflections"': _reflections,
    '{"content"': consolidated_answer,
}


def formation_handler(system: str, user: str) -> Any:
    """Answers Alfred's JSON tasks by the marker in their system prompt; ``{}`` otherwise."""
    for marker, rule in _FORMATION_RULES.items():
        if marker in system:
            return rule(user)
    return {}


# --- the server -------------------------------------------------------------------------


class FakeLLMServer:
    """``async with FakeLLMServer() as server:`` then point Alfred at ``server.base_url``."""

    def __init__(
        self,
        handler: ChatHandler = formation_handler,
        *,
        embedding_dimensions: int = 1536,
        latency_s: float = 0.0,
    ) -> None:
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        self.handler = handler
        self.embedding_dimensions = embedding_dimensions
        self.latency_s = latency_s
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> FakeLLMServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    break
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)
                }
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                status, body = self._answer(method, path, json.loads(raw) if raw else {})
                if self.latency_s and path.split("?", 1)[0].endswith("/chat/completions"):
                    await asyncio.sleep(self.latency_s)  # the "model" thinking
                payload = json.dumps(body).encode()
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n"
                    "connection: keep-alive\r\n\r\n".encode("latin-1")
                    + payload
                )
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.requests += 1
        endpoint = path.split("?", 1)[0].removeprefix("/v1/").strip("/")
        if endpoint == "chat/completions" and method == "POST":
            return 200, self._chat(body)
        if endpoint == "embeddings" and method == "POST":
            return 200, self._embeddings(body)
        if endpoint == "models":
            return 200, {"object": "list", "data": [{"id": "fake", "object": "model"}]}
        return 404, {"error": {"message": f"no route {path}", "type": "not_found_error"}}

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        system = "\n".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        user = next(
            (str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        answer = self.handler(system, user)
        content = answer if isinstance(answer, str) else json.dumps(answer)
        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        completion = estimate_tokens(content)
        return {
            "id": f"chatcmpl-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        dims = int(body.get("dimensions") or self.embedding_dimensions)
        tokens = sum(estimate_tokens(t) for t in texts)
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": bag_of_words(t, dims)}
                for i, t in enumerate(texts)
            ],
            "model": body.get("model", "fake-embedding"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
