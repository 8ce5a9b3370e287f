"""How Alfred's answers reach Telegram: cut to the size Telegram accepts, into the
asker's forum topic, and to the new chat when a group has just become a supergroup;
quiet acknowledgements as reactions; files as documents; and what is meant for someone's
DM, with a start link in the group when Telegram refuses (they never opened a chat with
the bot)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from telegram import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InputFile,
    ReactionTypeEmoji,
    Update,
)
from telegram.error import ChatMigrated, Forbidden, TelegramError
from telegram.ext import ContextTypes

from bot.telegram.updates import anonymous_and_addressed, bot_handle
from services.messages import Outgoing, PrivateDelivery, Reaction, split_for_telegram
from services.reply.assistant import Assistant

log = logging.getLogger(__name__)

ANONYMOUS_REPLY = (
    "I can't tell who wrote this: a message sent as the group or as a channel has no "
    "person I could remember it for. Write as yourself to talk to me."
)


def keyboard(buttons: tuple[tuple[str, str], ...]) -> InlineKeyboardMarkup | None:
    """An inline keyboard of (label, callback data) buttons, one per row; None for none."""
    if not buttons:
        return None
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(label, callback_data=data)] for label, data in buttons]
    )


class Replier:
    """Sends texts for the handlers of one assistant."""

    def __init__(self, assistant: Assistant) -> None:
        self.assistant = assistant

    async def send(
        self,
        context: ContextTypes.DEFAULT_TYPE,
        chat_id: int,
        text: str,
        reply_to: int | None = None,
        topic: int | None = None,
        buttons: tuple[tuple[str, str], ...] = (),
        *,
        before_move: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Send ``text`` in parts Telegram accepts; in a forum, into the asker's ``topic``
        (a reply to a deleted message would otherwise land in the General topic).
        ``buttons`` (label, callback data) go under the last part, one per row.
        ``before_move`` runs before a refused send moves the group's circle (the turn's
        journaling, so that what it writes under the group's old id moves too)."""
        parts = split_for_telegram(text)
        for n, part in enumerate(parts):
            markup = keyboard(buttons) if n == len(parts) - 1 else None
            try:
                await context.bot.send_message(
                    chat_id=chat_id,
                    text=part,
                    reply_to_message_id=reply_to,
                    allow_sending_without_reply=True,
                    message_thread_id=topic,
                    reply_markup=markup,
                )
            except ChatMigrated as exc:
                # The group became a supergroup before its announcement reached us: move
                # the circle now and say it there (message ids differ: no reply-to). The
                # reply goes out even if the move fails; Telegram's announcements retry it.
                if before_move is not None:
                    await before_move()
                try:
                    await self.assistant.membership.group_upgraded(chat_id, exc.new_chat_id, None)
                except Exception:
                    log.exception("moving circle %s to %s failed", chat_id, exc.new_chat_id)
                chat_id, reply_to = exc.new_chat_id, None
                await context.bot.send_message(chat_id=chat_id, text=part, reply_markup=markup)

    async def send_out(
        self,
        context: ContextTypes.DEFAULT_TYPE,
        out: Outgoing,
        reply_to: int | None = None,
        topic: int | None = None,
        *,
        before_move: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Send one :class:`Outgoing`: a text, or a document with its caption."""
        if out.document is None:
            await self.send(
                context,
                out.chat_id,
                out.text,
                reply_to,
                topic,
                out.buttons,
                before_move=before_move,
            )
            return
        doc = out.document
        await context.bot.send_document(
            chat_id=out.chat_id,
            document=InputFile(doc.content, filename=doc.name),
            caption=out.text or None,
            reply_to_message_id=reply_to,
            allow_sending_without_reply=True,
            message_thread_id=topic,
        )

    async def send_private(
        self,
        context: ContextTypes.DEFAULT_TYPE,
        delivery: PrivateDelivery,
        topic: int | None = None,
    ) -> None:
        """Send ``delivery`` to the person's DM, then say in the chat it was asked in
        where it went. Refused (403: they never started the bot, or blocked it), it is
        kept for them and the notice carries a start link that delivers it."""
        try:
            for out in delivery.messages:
                await self.send_out(context, out)
        except Forbidden:
            token = await self.assistant.exports.hold(delivery)
            log.info("a %s for a DM was refused; kept for the person's start", delivery.kind)
            link = f"https://t.me/{context.bot.username}?start={token}" if token else ""
            text = delivery.refused_notice.replace("{link}", link)
        else:
            text = delivery.sent_notice
        await self.send(context, delivery.chat_id, text, delivery.reply_to_message_id, topic)

    async def react(self, context: ContextTypes.DEFAULT_TYPE, reaction: Reaction) -> None:
        """Set a reaction on a user's message (a quiet acknowledgement). What it
        acknowledges is already stored, so a chat that refuses reactions (an admin
        restricted them) costs only the acknowledgement: logged, never raised."""
        try:
            await context.bot.set_message_reaction(
                chat_id=reaction.chat_id,
                message_id=reaction.message_id,
                reaction=[ReactionTypeEmoji(reaction.emoji)],
            )
        except TelegramError as exc:
            log.info("reaction in chat %s not set: %s", reaction.chat_id, type(exc).__name__)

    async def refuse_anonymous(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Say why a message with no person behind it that talks to Alfred gets no answer."""
        bot = context.bot
        message = update.effective_message
        if message is None or update.edited_message is not None:
            return
        if anonymous_and_addressed(update, bot.id, bot_handle(bot)):
            topic = message.message_thread_id if message.is_topic_message else None
            await self.send(context, message.chat_id, ANONYMOUS_REPLY, message.message_id, topic)
