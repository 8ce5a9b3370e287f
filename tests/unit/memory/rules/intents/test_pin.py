"""Pin and unpin: a memory named or "that"; "pin" in its other senses is not a request."""

from __future__ import annotations

import pytest

from memory.rules.intents import PinIntent, detect_intent, detect_pin


@pytest.mark.parametrize(
    ("text", "pinned", "target"),
    [
        ("pin that", True, None),
        ("Alfred, pin this one please", True, None),
        ("can you pin it?", True, None),
        ("unpin that", False, None),
        ("pin my passport number", True, "my passport number"),
        ("@alfred unpin the gate code", False, "the gate code"),
        ("pin the memory about our landlord", True, "our landlord"),
        ("pin what I said about the spare key", True, "the spare key"),
        ("please pin Grandma's recipe", True, "Grandma's recipe"),
    ],
)
def test_pin_requests(text: str, pinned: bool, target: str | None) -> None:
    assert detect_pin(text) == PinIntent(pinned=pinned, target=target)
    assert detect_intent(text) == PinIntent(pinned=pinned, target=target)


@pytest.mark.parametrize(
    "text",
    [
        "pin the poster up",
        "I lost a pin",
        "what's the pin for the bank card?",
        "pin it on the fridge",
        "pin 4 goes into slot B",
        "did you pin that?",
    ],
)
def test_not_pin_requests(text: str) -> None:
    assert detect_pin(text) is None
