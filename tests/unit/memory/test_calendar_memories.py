"""Calendar events → memories: parsing both shapes, and what is (never) remembered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.calendar_memories import (
    MAX_CONTACT_ATTENDEES,
    OPEN_SERIES_HORIZON,
    derive_memories,
    describe_when,
    parse_event,
    series_end,
    title_phrase,
)
from memory.models import Category

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def derive(raw: dict[str, Any], **kw: Any) -> list[str]:
    event = parse_event(raw, default_zone=kw.pop("zone", None))
    return [m.content for m in derive_memories(event, owner_name="Alice", now=NOW, **kw)]


@pytest.mark.parametrize(
    ("title", "phrase"),
    [
        ("Meeting with Dr. Smith", "a meeting with Dr. Smith"),
        ("Team meeting with Acme - Q2 planning", "a meeting with Acme"),
        ("Zoom call with Bob (weekly)", "a call with Bob"),
        ("appointment with the notary: signing", "an appointment with the notary"),
        ("Dentist appointment", "a dentist appointment"),
        ("Eye appointment", "an eye appointment"),
        ("MRI appointment", "an MRI appointment"),
        ("Dr. Patel appointment", "a Dr. Patel appointment"),
        ("Lunch with Sam", "lunch with Sam"),
        ("Coffee with   Jo", "coffee with Jo"),
        ("Standup", None),
        ("Meeting with", None),
        ("", None),
        (None, None),
    ],
)
def test_title_patterns(title: str | None, phrase: str | None) -> None:
    assert title_phrase(title) == phrase


def test_replay_and_google_shapes_agree() -> None:
    replay = parse_event(
        {
            "id": "e1",
            "title": "Meeting with Dr. Smith",
            "start": "2026-03-10T14:00:00Z",
            "end": "2026-03-10T15:00:00Z",
            "attendees": [{"email": "DR.SMITH@example.com", "name": "Dr. Smith"}],
        }
    )
    google = parse_event(
        {
            "id": "e1",
            "summary": "Meeting with Dr. Smith",
            "start": {"dateTime": "2026-03-10T15:00:00+01:00"},
            "end": {"dateTime": "2026-03-10T16:00:00+01:00"},
            "attendees": [{"email": "dr.smith@example.com", "displayName": "Dr. Smith"}],
        }
    )
    assert replay.start == google.start and replay.end == google.end
    assert replay.attendees == google.attendees


def test_contacts_and_context_with_the_owners_name() -> None:
    raw = {
        "id": "e1",
        "title": "Meeting with Dr. Smith",
        "start": "2026-03-10T14:00:00Z",
        "end": "2026-03-10T15:00:00Z",
        "attendees": [
            {"email": "dr.smith@example.com", "name": "Dr. Smith"},
            {"email": "alice@example.com", "name": "Alice Liddell"},
            {"email": "bob@example.com", "name": "Bob"},
            {"email": "bobby@work.example", "name": "Bob"},
            {"email": "me@example.com", "name": "Me", "self": True},
            {"email": "r@resource.calendar.google.com", "name": "Room"},
            {"email": "team@example.com"},
            {"name": "No address"},
            {"email": "not-an-address", "name": "Broken"},
        ],
    }
    memories = derive_memories(
        parse_event(raw),
        owner_name="Alice",
        now=NOW,
        excluded_emails={"ALICE@example.com", "bob@example.com"},
        excluded_names={"Bob"},
    )
    assert [(m.category, m.content) for m in memories] == [
        (Category.RELATIONSHIP, "Alice has a contact: Dr. Smith (dr.smith@example.com)"),
        (
            Category.CONTEXT,
            "Alice has a meeting with Dr. Smith on Tuesday 10 March 2026 at 14:00 UTC",
        ),
    ]
    assert memories[0].expires_at is None
    assert memories[1].expires_at == datetime(2026, 3, 10, 15, tzinfo=UTC)


def test_circle_members_under_unknown_addresses_are_never_contacts() -> None:
    """A partner invited under an address Alfred does not know (no connected calendar):
    the same first name or a username in the address is enough to leave them out."""
    raw = {
        "id": "e2",
        "title": "Dinner",
        "start": "2026-03-10T19:00:00Z",
        "attendees": [
            {"email": "robert.b@mail.example", "name": "Bob Jones"},  # first name
            {"email": "bobcat77@mail.example", "name": "R. B."},  # Telegram username
            {"email": "bob_jones@work.example", "name": "Mr J"},  # first name in the address
            {"email": "alice.l@home.example", "name": "A. L."},  # the owner's own name
            {"email": "carol@clinic.example", "name": "Dr. Carol Diaz"},
            {"email": "ed@garage.example", "name": "Ed"},
        ],
    }
    memories = derive_memories(
        parse_event(raw),
        owner_name="Alice Liddell",
        now=NOW,
        excluded_names={"Bob", "bobcat77"},
    )
    assert [m.content for m in memories] == [
        "Alice Liddell has a contact: Dr. Carol Diaz (carol@clinic.example)",
        "Alice Liddell has a contact: Ed (ed@garage.example)",
        "Alice Liddell has dinner on Tuesday 10 March 2026 at 19:00 UTC",
    ]


def test_what_is_not_remembered() -> None:
    past = {"id": "p", "title": "Call with Ann", "start": "2026-02-01T10:00:00Z"}
    assert derive(past) == []  # over already: no context
    old = {
        "id": "o",
        "title": "Sync",
        "start": (NOW - timedelta(days=400)).isoformat(),
        "attendees": [{"email": "ann@example.com", "name": "Ann"}],
    }
    assert derive(old) == []  # contacts from long ago are not news
    crowd = {
        "id": "c",
        "title": "All hands",
        "start": "2026-03-10T10:00:00Z",
        "attendees": [
            {"email": f"p{i}@example.com", "name": f"P {i}"}
            for i in range(MAX_CONTACT_ATTENDEES + 1)
        ],
    }
    # a big meeting is remembered as an event, but its guests are not contacts
    assert derive(crowd) == ["Alice has all hands on Tuesday 10 March 2026 at 10:00 UTC"]
    cancelled = {"id": "x", "title": "Call with Ann", "start": "2026-03-10T10:00:00Z"}
    assert derive({**cancelled, "status": "cancelled"}) == []
    assert derive({"id": "n", "start": "2026-03-10T10:00:00Z"}) == []  # no title


def test_all_day_and_time_zones() -> None:
    allday = parse_event({"id": "a", "summary": "Vet appointment", "start": {"date": "2026-03-12"}})
    assert allday.all_day and describe_when(allday) == "on Thursday 12 March 2026"
    assert allday.effective_end == datetime(2026, 3, 13, tzinfo=UTC)
    trip = parse_event(
        {"id": "t", "start": {"date": "2026-03-12"}, "end": {"date": "2026-03-15"}},
        default_zone="Europe/Paris",
    )
    assert describe_when(trip) == "from Thursday 12 March 2026 to Saturday 14 March 2026"
    assert trip.start is not None and trip.start.utcoffset() == timedelta(hours=1)
    naive = parse_event(
        {"id": "n", "start": {"dateTime": "2026-07-01T09:00:00", "timeZone": "Asia/Tokyo"}}
    )
    assert describe_when(naive) == "on Wednesday 1 July 2026 at 09:00 Asia/Tokyo"
    offset = parse_event({"id": "o", "start": "2026-07-01T09:00:00-05:00"})
    assert describe_when(offset) == "on Wednesday 1 July 2026 at 09:00 UTC-05:00"
    unknown = parse_event(
        {"id": "u", "start": {"dateTime": "2026-07-01T09:00:00", "timeZone": "Mars/Olympus"}}
    )
    assert unknown.start == datetime(2026, 7, 1, 9, tzinfo=UTC) and unknown.time_zone is None
    garbage = parse_event({"id": "g", "start": {"dateTime": "soon"}, "end": 42, "attendees": "x"})
    assert garbage.start is None and garbage.attendees == () and describe_when(garbage) == ""
    backwards = parse_event({"id": "b", "start": "2026-03-10T10:00Z", "end": "2026-03-10T09:00Z"})
    assert backwards.end is None


def test_recurring_series() -> None:
    weekly = parse_event(
        {
            "id": "w",
            "summary": "Call with Mom",
            "start": "2026-01-05T18:00:00Z",
            "end": "2026-01-05T18:30:00Z",
            "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=10"],
        }
    )
    recurring, last = series_end(weekly)
    assert recurring and last == datetime(2026, 3, 9, 18, 30, tzinfo=UTC)
    memories = derive_memories(weekly, owner_name="Alice", now=NOW)
    assert [m.content for m in memories] == [
        "Alice has a call with Mom every Monday at 18:00 UTC, until Monday 9 March 2026"
    ]
    forever = parse_event(
        {
            "id": "f",
            "title": "Lunch with Dad",
            "start": "2025-01-05T12:00:00Z",
            "recurrence": ["RRULE:FREQ=MONTHLY;INTERVAL=2"],
        }
    )
    memories = derive_memories(forever, owner_name="Alice", now=NOW)
    assert [m.content for m in memories] == [
        "Alice has lunch with Dad on the 5th of every other month at 12:00 UTC"
    ]
    # no end date: bounded, not remembered for ever (the sync renews it on any change)
    assert memories[0].expires_at == NOW + OPEN_SERIES_HORIZON
    future = parse_event(
        {
            "id": "g",
            "title": "Lunch with Dad",
            "start": "2026-06-01T12:00:00Z",
            "recurrence": ["RRULE:FREQ=MONTHLY"],
        }
    )
    later = derive_memories(future, owner_name="Alice", now=NOW)
    assert later[0].expires_at == datetime(2026, 6, 1, 12, tzinfo=UTC) + OPEN_SERIES_HORIZON
    ended = parse_event(
        {
            "id": "e",
            "title": "Call with Ann",
            "start": "2025-01-05T12:00:00Z",
            "recurrence": ["RRULE:FREQ=DAILY;UNTIL=20250201"],
        }
    )
    assert derive_memories(ended, owner_name="Alice", now=NOW) == []


@pytest.mark.parametrize(
    ("raw", "memory"),
    [
        (
            {"title": "Therapy", "start": "2026-03-10T17:00:00Z", "zone": "Europe/Lisbon"},
            "Alice has therapy on Tuesday 10 March 2026 at 17:00 Europe/Lisbon",
        ),
        (
            {"summary": "Flight to Lisbon", "start": {"dateTime": "2026-03-12T07:05:00+01:00"}},
            "Alice has a flight to Lisbon on Thursday 12 March 2026 at 07:05 UTC+01:00",
        ),
        (
            {"title": "Sam's recital", "start": "2026-03-14T15:00:00Z"},
            "Alice has Sam's recital on Saturday 14 March 2026 at 15:00 UTC",
        ),
        (
            {"title": "Dinner at Luigi's", "start": "2026-03-13T19:30:00Z"},
            "Alice has dinner at Luigi's on Friday 13 March 2026 at 19:30 UTC",
        ),
        (
            {
                "summary": "Away",
                "eventType": "outOfOffice",
                "start": {"date": "2026-03-16"},
                "end": {"date": "2026-03-21"},
            },
            "Alice is out of office from Monday 16 March 2026 to Friday 20 March 2026",
        ),
    ],
)
def test_any_event_worth_remembering(raw: dict[str, Any], memory: str) -> None:
    zone = raw.pop("zone", None)
    assert derive({"id": "e", **raw}, zone=zone) == [memory]


@pytest.mark.parametrize(
    "raw",
    [
        {"title": "Busy", "start": "2026-03-10T10:00:00Z"},
        {"title": "Focus time", "start": "2026-03-10T10:00:00Z"},
        {"title": "(No title)", "start": "2026-03-10T10:00:00Z"},
        {"title": "???", "start": "2026-03-10T10:00:00Z"},
        {"summary": "Home", "eventType": "workingLocation", "start": {"date": "2026-03-10"}},
        {"summary": "Deep work", "eventType": "focusTime", "start": "2026-03-10T10:00:00Z"},
    ],
)
def test_placeholders_are_not_remembered(raw: dict[str, Any]) -> None:
    assert derive({"id": "p", **raw}) == []


@pytest.mark.parametrize(
    ("rule", "start", "memory"),
    [
        (
            "FREQ=WEEKLY;BYDAY=TU",
            "2026-01-06T18:00:00",
            "Alice has therapy every Tuesday at 18:00 Europe/Paris",
        ),
        (
            "FREQ=WEEKLY;BYDAY=TU,TH",
            "2026-01-06T18:00:00",
            "Alice has therapy every Tuesday and Thursday at 18:00 Europe/Paris",
        ),
        (
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=WE",
            "2026-01-07T18:00:00",
            "Alice has therapy every other Wednesday at 18:00 Europe/Paris",
        ),
        (
            "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
            "2026-01-05T08:15:00",
            "Alice has therapy on weekdays at 08:15 Europe/Paris",
        ),
        (
            "FREQ=MONTHLY;BYDAY=1MO",
            "2026-01-05T18:00:00",
            "Alice has therapy on the first Monday of every month at 18:00 Europe/Paris",
        ),
        (
            "FREQ=MONTHLY;BYMONTHDAY=21",
            "2026-01-21T18:00:00",
            "Alice has therapy on the 21st of every month at 18:00 Europe/Paris",
        ),
        (
            "FREQ=DAILY",
            "2026-01-05T07:00:00",
            "Alice has therapy every day at 07:00 Europe/Paris",
        ),
        (
            "FREQ=YEARLY",
            "2025-06-02T10:00:00",
            "Alice has therapy every year on 2 June at 10:00 Europe/Paris",
        ),
        (
            "FREQ=WEEKLY;BYDAY=TU",
            "2026-04-07T18:00:00",
            "Alice has therapy every Tuesday at 18:00 Europe/Paris, starting Tuesday 7 April 2026",
        ),
    ],
)
def test_a_series_is_one_memory_worded_by_its_rule(rule: str, start: str, memory: str) -> None:
    """Times are the event's, in its own zone (Europe/Paris here), whatever UTC says."""
    raw = {
        "id": "s",
        "summary": "Therapy",
        "start": {"dateTime": start, "timeZone": "Europe/Paris"},
        "recurrence": [f"RRULE:{rule}"],
    }
    assert derive(raw) == [memory]
