"""An explicit statement ("remember that …", a correction) read into facts at once.

The person is waiting, so the model gets ``model_budget`` seconds (retries included); a
model that hangs, fails or reads nothing leaves the words stored as said. Days are read
on the speaker's clock, the one the reply states times on: "tomorrow", said at 02:00 on
Tuesday in Auckland, is Wednesday.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.errors import Unavailable
from memory.llm import LLM, LLMOutputError
from memory.models import Category, Role, Thread
from memory.ports import Clock
from memory.prompts.common import JournalLine, Person
from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractFactsContext
from memory.rules.person import Voice
from memory.rules.statements import as_stated
from memory.timezones import SpeakerZones

log = logging.getLogger(__name__)

#: A statement about "us" ("we always …", "our …"): in a group, the circle's (DESIGN §3).
_FIRST_PERSON_PLURAL = re.compile(r"^\W*(?:we|we're|we've|we'll|we'd|our|ours|us)\b", re.I)


@dataclass
class StatementReader:
    """Reads one explicit statement with the fast model, within a time budget."""

    llm: LLM
    clock: Clock
    #: Seconds the model may take, retries included (None: no bound).
    model_budget: float | None = None
    #: Whose clock a statement's days are read on (None: UTC).
    zones: SpeakerZones | None = None

    async def read(
        self,
        thread: Thread,
        speaker: Person,
        statement: str,
        message_id: str,
        others: Sequence[Person] = (),
    ) -> list[tuple[str, Category, int, bool]]:
        """Facts in one statement: (content, category, importance, about the circle).
        ``others`` are the circle's other members, so "our …" in a group reads as their
        names together ("Dana and Eli's rent …")."""
        now = self.clock.now()
        zone = await self.zones.zone_in(thread, speaker.id) if self.zones else None
        said_at = zone.local(now) if zone is not None else now
        ctx = ExtractFactsContext(
            thread_kind=thread.kind,
            thread_owner_id=thread.user_id,
            people=list(others) if speaker.id in {p.id for p in others} else [speaker, *others],
            now=now,
            lines=[
                JournalLine(
                    message_id=message_id,
                    role=Role.USER,
                    speaker_id=speaker.id,
                    speaker_name=speaker.name,
                    text=statement,
                    at=said_at,
                )
            ],
        )
        try:
            async with asyncio.timeout(self.model_budget):
                found = (await self.llm.run(EXTRACT_FACTS, ctx)).facts
        except (LLMOutputError, Unavailable) as exc:
            # An explicit request is stored at once even when the model cannot help.
            log.warning("hot-path extraction failed, storing the words as said: %s", exc.one_line())
            found = []
        except TimeoutError:
            log.warning(
                "hot-path extraction took over %gs, storing the words as said", self.model_budget
            )
            found = []
        out = [
            (f.content, f.category, f.importance, f.about == "circle")
            for f in found
            if f.content.strip()
        ]
        if not out and statement.strip():
            # Nothing the model (or the offline rules) could read: keep the words, in the
            # third person when they are English first person, else as said; never with
            # the speaker's name in front (that is the fact's provenance, not its text).
            # A "we …" statement is the circle's in a group, as the model's would be (in a
            # DM, partition_for keeps it the speaker's whatever it says).
            ours = _FIRST_PERSON_PLURAL.match(statement) is not None
            voice = Voice.for_speaker(speaker.name, thread.kind, ctx.people)
            out = [(as_stated(statement, voice, said_at), Category.FACT, 6, ours)]
        return out
