"""The erase prompt's confirmations: a natural yes counts, anything hedged does not."""

from __future__ import annotations

import pytest

from memory.rules.confirm import is_confirmation


@pytest.mark.parametrize(
    "text",
    [
        "yes",
        "Yes please!",
        "do it",
        "Sure, go ahead",
        "@alfred yep",
        "yes, erase everything",
        "ok, do it",
        "go ahead please",
        "yes, I'm sure",
        "Alfred, yes",
    ],
)
def test_natural_confirmations(text: str) -> None:
    assert is_confirmation(text)


@pytest.mark.parametrize(
    "text",
    [
        "yes?",
        "no",
        "not yet",
        "wait",
        "yes but keep my calendar",
        "do it later",
        "hmm, let me think",
        "maybe",
        "yes... no, don't",
        "what do you mean?",
        "",
    ],
)
def test_anything_else_is_not_a_confirmation(text: str) -> None:
    assert not is_confirmation(text)
