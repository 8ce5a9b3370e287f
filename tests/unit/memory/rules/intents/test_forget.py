"""Forget: one memory, the last thing said, or everything; dismissals are not deletions."""

from __future__ import annotations

import pytest

from memory.rules.intents import (
    ForgetAllIntent,
    ForgetIntent,
    detect_forget,
)


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("forget that I'm vegetarian", "I'm vegetarian"),
        ("Please forget my address", "my address"),
        ("forget about the party, it's cancelled", "the party"),
        ("Alfred, forget what I said about my job", "my job"),
        ("forget everything about the trip", "the trip"),
        ("can you forget my phone number?", "my phone number"),
        ("forget the fact that I smoke", "I smoke"),
        ("forget I said that Bob is moving", "Bob is moving"),
        ("delete the memory about my ex", "my ex"),
        ("forget Eve's birthday", "Eve's birthday"),
        ("please forget Bob's new number", "Bob's new number"),
        ("Forget mum’s address, she moved", "mum's address"),
        ("can you forget Anna-Lena's allergy?", "Anna-Lena's allergy"),
        ("Actually, forget that", None),
        ("forget that.", None),
        ("forget what I just said", None),
        ("please forget what I told you", None),
    ],
)
def test_forget_target(text: str, target: str | None) -> None:
    assert detect_forget(text) == ForgetIntent(target=target)


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("forget everything about me", "me"),
        ("Forget everything you know about me.", "me"),
        ("forget everything", "me"),
        ("Delete all my data", "me"),
        ("delete my memories", "me"),
        ("please wipe all my personal data", "me"),
        ("erase everything you have stored about me", "me"),
        ("forget me", "me"),
        ("forget all about me", "me"),
        ("forget everything you know about us", "us"),
        ("delete our data", "us"),
        ("forget about us", "us"),
        ("erase all memories about our family", "us"),
        ("forget what you know about me", "me"),
    ],
)
def test_forget_all(text: str, target: str) -> None:
    assert detect_forget(text) == ForgetAllIntent(target=target)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "forget it",
        "Forget about it!",
        "never mind, forget it",
        "I forgot that Bob is vegan",
        "Don't forget that I'm allergic",
        "did you forget my birthday?",
        "I never forget a face",
        "forgetting things is normal",
        "forget that?",
        "forget it's fine",
        "forget that's done",
        "forget let's go hiking",
        "forget what's next",
        "forget everyone's plans",
        "forget Paris",
        "forget Eve's",
    ],
)
def test_not_a_forget(text: str) -> None:
    assert detect_forget(text) is None
