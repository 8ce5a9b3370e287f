"""Every intent at once: priority, no false positives, and bounded cost."""

from __future__ import annotations

import time

import pytest

from memory.models import ThreadKind
from memory.rules.intents import (
    detect_ambiguous_reference,
    detect_intent,
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("remember that I'm vegan", "remember"),
        ("don't forget that I'm vegan", "remember"),
        ("forget that I'm vegan", "forget"),
        ("Actually, forget that", "forget"),
        ("forget everything about me", "forget_all"),
        ("what do you remember about me?", "recall"),
        ("Actually, call me Al", "directive"),
        ("Actually, I'm vegan", "correction"),
        ("I'm not vegan anymore", "correction"),
        ("answer in Spanish", "directive"),
    ],
)
def test_detect_intent_priority(text: str, kind: str) -> None:
    found = detect_intent(text)
    assert found is not None
    assert found.kind == kind


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "🙂🙂🙂",
        "ok",
        "thanks!",
        "I love hiking",
        "Привет, запомни что я люблю чай",
        "请记住我喜欢茶",
        "Recuerda que soy vegetariana",
        "\x00\x01\x02",
        "?!?!",
        "@alfred",
    ],
)
def test_no_intent(text: str) -> None:
    assert detect_intent(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "remember that " * 10_000,
        "I used to x " * 10_000 + "but now y",
        "actually " * 12_000,
        "a, not b " * 12_000,
        "not " * 25_000 + "anymore",
        "x" * 100_000,
        "🙂" * 50_000,
        "я люблю " * 12_000,
    ],
)
def test_huge_inputs_are_fast_and_safe(text: str) -> None:
    started = time.perf_counter()
    detect_intent(text)
    detect_ambiguous_reference(text, ThreadKind.GROUP)
    assert time.perf_counter() - started < 1.0
