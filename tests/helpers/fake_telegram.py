"""A local, scriptable Telegram Bot API server, so tests drive the REAL python-telegram-bot.

Why a server and not a mocked ``Bot``: PTB's request layer (httpx, form encoding, error
mapping, retries, the rate limiter, the Updater's long polling and its tornado webhook
server) is where integration bugs live. Mocking ``Bot.send_message`` skips all of it.
Here the bot is built exactly as in production, only with
``Application.builder().base_url(tg.base_url)``, and
everything it does goes over HTTP on 127.0.0.1 to this aiohttp server.

Wire format (what PTB 22 actually sends, see ``telegram/request/_httpxrequest.py``):
every call is ``POST {base_url}{token}/{method}`` with an
``application/x-www-form-urlencoded`` body. Each form value is a *string*: ``str``
parameters go raw, everything else (ints, bools, lists, objects such as
``reply_parameters``) is ``json.dumps``-ed. So
``chat_id=42&text=hi&reply_parameters={"message_id": 7}``; ``None`` parameters are
left out, and parameterless calls (``getMe``, ``deleteWebhook``) are POSTs with an
empty body and no Content-Type. The server decodes values back with
:func:`_coerce_param` (query strings work too). Answers are ``{"ok": true, "result": ...}`` or
``{"ok": false, "error_code": N, "description": "...", "parameters": {...}}`` with the
HTTP status equal to ``error_code`` (PTB maps the *status*: 400 BadRequest, 401/404
InvalidToken, 403 Forbidden, 409 Conflict, ``parameters.retry_after`` RetryAfter,
``parameters.migrate_to_chat_id`` ChatMigrated, anything else NetworkError).

Usage::

    async with FakeTelegram(bot_username="alfred") as tg:
        ann = tg.user("Ann")
        family = tg.group_chat(title="Family", members=[ann])
        app = Application.builder().token(tg.token).base_url(tg.base_url).build()
        ...
        tg.push_update(tg.text_message(family, ann, "hey @alfred, milk is out"))
        sent = await tg.wait_for_messages(1)
        assert sent[0]["chat_id"] == family["id"]

Updates: builders (:meth:`FakeTelegram.text_message`, :meth:`~FakeTelegram.photo_message`,
:meth:`~FakeTelegram.my_chat_member`, ...) return update dicts *without* ``update_id``;
:meth:`FakeTelegram.push_update` numbers and queues them. Queued updates are served by
``getUpdates`` (long polling, ``offset`` confirms, ``allowed_updates`` filters with the
real default of excluding ``chat_member``/``message_reaction*``) or, once ``setWebhook``
was called, POSTed to the webhook URL with ``Content-Type: application/json`` and the
``X-Telegram-Bot-Api-Secret-Token`` header; an update leaves the queue only on a 2xx.
While a webhook is set, ``getUpdates`` answers 409 Conflict, like the real API.

Realism the fake enforces (each a bug class a mock would hide): text over 4096
characters is 400 "message is too long"; replying to a message the chat never had is
400 "message to be replied not found"; unknown chats are 400 "chat not found"; a group
upgraded to a supergroup answers with ``migrate_to_chat_id``; a bot that was
kicked/blocked gets 403; entity offsets are UTF-16 code units.

What it serves is what Alfred calls (``getMe``, ``getUpdates``, ``deleteWebhook``,
``setWebhook``, ``sendMessage`` (with an inline keyboard: ``reply_markup``),
``sendDocument`` (a multipart upload), ``setMessageReaction``, ``answerCallbackQuery``,
``editMessageText`` (only the bot's own messages; "message is not modified" when nothing
changes));
any other method is 404, like an unknown one on the real API. A user the fake knows (made
by :meth:`FakeTelegram.user`, e.g. a group member) whose private chat was never opened
(:meth:`FakeTelegram.private_chat`) cannot be written to: 403 "bot can't initiate
conversation with a user", as on Telegram. Alfred sends plain text only: a ``parse_mode``
is refused with 400, and so are explicit ``entities`` other than a ``text_mention`` of a
user the fake knows, inside the text (UTF-16 offsets), which is how a reminder names a
group member without a username; so a change that starts sending formatted text fails
loudly here instead of passing unchecked. Sent explicit entities are kept on the message
(``message["entities"]``, beside the ones Telegram detects itself).

Deliberate simplifications: webhook URLs may be plain ``http://`` on any port (the
real API wants HTTPS on 443/80/88/8443); webhook updates go one at a time, in order,
whatever ``max_connections`` says; privacy mode is not simulated (every pushed group
message is delivered); media in updates have file ids but no downloadable content.

PTB note for tests: PTB 22 warns (``PTBDeprecationWarning``) whenever it builds a
``RetryAfter`` or reads a time period such as ``Voice.duration`` unless the environment
has ``PTB_TIMEDELTA=1``; under ``filterwarnings = error`` that warning is raised from
inside PTB's request layer, so set the variable in tests that hit those paths.

Fault injection: :meth:`FakeTelegram.fail_next` (any code/description/parameters),
:meth:`~FakeTelegram.rate_limit_next` (429 + ``retry_after``).

Records: :attr:`FakeTelegram.calls` (every request, including failed ones),
:attr:`~FakeTelegram.sent_messages`, :attr:`~FakeTelegram.sent_documents`,
:attr:`~FakeTelegram.webhook_deliveries`; wait on them with
:meth:`~FakeTelegram.wait_for_messages`, :meth:`~FakeTelegram.wait_for_calls`,
:meth:`~FakeTelegram.wait_until` (deadlines, never fixed sleeps).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import re
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp import web

JSON = dict[str, Any]

MAX_TEXT_LENGTH = 4096
"""Bot API limit for ``sendMessage`` text."""

DEFAULT_TOKEN = "123456789:AAFakeTokenForTestsOnly_0123456789abc"

#: A few of the emoji Telegram accepts as a bot's reaction (any other is REACTION_INVALID).
_BOT_REACTIONS = frozenset({"\N{THUMBS UP SIGN}", "\N{OK HAND SIGN}", "\N{WRITING HAND}"})
# Update kinds the real API leaves out unless asked for explicitly in allowed_updates.
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})

# Form parameters that are always strings even when they look like JSON ("123", "true").
_STRING_PARAMS = frozenset({"text", "caption", "parse_mode", "url", "secret_token"})

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    420: "Flood",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class TelegramApiError(Exception):
    """An error answer of the Bot API: raised inside method handlers, sent as JSON."""

    def __init__(
        self, error_code: int, description: str, parameters: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(f"{error_code}: {description}")
        self.error_code = error_code
        self.description = description
        self.parameters = dict(parameters) if parameters else None

    def body(self) -> JSON:
        """The JSON body the real API sends for this error."""
        out: JSON = {"ok": False, "error_code": self.error_code, "description": self.description}
        if self.parameters:
            out["parameters"] = self.parameters
        return out


def _bad_request(detail: str) -> TelegramApiError:
    return TelegramApiError(400, f"Bad Request: {detail}")


@dataclass
class ApiCall:
    """One HTTP request the bot made, decoded. ``status`` is the HTTP status answered."""

    method: str
    params: JSON
    status: int = 200
    content_type: str = ""
    http_method: str = "POST"
    at: float = field(default_factory=time.monotonic)


@dataclass
class Fault:
    """A scripted error for the next call of a method, answered instead of the method."""

    error_code: int
    description: str | None = None
    parameters: JSON | None = None


@dataclass
class WebhookConfig:
    """What ``setWebhook`` recorded."""

    url: str
    secret_token: str | None = None
    allowed_updates: list[str] | None = None


@dataclass
class WebhookDelivery:
    """One attempt to POST an update to the webhook. ``status`` is None on network errors."""

    update_id: int
    url: str
    status: int | None
    error: str | None
    secret_token: str | None


# --------------------------------------------------------------------------------------
# Text helpers: UTF-16 offsets and entity detection
# --------------------------------------------------------------------------------------


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units: the unit of every Telegram entity offset and length.

    "🎉" is one Python character but two code units; computing offsets with ``len()``
    is the classic bug that makes PTB's ``parse_entities`` return garbage.
    """
    return len(text.encode("utf-16-le")) // 2


