"""The recent-messages leg: what was said minutes ago counts at once (DESIGN.md §6.6).

Formation turns messages into facts only in the background (when a session goes cold,
after 45 messages, or once a quiet thread's oldest message is 6 hours old). Until then
a statement ("I'm allergic to kiwi, by the way") exists only in the journal, and fact
retrieval cannot find it. This leg searches the viewer's *visible* unformed user
messages: the journal query carries the privacy filter (:func:`memory.privacy.and_visible`)
and every message is checked again with :func:`memory.privacy.is_visible`, so a DM line
never reaches a group, another member's DM or another circle — exactly the rule facts obey,
since a journaled message carries the partition its facts would get.

Scores are absolute (the same message scores the same for every query): relevance is a
fixed mix of the cosine between the query and the message and the share of the query's
keywords the message contains, and a message matching neither well enough is dropped.
Messages that are no statements are skipped: questions, commands, requests to forget
or delete, what an explicit request already stored (``handled``), and the query itself.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

import numpy as np

from memory.models import Category, Message, Viewer
from memory.ports import Embedder, Vector
from memory.privacy import is_visible
from memory.search.candidate import Candidate
from memory.search.fusion import BlendConfig, importance_score, recency_score
from memory.search.related import keyword_share
from memory.search.text import CHAT_STOPWORDS, ENGLISH_STOPWORDS, tokenize

log = logging.getLogger(__name__)

#: A raw message weighs like an ordinary fact (importance is 1-10).
MESSAGE_IMPORTANCE = 5
#: A command ("/…"), a request's placeholder ("[…]") or a question.
_NOT_A_STATEMENT = re.compile(r"^\s*(?:/|\[)|\?\s*\W*$")
#: A message that asks to forget, erase or delete, however it addresses Alfred ("@alfred
#: please forget …"), understood as a request or not ("forget Hana"): recalled as a
#: memory, it would read as the thing Alfred was asked to remove.
DELETE_REQUEST = re.compile(
    r"^\s*(?:@\w+\s*,?\s*)?(?:alfred\s*,?\s*)?(?:please\s+)?(?:forget|erase|delete)\b",
    re.IGNORECASE,
)


class RecentMessages(Protocol):
    """The journal's read for this leg: the viewer's visible unformed user messages,
    newest first, with the privacy filter inside the query."""

    async def unformed_visible(self, viewer: Viewer, *, limit: int) -> list[Message]: ...


@dataclass(frozen=True)
class RecentConfig:
    """How the leg reads and scores; fixed scales, so a score means the same everywhere."""

    #: Newest visible unformed messages considered per query.
    max_messages: int = 20
    #: A message no query keyword appears in needs at least this cosine (a raw chat
    #: line is noisier than a fact, so the bar is higher than the fact legs').
    min_dense: float = 0.35
    #: Relevance = dense_weight · cosine + (1 - dense_weight) · keyword share.
    dense_weight: float = 0.6
    #: Message vectors kept between queries (a message's text never changes).
    cache_size: int = 2048


class RecentLeg:
    """Scores the viewer's visible unformed messages against a query."""

    def __init__(
        self,
        source: RecentMessages,
        embedder: Embedder,
        config: RecentConfig = RecentConfig(),
        blend: BlendConfig | None = None,
    ) -> None:
        self.source = source
        self.embedder = embedder
        self.config = config
        self.blend = blend or BlendConfig()
        self._vectors: OrderedDict[str, Vector] = OrderedDict()

    async def search(
        self,
        viewer: Viewer,
        query: str,
        now: datetime,
        *,
        budget: float = 0.45,
        vector: Awaitable[Vector | None] | None = None,
        about: Mapping[str, str] | None = None,
    ) -> list[tuple[Candidate, float, float]]:
        """``(candidate, score, relevance)`` for each matching message, best first.

        Within ``budget`` seconds: the journal read may raise :class:`TimeoutError`;
        embeddings that come late leave the keyword share alone to decide. ``vector`` is
        the query's embedding when the caller computes it anyway (shared, not cancelled
        here); without it the query is embedded with the messages. ``about`` (user id to
        name, the people the query names) makes a speaker's name a term of what they said,
        as for facts (:mod:`memory.retrieval`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        stored = await asyncio.wait_for(
            self.source.unformed_visible(viewer, limit=self.config.max_messages), budget
        )
        messages = [m for m in stored if is_visible(m.partition, viewer) and _statement(m, query)]
        if not messages:
            return []
        asked = set(tokenize(query))
        names = {user: frozenset(tokenize(name)) for user, name in (about or {}).items()}
        try:
            cosines = await asyncio.wait_for(
                self._cosines(query, messages, vector), max(0.0, deadline - loop.time())
            )
        except Exception as exc:  # late or failed: keywords only, never no answer
            log.info("recent leg without vectors: %s", type(exc).__name__)
            cosines = [0.0] * len(messages)
        found: list[tuple[Candidate, float, float]] = []
        for message, cosine in zip(messages, cosines, strict=True):
            terms = set(tokenize(message.text)) | names.get(message.user_id or "", frozenset())
            share = keyword_share(asked, terms)
            if share <= 0 and cosine < self.config.min_dense:
                continue
            weight = self.config.dense_weight
            relevance = weight * max(0.0, cosine) + (1 - weight) * share
            candidate = Candidate(
                id=message.id,
                content=message.text.strip(),
                category=Category.CONTEXT,
                importance=MESSAGE_IMPORTANCE,
                partition=message.partition,
                reinforced_at=message.created_at,
                access_count=0,
                said=True,
            )
            found.append((candidate, self._score(relevance, message.created_at, now), relevance))
        return sorted(found, key=lambda hit: (-hit[1], hit[0].id))

    def _score(self, relevance: float, said_at: datetime, now: datetime) -> float:
        """The blend of DESIGN §6.3 with absolute relevance (no per-query rescaling)."""
        b = self.blend
        age_days = (now - said_at).total_seconds() / 86400.0
        recency = recency_score(age_days, b.half_life_days, b.recency_floor)
        total = b.relevance_weight + b.recency_weight + b.importance_weight + b.strength_weight
        return (
            b.relevance_weight * min(1.0, relevance)
            + b.recency_weight * recency
            + b.importance_weight * importance_score(MESSAGE_IMPORTANCE)
        ) / total

    async def _cosines(
        self,
        query: str,
        messages: Sequence[Message],
        shared: Awaitable[Vector | None] | None,
    ) -> list[float]:
        missing = [m for m in messages if m.id not in self._vectors]
        texts = [m.text for m in missing]
        if shared is None:
            texts.insert(0, query)
        vectors = list(await self.embedder.embed(texts)) if texts else []
        if shared is None:
            given: Vector | None = vectors.pop(0)
        else:
            given = await asyncio.shield(shared)
        if given is None:
            raise LookupError("no query vector")
        q = _unit(np.asarray(given, dtype=np.float32))
        for message, vector in zip(missing, vectors, strict=True):
            self._vectors[message.id] = _unit(np.asarray(vector, dtype=np.float32))
        for message in messages:
            self._vectors.move_to_end(message.id)
        while len(self._vectors) > self.config.cache_size:
            self._vectors.popitem(last=False)
        return [float(np.dot(q, self._vectors[m.id])) for m in messages]


def is_statement(text: str) -> bool:
    """Whether journaled ``text`` states something: not empty, not a command ("/…"), not
    the placeholder the journal keeps for a request ("[…]"), not a question, not a request
    to forget or delete, and not small talk alone ("hi", "ok thanks": no word of a topic,
    so "what do you remember about me?" does not list it)."""
    return (
        bool(text.strip())
        and not _NOT_A_STATEMENT.search(text)
        and not DELETE_REQUEST.match(text)
        and bool(tokenize(text, stopwords=_SMALL_TALK))
    )


_GREETINGS: Final = """
    everyone everybody guys folks all team good morning afternoon evening night bye goodbye
    cheers welcome great cool nice awesome sure alright
"""
#: Words that state nothing on their own: the stopwords, chat's fillers and greetings.
_SMALL_TALK: Final = ENGLISH_STOPWORDS | CHAT_STOPWORDS | frozenset(_GREETINGS.split())


def _statement(message: Message, query: str) -> bool:
    """Whether a message may answer: a statement, and not the query itself."""
    text = message.text.strip()
    if not is_statement(text):
        return False
    return " ".join(text.casefold().split()) != " ".join(query.casefold().split())


def _unit(vector: Vector) -> Vector:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
