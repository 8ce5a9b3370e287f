"""Reading, validating and resolving time zones (pure: no stores)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.calendar_memories import derive_memories, parse_event
from memory.calendar_wording import describe_when, shown_zone
from memory.models import ThreadKind
from memory.prompts.reply import ReplyContext, system_prompt
from memory.rules.intents.time_zone import detect_time_zone
from memory.timezones import common_zone, fallback_note, parse_zone, resolve_zone
from services.timezones import states_time


@pytest.mark.parametrize(
    ("said", "zone"),
    [
        ("Africa/Nairobi", "Africa/Nairobi"),
        ("america/sao_paulo", "America/Sao_Paulo"),
        ("CET", "CET"),
        ("utc", "UTC"),
        ("Buenos Aires", "America/Argentina/Buenos_Aires"),
        ("Reykjavik time", "Atlantic/Reykjavik"),
        ("UTC+3", "Etc/GMT-3"),
        ("GMT-4", "Etc/GMT+4"),
        ('"Asia/Seoul".', "Asia/Seoul"),
    ],
)
def test_zones_people_state_read_as_one_iana_name(said: str, zone: str) -> None:
    assert parse_zone(said).name == zone


@pytest.mark.parametrize("said", ["Narnia/Cair_Paravel", "somewhere warm", "", "UTC+99"])
def test_unknown_zones_are_refused(said: str) -> None:
    parsed = parse_zone(said)
    assert parsed.name is None and parsed.problem == "unknown"


def test_abbreviations_are_refused_with_a_suggestion() -> None:
    parsed = parse_zone("CDT")
    assert parsed.name is None and parsed.problem == "ambiguous"
    assert parsed.suggestion == "America/Chicago"


def test_the_resolution_order_is_own_calendar_circle_utc() -> None:
    assert resolve_zone("Asia/Dubai", "Europe/Rome", "Europe/Oslo").source == "own"
    assert resolve_zone(None, "Europe/Rome", "Europe/Oslo").name == "Europe/Rome"
    assert resolve_zone(None, None, "Europe/Oslo").source == "circle"
    fallback = resolve_zone("Not/A_Zone", None, None)
    assert (fallback.name, fallback.source, fallback.fallback) == ("UTC", "default", True)


def test_circles_that_disagree_give_no_circle_zone() -> None:
    assert common_zone(["Europe/Oslo", "Europe/Oslo"]) == "Europe/Oslo"
    assert common_zone(["Europe/Oslo", "Asia/Dubai"]) is None


def test_the_fallback_note_names_the_zone_used() -> None:
    note = fallback_note(resolve_zone(None, None, "Europe/Oslo"), in_group=True)
    assert note.startswith("(times in Europe/Oslo, this group's time zone —")


@pytest.mark.parametrize(
    ("text", "action", "scope", "value"),
    [
        ("@alfred my timezone is Asia/Seoul", "set", "me", "Asia/Seoul"),
        ("Alfred, please set our time zone to Europe/Oslo", "set", "us", "Europe/Oslo"),
        ("we're on Reykjavik time", "set", "us", "Reykjavik"),
        ("which time zone am I in?", "ask", "me", None),
        ("what's our tz?", "ask", "us", None),
    ],
)
def test_time_zone_statements_and_questions(
    text: str, action: str, scope: str, value: str | None
) -> None:
    intent = detect_time_zone(text)
    assert intent is not None
    assert (intent.action, intent.scope, intent.value) == (action, scope, value)


@pytest.mark.parametrize(
    "text",
    [
        "my time zone is all over the place since the trip",
        "I was in Lisbon last week",
        "is my time zone Asia/Seoul?",
        "what time is it?",
    ],
)
def test_other_messages_are_not_time_zone_statements(text: str) -> None:
    assert detect_time_zone(text) is None


def test_a_timed_event_is_told_on_the_readers_clock_an_all_day_one_keeps_its_date() -> None:
    timed = parse_event(
        {"id": "a", "title": "Call", "start": {"dateTime": "2026-02-02T20:00:00Z"}},
        default_zone="Europe/London",
    )
    assert describe_when(timed, "Asia/Seoul") == "on Tuesday 3 February 2026 at 05:00 Asia/Seoul"
    all_day = parse_event({"id": "b", "title": "Fair", "start": "2026-02-02"}, default_zone="UTC")
    assert shown_zone(all_day, "Pacific/Honolulu") == "UTC"


def test_a_series_moved_to_another_day_keeps_its_own_zone() -> None:
    """Its weekdays are the event's: "every Monday at 23:00 London" is not a Tuesday rule
    in Seoul, so it stays worded in London time."""
    series = {
        "id": "s",
        "title": "Therapy",
        "start": {"dateTime": "2026-02-02T23:00:00Z", "timeZone": "Europe/London"},
        "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO"],
    }
    now = datetime(2026, 1, 5, tzinfo=UTC)
    far = derive_memories(parse_event(series), owner_name="Ivy", now=now, zone="Asia/Seoul")
    assert "every Monday at 23:00 Europe/London" in far[-1].content
    near = derive_memories(parse_event(series), owner_name="Ivy", now=now, zone="Europe/Lisbon")
    assert "every Monday at 23:00 Europe/Lisbon" in near[-1].content


def test_the_model_is_told_the_speakers_local_time_and_zone() -> None:
    ctx = ReplyContext(
        speaker_id="u1",
        speaker_name="Ivy",
        thread_kind=ThreadKind.DM,
        text="remind me tomorrow",
        now=datetime(2026, 1, 5, 20, 30, tzinfo=UTC),
        time_zone="Asia/Seoul",
    )
    prompt = system_prompt(ctx)
    assert "Current time for Ivy: Tuesday 2026-01-06 05:30 (Asia/Seoul)." in prompt
    assert "2026-01-05 20:30 UTC" in prompt


def test_a_time_with_its_zone_named_needs_no_note() -> None:
    assert states_time("It's 09:15 on Monday")
    assert states_time("see you at 7pm")
    assert not states_time("Ivy has a call at 09:15 Europe/Oslo")
    assert not states_time("I have nothing about that")
