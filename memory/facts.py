"""Writing facts: normalise, hash, embed, store, with dedup per partition.

Both formation (background) and the hot path ("remember that …") store facts through
:class:`FactWriter`, so every fact carries its partition, hash, embedding model and
dimension the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from memory.constants import FACT_MAX_WORDS
from memory.ids import content_hash, new_id
from memory.models import Category, Fact, Partition, Provenance
from memory.ports import Clock, Embedder
from memory.search.context import clip_context, embedding_text


class FactWriteStore(Protocol):
    """The storage operations fact writing needs."""

    async def add(self, fact: Fact) -> tuple[Fact, bool]: ...

    async def update_content(
        self,
        fact_id: str,
        *,
        content: str,
        content_hash: str,
        embedding: Sequence[float] | None,
        embedding_model: str | None,
        at: datetime,
        reason: str | None = None,
        importance: int | None = None,
    ) -> Fact | None: ...

    async def invalidate(
        self, fact_id: str, *, at: datetime, reason: str | None = None
    ) -> bool: ...


def clip_words(text: str, limit: int = FACT_MAX_WORDS) -> str:
    """``text`` cut to ``limit`` words (facts are atomic; an overlong one is cut, not lost)."""
    words = " ".join(text.split()).split(" ")
    return " ".join(words[:limit])


class FactWriter:
    """Stores new facts and rewords existing ones, embedding as it goes."""

    def __init__(
        self,
        store: FactWriteStore,
        embedder: Embedder,
        clock: Clock,
        *,
        max_words: int | None = FACT_MAX_WORDS,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.clock = clock
        #: Facts are cut to this many words; None keeps them whole (benchmarks store turns).
        self.max_words = max_words

    def _clip(self, text: str) -> str:
        if self.max_words is None:
            return " ".join(text.split())
        return clip_words(text, self.max_words)

    async def add_many(
        self,
        items: Sequence[tuple[str, Category, int, Partition, Provenance]],
        *,
        subject_user_id: str | None = None,
        pinned: bool = False,
    ) -> list[tuple[Fact, bool]]:
        """Store facts (content, category, importance, partition, provenance) in one batch
        embedding call; returns each stored fact and whether it was new. ``pinned`` facts
        (what a person asked Alfred to remember) never fade with age."""
        cleaned = [(self._clip(c), cat, imp, p, _clipped(prov)) for c, cat, imp, p, prov in items]
        cleaned = [row for row in cleaned if row[0]]
        if not cleaned:
            return []
        # A turn of a conversation is embedded with the message it answered (its
        # provenance's context): memory.search.context says why and what it measured.
        vectors = await self.embedder.embed(
            [embedding_text(row[0], row[4].context) for row in cleaned]
        )
        now = self.clock.now()
        out: list[tuple[Fact, bool]] = []
        for (content, category, importance, partition, provenance), vector in zip(
            cleaned, vectors, strict=True
        ):
            fact = Fact(
                id=new_id(),
                content=content,
                hash=content_hash(content),
                category=category,
                importance=max(1, min(10, importance)),
                partition=partition,
                provenance=provenance,
                embedding=[float(x) for x in vector],
                embedding_model=self.embedder.model_name,
                embedding_dims=self.embedder.dimensions,
                valid_at=now,
                subject_user_id=subject_user_id or partition.owner_user_id,
                pinned=pinned,
                created_at=now,
                updated_at=now,
            )
            out.append(await self.store.add(fact))
        return out

    async def add(
        self,
        content: str,
        partition: Partition,
        *,
        category: Category = Category.FACT,
        importance: int = 5,
        provenance: Provenance | None = None,
    ) -> tuple[Fact, bool]:
        stored = await self.add_many(
            [(content, category, importance, partition, provenance or Provenance())]
        )
        if not stored:
            raise ValueError("a fact needs some content")
        return stored[0]

    async def reword(
        self,
        fact_id: str,
        content: str,
        *,
        reason: str | None = None,
        importance: int | None = None,
    ) -> Fact | None:
        """UPDATE: new wording for an existing fact, the old one kept in its history. The
        new wording is embedded alone and the store drops the old one's context: the
        message the old wording answered does not explain the new one."""
        content = self._clip(content)
        vector = (await self.embedder.embed([content]))[0]
        return await self.store.update_content(
            fact_id,
            content=content,
            content_hash=content_hash(content),
            embedding=[float(x) for x in vector],
            embedding_model=self.embedder.model_name,
            at=self.clock.now(),
            reason=reason,
            importance=importance,
        )


def _clipped(provenance: Provenance) -> Provenance:
    """``provenance`` with its context cut to what is embedded (nothing more is stored)."""
    context = clip_context(provenance.context)
    if context == provenance.context:
        return provenance
    return provenance.model_copy(update={"context": context})
