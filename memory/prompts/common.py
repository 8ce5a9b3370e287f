"""Pieces shared by the prompt modules: journal lines and their rendering."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memory.constants import MESSAGE_WEIGHTS
from memory.models import Role, ThreadKind


class JournalLine(BaseModel):
    """One journaled message as formation sees it."""

    message_id: str
    role: Role
    speaker_id: str | None = None
    speaker_name: str | None = None
    text: str
    at: datetime | None = None

    @property
    def weight(self) -> float:
        """How much formation should trust this line (seed 002: USER 1.0, TOOL 0.5, AGENT 0.2)."""
        return MESSAGE_WEIGHTS[self.role.value]

    def said_at(self, now: datetime) -> datetime:
        """When the line was said, or ``now`` for a line journaled without a time: what
        its "tomorrow" and "on Friday" count from, not when formation reads it."""
        return self.at or now


class Person(BaseModel):
    """A member of the conversation, by id and display name."""

    id: str
    name: str


class ConversationContext(BaseModel):
    """What every formation task knows about where the conversation happened."""

    thread_kind: ThreadKind
    thread_owner_id: str | None = None
    people: list[Person] = Field(default_factory=list)
    now: datetime
    lines: list[JournalLine]

    def name_of(self, user_id: str | None) -> str:
        for person in self.people:
            if person.id == user_id:
                return person.name
        return user_id or "someone"


def render_conversation(lines: list[JournalLine], *, max_chars: int = 24_000) -> str:
    """The journal as text, each line tagged with speaker and weight, newest kept if too long.

    A dated line also says when it was said on its speaker's clock ("said Tue 2026-01-06
    02:00 NZDT"), so a model dates "tomorrow" from the line, not from when formation
    runs (hours or a day later) nor on another person's clock."""
    rendered = []
    for line in lines:
        who = line.speaker_name or line.role.value
        said = f", said {line.at:%a %Y-%m-%d %H:%M %Z}" if line.at else ""
        rendered.append(
            f"[{line.message_id}] ({line.role.value}, weight {line.weight:.1f}{said}) "
            f"{who}: {line.text}"
        )
    text = "\n".join(rendered)
    if len(text) > max_chars:
        text = "…" + text[-max_chars:]
    return text


def render_people(people: list[Person]) -> str:
    return ", ".join(f"{p.name} (id {p.id})" for p in people) or "unknown"
