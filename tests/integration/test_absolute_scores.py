"""Retrieval scores are absolute: an unrelated memory is not offered however alone it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from tests.helpers.replay import probe, probes, replay_lines, say

START: list[Any] = [
    {"circle": "fam", "members": ["dana", "eli"]},
    say("dana", "dm:dana", "remember that the spare key is under the blue flower pot"),
]


async def test_a_lone_unrelated_memory_is_not_offered(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        settings,
        [
            *START,
            probe(
                "dana", "dm:dana", "what time does the football match start on the blue channel?"
            ),
            probe("dana", "dm:dana", "where is the spare key?"),
        ],
        tmp_path / "a",
    )
    unrelated, related = probes(out)
    # one shared word ("blue") used to make the lone memory the best hit, scored 0.97
    assert unrelated["memories"] == [], unrelated["memories"]
    (key,) = related["memories"]
    assert "spare key" in key["content"] and 0.1 <= key["score"] <= 1.0, key
