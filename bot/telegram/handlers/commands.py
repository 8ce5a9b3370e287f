"""Commands: /start, /help and /status (and /calendar, in its own module); an unknown
one is answered as such, an edited one not again, and one for another bot is left alone.
"""

from __future__ import annotations

from telegram import Chat, Update
from telegram.ext import ContextTypes

from bot.assistant import Assistant
from bot.telegram.handlers.calendar import calendar_text
from bot.telegram.sending import Replier
from bot.telegram.updates import bot_handle, to_incoming
from memory.models import ThreadKind, Viewer

UNKNOWN_COMMAND = "I don't know that command. Try /help."

HELP = """\
I'm Alfred. I remember what you tell me and use it when it helps.

• In your circle's group I learn from the conversation and answer when you mention me, \
reply to me, or say my name. What's said there is shared with the group.
• In a private chat with me, what you say stays between us: it never shows up in the \
group or in anyone else's chat.

Things you can say:
• "remember that Sam's birthday is 3 May"
• "actually, I'm not vegetarian anymore" (I'll update what I know)
• "what do you remember about me?" / "… about us?"
• "forget that I like jazz" / "forget everything about me"
• "always keep your answers short"

Commands: /start, /help, /status, /calendar"""

OFFLINE_NOTE = (
    "\n\nI'm running offline (no language model is configured): I remember, correct, "
    "forget and recall, but I can't hold a real conversation."
)


def help_text(offline: bool) -> str:
    return HELP + (OFFLINE_NOTE if offline else "")


async def start_text(assistant: Assistant, viewer: Viewer) -> str:
    hello = "Hello! I'm Alfred, an assistant that remembers — for people who share a life."
    if viewer.thread.kind is ThreadKind.GROUP:
        return (
            f"{hello} This group is a circle now: I'll learn from what you share here. "
            "Mention me or reply to me to talk. Type /help for more."
        )
    circles = await assistant.s.directory.circles_of(viewer.user_id)
    if circles:
        names = ", ".join(c.title or c.id for c in circles)
        where = f"You're in these circles with me: {names}."
    else:
        where = "You're not in a circle with me yet: add me to your family's or team's group."
    return f"{hello} What you tell me here stays private. {where} Type /help for more."


async def status_text(assistant: Assistant, viewer: Viewer) -> str:
    """What Alfred knows of this chat; counts only what is visible here."""
    s = assistant.s
    thread = viewer.thread
    lines = []
    if thread.kind is ThreadKind.GROUP and thread.circle_id:
        circle = await s.directory.circle(thread.circle_id)
        members = await s.directory.members(thread.circle_id)
        lines.append(f"Circle: {circle.title if circle and circle.title else thread.circle_id}")
        lines.append("Members I know: " + (", ".join(m.name for m in members) or "none yet"))
    else:
        circles = await s.directory.circles_of(viewer.user_id)
        lines.append(
            "Private chat. Your circles: " + (", ".join(c.title or c.id for c in circles) or "none")
        )
    facts = await s.facts.count_visible(viewer)
    reflections = len(await s.notes.visible_reflections(viewer, session_id=None))
    blobs = len(await s.notes.visible_blobs(viewer, session_id=None))
    lines.append(f"Memories usable here: {facts} facts, {reflections + blobs} notes")
    lines.append(
        "Language model: offline (deterministic rules)" if s.llm.offline else "Language model: on"
    )
    return "\n".join(lines)


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
        name = name.lower()
        inc = to_incoming(update, bot.id, bot_handle(bot))
        if inc is None:
            await self.replier.refuse_anonymous(update, context)
            return
        _, viewer = await self.assistant.register(inc)
        if name == "start":
            text = await start_text(self.assistant, viewer)
        elif name == "help":
            text = help_text(self.assistant.s.llm.offline)
        elif name == "status":
            text = await status_text(self.assistant, viewer)
        elif name == "calendar":
            text = await calendar_text(self.assistant, viewer, message.text)
        else:
            text = UNKNOWN_COMMAND
        await self.replier.send(
            context, chat.id, text, message.message_id if inc.is_group else None, inc.topic_id
        )
