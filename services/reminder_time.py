"""When a reminder is due: the phrase a person said, read in their time zone.

Dates come from ``dateparser`` and repetitions from ``python-dateutil`` rrules; this
module only maps a few English phrases onto them ("every Thursday", "every other week",
"on weekdays", "on the 1st of each month") and words the result back ("tomorrow,
Tuesday 6 January, at 09:00"). It is called only after a reminder rule matched, so the
reply path pays nothing for it otherwise.

:func:`zone_for` turns the zone name :mod:`services.timezones` resolved for a person
(own, calendar's, circle's, else UTC) into a ``tzinfo``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

import dateparser
from dateutil.rrule import rrulestr

from memory.calendar_events import zone_named

#: The hour a reminder with a day but no time is set for ("on Saturday").
DEFAULT_HOUR = 9
_PARTS_OF_DAY = {
    "morning": "9:00",
    "afternoon": "15:00",
    "evening": "18:00",
    "night": "20:00",
    "tonight": "today 20:00",
    "noon": "12:00",
    "midday": "12:00",
}
_DAYS = {
    "monday": "MO",
    "tuesday": "TU",
    "wednesday": "WE",
    "thursday": "TH",
    "friday": "FR",
    "saturday": "SA",
    "sunday": "SU",
}
_DAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b", re.I)


def zone_for(stored: str | None) -> tzinfo:
    """A zone name as a ``tzinfo``; UTC for none or one no longer known."""
    return zone_named(stored) or UTC


@dataclass(frozen=True)
class When:
    """A parsed time: the first due moment (UTC) and, for a repetition, its rrule."""

    due: datetime
    rule: str | None = None


def _clock_time(text: str) -> tuple[int, int] | None:
    """The hour and minute said in ``text`` ("7pm", "9", "19:30", "morning")."""
    for word, value in _PARTS_OF_DAY.items():
        if re.search(rf"\b{word}\b", text, re.I):
            said_hour, said_minute = value.split()[-1].split(":")
            return int(said_hour), int(said_minute)
    for match in _TIME.finditer(text):
        hour = int(match.group(1))
        minute = int(match.group(2) or 0)
        suffix = (match.group(3) or "").lower()
        if not suffix and not match.group(2) and not re.search(r"\bat\s*$", text[: match.start()]):
            continue  # "the 1st", "2 hours": not a clock time
        if suffix == "pm" and hour < 12:
            hour += 12
        if suffix == "am" and hour == 12:
            hour = 0
        if hour < 24 and minute < 60:
            return hour, minute
    return None


_ONLY_A_TIME = re.compile(
    r"(?:at\s+)?(?:\d{1,2}(?::\d{2})?\s*(?:am|pm)?|(?:in the\s+)?(?:"
    + "|".join(w for w in _PARTS_OF_DAY if w != "tonight")
    + r"))",
    re.I,
)


def time_of_day(phrase: str) -> tuple[int, int] | None:
    """The hour and minute of a phrase that names a time of day and nothing else ("10",
    "8pm", "at 19:30", "the morning"); None when it names a day or a date too."""
    text = re.sub(r"^\s*the\s+", "", phrase.strip().rstrip(".!"), flags=re.I)
    if not _ONLY_A_TIME.fullmatch(text):
        return None
    return _clock_time(text if re.search(r"[a-z:]", text, re.I) else f"at {text}")


def _rule(phrase: str) -> str | None:
    """The rrule (without DTSTART) a repetition phrase names, or None for a one-off."""
    p = phrase.lower()
    other = re.search(rf"\bevery other (week|{_DAY})\b", p)
    if other:
        day = _DAYS.get((other.group(2) or "").lower())
        return "FREQ=WEEKLY;INTERVAL=2" + (f";BYDAY={day}" if day else "")
    if re.search(r"\b(on weekdays|every weekday|each weekday)\b", p):
        return "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
    monthly = re.search(r"\bthe (\d{1,2})(?:st|nd|rd|th)? of (?:each|every|the) month\b", p)
    if monthly:
        return f"FREQ=MONTHLY;BYMONTHDAY={int(monthly.group(1))}"
    weekly = re.search(rf"\b(?:every|each|on) {_DAY}\b", p)
    if weekly and re.search(r"\bevery|each\b|s\b", weekly.group(0)):
        return f"FREQ=WEEKLY;BYDAY={_DAYS[weekly.group(1).lower()]}"
    if re.search(r"\b(every day|each day|daily)\b", p):
        return "FREQ=DAILY"
    if re.search(r"\b(every week|weekly)\b", p):
        return "FREQ=WEEKLY"
    return None


def next_occurrence(rule: str, zone: tzinfo, start: datetime, after: datetime) -> datetime | None:
    """The first occurrence of ``rule`` (wall-clock times in ``zone``, counted from
    ``start``) strictly after ``after``, in UTC: a missed run collapses into the next."""
    local_start = start.astimezone(zone).replace(second=0, microsecond=0)
    found = rrulestr(rule, dtstart=local_start).after(after.astimezone(zone), inc=False)
    return found.astimezone(UTC) if found is not None else None


def parse_when(phrase: str, now: datetime, zone: tzinfo) -> When | None:
    """The time ``phrase`` names, seen from ``now`` in ``zone``; None when it names none.

    ``now`` and the result are UTC. A day without a time is at 09:00 local."""
    phrase = phrase.strip().rstrip(".!")
    rule = _rule(phrase)
    clock = _clock_time(phrase)
    local_now = now.astimezone(zone)
    if rule is not None:
        hour, minute = clock or (DEFAULT_HOUR, 0)
        start = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if "BYDAY" not in rule and "BYMONTHDAY" not in rule:
            day = re.search(_DAY, phrase, re.I)
            if day:  # "every other Thursday"
                rule += f";BYDAY={_DAYS[day.group(1).lower()]}"
        first = next_occurrence(rule, zone, start, now - timedelta(seconds=1))
        return When(first, f"{rule}") if first is not None else None
    text = phrase
    for word, value in _PARTS_OF_DAY.items():
        text = re.sub(rf"\b(?:in the |this )?{word}\b", f"at {value}", text, flags=re.I)
    text = re.sub(r"\bat (\d{1,2})(?![\d:]|\s*(?:am|pm))", r"at \1:00", text, flags=re.I)
    text = re.sub(r"^\s*on\s+", "", text, flags=re.I)
    parsed = dateparser.parse(
        text,
        languages=["en"],
        settings={
            "RELATIVE_BASE": local_now.replace(tzinfo=None),
            "PREFER_DATES_FROM": "future",
            "RETURN_AS_TIMEZONE_AWARE": False,
        },
    )
    if parsed is None:
        return None
    if clock is None and not re.search(r"\bin\s+(an?|\d+|a few)\b", phrase, re.I):
        parsed = parsed.replace(hour=DEFAULT_HOUR, minute=0, second=0, microsecond=0)
    due = parsed.replace(tzinfo=zone).astimezone(UTC)
    if due <= now and clock is not None and not re.search(r"\b(today|tonight)\b", phrase, re.I):
        due = (parsed + timedelta(days=1)).replace(tzinfo=zone).astimezone(UTC)  # "at 7" → next 7
    return When(due)


def spoken(due: datetime, zone: tzinfo, now: datetime) -> str:
    """``due`` in the person's words: "tomorrow, Tuesday 6 January, at 09:00"."""
    local = due.astimezone(zone)
    today = now.astimezone(zone).date()
    day = f"{local:%A} {local.day} {local:%B}"
    if local.year != today.year:
        day += f" {local.year}"
    if local.date() == today:
        lead = f"today, {day},"
    elif local.date() == today + timedelta(days=1):
        lead = f"tomorrow, {day},"
    else:
        lead = f"on {day}"
    return f"{lead} at {local:%H:%M}"


_WEEKDAY_NAMES = {code: name.capitalize() for name, code in _DAYS.items()}


def spoken_rule(rule: str, due: datetime, zone: tzinfo) -> str:
    """A repetition in words: "every Thursday at 19:00"."""
    local = due.astimezone(zone)
    at = f"at {local:%H:%M}"
    fields = dict(part.split("=", 1) for part in rule.split(";"))
    days = fields.get("BYDAY", "")
    every = "every other" if fields.get("INTERVAL") == "2" else "every"
    if fields.get("FREQ") == "MONTHLY":
        return f"on day {fields.get('BYMONTHDAY', local.day)} of every month {at}"
    if fields.get("FREQ") == "DAILY":
        return f"every day {at}"
    if days == "MO,TU,WE,TH,FR":
        return f"on weekdays {at}"
    if days:
        names = " and ".join(_WEEKDAY_NAMES[d] for d in days.split(","))
        return f"{every} {names} {at}"
    return f"{every} week on {local:%A} {at}"
