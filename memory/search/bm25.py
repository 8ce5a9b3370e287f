"""An in-memory Okapi BM25 index with add/remove, for the keyword leg of hybrid search.

Why it exists: outside Atlas (self-hosted MongoDB, the embedded server) there is no
``$search``, so keyword scoring is done by the application over the partition's facts
(DESIGN.md §6.4). The caller caches one index per privacy partition and keeps it in step
with the facts (add on insert/update, remove on delete/invalidation), so the index must
stay exactly correct under edits — no stale document frequencies, no ghost documents.

Scoring (Robertson/Sparck Jones with Lucene's non-negative idf)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    norm(d)     = k1 · (1 - b + b · |d| / avgdl)
    score(d, q) = Σ_{t ∈ set(q)} idf(t) · tf(t,d) · (k1 + 1) / (tf(t,d) + norm(d))

k1 = 0.9 and b = 0.4 (Anserini's defaults for short passages, not Lucene's 1.2 / 0.75):
facts and chat turns are a sentence or two, so a repeated term saturates sooner and
length says little about focus. On LoCoMo (5 dev conversations) this raised recall@10 of
the fused ranking from 0.699 to 0.705 and recall@20 from 0.763 to 0.771, on both halves
of the set, and the neighbourhood (k1 0.7-1.0, b 0.3-0.5) is a plateau, not a spike.

Each distinct query term counts once: a question that repeats a word should not double
its weight. N, df and avgdl are those of the whole index (the partition), also when only a
candidate subset is scored, so scores of a subset equal the full scores restricted to it.

Layout: documents live in integer slots (freed slots are reused); each term's postings are
a ``{slot: tf}`` dict, the source of truth, with a lazily rebuilt pair of numpy arrays per
term so that scoring is a few vectorised operations per query term.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence, Set

import numpy as np
import numpy.typing as npt

from memory.search.text import tokenize

Tokenizer = Callable[[str], list[str]]

_Postings = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]

#: Term-frequency saturation; lower than Lucene's 1.2 because documents are short.
DEFAULT_K1 = 0.9
#: Length normalisation; lower than Lucene's 0.75 because short texts vary little in focus.
DEFAULT_B = 0.4


class BM25Index:
    """Okapi BM25 over ``(doc_id, text)`` pairs, with add, replace and remove.

    Not thread-safe for concurrent writes; the caller serialises edits per partition.
    """

    def __init__(
        self,
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Tokenizer = tokenize,
    ) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer
        self._reset()

    def _reset(self) -> None:
        self._slot_of: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._free: list[int] = []
        self._doc_terms: list[Counter[str] | None] = []
        self._lengths = np.zeros(0, dtype=np.float32)
        self._total_length = 0
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, _Postings] = {}

    # --- edits -----------------------------------------------------------------------

    def add(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id``, replacing any earlier text of that id."""
        self.add_terms(doc_id, self._tokenize(text))

    def add_terms(self, doc_id: str, terms: Sequence[str]) -> None:
        """Index already tokenised terms (when the caller weights fields by repetition)."""
        if doc_id in self._slot_of:
            self.remove(doc_id)
        slot = self._allocate(doc_id)
        counts = Counter(terms)
        self._doc_terms[slot] = counts
        length = sum(counts.values())
        self._lengths[slot] = length
        self._total_length += length
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[slot] = tf
            self._arrays.pop(term, None)

    def add_many(self, docs: Iterable[tuple[str, str]]) -> None:
        """Index many ``(doc_id, text)`` pairs."""
        for doc_id, text in docs:
            self.add(doc_id, text)

    def remove(self, doc_id: str) -> bool:
        """Forget ``doc_id``; False if it was not indexed."""
        slot = self._slot_of.pop(doc_id, None)
        if slot is None:
            return False
        counts = self._doc_terms[slot] or Counter()  # an indexed slot always has its terms
        for term in counts:
            postings = self._postings[term]
            del postings[slot]
            if not postings:
                del self._postings[term]
            self._arrays.pop(term, None)
        self._total_length -= int(self._lengths[slot])
        self._lengths[slot] = 0.0
        self._doc_terms[slot] = None
        self._ids[slot] = None
        self._free.append(slot)
        return True

    def clear(self) -> None:
        """Forget every document."""
        self._reset()

    def _allocate(self, doc_id: str) -> int:
        if self._free:
            slot = self._free.pop()
            self._ids[slot] = doc_id
        else:
            slot = len(self._ids)
            self._ids.append(doc_id)
            self._doc_terms.append(None)
            if slot >= len(self._lengths):
                grown = np.zeros(max(16, 2 * len(self._lengths)), dtype=np.float32)
                grown[: len(self._lengths)] = self._lengths
                self._lengths = grown
        self._slot_of[doc_id] = slot
        return slot

    # --- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @property
    def doc_ids(self) -> list[str]:
        """The indexed ids, in no particular order."""
        return list(self._slot_of)

    @property
    def average_length(self) -> float:
        """avgdl: the mean document length in terms (0 when empty)."""
        return self._total_length / len(self._slot_of) if self._slot_of else 0.0

    def terms_of(self, doc_id: str) -> Set[str] | None:
        """The distinct terms this index's tokenizer made of ``doc_id``'s text (None if
        the id is not indexed): the set tokenizing the text again would give, without
        the work. A read-only view: an edit replaces a document's counts, never changes
        them."""
        slot = self._slot_of.get(doc_id)
        counts = None if slot is None else self._doc_terms[slot]
        return None if counts is None else counts.keys()

    def document_frequency(self, term: str) -> int:
        """How many documents contain ``term`` (an already tokenised term)."""
        return len(self._postings.get(term, ()))

    def idf(self, term: str) -> float:
        """Lucene's BM25 idf, never negative, so a very common term never lowers a score."""
        n = len(self._slot_of)
        df = self.document_frequency(term)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def query_terms(self, query: str) -> list[str]:
        """The distinct terms of ``query`` that BM25 scores, in first-seen order."""
        return list(dict.fromkeys(self._tokenize(query)))

    def _score_slots(self, terms: Sequence[str]) -> npt.NDArray[np.float32]:
        """Scores for every slot (free slots score 0)."""
        scores = np.zeros(len(self._ids), dtype=np.float32)
        if not self._slot_of:
            return scores
        avgdl = max(self.average_length, 1e-9)
        k1, b = self.k1, self.b
        for term in dict.fromkeys(terms):
            postings = self._term_arrays(term)
            if postings is None:
                continue
            slots, tfs = postings
            norm = k1 * (1.0 - b + b * self._lengths[slots] / avgdl)
            scores[slots] += np.float32(self.idf(term)) * tfs * (k1 + 1.0) / (tfs + norm)
        return scores

    def _term_arrays(self, term: str) -> _Postings | None:
        cached = self._arrays.get(term)
        if cached is not None:
            return cached
        postings = self._postings.get(term)
        if not postings:
            return None
        arrays = (
            np.fromiter(postings.keys(), dtype=np.int64, count=len(postings)),
            np.fromiter(postings.values(), dtype=np.float32, count=len(postings)),
        )
        self._arrays[term] = arrays
        return arrays

    def score(self, query: str, candidates: Collection[str] | None = None) -> dict[str, float]:
        """BM25 score of every matching document (score > 0), or of ``candidates`` only.

        With ``candidates``, every candidate that is indexed is in the result, zeros
        included, so the caller sees "indexed but no keyword match" as 0; unknown ids are
        skipped.
        """
        scores = self._score_slots(self.query_terms(query))
        if candidates is None:
            (hits,) = np.nonzero(scores > 0)
            return {self._id(int(slot)): float(scores[slot]) for slot in hits}
        out: dict[str, float] = {}
        for doc_id in candidates:
            slot = self._slot_of.get(doc_id)
            if slot is not None:
                out[doc_id] = float(scores[slot])
        return out

    def score_array(self, query: str, doc_ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """Scores aligned with ``doc_ids`` (0 for unknown ids), for array-based fusion."""
        scores = self._score_slots(self.query_terms(query))
        slots = np.fromiter((self._slot_of.get(doc_id, -1) for doc_id in doc_ids), dtype=np.int64)
        out = np.zeros(len(doc_ids), dtype=np.float32)
        known = slots >= 0
        out[known] = scores[slots[known]]
        return out

    def top_k(
        self, query: str, k: int, candidates: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best ``(doc_id, score)`` with a positive score, best first.

        Equal scores are ordered by doc id, so results are deterministic.
        """
        if k <= 0:
            return []
        scores = self._score_slots(self.query_terms(query))
        if candidates is not None:
            mask = np.zeros(len(scores), dtype=bool)
            slots = [self._slot_of[d] for d in candidates if d in self._slot_of]
            mask[slots] = True
            scores = np.where(mask, scores, np.float32(0.0))
        (hits,) = np.nonzero(scores > 0)
        if len(hits) > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        ranked = sorted(
            ((self._id(int(slot)), float(scores[slot])) for slot in hits),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return ranked[:k]

    def _id(self, slot: int) -> str:
        doc_id = self._ids[slot]
        if doc_id is None:  # search only scores slots with postings, which are live
            raise KeyError(f"BM25 slot {slot} holds no document")
        return doc_id
