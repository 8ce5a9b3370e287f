"""Memory operations on the reply path: remember now, correct now, forget, erase, and
the clarifications that formation leaves for a person.

These run while the person waits, so each is a handful of queries and at most one fast
model call, bounded by its own budget (``model_budget`` seconds, retries included): a
model that hangs or keeps failing leaves the words stored as said, not a person waiting.
Everything reads through the viewer (the privacy filter is in every query)
and writes into the partition the thread decides, never one the model names.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memory.errors import Unavailable
from memory.facts import FactWriter, clip_words
from memory.ids import normalise_content
from memory.llm import LLM, LLMOutputError
from memory.models import Category, Fact, Partition, Provenance, Role, Thread, Viewer
from memory.ports import Clock, Embedder
from memory.privacy import is_visible
from memory.prompts.common import JournalLine, Person
from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractFactsContext
from memory.rules.intents import detect_correction, strip_addressing
from memory.search.text import tokenize
from memory.stores import FactStore, JournalStore, NotesStore, SemanticMirror

log = logging.getLogger(__name__)

#: Below this cosine a correction does not replace an existing fact (it is simply added).
CORRECTION_MATCH = 0.55
#: How close a stored fact must be to "forget …" to be deleted.
FORGET_MATCH = 0.6

CONFIRM_REMEMBER = "Got it, I'll remember that."
ALREADY_KNEW = "I already knew that — still remembered."
FORGOTTEN = "Done — I've forgotten that."
NOTHING_TO_FORGET = "I couldn't find anything like that in what I remember about you here."
FORGET_WHICH = "I remember a few things like that — which should I forget?"
FORGET_WHICH_END = 'Reply with the number, or "all" (or "none" to keep them).'
#: What the journal keeps of a "which should I forget?" question once it is answered.
FORGET_WHICH_REDACTED = "[a question about which memory to forget]"
KEPT_ALL = "All right — I haven't forgotten anything."
#: At most this many distinct memories are offered to choose from.
FORGET_CHOICES_MAX = 9

#: A statement about "us" ("we always …", "our …"): in a group, the circle's (DESIGN §3).
_FIRST_PERSON_PLURAL = re.compile(r"^\W*(?:we|we're|we've|we'll|we'd|our|ours|us)\b", re.I)
_YES = re.compile(
    r"^\s*(yes|yeah|yep|yup|correct|right|it (has )?changed|that'?s right|true)\b", re.I
)
_NONE_OF_THEM = re.compile(
    r"^(?:none|neither|nothing|cancel|no|nope|keep (?:them|both|all|everything))"
    r"(?: of (?:them|those|these))?(?:,? thanks?(?: you)?)?$",
    re.I,
)
_ALL_OF_THEM = re.compile(
    r"^(?:all|both|all of them|both of them|all of those|both of those|everything)"
    r"(?:,? please)?$",
    re.I,
)
_NUMBERS = re.compile(
    r"^(?:(?:number|no\.?|#)\s*)?\d{1,2}(?:\s*(?:,|and|&|\+|\s)\s*#?\d{1,2})*$", re.I
)
_NO = re.compile(
    r"^\s*(no|nope|nah|not really|it hasn'?t|still|wrong|that'?s wrong|no,? it'?s the same)\b",
    re.I,
)


@dataclass
class OperationResult:
    """What an operation did, and what to tell the person."""

    text: str
    facts: list[Fact] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)
    #: A "which should I forget?" question: the fact ids of each numbered memory (the
    #: memory first, then versions of it kept as history). Nothing was deleted.
    choices: list[list[str]] = field(default_factory=list)


def _content_terms(text: str) -> set[str]:
    return set(tokenize(text))


def overlap(a: str, b: str) -> float:
    """Share of ``a``'s content terms found in ``b`` (stemmed, stopwords dropped)."""
    terms = _content_terms(a)
    if not terms:
        return 0.0
    return len(terms & _content_terms(b)) / len(terms)


