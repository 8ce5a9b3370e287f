"""The hot path is final: what an explicit request did still holds after the background
has formed the same messages, and between two statements the later message wins."""

from __future__ import annotations

from pathlib import Path

from runtime.settings import Settings
from tests.helpers.replay import current_facts, dumps, replay_lines, replies, say


async def test_a_correction_is_not_undone_by_formation(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "dm:dana", "remember that I am a night owl"),
            say("dana", "dm:dana", "Actually, I'm not a night owl anymore"),
            say("dana", "dm:dana", "the weather is grey today"),
            say("dana", "dm:dana", "we watched a film last night"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            say("dana", "dm:dana", "what do you remember about me?"),
            {"dump": "all"},
        ],
        tmp_path / "d",
    )
    recall = replies(out)[-1]["text"]
    assert "night owl" not in recall.replace("not a night owl", ""), recall
    current = " | ".join(current_facts(dumps(out)[-1]))
    assert "is a night owl" not in current and "am a night owl" not in current, current
    assert "not a night owl anymore" in current, current


async def test_the_later_message_wins_over_an_earlier_statement_formed_later(
    settings: Settings, tmp_path: Path
) -> None:
    """Chatter says one thing; a minute later an explicit correction says the opposite.
    Formation, running afterwards, must not bring the older statement back."""
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "dm:dana", "I work at the bakery"),
            say("dana", "dm:dana", "the weather is grey today"),
            {"clock": "+1m"},
            say("dana", "dm:dana", "Actually, I don't work at the bakery anymore"),
            say("dana", "dm:dana", "we watched a film last night"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path / "e",
    )
    current = " | ".join(current_facts(dumps(out)[-1]))
    assert "works at the bakery" not in current, current
    assert "work at the bakery anymore" in current, current


async def test_what_alfred_declined_to_store_is_not_stored_by_the_background(
    settings: Settings, tmp_path: Path
) -> None:
    """Alfred asked whose "Mom" was meant instead of storing it: the question was the
    answer to that message, and formation must not file the line as the asker's."""
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "group:fam", "@alfred remember that Mom loves jazz"),
            say("eli", "group:fam", "the weather is grey today"),
            say("dana", "group:fam", "we watched a film last night"),
            say("eli", "group:fam", "the train was late again"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path / "f",
    )
    asked = replies(out)[0]["text"]
    assert "whose do you mean" in asked, asked
    stored = [f["content"] for f in dumps(out)[-1]["facts"]]
    assert not [c for c in stored if "jazz" in c], stored
