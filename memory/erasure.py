"""Taking a person's words out of the notes, summaries, questions and messages that hold
them, for "forget …" and "forget everything about me".

A fact is one statement, so forgetting it deletes it. A note or a summary mixes many
statements, often several people's: deleting it whole would lose what others said, and
keeping it whole would keep what was forgotten. So each is rewritten sentence by
sentence: the sentences that say the forgotten thing go, the rest stay as they were
(nothing is re-worded, so nothing new is invented, with a model or without one). A note
left empty is deleted; a summary left empty is deleted and its surviving notes, already
scrubbed, return to the buffer, so the next consolidation rebuilds it from what remains.

Everything here is scoped by the caller: a targeted forget reaches only what the person
may forget there (their own partitions and the circle's shared ones, as for facts), so
another member's memories are never touched, whatever words they share.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from memory.models import (
    Clarification,
    Consolidated,
    Fact,
    Message,
    Partition,
    Reflection,
    Viewer,
)
from memory.privacy import is_visible
from memory.rules.text import split_sentences
from memory.search.text import tokenize
from memory.stores import JournalStore, NotesStore

#: Share of a needle's content terms a sentence must hold to say the same thing.
NEEDLE_COVERAGE: Final = 0.6
#: The same for a whole message, which is deleted rather than trimmed: stricter, as for
#: the messages of a forgotten fact (``memory.operations``).
MESSAGE_COVERAGE: Final = 0.75
#: Share of a sentence's own terms found in a needle for it to be a retelling of it
#: (a note that quotes a message), with at least :data:`RETELLING_MIN_SHARED` shared and
#: :data:`RETELLING_NEEDLE_SHARE` of the needle's terms (a short sentence made of a few
#: of a long message's words, "the water heater is in the basement", is not a retelling).
RETELLING_COVERAGE: Final = 0.75
RETELLING_MIN_SHARED: Final = 3
RETELLING_NEEDLE_SHARE: Final = 0.4
#: A message with fewer content terms than this is not looked for in shared notes
#: ("ok thanks" is in every summary, and nobody's secret).
ERASE_MIN_TERMS: Final = 3
#: How many of the person's latest messages visible here a targeted forget looks through.
MESSAGES_SCANNED: Final = 2000
#: A needle shorter than this is matched by its terms only, never as a bare substring.
MIN_LITERAL: Final = 4

#: The count names of the forget cascades, and how a reply names them.
KIND_NAMES: Final = {
    "facts": ("memory", "memories"),
    "reflections": ("note", "notes"),
    "consolidated": ("summary", "summaries"),
    "clarifications": ("pending question", "pending questions"),
    "messages": ("message", "messages"),
}


#: What Alfred journals instead of words it must not keep ("[a request to forget
#: something]"): nobody's words, and the record that a request was made.
PLACEHOLDER = re.compile(r"\[[^\[\]]{1,80}\]")


def mentions(
    needle: str, text: str, *, min_terms: int = 1, coverage: float = NEEDLE_COVERAGE
) -> bool:
    """Whether ``text`` says what ``needle`` says: the needle verbatim, most of its content
    terms (stemmed: "hidden in my sock drawer" meets "hid it in her socks drawer"), or
    ``text`` is a retelling made of the needle's terms. ``min_terms`` ignores needles
    with fewer content terms than that ("ok thanks" is nobody's secret)."""
    terms = set(tokenize(needle))
    if len(terms) < min_terms:
        return False
    literal = needle.strip().casefold()
    if len(literal) >= MIN_LITERAL and re.search(
        rf"(?<!\w){re.escape(literal)}(?!\w)", text.casefold()
    ):  # whole words: "forget … art" is not said by every message with "part" in it
        return True
    if not terms:
        return False
    own = set(tokenize(text))
    shared = terms & own
    if len(shared) >= min(2, len(terms)) and len(shared) / len(terms) >= coverage:
        return True
    return (
        len(shared) >= RETELLING_MIN_SHARED
        and len(shared) / max(len(own), 1) >= RETELLING_COVERAGE
        and len(shared) / len(terms) >= RETELLING_NEEDLE_SHARE
    )


def saying(
    needles: Sequence[str], *, min_terms: int = 1, coverage: float = NEEDLE_COVERAGE
) -> Callable[[str], bool]:
    """The test "does this sentence say one of ``needles``"."""
    return lambda sentence: any(
        mentions(n, sentence, min_terms=min_terms, coverage=coverage) for n in needles
    )


def without(text: str, doomed: Callable[[str], bool]) -> tuple[str, int]:
    """``text`` without its ``doomed`` sentences, line breaks kept, and how many went."""
    removed = 0
    lines: list[str] = []
    for line in text.splitlines():
        sentences = split_sentences(line)
        kept = [s for s in sentences if not doomed(s)]
        removed += len(sentences) - len(kept)
        if kept:
            lines.append(" ".join(kept) if len(kept) != len(sentences) else line.strip())
    return ("\n".join(lines), removed) if removed else (text, 0)


def names(name: str | None) -> Callable[[str], bool]:
    """The test "does this sentence name the person" (notes speak of people by name)."""
    if not name or not name.strip():
        return lambda _sentence: False
    pattern = re.compile(rf"\b{re.escape(name.strip())}\b", re.I)
    return lambda sentence: pattern.search(sentence) is not None


def describe_removed(counts: dict[str, int]) -> str:
    """ "1 memory, 2 notes and 3 messages": what a forget removed, in words."""
    parts = [
        f"{n} {names[0 if n == 1 else 1]}"
        for kind, names in KIND_NAMES.items()
        if (n := counts.get(kind, 0))
    ]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def add_counts(into: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    for kind, n in more.items():
        into[kind] = into.get(kind, 0) + n
    return into


@dataclass
class Scrubber:
    """Rewrites notes and summaries, and deletes questions and messages, that say what is
    being forgotten."""

    notes: NotesStore
    journal: JournalStore

    async def notes_of(
        self,
        reflections: Iterable[Reflection],
        blobs: Iterable[Consolidated],
        doomed: Callable[[str, Partition], bool],
    ) -> dict[str, int]:
        """Rewrite (or delete, when nothing is left) each note and summary given that has
        a ``doomed`` sentence. Notes go first, so a summary deleted here is rebuilt only
        from notes already scrubbed."""
        counts = {"reflections": 0, "consolidated": 0}

        def here(partition: Partition) -> Callable[[str], bool]:
            return lambda sentence: doomed(sentence, partition)

        for note in reflections:
            kept, removed = without(note.content, here(note.partition))
            if not removed:
                continue
            if kept.strip():
                await self.notes.rewrite_reflection(note.id, kept)
            else:
                await self.notes.delete_reflections([note.id])
            counts["reflections"] += 1
        for blob in blobs:
            kept, removed = without(blob.content, here(blob.partition))
            if not removed:
                continue
            if kept.strip():
                await self.notes.rewrite_blob(blob.id, kept)
            else:
                await self.notes.delete_blob(blob.id)
            counts["consolidated"] += 1
        return counts

    async def forget_here(
        self,
        viewer: Viewer,
        needles: Sequence[str],
        fact_ids: Sequence[str],
        *,
        name: str | None = None,
    ) -> dict[str, int]:
        """A targeted forget beyond facts, in what the person may forget here (their own
        partitions and the circle's shared ones, as for facts): notes and summaries are
        rewritten without the sentences that say it, their pending questions about it and
        their messages (and Alfred's replies to them) saying it are deleted.

        A shared note mixes the members' words, so there a sentence goes only when it is
        the person's too: it names them (``name``) or retells one of their messages here.
        Another member's sentence stays, whatever words it shares with the request."""
        said = await self._mine_here(viewer)
        about = saying(needles)
        theirs = saying([m.text for m in said if m.user_id], min_terms=ERASE_MIN_TERMS)
        named = names(name)

        def doomed(sentence: str, partition: Partition) -> bool:
            if not about(sentence):
                return False
            return partition.owner_user_id is not None or named(sentence) or theirs(sentence)

        reflections, blobs = await self.notes.all_visible(viewer)
        counts = await self.notes_of(
            (r for r in reflections if self._forgettable(r.partition, viewer)),
            (b for b in blobs if self._forgettable(b.partition, viewer)),
            doomed,
        )
        questions = [
            c
            for c in await self.notes.clarifications_for(viewer.user_id)
            if self._forgettable(c.partition, viewer)
        ]
        counts["clarifications"] = await self.clarifications(questions, about, fact_ids)
        says_it = saying(needles, coverage=MESSAGE_COVERAGE)
        counts["messages"] = await self.journal.delete_by_ids(
            [m.id for m in said if says_it(m.text) and not PLACEHOLDER.fullmatch(m.text.strip())]
        )
        return counts

    @staticmethod
    def _forgettable(partition: Partition, viewer: Viewer) -> bool:
        """What a person may forget here: their own memories and the circle's shared
        ones visible here."""
        return is_visible(partition, viewer) and partition.owner_user_id in (
            None,
            viewer.user_id,
        )

    async def _mine_here(self, viewer: Viewer) -> list[Message]:
        """The person's messages visible here, and Alfred's replies to them."""
        return [
            m
            for m in await self.journal.visible(viewer, limit=MESSAGES_SCANNED)
            if is_visible(m.partition, viewer)
            and m.partition.owner_user_id == viewer.user_id
            and m.user_id in (None, viewer.user_id)
        ]

    async def clarifications(
        self, items: Iterable[Clarification], doomed: Callable[[str], bool], fact_ids: Sequence[str]
    ) -> int:
        """Delete the questions that say something ``doomed`` or are about a deleted fact."""
        gone = set(fact_ids)
        ids = [
            c.id
            for c in items
            if c.fact_id in gone
            or c.proposed_content in gone
            or doomed(c.question)
            or doomed(c.proposed_content or "")
        ]
        return await self.notes.delete_clarifications(ids)

    async def shared_of(
        self, user_id: str, facts: Sequence[Fact], said: Sequence[Message]
    ) -> dict[str, int]:
        """For "forget everything about me": the circle-level notes, summaries and
        questions of the person's circles without the sentences that retell what they
        said or what was learned from them. Their own partitions are deleted whole by the
        caller; other members' are not touched (what Bob noted is Bob's)."""
        circles = {
            p.circle_id
            for p in (*(f.partition for f in facts), *(m.partition for m in said))
            if p.circle_id
        }
        keys = [Partition.circle(c).key() for c in sorted(circles)]
        if not keys:
            return {}
        stated = saying([f.content for f in facts])
        words = saying([m.text for m in said], min_terms=ERASE_MIN_TERMS)

        def doomed(sentence: str) -> bool:
            return stated(sentence) or words(sentence)

        counts = await self.notes_of(
            await self.notes.reflections_mentioning(keys, []),
            await self.notes.blobs_mentioning(keys, []),
            lambda sentence, _partition: doomed(sentence),
        )
        questions = [
            c
            for c in await self.notes.clarifications_for(user_id, keys)
            if c.partition.key() in keys
        ]
        counts["clarifications"] = await self.clarifications(
            questions, doomed, [f.id for f in facts]
        )
        return counts
