"""The keyword leg's words of the same thing: narrow families, and nothing else widened."""

from __future__ import annotations

from memory.search.related import covers, with_related_words
from memory.search.text import tokenize


def test_a_family_word_brings_its_family_and_nothing_else() -> None:
    widened = set(tokenize(with_related_words("any allergies?")))
    assert {"allerg", "vegetarian", "dietari"} <= widened
    assert "job" not in widened
    assert set(tokenize(with_related_words("where do I work?"))) >= {"work", "job", "career"}


def test_a_query_with_no_family_word_is_unchanged() -> None:
    for query in ("what's the wifi password?", "when is the Northwind review?", ""):
        assert with_related_words(query) == query


def test_a_memory_covers_a_query_term_by_a_word_of_its_family() -> None:
    held = set(tokenize("Sam is allergic to shellfish"))
    assert covers(tokenize("allergies")[0], held)  # "allergi" and "allerg" do not stem alike
    assert covers(tokenize("dietary")[0], held)
    assert not covers(tokenize("work")[0], held)
    assert covers(tokenize("live")[0], set(tokenize("Bob's address is 4 Elm Street")))
    assert not covers(tokenize("live")[0], set(tokenize("The review moved to Friday")))
    assert covers(tokenize("pets")[0], set(tokenize("We have a puppy called Rex")))
    assert not covers(tokenize("shells")[0], set(tokenize("Sam likes the beach")))
