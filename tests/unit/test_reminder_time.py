"""Reading reminder times (services.reminder_time): the person's words in their time zone,
wall-clock times kept across a daylight-saving change, missed repetitions collapsed."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from memory.rules.intents.remind import (
    CancelReminder,
    ListReminders,
    MoveReminder,
    SetReminder,
    Snooze,
    detect_reminder,
)
from services.reminder_time import next_occurrence, parse_when, spoken, spoken_rule, zone_for

BERLIN = ZoneInfo("Europe/Berlin")
MONDAY = datetime(2026, 3, 23, 9, 0, tzinfo=UTC)  # the week before Europe's clocks go forward


def test_a_weekly_reminder_keeps_its_local_time_across_the_dst_change() -> None:
    when = parse_when("every Saturday at 7pm", MONDAY, BERLIN)
    assert when is not None and when.rule == "FREQ=WEEKLY;BYDAY=SA"
    assert when.due == datetime(2026, 3, 28, 18, 0, tzinfo=UTC)  # 19:00 CET
    after = next_occurrence(when.rule, BERLIN, when.due, when.due)
    assert after == datetime(2026, 4, 4, 17, 0, tzinfo=UTC)  # 19:00 CEST
    assert spoken_rule(when.rule, after, BERLIN) == "every Saturday at 19:00"


def test_a_one_off_after_the_change_is_read_in_summer_time() -> None:
    when = parse_when("on 30 March at 9", MONDAY, BERLIN)
    assert when is not None and when.rule is None
    assert when.due == datetime(2026, 3, 30, 7, 0, tzinfo=UTC)
    assert spoken(when.due, BERLIN, MONDAY) == "on Monday 30 March at 09:00"


def test_phrases_of_the_issue() -> None:
    now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    cases = {
        "tomorrow at 9": (datetime(2026, 1, 6, 9, 0, tzinfo=UTC), None),
        "in 2 hours": (datetime(2026, 1, 5, 11, 0, tzinfo=UTC), None),
        "on Saturday morning": (datetime(2026, 1, 10, 9, 0, tzinfo=UTC), None),
        "every other week": (datetime(2026, 1, 5, 9, 0, tzinfo=UTC), "FREQ=WEEKLY;INTERVAL=2"),
        "on weekdays at 8:15": (
            datetime(2026, 1, 6, 8, 15, tzinfo=UTC),
            "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
        ),
        "on the 1st of each month": (
            datetime(2026, 2, 1, 9, 0, tzinfo=UTC),
            "FREQ=MONTHLY;BYMONTHDAY=1",
        ),
    }
    for phrase, (due, rule) in cases.items():
        when = parse_when(phrase, now, UTC)
        assert when is not None, phrase
        assert (when.due, when.rule) == (due, rule), phrase
    assert spoken(datetime(2026, 1, 6, 9, 0, tzinfo=UTC), UTC, now) == (
        "tomorrow, Tuesday 6 January, at 09:00"
    )


def test_a_missed_run_of_a_repetition_collapses_into_the_next() -> None:
    rule = "FREQ=WEEKLY;BYDAY=FR"
    start = datetime(2026, 1, 9, 7, 0, tzinfo=UTC)
    late = datetime(2026, 1, 28, 12, 0, tzinfo=UTC)
    assert next_occurrence(rule, UTC, start, late) == datetime(2026, 1, 30, 7, 0, tzinfo=UTC)


def test_the_zone_is_the_stored_one_else_utc() -> None:
    assert zone_for("Europe/Berlin") == BERLIN
    assert zone_for(None) is UTC
    assert zone_for("Mars/Olympus") is UTC


def test_reminder_requests_are_told_from_other_messages() -> None:
    assert detect_reminder("@alfred remind us to air the rooms every other Thursday") == (
        SetReminder(who="us", task="air the rooms", when="every other Thursday")
    )
    assert detect_reminder("remind me in 20 minutes to take the cake out") == SetReminder(
        who="me", task="take the cake out", when="in 20 minutes"
    )
    assert detect_reminder("Remind me to buy milk") == SetReminder(
        who="me", task="buy milk", when=""
    )  # no time: Alfred asks for one
    assert detect_reminder("Can you remind me tomorrow at 9 to call the vet, please?") == (
        SetReminder(who="me", task="call the vet", when="tomorrow at 9")
    )
    assert detect_reminder("show my reminders") == ListReminders()
    assert detect_reminder("cancel the plants reminder") == CancelReminder(about="plants")
    assert detect_reminder("move the dentist reminder to Friday at 3pm") == MoveReminder(
        about="dentist", when="Friday at 3pm"
    )
    assert detect_reminder("snooze for an hour") == Snooze(minutes=60)
    for chatter in (
        "I need to remember to buy milk",
        "that reminds me of Rome",
        "remind me what we said",
        "remember that I like tea",
    ):
        assert detect_reminder(chatter) is None, chatter


def test_a_series_moves_only_to_a_time_of_day() -> None:
    """ "move the bins reminder to …" on a repetition: a time of day moves the series; a
    phrase naming a day or a date is not taken for one (its days stay its rule's)."""
    from services.reminder_time import time_of_day

    times = {"10": (10, 0), "8pm": (20, 0), "at 19:30": (19, 30), "6:45 am": (6, 45)}
    times |= {"the evening": (18, 0), "noon": (12, 0)}
    for phrase, clock in times.items():
        assert time_of_day(phrase) == clock, phrase
    for phrase in ("Friday", "tomorrow at 8", "on the 3rd", "next week", "in 2 hours"):
        assert time_of_day(phrase) is None, phrase
