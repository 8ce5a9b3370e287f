"""A fact as the search legs see it: the fields that ranking, the privacy check and the
memory block read, without the embedding (which stays in the index)."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from datetime import datetime

from memory.models import Category, Fact, Partition


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fact as retrieval sees it: enough to blend, check and show."""

    id: str
    content: str
    category: Category
    importance: int
    partition: Partition
    reinforced_at: datetime
    access_count: int
    #: Pinned memories do not fade: their recency stays at its maximum.
    pinned: bool = False
    #: The words of a message formation has not reached yet (the recent leg), as its
    #: author wrote them: shown as a quote of that person, never as a fact in its own
    #: voice ("I parked on level 3" is Bob's "I", not the reader's or Alfred's).
    said: bool = False
    #: The keyword terms of ``content`` (:func:`memory.search.text.tokenize`) when the
    #: backend already holds them (the BM25 index does), so scoring need not tokenize
    #: again; ``None`` means "tokenize the content". Not part of equality.
    terms: Set[str] | None = field(default=None, compare=False, repr=False)


def candidate_of(fact: Fact) -> Candidate:
    """A stored fact as a retrieval candidate."""
    return Candidate(
        id=fact.id,
        content=fact.content,
        category=fact.category,
        importance=fact.importance,
        partition=fact.partition,
        reinforced_at=fact.reinforced_at,
        access_count=fact.access_count,
        pinned=fact.pinned,
    )
