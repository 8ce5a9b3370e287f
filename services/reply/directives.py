"""Standing instructions ("from now on call me Robert", "no emojis"): kept, said back in
the second person, withdrawn ("you can use emojis again") and forgotten ("forget that I
don't want emojis") on request.

An instruction is a user-scope note, always in the reply's prompt, marked as an
instruction so that recall lists it as the person's and a withdrawal finds it again, even
after consolidation merged it into a summary (the summary is then rebuilt without it). A
preferred name is also a fact, so "what's my name?" is answered by retrieval like any
other memory. Only the person who gave an instruction can withdraw it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.ids import new_id
from memory.models import (
    Category,
    Fact,
    Partition,
    Provenance,
    Reflection,
    ReflectionScope,
    Thread,
    ThreadKind,
    Viewer,
)
from memory.privacy import is_visible
from memory.prompts.common import Person
from memory.rules.intents import DirectiveIntent
from memory.rules.intents.directive import (
    directive_echo,
    directive_matches,
    learned_instruction,
)
from services.reply.deps import ReplyDeps

#: What a preferred-name fact says (one current per person: a new name replaces it).
PREFERRED_NAME = "{name}'s preferred name is {value}"
_ASKED = " asked me: "


def instruction_of(note: Reflection) -> str:
    """The instruction as the person gave it ("no emojis")."""
    return note.content.partition(_ASKED)[2] or note.content


@dataclass(frozen=True)
class Standing:
    """One instruction a person gave, as stored: the note, its topic, its key word (a
    name, a language) and the instruction's words."""

    note: Reflection
    topic: str
    value: str | None
    instruction: str


class Directives:
    """The standing instructions of the reply path."""

    def __init__(self, deps: ReplyDeps) -> None:
        self.d = deps

    async def standing(self, viewer: Viewer) -> list[Standing]:
        """Every instruction of the viewer visible here: the ones given to Alfred
        directly, and the ones background formation noted from a message Alfred did not
        act on (a group message that did not address it)."""
        uid = viewer.user_id
        if viewer.thread.kind is ThreadKind.GROUP:
            keys = [Partition.member(viewer.thread.group_circle_id, uid).key()]
        else:
            keys = [Partition.dm(uid).key()]
            keys += [Partition.member(c, uid).key() for c in sorted(viewer.circle_ids)]
        found = []
        for note in await self.d.notes.reflections_mentioning(keys, []):
            if note.partition.owner_user_id != uid or not is_visible(note.partition, viewer):
                continue
            if note.directive:
                found.append(
                    Standing(note, note.directive, note.directive_value, instruction_of(note))
                )
            elif note.scope is ReflectionScope.USER:
                learned = learned_instruction(note.content)
                if learned is not None:
                    topic, what = learned
                    if topic == "general":  # "…'s instruction to Alfred: no emojis."
                        found.append(Standing(note, topic, None, what))
                    else:  # "Alice wants to be called Al.": the note says it best
                        found.append(Standing(note, topic, what, note.content.rstrip(".")))
        return sorted(found, key=lambda s: s.note.created_at)

    async def give(
        self, thread: Thread, viewer: Viewer, speaker: Person, intent: DirectiveIntent, source: str
    ) -> str:
        """Keep (or withdraw) an instruction; the answer says what Alfred will do."""
        if intent.revoke:
            return await self.withdraw(viewer, intent)
        mine = await self.standing(viewer)
        value = intent.value or ""
        if intent.topic == "avoid" and re.search(
            r"\bcall(?:ing)?\s+me\b", intent.instruction, re.I
        ):
            named = [
                s for s in mine if s.topic == "name" and (s.value or "").lower() == value.lower()
            ]
            if named:  # "stop calling me Robert" after "call me Robert": withdrawn
                await self._drop(viewer, named, forgetting=False)
                return f"OK — I won't call you {value} any more."
        if intent.topic in ("name", "language"):  # one current value: the new one replaces
            await self._drop(viewer, [s for s in mine if s.topic == intent.topic], forgetting=False)
        await self.d.notes.add_reflection(
            Reflection(
                id=new_id(),
                content=f"{speaker.name}{_ASKED}{intent.instruction}"[:300],
                scope=ReflectionScope.USER,
                partition=thread.partition_for(viewer.user_id),
                thread_id=thread.id,
                directive=intent.topic,
                directive_value=intent.value,
                created_at=self.d.clock.now(),
            )
        )
        if intent.topic == "name" and value:
            await self.d.operations.writer.add(
                PREFERRED_NAME.format(name=speaker.name, value=value),
                thread.partition_for(viewer.user_id),
                category=Category.FACT,
                importance=8,
                provenance=Provenance(
                    thread_id=thread.id,
                    message_ids=[source],
                    speaker_id=viewer.user_id,
                    source="explicit",
                ),
            )
        return f"Understood — {directive_echo(intent)}"

    async def withdraw(self, viewer: Viewer, intent: DirectiveIntent) -> str:
        """ "You can use emojis again": the matching instructions go; history says so."""
        asked = intent.value or intent.instruction
        found = [
            s
            for s in await self.standing(viewer)
            if directive_matches(asked, s.topic, s.value, s.instruction)
        ]
        if not found:
            return (
                f"You haven't given me an instruction about {asked} that I still follow here, "
                "so nothing changes."
            )
        await self._drop(viewer, found, forgetting=False)
        listed = "; ".join(f'"{s.instruction}"' for s in found)
        return f"OK — I've dropped your instruction {listed}."

    async def forget(self, viewer: Viewer, target: str) -> str | None:
        """ "Forget that I don't want emojis": the instruction and what it was learned
        from are deleted, not kept as history. ``None`` when no instruction matches (the
        caller forgets facts instead)."""
        found = [
            s
            for s in await self.standing(viewer)
            if directive_matches(target, s.topic, s.value, s.instruction, forgetting=True)
        ]
        if not found:
            return None
        await self._drop(viewer, found, forgetting=True)
        listed = "; ".join(f'"{s.instruction}"' for s in found)
        return f"Done — I've forgotten your instruction {listed}."

    async def _drop(self, viewer: Viewer, found: list[Standing], *, forgetting: bool) -> None:
        """Remove instructions; a summary that merged one is rebuilt from the rest. A
        dropped name also ends the preferred-name fact: kept as history when withdrawn,
        deleted when forgotten."""
        if not found:
            return
        await self.d.notes.delete_reflections([s.note.id for s in found])
        for blob_id in sorted({s.note.absorbed_into for s in found if s.note.absorbed_into}):
            await self.d.notes.delete_blob(blob_id)
        names = {s.value.lower() for s in found if s.topic == "name" and s.value}
        facts = [
            f
            for f in await self._name_facts(viewer)
            if f.content.rsplit(" is ", 1)[-1].lower() in names
        ]
        if forgetting:
            phrases = [s.instruction for s in found]
            await self.d.operations.erase_facts(viewer.user_id, facts, phrases)
            return
        now = self.d.clock.now()
        for fact in facts:
            await self.d.facts.invalidate(fact.id, at=now, reason="the person withdrew it")

    async def _name_facts(self, viewer: Viewer) -> list[Fact]:
        marker = PREFERRED_NAME.format(name="", value="").strip()
        return [
            f
            for f in await self.d.facts.list_visible(viewer)
            if f.partition.owner_user_id == viewer.user_id
            and is_visible(f.partition, viewer)
            and marker in f.content
        ]
