"""Which journaled messages the recent leg may offer as something said: statements only."""

from __future__ import annotations

import pytest

from memory.search.recent import is_statement


@pytest.mark.parametrize(
    "text",
    [
        "Hana is allergic to peanuts",
        "forgetting things is normal",
        "Deleted the old photos today",
        "I never forget a face",
    ],
)
def test_statements_are_offered(text: str) -> None:
    assert is_statement(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "/help",
        "[a request to forget something]",
        "what is Hana allergic to?",
        "forget Hana",
        "Forget Paris",
        "@alfred please delete Bob",
        "Alfred, erase the old code",
    ],
)
def test_questions_commands_and_requests_to_forget_are_not(text: str) -> None:
    """A request to forget that was not read as one ("forget Hana") stays in the journal
    as it was said; offered as a memory, it would read as the thing to be removed."""
    assert not is_statement(text)
