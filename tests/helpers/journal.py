"""Builders for journaled messages and the stores around them in tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from memory.ids import new_id
from memory.models import Message, Role, Thread


def message(
    thread: Thread,
    speaker: str | None,
    text: str,
    at: datetime,
    *,
    role: Role = Role.USER,
    session_id: str = "s1",
) -> Message:
    partition = thread.partition_for(speaker or (thread.user_id or "alfred"))
    return Message(
        id=new_id(),
        thread_id=thread.id,
        partition=partition,
        role=role,
        user_id=speaker,
        text=text,
        session_id=session_id,
        created_at=at,
    )


def conversation(
    thread: Thread, lines: list[tuple[str | None, str]], start: datetime, *, session_id: str = "s1"
) -> list[Message]:
    return [
        message(
            thread,
            speaker,
            text,
            start + timedelta(seconds=i),
            role=Role.USER if speaker else Role.AGENT,
            session_id=session_id,
        )
        for i, (speaker, text) in enumerate(lines)
    ]
