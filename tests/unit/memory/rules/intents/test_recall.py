"""Recall: listing what Alfred remembers about me or us."""

from __future__ import annotations

import pytest

from memory.rules.intents import (
    RecallIntent,
    detect_recall,
)


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("what do you remember about me?", "me"),
        ("What do you know about me", "me"),
        ("Alfred, what do you remember about us?", "us"),
        ("hey alfred, what do you know about us?", "us"),
        ("What do you know about us, Alfred?", "us"),
        ("so what else do you know about me?", "me"),
        ("what have you learned about me so far?", "me"),
        ("what do you have on me?", "me"),
        ("What have you got on us?", "us"),
        ("what's in your memory about me?", "me"),
        ("tell me what you know about me", "me"),
        ("Show me everything you remember about us", "us"),
        ("do you remember anything about me?", "me"),
        ("show me my memories", "me"),
        ("list our memories", "us"),
        ("what are my memories?", "me"),
        ("what do you remember?", "me"),
        ("what do you know about our family?", "us"),
    ],
)
def test_recall(text: str, target: str) -> None:
    assert detect_recall(text) == RecallIntent(target=target)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "what do you know about cooking?",
        "What do you remember about my mom?",
        "What do you remember about the trip?",
        "I know about you",
        "what do you think about me?",
        "Tell me about yourself",
    ],
)
def test_not_a_recall(text: str) -> None:
    assert detect_recall(text) is None
