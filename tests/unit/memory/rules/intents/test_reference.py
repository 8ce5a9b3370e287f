"""Ambiguous references in a group, and what is not ambiguous."""

from __future__ import annotations

import pytest

from memory.models import ThreadKind
from memory.rules.intents import (
    detect_ambiguous_reference,
)


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("Mom called", "Mom"),
        ("mom is coming on Sunday", "mom"),
        ("I'm visiting mom tomorrow", "mom"),
        ("Grandma is in hospital", "Grandma"),
        ("Dad's birthday is next week", "Dad"),
        ("The boss wants the report by Friday", "The boss"),
        ("I left early because the dentist said so", "the dentist"),
        ("her sister is visiting", "her sister"),
        ("Yesterday her mom called", "her mom"),
        ("their dad is ill", "their dad"),
    ],
)
def test_ambiguous_in_a_group(text: str, reference: str) -> None:
    assert detect_ambiguous_reference(text, ThreadKind.GROUP) == reference
    assert detect_ambiguous_reference(text, ThreadKind.DM) is None


@pytest.mark.parametrize(
    "text",
    [
        "my mom called",
        "My sister's name is Jane",
        "our doctor is great",
        "Bob's mom is visiting",
        "Alice said her sister is visiting",
        "I'm going to the doctor",
        "Mom, are you coming?",
        "thanks, Dad!",
        "Mom!",
        "Happy Mother's Day",
        "Mother Teresa was kind",
        "dad jokes are the best",
        "English is my mother tongue",
        "she is a mother of two",
        "my step-mom is nice",
        "",
    ],
)
def test_not_ambiguous(text: str) -> None:
    assert detect_ambiguous_reference(text, ThreadKind.GROUP) is None
