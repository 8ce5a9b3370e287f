"""Background memory formation: journal → facts → decisions → reflections (≤ 3 LLM calls).

A formation takes the oldest unformed messages of one thread (a *batch*), and:

1. asks the fast model for atomic facts (no memory context);
2. compares each new fact with similar current facts of the same partition (cosine ≥
   0.7, or the same single-valued slot) and with the batch's earlier statements, and asks
   for ADD / UPDATE / DELETE / NONE — skipped when nothing is similar; the later message
   wins (:mod:`memory.formation_updates`);
3. asks for reflections, hierarchical circle → user → session, with the current blobs,
   recent reflections and the new facts in view.

Partitions come from the thread, never from the model: in a DM everything belongs to the
DM's owner; in a group a fact is the speaker's, or the circle's for "we/our". A decision
may only touch a candidate it was shown, so a model cannot reach into another partition.

Re-running a batch after a crash duplicates nothing: facts are unique per (partition,
content hash), reflection ids are derived from the batch and their content, and the
messages are marked formed only at the end.

A batch is never marked formed with nothing learned because of a model error: when the
fact extraction's answer is invalid (after its one corrective retry, or cut off at its
token budget) the batch stays unformed, the failure is counted on its messages and
:class:`FormationFailed` goes up, so the job backs off and a later job tries again.
After :data:`FORMATION_MAX_FAILURES` failed jobs the batch is set aside (kept, counted,
retried on an operator's demand) and the thread's later messages form as usual. The
update decisions and reflections build on facts already in hand: when one of those
answers is invalid the step is skipped and logged with the batch id, and the rest runs.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, tzinfo

from memory.constants import (
    FORMATION_MAX_FAILURES,
    FORMATION_MIN_MESSAGES,
    REFLECTION_MAX_WORDS,
)
from memory.errors import AlfredError
from memory.facts import FactWriter, clip_words
from memory.flags import MemoryFlags
from memory.formation_updates import UpdateStep
from memory.ids import new_id
from memory.llm import LLM, LLMOutputError
from memory.models import (
    Category,
    Message,
    Partition,
    Reflection,
    ReflectionScope,
    Role,
    Thread,
    ThreadKind,
)
from memory.ports import Clock, Embedder
from memory.prompts.common import ConversationContext, JournalLine, Person
from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractedFact, ExtractFactsContext
from memory.prompts.reflect import REFLECT, ReflectContext, ScopeMemory
from memory.stores import DirectoryStore, FactStore, JournalStore, NotesStore, SemanticMirror
from memory.timezones import SpeakerZones

log = logging.getLogger(__name__)

#: Messages formed in one batch; a longer backlog is formed batch after batch.
BATCH_LIMIT = 100


@dataclass
class FormationReport:
    """What one formation did, for logs, metrics, jobs and benchmarks."""

    thread_id: str
    batch_id: str | None = None
    messages: int = 0
    facts_added: int = 0
    facts_updated: int = 0
    facts_invalidated: int = 0
    facts_unchanged: int = 0
    reflections_added: int = 0
    clarifications: int = 0
    llm_calls: int = 0
    skipped: str | None = None
    failed_steps: list[str] = field(default_factory=list)
    #: The model's answer was invalid: the batch stays unformed (retried, or set aside).
    batch_failed: bool = False
    #: Messages set aside by this run after their batch failed too often.
    set_aside: int = 0


class FormationFailed(AlfredError):
    """The model's answer to a batch was invalid: nothing was learned and nothing is
    marked formed. Retryable: the duty backs off and a later job forms the batch."""

    def __init__(self, report: FormationReport, cause: BaseException) -> None:
        super().__init__(
            f"formation of batch {report.batch_id} (thread {report.thread_id}) failed: {cause}"
        )
        self.report = report


def batch_id_for(messages: Sequence[Message]) -> str:
    """A stable id of a batch: the same messages give the same id after a restart."""
    digest = hashlib.sha256("|".join(m.id for m in messages).encode()).hexdigest()
    return digest[:24]


def to_lines(
    messages: Sequence[Message],
    names: dict[str, str],
    clocks: Mapping[str, tzinfo] | None = None,
) -> list[JournalLine]:
    """The batch as formation's lines, each dated on its speaker's clock (``clocks``, by
    user id); Alfred's lines on the clock of the person it answered (the line before)."""
    lines = []
    clock: tzinfo = UTC
    for m in messages:
        if m.role is Role.USER and clocks and m.user_id is not None and m.user_id in clocks:
            clock = clocks[m.user_id]
        lines.append(
            JournalLine(
                message_id=m.id,
                role=m.role,
                speaker_id=m.user_id,
                speaker_name=(
                    names.get(m.user_id or "", m.user_id) if m.role is Role.USER else "Alfred"
                ),
                text=m.text,
                at=m.created_at.astimezone(clock),
            )
        )
    return lines


