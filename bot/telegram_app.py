"""The python-telegram-bot application: thin handlers around the :class:`Assistant`.

Handlers turn updates into :class:`Incoming`, call the assistant, and send what it
returns. Membership updates keep circles right: a member who leaves loses the circle's
memories in their DM at once (the viewer is computed from membership on every read), and
a group that removes the bot is archived. Updates are deduplicated by ``update_id``; an
update that fails because a dependency is down is written to a spool file and retried,
so it is never lost for good.
"""

from __future__ import annotations

import copy
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from telegram import Chat, Message, MessageEntity, Update, User
from telegram.constants import ChatMemberStatus, ChatType
from telegram.error import ChatMigrated
from telegram.ext import (
    AIORateLimiter,
    Application,
    ApplicationBuilder,
    BaseRateLimiter,
    ChatMemberHandler,
    ContextTypes,
    MessageHandler,
    TypeHandler,
    filters,
)
from telegram.request import BaseRequest, HTTPXRequest, RequestData

from services.messages import Incoming, Sender, safe_text, split_for_telegram
from services.reply.assistant import MEMORY_DOWN, Assistant

log = logging.getLogger(__name__)

NON_TEXT_REPLY = (
    "I can only read text (and the captions of photos) for now — could you write it down?"
)
ANONYMOUS_REPLY = (
    "I can't tell who wrote this: a message sent as the group or as a channel has no "
    "person I could remember it for. Write as yourself to talk to me."
)
SEEN_UPDATES = 10_000
#: How often a send refused with 429 "retry after N" is retried after waiting N seconds.
RATE_RETRIES = 3


class UpdateDeduplicator:
    """Remembers recent ``update_id``s so a redelivered update is handled once."""

    def __init__(self, size: int = SEEN_UPDATES) -> None:
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._size = size

    def first_time(self, update_id: int) -> bool:
        if update_id in self._seen:
            return False
        self._seen[update_id] = None
        while len(self._seen) > self._size:
            self._seen.popitem(last=False)
        return True


class Spool:
    """Updates that could not be handled because a dependency was down, kept on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, update: Update) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(update.to_dict()) + "\n")

    def take(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        self.path.unlink()
        taken = []
        for line in lines:
            try:
                taken.append(json.loads(line))
            except ValueError:  # e.g. a line cut short by a crash while writing it
                if line.strip():
                    log.warning("dropped an unreadable spool line (%d characters)", len(line))
        return taken


def keep_unreadable(path: Path | None, data: dict[str, Any], exc: Exception) -> None:
    """Log (id and error type only: an update holds message text) and keep on disk an
    update python-telegram-bot cannot read, so it is not lost and can be looked at."""
    log.warning(
        "update %s cannot be read (%s); kept in %s",
        data.get("update_id"),
        type(exc).__name__,
        path or "nowhere (no data folder)",
    )
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(data) + "\n")


class ReadableUpdates(BaseRequest):
    """``getUpdates`` through ``inner``, each update checked before PTB sees the batch.

    PTB parses a batch as a whole: one update it cannot read (a field this PTB version
    does not expect, a broken proxy) fails the batch, and polling asks for the same batch
    again, forever — the bot stops answering anyone. Such an update is replaced by a bare
    ``{"update_id": …}`` (so polling moves past it) and kept by :func:`keep_unreadable`.
    """

    def __init__(self, inner: BaseRequest, unreadable: Path | None = None) -> None:
        self.inner = inner
        self.unreadable = unreadable

    @property
    def read_timeout(self) -> float | None:
        return self.inner.read_timeout

    async def initialize(self) -> None:
        await self.inner.initialize()

    async def shutdown(self) -> None:
        await self.inner.shutdown()

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = BaseRequest.DEFAULT_NONE,
        write_timeout: Any = BaseRequest.DEFAULT_NONE,
        connect_timeout: Any = BaseRequest.DEFAULT_NONE,
        pool_timeout: Any = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        code, payload = await self.inner.do_request(
            url, method, request_data, read_timeout, write_timeout, connect_timeout, pool_timeout
        )
        if code != 200 or not url.endswith("/getUpdates"):
            return code, payload
        try:
            body = json.loads(payload)
            updates = body["result"]
        except (ValueError, TypeError, KeyError):
            return code, payload  # PTB reports a broken response itself
        if not isinstance(updates, list):
            return code, payload
        changed = False
        for i, data in enumerate(updates):
            if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
                continue
            try:
                Update.de_json(copy.deepcopy(data), None)
            except Exception as exc:
                keep_unreadable(self.unreadable, data, exc)
                updates[i] = {"update_id": data["update_id"]}
                changed = True
        return code, json.dumps(body).encode() if changed else payload


def _message_sender(message: Message) -> Sender | None:
    user = message.from_user
    return _sender(user) if user is not None else None


def _sender(user: User) -> Sender:
    return Sender(
        telegram_id=user.id,
        name=_name(user),
        username=_username(user),
        is_bot=user.is_bot,
    )


def _entities(text: str | None, entities: tuple[MessageEntity, ...]) -> dict[MessageEntity, str]:
    """Each entity with the text it covers (offsets in UTF-16 code units), read from the
    :func:`safe_text` of ``text``: PTB's own parser fails on an unpaired surrogate."""
    if not text:
        return {}
    encoded = safe_text(text).encode("utf-16-le")
    return {
        e: encoded[2 * e.offset : 2 * (e.offset + e.length)].decode("utf-16-le", "replace")
        for e in entities
    }


