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
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

from memory.clarifications import Clarifications
from memory.corrections import split_correction, supersede
from memory.erasure import Scrubber, add_counts, describe_removed
from memory.facts import FactWriter, clip_words
from memory.forget_choices import (
    FORGET_CHOICES_MAX,
    FORGET_WHICH,
    FORGET_WHICH_END,
    FORGET_WHICH_REDACTED,
    KEPT_ALL,
    choice_answer,
)
from memory.ids import normalise_content
from memory.llm import LLM
from memory.models import (
    Category,
    Fact,
    Partition,
    Provenance,
    Thread,
    Viewer,
)
from memory.operation_result import OperationResult
from memory.ports import Clock, Embedder, Vector
from memory.privacy import is_visible
from memory.prompts.common import Person
from memory.rules.dates import MONTHS, WEEKDAYS
from memory.search.text import tokenize
from memory.statement_reading import StatementReader
from memory.stores import FactStore, JournalStore, NotesStore, SemanticMirror
from memory.timezones import SpeakerZones
from memory.value_swap import swap_value

log = logging.getLogger(__name__)

#: Below this share of content terms a correction does not replace an existing fact (it
#: is simply added).
CORRECTION_MATCH = 0.55
#: Or at least this cosine: nearly the same sentence with another value ("the party is on
#: Saturday" against "The party is on Friday": 0.92). MiniLM puts related but different
#: facts at 0.6-0.7 ("my sister lives in Porto" against "My brother lives in Lisbon":
#: 0.65; "Mom's birthday is May 3" against "Dad's birthday is June 9": 0.59), which a
#: correction must not replace.
CORRECTION_COSINE = 0.85
#: How close a stored fact must be to "forget …" to be deleted.
FORGET_MATCH = 0.6
#: "Forget everything about me" reads up to this many of the person's messages for the
#: words to take out of shared notes.
ERASE_SCAN = 20_000

CONFIRM_REMEMBER = "Got it, I'll remember that."

ALREADY_KNEW = "I already knew that — still remembered."
FORGOTTEN = "Done — I've forgotten that."
NOTHING_TO_FORGET = "I couldn't find anything like that in what I remember about you here."


def forgotten_text(removed: dict[str, int]) -> str:
    """The answer to a forget: that it is done, and what went ("Done — I've forgotten
    that (1 memory, 1 summary and 2 messages).")."""
    what = describe_removed(removed)
    return f"{FORGOTTEN[:-1]} ({what})." if what else FORGOTTEN


def _content_terms(text: str) -> set[str]:
    return set(tokenize(text))


def overlap(a: str, b: str) -> float:
    """Share of ``a``'s content terms found in ``b`` (stemmed, stopwords dropped)."""
    return _share(_content_terms(a), b)


def _share(terms: set[str], b: str) -> float:
    return len(terms & _content_terms(b)) / len(terms) if terms else 0.0


#: What says when, not what: a correction's new day or time ("actually the review moved
#: to Friday at 10") is not what it shares with the fact it corrects.
_WHEN_TERMS: Final = frozenset(
    tokenize(
        " ".join((*WEEKDAYS, *MONTHS))
        + " today tomorrow tonight morning afternoon evening week weekend month year am pm"
        " moved postponed pushed rescheduled brought"
    )
)