class FormationService:
    """Forms memories of one thread at a time (the caller holds the per-thread lock)."""

    def __init__(
        self,
        *,
        journal: JournalStore,
        directory: DirectoryStore,
        facts: FactStore,
        writer: FactWriter,
        notes: NotesStore,
        llm: LLM,
        embedder: Embedder,
        clock: Clock,
        mirror: SemanticMirror | None = None,
        batch_limit: int = BATCH_LIMIT,
        flags: MemoryFlags | None = None,
        zones: SpeakerZones | None = None,
    ) -> None:
        self.journal = journal
        self.directory = directory
        self.facts = facts
        self.writer = writer
        self.notes = notes
        self.llm = llm
        self.embedder = embedder
        self.clock = clock
        self.mirror = mirror
        self.batch_limit = batch_limit
        self.flags = flags or MemoryFlags()
        self.zones = zones

    async def _members(self, thread: Thread) -> list[str]:
        """The members of a group thread's circle, in the circle's order (none for a DM)."""
        if thread.kind is not ThreadKind.GROUP or thread.circle_id is None:
            return []
        circle = await self.directory.circle(thread.circle_id)
        return list(circle.member_ids) if circle is not None else []

    async def _clocks(self, thread: Thread, speaker_ids: Sequence[str]) -> dict[str, tzinfo]:
        """Each speaker's clock here: "tomorrow" is read on it (UTC without ``zones``)."""
        if self.zones is None:
            return {}
        return {uid: (await self.zones.zone_in(thread, uid)).tz for uid in speaker_ids}

    async def form_thread(
        self, thread_id: str, *, min_messages: int = FORMATION_MIN_MESSAGES
    ) -> FormationReport:
        """Form the next batch of a thread; does nothing below ``min_messages`` user lines."""
        report = FormationReport(thread_id=thread_id)
        thread = await self.directory.thread(thread_id)
        if thread is None:
            report.skipped = "unknown thread"
            return report
        if not await self._allowed(thread):
            report.skipped = "memory extraction is switched off for this thread"
            return report
        messages = await self.journal.unformed(thread_id, limit=self.batch_limit)
        user_messages = [m for m in messages if m.role is Role.USER]
        if len(user_messages) < min_messages:
            report.skipped = f"{len(user_messages)} user message(s), fewer than {min_messages}"
            return report
        calls_before = self.llm.usage.total_calls
        report.batch_id = batch_id_for(messages)
        report.messages = len(messages)
        speaker_ids = sorted({m.user_id for m in user_messages if m.user_id})
        # In a group, "we" and "our" are its members, not only those who spoke in this
        # batch: "Nora and Omar are hosting a barbecue", as "remember that …" says it.
        member_ids = await self._members(thread)
        users = await self.directory.users(sorted({*member_ids, *speaker_ids}))
        names = {uid: u.name for uid, u in users.items()}
        people = [Person(id=uid, name=names[uid]) for uid in member_ids if uid in names]
        people += [
            Person(id=uid, name=names.get(uid, uid)) for uid in speaker_ids if uid not in member_ids
        ]
        # What the reply path already did is final: those requests are not learned from
        # again (a re-read "remember that I'm vegan" would undo "not vegan anymore").
        learnable = [m for m in messages if not (m.role is Role.USER and m.handled)]
        lines = to_lines(learnable, names, await self._clocks(thread, speaker_ids))
        now = self.clock.now()
        conversation = ConversationContext(
            thread_kind=thread.kind,
            thread_owner_id=thread.user_id,
            people=people,
            now=now,
            lines=lines,
        )
        extract_ctx = ExtractFactsContext.model_validate(conversation.model_dump())
        if any(m.role is Role.USER for m in learnable):
            extracted = await self._extract(extract_ctx, messages, report)
            if report.set_aside:
                return report
            placed = self._place(thread, extracted, learnable, report)
            new_texts = await self._decide_and_apply(thread, placed, messages, report)
            await self._reflect(thread, conversation, new_texts, user_messages, report)

        await self.journal.mark_formed([m.id for m in messages], self.clock.now())
        report.llm_calls = self.llm.usage.total_calls - calls_before
        log.info(
            "formation thread=%s batch=%s messages=%d added=%d updated=%d invalidated=%d "
            "reflections=%d calls=%d failed=%s",
            thread_id,
            report.batch_id,
            report.messages,
            report.facts_added,
            report.facts_updated,
            report.facts_invalidated,
            report.reflections_added,
            report.llm_calls,
            report.failed_steps,
        )
        return report

    async def may_form(self, thread_id: str) -> bool:
        """Whether formation runs for this thread at all (the flags, the allowed circles):
        the quiet-thread sweep asks, so a thread memory is off for is not requested anew
        every minute."""
        thread = await self.directory.thread(thread_id)
        return thread is not None and await self._allowed(thread)

    async def _allowed(self, thread: Thread) -> bool:
        flags = self.flags
        if not (flags.enabled and flags.extraction):
            return False
        if not flags.allowed_circles:
            return True
        owner_circles: frozenset[str] = frozenset()
        if thread.user_id is not None:
            owner_circles = (await self.directory.viewer(thread.user_id, thread)).circle_ids
        return flags.circle_allowed(thread.circle_id, owner_circles)

    # --- step 1: facts --------------------------------------------------------------

    async def _extract(
        self, ctx: ExtractFactsContext, batch: Sequence[Message], report: FormationReport
    ) -> list[ExtractedFact]:
        """The batch's facts. An invalid answer fails the batch (see the module
        docstring): counted on its messages, then set aside or raised for a retry."""
        calls_before = self.llm.usage.total_calls
        try:
            return (await self.llm.run(EXTRACT_FACTS, ctx)).facts
        except LLMOutputError as exc:
            report.failed_steps.append("extract_facts")
            report.batch_failed = True
            report.llm_calls = self.llm.usage.total_calls - calls_before
            report.set_aside = await self.journal.note_formation_failure(
                [m.id for m in batch], self.clock.now(), set_aside_after=FORMATION_MAX_FAILURES
            )
            if report.set_aside:
                log.error(
                    "formation batch=%s thread=%s: set aside after %d failed jobs "
                    "(%d messages; alfred admin retry-formation forms them again): %s",
                    report.batch_id,
                    report.thread_id,
                    FORMATION_MAX_FAILURES,
                    report.set_aside,
                    exc,
                )
                return []
            log.warning(
                "formation batch=%s: fact extraction failed, the batch stays unformed: %s",
                report.batch_id,
                exc,
            )
            raise FormationFailed(report, exc) from exc

    def _place(
        self,
        thread: Thread,
        extracted: Sequence[ExtractedFact],
        messages: Sequence[Message],
        report: FormationReport,
    ) -> list[tuple[ExtractedFact, Partition, str | None]]:
        """Give each fact its partition from the thread and its speaker (never the model)."""
        user_messages = [m for m in messages if m.role is Role.USER]
        speakers = {m.user_id for m in user_messages if m.user_id}
        by_message = {m.id: m.user_id for m in user_messages}
        alfreds = {m.id for m in messages if m.role is not Role.USER}
        placed: list[tuple[ExtractedFact, Partition, str | None]] = []
        for fact in extracted:
            if not fact.content.strip():
                continue
            cited = set(fact.source_message_ids)
            if cited & alfreds and not cited & by_message.keys():
                # Only Alfred's own words, no one confirming them: most often a memory it
                # recalled (a circle's, say, quoted in a DM). Storing it again would copy
                # it into this thread's partition, where it would outlive a member's
                # leaving the circle or the original being forgotten.
                log.info(
                    "formation batch=%s: a fact sourced only from Alfred's words was skipped",
                    report.batch_id,
                )
                continue
            # The journal knows who said each line: when the fact's source messages name
            # one speaker, that is whose it is, whatever the model claims (a wrong claim
            # would file one member's words in another's partition, shown in their DM).
            sources = {by_message.get(mid) for mid in fact.source_message_ids} - {None}
            speaker = fact.speaker_id if fact.speaker_id in (sources or speakers) else None
            if len(sources) == 1:
                speaker = next(iter(sources))
            elif speaker is None and not sources and len(speakers) == 1:
                speaker = next(iter(speakers))
            if thread.kind is ThreadKind.DM:
                placed.append((fact, Partition.dm(thread.dm_user_id), thread.dm_user_id))
                continue
            if fact.about == "circle":
                placed.append((fact, Partition.circle(thread.group_circle_id), speaker))
                continue
            if speaker is None:
                log.info(
                    "formation batch=%s: a fact with no identifiable speaker was skipped",
                    report.batch_id,
                )
                continue
            placed.append((fact, thread.partition_for(speaker), speaker))
        return placed

    # --- step 2: ADD / UPDATE / DELETE / NONE ------------------------------------------

    async def _decide_and_apply(
        self,
        thread: Thread,
        placed: Sequence[tuple[ExtractedFact, Partition, str | None]],
        batch: Sequence[Message],
        report: FormationReport,
    ) -> list[str]:
        """Step 2 (:class:`memory.formation_updates.UpdateStep`): the texts learned."""
        step = UpdateStep(
            facts=self.facts,
            writer=self.writer,
            notes=self.notes,
            llm=self.llm,
            embedder=self.embedder,
            clock=self.clock,
            mirror=self.mirror,
            conflicts=self.flags.conflicts,
        )
        return await step.run(thread, placed, batch, report)

    # --- step 3: reflections ------------------------------------------------------------

    async def _scope_memory(
        self, scope: ReflectionScope, partition: Partition | None, session_id: str | None
    ) -> ScopeMemory:
        if partition is None:
            return ScopeMemory()
        blob = await self.notes.blob(scope, partition, session_id)
        recent = await self.notes.unabsorbed(scope, partition, session_id)
        return ScopeMemory(
            blob=blob.content if blob else None, recent=[r.content for r in recent[-8:]]
        )

    async def _reflect(
        self,
        thread: Thread,
        conversation: ConversationContext,
        new_facts: list[str],
        user_messages: Sequence[Message],
        report: FormationReport,
    ) -> None:
        session_id = user_messages[-1].session_id
        speaker = user_messages[-1].user_id
        if thread.kind is ThreadKind.GROUP:
            circle_id = thread.group_circle_id
            circle_p: Partition | None = Partition.circle(circle_id)
            session_p = Partition.circle(circle_id)
            user_p = Partition.member(circle_id, speaker) if speaker else None
        else:
            circle_p = None
            session_p = Partition.dm(thread.dm_user_id)
            user_p = Partition.dm(thread.dm_user_id)
        ctx = ReflectContext.model_validate(
            {
                **conversation.model_dump(),
                "new_facts": new_facts,
                "circle": await self._scope_memory(ReflectionScope.CIRCLE, circle_p, None),
                "user": await self._scope_memory(ReflectionScope.USER, user_p, None),
                "session": await self._scope_memory(ReflectionScope.SESSION, session_p, session_id),
            }
        )
        try:
            answer = await self.llm.run(REFLECT, ctx)
        except LLMOutputError as exc:
            report.failed_steps.append("reflect")
            log.warning("formation batch=%s: reflections skipped: %s", report.batch_id, exc)
            return
        speakers = {m.user_id for m in user_messages if m.user_id}
        now = self.clock.now()
        for item in answer.reflections:
            content = clip_words(item.content, REFLECTION_MAX_WORDS)
            if not content:
                continue
            scope = item.scope
            partition: Partition
            if scope is ReflectionScope.CIRCLE and thread.kind is ThreadKind.GROUP:
                partition = Partition.circle(thread.group_circle_id)
            elif scope is ReflectionScope.SESSION:
                partition = session_p
            else:
                scope = ReflectionScope.USER
                if thread.kind is ThreadKind.DM:
                    partition = Partition.dm(thread.dm_user_id)
                else:
                    # Whose note it is comes from the model only among this batch's
                    # speakers; guessing (say, the last speaker) could file one member's
                    # note in another's partition, shown in the wrong DM. No guess: skip.
                    about = item.about_user_id if item.about_user_id in speakers else None
                    if about is None and len(speakers) == 1:
                        about = next(iter(speakers))
                    if about is None:
                        log.info(
                            "formation batch=%s: a user note with no identifiable person "
                            "was skipped",
                            report.batch_id,
                        )
                        continue
                    partition = thread.partition_for(about)
            reflection = Reflection(
                id=hashlib.sha256(
                    f"{report.batch_id}|{scope.value}|{partition.key()}|{content}".encode()
                ).hexdigest()[:24],
                content=content,
                scope=scope,
                partition=partition,
                thread_id=thread.id,
                session_id=session_id if scope is ReflectionScope.SESSION else None,
                created_at=now,
            )
            if await self.notes.add_reflection(reflection):
                report.reflections_added += 1


def new_reflection_id() -> str:
    """Ids for reflections written outside formation (operator notes, imports)."""
    return new_id()


__all__ = ["Category", "FormationFailed", "FormationReport", "FormationService", "batch_id_for"]
