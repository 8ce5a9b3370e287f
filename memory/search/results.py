"""What a search returns: the facts found with their scores, and how each leg fared."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.search.candidate import Candidate


@dataclass(frozen=True, slots=True)
class ScoredFact:
    """A retrieved fact with its absolute scores (the same meaning for every query).

    ``relevance`` is how well the fact matches the query on the legs' fixed scales
    (:class:`memory.search.fusion.AbsoluteScale`); ``score`` blends it with recency,
    importance and access strength, as ranking does. Both are in [0, 1]. The order of a
    result is the ranking's, which compares the candidates of one query with each other.
    """

    fact: Candidate
    score: float
    relevance: float


@dataclass
class RetrievalResult:
    """What retrieval found, and how each leg fared (for probes, metrics and tests)."""

    retrieved: bool
    facts: list[ScoredFact] = field(default_factory=list)
    legs: dict[str, str] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: The viewer's own memories ranked first for a first-person query (see
    #: :data:`memory.search.own_first.FIRST_PERSON_MARGIN`); they stay first when recent
    #: messages are merged in.
    own_first: frozenset[str] = frozenset()
