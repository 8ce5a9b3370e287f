"""Corrections: cues, implicit corrections and what stopped being true."""

from __future__ import annotations

import pytest

from memory.rules.intents import (
    CorrectionIntent,
    detect_correction,
)


@pytest.mark.parametrize(
    ("text", "statement", "negated", "cue"),
    [
        (
            "Actually, I'm not vegetarian anymore",
            "I'm not vegetarian anymore",
            "I'm vegetarian",
            "actually",
        ),
        ("actually my mom's name is Sarah", "my mom's name is Sarah", None, "actually"),
        ("Well actually, Bob works at Acme now", "Bob works at Acme now", None, "actually"),
        ("No, actually, I live in Berlin", "I live in Berlin", None, "actually"),
        (
            "I'm not vegetarian any more",
            "I'm not vegetarian any more",
            "I'm vegetarian",
            "not anymore",
        ),
        (
            "I am no longer vegetarian.",
            "I am no longer vegetarian",
            "I am vegetarian",
            "not anymore",
        ),
        ("I no longer work at Acme", "I no longer work at Acme", "I work at Acme", "not anymore"),
        (
            "Bob doesn't eat meat anymore",
            "Bob doesn't eat meat anymore",
            "Bob eats meat",
            "not anymore",
        ),
        (
            "I don't drink coffee anymore",
            "I don't drink coffee anymore",
            "I drink coffee",
            "not anymore",
        ),
        ("Bob isn't vegan anymore", "Bob isn't vegan anymore", "Bob is vegan", "not anymore"),
        (
            "I used to live in Paris but now I live in Berlin",
            "I live in Berlin",
            "I live in Paris",
            "used to",
        ),
        ("I used to like coffee, but now prefer tea", "I prefer tea", "I like coffee", "used to"),
        ("I used to smoke, but not anymore", "I no longer smoke", "I smoke", "used to"),
        (
            "Bob used to play golf but he quit",
            "Bob no longer plays golf",
            "Bob plays golf",
            "used to",
        ),
        (
            "That's not right, my mom's name is Sarah",
            "my mom's name is Sarah",
            None,
            "that's not right",
        ),
        (
            "That\u2019s wrong. My mom's name is Sarah.",
            "My mom's name is Sarah",
            None,
            "that's not right",
        ),
        ("that isn't true: I'm 34", "I'm 34", None, "that's not right"),
        ("Correction: the party is on Saturday", "the party is on Saturday", None, "correction"),
        ("small correction - Bob is 40", "Bob is 40", None, "correction"),
        ("I meant Tuesday", "Tuesday", None, "i meant"),
        (
            "My mom's name is Sarah, not Susan",
            "My mom's name is Sarah",
            "My mom's name is Susan",
            "not",
        ),
        (
            "I'm allergic to cashews, not peanuts",
            "I'm allergic to cashews",
            "I'm allergic to peanuts",
            "not",
        ),
        ("We live in New York, not Boston", "We live in New York", "We live in Boston", "not"),
        (
            "My phone number has changed to 555 0101",
            "My phone number has changed to 555 0101",
            None,
            "has changed",
        ),
        ("@alfred actually I’m vegan now", "I'm vegan now", None, "actually"),
    ],
)
def test_correction(text: str, statement: str, negated: str | None, cue: str) -> None:
    assert detect_correction(text) == CorrectionIntent(
        statement=statement, negated=negated, cue=cue
    )


@pytest.mark.parametrize(
    "text", ["Not anymore.", "That's not right!", "that's wrong", "No longer."]
)
def test_correction_without_statement_refers_back(text: str) -> None:
    found = detect_correction(text)
    assert found is not None
    assert found.statement is None


@pytest.mark.parametrize(
    "text",
    [
        "What actually happened?",
        "Actually, what time is it?",
        "Is it actually true?",
        "I actually love this",
        "Actually, no.",
        "That's right, I'm vegan",
        "That's true!",
        "I meant to call you",
        "I used to live in Paris",
        "Do you still eat meat anymore?",
        "I can't wait anymore",
        "It doesn't matter anymore",
        "No, I don't want pizza",
        "It's wrong to lie",
        "The weather has changed",
        "hello there",
    ],
)
def test_not_a_correction(text: str) -> None:
    assert detect_correction(text) is None
