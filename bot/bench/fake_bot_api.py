"""A small local Telegram Bot API for ``alfred bench telegram``: the real bot polls it.

Why not the tests' fake (``tests/helpers/fake_telegram.py``): the test package is not
installed with Alfred, and the benchmark needs only what a polling bot calls at start
and while answering text (``getMe``, ``deleteWebhook``, ``getUpdates``, ``sendMessage``,
``setMessageReaction``, and ``sendDocument`` for an export, uploaded as multipart).
A private chat listed in ``not_started`` refuses the bot with 403, as Telegram does for
someone who never opened a chat with it.
It records when each message was sent, per chat; it does not rate-limit (the bot's own
limiter applies Telegram's limits, and that is what the benchmark measures).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

JSON = dict[str, Any]
TOKEN = "123456789:AAFakeTokenForTheBenchOnly_0123456789"


@dataclass(frozen=True)
class Sent:
    """A message the bot sent, and when (``time.perf_counter``)."""

    chat_id: int
    text: str
    at: float


class FakeBotApi:
    """``async with FakeBotApi() as api``: serves on 127.0.0.1, on a free port."""

    def __init__(self, bot_username: str = "alfred") -> None:
        self.username = bot_username
        self.bot = {"id": 7000000099, "is_bot": True, "first_name": "Alfred"}
        self.bot["username"] = bot_username
        self.sent: list[Sent] = []
        self.reactions: list[tuple[int, int]] = []  # (chat_id, message_id)
        self.documents: list[tuple[int, str, bytes]] = []  # (chat_id, filename, content)
        #: Users who never started the bot: a send to their private chat is refused.
        self.not_started: set[int] = set()
        self._pending: list[JSON] = []
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1)
        self._users = itertools.count(5000)
        self._pushed = asyncio.Event()  # wakes a long poll
        self._answered = asyncio.Event()  # wakes wait_for
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeBotApi:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]  # the port the system chose
        self.base_url = f"http://127.0.0.1:{port}/bot"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._pushed.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- what the benchmark sends --------------------------------------------------------

    def user(self, name: str) -> JSON:
        return {"id": next(self._users), "is_bot": False, "first_name": name, "username": name}

    @staticmethod
    def private_chat(user: JSON) -> JSON:
        return {"id": user["id"], "type": "private", "first_name": user["first_name"]}

    @staticmethod
    def group(chat_id: int, title: str) -> JSON:
        return {"id": chat_id, "type": "group", "title": title}

    def push_text(self, chat: JSON, sender: JSON, text: str) -> JSON:
        """Queue a text message (the update is returned); ``@<bot>`` and a leading
        ``/command`` become entities, as Telegram marks them."""
        message: JSON = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": sender,
            "text": text,
        }
        entities = []
        mention = f"@{self.username}"
        if mention in text:  # ASCII text here: UTF-16 offsets are character offsets
            entities.append(
                {"type": "mention", "offset": text.index(mention), "length": len(mention)}
            )
        if text.startswith("/"):
            entities.append({"type": "bot_command", "offset": 0, "length": len(text.split()[0])})
        if entities:
            message["entities"] = entities
        update = {"update_id": next(self._update_ids), "message": message}
        self._pending.append(update)
        self._pushed.set()
        return update

    async def wait_for(self, chat_id: int, count: int, timeout: float) -> list[Sent]:  # noqa: ASYNC109
        """The first ``count`` messages sent to ``chat_id``, waiting at most ``timeout``."""
        deadline = time.perf_counter() + timeout
        while True:
            found = [s for s in self.sent if s.chat_id == chat_id]
            if len(found) >= count:
                return found[:count]
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{len(found)} of {count} answers in chat {chat_id}")
            self._answered.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._answered.wait(), left)

    # -- the Bot API -------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        params: JSON = {}
        if request.content_type == "multipart/form-data":  # an upload (sendDocument)
            for key, value in (await request.post()).items():
                params[key] = (
                    (value.filename, value.file.read())
                    if isinstance(value, web.FileField)
                    else str(value)
                )
        else:
            for key, value in parse_qsl(await request.text()):
                params[key] = value
        method = request.match_info["method"].lower()
        if method.startswith("send") and int(params.get("chat_id") or 0) in self.not_started:
            refusal = "Forbidden: bot can't initiate conversation with a user"
            return web.json_response(
                {"ok": False, "error_code": 403, "description": refusal}, status=403
            )
        if method == "getme":
            return self._ok(self.bot)
        if method in ("deletewebhook", "setwebhook"):
            return self._ok(True)
        if method == "getupdates":
            return self._ok(await self._get_updates(params))
        if method == "sendmessage":
            chat_id = int(params["chat_id"])
            self.sent.append(Sent(chat_id, params.get("text", ""), time.perf_counter()))
            self._answered.set()
            chat = {"id": chat_id, "type": "group" if chat_id < 0 else "private"}
            message = {"message_id": next(self._message_ids), "date": int(time.time())}
            return self._ok({**message, "chat": chat, "from": self.bot, "text": params["text"]})
        if method == "senddocument":
            chat_id = int(params["chat_id"])
            name, content = params.get("document") or ("file", b"")
            self.documents.append((chat_id, str(name), bytes(content)))
            self._answered.set()
            chat = {"id": chat_id, "type": "group" if chat_id < 0 else "private"}
            message = {"message_id": next(self._message_ids), "date": int(time.time())}
            document = {"file_id": f"d{message['message_id']}", "file_unique_id": "u"}
            return self._ok({**message, "chat": chat, "from": self.bot, "document": document})
        if method == "setmessagereaction":  # a quiet acknowledgement in a group
            self.reactions.append((int(params["chat_id"]), int(params["message_id"])))
            return self._ok(True)
        return web.json_response(
            {"ok": False, "error_code": 404, "description": "Not Found"}, status=404
        )

    async def _get_updates(self, params: JSON) -> list[JSON]:
        offset = int(params.get("offset") or 0)
        self._pending = [u for u in self._pending if u["update_id"] >= offset]
        deadline = time.perf_counter() + float(params.get("timeout") or 0)
        while not self._pending and time.perf_counter() < deadline:
            self._pushed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._pushed.wait(), deadline - time.perf_counter())
        return list(self._pending[: int(params.get("limit") or 100)])

    @staticmethod
    def _ok(result: Any) -> web.Response:
        return web.Response(
            text=json.dumps({"ok": True, "result": result}), content_type="application/json"
        )