class MemoryOperations:
    """The hot-path memory API the bot calls."""

    def __init__(
        self,
        *,
        facts: FactStore,
        writer: FactWriter,
        notes: NotesStore,
        journal: JournalStore,
        llm: LLM,
        embedder: Embedder,
        clock: Clock,
        mirror: SemanticMirror | None = None,
        model_budget: float | None = None,
    ) -> None:
        self.facts = facts
        self.writer = writer
        self.notes = notes
        self.journal = journal
        self.llm = llm
        self.embedder = embedder
        self.clock = clock
        self.mirror = mirror
        self.model_budget = model_budget

    async def _facts_from(
        self, thread: Thread, speaker: Person, statement: str, message_id: str
    ) -> list[tuple[str, Category, int, bool]]:
        """Facts in one statement: (content, category, importance, about the circle)."""
        ctx = ExtractFactsContext(
            thread_kind=thread.kind,
            thread_owner_id=thread.user_id,
            people=[speaker],
            now=self.clock.now(),
            lines=[
                JournalLine(
                    message_id=message_id,
                    role=Role.USER,
                    speaker_id=speaker.id,
                    speaker_name=speaker.name,
                    text=statement,
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
            # Nothing the model (or the offline rules) could read: keep the words as said,
            # attributed; a "we …" statement is the circle's in a group, as the model's
            # would be (in a DM, partition_for keeps it the speaker's whatever it says).
            ours = _FIRST_PERSON_PLURAL.match(statement) is not None
            out = [(f"{speaker.name}: {statement.strip()}", Category.FACT, 6, ours)]
        return out

    async def remember(
        self, thread: Thread, speaker: Person, payload: str, message_id: str
    ) -> OperationResult:
        """Store an explicit "remember that …" at once, in the thread's partition."""
        facts = await self._facts_from(thread, speaker, payload, message_id)
        items = [
            (
                content,
                category,
                max(importance, 7),
                thread.partition_for(speaker.id, about_circle=about_circle),
                Provenance(
                    thread_id=thread.id,
                    message_ids=[message_id],
                    speaker_id=speaker.id,
                    source="explicit",
                ),
            )
            for content, category, importance, about_circle in facts
        ]
        stored = await self.writer.add_many(items)
        new = [f for f, created in stored if created]
        for fact in new:
            if self.mirror is not None:
                await self.mirror.mirror(fact)
        text = CONFIRM_REMEMBER if new or not stored else ALREADY_KNEW
        return OperationResult(text=text, facts=[f for f, _ in stored])

    async def correct(
        self,
        viewer: Viewer,
        speaker: Person,
        statement: str | None,
        negated: str | None,
        message_id: str,
    ) -> OperationResult:
        """Apply "actually …" at once: the closest fact of the speaker's partition here is
        invalidated (kept as history) and the corrected statement stored."""
        statement, negated = split_correction(statement, negated)
        thread = viewer.thread
        partitions = {
            thread.partition_for(speaker.id),
            *([Partition.circle(thread.circle_id)] if thread.circle_id else []),
        }
        probe = negated or statement
        replaced: Fact | None = None
        if probe:
            replaced = await self._closest(viewer, partitions, probe, CORRECTION_MATCH)
        now = self.clock.now()
        if replaced is not None:
            await self.facts.invalidate(replaced.id, at=now, reason="corrected by the person")
        stored: list[Fact] = []
        if statement:
            facts = await self._facts_from(thread, speaker, statement, message_id)
            items = [
                (
                    content,
                    category,
                    max(importance, 6),
                    replaced.partition if replaced else thread.partition_for(speaker.id),
                    Provenance(
                        thread_id=thread.id,
                        message_ids=[message_id],
                        speaker_id=speaker.id,
                        source="correction",
                    ),
                )
                for content, category, importance, _ in facts
            ]
            stored = [f for f, _ in await self.writer.add_many(items)]
        if replaced is not None and stored:
            text = f"Thanks for the correction — I've updated it: {stored[0].content}"
        elif replaced is not None:
            text = "Thanks — I've noted that this is no longer true."
        elif stored:
            text = f"Thanks, noted: {stored[0].content}"
        else:
            text = "Thanks — tell me what changed and I'll update what I remember."
        return OperationResult(text=text, facts=stored)

    async def _closest(
        self, viewer: Viewer, partitions: set[Partition], text: str, threshold: float
    ) -> Fact | None:
        candidates = [
            f
            for f in await self.facts.list_visible(viewer)
            if f.partition in partitions and is_visible(f.partition, viewer)
        ]
        if not candidates:
            return None
        score, best = (await self._ranked(text, candidates))[0]
        return best if score >= threshold else None

    async def _ranked(self, text: str, facts: Sequence[Fact]) -> list[tuple[float, Fact]]:
        """Facts by closeness to ``text``, best first: the larger of shared content terms
        and cosine (terms catch exact wording, cosine paraphrase)."""
        query = (await self.embedder.embed([text]))[0]
        scored = [(_similarity(text, query, fact), fact) for fact in facts]
        scored.sort(key=lambda pair: -pair[0])
        return scored

    async def forget(self, viewer: Viewer, target: str) -> OperationResult:
        """Hard-delete the memory that best matches ``target`` and everything derived
        from it: its history, its mem0 copy, reflections and blobs that mention it
        (blobs are rebuilt from their other reflections), and the messages it came from.

        Only the viewer's own memories and the circle's shared ones can be forgotten by
        them; another member's memories stay theirs to manage."""
        own = [
            f
            for f in await self.facts.list_visible(viewer, include_history=True)
            if f.partition.owner_user_id in (None, viewer.user_id)
        ]
        if not own:
            return OperationResult(text=NOTHING_TO_FORGET)
        scored = await self._ranked(target, own)
        best = scored[0][0]
        if best < FORGET_MATCH:
            return OperationResult(text=NOTHING_TO_FORGET)
        # everything about as close as the best match (versions of the same memory)
        doomed = [f for s, f in scored if s >= max(FORGET_MATCH, best - 0.1)]
        groups = self._distinct(doomed)
        if len(groups) >= 2:
            # Two different memories are as close: deleting both (or the wrong one) would
            # lose data, so ask which. Nothing is deleted until the person answers.
            groups = groups[:FORGET_CHOICES_MAX]
            lines = "\n".join(f"{n}) {g[0].content}" for n, g in enumerate(groups, start=1))
            return OperationResult(
                text=f"{FORGET_WHICH}\n{lines}\n{FORGET_WHICH_END}",
                choices=[[f.id for f in g] for g in groups],
            )
        removed = await self.erase_facts(viewer.user_id, doomed, [target])
        return OperationResult(text=FORGOTTEN, removed=removed)

    @staticmethod
    def _distinct(facts: Sequence[Fact]) -> list[list[Fact]]:
        """The distinct current memories among ``facts`` (best first), each followed by
        the facts that are versions of it: the same words in another partition, and
        invalidated facts (history), each given to the memory it is closest to."""
        groups: list[list[Fact]] = []
        for fact in (f for f in facts if f.current):
            same = next((g for g in groups if same_content(g[0].content, fact.content)), None)
            if same is None:
                groups.append([fact])
            else:
                same.append(fact)
        if len(groups) < 2:
            return groups
        for old in (f for f in facts if not f.current):
            closest = max(groups, key=lambda g: _closeness(old, g[0]))
            closest.append(old)
        return groups

    async def forget_chosen(
        self, viewer: Viewer, choices: Sequence[Sequence[str]], answer: str
    ) -> OperationResult | None:
        """Resolve a "which should I forget?" question from the person's answer: numbers,
        "all"/"both", or "none"/"cancel". ``None`` when the message is not an answer (the
        question then lapses). The chosen memories go through the forget cascade; each is
        read again through the viewer, so only what they may still forget goes."""
        picked = choice_answer(answer, len(choices))
        if picked is None:
            return None
        if not picked:
            return OperationResult(text=KEPT_ALL)
        doomed: list[Fact] = []
        for index in picked:
            for fact_id in choices[index]:
                fact = await self.facts.get(fact_id)
                if (
                    fact is not None
                    and is_visible(fact.partition, viewer)
                    and fact.partition.owner_user_id in (None, viewer.user_id)
                ):
                    doomed.append(fact)
        if not doomed:
            return OperationResult(text=NOTHING_TO_FORGET)
        removed = await self.erase_facts(viewer.user_id, doomed, [])
        return OperationResult(text=FORGOTTEN, removed=removed)

    async def erase_facts(
        self, user_id: str, doomed: Sequence[Fact], phrases: Sequence[str]
    ) -> dict[str, int]:
        """The forget cascade for specific facts."""
        deleted = await self.facts.delete([f.id for f in doomed])
        if self.mirror is not None:
            await self.mirror.forget(deleted)
        needles = [
            *phrases,
            *(f.content for f in deleted),
            *(h.content for f in deleted for h in f.history),
        ]
        keys = sorted({f.partition.key() for f in deleted})
        reflections = [
            r
            for r in await self.notes.reflections_mentioning(keys, [])
            if any(overlap(n, r.content) >= 0.6 for n in needles)
        ]
        removed_reflections = await self.notes.delete_reflections([r.id for r in reflections])
        blobs = [
            b
            for b in await self.notes.blobs_mentioning(keys, [])
            if any(overlap(n, b.content) >= 0.5 for n in needles)
        ]
        for blob in blobs:
            await self.notes.delete_blob(blob.id)
        messages = await self.journal.delete_containing(user_id, needles)
        messages += await self._delete_matching_messages(user_id, needles)
        return {
            "facts": len(deleted),
            "reflections": len(removed_reflections),
            "consolidated": len(blobs),
            "messages": messages,
        }

    async def _delete_matching_messages(self, user_id: str, needles: Sequence[str]) -> int:
        """Messages that say the same thing in other words (most content terms shared)."""
        recent = await self.journal.recent_by_user(user_id, limit=500)
        ids = [
            m.id
            for m in recent
            if any(overlap(n, m.text) >= 0.75 for n in needles if _content_terms(n))
        ]
        return await self.journal.delete_by_ids(ids)

    async def forget_everything(self, user_id: str) -> dict[str, int]:
        """Erase a user entirely: facts they own or stated, notes, clarifications, messages.
        (The directory entry is removed by the caller, which also leaves the circles.)"""
        facts = await self.facts.owned_by(user_id)
        # Facts they stated in someone else's partition (circle-level "we/our" ones): the
        # notes derived from them are not theirs, so they go through the forget cascade.
        stated = [f for f in facts if f.partition.owner_user_id != user_id]
        counts = await self.erase_facts(user_id, stated, []) if stated else {}
        deleted = await self.facts.delete(
            [f.id for f in facts if f.partition.owner_user_id == user_id]
        )
        if self.mirror is not None:
            await self.mirror.forget(deleted)
        counts["facts"] = counts.get("facts", 0) + len(deleted)
        for name, n in (await self.notes.delete_for_user(user_id)).items():
            counts[name] = counts.get(name, 0) + n
        counts["messages"] = counts.get("messages", 0) + await self.journal.delete_user(user_id)
        return counts

    # --- clarifications ------------------------------------------------------------------

    async def question_for(self, viewer: Viewer) -> str | None:
        """A pending question for this person here, marked as asked."""
        item = await self.notes.pending_clarification(viewer)
        if item is None:
            return None
        await self.notes.set_clarification_status(item.id, "asked")
        return item.question

    async def answer(self, viewer: Viewer, text: str) -> OperationResult | None:
        """Resolve the question last asked here from the person's answer, if it is one."""
        item = await self.notes.asked_clarification(viewer)
        if item is None:
            return None
        text = strip_addressing(text)  # in a group the answer comes as "@alfred yes"
        now = self.clock.now()
        if (
            _NO.match(text)
            and item.kind == "contradiction"
            and item.fact_id
            and item.proposed_content
        ):
            # Not changed: the newer statement was wrong; restore the older one.
            new = await self.facts.get(item.fact_id)
            old = await self.facts.get(item.proposed_content)
            if new is not None:
                await self.facts.invalidate(
                    new.id, at=now, reason="the person said it had not changed"
                )
            if old is not None:
                await self.writer.add(
                    old.content,
                    old.partition,
                    category=old.category,
                    importance=old.importance,
                    provenance=old.provenance,
                )
            await self.notes.set_clarification_status(item.id, "resolved", now)
            return OperationResult(text="Thanks — I'll keep remembering it the way it was.")
        if _YES.match(text):
            await self.notes.set_clarification_status(item.id, "resolved", now)
            return OperationResult(text="Thanks — I've updated what I remember.")
        return None


_CLAUSE_BREAK = re.compile(
    r"[;,]\s+(?=(?:i|i'm|i've|my|we|we're|our|now)\b)|\s+but\s+(?:now\s*,?\s+)?", re.I
)


def split_correction(statement: str | None, negated: str | None) -> tuple[str | None, str | None]:
    """Separate what stopped being true from what is true now, in a sentence that says
    both ("I don't love Thai food anymore, I love Korean food now")."""
    if not statement:
        return statement, negated
    positive: list[str] = []
    for part in (p.strip() for p in _CLAUSE_BREAK.split(statement)):
        if not part:
            continue
        sub = detect_correction(part)
        if sub is not None and sub.negated:
            negated = negated or sub.negated
        else:
            positive.append(re.sub(r"\s+now$", "", part, flags=re.I))
    if not positive:
        return statement, negated
    return " ".join(positive), negated


def choice_answer(text: str, count: int) -> list[int] | None:
    """The (0-based) items an answer to a numbered question picks: ``[]`` for "none",
    every item for "all"/"both", the numbers given; ``None`` if it is not an answer
    (or names a number that was not offered)."""
    body = re.sub(r"[\s.!]+$", "", strip_addressing(text).strip()).strip()
    if _NONE_OF_THEM.match(body):
        return []
    if _ALL_OF_THEM.match(body):
        return list(range(count))
    if not _NUMBERS.match(body):
        return None
    numbers = [int(n) for n in re.findall(r"\d+", body)]
    if not numbers or any(not 1 <= n <= count for n in numbers):
        return None
    return sorted({n - 1 for n in numbers})


def _similarity(text: str, vector: Sequence[float] | None, fact: Fact) -> float:
    """How close ``text`` (embedded as ``vector``) is to ``fact``: the larger of shared
    content terms and cosine (terms catch exact wording, cosine paraphrase)."""
    score = overlap(text, fact.content)
    if vector is not None and fact.embedding is not None and len(fact.embedding) == len(vector):
        score = max(score, float(np.dot(np.asarray(fact.embedding), np.asarray(vector))))
    return score


def _closeness(a: Fact, b: Fact) -> float:
    return _similarity(a.content, a.embedding, b)


def same_content(a: str, b: str) -> bool:
    return normalise_content(a) == normalise_content(b)


__all__ = [
    "MemoryOperations",
    "OperationResult",
    "choice_answer",
    "clip_words",
    "same_content",
]
