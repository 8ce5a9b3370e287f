"""A small journal for the offline task rules' tests: two people, one clock."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.models import Role, ThreadKind
from memory.prompts.common import JournalLine, Person
from memory.prompts.extract_facts import ExtractFactsContext

NOW = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)
ALICE = Person(id="u-alice", name="Alice")
BOB = Person(id="u-bob", name="Bob")
PEOPLE = [ALICE, BOB]


def line(
    text: str,
    *,
    who: Person | None = ALICE,
    role: Role = Role.USER,
    message_id: str = "m1",
) -> JournalLine:
    return JournalLine(
        message_id=message_id,
        role=role,
        speaker_id=who.id if who else None,
        speaker_name=None,
        text=text,
    )


def extract_ctx(
    lines: list[JournalLine], kind: ThreadKind = ThreadKind.GROUP
) -> ExtractFactsContext:
    return ExtractFactsContext(
        thread_kind=kind,
        thread_owner_id=ALICE.id if kind is ThreadKind.DM else None,
        people=PEOPLE if kind is ThreadKind.GROUP else [ALICE],
        now=NOW,
        lines=lines,
    )
