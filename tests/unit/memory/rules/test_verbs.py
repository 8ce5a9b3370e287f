"""English verb agreement for third-person rewriting."""

from __future__ import annotations

import pytest

from memory.rules.verbs import third_person_singular


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        ("love", "loves"),
        ("go", "goes"),
        ("watch", "watches"),
        ("study", "studies"),
        ("play", "plays"),
        ("have", "has"),
        ("do", "does"),
        ("don't", "doesn't"),
        ("need", "needs"),
        ("moved", "moved"),
        ("got", "got"),
        ("can", "can"),
    ],
)
def test_third_person_singular(verb: str, expected: str) -> None:
    assert third_person_singular(verb) == expected
