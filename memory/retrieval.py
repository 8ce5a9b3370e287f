"""Hybrid retrieval of facts for a viewer: legs with the privacy filter inside, fused,
blended with recency and importance, re-checked, best first.

The viewer is a required argument of every call: there is no way to search "all facts".
Each leg (dense, keyword, optionally mem0) runs with its own timeout; a leg that fails
or is late is dropped and the others answer (DESIGN.md §6.4). Whatever the legs return
is resolved to facts through a query that carries the privacy filter again, and every
fact is checked once more by :func:`memory.privacy.is_visible` before it is returned.

With a :class:`memory.search.recent.RecentLeg`, the viewer's visible unformed messages are
one more leg (DESIGN.md §6.6): what was said minutes ago, before formation made facts of
it, is found at once, under the same privacy rule. Its hits join the facts by score.

A query may name people (``about``: the members a group message names, resolved by the
caller). The speaker of a memory is metadata, not text ("pad thai is my comfort food",
said by Bob), so a memory's owner's name counts as one of its terms: "any ideas for
dinner with Bob?" matches what Bob said as a memory containing "Bob" would, for the
floors and the absolute relevance. Ranking among the candidates is unchanged, and only
what the legs found (privacy filter inside) is ever considered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory.heuristics import dynamic_limit, should_retrieve
from memory.models import Viewer
from memory.ports import Clock, Embedder, Vector
from memory.privacy import is_visible
from memory.search.candidate import Candidate
from memory.search.config import RetrievalConfig
from memory.search.fusion import (
    FusionMethod,
    absolute_relevance,
    blend_standings,
    fuse,
    rrf_fusion,
    standing,
    strongest_leg,
    weighted_fusion,
)
from memory.search.guess import Guess, guess_key, stamp_of
from memory.search.own_first import own_first
from memory.search.recent import RecentLeg
from memory.search.related import keyword_share, with_related_words
from memory.search.results import RetrievalResult, ScoredFact
from memory.search.text import tokenize

log = logging.getLogger(__name__)

#: Longest query text that is embedded and searched; the rest adds nothing but latency.
MAX_QUERY_CHARS = 2000
#: Embeddings started ahead (:meth:`Retriever.warm`) kept until their search comes.
WARM_KEPT = 8
#: Loop turns a ranking made ahead (:meth:`Retriever.foresee`) lets pass before it starts,
#: so that the reads the turn sends next go out first (its CPU would hold them back).
YIELDS_BEFORE_GUESSING = 3


class PreparedSearch(Protocol):
    """One search over what a viewer may see; built per query by a backend."""

    async def dense(self, vector: Vector, k: int) -> dict[str, float]: ...

    async def keyword(self, text: str, k: int) -> dict[str, float]: ...

    async def resolve(self, ids: Sequence[str]) -> dict[str, Candidate]: ...


class SearchBackend(Protocol):
    """Application-side (in-memory indexes) or Atlas (``$vectorSearch``/``$search``)."""

    name: str

    async def prepare(self, viewer: Viewer) -> PreparedSearch: ...


@runtime_checkable
class PeekingBackend(Protocol):
    """A backend that can name, without a read, the search a viewer's last one used
    (the application-side one; Atlas keeps no index to name). Only such a backend gets
    rankings made ahead (:meth:`Retriever.foresee`); any other searches as always."""

    def peek(self, viewer: Viewer) -> PreparedSearch | None: ...


#: An extra leg (mem0): returns local fact ids with scores, already filtered by viewer.
ExtraLeg = Callable[[Viewer, str, int], Awaitable[dict[str, float]]]


def _query_text(query: str) -> str:
    """What is embedded and searched for ``query``: single spaces, at most
    :data:`MAX_QUERY_CHARS` (a warmed embedding is found again by this text)."""
    return " ".join(query.split())[:MAX_QUERY_CHARS]


class Retriever:
    """Finds the facts a viewer may see that best answer a message."""

    def __init__(
        self,
        backend: SearchBackend,
        embedder: Embedder,
        clock: Clock,
        config: RetrievalConfig | None = None,
        extra_legs: Mapping[str, ExtraLeg] | None = None,
        on_access: Callable[[Sequence[str], datetime], Awaitable[None]] | None = None,
        recent: RecentLeg | None = None,
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.clock = clock
        self.config = config if config is not None else RetrievalConfig()
        self.extra_legs = dict(extra_legs or {})
        self._on_access = on_access
        self.recent = recent
        self._background: set[asyncio.Task[None]] = set()
        #: Query embeddings started ahead of their search (:meth:`warm`), by query text.
        self._warming: dict[str, asyncio.Task[npt.NDArray[np.float32]]] = {}
        #: Rankings made ahead of their search (:meth:`foresee`), by viewer and query.
        self._guesses: dict[tuple[str, str, str, str], Guess[RetrievalResult]] = {}

    def warm(self, message: str) -> bool:
        """Start embedding ``message`` now, for a :meth:`for_message` on it that comes
        after the turn's first round trips: the model runs in its thread while the reply
        path waits on the database, instead of after it. Only a message the heuristic
        would search for is embedded; an unused embedding is dropped after a few more.
        True when one was started (the caller's next await lets it begin)."""
        text = _query_text(message)
        if not text or text in self._warming or not should_retrieve(message):
            return False
        while len(self._warming) >= WARM_KEPT:
            self._warming.pop(next(iter(self._warming))).cancel()
        task = asyncio.create_task(self.embedder.embed([text]))
        # A failure is seen (and logged) by the search that awaits it; one nobody
        # awaits is collected here, so it is never reported as unretrieved.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._warming[text] = task
        return True

    def foresee(self, viewer: Viewer, message: str) -> None:
        """Rank the facts for ``message`` now, on the index ``viewer``'s last search here
        used, while the turn's reads that confirm (or update) that index are in flight:
        the ranking's CPU overlaps the database's time instead of following it. The
        search takes it only if the index it confirms is that very index, unchanged
        (:class:`Guess`); anything else, and it ranks as it always does."""
        text = _query_text(message)
        backend = self.backend
        key = guess_key(viewer, text)
        if not text or not isinstance(backend, PeekingBackend) or self.extra_legs:
            return  # another leg (mem0) asks a service: a guess would ask it twice
        if key in self._guesses or not should_retrieve(message):
            return
        prepared = backend.peek(viewer)
        stamp = stamp_of(prepared)
        if prepared is None or stamp is None:
            return
        while len(self._guesses) >= WARM_KEPT:
            self._guesses.pop(next(iter(self._guesses))).drop()
        result = RetrievalResult(retrieved=True)
        vector = asyncio.create_task(self._embed(text, result))
        guess = Guess(dynamic_limit(message), stamp, result, vector, prepared)
        guess.task = asyncio.create_task(self._guessed(guess, viewer, text))
        guess.task.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._guesses[key] = guess

    async def _guessed(self, guess: Guess[RetrievalResult], viewer: Viewer, text: str) -> object:
        """The guess's ranking; the index's stamp after it (a change while it ran voids it)."""
        # Shielded: a guess dropped while it waits must not cancel the embedding the
        # search that replaces it still needs.
        vector = asyncio.shield(guess.vector)
        for _ in range(YIELDS_BEFORE_GUESSING):
            await asyncio.sleep(0)
        source = cast(PreparedSearch, guess.source)
        await self._rank(source, viewer, text, guess.limit, guess.result, vector, {})
        return stamp_of(source)

    async def for_message(
        self, viewer: Viewer, message: str, *, about: Mapping[str, str] | None = None
    ) -> RetrievalResult:
        """Retrieval on the reply path: the heuristic decides whether, and how many. A
        message that names someone (``about``: user id to name) is about people, which
        the heuristic counts as a reason to search (seed 004 §15.1)."""
        if not (about or should_retrieve(message)):
            return RetrievalResult(retrieved=False)
        return await self.search(viewer, message, limit=dynamic_limit(message), about=about)

    async def search(
        self,
        viewer: Viewer,
        query: str,
        *,
        limit: int,
        about: Mapping[str, str] | None = None,
    ) -> RetrievalResult:
        """The ``limit`` best facts for ``query`` that ``viewer`` may see in their thread,
        with their visible unformed messages among them when the recent leg is on.
        ``about`` maps the user ids of people the query names to their names."""
        text = _query_text(query)
        guess = self._guesses.pop(guess_key(viewer, text), None)
        if self.recent is None or limit <= 0 or not text:
            return await self._search_facts(
                viewer,
                query,
                limit=limit,
                about=about,
                guess=guess,
                vector_task=guess.vector if guess is not None else None,
            )
        # One embedding of the query serves the fact legs and the recent leg.
        result = RetrievalResult(retrieved=True)
        if guess is not None:
            vector = guess.vector
        else:
            vector = asyncio.create_task(self._embed(text, result))
            await asyncio.sleep(0)  # to its thread before the reads are encoded: the longest
        started = time.perf_counter()
        recent = asyncio.create_task(self._timed_recent(viewer, text, vector, about))
        result = await self._search_facts(
            viewer, query, limit=limit, result=result, vector_task=vector, about=about, guess=guess
        )
        facts_took = time.perf_counter() - started
        hits = await recent
        if hits == "timeout" and facts_took > self.config.leg_timeout_s:
            # The facts ran past the leg's budget too (an index's first load keeps the
            # embedded server busy, and the journal's read waits behind it): the reply
            # waited anyway, so what was said minutes ago is read again, now.
            hits = await self._timed_recent(viewer, text, vector, about)
        if hits == "timeout":
            log.warning("retrieval leg recent timed out")
        if isinstance(hits, str):
            result.legs["recent"] = hits
            return result
        result.legs["recent"] = f"ok ({len(hits)})"
        recent_hits = sorted(
            (
                ScoredFact(c, score, rel)
                for c, score, rel in hits
                if is_visible(c.partition, viewer)
            ),
            key=lambda f: (-f.score, f.fact.id),
        )
        result.facts = _interleave(result.facts, recent_hits)[:limit]
        return result

    async def _timed_recent(
        self,
        viewer: Viewer,
        text: str,
        vector: asyncio.Task[Vector | None],
        about: Mapping[str, str] | None = None,
    ) -> list[tuple[Candidate, float, float]] | str:
        """The recent leg's hits, or why it has none (late or failed: the others answer)."""
        leg = self.recent
        if leg is None:
            return "off"
        try:
            return await leg.search(
                viewer,
                text,
                self.clock.now(),
                budget=self.config.leg_timeout_s,
                vector=vector,
                about=about,
            )
        except TimeoutError:
            return "timeout"
        except Exception as exc:
            log.warning("retrieval leg recent failed: %s", type(exc).__name__)
            return f"failed: {type(exc).__name__}"

    async def _search_facts(
        self,
        viewer: Viewer,
        query: str,
        *,
        limit: int,
        result: RetrievalResult | None = None,
        vector_task: asyncio.Task[Vector | None] | None = None,
        about: Mapping[str, str] | None = None,
        guess: Guess[RetrievalResult] | None = None,
    ) -> RetrievalResult:
        """The ``limit`` best facts for ``query`` that ``viewer`` may see in their thread
        (with the query's embedding already under way when ``vector_task`` is given). A
        ``guess`` (:meth:`Retriever.foresee`) is taken when it ranked exactly the index
        this search would rank."""
        result = result or RetrievalResult(retrieved=True)
        text = _query_text(query)
        if limit <= 0 or not text:
            return result
        started = time.perf_counter()
        vector_task = vector_task or asyncio.create_task(self._embed(text, result))
        prepared = await self.backend.prepare(viewer)
        result.timings_ms["prepare"] = _ms(started)
        if guess is not None and await guess.holds_for(prepared, limit, about or {}):
            guessed = guess.result
            result.facts, result.own_first = guessed.facts, guessed.own_first
            result.legs.update(guessed.legs)
            result.timings_ms.update(guessed.timings_ms)
            result.timings_ms["total"] = _ms(started)
            self._record_access([f.fact.id for f in result.facts], self.clock.now())
            return result
        ranked = await self._rank(prepared, viewer, text, limit, result, vector_task, about or {})
        if guess is not None:  # the query's embedding was the guess's, and so is its record
            embedded = guess.result
            if "embed" in embedded.legs:
                result.legs["embed"] = embedded.legs["embed"]
            if "embed" in embedded.timings_ms:
                result.timings_ms["embed"] = embedded.timings_ms["embed"]
        result.timings_ms["total"] = _ms(started)
        self._record_access(ranked, self.clock.now())
        return result

    async def _rank(
        self,
        prepared: PreparedSearch,
        viewer: Viewer,
        text: str,
        limit: int,
        result: RetrievalResult,
        vector_task: Awaitable[Vector | None],
        about: Mapping[str, str],
    ) -> list[str]:
        """Fill ``result`` with the ``limit`` best facts of ``prepared`` for ``text``;
        the ids ranked, whose recall the caller records."""
        k = max(self.config.leg_k, limit)

        legs: dict[str, Awaitable[dict[str, float]]] = {
            "keyword": prepared.keyword(with_related_words(text), k),
            "dense": self._dense(prepared, vector_task, k),
        }
        for name, leg in self.extra_legs.items():
            legs[name] = leg(viewer, text, k)
        outcomes = await asyncio.gather(
            *(self._timed(name, aw, result) for name, aw in legs.items())
        )
        scores = dict(zip(legs, outcomes, strict=True))

        fused = self._fuse(scores)
        named = await self._named(prepared, scores, about)
        if self.config.min_dense > 0:
            dense, keyword = scores.get("dense", {}), scores.get("keyword", {})
            extras = {
                i for name, hits in scores.items() if name not in ("dense", "keyword") for i in hits
            }
            fused = {
                i: v
                for i, v in fused.items()
                if keyword.get(i, 0.0) > 0
                or dense.get(i, 0.0) >= self.config.min_dense
                or i in extras
                or i in named
            }
        if not fused:
            return []
        shortlist = sorted(fused, key=lambda i: (-fused[i], i))[: max(limit * 4, 20)]
        resolved = await prepared.resolve(shortlist)
        now = self.clock.now()
        absolute, strongest = self._absolute(text, scores, resolved, named)
        visible = {
            i: c
            for i, c in resolved.items()
            if is_visible(c.partition, viewer)
            and i in fused
            and strongest.get(i, 0.0) >= self.config.min_relevance
        }

        config = self.config.blend
        standings = {
            i: standing(
                age_days=(now - c.reinforced_at).total_seconds() / 86400.0,
                importance=c.importance,
                access_count=c.access_count,
                pinned=c.pinned,
                config=config,
            )
            for i, c in visible.items()
        }
        final = blend_standings(fused, standings, config)
        scored = blend_standings(absolute, standings, config, absolute=True)
        first = own_first(text, viewer, visible, scores.get("dense", {}))
        result.own_first = frozenset(first)
        ranked = sorted(final, key=lambda i: (i not in first, -final[i], i))[:limit]
        result.facts = [ScoredFact(visible[i], scored[i], absolute.get(i, 0.0)) for i in ranked]
        return ranked

    async def _embed(self, text: str, result: RetrievalResult) -> Vector | None:
        started = time.perf_counter()
        warmed = self._warming.pop(text, None)
        try:
            vectors = await asyncio.wait_for(
                warmed if warmed is not None else self.embedder.embed([text]),
                timeout=self.config.embed_timeout_s,
            )
        except Exception as exc:
            result.legs["embed"] = f"failed: {type(exc).__name__}"
            log.warning("query embedding failed (%s); keyword leg only", type(exc).__name__)
            return None
        finally:
            result.timings_ms["embed"] = _ms(started)
        if vectors.shape != (1, self.embedder.dimensions):
            result.legs["embed"] = f"wrong shape {vectors.shape}"
            log.warning("embedder returned shape %s; keyword leg only", vectors.shape)
            return None
        vector: Vector = np.asarray(vectors[0], dtype=np.float32)
        return vector

    async def _dense(
        self, prepared: PreparedSearch, vector_task: Awaitable[Vector | None], k: int
    ) -> dict[str, float]:
        vector = await vector_task
        if vector is None:
            raise LegSkipped("no query vector")
        return await prepared.dense(vector, k)

    async def _timed(
        self, name: str, leg: Awaitable[dict[str, float]], result: RetrievalResult
    ) -> dict[str, float]:
        started = time.perf_counter()
        try:
            hits = await asyncio.wait_for(leg, timeout=self.config.leg_timeout_s)
        except TimeoutError:
            result.legs[name] = "timeout"
            log.warning("retrieval leg %s timed out", name)
            return {}
        except LegSkipped as exc:
            result.legs[name] = f"skipped: {exc}"
            return {}
        except Exception as exc:
            result.legs[name] = f"failed: {type(exc).__name__}"
            log.warning("retrieval leg %s failed: %s", name, type(exc).__name__)
            return {}
        finally:
            result.timings_ms[name] = _ms(started)
        result.legs.setdefault(name, f"ok ({len(hits)})")
        return hits

    def _leg_weight(self, name: str) -> float:
        """A leg's weight, the same in the ranking's fusion and in absolute relevance."""
        if name == "dense":
            return self.config.fusion.dense_weight
        if name == "keyword":
            return self.config.fusion.keyword_weight
        return self.config.extra_weight

    def _fuse(self, scores: Mapping[str, dict[str, float]]) -> dict[str, float]:
        dense = scores.get("dense", {})
        keyword = scores.get("keyword", {})
        extras = [v for k, v in scores.items() if k not in ("dense", "keyword")]
        if not extras:
            return fuse(dense, keyword, self.config.fusion)
        legs = [dense, keyword, *extras]
        weights = [self._leg_weight(n) for n in ("dense", "keyword")] + [
            self.config.extra_weight
        ] * len(extras)
        if self.config.fusion.method is FusionMethod.RRF:
            return rrf_fusion(legs, k=self.config.fusion.rrf_k, weights=weights)
        return weighted_fusion(legs, weights)

    async def _named(
        self,
        prepared: PreparedSearch,
        scores: Mapping[str, dict[str, float]],
        about: Mapping[str, str],
    ) -> dict[str, frozenset[str]]:
        """The legs' hits owned by someone the query names, each with that person's
        name terms (the owner's name counts as a term of what they said)."""
        if not about or "keyword" not in scores:
            return {}
        names = {owner: frozenset(tokenize(name)) for owner, name in about.items()}
        pool = sorted({i for hits in scores.values() for i in hits})
        owners = await prepared.resolve(pool)
        return {
            i: names[owner]
            for i, c in owners.items()
            if (owner := c.partition.owner_user_id) in names and names[owner]
        }

    def _absolute(
        self,
        query: str,
        scores: Mapping[str, dict[str, float]],
        resolved: Mapping[str, Candidate],
        named: Mapping[str, frozenset[str]] | None = None,
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Each resolved candidate's absolute relevance, and its strongest single leg's
        (what the floor reads): the legs' similarities as they are, and for the keyword
        leg the share of the query's terms the memory holds. A memory of someone the
        query names counts their name among its terms (``named``)."""
        wanted = set(tokenize(query))
        named = named or {}
        coverage: dict[str, float] = {}
        for i, c in resolved.items():
            if wanted and (i in scores.get("keyword", {}) or i in named):
                held = c.terms if c.terms is not None else frozenset(tokenize(c.content))
                terms = set(held) | named.get(i, frozenset())
                coverage[i] = keyword_share(wanted, terms)
        scores = {**scores, "keyword": coverage} if "keyword" in scores else dict(scores)
        names = list(scores)
        weights = [self._leg_weight(name) for name in names]
        if sum(weights) <= 0:
            return {}, {}
        # Only the resolved candidates are read: the rest of a leg's hits are not ranked.
        legs = [{i: v for i, v in scores[n].items() if i in resolved} for n in names]
        return (
            absolute_relevance(legs, names, weights, self.config.scale),
            strongest_leg(legs, names, self.config.scale),
        )

    def _record_access(self, ids: list[str], at: datetime) -> None:
        """Fire-and-forget: access tracking must never slow down or fail a reply."""
        if not ids or self._on_access is None:
            return
        task = asyncio.create_task(self._safe_access(ids, at))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _safe_access(self, ids: list[str], at: datetime) -> None:
        on_access = self._on_access
        if on_access is None:
            return
        try:
            await on_access(ids, at)
        except Exception as exc:
            log.info("access tracking failed: %s", type(exc).__name__)

    async def drain(self) -> None:
        """Wait for background access updates (tests, shutdown)."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)


class LegSkipped(Exception):
    """A leg that had nothing to run with (no query vector)."""


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _interleave(ranked: list[ScoredFact], recent: list[ScoredFact]) -> list[ScoredFact]:
    """The facts in their ranking's order, each recent message placed before the first
    fact that scores lower (both scores are absolute). Sorting everything by score instead
    would undo the ranking, which compares one query's candidates (recall@10 on LoCoMo
    fell from 0.69 to 0.37 that way)."""
    out: list[ScoredFact] = []
    pending = list(recent)
    for fact in ranked:
        while pending and pending[0].score > fact.score:
            out.append(pending.pop(0))
        out.append(fact)
    return out + pending
