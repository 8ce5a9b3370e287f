"""Inline-button presses (callback queries) under a delivered reminder: "Done" and
"Snooze 10 min". The press is answered (Telegram stops the button's spinner) and the
outcome is said in the chat, so everyone who saw the reminder sees what became of it."""

from __future__ import annotations

from telegram import Update
from telegram.ext import ContextTypes

from bot.telegram.sending import Replier
from bot.telegram.updates import sender_of
from services.messages import Incoming
from services.reply.assistant import Assistant

#: Callback data of reminder buttons: ``rem:<done|snooze>:<reminder id>``.
PATTERN = r"^rem:(done|snooze):"


class Callbacks:
    def __init__(self, assistant: Assistant, replier: Replier) -> None:
        self.assistant = assistant
        self.replier = replier

    async def handle(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        message = query.message if query is not None else None
        if query is None or message is None or query.data is None:
            return
        chat = message.chat
        sender = sender_of(query.from_user)
        inc = Incoming(
            chat_id=chat.id,
            chat_type=chat.type,  # type: ignore[arg-type]
            sender=sender,
            message_id=message.message_id,
            text="",
            chat_title=chat.title,
            update_id=update.update_id,
            kind="callback",
        )
        button = query.data.split(":")[1]
        text = await self.assistant.press(inc, message.message_id, button)
        await query.answer(text[:200])
        await self.replier.send(context, chat.id, text, None, None)
