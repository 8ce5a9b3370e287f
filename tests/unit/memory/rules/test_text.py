"""Text as the rules read it: cleaned, capped, split into sentences."""

from __future__ import annotations

from memory.rules.text import clean_text, split_sentences


def test_clean_text_normalises_quotes_spaces_and_invisibles() -> None:
    assert clean_text("I\u2019m  \u201chappy\u201d\u200b \n\n ok") == 'I\'m "happy"\nok'


def test_clean_text_caps_long_input() -> None:
    assert len(clean_text("a" * 100_000)) == 4000
    assert len(clean_text("a" * 100_000, limit=None)) == 100_000


def test_split_sentences_keeps_titles_and_initials() -> None:
    assert split_sentences("Dr. Smith is our dentist. J. R. likes tea! Ok?\nNew line") == [
        "Dr. Smith is our dentist.",
        "J. R. likes tea!",
        "Ok?",
        "New line",
    ]
