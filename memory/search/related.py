"""Words a question and a memory use for the same thing, for the keyword leg.

A family asks "any dietary requirements?" of "Sam is allergic to shellfish", and "where
do I work?" of "Omar started a new job at the museum". The two share no keyword, and the
query's embedding finds them too weakly to pass the relevance floor (cosines 0.17-0.31
with the embedded model), so the answer was "I don't know" about a thing a family must
not get wrong. The stemmer does not join them either ("allergies" → ``allergi``,
"allergic" → ``allerg``).

So a query term of one of a few small families also searches the family's other words,
and a memory holding any of them covers that query term in the keyword share the
relevance floor reads (:meth:`memory.retrieval.Retriever._absolute`). The families are
kept narrow on purpose: each word in them means the family's thing in a household's
chat, so a match is not noise. A broad word ("food", "home") is not in any.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from memory.search.text import tokenize

#: Each family: words that name one thing a household asks about.
_FAMILIES: Final = (
    # what someone can eat ("what can Leo eat?" is asked of "Leo is vegetarian")
    "diet dietary eat vegetarian vegan pescatarian allergic allergy allergies intolerant"
    " intolerance halal kosher gluten coeliac celiac",
    # where someone works
    "work works working job jobs career employer employed workplace",
    # when someone was born
    "birthday born bday",
    # the animals a household keeps
    "pet pets dog dogs puppy cat cats kitten",
    # where someone lives (not "moved": "the review moved to Friday" is no home)
    "live lives living address neighbourhood neighborhood",
)


@lru_cache(maxsize=1)
def _stem_families() -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
    """Each stem of a family's words → the family's stems and its words."""
    out: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
    for family in _FAMILIES:
        words = tuple(family.split())
        stems = frozenset(tokenize(family))
        for stem in stems:
            out[stem] = (stems, words)
    return out


def related_stems(term: str) -> frozenset[str]:
    """The stems that mean what ``term`` (a stem) means, itself included."""
    found = _stem_families().get(term)
    return found[0] if found is not None else frozenset((term,))


def with_related_words(query: str) -> str:
    """``query`` with the words of the families its terms are in appended, for the
    keyword leg; unchanged when no term is in a family."""
    terms = set(tokenize(query))
    families = _stem_families()
    extra: dict[str, None] = {}
    for term in terms:
        if term in families:
            words = families[term][1]
            extra.update(dict.fromkeys(w for w in words if tokenize(w)[0] not in terms))
    return f"{query} {' '.join(sorted(extra))}" if extra else query


def covers(wanted: str, held: frozenset[str] | set[str]) -> bool:
    """Whether a memory holding the stems ``held`` covers the query stem ``wanted``."""
    return wanted in held or not related_stems(wanted).isdisjoint(held)


def keyword_share(wanted: set[str], held: frozenset[str] | set[str]) -> float:
    """The share of the query's stems ``wanted`` that a memory holding ``held`` covers (0
    for a query of none): the keyword share the relevance floors read."""
    return sum(covers(w, held) for w in wanted) / len(wanted) if wanted else 0.0
