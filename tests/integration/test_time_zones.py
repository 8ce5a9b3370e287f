"""Time zones, through the replay: the person's own zone, else the circle's, else UTC;
a guessed zone is announced once; a zone is a setting, never a memory shown to others.

The replay clock starts at 2026-01-05T09:00:00Z (a Monday).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from tests.helpers.replay import dumps, probe, probes, replay_lines, replies, say

FAM = {"circle": "fam", "members": ["dana", "eli"]}
#: A one-off event in New York on Wednesday 7 January at 17:30 (22:30 UTC).
PIANO: dict[str, Any] = {
    "id": "piano-1",
    "title": "Recital",
    "start": {"dateTime": "2026-01-07T17:30:00-05:00", "timeZone": "America/New_York"},
    "end": {"dateTime": "2026-01-07T19:00:00-05:00", "timeZone": "America/New_York"},
}
FALLBACK_NOTE = '— tell me "my time zone is …" to change it)'


def _texts(out: list[dict[str, Any]]) -> list[str]:
    return [r["text"] for r in replies(out)]


def _facts(out: list[dict[str, Any]]) -> list[str]:
    return [f["content"] for f in dumps(out)[-1]["facts"] if f["invalid_at"] is None]


async def test_a_personal_zone_words_calendar_memories_and_the_clock(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "I'm on Auckland time"),
            say("dana", "dm:dana", "what time is it?"),
            {"calendar": {"user": "dana", "event": PIANO, "from": None}},
            {"calendar": {"user": "eli", "event": {**PIANO, "id": "piano-2"}, "from": None}},
            {"dump": "all"},
        ],
        tmp_path / "own",
    )
    texts = _texts(out)
    # Auckland is UTC+13 in January: 09:00 UTC is 22:00 there.
    assert texts[0] == "OK — I'll use Pacific/Auckland for your times (now 22:00 there).", texts
    assert texts[1] == "It's 22:00 on Monday 5 January 2026 (Pacific/Auckland).", texts
    facts = " | ".join(_facts(out))
    # Dana's event is worded on her clock (the next morning there) ...
    dana = "Dana has a recital on Thursday 8 January 2026 at 11:30 Pacific/Auckland"
    assert dana in facts, facts
    # ... Eli set no zone: his copy keeps the event's own.
    eli = "Eli has a recital on Wednesday 7 January 2026 at 17:30 America/New_York"
    assert eli in facts, facts


async def test_the_group_zone_is_the_fallback_in_the_group(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "set my timezone to Asia/Kolkata"),
            say("eli", "group:fam", "@alfred our time zone is Europe/Berlin"),
            say("eli", "group:fam", "@alfred what time is it?"),
            say("dana", "group:fam", "@alfred what time is it?"),
            say("eli", "group:fam", "@alfred what's our time zone?"),
            say("eli", "dm:eli", "what's my time zone?"),
        ],
        tmp_path / "circle",
    )
    texts = _texts(out)
    assert texts[1].startswith("OK — I'll use Europe/Berlin for this group's times"), texts
    # Eli has no zone of his own: the group's, and Alfred says so the first time.
    assert texts[2] == (
        "It's 10:00 on Monday 5 January 2026 (Europe/Berlin).\n\n"
        "(times in Europe/Berlin, this group's time zone " + FALLBACK_NOTE
    ), texts
    # Dana set her own: it wins over the group's, with no note.
    assert texts[3] == "It's 14:30 on Monday 5 January 2026 (Asia/Kolkata).", texts
    assert (
        texts[4]
        == "This group's time zone is Europe/Berlin (it's 10:00 on Monday 5 January 2026 there)."
    ), texts
    # In his DM, Eli's only circle's zone is still the fallback.
    assert "I use Europe/Berlin, your group's time zone" in texts[5], texts


async def test_the_utc_fallback_is_announced_exactly_once(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("eli", "dm:eli", "what time is it?"),
            {"clock": "+3h"},
            say("eli", "dm:eli", "what's the time now?"),
            say("eli", "group:fam", "@alfred what time is it?"),
            {"clock": "+1d"},
            say("eli", "dm:eli", "what time is it?"),
            say("dana", "dm:dana", "what time is it?"),
        ],
        tmp_path / "utc",
    )
    texts = _texts(out)
    assert texts[0] == (
        "It's 09:00 on Monday 5 January 2026 (UTC).\n\n(times in UTC " + FALLBACK_NOTE
    ), texts
    assert texts[1] == "It's 12:00 on Monday 5 January 2026 (UTC).", texts
    assert texts[2] == "It's 12:00 on Monday 5 January 2026 (UTC).", texts
    assert texts[3] == "It's 12:00 on Tuesday 6 January 2026 (UTC).", texts
    eli_notes = [t for t in texts[:4] if FALLBACK_NOTE in t]
    assert len(eli_notes) == 1, texts
    # Once per person: Dana is told the first time too.
    assert texts[4].endswith("(times in UTC " + FALLBACK_NOTE), texts


async def test_an_invalid_zone_gets_a_clear_answer_and_changes_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "my time zone is Asia/Tokyo"),
            say("dana", "dm:dana", "my time zone is Atlantis/Poseidonia"),
            say("dana", "dm:dana", "my timezone is PST"),
            say("dana", "dm:dana", "what's my time zone?"),
            {"dump": "all"},
        ],
        tmp_path / "invalid",
    )
    texts = _texts(out)
    assert texts[1].startswith(
        'I don\'t know the time zone "Atlantis/Poseidonia", so nothing changed.'
    ), texts
    assert "nothing changed" in texts[2] and "America/Los_Angeles" in texts[2], texts
    assert texts[3] == (
        "Your time zone is Asia/Tokyo (it's 18:00 on Monday 5 January 2026 there)."
    ), texts
    facts = " | ".join(_facts(out))
    assert "Atlantis" not in facts and "PST" not in facts, facts


async def test_a_zone_said_in_a_dm_is_not_shown_to_anyone_else(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            FAM,
            say("dana", "dm:dana", "my time zone is Asia/Kathmandu"),
            say("dana", "dm:dana", "the weather is grey today"),
            say("dana", "dm:dana", "we watched a film last night"),
            {"clock": "+7h"},
            {"jobs": "drain"},
            say("eli", "group:fam", "@alfred what's Dana's time zone?"),
            say("eli", "group:fam", "@alfred what time is it?"),
            say("eli", "dm:eli", "where does Dana live, what time zone?"),
            probe("eli", "group:fam", "Dana time zone Kathmandu"),
            probe("eli", "dm:eli", "what is Dana's time zone?"),
            {"dump": "all"},
        ],
        tmp_path / "private",
    )
    texts = _texts(out)
    assert texts[0].startswith("OK — I'll use Asia/Kathmandu"), texts
    for text in texts[1:]:
        assert "Kathmandu" not in text and "+05:45" not in text, texts
    for seen in probes(out):
        assert "Kathmandu" not in str(seen["memories"]) + seen["context"], seen
    # A setting, not a memory: nothing about it was learned, even after formation.
    facts = " | ".join(_facts(out))
    assert "Kathmandu" not in facts and "time zone" not in facts, facts
