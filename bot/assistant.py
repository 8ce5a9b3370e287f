"""The reply path: from one incoming message to Alfred's answer, with memory.

For every message: register the circle, the person and the thread; journal the message;
then, if Alfred is addressed (always in a DM; in a group when mentioned, replied to or
named): answer a pending question, handle an explicit memory request (remember, correct,
forget, recall, a standing directive), or reply with the chat model, given the
always-in-context notes and the facts retrieval found, plus a ``search_memory`` tool
that searches with the same privacy filter. Last, formation is triggered.

Every memory read goes through the viewer (the person in this thread); what another
member said in their DM never reaches a prompt built for a different thread.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from bot.incoming import Incoming, Outgoing, split_for_telegram
from bot.turn_lookups import TurnLookups
from integrations.mongo.directory import FORGET_CHOICE, SessionTick
from memory.context import fact_block, owner_note
from memory.errors import AlfredError, Unavailable
from memory.flags import MemoryFlags
from memory.ids import new_id
from memory.llm import PromptMessage, ToolCall
from memory.models import (
    Message,
    Partition,
    Reflection,
    ReflectionScope,
    Role,
    Thread,
    ThreadKind,
    Viewer,
)
from memory.operations import (
    FORGET_CHOICES_MAX,
    FORGET_WHICH_REDACTED,
    MemoryOperations,
    OperationResult,
    choice_answer,
)
from memory.privacy import is_visible
from memory.prompts.common import Person
from memory.prompts.reply import REPLY, SEARCH_MEMORY, CitedMemory, ReplyContext, ReplyRequest
from memory.retrieval import ScoredFact
from memory.rules.intents import (
    CorrectionIntent,
    DirectiveIntent,
    ForgetAllIntent,
    ForgetIntent,
    RecallIntent,
    RememberIntent,
    detect_ambiguous_reference,
    detect_intent,
    strip_addressing,
)
from runtime.container import Services
from runtime.metrics import record_retrieval

log = logging.getLogger(__name__)

AfterMessage = Callable[[str], Awaitable[None]]

LLM_DOWN = (
    "Sorry — I can't think right now: my language model isn't answering. I've kept your "
    "message and will learn from it when I'm back."
)
MEMORY_DOWN = "Sorry — my memory is unavailable right now. Please try again in a minute."
CONFIRM_ERASE = (
    "This will erase everything I remember about you, in every chat, for good. "
    'If you\'re sure, reply "yes, erase everything".'
)
CONFIRM_ERASE_US = (
    "This will erase everything this circle shares with me (not what each of you told me "
    'privately). If you\'re sure, reply "yes, erase everything".'
)
NOT_STORING = "Memory is switched off for new things here, so I'm not storing that."
NOT_RECALLING = "Memory recall is switched off here right now."
ERASE_CONFIRMED = re.compile(r"^\s*yes\b.*\b(erase|delete|forget)\b", re.I)
HISTORY_TURNS = 12
#: How long a chat's registration (user, circle, membership, thread) is trusted.
REGISTRATION_TTL_S = 300


@dataclass
class Turn:
    """What one incoming message led to (for replay probes, logs and tests)."""

    replies: list[Outgoing]
    retrieved: bool = False
    addressed: bool = False


class Assistant:
    """Alfred's behaviour, independent of Telegram."""

    def __init__(
        self,
        services: Services,
        *,
        bot_username: str = "alfred",
        after_message: AfterMessage | None = None,
    ) -> None:
        self.s = services
        self.bot_username = bot_username.lstrip("@").lower()
        self.after_message = after_message
        self._registered: dict[tuple[object, ...], tuple[Thread, datetime]] = {}
        self.ops = MemoryOperations(
            facts=services.facts,
            writer=services.writer,
            notes=services.notes,
            journal=services.journal,
            llm=services.llm,
            embedder=services.embedder,
            clock=services.clock,
            mirror=services.mirror,
        )

    # --- a group upgraded to a supergroup ---------------------------------------------

    async def chat_migrated(self, old_chat_id: int, new_chat_id: int, title: str | None) -> int:
        """Move the group's circle to the supergroup's id; returns the documents moved
        (0 when it had moved already: Telegram announces the upgrade more than once)."""
        from integrations.circle_migration import move_circle

        move = await move_circle(self.s, old_chat_id, new_chat_id, title)
        self._registered.clear()  # cached threads of the old chat id are gone
        allowed = self.flags.allowed_circles
        if allowed and move.old_id in allowed and move.new_id not in allowed:
            log.warning(
                "MEMORY_ALLOWED_CIRCLES lists %s, which is now supergroup %s: add the new id "
                "to keep memory on there",
                move.old_id,
                move.new_id,
            )
        return sum(move.moved.values())

    # --- registration ---------------------------------------------------------------

    async def register(self, inc: Incoming) -> tuple[Thread, Viewer]:
        """The thread and viewer of a message, creating circle, user and thread as needed.

        Registration is remembered for a few minutes per (chat, sender, name, title), so a
        busy chat costs one query here (the viewer's circles, always read fresh: a member
        who left stops seeing the circle at once). A sender whose viewer lacks the group's
        circle is registered again, since writing in the group makes them a member."""
        key = (inc.chat_id, inc.sender.telegram_id, inc.sender.name, inc.chat_title)
        now = self.s.clock.now()
        cached = self._registered.get(key)
        if cached is not None and (now - cached[1]).total_seconds() < REGISTRATION_TTL_S:
            thread = cached[0]
            viewer = await self.s.directory.viewer(str(inc.sender.telegram_id), thread)
            if thread.circle_id is None or thread.circle_id in viewer.circle_ids:
                return thread, viewer
        thread, viewer = await self._register(inc, now)
        self._registered[key] = (thread, now)
        if len(self._registered) > 10_000:
            self._registered.pop(next(iter(self._registered)))
        return thread, viewer

    async def _register(self, inc: Incoming, now: datetime) -> tuple[Thread, Viewer]:
        d = self.s.directory
        user = await d.upsert_user(
            inc.sender.telegram_id, inc.sender.name, inc.sender.username, now
        )
        if inc.is_group:
            circle = await d.upsert_circle(inc.chat_id, inc.chat_title, now)
            await d.add_member(circle.id, user.id)
            thread = await d.thread(circle.id)
            assert thread is not None
        else:
            thread = await d.dm_thread(user.id, inc.chat_id, now)
        return thread, await d.viewer(user.id, thread)

    async def names(
        self, viewer: Viewer, lookups: TurnLookups | None = None
    ) -> Callable[[str], str]:
        lookups = lookups or TurnLookups(self.s.directory)
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
        lookups = lookups or TurnLookups(self.s.directory)
        if thread.circle_id:
            members = await lookups.members(thread.circle_id)
            return [Person(id=u.id, name=u.name) for u in members]
        user = (await lookups.users([viewer.user_id])).get(viewer.user_id)
        return [Person(id=viewer.user_id, name=user.name if user else viewer.user_id)]

    # --- the path -------------------------------------------------------------------------

    async def handle(self, inc: Incoming) -> Turn:
        """Journal, learn, and (when addressed) answer one message. Never raises for a
        dependency that is down: it answers with an apology instead."""
        try:
            return await self._handle(inc)
        except Unavailable as exc:
            log.warning("reply path degraded: %s", exc.component)
            text = LLM_DOWN if exc.component == "llm" else MEMORY_DOWN
            addressed = inc.addressed or not inc.is_group
            return Turn([Outgoing(inc.chat_id, text, inc.message_id)] if addressed else [])

    async def _handle(self, inc: Incoming) -> Turn:
        thread, viewer = await self.register(inc)
        speaker = Person(id=viewer.user_id, name=inc.sender.name)
        intent = detect_intent(inc.text)
        stored_text = inc.text
        if isinstance(intent, ForgetIntent | ForgetAllIntent):
            stored_text = "[a request to forget something]"  # never keep what is being forgotten
        tick, new = await self._journal(inc, thread, viewer, stored_text, Role.USER)
        session_id = tick.session_id
        if not new:  # a redelivered update: already journaled, already answered
            return Turn([], addressed=False)
        if inc.kind == "edited":  # an edit is learned from, not answered a second time
            await self._after(thread)
            return Turn([], addressed=False)
        addressed = not inc.is_group or inc.addressed or self._names_alfred(inc.text)
        if not addressed and viewer.user_id in tick.choice_pending_for:
            # Asked "which should I forget?" in the group: a bare "2" answers it; anything
            # else they say lets the question lapse.
            if choice_answer(inc.text, FORGET_CHOICES_MAX) is not None:
                addressed = True
            else:
                await self.s.directory.pop_pending_erase(thread.id, viewer.user_id)
        if not addressed:
            await self._after(thread)
            return Turn([], addressed=False)
        erase_pending = viewer.user_id in tick.erase_pending_for
        turn = await self._respond(
            inc, thread, viewer, speaker, intent, session_id, erase_pending=erase_pending
        )
        if thread.kind is ThreadKind.DM and self.flags.calendar:
            from integrations.calendar import take_revoked_notice

            notice = await take_revoked_notice(self.s, viewer.user_id)
            if notice is not None:
                turn.replies.append(Outgoing(inc.chat_id, notice))
        for out in turn.replies:
            await self._journal_reply(thread, viewer, out)
        await self._after(thread)
        turn.addressed = True
        return turn

    def _names_alfred(self, text: str) -> bool:
        return re.search(rf"\b(alfred|@?{re.escape(self.bot_username)})\b", text, re.I) is not None

    async def _journal(
        self, inc: Incoming, thread: Thread, viewer: Viewer, text: str, role: Role
    ) -> tuple[SessionTick, bool]:
        now = self.s.clock.now()
        tick = await self.s.directory.touch(thread.id, now, tokens=max(1, len(text) // 4))
        suffix = f":edit:{inc.update_id}" if inc.kind == "edited" else ""
        message = Message(
            id=f"{inc.chat_id}:{inc.message_id}{suffix}",
            thread_id=thread.id,
            partition=thread.partition_for(viewer.user_id),
            role=role,
            user_id=viewer.user_id,
            text=text,
            telegram_message_id=inc.message_id,
            session_id=tick.session_id,
            created_at=now,
        )
        return tick, await self.s.journal.append(message)

    async def _journal_reply(self, thread: Thread, viewer: Viewer, out: Outgoing) -> None:
        """Alfred's own words are journaled too (weighted 0.2 in formation), in the partition
        of the thread and the person it answered."""
        message = Message(
            id=str(out.meta.get("journal_id") or f"{out.chat_id}:a:{new_id()}"),
            thread_id=thread.id,
            partition=thread.partition_for(viewer.user_id),
            role=Role.AGENT,
            user_id=None,
            text=str(out.meta.get("journal_text", out.text)),
            created_at=self.s.clock.now(),
        )
        await self.s.journal.append(message)

    @property
    def flags(self) -> MemoryFlags:
        return self.s.settings.flags()

    async def _after(self, thread: Thread) -> None:
        if self.after_message is None or not (self.flags.enabled and self.flags.extraction):
            return
        try:
            await self.after_message(thread.id)
        except AlfredError as exc:  # formation is best effort: the outbox keeps the request
            log.warning("formation trigger failed: %s", exc.one_line())

    async def _respond(
        self,
        inc: Incoming,
        thread: Thread,
        viewer: Viewer,
        speaker: Person,
        intent: object,
        session_id: str,
        *,
        erase_pending: bool = True,
    ) -> Turn:
        def say(text: str, **meta: object) -> Turn:
            return Turn(
                [
                    Outgoing(inc.chat_id, part, inc.message_id, dict(meta))
                    for part in split_for_telegram(text)
                ]
            )

        pending_erase = (
            await self.s.directory.pop_pending_erase(thread.id, viewer.user_id)
            if erase_pending
            else None
        )
        if pending_erase is not None and pending_erase.get("target") == FORGET_CHOICE:
            chosen = await self._forget_chosen(viewer, pending_erase, inc.text)
            if chosen is not None:
                return say(chosen)
            # not an answer: the question lapses and the message is handled as any other
        elif pending_erase is not None and ERASE_CONFIRMED.match(strip_addressing(inc.text)):
            return say(await self._erase(viewer, str(pending_erase.get("target", "me"))))

        flags = self.flags
        memory_on = flags.on_for(viewer)
        if memory_on and flags.conflicts:
            answered = await self.ops.answer(viewer, inc.text)
            if answered is not None:
                return say(answered.text)

        if isinstance(intent, ForgetAllIntent):
            if intent.target == "us" and thread.kind is not ThreadKind.GROUP:
                return say("Circle memories can only be erased from the circle's group.")
            await self.s.directory.set_pending_erase(
                thread.id, viewer.user_id, intent.target, self.s.clock.now()
            )
            return say(CONFIRM_ERASE if intent.target == "me" else CONFIRM_ERASE_US)
        if isinstance(intent, ForgetIntent):
            target = intent.target or await self._previous_text(thread, viewer)
            if not target:
                return say('What should I forget? Tell me, e.g. "forget that I like jazz".')
            result = await self.ops.forget(viewer, target)
            if result.choices:
                return await self._ask_which(inc, thread, viewer, result)
            return say(result.text)
        # Forgetting works whatever the flags say: it is a person's right over their data.
        storing = isinstance(intent, RememberIntent | CorrectionIntent | DirectiveIntent)
        if storing and not (memory_on and flags.extraction):
            return say(NOT_STORING)
        if isinstance(intent, RecallIntent):
            if not (memory_on and flags.retrieval):
                return say(NOT_RECALLING)
            return say(await self._recall(viewer, intent.target))
        if isinstance(intent, RememberIntent):
            reference = detect_ambiguous_reference(intent.payload, thread.kind)
            if reference is not None:
                return say(
                    f'Just to be sure — when you say "{reference}", whose do you mean? '
                    'Tell me again with a name (e.g. "remember that my mom\'s birthday is …").'
                )
            result = await self.ops.remember(
                thread, speaker, intent.payload, f"{inc.chat_id}:{inc.message_id}"
            )
            return say(result.text)
        if isinstance(intent, CorrectionIntent):
            result = await self.ops.correct(
                viewer, speaker, intent.statement, intent.negated, f"{inc.chat_id}:{inc.message_id}"
            )
            return say(result.text)
        if isinstance(intent, DirectiveIntent):
            await self._directive(thread, viewer, intent)
            return say(f"Understood — I'll {self._directive_echo(intent)}.")
        if thread.kind is ThreadKind.GROUP:
            reference = detect_ambiguous_reference(inc.text, thread.kind)
            if reference is not None and not inc.text.rstrip().endswith("?"):
                return say(f'Just to be sure — when you say "{reference}", whose do you mean?')
        return await self._chat(inc, thread, viewer, speaker, session_id)

    async def _ask_which(
        self, inc: Incoming, thread: Thread, viewer: Viewer, result: OperationResult
    ) -> Turn:
        """Ask which of several memories to forget. The choice waits with the erase
        confirmations (the thread's pending entry for this person, so it survives a
        restart): fact ids and the ids the question is journaled under, never the text."""
        parts = split_for_telegram(result.text)
        question = new_id()
        ids = [f"{inc.chat_id}:a:{question}:{n}" for n in range(len(parts))]
        await self.s.directory.set_pending_erase(
            thread.id,
            viewer.user_id,
            FORGET_CHOICE,
            self.s.clock.now(),
            {"choices": result.choices, "question_ids": ids},
        )
        return Turn(
            [
                Outgoing(inc.chat_id, part, inc.message_id, {"journal_id": journal_id})
                for part, journal_id in zip(parts, ids, strict=True)
            ]
        )

    async def _forget_chosen(
        self, viewer: Viewer, pending: dict[str, object], text: str
    ) -> str | None:
        """Answer a "which should I forget?" question, or ``None`` if ``text`` is not an
        answer. Once answered, the question (which quoted the memories) is redacted in the
        journal, as the request was: after a forget its words are nowhere."""
        raw = pending.get("choices")
        choices = [[str(i) for i in group] for group in raw] if isinstance(raw, list) else []
        result = await self.ops.forget_chosen(viewer, choices, text)
        if result is None:
            return None
        ids = pending.get("question_ids")
        if isinstance(ids, list):
            await self.s.journal.redact([str(i) for i in ids], FORGET_WHICH_REDACTED)
        return result.text

    async def _previous_text(self, thread: Thread, viewer: Viewer) -> str | None:
        recent = await self.s.journal.recent(thread.id, limit=10)
        mine = [m for m in recent if m.user_id == viewer.user_id and m.role is Role.USER]
        return mine[-2].text if len(mine) >= 2 else None

    async def _recall(self, viewer: Viewer, target: str) -> str:
        facts = [
            f
            for f in await self.s.facts.list_visible(viewer, limit=200)
            if is_visible(f.partition, viewer)
            and (
                f.partition.owner_user_id == viewer.user_id
                if target == "me"
                else f.partition.owner_user_id is None
            )
        ]
        if not facts:
            who = "you" if target == "me" else "this circle"
            return f"I don't remember anything about {who} here yet."
        head = (
            "Here's what I remember about you here:"
            if target == "me"
            else ("Here's what I remember about all of you:")
        )
        return head + "\n" + "\n".join(f"- {f.content}" for f in facts[:30])

    async def _erase(self, viewer: Viewer, target: str) -> str:
        if target == "us" and viewer.thread.circle_id:
            circle_level = [
                f
                for f in await self.s.facts.list_visible(viewer, include_history=True)
                if f.partition == Partition.circle(viewer.thread.circle_id)
            ]
            removed = await self.ops.erase_facts(viewer.user_id, circle_level, [])
            return f"Done — I've erased {removed['facts']} shared memories of this circle."
        counts = await self.ops.forget_everything(viewer.user_id)
        from integrations.calendar import forget_calendar_user

        await forget_calendar_user(self.s, viewer.user_id)
        await self.s.directory.delete_user(viewer.user_id)
        self._registered.clear()
        return (
            f"Done — I've erased everything about you ({counts.get('facts', 0)} memories, "
            f"{counts.get('messages', 0)} messages). If you write again, I'll start fresh."
        )

    async def _directive(self, thread: Thread, viewer: Viewer, intent: DirectiveIntent) -> None:
        reflection = Reflection(
            id=new_id(),
            content=intent.instruction[:300],
            scope=ReflectionScope.USER,
            partition=thread.partition_for(viewer.user_id),
            thread_id=thread.id,
            created_at=self.s.clock.now(),
        )
        await self.s.notes.add_reflection(reflection)

    @staticmethod
    def _directive_echo(intent: DirectiveIntent) -> str:
        text = intent.instruction.strip().rstrip(".!")
        text = re.sub(r"^(please\s+)?", "", text, flags=re.I)
        text = re.sub(r"\byour\b", "my", text, flags=re.I)
        return text[0].lower() + text[1:] if text else "do that"

    # --- the chat model ------------------------------------------------------------------

    async def context_for(
        self,
        viewer: Viewer,
        text: str,
        session_id: str | None,
        *,
        bypass_heuristic: bool = False,
        lookups: TurnLookups | None = None,
    ) -> tuple[str, str, list[CitedMemory], bool, list[ScoredFact]]:
        """The memory that would enter the prompt: (always block, facts block, cited facts,
        whether retrieval ran, scored facts)."""
        name_of = await self.names(viewer, lookups)
        flags = self.flags
        if not (flags.on_for(viewer) and flags.retrieval):
            return "", "", [], False, []
        keep = None if flags.cross_partner else (lambda owner: flags.shows_owner(owner, viewer))
        always = await self.s.always.block(viewer, session_id, name_of, keep=keep)
        if bypass_heuristic:
            from memory.heuristics import dynamic_limit

            result = await self.s.retriever.search(viewer, text, limit=dynamic_limit(text))
        else:
            result = await self.s.retriever.for_message(viewer, text)
            record_retrieval(result)
        facts = [
            f
            for f in result.facts
            if is_visible(f.fact.partition, viewer)
            and flags.shows_owner(f.fact.partition.owner_user_id, viewer)
        ]
        block = fact_block(facts, viewer, name_of)
        cited = [
            CitedMemory(
                content=f.fact.content,
                category=f.fact.category,
                from_name=owner_note(f.fact.partition.owner_user_id, viewer, name_of)
                .removeprefix(" (from ")
                .removesuffix(")")
                or None,
            )
            for f in facts
        ]
        return always, block, cited, result.retrieved, list(facts)

    async def _chat(
        self, inc: Incoming, thread: Thread, viewer: Viewer, speaker: Person, session_id: str
    ) -> Turn:
        flags = self.flags
        memory_on = flags.on_for(viewer)
        question = await self.ops.question_for(viewer) if memory_on and flags.conflicts else None
        lookups = TurnLookups(self.s.directory)
        always, block, cited, retrieved, _ = await self.context_for(
            viewer, inc.text, session_id, lookups=lookups
        )
        ctx = ReplyContext(
            speaker_id=viewer.user_id,
            speaker_name=speaker.name,
            thread_kind=thread.kind,
            people=await self.people(thread, viewer, lookups),
            text=inc.text,
            now=self.s.clock.now(),
            always=always,
            facts_block=block,
            memories=cited,
            retrieved=retrieved,
        )
        history = await self._history(thread, inc, lookups)
        from integrations.calendar import CalendarTools

        # MEMORY_CALENDAR off: no tools, and no connection lookup on every reply either.
        calendar = (
            await CalendarTools.for_viewer(self.s, viewer)
            if flags.calendar
            else CalendarTools(self.s, viewer)
        )
        calendar_specs = calendar.specs
        reading = memory_on and flags.retrieval
        tools = [*([SEARCH_MEMORY] if reading else []), *calendar_specs]

        async def run_tool(call: ToolCall) -> str:
            if calendar_specs and calendar.handles(call.name):
                return await calendar.run(call)
            if call.name != SEARCH_MEMORY.name or not reading:
                return f"error: unknown tool {call.name}"
            query = str(call.arguments.get("query", ""))[:500]
            limit = int(call.arguments.get("limit", 8) or 8)
            found = await self.s.retriever.search(viewer, query, limit=max(1, min(limit, 15)))
            name_of = await self.names(viewer, lookups)
            lines = [
                f"- {f.fact.content}{owner_note(f.fact.partition.owner_user_id, viewer, name_of)}"
                for f in found.facts
                if is_visible(f.fact.partition, viewer)
                and flags.shows_owner(f.fact.partition.owner_user_id, viewer)
            ]
            return "\n".join(lines) or "No matching memories."

        request = ReplyRequest(reply=ctx, history=history)
        outcome = await self.s.llm.chat(REPLY, request, tools, run_tool)
        text = outcome.text.strip() or "…"
        if question:
            text = f"{text}\n\n{question}"
        return Turn(
            [Outgoing(inc.chat_id, part, inc.message_id) for part in split_for_telegram(text)],
            retrieved=retrieved,
        )

    async def _history(
        self, thread: Thread, inc: Incoming, lookups: TurnLookups
    ) -> list[PromptMessage]:
        recent = await self.s.journal.recent(thread.id, limit=HISTORY_TURNS + 1)
        current = f"{inc.chat_id}:{inc.message_id}"
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
