"""How calendar events are put into words: when, what, and how often.

"Alice has a call with Mom every Monday at 18:00 Europe/Paris": the phrase comes from the
title (the seed's patterns, "meeting with X", "X appointment", first; otherwise the title
itself, unless it is a placeholder such as "Busy"), the time from the event in its own
time zone (else the calendar's), and a recurring series is described by its rule as one
memory instead of one per occurrence.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

from memory.calendar_events import DEFAULT_DURATION, CalendarEvent, zone_named

#: Longest "X" kept from a title ("meeting with X"), in words and characters.
MAX_WHO_WORDS = 8
MAX_WHO_CHARS = 60
#: Longest title kept as the phrase itself ("Therapy", "Parents' evening at school").
MAX_TITLE_WORDS = 10
MAX_TITLE_CHARS = 80

_WHO_CUT = re.compile(r"\s+[-–—|]\s+|[:(\[{/|]|\s+(?:re|about|to discuss|regarding)\s+", re.I)
_EDGE = re.compile(r"^[\s\W_]+|[\s\W_]+$")


def _local(moment: datetime, zone_name: str | None) -> tuple[datetime, str]:
    zone = zone_named(zone_name)
    if zone is not None:
        return moment.astimezone(zone), zone_name or "UTC"
    offset = moment.utcoffset() or timedelta(0)
    if offset == timedelta(0):
        return moment, "UTC"
    sign = "+" if offset >= timedelta(0) else "-"
    minutes = abs(int(offset.total_seconds())) // 60
    return moment, f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _day(moment: datetime) -> str:
    return f"{moment:%A} {moment.day} {moment:%B %Y}"


def shown_zone(event: CalendarEvent, zone: str | None) -> str | None:
    """The zone an event's time is told in: ``zone`` (the reader's own) when it is a
    real zone and the event has a time of day, else the event's own. All-day events keep
    their dates (a birthday on the 8th is on the 8th everywhere), and a series keeps its
    zone when the reader's would move it to another day (its weekdays are the event's)."""
    if event.start is None or event.all_day or zone_named(zone) is None:
        return event.time_zone
    if event.recurrence:
        theirs, _ = _local(event.start, event.time_zone)
        ours, _ = _local(event.start, zone)
        if theirs.date() != ours.date():
            return event.time_zone
    return zone


def describe_when(event: CalendarEvent, zone: str | None = None) -> str:
    """When the event is, in words: "on Tuesday 10 March 2026 at 15:00 Europe/Paris"
    (all-day events without a time); empty when the start is unknown. ``zone``: the
    reader's time zone, when known (see :func:`shown_zone`)."""
    if event.start is None:
        return ""
    start, label = _local(event.start, shown_zone(event, zone))
    if not event.all_day:
        return f"on {_day(start)} at {start:%H:%M} {label}"
    end = event.effective_end
    if end is not None:
        last, _ = _local(end - timedelta(days=1), event.time_zone)
        if last.date() > start.date():
            return f"from {_day(start)} to {_day(last)}"
    return f"on {_day(start)}"


def _clean_who(text: str) -> str | None:
    who = _WHO_CUT.split(text, maxsplit=1)[0]
    who = _EDGE.sub("", who)
    words = who.split()
    if not words:
        return None
    who = " ".join(words[:MAX_WHO_WORDS])[:MAX_WHO_CHARS].strip()
    return who or None


def _article(word: str) -> str:
    if word.isupper() and len(word) <= 5:  # acronyms are read letter by letter: "an MRI"
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in "aeiou" else "a"


_WITH_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bmeeting\s+with\s+(?P<who>.+)", re.I), "a meeting with"),
    (re.compile(r"\bcall\s+with\s+(?P<who>.+)", re.I), "a call with"),
    (re.compile(r"\bappointment\s+with\s+(?P<who>.+)", re.I), "an appointment with"),
    (
        re.compile(r"\b(?P<meal>lunch|dinner|breakfast|coffee|drinks)\s+with\s+(?P<who>.+)", re.I),
        "{meal} with",
    ),
)
_OF_APPOINTMENT = re.compile(r"^(?P<what>.+?)\s+appointment\b", re.I)

_FREQ_STEP = {
    "DAILY": timedelta(days=1),
    "WEEKLY": timedelta(days=7),
    "MONTHLY": timedelta(days=31),
    "YEARLY": timedelta(days=366),
}


def title_phrase(title: str | None) -> str | None:
    """What a title says the owner has: "a meeting with Dr. Smith", "a dentist
    appointment", "lunch with Sam"; None when no pattern matches."""
    if not title:
        return None
    for pattern, template in _WITH_PATTERNS:
        match = pattern.search(title)
        if match is None:
            continue
        who = _clean_who(match.group("who"))
        if who is None:
            continue
        if "{meal}" in template:
            return f"{match.group('meal').lower()} with {who}"
        return f"{template} {who}"
    match = _OF_APPOINTMENT.search(title)
    if match is None:
        return None
    what = _clean_who(match.group("what"))
    if what is None:
        return None
    words = what.split()
    if len(words) == 1 and not what.isupper():
        what = what[0].lower() + what[1:]  # "Dentist appointment" → "a dentist appointment"
    return f"{_article(what)} {what} appointment"


