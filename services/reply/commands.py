"""The answers to Alfred's commands: /start, /help, /status and /calendar.

They read what is visible in the chat they are asked in, through the same ports as a
reply; the Telegram handler only parses the command and sends the text.
"""

from __future__ import annotations

from memory.models import ThreadKind, Viewer
from services.reply.deps import ReplyDeps

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
• "always keep your answers short" / "no emojis" (and "you can use emojis again")
• "export my memories" (I send you a file of what I remember that you can see)

Commands: /start, /help, /status, /calendar, /export"""

OFFLINE_NOTE = (
    "\n\nI'm running offline (no language model is configured): I remember, correct, "
    "forget and recall, but I can't hold a real conversation."
)


def help_text(offline: bool) -> str:
    return HELP + (OFFLINE_NOTE if offline else "")


async def start_text(deps: ReplyDeps, viewer: Viewer) -> str:
    hello = "Hello! I'm Alfred, an assistant that remembers — for people who share a life."
    if viewer.thread.kind is ThreadKind.GROUP:
        return (
            f"{hello} This group is a circle now: I'll learn from what you share here. "
            "Mention me or reply to me to talk. Type /help for more."
        )
    circles = await deps.directory.circles_of(viewer.user_id)
    if circles:
        names = ", ".join(c.title or c.id for c in circles)
        where = f"You're in these circles with me: {names}."
    else:
        where = "You're not in a circle with me yet: add me to your family's or team's group."
    return f"{hello} What you tell me here stays private. {where} Type /help for more."


async def status_text(deps: ReplyDeps, viewer: Viewer) -> str:
    """What Alfred knows of this chat; counts only what is visible here."""
    thread = viewer.thread
    lines = []
    if thread.kind is ThreadKind.GROUP and thread.circle_id:
        circle = await deps.directory.circle(thread.circle_id)
        members = await deps.directory.members(thread.circle_id)
        lines.append(f"Circle: {circle.title if circle and circle.title else thread.circle_id}")
        lines.append("Members I know: " + (", ".join(m.name for m in members) or "none yet"))
    else:
        circles = await deps.directory.circles_of(viewer.user_id)
        lines.append(
            "Private chat. Your circles: " + (", ".join(c.title or c.id for c in circles) or "none")
        )
    facts = await deps.facts.count_visible(viewer)
    reflections = len(await deps.notes.visible_reflections(viewer, session_id=None))
    blobs = len(await deps.notes.visible_blobs(viewer, session_id=None))
    lines.append(f"Memories usable here: {facts} facts, {reflections + blobs} notes")
    lines.append(
        "Language model: offline (deterministic rules)"
        if deps.llm.offline
        else "Language model: on"
    )
    return "\n".join(lines)


CALENDAR_OFF = "Calendar features are switched off here."
UNKNOWN_COMMAND = "I don't know that command. Try /help."


class ChatCommands:
    """Answers a command by name (without the slash), for the viewer who sent it."""

    def __init__(self, deps: ReplyDeps) -> None:
        self.d = deps

    async def answer(self, name: str, viewer: Viewer, argument: str) -> str:
        if name == "start":
            return await start_text(self.d, viewer)
        if name == "help":
            return help_text(self.d.llm.offline)
        if name == "status":
            return await status_text(self.d, viewer)
        if name == "calendar":
            if not self.d.flags().calendar:
                return CALENDAR_OFF
            return await self.d.calendar.command(viewer, argument)
        return UNKNOWN_COMMAND