def _title(chat: Chat) -> str | None:
    return safe_text(chat.title) if chat.title else None


def _name(user: User) -> str:
    """How Alfred calls a person: a Telegram name may be empty (a buggy client, a
    deleted account) or hold an unpaired surrogate."""
    return safe_text(user.full_name or user.username or str(user.id))


def _username(user: User) -> str | None:
    return safe_text(user.username) if user.username else None


def addressed_to_bot(message: Message, bot_id: int, bot_username: str) -> bool:
    """Mentioned (@alfred or a text mention), or replied to."""
    replied = message.reply_to_message
    if replied and replied.from_user and replied.from_user.id == bot_id:
        return True
    entities = _entities(message.text, message.entities) | _entities(
        message.caption, message.caption_entities
    )
    for entity, text in entities.items():
        if entity.type == MessageEntity.MENTION and text.lstrip("@").lower() == bot_username:
            return True
        if entity.type == MessageEntity.TEXT_MENTION and entity.user and entity.user.id == bot_id:
            return True
    return False


def to_incoming(update: Update, bot_id: int, bot_username: str) -> Incoming | None:
    message = update.effective_message
    chat = update.effective_chat
    if message is None or chat is None or chat.type == ChatType.CHANNEL:
        return None
    sender = _message_sender(message)
    if sender is None or sender.is_bot:
        return None
    text = safe_text(message.text or message.caption or "")
    kind = "text" if message.text else ("caption" if message.caption else "other")
    if message.forward_origin is not None:
        kind = "forwarded"
        text = f"[forwarded] {text}" if text else ""
    if update.edited_message is not None:
        kind = "edited"
    return Incoming(
        chat_id=chat.id,
        chat_type=chat.type,  # type: ignore[arg-type]
        sender=sender,
        message_id=message.message_id,
        text=text,
        chat_title=_title(chat),
        addressed=addressed_to_bot(message, bot_id, bot_username),
        update_id=update.update_id,
        kind=kind,
        topic_id=message.message_thread_id if message.is_topic_message else None,
    )


def anonymous_and_addressed(update: Update, bot_id: int, bot_username: str) -> bool:
    """A group message with no person behind it (an anonymous admin, a channel posting
    in the group, or no ``from`` at all) that talks to Alfred: it deserves an answer
    saying why it cannot be handled. Automatic forwards from a linked channel do not."""
    message, chat = update.effective_message, update.effective_chat
    if message is None or chat is None or chat.type not in (Chat.GROUP, Chat.SUPERGROUP):
        return False
    if message.is_automatic_forward:
        return False
    nobody = message.from_user is None or message.sender_chat is not None
    return nobody and (
        addressed_to_bot(message, bot_id, bot_username) or (message.text or "").startswith("/")
    )


