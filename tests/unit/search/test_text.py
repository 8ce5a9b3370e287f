"""Keyword terms: what BM25 sees of a text decides what keyword search can find."""

from __future__ import annotations

import pytest

from memory.search.text import ENGLISH_STOPWORDS, porter_stem, tokenize


def test_lowercases_and_drops_stopwords_and_punctuation() -> None:
    assert tokenize("When did Caroline go to the LGBTQ support group?", stem=False) == [
        "caroline",
        "go",
        "lgbtq",
        "support",
        "group",
    ]


def test_stopword_list_is_the_full_one() -> None:
    # A 33-word list cost 0.05 recall@10 on LoCoMo: question words must be stopwords.
    assert len(ENGLISH_STOPWORDS) >= 170
    assert {"what", "when", "did", "does", "which", "who", "how", "the", "my"} <= (
        ENGLISH_STOPWORDS
    )
    assert "pizza" not in ENGLISH_STOPWORDS


def test_stemming_makes_word_forms_meet() -> None:
    forms = ["paint", "painting", "painted", "paints"]
    assert len({term for form in forms for term in tokenize(form)}) == 1
    assert tokenize("painting", stem=False) == ["painting"]


def test_contractions_and_possessives() -> None:
    # "don't" splits into stopword fragments; a possessive keeps the name.
    assert tokenize("I don't like Caroline's dog", stem=False) == ["like", "caroline", "dog"]
    assert tokenize("I don\u2019t know", stem=False) == ["know"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Café Müller", ["café", "müller"]),
        ("Я люблю пиццу", ["я", "люблю", "пиццу"]),
        ("東京に行きました", ["東", "京", "に", "行", "き", "ま", "し", "た"]),
        ("ＡＢＣ fullwidth", ["abc", "fullwidth"]),
        ("snake_case and well-known", ["snake", "case", "well", "known"]),
    ],
)
def test_unicode_words(text: str, expected: list[str]) -> None:
    assert tokenize(text, stem=False) == expected


@pytest.mark.parametrize("text", ["", "   ", "😀🎉", "?!...", "the and of"])
def test_nothing_to_index(text: str) -> None:
    assert tokenize(text) == []


def test_duplicates_are_kept_for_term_frequency() -> None:
    assert tokenize("pizza pizza pasta", stem=False) == ["pizza", "pizza", "pasta"]


def test_custom_stopwords_and_min_length() -> None:
    assert tokenize("the cat sat", stopwords=frozenset(), stem=False) == ["the", "cat", "sat"]
    assert tokenize("a cat is x", stopwords=frozenset(), stem=False, min_length=2) == [
        "cat",
        "is",
    ]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        # From Porter's published vocabulary/output pairs.
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("cats", "cat"),
        ("agreed", "agre"),
        ("hopping", "hop"),
        ("filing", "file"),
        ("happy", "happi"),
        ("relational", "relat"),
        ("generalizations", "gener"),
        ("electrical", "electr"),
        ("adjustment", "adjust"),
        ("adoption", "adopt"),
        ("controll", "control"),
        ("rate", "rate"),
    ],
)
def test_porter_stemmer(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_stemmer_leaves_short_and_non_ascii_words_alone() -> None:
    assert porter_stem("is") == "is"
    assert porter_stem("müllers") == "müllers"
    assert porter_stem("covid19") == "covid19"


def test_a_hostile_run_of_letters_is_one_term_without_exhausting_the_stack() -> None:
    """Porter's "y" depends on the letter before it; read recursively, a run of thousands
    of "y"s (a pasted wall of text) ran out of stack inside the keyword leg."""
    assert tokenize("y" * 20_000) == ["y" * 20_000]
    assert porter_stem("y" * 3_000).startswith("yyy")
    # Stems of real words are Porter's, "y" rules included.
    assert [porter_stem(w) for w in ("toy", "syzygy", "happy", "played", "sky", "boyish")] == [
        "toi",
        "syzygi",
        "happi",
        "plai",
        "sky",
        "boyish",
    ]
