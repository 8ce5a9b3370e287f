"""Directives: standing instructions on how Alfred answers."""

from __future__ import annotations

import pytest

from memory.rules.intents import (
    DirectiveIntent,
    detect_directive,
)
from memory.rules.intents.directive import directive_echo, directive_matches


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


# --- saying it back, withdrawing, matching ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "echo"),
    [
        ("From now on, call me Skipper", "I'll call you Skipper."),
        ("please answer in Portuguese", "I'll answer you in Portuguese."),
        ("no emojis please", "I won't use emojis."),
        ("never mention my ex", "I won't mention your ex."),
        ("stop calling me Skip", "I won't call you Skip."),
        ("always keep your answers short", "I'll always keep my answers short."),
        ("always greet me in French", "I'll always greet you in French."),
    ],
)
def test_a_directive_is_said_back_in_the_second_person(text: str, echo: str) -> None:
    found = detect_directive(text)
    assert found is not None and directive_echo(found) == echo


@pytest.mark.parametrize(
    ("text", "topic", "value"),
    [
        ("you can use emojis again", "avoid", "emojis"),
        ("feel free to use bullet points again", "avoid", "bullet points"),
        ("swearing is fine now", "avoid", "swearing"),
        ("you don't have to keep your answers short anymore", "avoid", "your answers short"),
        ("you can speak English again", "language", "English"),
        ("cancel my instruction about jokes", "avoid", "jokes"),
    ],
)
def test_a_withdrawal_is_a_revoking_directive(text: str, topic: str, value: str) -> None:
    found = detect_directive(text)
    assert found is not None and found.revoke
    assert (found.topic, found.value) == (topic, value)


@pytest.mark.parametrize(
    "text", ["stop using emojis", "you can come again", "you can call me Al again"]
)
def test_not_withdrawals(text: str) -> None:
    found = detect_directive(text)
    assert found is None or not found.revoke


def test_a_name_is_not_followed_by_anymore_or_again() -> None:
    found = detect_directive("don't call me Skip anymore")
    assert found is not None and found.value == "Skip"
    found = detect_directive("you can call me Al again")
    assert found is not None and (found.topic, found.value) == ("name", "Al")


def test_matching_a_stored_directive() -> None:
    assert directive_matches("emojis", "avoid", "emojis", "no emojis")
    assert directive_matches("I don't want emojis", "avoid", "emojis", "no emojis", forgetting=True)
    assert directive_matches("swear", "avoid", "swearing", "don't swear")
    assert directive_matches("your answers short", "length", "short", "keep your answers short")
    assert directive_matches("English", "language", "Spanish", "answer in Spanish")
    # a fact that shares a word is not an instruction
    assert not directive_matches(
        "I like short stories", "length", "short", "keep it short", forgetting=True
    )
    assert not directive_matches("jokes", "avoid", "emojis", "no emojis")