def entity_for(
    text: str, part: str, entity_type: str, *, occurrence: int = 0, **extra: Any
) -> JSON:
    """A MessageEntity dict covering the ``occurrence``-th ``part`` of ``text`` (UTF-16)."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(part, start + 1)
    entity: JSON = {
        "type": entity_type,
        "offset": utf16_len(text[:start]),
        "length": utf16_len(part),
    }
    entity.update(extra)
    return entity


_URL_RE = re.compile(r"https?://[^\s<>\"]+")
_EMAIL_RE = re.compile(r"(?<![\w.@])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{3,32}(?![\w@])")
_COMMAND_RE = re.compile(r"(?<![\w/])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w/@])")
_HASHTAG_RE = re.compile(r"(?<![\w#])#[^\W\d][\w]*")


def detect_entities(text: str) -> list[JSON]:
    """Entities Telegram's clients/servers add on their own: urls, emails, mentions,
    bot commands, hashtags. Offsets and lengths in UTF-16 code units.

    PTB's ``CommandHandler`` only fires when a ``bot_command`` entity starts at offset 0,
    so command updates without this entity would silently never reach the handler.
    """
    found: list[tuple[int, int, str]] = []  # python start, end, type

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _ in found)

    for regex, kind in (
        (_URL_RE, "url"),
        (_EMAIL_RE, "email"),
        (_MENTION_RE, "mention"),
        (_COMMAND_RE, "bot_command"),
        (_HASHTAG_RE, "hashtag"),
    ):
        for match in regex.finditer(text):
            start, end = match.span()
            if kind == "url":
                while end > start and text[end - 1] in ".,;:!?)'":
                    end -= 1
            if free(start, end):
                found.append((start, end, kind))
    found.sort()
    return [
        {"type": kind, "offset": utf16_len(text[:start]), "length": utf16_len(text[start:end])}
        for start, end, kind in found
    ]


def _put_text(msg: JSON, text: str, entities: list[JSON] | None = None, key: str = "text") -> None:
    """Set a message's ``text`` (or ``caption``) and its entities: ``entities`` as given,
    or what Telegram would detect when None; an empty list is left out, as Telegram does."""
    msg[key] = text
    found = detect_entities(text) if entities is None else entities
    if found:
        msg["entities" if key == "text" else f"{key}_entities"] = found


def _coerce_param(name: str, value: str) -> Any:
    """Undo PTB's form encoding: non-string parameters arrive as JSON text."""
    if name in _STRING_PARAMS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free right now on ``host`` (for servers that want a number, such as
    PTB's webhook server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# --------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------


class FakeTelegram:
    """A Bot API server on 127.0.0.1 with scriptable updates, faults and recordings.

    One instance is one bot (``token``); use it as an async context manager. All
    scripting methods are plain (non-async) and must be called from the event loop the
    server runs on, which is the test's loop.
    """

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        *,
        bot_username: str = "alfred",
        bot_first_name: str = "Alfred",
        can_read_all_group_messages: bool = True,
        host: str = "127.0.0.1",
    ) -> None:
        self.token = token
        prefix = token.split(":", 1)[0]
        self.bot_id = int(prefix) if prefix.isdigit() else 777000001
        self.bot_username = bot_username
        self.bot_first_name = bot_first_name
        self.can_read_all_group_messages = can_read_all_group_messages
        self.host = host
        self.port = 0

        # What the bot did.
        self.calls: list[ApiCall] = []
        self.sent_messages: list[JSON] = []
        #: ``sendDocument`` calls that succeeded: chat_id, message_id, filename, content
        #: (bytes), caption.
        self.sent_documents: list[JSON] = []
        #: ``setMessageReaction`` calls that succeeded: chat_id, message_id, emoji.
        self.reactions: list[JSON] = []
        #: ``answerCallbackQuery`` calls (inline-button presses the bot answered).
        self.answered_callbacks: list[JSON] = []
        #: ``editMessageText`` calls that succeeded: chat_id, message_id, text, message
        #: (as it now is, ``reply_markup`` included).
        self.edited_messages: list[JSON] = []
        self.webhook_deliveries: list[WebhookDelivery] = []

        # Server-side state.
        self.webhook: WebhookConfig | None = None
        self.allowed_updates: list[str] | None = None
        self.chats: dict[int, JSON] = {}
        #: Basic groups upgraded to supergroups: old id → new id (sends to the old fail).
        self.migrated: dict[int, int] = {}
        self.users: dict[int, JSON] = {}
        self.members: dict[int, dict[int, JSON]] = {}
        self.messages: dict[tuple[int, int], JSON] = {}
        self._pending: list[JSON] = []
        self._next_update_id = 100_000_001
        self._next_message_id: dict[int, int] = {}
        self._user_ids = itertools.count(1_000_001)
        self._group_ids = itertools.count(4_000_001)
        self._supergroup_ids = itertools.count(1_000_000_001)
        self._file_ids = itertools.count(1)
        self._faults: dict[str, deque[Fault]] = {}
        self._poll_generation = 0

        # Wake-ups: one event per "something changed"; waiters keep the old one.
        self._wake = asyncio.Event()
        self._activity = asyncio.Event()
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._deliverer: asyncio.Task[None] | None = None

        self._register_chat_obj(self._private_chat_dict(self.bot_user))

    # ---- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> FakeTelegram:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Bind a free port on ``host`` and start serving and delivering webhooks."""
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle_api)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        sock = socket.create_server((self.host, 0))
        self.port = int(sock.getsockname()[1])
        await web.SockSite(self._runner, sock).start()
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        self._deliverer = asyncio.create_task(self._deliver_webhooks(), name="fake-tg-webhook")

    async def close(self) -> None:
        """Stop serving; pending long polls return at once so shutdown is quick."""
        self._closing = True
        self._notify()
        if self._deliverer is not None:
            self._deliverer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._deliverer
            self._deliverer = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def base_url(self) -> str:
        """For ``ApplicationBuilder.base_url``: PTB appends ``{token}/{method}``."""
        return f"http://{self.host}:{self.port}/bot"

    @property
    def bot_user(self) -> JSON:
        """The bot as a ``User`` (the ``from`` of its messages)."""
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.bot_first_name,
            "username": self.bot_username,
        }

    # ---- scripting: updates ----------------------------------------------------------

    def push_update(self, update: Mapping[str, Any]) -> JSON:
        """Queue an update (numbering it unless it has an ``update_id``); returns it.

        Also teaches the server what the update implies: its chats, users, messages
        (so replies to them resolve) and memberships.
        """
        stored = copy.deepcopy(dict(update))
        if "update_id" in stored:
            self._next_update_id = max(self._next_update_id, int(stored["update_id"]) + 1)
        else:
            stored["update_id"] = self._next_update_id
            self._next_update_id += 1
        self._absorb_update(stored)
        self._pending.append(stored)
        self._pending.sort(key=lambda u: int(u["update_id"]))
        self._notify()
        return copy.deepcopy(stored)

    def push_text(self, chat: JSON, from_user: JSON, text: str, **kwargs: Any) -> JSON:
        """Shorthand for ``push_update(text_message(...))``."""
        return self.push_update(self.text_message(chat, from_user, text, **kwargs))

    @property
    def pending_updates(self) -> list[int]:
        """Update ids queued and not yet confirmed (getUpdates offset) or delivered."""
        return [int(u["update_id"]) for u in self._pending]

    # ---- scripting: faults ----------------------------------------------------------

    def fail_next(
        self,
        method: str,
        error_code: int = 500,
        *,
        times: int = 1,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        """Make the next ``times`` calls of ``method`` ("*" = any method) fail."""
        reason = _REASONS.get(error_code, "Error")
        for _ in range(times):
            self._faults.setdefault(method.lower(), deque()).append(
                Fault(error_code, description or reason, dict(parameters) if parameters else None)
            )

    def rate_limit_next(self, method: str, retry_after: int = 1, *, times: int = 1) -> None:
        """429 "Too Many Requests: retry after N" with ``parameters.retry_after`` (PTB:
        ``RetryAfter``; ``AIORateLimiter(max_retries=k)`` sleeps and retries)."""
        self.fail_next(
            method,
            429,
            times=times,
            description=f"Too Many Requests: retry after {retry_after}",
            parameters={"retry_after": retry_after},
        )

    # ---- scripting: waiting ----------------------------------------------------------

    async def wait_until(
        self,
        predicate: Callable[[], bool],
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 - a test-facing deadline, not an I/O timeout
        what: str = "condition",
    ) -> None:
        """Wait until ``predicate()`` holds, re-checking whenever the server does
        something; raise ``TimeoutError`` (with what the bot did) at the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                calls = [f"{c.method}->{c.status}" for c in self.calls[-20:]]
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}; calls: {calls}")
            event = self._activity
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)

    async def wait_for_messages(
        self,
        n: int,
        timeout: float = 5.0,  # noqa: ASYNC109 - a test-facing deadline
    ) -> list[JSON]:
        """Wait until the bot has sent at least ``n`` messages; return all sent so far."""
        await self.wait_until(
            lambda: len(self.sent_messages) >= n, timeout=timeout, what=f"{n} sent messages"
        )
        return list(self.sent_messages)

    async def wait_for_calls(
        self,
        method: str,
        n: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109 - a test-facing deadline
        *,
        status: int | None = None,
    ) -> list[ApiCall]:
        """Wait until ``method`` was called ``n`` times (optionally with that status)."""

        def matching() -> list[ApiCall]:
            return [
                c
                for c in self.calls
                if c.method.lower() == method.lower() and (status is None or c.status == status)
            ]

        await self.wait_until(lambda: len(matching()) >= n, timeout=timeout, what=f"{n}x {method}")
        return matching()

    def calls_of(self, method: str) -> list[JSON]:
        """Params of every call of ``method`` (any outcome), in order."""
        return [c.params for c in self.calls if c.method.lower() == method.lower()]

    # ---- builders: users and chats ---------------------------------------------------

    def user(
        self,
        first_name: str = "Ann",
        *,
        id: int | None = None,
        last_name: str | None = None,
        username: str | None = None,
        language_code: str | None = "en",
        is_bot: bool = False,
    ) -> JSON:
        """A ``User`` dict, remembered so ``getChatMember`` can know about them."""
        user: JSON = {
            "id": id if id is not None else next(self._user_ids),
            "is_bot": is_bot,
            "first_name": first_name,
        }
        if last_name:
            user["last_name"] = last_name
        if username:
            user["username"] = username
        if language_code:
            user["language_code"] = language_code
        self.users[user["id"]] = user
        return user

    def private_chat(self, user: JSON) -> JSON:
        """The private chat with ``user`` (chat id == user id), in which the user has
        started the bot."""
        chat = self._private_chat_dict(user)
        self._register_chat_obj(chat)
        self.users[user["id"]] = user
        self._set_member(chat["id"], user, "member")
        self._set_member(chat["id"], self.bot_user, "member")
        return chat

    def group_chat(
        self,
        id: int | None = None,
        title: str = "Family",
        *,
        supergroup: bool = False,
        username: str | None = None,
        is_forum: bool = False,
        members: Iterable[JSON] = (),
        creator: JSON | None = None,
        bot_status: str = "member",
    ) -> JSON:
        """A basic group (negative id) or supergroup (``-100…`` id) the bot is in."""
        if id is None:
            id = self._new_supergroup_id() if supergroup else -next(self._group_ids)
        chat: JSON = {"id": id, "type": "supergroup" if supergroup else "group", "title": title}
        if username:
            chat["username"] = username
        if is_forum:
            chat["is_forum"] = True
        self._register_chat_obj(chat)
        self._set_member(id, self.bot_user, bot_status)
        if creator is not None:
            self._set_member(id, creator, "creator")
        for member in members:
            self._set_member(id, member, "member")
        return chat

    def channel(
        self,
        id: int | None = None,
        title: str = "News",
        *,
        username: str | None = None,
        bot_status: str = "administrator",
    ) -> JSON:
        """A channel; the bot must be an administrator to post there."""
        if id is None:
            id = self._new_supergroup_id()
        chat: JSON = {"id": id, "type": "channel", "title": title}
        if username:
            chat["username"] = username
        self._register_chat_obj(chat)
        self._set_member(id, self.bot_user, bot_status)
        return chat

    def member_status(self, chat: JSON, user: JSON) -> str | None:
        """The membership status the server holds, or None if it never heard of it."""
        member = self.members.get(chat["id"], {}).get(user["id"])
        return None if member is None else str(member["status"])

    # ---- builders: updates -----------------------------------------------------------

    def text_message(
        self,
        chat: JSON,
        from_user: JSON,
        text: str,
        *,
        reply_to: JSON | int | None = None,
        entities: list[JSON] | None = None,
        message_id: int | None = None,
        date: int | None = None,
        message_thread_id: int | None = None,
    ) -> JSON:
        """A ``message`` update with ``text``. Entities default to what Telegram would
        detect (mentions like ``@alfred``, ``/commands``, urls, hashtags), with UTF-16
        offsets; pass ``entities=[]`` for none."""
        msg = self._message_base(chat, from_user, message_id, date)
        _put_text(msg, text, entities)
        self._add_reply(msg, reply_to)
        if message_thread_id is not None:
            msg["message_thread_id"] = message_thread_id
            msg["is_topic_message"] = True
        return {"message": msg}

    def edited_message(
        self,
        original: JSON,
        new_text: str,
        *,
        entities: list[JSON] | None = None,
        edit_date: int | None = None,
    ) -> JSON:
        """An ``edited_message`` update: same message id and chat, new text (a new
        caption when the original was a photo or a document with one)."""
        msg = copy.deepcopy(self._message_of(original))
        key = "caption" if "caption" in msg else "text"
        msg.pop("entities", None)
        msg.pop("caption_entities", None)
        _put_text(msg, new_text, entities, key=key)
        now = max(int(time.time()), int(msg["date"]))
        msg["edit_date"] = edit_date if edit_date is not None else now
        return {"edited_message": msg}

    def channel_post(
        self,
        channel: JSON,
        text: str,
        *,
        message_id: int | None = None,
        author_signature: str | None = None,
        entities: list[JSON] | None = None,
    ) -> JSON:
        """A ``channel_post`` update: ``sender_chat`` is the channel, there is no ``from``."""
        msg = self._message_base(channel, None, message_id, None)
        msg["sender_chat"] = channel
        _put_text(msg, text, entities)
        if author_signature:
            msg["author_signature"] = author_signature
        return {"channel_post": msg}

    def photo_message(
        self,
        chat: JSON,
        from_user: JSON,
        caption: str | None = None,
        *,
        caption_entities: list[JSON] | None = None,
        message_id: int | None = None,
        reply_to: JSON | int | None = None,
    ) -> JSON:
        """A photo (three sizes, as Telegram sends) with an optional caption."""
        msg = self._message_base(chat, from_user, message_id, None)
        sizes = []
        for width, height in ((90, 67), (320, 240), (1280, 960)):
            file_id, unique_id = self._file_ids_for("photos")
            sizes.append(
                {
                    "file_id": file_id,
                    "file_unique_id": unique_id,
                    "file_size": width * height // 10,
                    "width": width,
                    "height": height,
                }
            )
        msg["photo"] = sizes
        if caption is not None:
            _put_text(msg, caption, caption_entities, key="caption")
        self._add_reply(msg, reply_to)
        return {"message": msg}

    def document_message(
        self,
        chat: JSON,
        from_user: JSON,
        caption: str | None = None,
        *,
        file_name: str = "lease.pdf",
        mime_type: str = "application/pdf",
        message_id: int | None = None,
    ) -> JSON:
        """A document (a file sent as such) with an optional caption."""
        msg = self._message_base(chat, from_user, message_id, None)
        file_id, unique_id = self._file_ids_for("documents")
        msg["document"] = {
            "file_id": file_id,
            "file_unique_id": unique_id,
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": 48_213,
        }
        if caption is not None:
            _put_text(msg, caption, None, key="caption")
        return {"message": msg}

    def sticker_message(
        self,
        chat: JSON,
        from_user: JSON,
        emoji: str = "👍",
        *,
        set_name: str = "AlfredTestStickers",
        message_id: int | None = None,
    ) -> JSON:
        """A regular static sticker."""
        msg = self._message_base(chat, from_user, message_id, None)
        file_id, unique_id = self._file_ids_for("stickers")
        msg["sticker"] = {
            "file_id": file_id,
            "file_unique_id": unique_id,
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": False,
            "is_video": False,
            "emoji": emoji,
            "set_name": set_name,
            "file_size": 14,
        }
        return {"message": msg}

    def voice_message(
        self,
        chat: JSON,
        from_user: JSON,
        *,
        duration: int = 3,
        caption: str | None = None,
        message_id: int | None = None,
    ) -> JSON:
        """A voice note (OGG/Opus)."""
        msg = self._message_base(chat, from_user, message_id, None)
        file_id, unique_id = self._file_ids_for("voice")
        msg["voice"] = {
            "file_id": file_id,
            "file_unique_id": unique_id,
            "duration": duration,
            "mime_type": "audio/ogg",
            "file_size": 2000 * duration,
        }
        if caption is not None:
            msg["caption"] = caption
        return {"message": msg}

    def forwarded_message(
        self,
        chat: JSON,
        from_user: JSON,
        text: str,
        *,
        origin: JSON | str,
        origin_date: int | None = None,
        origin_message_id: int | None = None,
        message_id: int | None = None,
    ) -> JSON:
        """A forwarded text message (Bot API 7 ``forward_origin``). ``origin`` is a user
        dict, a chat dict (group/channel) or a name string (user hiding their account)."""
        msg = self._message_base(chat, from_user, message_id, None)
        _put_text(msg, text)
        date = origin_date if origin_date is not None else msg["date"] - 3600
        forward: JSON
        if isinstance(origin, str):
            forward = {"type": "hidden_user", "date": date, "sender_user_name": origin}
        elif "type" not in origin:
            forward = {"type": "user", "date": date, "sender_user": origin}
        elif origin["type"] == "channel":
            forward = {
                "type": "channel",
                "date": date,
                "chat": origin,
                "message_id": origin_message_id or 1,
            }
        else:
            forward = {"type": "chat", "date": date, "sender_chat": origin}
        msg["forward_origin"] = forward
        return {"message": msg}

    def new_chat_members(self, chat: JSON, from_user: JSON, members: Iterable[JSON]) -> JSON:
        """Service message: ``from_user`` added ``members`` (themselves if they joined)."""
        msg = self._message_base(chat, from_user, None, None)
        msg["new_chat_members"] = list(members)
        return {"message": msg}

    def upgrade_to_supergroup(self, group: JSON, by: JSON) -> tuple[JSON, JSON, JSON]:
        """Upgrade a basic group to a supergroup, as Telegram does: a new ``-100…`` id with
        the same members; sends to the old id fail with ``migrate_to_chat_id`` from now on.
        Returns the supergroup and the two service-message updates Telegram sends: in the
        old group (``migrate_to_chat_id``) and in the supergroup (``migrate_from_chat_id``).
        """
        old_id = int(group["id"])
        assert group["type"] == "group", "only basic groups are upgraded"
        members = [
            m["user"]
            for uid, m in self.members.get(old_id, {}).items()
            if uid != self.bot_id and m.get("status") in ("member", "administrator", "creator")
        ]
        supergroup = self.group_chat(title=str(group.get("title", "")), supergroup=True)
        for member in members:
            self._set_member(int(supergroup["id"]), member, "member")
        in_old = self._message_base(group, by, None, None)
        in_old["migrate_to_chat_id"] = supergroup["id"]
        in_new = self._message_base(supergroup, by, None, None)
        in_new["migrate_from_chat_id"] = old_id
        self.migrated[old_id] = int(supergroup["id"])
        return supergroup, {"message": in_old}, {"message": in_new}

    def left_chat_member(self, chat: JSON, from_user: JSON, member: JSON) -> JSON:
        """Service message: ``member`` left or was removed by ``from_user``."""
        msg = self._message_base(chat, from_user, None, None)
        msg["left_chat_member"] = member
        return {"message": msg}

    def my_chat_member(
        self,
        chat: JSON,
        from_user: JSON,
        *,
        old_status: str = "left",
        new_status: str = "member",
    ) -> JSON:
        """The bot's own membership changed: added to a group (``left``→``member``),
        removed (→``left``/``kicked``), or blocked in private (``member``→``kicked``).

        Real Telegram additionally sends a ``new_chat_members`` service message when the
        bot is added to a group; push :meth:`new_chat_members` too to mirror that.
        """
        change = self._chat_member_updated(chat, from_user, self.bot_user, old_status, new_status)
        return {"my_chat_member": change}

    def chat_member(
        self,
        chat: JSON,
        from_user: JSON,
        user: JSON,
        *,
        old_status: str = "left",
        new_status: str = "member",
    ) -> JSON:
        """Someone else's membership changed. Delivered only if the bot asked for
        ``chat_member`` in ``allowed_updates`` (the real API's default leaves it out)."""
        change = self._chat_member_updated(chat, from_user, user, old_status, new_status)
        return {"chat_member": change}

    # ---- internals: state ------------------------------------------------------------

    def _notify(self) -> None:
        """Wake every waiter (long polls, webhook deliverer, ``wait_until``)."""
        self._wake.set()
        self._wake = asyncio.Event()
        self._activity.set()
        self._activity = asyncio.Event()

    @staticmethod
    def _private_chat_dict(user: JSON) -> JSON:
        chat: JSON = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
        for key in ("last_name", "username"):
            if key in user:
                chat[key] = user[key]
        return chat

    def _new_supergroup_id(self) -> int:
        """Supergroups and channels have ids of the form ``-100xxxxxxxxxx``."""
        return -1_000_000_000_000 - next(self._supergroup_ids)

    def _register_chat_obj(self, chat: JSON) -> None:
        self.chats[int(chat["id"])] = {**self.chats.get(int(chat["id"]), {}), **chat}

    def _set_member(self, chat_id: int, user: JSON, status: str, **fields: Any) -> JSON:
        self.users.setdefault(user["id"], user)
        member = _member_dict(user, status, **fields)
        self.members.setdefault(chat_id, {})[user["id"]] = member
        return member

    def _allocate_message_id(self, chat_id: int, wanted: int | None = None) -> int:
        nxt = self._next_message_id.get(chat_id, 1)
        if wanted is None:
            wanted = nxt
        self._next_message_id[chat_id] = max(nxt, wanted + 1)
        return wanted

    def _message_base(
        self, chat: JSON, from_user: JSON | None, message_id: int | None, date: int | None
    ) -> JSON:
        self._register_chat_obj(chat)
        msg: JSON = {
            "message_id": self._allocate_message_id(int(chat["id"]), message_id),
            "date": date if date is not None else int(time.time()),
            "chat": chat,
        }
        if from_user is not None:
            msg["from"] = from_user
        return msg

    @staticmethod
    def _message_of(obj: JSON) -> JSON:
        """Accept either a message dict or an update dict carrying one."""
        if "message_id" in obj:
            return obj
        for key in ("message", "edited_message", "channel_post", "edited_channel_post"):
            if key in obj:
                return dict(obj[key])
        raise ValueError(f"not a message or message update: {sorted(obj)}")

    def _add_reply(self, msg: JSON, reply_to: JSON | int | None) -> None:
        if reply_to is None:
            return
        if isinstance(reply_to, int):
            target = self.messages.get((int(msg["chat"]["id"]), reply_to))
            if target is None:
                raise ValueError(f"no message {reply_to} in chat {msg['chat']['id']}")
        else:
            target = self._message_of(reply_to)
        target = copy.deepcopy(target)
        target.pop("reply_to_message", None)  # Telegram nests one level only
        msg["reply_to_message"] = target

    def _file_ids_for(self, folder: str) -> tuple[str, str]:
        """A ``file_id`` and ``file_unique_id`` of the shape Telegram uses (no content)."""
        n = next(self._file_ids)
        return f"AgAC{folder[:2].upper()}fake{n:06d}", f"AQAD{n:06d}"

    def _chat_member_updated(
        self, chat: JSON, from_user: JSON, user: JSON, old_status: str, new_status: str
    ) -> JSON:
        self._register_chat_obj(chat)
        return {
            "chat": chat,
            "from": from_user,
            "date": int(time.time()),
            "old_chat_member": _member_dict(user, old_status),
            "new_chat_member": _member_dict(user, new_status),
        }

    def _absorb_update(self, update: JSON) -> None:
        for key in ("message", "edited_message", "channel_post", "edited_channel_post"):
            msg = update.get(key)
            if isinstance(msg, dict):
                self._absorb_message(msg)
        for key in ("my_chat_member", "chat_member"):
            change = update.get(key)
            if isinstance(change, dict):
                chat_id = int(change["chat"]["id"])
                self._register_chat_obj(change["chat"])
                new = change["new_chat_member"]
                self.users.setdefault(new["user"]["id"], new["user"])
                self.members.setdefault(chat_id, {})[new["user"]["id"]] = new

    def _absorb_message(self, msg: JSON) -> None:
        chat = msg["chat"]
        chat_id = int(chat["id"])
        self._register_chat_obj(chat)
        self._allocate_message_id(chat_id, int(msg["message_id"]))
        self.messages[(chat_id, int(msg["message_id"]))] = copy.deepcopy(msg)
        sender = msg.get("from")
        if isinstance(sender, dict):
            self.users.setdefault(sender["id"], sender)
            known = self.members.setdefault(chat_id, {})
            absent = sender["id"] not in known or known[sender["id"]]["status"] in (
                "left",
                "kicked",
            )
            if absent and chat["type"] != "channel":
                # Whoever speaks in a group is a member of it.
                known[sender["id"]] = _member_dict(sender, "member")
        for member in msg.get("new_chat_members", []):
            self._set_member(chat_id, member, "member")
        if isinstance(msg.get("left_chat_member"), dict):
            self._set_member(chat_id, msg["left_chat_member"], "left")

    # ---- internals: HTTP -------------------------------------------------------------

    async def _read_params(self, request: web.Request) -> JSON:
        """The parameters of a call: the query string and the form PTB posts."""
        params: JSON = {k: _coerce_param(k, v) for k, v in request.query.items()}
        if request.body_exists and request.content_type in (
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ):
            form = await request.post()
            for key, value in form.items():
                if isinstance(value, web.FileField):  # an upload (sendDocument's file)
                    params[key] = {
                        "filename": value.filename,
                        "content": value.file.read(),
                        "content_type": value.content_type,
                    }
                else:
                    params[key] = _coerce_param(key, str(value))
        return params

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        call = ApiCall(
            method=method,
            params={},
            content_type=request.content_type if request.body_exists else "",
            http_method=request.method,
        )
        self.calls.append(call)
        try:
            call.params = await self._read_params(request)
            if request.match_info["token"] != self.token:
                raise TelegramApiError(401, "Unauthorized")
            fault = self._take_fault(method)
            if fault is not None:
                raise TelegramApiError(
                    fault.error_code, fault.description or "Error", fault.parameters
                )
            result = await self._dispatch(method, call.params)
        except TelegramApiError as err:
            call.status = err.error_code
            self._notify()
            return web.json_response(err.body(), status=err.error_code)
        self._notify()
        return web.json_response({"ok": True, "result": result})

    def _take_fault(self, method: str) -> Fault | None:
        for key in (method.lower(), "*"):
            queue = self._faults.get(key)
            if queue:
                return queue.popleft()
        return None

    async def _dispatch(self, method: str, params: JSON) -> Any:
        builtin = getattr(self, f"_api_{method.lower()}", None)
        if builtin is None:
            raise TelegramApiError(404, "Not Found: method not found")
        return await builtin(params)

    # ---- internals: chat resolution and permission checks ----------------------------

    def _resolve_chat(self, chat_id: Any) -> JSON:
        if chat_id is None or chat_id == "":
            raise _bad_request("chat_id is empty")
        try:
            key = int(chat_id)
        except (TypeError, ValueError):
            raise _bad_request("chat not found") from None
        if key in self.migrated:
            raise TelegramApiError(
                400,
                "Bad Request: group chat was upgraded to a supergroup chat",
                {"migrate_to_chat_id": self.migrated[key]},
            )
        found = self.chats.get(key)
        if found is None and key in self.users:
            # A user the fake knows (a group member) who never opened a private chat with
            # the bot: Telegram refuses a bot's first message to them.
            raise TelegramApiError(403, "Forbidden: bot can't initiate conversation with a user")
        if found is None:
            raise _bad_request("chat not found")
        return found

    def _check_can_send(self, chat: JSON) -> None:
        bot = self.members.get(int(chat["id"]), {}).get(self.bot_id)
        status = bot["status"] if bot else None
        kind = chat["type"]
        if kind == "private":
            if chat["id"] == self.bot_id:
                raise TelegramApiError(403, "Forbidden: bot can't send messages to bots")
            if status == "kicked":
                raise TelegramApiError(403, "Forbidden: bot was blocked by the user")
            return
        if kind == "channel":
            if status not in ("creator", "administrator"):
                raise _bad_request("need administrator rights in the channel chat")
            return
        if status == "kicked":
            raise TelegramApiError(403, f"Forbidden: bot was kicked from the {kind} chat")
        if status == "left":
            raise TelegramApiError(403, f"Forbidden: bot is not a member of the {kind} chat")

    def _resolve_reply(self, chat: JSON, params: JSON) -> JSON | None:
        reply = params.get("reply_parameters")
        if isinstance(reply, str):
            reply = json.loads(reply)
        if reply is None and params.get("reply_to_message_id") is not None:
            reply = {
                "message_id": params["reply_to_message_id"],
                "allow_sending_without_reply": params.get("allow_sending_without_reply", False),
            }
        if not reply:
            return None
        target_chat = (
            self._resolve_chat(reply["chat_id"]) if reply.get("chat_id") is not None else chat
        )
        target = self.messages.get((int(target_chat["id"]), int(reply["message_id"])))
        if target is None:
            if reply.get("allow_sending_without_reply"):
                return None
            raise _bad_request("message to be replied not found")
        target = copy.deepcopy(target)
        target.pop("reply_to_message", None)
        return target

    def _mention_entities(self, params: JSON, text: str) -> list[JSON]:
        """Explicit ``entities``: only ``text_mention`` of a known user, inside the text
        (as Telegram checks it: 400 otherwise)."""
        given = params.get("entities") or []
        if isinstance(given, str):
            given = json.loads(given)
        size = utf16_len(text)
        for entity in given:
            user = entity.get("user") if isinstance(entity, dict) else None
            if entity.get("type") != "text_mention" or not isinstance(user, dict):
                raise _bad_request("this fake takes plain text and text_mention entities only")
            if int(user.get("id", 0)) not in self.users:
                raise _bad_request("can't parse entities: user not found")
            offset, length = int(entity.get("offset", -1)), int(entity.get("length", 0))
            if offset < 0 or length <= 0 or offset + length > size:
                raise _bad_request("can't parse entities: entity beyond the end of the text")
        return [dict(e) for e in given]

    def _plain_text(self, params: JSON) -> str:
        """The text of a message Alfred sends: plain (no ``parse_mode``; entities only a
        checked ``text_mention``), not blank, at most :data:`MAX_TEXT_LENGTH` characters."""
        if params.get("parse_mode"):
            raise _bad_request("this fake takes plain text only (Alfred sends no formatting)")
        text = params.get("text")
        if text is None or not str(text).strip():
            raise _bad_request("message text is empty")
        if len(str(text)) > MAX_TEXT_LENGTH:
            raise _bad_request("message is too long")
        return str(text)

    # ---- API methods -----------------------------------------------------------------

    async def _api_getme(self, params: JSON) -> JSON:
        return {
            **self.bot_user,
            "can_join_groups": True,
            "can_read_all_group_messages": self.can_read_all_group_messages,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    async def _api_getupdates(self, params: JSON) -> list[JSON]:
        self._poll_generation += 1
        generation = self._poll_generation
        self._notify()  # an older long poll now ends with 409, like on the real API
        if self.webhook is not None:
            raise TelegramApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        offset = params.get("offset")
        if offset is not None:
            offset = int(offset)
            if offset < 0:
                self._pending = self._pending[offset:]
            else:
                self._pending = [u for u in self._pending if int(u["update_id"]) >= offset]
        if "allowed_updates" in params:
            allowed = params["allowed_updates"]
            self.allowed_updates = list(allowed) if allowed else None
        limit = max(1, min(100, int(params.get("limit") or 100)))
        timeout = max(0.0, float(params.get("timeout") or 0))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if self._closing:
                return []
            if generation != self._poll_generation:
                raise TelegramApiError(
                    409,
                    "Conflict: terminated by other getUpdates request; "
                    "make sure that only one bot instance is running",
                )
            if self.webhook is not None:
                raise TelegramApiError(409, "Conflict: webhook was set while polling")
            ready = self._ready_updates(self.allowed_updates)
            remaining = deadline - loop.time()
            if ready or remaining <= 0:
                return copy.deepcopy(ready[:limit])
            event = self._wake
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)

    def _ready_updates(self, allowed: list[str] | None) -> list[JSON]:
        """Pending updates of allowed kinds; disallowed ones are dropped (the real API
        does not store updates the bot did not ask for)."""
        ready, kept = [], []
        for update in self._pending:
            kind = next(k for k in update if k != "update_id")
            ok = kind in allowed if allowed else kind not in _OPT_IN_UPDATES
            if ok:
                ready.append(update)
                kept.append(update)
        self._pending = kept
        return ready

    async def _api_deletewebhook(self, params: JSON) -> bool:
        self.webhook = None
        self._notify()
        return True

    async def _api_setwebhook(self, params: JSON) -> bool:
        url = params.get("url")
        if not url:
            return await self._api_deletewebhook(params)
        if not str(url).startswith(("http://", "https://")):
            raise _bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        secret = params.get("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            raise _bad_request("secret token contains unallowed characters")
        allowed = params.get("allowed_updates")
        if "allowed_updates" in params:
            self.allowed_updates = list(allowed) if allowed else None
        self.webhook = WebhookConfig(
            url=str(url),
            secret_token=str(secret) if secret is not None else None,
            allowed_updates=list(allowed) if allowed else None,
        )
        self._notify()
        return True

    async def _api_sendmessage(self, params: JSON) -> JSON:
        chat = self._resolve_chat(params.get("chat_id"))
        self._check_can_send(chat)
        text = self._plain_text(params)
        mentions = self._mention_entities(params, text)
        reply_to = self._resolve_reply(chat, params)
        chat_id = int(chat["id"])
        msg: JSON = {
            "message_id": self._allocate_message_id(chat_id),
            "date": int(time.time()),
            "chat": copy.deepcopy(chat),
        }
        if chat["type"] == "channel":
            msg["sender_chat"] = copy.deepcopy(chat)
        else:
            msg["from"] = self.bot_user
        if params.get("message_thread_id") is not None:
            msg["message_thread_id"] = int(params["message_thread_id"])
        if reply_to is not None:
            msg["reply_to_message"] = reply_to
        detected = detect_entities(text)
        _put_text(msg, text, sorted([*mentions, *detected], key=lambda e: int(e["offset"])))
        markup = params.get("reply_markup")
        if isinstance(markup, str):
            markup = json.loads(markup)
        if markup is not None:
            if not all(
                isinstance(b, dict) and b.get("text") and len(str(b.get("callback_data", ""))) <= 64
                for row in markup.get("inline_keyboard", [])
                for b in row
            ):
                raise _bad_request("BUTTON_DATA_INVALID")
            msg["reply_markup"] = markup
        self.messages[(chat_id, msg["message_id"])] = copy.deepcopy(msg)
        reply_params = params.get("reply_parameters")
        self.sent_messages.append(
            {
                "chat_id": chat_id,
                "message_id": msg["message_id"],
                "text": text,
                "reply_to_message_id": (
                    reply_params.get("message_id")
                    if isinstance(reply_params, dict)
                    else params.get("reply_to_message_id")
                ),
                "reply_parameters": reply_params,
                "message_thread_id": params.get("message_thread_id"),
                "message": copy.deepcopy(msg),
                "params": dict(params),
            }
        )
        return msg

    async def _api_senddocument(self, params: JSON) -> JSON:
        """A file uploaded as multipart (``document``), with an optional plain caption."""
        chat = self._resolve_chat(params.get("chat_id"))
        self._check_can_send(chat)
        upload = params.get("document")
        if not isinstance(upload, dict):
            raise _bad_request("there is no document in the request")
        if params.get("parse_mode") or params.get("caption_entities"):
            raise _bad_request("this fake takes plain captions only (Alfred sends no formatting)")
        caption = str(params.get("caption") or "")
        if len(caption) > 1024:
            raise _bad_request("message caption is too long")
        reply_to = self._resolve_reply(chat, params)
        chat_id = int(chat["id"])
        file_id = f"doc{next(self._file_ids)}"
        msg: JSON = {
            "message_id": self._allocate_message_id(chat_id),
            "date": int(time.time()),
            "chat": copy.deepcopy(chat),
            "from": self.bot_user,
            "document": {
                "file_id": file_id,
                "file_unique_id": f"u{file_id}",
                "file_name": upload["filename"],
                "file_size": len(upload["content"]),
            },
        }
        if params.get("message_thread_id") is not None:
            msg["message_thread_id"] = int(params["message_thread_id"])
        if reply_to is not None:
            msg["reply_to_message"] = reply_to
        if caption:
            _put_text(msg, caption, key="caption")
        self.messages[(chat_id, msg["message_id"])] = copy.deepcopy(msg)
        self.sent_documents.append(
            {
                "chat_id": chat_id,
                "message_id": msg["message_id"],
                "filename": upload["filename"],
                "content": upload["content"],
                "caption": caption,
            }
        )
        return msg

    async def _api_answercallbackquery(self, params: JSON) -> bool:
        """A button press answered (its spinner stops); the text is the toast shown."""
        if not params.get("callback_query_id"):
            raise _bad_request("query is too old or query ID is invalid")
        self.answered_callbacks.append(dict(params))
        return True

    async def _api_editmessagetext(self, params: JSON) -> JSON:
        """A message of the bot's, its text and inline keyboard replaced (a list after a
        tick-off press): 400 for a message the chat never had or someone else's, and
        "message is not modified" when text and keyboard are what they were."""
        chat = self._resolve_chat(params.get("chat_id"))
        chat_id = int(chat["id"])
        key = (chat_id, int(params.get("message_id") or 0))
        old = self.messages.get(key)
        if old is None:
            raise _bad_request("message to edit not found")
        if (old.get("from") or {}).get("id") != self.bot_user["id"]:
            raise _bad_request("message can't be edited")
        text = self._plain_text(params)
        markup = params.get("reply_markup")
        if isinstance(markup, str):
            markup = json.loads(markup)
        if markup is not None and not all(
            isinstance(b, dict) and b.get("text") and len(str(b.get("callback_data", ""))) <= 64
            for row in markup.get("inline_keyboard", [])
            for b in row
        ):
            raise _bad_request("BUTTON_DATA_INVALID")
        if text == old.get("text") and markup == old.get("reply_markup"):
            raise _bad_request(
                "message is not modified: specified new message content and reply markup "
                "are exactly the same as a current content and reply markup of the message"
            )
        msg = copy.deepcopy(old)
        msg.pop("entities", None)
        _put_text(msg, text)
        msg.pop("reply_markup", None)
        if markup is not None and markup.get("inline_keyboard"):
            msg["reply_markup"] = markup
        msg["edit_date"] = int(time.time())
        self.messages[key] = copy.deepcopy(msg)
        self.edited_messages.append(
            {"chat_id": chat_id, "message_id": key[1], "text": text, "message": copy.deepcopy(msg)}
        )
        return msg

    async def _api_setmessagereaction(self, params: JSON) -> bool:
        """Bots may react with one emoji from Telegram's list, on a message the chat has."""
        chat = self._resolve_chat(params.get("chat_id"))
        self._check_can_send(chat)
        chat_id = int(chat["id"])
        try:
            message_id = int(params.get("message_id") or 0)
        except (TypeError, ValueError):
            raise _bad_request("message_id is invalid") from None
        if (chat_id, message_id) not in self.messages:
            raise _bad_request("message to react not found")
        kinds = params.get("reaction") or []
        if isinstance(kinds, str):
            kinds = json.loads(kinds)
        if len(kinds) > 1:
            raise _bad_request("REACTIONS_TOO_MANY")
        for kind in kinds:
            if kind.get("type") != "emoji" or kind.get("emoji") not in _BOT_REACTIONS:
                raise _bad_request("REACTION_INVALID")
            self.reactions.append(
                {"chat_id": chat_id, "message_id": message_id, "emoji": kind["emoji"]}
            )
        return True

    # ---- webhook delivery ------------------------------------------------------------

    async def _deliver_webhooks(self) -> None:
        """POST queued updates, oldest first, one at a time, to the webhook URL.

        An update is removed only after a 2xx; failures are recorded and retried with a
        short capped backoff, so a webhook server that starts *after* ``setWebhook`` (PTB's
        order) still gets them.
        """
        backoff = 0.02
        while not self._closing:
            hook = self.webhook
            ready = self._ready_updates(self.allowed_updates) if hook else []
            if hook is None or not ready:
                event = self._wake
                await event.wait()
                continue
            update = ready[0]
            status, error = await self._post_update(hook, update)
            self.webhook_deliveries.append(
                WebhookDelivery(
                    int(update["update_id"]), hook.url, status, error, hook.secret_token
                )
            )
            if status is not None and 200 <= status < 300:
                backoff = 0.02
                self._pending = [u for u in self._pending if u is not update]
                self._notify()
                continue
            self._notify()
            event = self._wake
            with contextlib.suppress(TimeoutError):
                # A new setWebhook (or close) interrupts the wait.
                await asyncio.wait_for(self._wait_hook_change(hook, event), backoff)
            backoff = min(backoff * 2, 0.5)

    async def _wait_hook_change(self, hook: WebhookConfig, event: asyncio.Event) -> None:
        while self.webhook is hook and not self._closing:
            await event.wait()
            event = self._wake

    async def _post_update(
        self, hook: WebhookConfig, update: JSON
    ) -> tuple[int | None, str | None]:
        assert self._session is not None
        headers = {"Content-Type": "application/json"}
        if hook.secret_token:
            headers["X-Telegram-Bot-Api-Secret-Token"] = hook.secret_token
        try:
            async with self._session.post(
                hook.url, data=json.dumps(update).encode(), headers=headers
            ) as response:
                await response.read()
                if 200 <= response.status < 300:
                    return response.status, None
                return response.status, (
                    f"Wrong response from the webhook: {response.status} {response.reason}"
                )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return None, f"Connection failed: {type(exc).__name__}: {exc}"


def _member_dict(user: JSON, status: str, **fields: Any) -> JSON:
    """A ChatMember dict with every field PTB 22 requires for that status."""
    member: JSON = {"status": status, "user": user}
    if status == "creator":
        member["is_anonymous"] = False
    elif status == "administrator":
        member.update(
            can_be_edited=False,
            is_anonymous=False,
            can_manage_chat=True,
            can_delete_messages=True,
            can_manage_video_chats=True,
            can_restrict_members=True,
            can_promote_members=False,
            can_change_info=True,
            can_invite_users=True,
            can_post_stories=False,
            can_edit_stories=False,
            can_delete_stories=False,
            can_pin_messages=True,
        )
    elif status == "restricted":
        member.update(
            is_member=True,
            can_change_info=False,
            can_invite_users=False,
            can_pin_messages=False,
            can_send_messages=False,
            can_send_polls=False,
            can_send_other_messages=False,
            can_add_web_page_previews=False,
            can_manage_topics=False,
            until_date=0,
            can_send_audios=False,
            can_send_documents=False,
            can_send_photos=False,
            can_send_videos=False,
            can_send_video_notes=False,
            can_send_voice_notes=False,
            can_edit_tag=False,
            can_react_to_messages=False,
        )
    elif status == "kicked":
        member["until_date"] = 0
    elif status not in ("member", "left"):
        raise ValueError(f"unknown chat member status {status!r}")
    member.update(fields)
    return member


__all__ = [
    "DEFAULT_TOKEN",
    "MAX_TEXT_LENGTH",
    "ApiCall",
    "FakeTelegram",
    "Fault",
    "TelegramApiError",
    "WebhookConfig",
    "WebhookDelivery",
    "detect_entities",
    "entity_for",
    "free_port",
    "utf16_len",
]