def subject_overlap(a: str, b: str) -> float:
    """:func:`overlap` on what ``a`` is about: its terms without days, times and numbers."""
    return _share({t for t in _content_terms(a) if t not in _WHEN_TERMS and not t[:1].isdigit()}, b)


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
        zones: SpeakerZones | None = None,
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
        self.reader = StatementReader(llm, clock, model_budget, zones)

    async def facts_from(
        self,
        thread: Thread,
        speaker: Person,
        statement: str,
        message_id: str,
        others: Sequence[Person] = (),
    ) -> list[tuple[str, Category, int, bool]]:
        """Facts in one statement (:meth:`StatementReader.read`)."""
        return await self.reader.read(thread, speaker, statement, message_id, others)

    async def remember(
        self,
        thread: Thread,
        speaker: Person,
        payload: str,
        message_id: str,
        others: Sequence[Person] = (),
    ) -> OperationResult:
        """Store an explicit "remember that …" at once, in the thread's partition.

        The person is waiting, so both model calls (reading the statement, then deciding
        what it replaces) share one ``model_budget``: a hung model costs them that long
        once, not once per call."""
        started = asyncio.get_running_loop().time()
        facts = await self.facts_from(thread, speaker, payload, message_id, others)
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
        # What a person asked Alfred to remember is pinned: it never fades with age.
        stored = await self.writer.add_many(items, pinned=True)
        await self.facts.set_pinned([f.id for f, _ in stored if not f.pinned], True)
        new = [f for f, created in stored if created]
        # Found, not created, yet stored from this very message: its first try stored it
        # and then failed (the database went away before the turn was done), and this is
        # the replay. To the person it is what they asked for now, not something "already
        # known", and it gets the steps the failed try may not have reached.
        again = [
            f for f, created in stored if not created and message_id in f.provenance.message_ids
        ]
        fresh = [*new, *again]
        for fact in fresh:
            if self.mirror is not None and fact.mem0_id is None:
                await self.mirror.mirror(fact)
        replaced = await self.supersede(
            fresh, reason="replaced by the person", budget=self._left_of_budget(started)
        )
        if replaced:
            was = "; ".join(f.content for f in replaced)
            text = f"Got it — I've updated it: {fresh[0].content} (before: {was})."
        else:
            text = CONFIRM_REMEMBER if fresh or not stored else ALREADY_KNEW
        return OperationResult(text=text, facts=[f for f, _ in stored])

    async def supersede(
        self, new: Sequence[Fact], *, reason: str, budget: float | None = None
    ) -> list[Fact]:
        """Retire what ``new`` replaces (see :func:`memory.corrections.supersede`), within
        ``budget`` seconds of model time (default: the whole ``model_budget``)."""
        return await supersede(
            self.facts,
            self.llm,
            new,
            reason=reason,
            at=self.clock.now(),
            budget=self.model_budget if budget is None else budget,
        )

    def _left_of_budget(self, started: float) -> float | None:
        """What remains of ``model_budget`` since ``started`` (loop time), never below 0."""
        if self.model_budget is None:
            return None
        spent = asyncio.get_running_loop().time() - started
        return max(0.0, self.model_budget - spent)

    async def correct(
        self,
        viewer: Viewer,
        speaker: Person,
        statement: str | None,
        negated: str | None,
        message_id: str,
        *,
        old_value: str | None = None,
        new_value: str | None = None,
        others: Sequence[Person] = (),
    ) -> OperationResult:
        """Apply "actually …" at once: the closest fact of the speaker's partition here is
        invalidated (kept as history) and the corrected statement stored; any other
        current fact the statement gives a new value for is retired too (exactly one value
        stays current). "I meant X, not Y" swaps the value in what was stored or said.
        ``others``: the group's members, who name "our" as :meth:`remember` does."""
        if old_value and new_value:
            return await swap_value(self, viewer, speaker, old_value, new_value, message_id)
        statement, negated = split_correction(statement, negated)
        thread = viewer.thread
        partitions = self.partitions_of(thread, speaker)
        probe = negated or statement
        facts = (
            await self.facts_from(thread, speaker, statement, message_id, others)
            if statement
            else []
        )
        # The words as said, then as they will be stored: "the party is on Saturday" is
        # "The party is on Saturday, January 10", close to "… on Friday, January 9" where
        # the words as said are not.
        probes = [probe] if probe else []
        if probe and not negated and facts:
            probes.append(facts[0][0])
        replaced = await self._closest(viewer, partitions, probes, CORRECTION_MATCH)
        now = self.clock.now()
        if replaced is not None:
            await self.facts.invalidate(replaced.id, at=now, reason="corrected by the person")
        stored: list[Fact] = []
        retired: list[Fact] = []
        if statement:
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
            written = await self.writer.add_many(items, pinned=True)
            stored = [f for f, _ in written]
            retired = await self.supersede(
                [f for f, created in written if created], reason="corrected by the person"
            )
        if replaced is None and retired:
            replaced = retired[0]
        if replaced is not None and stored:
            text = f"Thanks for the correction — I've updated it: {stored[0].content}"
        elif replaced is not None:
            text = "Thanks — I've noted that this is no longer true."
        elif stored:
            text = f"Thanks, noted: {stored[0].content}"
        else:
            text = "Thanks — tell me what changed and I'll update what I remember."
        return OperationResult(text=text, facts=stored)

    @staticmethod
    def partitions_of(thread: Thread, speaker: Person) -> set[Partition]:
        """The partitions a person may correct here: their own, and the circle's."""
        return {
            thread.partition_for(speaker.id),
            *([Partition.circle(thread.circle_id)] if thread.circle_id else []),
        }

    async def _closest(
        self, viewer: Viewer, partitions: set[Partition], texts: Sequence[str], threshold: float
    ) -> Fact | None:
        """The fact of ``partitions`` a correction replaces, by the first of ``texts`` that
        finds one: the closest that shares at least ``threshold`` of its content terms, or
        that says nearly the same by meaning (:data:`CORRECTION_COSINE`), newest first
        among equals. The facts are read, and the texts embedded, once for all of them."""
        if not texts:
            return None
        candidates = [
            f
            for f in await self.facts.list_visible(viewer, with_embeddings=True)
            if f.partition in partitions and is_visible(f.partition, viewer)
        ]
        if not candidates:
            return None
        queries = await self.embedder.embed(list(texts))

        def closeness(text: str, query: Vector, fact: Fact) -> float:
            terms = max(overlap(text, fact.content), subject_overlap(text, fact.content))
            if fact.embedding is None or len(fact.embedding) != len(query):
                return terms
            cosine = float(np.dot(np.asarray(fact.embedding), np.asarray(query)))
            return max(terms, cosine if cosine >= CORRECTION_COSINE else 0.0)

        return first_match(texts, queries, candidates, closeness, threshold)

    async def _ranked(self, text: str, facts: Sequence[Fact]) -> list[tuple[float, Fact]]:
        """Facts by closeness to ``text``, best first: the larger of shared content terms
        and cosine (terms catch exact wording, cosine paraphrase)."""
        query = (await self.embedder.embed([text]))[0]
        scored = [(similarity(text, query, fact), fact) for fact in facts]
        scored.sort(key=lambda pair: -pair[0])
        return scored

    async def forget(
        self, viewer: Viewer, target: str, *, name: str | None = None
    ) -> OperationResult:
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
        doomed: list[Fact] = []
        scored = await self._ranked(target, own) if own else []
        if scored and scored[0][0] >= FORGET_MATCH:
            best = scored[0][0]
            # everything about as close as the best match (versions of the same memory)
            doomed = [f for s, f in scored if s >= max(FORGET_MATCH, best - 0.1)]
            groups = self._distinct(doomed)
            if len(groups) >= 2:
                # Two different memories are as close: deleting both (or the wrong one)
                # would lose data, so ask which. Nothing is deleted until they answer.
                groups = groups[:FORGET_CHOICES_MAX]
                lines = "\n".join(f"{n}) {g[0].content}" for n, g in enumerate(groups, start=1))
                return OperationResult(
                    text=f"{FORGET_WHICH}\n{lines}\n{FORGET_WHICH_END}",
                    choices=[[f.id for f in g] for g in groups],
                )
        removed = await self.erase_facts(viewer.user_id, doomed, [target]) if doomed else {}
        # "forget my key" found the memory it meant: its words say what to look for in
        # notes and messages, not every sentence that mentions a key.
        vague = len(_content_terms(target)) < 2 and doomed
        needles = [f.content for f in doomed] if vague else [target]
        fact_ids = [f.id for f in doomed]
        add_counts(removed, await self.forget_words(viewer, needles, fact_ids, name))
        if not any(removed.values()):
            return OperationResult(text=NOTHING_TO_FORGET)
        return OperationResult(text=forgotten_text(removed), removed=removed)

    async def forget_words(
        self,
        viewer: Viewer,
        needles: Sequence[str],
        fact_ids: Sequence[str],
        name: str | None = None,
    ) -> dict[str, int]:
        """What a forget reaches beyond facts, here (see :mod:`memory.erasure`)."""
        scrub = Scrubber(self.notes, self.journal)
        return await scrub.forget_here(viewer, needles, fact_ids, name=name)

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
        contents = [f.content for f in doomed]
        add_counts(removed, await self.forget_words(viewer, contents, [f.id for f in doomed]))
        return OperationResult(text=forgotten_text(removed), removed=removed)

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
        """Erase a user entirely: facts they own or stated, notes, clarifications, messages,
        and their words in the shared notes and summaries of their circles (rewritten
        without them). (The directory entry is removed by the caller, which also leaves
        the circles.)"""
        facts = await self.facts.owned_by(user_id)
        said = [
            m for m in await self.journal.recent_by_user(user_id, limit=ERASE_SCAN) if m.user_id
        ]
        shared = await Scrubber(self.notes, self.journal).shared_of(user_id, facts, said)
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
        return add_counts(counts, shared)

    # --- clarifications ------------------------------------------------------------------

    @property
    def clarifications(self) -> Clarifications:
        """Alfred's questions, bound to where and when they were asked."""
        return Clarifications(self)

    async def question_for(self, viewer: Viewer, *, after_message: int | None = None) -> str | None:
        """A pending question for this person here, marked as asked (bound to this
        thread, after the person's message ``after_message``)."""
        return await self.clarifications.question_for(viewer, after_message=after_message)

    async def answer(
        self,
        viewer: Viewer,
        text: str,
        *,
        speaker: Person | None = None,
        message_id: int | None = None,
        journal_id: str = "",
        reply_to_text: str | None = None,
    ) -> OperationResult | None:
        """Resolve the question this message is bound to, if it answers it."""
        said = await self.clarifications.answer(
            viewer,
            text,
            speaker=speaker,
            message_id=message_id,
            journal_id=journal_id,
            reply_to_text=reply_to_text,
        )
        return OperationResult(text=said) if said is not None else None


