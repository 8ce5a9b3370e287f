"""From python-telegram-bot objects to Alfred's :class:`Incoming`.

Everything a person typed or is called by passes :func:`safe_text` here, once: a name
or a message may hold an unpaired surrogate, which PTB's own entity parser and JSON
encoders choke on.
"""

from __future__ import annotations

from telegram import Bot, Chat, Message, MessageEntity, Update, User
from telegram.constants import ChatType

from services.messages import Incoming, Sender, safe_text


def bot_handle(bot: Bot) -> str:
    """The bot's username, lower-cased, as mentions are compared."""
    return (bot.username or "alfred").lower()


def _sender(message: Message) -> Sender | None:
    user = message.from_user
    return sender_of(user) if user is not None else None


def sender_of(user: User) -> Sender:
    """A Telegram user as the services see a person."""
    return Sender(
        telegram_id=user.id,
        name=display_name(user),
        username=username(user),
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


def chat_title(chat: Chat) -> str | None:
    return safe_text(chat.title) if chat.title else None


def display_name(user: User) -> str:
    """How Alfred calls a person: a Telegram name may be empty (a buggy client, a
    deleted account) or hold an unpaired surrogate."""
    return safe_text(user.full_name or user.username or str(user.id))


def username(user: User) -> str | None:
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


def replied_bot_text(message: Message, bot_id: int) -> str | None:
    """The text of the bot's message ``message`` replies to (Telegram's
    ``reply_to_message``), or ``None`` when it is not a reply to the bot."""
    replied = message.reply_to_message
    if replied is None or replied.from_user is None or replied.from_user.id != bot_id:
        return None
    return safe_text(replied.text or replied.caption or "")


def to_incoming(update: Update, bot_id: int, bot_username: str) -> Incoming | None:
    message = update.effective_message
    chat = update.effective_chat
    if message is None or chat is None or chat.type == ChatType.CHANNEL:
        return None
    sender = _sender(message)
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
        chat_title=chat_title(chat),
        addressed=addressed_to_bot(message, bot_id, bot_username),
        update_id=update.update_id,
        kind=kind,
        topic_id=message.message_thread_id if message.is_topic_message else None,
        reply_to_bot_text=replied_bot_text(message, bot_id),
        reply_to_bot_message_id=(
            message.reply_to_message.message_id
            if message.reply_to_message is not None
            and replied_bot_text(message, bot_id) is not None
            else None
        ),
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
