"""Directives: standing instructions on how Alfred answers."""

from __future__ import annotations

import pytest

from memory.rules.intents import (
    DirectiveIntent,
    detect_directive,
)


@pytest.mark.parametrize(
    ("text", "topic", "value"),
    [
        ("always keep your answers short", "length", "short"),
        ("Please keep your replies brief.", "length", "brief"),
        ("keep it short", "length", "short"),
        ("be more concise", "length", "concise"),
        ("Be brief", "length", "brief"),
        ("give me shorter answers", "length", "shorter answers"),
        ("I prefer short answers", "length", "short answers"),
        ("answer briefly", "length", "briefly"),
        ("be more formal", "style", "formal"),
        ("use bullet points", "style", "bullet points"),
        ("use metric units", "style", "metric units"),
        ("answer in Spanish", "language", "Spanish"),
        ("Always reply to me in french!", "language", "French"),
        ("Could you reply in German?", "language", "German"),
        ("speak Italian to me", "language", "Italian"),
        ("please call me Al", "name", "Al"),
        ("Call me Al", "name", "Al"),
        ("you can call me Lizzie", "name", "Lizzie"),
        ("I prefer to be called Beth", "name", "Beth"),
        ("I go by Sam", "name", "Sam"),
        ("call me 'Big Al'", "name", "Big Al"),
        ("Actually, call me Al", "name", "Al"),
        ("don't use emojis", "avoid", "emojis"),
        ("Please don\u2019t use emojis.", "avoid", "emojis"),
        ("stop using exclamation marks", "avoid", "exclamation marks"),
        ("No emojis please", "avoid", "emojis"),
        ("never mention my ex", "avoid", "my ex"),
        ("don't talk about work", "avoid", "work"),
        ("Stop calling me Alfie", "avoid", "Alfie"),
        ("don't be so formal", "avoid", "so formal"),
        ("don't swear", "avoid", "swearing"),
        ("always greet me in French", "general", None),
        ("from now on, check the weather before suggesting a walk", "general", None),
    ],
)
def test_directive(text: str, topic: str, value: str | None) -> None:
    found = detect_directive(text)
    assert found is not None
    assert (found.topic, found.value) == (topic, value)


def test_directive_instruction_is_the_bare_sentence() -> None:
    assert detect_directive("@alfred please, always keep your answers short!!") == (
        DirectiveIntent(topic="length", instruction="always keep your answers short", value="short")
    )


@pytest.mark.parametrize(
    "text",
    [
        "call me tomorrow",
        "Call me when you land",
        "call me back",
        "call me a taxi",
        "call me crazy, but I like it",
        "call me al",
        "Don't mention it",
        "don't say that",
        "don't use my mug",
        "Don't be late",
        "Don't be silly",
        "never mind",
        "give me more details",
        "keep it up",
        "keep the kids busy",
        "Do you always answer in English?",
        "answer in Spanish?",
        "answer in five minutes",
        "I speak Spanish",
        "Why do you use emojis?",
        "from now on I'm vegan",
        "always the same with you",
        "be careful",
    ],
)
def test_not_a_directive(text: str) -> None:
    assert detect_directive(text) is None
