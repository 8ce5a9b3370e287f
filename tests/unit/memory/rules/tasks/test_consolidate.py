"""Consolidation without a model: an extractive merge, newest first, within the limit."""

from __future__ import annotations

import pytest

from memory.models import ReflectionScope
from memory.prompts.consolidate import ConsolidateContext
from memory.rules.tasks.consolidate import consolidate as consolidate_rule

# --- consolidate ----------------------------------------------------------------------------------


async def consolidate(blob: str | None, new: list[str], limit: int = 400) -> str:
    ctx = ConsolidateContext(
        scope=ReflectionScope.USER, current_blob=blob, reflections=new, word_limit=limit
    )
    return (consolidate_rule(ctx)).content


async def test_consolidate_merges_blob_and_reflections_in_order() -> None:
    assert (
        await consolidate(
            "Alice likes tea. Alice works at Acme", ["Alice wants short answers from Alfred"]
        )
        == "Alice likes tea. Alice works at Acme. Alice wants short answers from Alfred."
    )


async def test_consolidate_newest_wins_on_duplicates() -> None:
    assert (
        await consolidate("Alice likes tea. Alice is vegan.", ["alice likes tea!", "Bob is tall."])
        == "Alice is vegan. alice likes tea! Bob is tall."
    )


async def test_consolidate_newer_slot_replaces_older() -> None:
    assert (
        await consolidate(
            "Alice wants Alfred to reply in Spanish. Alice likes tea. Alice lives in Paris.",
            ["Alice wants Alfred to reply in French.", "Alice lives in Berlin."],
        )
        == "Alice likes tea. Alice wants Alfred to reply in French. Alice lives in Berlin."
    )


async def test_consolidate_keeps_the_newest_within_the_word_limit() -> None:
    old = " ".join(f"Old fact number {i}." for i in range(10))
    content = await consolidate(old, ["New fact one here.", "New fact two here."], limit=12)
    assert content == "Old fact number 9. New fact one here. New fact two here."
    assert len(content.split()) <= 12


async def test_consolidate_cuts_an_overlong_newest_sentence() -> None:
    content = await consolidate(None, [" ".join(f"w{i}" for i in range(50))], limit=10)
    assert content == "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9…"


@pytest.mark.parametrize(
    ("blob", "new"),
    [
        ("Alice likes tea.", []),
        (None, ["🙂 Alice likes tea"]),
        ("x" * 100_000, []),
        ("Мы любим чай.", ["我们喜欢茶"]),
    ],
)
async def test_consolidate_is_never_empty_with_input(blob: str | None, new: list[str]) -> None:
    content = await consolidate(blob, new, limit=5)
    assert content.strip()
    assert len(content.split()) <= 5


async def test_consolidate_of_nothing_is_empty() -> None:
    assert await consolidate(None, []) == ""
    assert await consolidate("   ", ["", "  "]) == ""
