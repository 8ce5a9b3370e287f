"""Addressing Alfred is not part of what a message says."""

from __future__ import annotations

import pytest

from memory.rules.intents import (
    strip_addressing,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@alfred remember this", "remember this"),
        ("@HouseholdBot: hi", "hi"),
        ("Alfred, remember this", "remember this"),
        ("alfred: remember this", "remember this"),
        ("Hey Alfred remember this", "remember this"),
        ("Alfred please remember this", "please remember this"),
        ("what do you know about me, Alfred?", "what do you know about me?"),
        ("Alfred is great", "Alfred is great"),
        ("I love Alfred", "I love Alfred"),
        ("@bob remember this", "@bob remember this"),
    ],
)
def test_strip_addressing(text: str, expected: str) -> None:
    assert strip_addressing(text) == expected
