"""The chat model's reminder tools: ``create_reminder``, ``list_reminders`` and
``cancel_reminder``, with JSON-schema arguments.

The rules of :mod:`memory.rules.intents.remind` answer the usual phrasings before any
model runs; these tools let a real model handle the rest ("can you nudge me about the
boiler service next Friday?"). They call the same use cases as the rules
(:class:`services.reminders.Reminders`), so a tool sees and changes exactly what the
privacy rule allows in the chat it was called from. Results are plain text for the model;
nothing here raises into the reply path.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.llm import ToolCall, ToolSpec
from memory.models import Viewer
from memory.rules.intents.remind import SetReminder
from services.reminders import Reminders

CREATE_REMINDER = ToolSpec(
    name="create_reminder",
    description=(
        "Set a reminder that Alfred will send at a time. 'who' is 'me' (the speaker), 'us' "
        "(the whole group, only in a group) or a group member's first name. 'when' is the "
        "time in the person's words, e.g. 'tomorrow at 9', 'in 2 hours', 'every Thursday "
        "at 7pm', 'on weekdays at 8', 'on the 1st of each month'."
    ),
    parameters={
        "type": "object",
        "properties": {
            "who": {"type": "string", "default": "me"},
            "task": {"type": "string", "description": "what to remind of, e.g. 'call the vet'"},
            "when": {"type": "string"},
        },
        "required": ["task", "when"],
        "additionalProperties": False,
    },
)

LIST_REMINDERS = ToolSpec(
    name="list_reminders",
    description="List the reminders set in this chat (only those the speaker may see here).",
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
)

CANCEL_REMINDER = ToolSpec(
    name="cancel_reminder",
    description="Cancel the reminders of this chat whose text contains these words.",
    parameters={
        "type": "object",
        "properties": {"about": {"type": "string", "description": "words of the reminder"}},
        "required": ["about"],
        "additionalProperties": False,
    },
)

SPECS = [CREATE_REMINDER, LIST_REMINDERS, CANCEL_REMINDER]


@dataclass
class ReminderToolbox:
    """The reminder tools of one reply: the speaker, in one chat."""

    reminders: Reminders
    viewer: Viewer
    chat_id: int
    #: The message being answered ("chat:message"): what it sets is named after it.
    source: str | None = None

    @property
    def specs(self) -> list[ToolSpec]:
        return SPECS

    def handles(self, name: str) -> bool:
        return name in {s.name for s in SPECS}

    async def run(self, call: ToolCall) -> str:
        args = call.arguments
        if call.name == LIST_REMINDERS.name:
            return await self.reminders.listing(self.viewer)
        if call.name == CANCEL_REMINDER.name:
            about = str(args.get("about") or "").strip()[:200]
            if not about:
                return "error: about?"
            return await self.reminders.cancel(self.viewer, about, source=self.source)
        task = str(args.get("task") or "").strip()[:300]
        when = str(args.get("when") or "").strip()[:100]
        if not task or not when:
            return "error: create_reminder needs 'task' and 'when'"
        who = str(args.get("who") or "me").strip().lower()[:60] or "me"
        intent = SetReminder(who="us" if who == "everyone" else who, task=task, when=when)
        return await self.reminders.create(self.viewer, self.chat_id, intent, source=self.source)
