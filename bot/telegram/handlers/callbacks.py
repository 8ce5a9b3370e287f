"""Inline-button presses (callback queries) under a delivered reminder: "Done" and
"Snooze 10 min". The press is answered (Telegram stops the button's spinner) and the
outcome is said in the chat, so everyone who saw the reminder sees what became of it.

Under a shown list, one button per item ticks it off: the press is answered with a short
notice and the pressed message is edited to the list as it now is (its remaining
buttons), so the list on screen stays true without a new message per tick."""

from __future__ import annotations

import logging

from telegram import Update
from telegram.error import BadRequest
from telegram.ext import ContextTypes

from bot.telegram.sending import Replier, keyboard
from bot.telegram.updates import sender_of
from services.messages import Incoming, split_for_telegram
from services.reply.assistant import Assistant
from services.reply.lists import CALLBACK_PREFIX as LIST_PREFIX

log = logging.getLogger(__name__)

#: Callback data of reminder buttons: ``rem:<done|snooze>:<reminder id>``.
PATTERN = r"^rem:(done|snooze):"
#: Callback data of a list's tick-off buttons: ``lst:<list id>:<item id>``.
LIST_PATTERN = rf"^{LIST_PREFIX}:"


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
        if query.data.startswith(f"{LIST_PREFIX}:"):
            ticked = await self.assistant.tick(inc, query.data)
            await query.answer(ticked.answer[:200])
            if ticked.text is not None:
                text = split_for_telegram(ticked.text)[0]
                try:
                    await context.bot.edit_message_text(
                        text,
                        chat_id=chat.id,
                        message_id=message.message_id,
                        reply_markup=keyboard(ticked.buttons),
                    )
                except BadRequest as exc:  # "message is not modified": already true
                    log.info("list message %s not edited: %s", message.message_id, exc)
            return
        button = query.data.split(":")[1]
        text = await self.assistant.press(inc, message.message_id, button)
        await query.answer(text[:200])
        await self.replier.send(context, chat.id, text, None, None)
