"""Commands: the answer comes from the reply service's :class:`ChatCommands`; this
handler parses the command, leaves one for another bot alone, answers an edited one
not again, and sends the text.

``/export`` is a message like "export my memories" (the reply service handles it, and it
is journaled like any request); ``/start`` in a DM, with or without a start link's token,
also delivers what waited for the person to open the chat (an export asked for in a
group while Telegram refused to let Alfred write to them)."""

from __future__ import annotations

import dataclasses

from telegram import Chat, Update
from telegram.ext import ContextTypes

from bot.telegram.sending import Replier
from bot.telegram.updates import bot_handle, to_incoming
from services.messages import safe_text
from services.reply.assistant import Assistant


class Commands:
    """The command handler of one assistant."""

    def __init__(self, assistant: Assistant, replier: Replier) -> None:
        self.assistant = assistant
        self.replier = replier

    async def handle(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
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
        other = target and target.lower() != bot_handle(bot)
        if other and chat.type != Chat.PRIVATE:
            return
        inc = to_incoming(update, bot.id, bot_handle(bot))
        if inc is None:
            await self.replier.refuse_anonymous(update, context)
            return
        if name.lower() == "export":  # a command is addressed to the bot it names
            turn = await self.assistant.handle(dataclasses.replace(inc, addressed=True))
            for out in turn.replies:
                await self.replier.send_out(context, out, None, inc.topic_id)
            for delivery in turn.private:
                await self.replier.send_private(context, delivery, inc.topic_id)
            return
        _, viewer = await self.assistant.membership.register(inc)
        parts = safe_text(message.text).split(maxsplit=1)
        argument = parts[1] if len(parts) > 1 else ""
        text = await self.assistant.commands.answer(name.lower(), viewer, argument)
        await self.replier.send(
            context, chat.id, text, message.message_id if inc.is_group else None, inc.topic_id
        )
        if name.lower() == "start":
            token = argument.strip() or None
            for out in await self.assistant.exports.waiting(viewer, token, chat.id):
                await self.replier.send_out(context, out)
