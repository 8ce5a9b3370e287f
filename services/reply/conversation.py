"""A reply from the chat model: the memory that enters its prompt, its tools, the history.

Every memory read goes through the viewer (the person in this thread) and is checked
again with :func:`memory.privacy.is_visible` after the query: what another member said
in their DM never reaches a prompt built for a different thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from memory.context import fact_block, owner_note
from memory.heuristics import dynamic_limit
from memory.llm import PromptMessage, ToolCall
from memory.models import Role, Thread, ThreadKind, Viewer
from memory.privacy import is_visible
from memory.prompts.common import Person
from memory.prompts.reply import REPLY, SEARCH_MEMORY, CitedMemory, ReplyContext, ReplyRequest
from memory.rules.addressing import searched_text
from memory.rules.partners import mentions_plan, named_members
from memory.search.results import ScoredFact
from services.messages import Incoming
from services.reminder_tools import ReminderToolbox
from services.reply.deps import ReplyDeps
from services.reply.journaling import IncomingEntry
from services.reply.lists import Lists, ListTools
from services.reply.lookups import TurnLookups
from services.timezones import states_time

HISTORY_TURNS = 12


@dataclass
class MemoryContext:
    """The memory that would enter the prompt for one message."""

    always: str = ""
    facts_block: str = ""
    cited: list[CitedMemory] = field(default_factory=list)
    retrieved: bool = False
    scored: list[ScoredFact] = field(default_factory=list)


@dataclass
class ChatAnswer:
    text: str
    retrieved: bool
    #: A list tool ran: the message was a list request (handled, never learned from).
    used_lists: bool = False
    #: Tick-off buttons of the list of this thread a list tool last showed.
    buttons: tuple[tuple[str, str], ...] = ()


class Conversation:
    """Builds the chat model's context and runs it, tools included."""

    def __init__(self, deps: ReplyDeps) -> None:
        self.d = deps

    async def names(
        self, viewer: Viewer, lookups: TurnLookups | None = None
    ) -> Callable[[str], str]:
        lookups = lookups or TurnLookups(self.d.directory)
        ids = [viewer.user_id]
        for circle_id in sorted(viewer.circle_ids):
            circle = await lookups.circle(circle_id)
            if circle:
                ids += circle.member_ids
        users = await lookups.users(ids)
        return lambda uid: users[uid].name if uid in users else "someone"

    async def people(
        self, thread: Thread, viewer: Viewer, lookups: TurnLookups | None = None
    ) -> list[Person]:
        lookups = lookups or TurnLookups(self.d.directory)
        if thread.circle_id:
            members = await lookups.members(thread.circle_id)
            return [Person(id=u.id, name=u.name) for u in members]
        user = (await lookups.users([viewer.user_id])).get(viewer.user_id)
        return [Person(id=viewer.user_id, name=user.name if user else viewer.user_id)]

    async def context_for(
        self,
        viewer: Viewer,
        text: str,
        session_id: str | None,
        *,
        bypass_heuristic: bool = False,
        lookups: TurnLookups | None = None,
    ) -> MemoryContext:
        """The memory that would enter the prompt for ``text``, read as ``viewer``."""
        name_of = await self.names(viewer, lookups)
        flags = self.d.flags()
        if not (flags.on_for(viewer) and flags.retrieval):
            return MemoryContext()
        keep = None if flags.cross_partner else (lambda owner: flags.shows_owner(owner, viewer))
        always = await self.d.always.block(viewer, session_id, name_of, keep=keep)
        text = searched_text(text)
        about = await self._about(viewer, text, lookups)
        if bypass_heuristic:
            result = await self.d.retriever.search(
                viewer, text, limit=dynamic_limit(text), about=about
            )
        else:
            result = await self.d.retriever.for_message(viewer, text, about=about)
            self.d.observer.record_retrieval(result)
        facts = [
            f
            for f in result.facts
            if is_visible(f.fact.partition, viewer)
            and flags.shows_owner(f.fact.partition.owner_user_id, viewer)
        ]
        cited = [
            CitedMemory(
                content=f.fact.content,
                category=f.fact.category,
                from_name=owner_note(f.fact.partition.owner_user_id, viewer, name_of)
                .removeprefix(" (from ")
                .removesuffix(")")
                or None,
                owner_id=f.fact.partition.owner_user_id,
                said=f.fact.said,
            )
            for f in facts
        ]
        return MemoryContext(
            always=always,
            facts_block=fact_block(facts, viewer, name_of),
            cited=cited,
            retrieved=result.retrieved,
            scored=list(facts),
        )

    async def _about(
        self, viewer: Viewer, text: str, lookups: TurnLookups | None
    ) -> dict[str, str]:
        """The partners a group message names, by user id (their memories visible here
        may help: seed 004 §18.2). In a DM nobody else's memories are visible, so no
        one is looked up there."""
        thread = viewer.thread
        if thread.kind is not ThreadKind.GROUP or thread.circle_id is None:
            return {}
        if not self.d.flags().cross_partner:
            return {}
        if not mentions_plan(text):
            # Only a plan (a meal, a gift, a trip) asks for what a partner shared; a name
            # alone ("Dana asked where the keys are") must not pull up her other memories.
            return {}
        people = await self.people(thread, viewer, lookups)
        return {p.id: p.name for p in named_members(text, people, viewer.user_id)}

    async def answer(
        self,
        inc: Incoming,
        thread: Thread,
        viewer: Viewer,
        speaker: Person,
        session_id: str,
        *,
        journal: IncomingEntry | None = None,
    ) -> ChatAnswer:
        """The chat model's reply to ``inc``, with a pending clarification appended.

        ``journal`` (the message's journal writes, when not yet sent) is sent as the
        model is asked: every read of the turn is done, and the database writes while
        the model thinks instead of before the reads the reply waits on."""
        d = self.d
        flags = d.flags()
        memory_on = flags.on_for(viewer)
        question = (
            await d.operations.question_for(viewer, after_message=inc.message_id)
            if memory_on and flags.conflicts
            else None
        )
        lookups = TurnLookups(d.directory)
        memory = await self.context_for(viewer, inc.text, session_id, lookups=lookups)
        zone = await d.time_zones.zone_for(viewer) if d.time_zones is not None else None
        ctx = ReplyContext(
            speaker_id=viewer.user_id,
            speaker_name=speaker.name,
            thread_kind=thread.kind,
            people=await self.people(thread, viewer, lookups),
            text=inc.text,
            now=d.clock.now(),
            time_zone=zone.name if zone is not None else "UTC",
            always=memory.always,
            facts_block=memory.facts_block,
            memories=memory.cited,
            retrieved=memory.retrieved,
        )
        history = await self._history(thread, inc, lookups)
        # MEMORY_CALENDAR off: no tools, and no connection lookup on every reply either.
        calendar = await d.calendar.toolbox(viewer, enabled=flags.calendar)
        calendar_specs = calendar.specs
        reading = memory_on and flags.retrieval
        source = inc.journal_id
        lists = ListTools(Lists(d.lists, d.clock), thread, viewer, source)
        reminding = (
            ReminderToolbox(d.reminders, viewer, inc.chat_id, source)
            if d.reminders is not None
            else None
        )
        tools = [
            *([SEARCH_MEMORY] if reading else []),
            *calendar_specs,
            *lists.specs,
            *(reminding.specs if reminding else []),
        ]

        async def run_tool(call: ToolCall) -> str:
            if calendar_specs and calendar.handles(call.name):
                return await calendar.run(call)
            if lists.handles(call.name):
                return await lists.run(call)
            if reminding is not None and reminding.handles(call.name):
                return await reminding.run(call)
            if call.name != SEARCH_MEMORY.name or not reading:
                return f"error: unknown tool {call.name}"
            return await self._search_tool(viewer, call, lookups)

        request = ReplyRequest(reply=ctx, history=history)
        if journal is not None:
            await journal.sent()
        outcome = await d.llm.chat(REPLY, request, tools, run_tool)
        text = outcome.text.strip() or "…"
        if zone is not None and d.time_zones is not None and states_time(text):
            # The first time a guessed zone (the circle's, UTC) is used, say which.
            note = await d.time_zones.fallback_note(viewer, zone)
            if note:
                text = f"{text}\n\n{note}"
        if question:
            text = f"{text}\n\n{question}"
        return ChatAnswer(text, memory.retrieved, used_lists=lists.used, buttons=lists.buttons)

    async def _search_tool(self, viewer: Viewer, call: ToolCall, lookups: TurnLookups) -> str:
        """The ``search_memory`` tool: the same privacy filter as the reply's own search."""
        flags = self.d.flags()
        query = str(call.arguments.get("query", ""))[:500]
        limit = int(call.arguments.get("limit", 8) or 8)
        about = await self._about(viewer, query, lookups)
        found = await self.d.retriever.search(
            viewer, query, limit=max(1, min(limit, 15)), about=about
        )
        name_of = await self.names(viewer, lookups)
        lines = [
            f"- {f.fact.content}{owner_note(f.fact.partition.owner_user_id, viewer, name_of)}"
            for f in found.facts
            if is_visible(f.fact.partition, viewer)
            and flags.shows_owner(f.fact.partition.owner_user_id, viewer)
        ]
        return "\n".join(lines) or "No matching memories."

    async def _history(
        self, thread: Thread, inc: Incoming, lookups: TurnLookups
    ) -> list[PromptMessage]:
        recent = await self.d.journal.recent(thread.id, limit=HISTORY_TURNS + 1)
        current = inc.journal_id
        users = await lookups.users(m.user_id for m in recent if m.user_id)
        history = []
        for m in recent:
            if m.id == current:
                continue
            if m.role is Role.AGENT:
                history.append(PromptMessage(role="assistant", content=m.text))
            else:
                name = users[m.user_id].name if m.user_id in users else None
                history.append(PromptMessage(role="user", content=m.text, name=name))
        return history[-HISTORY_TURNS:]
