"""Formation step 2: ADD / UPDATE / DELETE / NONE against similar facts, in message order.

Each new fact is compared with the similar current facts of its partition (cosine ≥ 0.7)
and with the earlier new facts of the same batch; the model (or the offline rules) decides.
Between two statements the later *message* wins, whatever order they were extracted in:

* a new fact that changes a stored one replaces it, the old one kept as history, and the
  person is asked whether it changed, unless they are correcting themselves within a
  minute (:data:`memory.constants.SELF_CORRECTION_SECONDS`);
* a new fact that changes an earlier statement of the same batch replaces it the same way;
* a new fact that a later message already replaced (a correction on the reply path) is
  kept as history only: it never becomes current again.

A decision may only touch a candidate it was shown, so a model cannot reach into another
partition.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import numpy as np

from memory.constants import SELF_CORRECTION_SECONDS, UPDATE_CANDIDATE_SIMILARITY
from memory.facts import FactWriter, clip_words
from memory.llm import LLM, LLMOutputError
from memory.models import Clarification, Fact, Message, Partition, Provenance, Thread
from memory.ports import Clock, Embedder
from memory.prompts.decide_updates import (
    DECIDE_UPDATES,
    CandidateFact,
    DecideUpdatesContext,
    UpdateDecision,
)
from memory.prompts.extract_facts import ExtractedFact
from memory.rules.slots import says_it_changed, shares_slot
from memory.stores import FactStore, NotesStore, SemanticMirror


class FormationReport(Protocol):
    """The counters of :class:`memory.formation.FormationReport` this step fills."""

    batch_id: str | None
    facts_added: int
    facts_updated: int
    facts_invalidated: int
    facts_unchanged: int
    clarifications: int
    failed_steps: list[str]


log = logging.getLogger(__name__)

#: Similar facts shown to the model per new fact.
CANDIDATES_PER_FACT = 3

Placed = tuple[ExtractedFact, Partition, str | None]


@dataclass
class UpdateStep:
    """Step 2 of one formation."""

    facts: FactStore
    writer: FactWriter
    notes: NotesStore
    llm: LLM
    embedder: Embedder
    clock: Clock
    mirror: SemanticMirror | None = None
    conflicts: bool = True

    async def run(
        self,
        thread: Thread,
        placed: Sequence[Placed],
        batch: Sequence[Message],
        report: FormationReport,
    ) -> list[str]:
        if not placed:
            return []
        order = {m.id: (m.created_at, i) for i, m in enumerate(batch)}
        # In message order, whatever order the model listed them in: a later statement
        # is compared with the earlier ones of the same batch, and wins.
        placed = sorted(placed, key=lambda item: _said_at(item[0], order))
        contents = [clip_words(f.content) for f, _, _ in placed]
        vectors = await self.embedder.embed(contents)
        candidates: list[CandidateFact] = []
        allowed: dict[int, dict[str, Fact]] = {}
        earlier: dict[int, dict[str, int]] = {}
        cache: dict[str, list[Fact]] = {}
        for i, (_, partition, _) in enumerate(placed):
            key = partition.key()
            if key not in cache:
                cache[key] = await self.facts.current_in_partition(partition)
            similar = self._similar(vectors[i], cache[key], contents[i])
            allowed[i] = {fact.id: fact for fact, _ in similar}
            candidates += [
                CandidateFact(id=fact.id, content=fact.content, similarity=score, new_index=i)
                for fact, score in similar
            ]
            earlier[i] = {}
            for j in range(i):
                score = float(np.dot(vectors[i], vectors[j]))
                close = score >= UPDATE_CANDIDATE_SIMILARITY or shares_slot(
                    contents[i], contents[j]
                )
                if placed[j][1] == partition and close:
                    earlier[i][f"new:{j}"] = j
                    candidates.append(
                        CandidateFact(
                            id=f"new:{j}",
                            content=contents[j],
                            similarity=score,
                            new_index=i,
                            earlier=True,
                        )
                    )
        decisions: dict[int, UpdateDecision] = {}
        if candidates:
            try:
                answer = await self.llm.run(
                    DECIDE_UPDATES, DecideUpdatesContext(new_facts=contents, candidates=candidates)
                )
                decisions = {d.new_index: d for d in answer.decisions}
            except LLMOutputError as exc:
                report.failed_steps.append("decide_updates")
                log.warning(
                    "formation batch=%s: update decisions skipped, adding (dedup applies): %s",
                    report.batch_id,
                    exc,
                )
        new_texts: list[str] = []
        stored_by_index: dict[int, Fact] = {}
        for i, (fact, partition, speaker) in enumerate(placed):
            decision = decisions.get(i)
            target = allowed[i].get(decision.target_id or "") if decision else None
            action = decision.action if decision else "ADD"
            provenance = Provenance(
                thread_id=thread.id, message_ids=fact.source_message_ids, speaker_id=speaker
            )
            prior = earlier[i].get(decision.target_id or "") if decision else None
            # The decision's wording, when it gives one, is the fact as it now stands ("…
            # moved to 4pm on Thursday, January 8": the day is kept).
            worded = (decision.content if decision else None) or contents[i]
            if prior is not None and action in ("UPDATE", "DELETE"):
                # A later message of this batch changes what an earlier one said: the later
                # wins, the earlier stays as history. Asked only when it is not the same
                # person correcting themselves within a minute, nor news of a move.
                before = stored_by_index.get(prior)
                if before is not None:
                    await self._contradiction(
                        thread,
                        fact,
                        partition,
                        provenance,
                        before,
                        speaker,
                        report,
                        ask=not (
                            says_it_changed(contents[i])
                            or _self_correction(placed[prior], placed[i], order)
                        ),
                        content=worded,
                    )
                    new_texts.append(worded)
                    continue
                action = "ADD"
            if action in ("UPDATE", "DELETE") and target is None:
                action = "ADD"  # a decision about a fact it was not shown is ignored
            if target is not None and action != "ADD" and _said_later(target, fact, order):
                # Between two statements the later message wins, whatever order they are
                # formed in: a correction made on the reply path after this message stays,
                # and what it replaced is kept as history, not lost.
                if action == "DELETE" or (decision is not None and decision.contradiction):
                    await self._superseded(contents[i], fact, partition, provenance, report)
                    continue
                action = "NONE"
            if action == "NONE":
                report.facts_unchanged += 1
            elif action == "DELETE" and target is not None:
                if await self.facts.invalidate(target.id, at=self.clock.now(), reason="deleted"):
                    report.facts_invalidated += 1
            elif (
                action == "UPDATE"
                and target is not None
                and decision is not None
                and not decision.contradiction
            ):
                if await self.writer.reword(target.id, worded, reason="refined"):
                    report.facts_updated += 1
                    new_texts.append(worded)
            elif action == "UPDATE" and target is not None:
                recent = target.provenance.speaker_id == speaker and _within(
                    target.valid_at, _said_at(fact, order)[0]
                )
                stored_new = await self._contradiction(
                    thread,
                    fact,
                    partition,
                    provenance,
                    target,
                    speaker,
                    report,
                    # "the review was moved to Friday" is news, not a contradiction to ask
                    # about.
                    ask=not (recent or says_it_changed(contents[i])),
                    content=worded,
                )
                if stored_new is not None:
                    stored_by_index[i] = stored_new
                new_texts.append(worded)
            else:
                stored = await self.writer.add_many(
                    [(contents[i], fact.category, fact.importance, partition, provenance)]
                )
                for stored_fact, created in stored:
                    stored_by_index[i] = stored_fact
                    if created:
                        report.facts_added += 1
                        new_texts.append(stored_fact.content)
                        if self.mirror is not None:
                            await self.mirror.mirror(stored_fact)
                    else:
                        report.facts_unchanged += 1
        return new_texts

    async def _superseded(
        self,
        content: str,
        fact: ExtractedFact,
        partition: Partition,
        provenance: Provenance,
        report: FormationReport,
    ) -> None:
        """Keep a statement a later message already replaced, as history only."""
        stored = await self.writer.add_many(
            [(content, fact.category, fact.importance, partition, provenance)]
        )
        for old, created in stored:
            if created and await self.facts.invalidate(
                old.id, at=self.clock.now(), reason="superseded by a later message"
            ):
                report.facts_invalidated += 1

    def _similar(
        self, vector: np.ndarray, existing: Sequence[Fact], content: str
    ) -> list[tuple[Fact, float]]:
        """The candidates of a new fact: the most similar current facts, and those that
        fill the same single-valued slot (:func:`memory.rules.slots.shares_slot`)."""
        return similar_facts(vector, existing, content)

    async def _contradiction(
        self,
        thread: Thread,
        fact: ExtractedFact,
        partition: Partition,
        provenance: Provenance,
        old: Fact,
        speaker: str | None,
        report: FormationReport,
        *,
        ask: bool,
        content: str,
    ) -> Fact | None:
        """The newest statement wins at once; the old fact stays as history, and the
        person is asked the next time they speak in this partition (unless ``ask`` is
        false: they corrected themselves)."""
        now = self.clock.now()
        await self.facts.invalidate(old.id, at=now, reason="contradicted")
        report.facts_invalidated += 1
        stored = await self.writer.add_many(
            [
                (
                    clip_words(content),
                    fact.category,
                    fact.importance,
                    partition,
                    provenance,
                )
            ]
        )
        new_fact = stored[0][0] if stored else None
        if stored and stored[0][1]:
            report.facts_added += 1
        owner = partition.owner_user_id or speaker
        if owner is None or new_fact is None or not self.conflicts or not ask:
            return new_fact
        question = f'I thought "{old.content}" — has that changed?'
        clarification = Clarification(
            id=hashlib.sha256(f"{old.id}|{new_fact.id}".encode()).hexdigest()[:24],
            user_id=owner,
            partition=partition,
            question=question,
            kind="contradiction",
            fact_id=new_fact.id,
            proposed_content=old.id,
            created_at=now,
        )
        if await self.notes.add_clarification(clarification):
            report.clarifications += 1
        return new_fact


def _said_later(old: Fact, fact: ExtractedFact, order: dict[str, tuple[datetime, int]]) -> bool:
    """Whether ``old`` was stated after every message ``fact`` was extracted from.

    Positions in the batch decide when both sides are in it (messages of one minute
    share a timestamp); otherwise the old fact's own time does (a hot-path fact is
    valid from the moment its message was said)."""
    said = [order[mid] for mid in fact.source_message_ids if mid in order]
    if not said:
        return False
    new_at = max(said)
    old_in_batch = [order[mid] for mid in old.provenance.message_ids if mid in order]
    if old_in_batch:
        return max(old_in_batch) > new_at
    return bool(old.valid_at > new_at[0])


def similar_facts(
    vector: np.ndarray | Sequence[float], existing: Sequence[Fact], content: str
) -> list[tuple[Fact, float]]:
    """Update candidates for a new fact with ``content``: the (at most
    :data:`CANDIDATES_PER_FACT`) current facts at or above the candidate similarity, and
    any that fill the same single-valued slot whatever their similarity."""
    usable = [f for f in existing if f.embedding is not None and len(f.embedding) == len(vector)]
    if not usable:
        return []
    matrix = np.asarray([f.embedding for f in usable], dtype=np.float32)
    scores = matrix @ np.asarray(vector, dtype=np.float32)
    order = np.argsort(-scores)[:CANDIDATES_PER_FACT]
    out = [
        (usable[int(i)], float(scores[int(i)]))
        for i in order
        if scores[int(i)] >= UPDATE_CANDIDATE_SIMILARITY
    ]
    shown = {f.id for f, _ in out}
    out += [
        (f, float(scores[n]))
        for n, f in enumerate(usable)
        if f.id not in shown and shares_slot(content, f.content)
    ]
    return out


def _said_at(fact: ExtractedFact, order: dict[str, tuple[datetime, int]]) -> tuple[datetime, int]:
    """When (and where in the batch) the last message a fact comes from was said; a fact
    citing no message of the batch counts as said with its last message."""
    said = [order[mid] for mid in fact.source_message_ids if mid in order]
    if said:
        return max(said)
    return max(order.values(), default=(datetime.max.replace(tzinfo=UTC), 0))


def _within(earlier: datetime, later: datetime) -> bool:
    return abs((later - earlier).total_seconds()) <= SELF_CORRECTION_SECONDS


def _self_correction(
    before: tuple[ExtractedFact, Partition, str | None],
    after: tuple[ExtractedFact, Partition, str | None],
    order: dict[str, tuple[datetime, int]],
) -> bool:
    """The same person changing what they said within a minute (no question needed)."""
    return (
        before[2] is not None
        and before[2] == after[2]
        and _within(_said_at(before[0], order)[0], _said_at(after[0], order)[0])
    )
