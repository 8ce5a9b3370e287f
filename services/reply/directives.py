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
from memory.rules.intents.directive import directive_echo, directive_matches
from services.reply.deps import ReplyDeps

#: What a preferred-name fact says (one current per person: a new name replaces it).
PREFERRED_NAME = "{name}'s preferred name is {value}"
_ASKED = " asked me: "


def instruction_of(note: Reflection) -> str:
    """The instruction as the person gave it ("no emojis")."""
    return note.content.partition(_ASKED)[2] or note.content


class Directives:
    """The standing instructions of the reply path."""

    def __init__(self, deps: ReplyDeps) -> None:
        self.d = deps

    async def mine(self, viewer: Viewer) -> list[Reflection]:
        """The viewer's own instructions visible here, oldest first (merged ones too)."""
        uid = viewer.user_id
        if viewer.thread.kind is ThreadKind.GROUP:
            keys = [Partition.member(viewer.thread.group_circle_id, uid).key()]
        else:
            keys = [Partition.dm(uid).key()]
            keys += [Partition.member(c, uid).key() for c in sorted(viewer.circle_ids)]
        notes = await self.d.notes.reflections_mentioning(keys, [])
        own = [
            n
            for n in notes
            if n.directive and n.partition.owner_user_id == uid and is_visible(n.partition, viewer)
        ]
        return sorted(own, key=lambda n: n.created_at)

    async def give(
        self, thread: Thread, viewer: Viewer, speaker: Person, intent: DirectiveIntent, source: str
    ) -> str:
        """Keep (or withdraw) an instruction; the answer says what Alfred will do."""
        if intent.revoke:
            return await self.withdraw(viewer, intent)
        mine = await self.mine(viewer)
        value = intent.value or ""
        if intent.topic == "avoid" and intent.instruction.lower().find("call") >= 0:
            named = [
                n
                for n in mine
                if n.directive == "name" and (n.directive_value or "").lower() == value.lower()
            ]
            if named:  # "stop calling me Robert" after "call me Robert": withdrawn
                await self._drop(viewer, named, forgetting=False)
                return f"OK — I won't call you {value} any more."
        if intent.topic in ("name", "language"):  # one current value: the new one replaces
            await self._drop(
                viewer, [n for n in mine if n.directive == intent.topic], forgetting=False
            )
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
            n
            for n in await self.mine(viewer)
            if n.directive
            and directive_matches(asked, n.directive, n.directive_value, instruction_of(n))
        ]
        if not found:
            return (
                f"You haven't given me an instruction about {asked} that I still follow here, "
                "so nothing changes."
            )
        await self._drop(viewer, found, forgetting=False)
        listed = "; ".join(f'"{instruction_of(n)}"' for n in found)
        return f"OK — I've dropped your instruction {listed}."

    async def forget(self, viewer: Viewer, target: str) -> str | None:
        """ "Forget that I don't want emojis": the instruction and what it was learned
        from are deleted, not kept as history. ``None`` when no instruction matches (the
        caller forgets facts instead)."""
        found = [
            n
            for n in await self.mine(viewer)
            if n.directive
            and directive_matches(
                target, n.directive, n.directive_value, instruction_of(n), forgetting=True
            )
        ]
        if not found:
            return None
        await self._drop(viewer, found, forgetting=True)
        listed = "; ".join(f'"{instruction_of(n)}"' for n in found)
        return f"Done — I've forgotten your instruction {listed}."

    async def _drop(self, viewer: Viewer, notes: list[Reflection], *, forgetting: bool) -> None:
        """Remove instructions; a summary that merged one is rebuilt from the rest. A
        dropped name also ends the preferred-name fact: kept as history when withdrawn,
        deleted when forgotten."""
        if not notes:
            return
        await self.d.notes.delete_reflections([n.id for n in notes])
        for blob_id in sorted({n.absorbed_into for n in notes if n.absorbed_into}):
            await self.d.notes.delete_blob(blob_id)
        names = {
            n.directive_value.lower() for n in notes if n.directive == "name" and n.directive_value
        }
        facts = [
            f
            for f in await self._name_facts(viewer)
            if f.content.rsplit(" is ", 1)[-1].lower() in names
        ]
        if forgetting:
            phrases = [instruction_of(n) for n in notes]
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