def _rrule(event: CalendarEvent) -> dict[str, str] | None:
    for line in event.recurrence:
        if line.upper().startswith("RRULE:"):
            parts = (p.split("=", 1) for p in line[6:].split(";") if "=" in p)
            return {k.upper(): v for k, v in parts}
    return None


def _rrule_until(value: str) -> datetime | None:
    value = value.strip()
    for fmt in ("%Y%m%dT%H%M%SZ", "%Y%m%dT%H%M%S", "%Y%m%d"):
        try:
            return datetime.strptime(value, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def series_end(event: CalendarEvent) -> tuple[bool, datetime | None]:
    """For a recurring series: (is it recurring, when its last occurrence ends or None
    when it never ends). COUNT is approximated generously (months as 31 days)."""
    rule = _rrule(event)
    if rule is None:
        return False, None
    duration = (
        (event.effective_end - event.start)
        if event.start is not None and event.effective_end is not None
        else DEFAULT_DURATION
    )
    if "UNTIL" in rule:
        until = _rrule_until(rule["UNTIL"])
        return True, (until + duration) if until else None
    if "COUNT" in rule and event.start is not None:
        try:
            count = max(1, int(rule["COUNT"]))
            interval = max(1, int(rule.get("INTERVAL", "1")))
        except ValueError:
            return True, None
        step = _FREQ_STEP.get(rule.get("FREQ", "").upper(), timedelta(days=1))
        return True, event.start + step * interval * (count - 1) + duration
    return True, None


# --- any title ----------------------------------------------------------------------

#: Titles that only block time: nothing worth remembering about the person.
_PLACEHOLDERS: Final = frozenset(
    {
        "busy", "blocked", "block", "hold", "on hold", "focus", "focus time", "tentative",
        "private", "do not book", "dnd", "no meetings", "free", "available", "tbd", "tba",
        "untitled", "no title", "new event", "event", "reminder", "placeholder",
        "travel time", "commute", "focus block", "time block", "blocked time", "deep work",
        "heads down", "heads-down", "ooo hold", "buffer", "prep", "prep time",
    }
)  # fmt: skip
_OUT_OF_OFFICE: Final = frozenset({"ooo", "out of office", "out-of-office", "away", "pto"})
#: Common first words of activity titles, lower-cased in a sentence ("Therapy" → "Alice
#: has therapy"); any other capitalised first word may be a name and is kept as written.
_COMMON_FIRST: Final = frozenset(
    {
        "therapy", "dinner", "lunch", "breakfast", "brunch", "coffee", "drinks", "yoga",
        "gym", "pilates", "swim", "swimming", "football", "soccer", "tennis", "basketball",
        "piano", "guitar", "violin", "music", "ballet", "dance", "karate", "judo", "training",
        "practice", "rehearsal", "choir", "class", "lesson", "lessons", "school", "parents",
        "parent", "team", "family", "date", "book", "board", "weekly", "monthly", "daily",
        "meeting", "call", "interview", "appointment", "checkup", "check-up", "physio",
        "physiotherapy", "dentist", "doctor", "vet", "haircut", "massage", "flight", "train",
        "trip", "holiday", "vacation", "concert", "party", "birthday", "wedding", "funeral",
        "church", "mass", "run", "running", "walk", "hike", "cooking", "shopping", "cleaning",
        "pickup", "pick-up", "drop-off", "dropoff", "bins", "rent", "bill",
        "payday", "standup", "stand-up", "sync", "review", "planning", "retro", "workshop",
        "conference", "course", "exam", "test", "tutoring", "homework", "study", "session",
        "visit", "playdate", "sleepover", "game", "match", "recital", "show", "all", "staff",
        "company", "office", "quarterly", "annual", "evening", "morning",
    }
)  # fmt: skip
#: First words that read better with an article ("Alice has a flight to Lisbon").
_COUNTABLE: Final = frozenset(
    {
        "flight", "train", "trip", "meeting", "call", "interview", "appointment", "checkup",
        "check-up", "haircut", "massage", "concert", "party", "wedding", "funeral", "exam",
        "test", "visit", "playdate", "sleepover", "game", "match", "recital", "show",
        "workshop", "conference", "session", "lesson", "class", "review", "date", "sync",
    }
)  # fmt: skip


def _clean_title(title: str | None) -> str | None:
    if not title:
        return None
    text = " ".join(title.split())
    text = _EDGE.sub("", text) if not text.endswith(")") else text.lstrip()
    words = text.split()
    if not words or not any(ch.isalpha() for ch in text):
        return None
    text = " ".join(words[:MAX_TITLE_WORDS])[:MAX_TITLE_CHARS].strip()
    return text or None


def _placeholder(title: str) -> bool:
    """Whether a title only blocks time ("Busy", "Focus block 12", "(No title)")."""
    bare = re.sub(r"[\d#:.\-–—()\[\]]+", " ", title.casefold())
    return " ".join(bare.split()) in _PLACEHOLDERS or not bare.strip()


def is_out_of_office(event: CalendarEvent) -> bool:
    """Google's out-of-office event, or a title that says so."""
    if event.event_type == "outOfOffice":
        return True
    title = _clean_title(event.title)
    return title is not None and title.casefold() in _OUT_OF_OFFICE


def event_phrase(title: str | None) -> str | None:
    """What a person "has" at an event: the seed's title patterns first ("a meeting with
    Dr. Smith"), else the title itself in a sentence ("Therapy" → "therapy", "Flight to
    Lisbon" → "a flight to Lisbon", "Sam's recital" as written); None for placeholders
    ("Busy", "Focus time") and titles without words."""
    phrase = title_phrase(title)
    if phrase is not None:
        return phrase
    text = _clean_title(title)
    if text is None or _placeholder(text):
        return None
    first = text.split()[0]
    lowered = first.lower()
    if lowered in _COMMON_FIRST and (first[1:] == first[1:].lower()):
        text = lowered + text[len(first) :]
    if lowered in _COUNTABLE:
        text = f"{_article(text)} {text}"
    return text


# --- recurrence ---------------------------------------------------------------------

_WEEKDAYS: Final = {
    "MO": "Monday",
    "TU": "Tuesday",
    "WE": "Wednesday",
    "TH": "Thursday",
    "FR": "Friday",
    "SA": "Saturday",
    "SU": "Sunday",
}
_WEEKDAY_CODES: Final = tuple(_WEEKDAYS)
_NTH: Final = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last"}
_BYDAY: Final = re.compile(r"^(?P<n>[+-]?\d{1,2})?(?P<day>MO|TU|WE|TH|FR|SA|SU)$")


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _every(interval: int, unit: str, units: str) -> str:
    """ "every week", "every other week", "every 3 weeks"."""
    if interval == 1:
        return f"every {unit}"
    if interval == 2:
        return f"every other {unit}"
    return f"every {interval} {units}"


def describe_recurrence(event: CalendarEvent, zone: str | None = None) -> str | None:
    """How often a series happens, in words, with its time: "every Tuesday at 18:00
    Europe/Paris", "on weekdays at 08:15 UTC", "on the first Monday of every month",
    "every year on 4 March"; None when the rule cannot be read (the caller falls back)."""
    rule = _rrule(event)
    if rule is None or event.start is None:
        return None
    start, label = _local(event.start, shown_zone(event, zone))
    at = "" if event.all_day else f" at {start:%H:%M} {label}"
    try:
        interval = max(1, int(rule.get("INTERVAL") or "1"))
    except ValueError:
        return None
    days = [
        m for m in (_BYDAY.match(d.strip().upper()) for d in rule.get("BYDAY", "").split(",")) if m
    ]
    freq = rule.get("FREQ", "").upper()
    if freq == "DAILY":
        return _every(interval, "day", "days") + at
    if freq == "WEEKLY":
        codes = sorted({m.group("day") for m in days}, key=_WEEKDAY_CODES.index) or [
            _WEEKDAY_CODES[start.weekday()]
        ]
        if codes == list(_WEEKDAY_CODES[:5]) and interval == 1:
            return "on weekdays" + at
        names = _join([_WEEKDAYS[c] for c in codes])
        if interval <= 2:
            return f"{_every(interval, names, names)}{at}"
        return f"every {interval} weeks on {names}{at}"
    if freq == "MONTHLY":
        nth = next((m for m in days if m.group("n")), None)
        if nth is not None and int(nth.group("n")) in _NTH:
            what = f"the {_NTH[int(nth.group('n'))]} {_WEEKDAYS[nth.group('day')]}"
        else:
            try:
                day = int((rule.get("BYMONTHDAY") or str(start.day)).split(",")[0])
            except ValueError:
                return None
            what = "the last day" if day == -1 else f"the {_ordinal(day)}"
        if interval == 1:
            return f"on {what} of every month{at}"
        if interval == 2:
            return f"on {what} of every other month{at}"
        return f"on {what}, every {interval} months{at}"
    if freq == "YEARLY":
        return f"{_every(interval, 'year', 'years')} on {start.day} {start:%B}{at}"
    return None


def local_day(moment: datetime, zone_name: str | None) -> str:
    """The day of ``moment`` in the zone, in words: "Monday 9 March 2026"."""
    return _day(_local(moment, zone_name)[0])