def similarity(text: str, vector: Vector | Sequence[float] | None, fact: Fact) -> float:
    """How close ``text`` (embedded as ``vector``) is to ``fact``: the larger of shared
    content terms and cosine (terms catch exact wording, cosine paraphrase). The cosine
    counts only for a fact read with its vector: "forget …" and "pin …" read them without,
    so they match by words, since facts of one shape about different things sit at a
    cosine of 0.6-0.9 ("The party is on Friday" and "… Saturday": 0.92), and a forget
    deletes for good."""
    score = overlap(text, fact.content)
    if vector is not None and fact.embedding is not None and len(fact.embedding) == len(vector):
        score = max(score, float(np.dot(np.asarray(fact.embedding), np.asarray(vector))))
    return score


def first_match(
    texts: Sequence[str],
    vectors: Vector,
    facts: Sequence[Fact],
    score: Callable[[str, Vector, Fact], float],
    threshold: float,
) -> Fact | None:
    """The fact closest to the first of ``texts`` (embedded as the rows of ``vectors``)
    that has one scoring ``threshold`` or more: a request may name its memory in several
    ways, tried in order (a correction as said and as it will be stored, a pin's words)."""
    for text, vector in zip(texts, vectors, strict=True):
        best_score, best = max(((score(text, vector, f), f) for f in facts), key=lambda p: p[0])
        if best_score >= threshold:
            return best
    return None


def _closeness(a: Fact, b: Fact) -> float:
    return similarity(a.content, a.embedding, b)


def same_content(a: str, b: str) -> bool:
    return normalise_content(a) == normalise_content(b)


__all__ = [
    "FORGET_CHOICES_MAX",
    "FORGET_WHICH",
    "FORGET_WHICH_END",
    "FORGET_WHICH_REDACTED",
    "KEPT_ALL",
    "MemoryOperations",
    "OperationResult",
    "choice_answer",
    "clip_words",
    "same_content",
]