class AlfredHandlers:
    """The handlers, bound to one assistant."""

    def __init__(self, assistant: Assistant, spool: Spool | None = None) -> None:
        self.assistant = assistant
        self.dedup = UpdateDeduplicator()
        self.spool = spool

    async def _send(
        self,
        context: ContextTypes.DEFAULT_TYPE,
        chat_id: int,
        text: str,
        reply_to: int | None = None,
        topic: int | None = None,
    ) -> None:
        """Send ``text`` in parts Telegram accepts; in a forum, into the asker's ``topic``
        (a reply to a deleted message would otherwise land in the General topic)."""
        for part in split_for_telegram(text):
            try:
                await context.bot.send_message(
                    chat_id=chat_id,
                    text=part,
                    reply_to_message_id=reply_to,
                    allow_sending_without_reply=True,
                    message_thread_id=topic,
                )
            except ChatMigrated as exc:
                # The group became a supergroup before its announcement reached us: move
                # the circle now and say it there (message ids differ: no reply-to). The
                # reply goes out even if the move fails; Telegram's announcements retry it.
                try:
                    await self.assistant.chat_migrated(chat_id, exc.new_chat_id, None)
                except Exception:
                    log.exception("moving circle %s to %s failed", chat_id, exc.new_chat_id)
                chat_id, reply_to = exc.new_chat_id, None
                await context.bot.send_message(chat_id=chat_id, text=part)

    async def _refuse_anonymous(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        bot = context.bot
        message = update.effective_message
        if message is None or update.edited_message is not None:
            return
        if anonymous_and_addressed(update, bot.id, (bot.username or "alfred").lower()):
            topic = message.message_thread_id if message.is_topic_message else None
            await self._send(context, message.chat_id, ANONYMOUS_REPLY, message.message_id, topic)

    async def migrated(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A group upgraded to a supergroup: the circle follows the new chat id. Telegram
        sends this twice (in the old group, naming the new id, and in the supergroup,
        naming the old one); the move is idempotent. A failure is spooled and retried."""
        message, chat = update.effective_message, update.effective_chat
        if message is None or chat is None:
            return
        if message.migrate_to_chat_id:
            old, new = chat.id, message.migrate_to_chat_id
        elif message.migrate_from_chat_id:
            old, new = message.migrate_from_chat_id, chat.id
        else:
            return
        try:
            await self.assistant.chat_migrated(old, new, _title(chat))
        except Exception:
            log.exception("moving circle %s to %s failed; spooled for retry", old, new)
            if self.spool is not None:
                self.spool.add(update)

    async def gate(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """First handler group: drop updates seen before."""
        from telegram.ext import ApplicationHandlerStop

        if not self.dedup.first_time(update.update_id):
            raise ApplicationHandlerStop

    async def message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        bot = context.bot
        inc = to_incoming(update, bot.id, (bot.username or "alfred").lower())
        if inc is None:
            await self._refuse_anonymous(update, context)
            return
        if not inc.text.strip():
            if not inc.is_group or inc.addressed:
                await self._send(
                    context,
                    inc.chat_id,
                    NON_TEXT_REPLY,
                    inc.message_id if inc.is_group else None,
                    inc.topic_id,
                )
            return
        try:
            turn = await self.assistant.handle(inc)
        except Exception:
            log.exception("update %s failed; spooled for retry", update.update_id)
            if self.spool is not None:
                self.spool.add(update)
            if inc.addressed or not inc.is_group:
                await self._send(context, inc.chat_id, MEMORY_DOWN, topic=inc.topic_id)
            return
        if inc.kind == "edited":
            return
        for out in turn.replies:
            await self._send(
                context,
                out.chat_id,
                out.text,
                out.reply_to_message_id if inc.is_group else None,
                inc.topic_id if out.chat_id == inc.chat_id else None,
            )

    async def command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        chat = update.effective_chat
        if message is None or chat is None or message.text is None:
            return
        if update.edited_message is not None:  # an edited command was answered already
            return
        bot = context.bot
        name, _, target = message.text.split()[0].lstrip("/").partition("@")
        # "/foo@otherbot" in a group is for another bot; in a DM only Alfred reads it, and
        # answers it (as an unknown command at worst)
        other = target and target.lower() != (bot.username or "alfred").lower()
        if other and chat.type != Chat.PRIVATE:
            return
        name = name.lower()
        inc = to_incoming(update, bot.id, (bot.username or "alfred").lower())
        if inc is None:
            await self._refuse_anonymous(update, context)
            return
        _, viewer = await self.assistant.register(inc)
        parts = safe_text(message.text).split(maxsplit=1)
        text = await self.assistant.commands.answer(
            name, viewer, parts[1] if len(parts) > 1 else ""
        )
        await self._send(
            context, chat.id, text, message.message_id if inc.is_group else None, inc.topic_id
        )

    async def members(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Join/leave service messages and chat_member updates keep the circle right."""
        chat = update.effective_chat
        if chat is None or chat.type not in (Chat.GROUP, Chat.SUPERGROUP):
            return
        message = update.effective_message
        joined = list(message.new_chat_members) if message and message.new_chat_members else []
        left = [message.left_chat_member] if message and message.left_chat_member else []
        if update.chat_member is not None:
            member = update.chat_member.new_chat_member
            if member.status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
                left.append(member.user)
            elif member.status in (
                ChatMemberStatus.MEMBER,
                ChatMemberStatus.ADMINISTRATOR,
                ChatMemberStatus.OWNER,
                ChatMemberStatus.RESTRICTED,
            ):
                joined.append(member.user)
        await self.assistant.membership.members_changed(
            chat.id,
            _title(chat),
            [_sender(user) for user in joined],
            [_sender(user) for user in left],
            bot_id=context.bot.id,
        )

    async def bot_membership(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """The bot added to a group (a new circle) or removed (the circle is archived)."""
        change = update.my_chat_member
        if change is None or change.chat.type not in (Chat.GROUP, Chat.SUPERGROUP):
            return
        membership = self.assistant.membership
        title = _title(change.chat)
        status = change.new_chat_member.status
        if status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
            await membership.bot_removed(change.chat.id, title)
            return
        by = _sender(change.from_user) if change.from_user else None
        await membership.bot_added(change.chat.id, title, by)
        if change.old_chat_member.status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
            await context.bot.send_message(
                change.chat.id,
                "Hello! I'm Alfred. I'll remember what you share here for the whole group, and "
                "what each of you tells me in a private chat stays private. Mention me "
                "(@" + (context.bot.username or "alfred") + ") or reply to me to talk.",
            )

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error(
            "unhandled error in a handler: %s", type(context.error).__name__, exc_info=context.error
        )


def build_application(
    token: str,
    assistant: Assistant,
    *,
    base_url: str | None = None,
    request: BaseRequest | None = None,
    rate_limiter: BaseRateLimiter[Any] | None = None,
    spool: Spool | None = None,
    unreadable: Path | None = None,
    post_init: Callable[[Application[Any, Any, Any, Any, Any, Any]], Coroutine[Any, Any, None]]
    | None = None,
) -> Application[Any, Any, Any, Any, Any, Any]:
    """Alfred's PTB application, with its handlers, for polling, webhook or replay."""
    builder: ApplicationBuilder[Any, Any, Any, Any, Any, Any] = ApplicationBuilder().token(token)
    if base_url:
        builder = builder.base_url(base_url)
    if request is not None:
        builder = builder.request(request).get_updates_request(request)
    else:  # PTB's own default for polling (one connection), screened by ReadableUpdates
        polling = HTTPXRequest(connection_pool_size=1)
        builder = builder.get_updates_request(ReadableUpdates(polling, unreadable))
    # max_retries: PTB's default (0) raises RetryAfter instead of waiting and retrying.
    limiter = rate_limiter if rate_limiter is not None else AIORateLimiter(max_retries=RATE_RETRIES)
    builder = builder.rate_limiter(limiter)
    if post_init is not None:
        builder = builder.post_init(post_init)
    application = builder.build()
    h = AlfredHandlers(assistant, spool)
    application.add_handler(TypeHandler(Update, h.gate), group=-1)
    application.add_handler(ChatMemberHandler(h.bot_membership, ChatMemberHandler.MY_CHAT_MEMBER))
    application.add_handler(ChatMemberHandler(h.members, ChatMemberHandler.CHAT_MEMBER))
    application.add_handler(
        MessageHandler(
            filters.StatusUpdate.NEW_CHAT_MEMBERS | filters.StatusUpdate.LEFT_CHAT_MEMBER, h.members
        )
    )
    application.add_handler(MessageHandler(filters.StatusUpdate.MIGRATE, h.migrated))
    application.add_handler(MessageHandler(filters.COMMAND, h.command))
    application.add_handler(
        MessageHandler(
            (filters.UpdateType.MESSAGES | filters.UpdateType.EDITED_MESSAGE)
            & ~filters.StatusUpdate.ALL
            & ~filters.COMMAND,
            h.message,
        )
    )
    application.add_error_handler(h.on_error)
    application.bot_data["handlers"] = h
    return application
