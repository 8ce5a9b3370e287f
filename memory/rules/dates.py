"""Dates in statements: is there one, and "tomorrow" or "next week" made absolute.

An important date is only worth remembering with the date itself ("my birthday is March
3"); "my birthday is coming up" is not a fact. Relative words are resolved against the
conversation's ``now`` so that "my birthday is tomorrow" stays true next year, and "my mom
is visiting next week" does not move a week on every week it is remembered. What people
read two ways ("next Friday", "next weekend") keeps its words and gains the day it was
said, so that whoever reads it later can count from there.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final

MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
DATE = re.compile(
    rf"\b(?:(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}\.?(?:,?\s+\d{{4}})?"
    rf"|{_MONTH}\.?\s+(?:the\s+)?{_DAY}(?:,?\s+\d{{4}})?"
    r"|\d{4}-\d{2}-\d{2})\b",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"\b(?:on\s+)?(?P<word>today|tomorrow|yesterday)\b", re.IGNORECASE)
_OFFSETS: Final = {"yesterday": -1, "today": 0, "tomorrow": 1}
WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: Any day of the week, as a regular expression (match it case-insensitively).
WEEKDAY: Final = rf"(?:{'|'.join(WEEKDAYS)})"
#: A part of one day: "Wednesday evening" is one evening, "Wednesday evenings" a habit.
PART_OF_DAY: Final = r"(?:morning|afternoon|evening|night)"
#: Not followed by a date: "Friday 9 January" and "Friday, January 9" are dated already.
_UNDATED = rf"(?!,?\s+(?:the\s+)?\d)(?!,?\s+{_MONTH}\b)"
#: A weekday named as one day, to follow what leads to it, with the part of that day if
#: one is named ("Friday night"): not "Fridays" or "Friday nights" (a habit), and not
#: "Friday 9 January" or "Friday, January 9" (dated already).
_ONE_WEEKDAY = (
    rf"(?P<day>{WEEKDAY})\b(?!'?s\b)(?:\s+(?P<part>{PART_OF_DAY})\b(?!'?s\b))?"
    rf"(?!\s+{PART_OF_DAY}'?s\b){_UNDATED}"
)
#: "from Tuesday to Thursday": the coming first day, and the last counted from it.
_WEEKDAY_RANGE = re.compile(
    rf"\bfrom\s+(?P<day>{WEEKDAY})\s+(?P<to>to|until|till|through)\s+(?P<end>{WEEKDAY})\b"
    rf"(?!'?s\b){_UNDATED}",
    re.IGNORECASE,
)
#: "on Friday", "this Friday": one coming day. Not "next Friday", which people read two
#: ways.
_COMING_WEEKDAY = re.compile(rf"\b(?P<lead>on|this)\s+{_ONE_WEEKDAY}", re.IGNORECASE)


#: "this week", "next month", "last year": a span counted from the day it was said. Not
#: "next week's" (a possessive keeps its words: "the week of May 4's" reads badly).
_SPAN = re.compile(
    r"\b(?P<lead>this|next|last)\s+(?P<span>week|month|year)\b(?!'s\b)", re.IGNORECASE
)
#: "this weekend": the one under way, or the coming one.
_THIS_WEEKEND = re.compile(r"\bthis\s+weekend\b(?!'s\b)", re.IGNORECASE)
#: "tonight": the evening of the day it was said.
#: A preceding "on" ("the game is on tonight") is taken with it, so the result does not
#: read "on on the evening of …".
_TONIGHT = re.compile(r"\b(?:on\s+)?tonight\b(?!'s\b)", re.IGNORECASE)
#: A plan moved to another time: "moved to", "pushed back to", "put off until".
MOVED_TO: Final = (
    r"(?:moved|postponed|pushed(?:\s+back)?|rescheduled|changed|put\s+off|brought\s+forward)"
    r"\s+(?:to|until|till)"
)
#: A plan or a visit that is off: "cancelled", "called off" …
CALLED_OFF: Final = r"(?:cancell?ed|called\s+off)"
#: … or a visitor who will not come.
NOT_COMING: Final = r"(?:(?:isn't|is\s+not|won't\s+be)\s+coming|can(?:'t|not)\s+(?:come|make\s+it))"
#: What may follow either and still say no more than when: "… after all", "… on Sunday".
WHEN_TAIL: Final = r"(?:\s+(?:after\s+all|again|today|tomorrow|tonight|(?:on|this|next)\s+.+))"
#: "coming Thursday", "arrives Friday", "moved to Friday": a coming day named bare after
#: a verb of coming or going, or of a plan moved, read as "on Thursday" (not "Thursday is
#: my favourite day"); :data:`_TO_ON` then drops the "on" after "to".
_BARE_WEEKDAY = re.compile(
    r"\b(?P<verb>coming(?:\s+(?:over|round|around|by|back))?|visiting|arriving|arrives"
    rf"|comes|visits|leaving|leaves|starting|starts|{MOVED_TO})\s+{_ONE_WEEKDAY}",
    re.IGNORECASE,
)
#: A resolved day after "to" or "until": the day reads without its "on".
_TO_ON = re.compile(rf"\b(?P<to>to|until|till)\s+on\s+(?=(?:the\s+{PART_OF_DAY}\s+of\s+)?[A-Z])")
#: "last Friday": the latest one before the day it was said.
_LAST_WEEKDAY = re.compile(rf"\blast\s+(?P<day>{WEEKDAY})\b(?!'?s\b)", re.IGNORECASE)
#: "next Friday", "next weekend": the coming one to some, the one after to others. Kept
#: as said, with the day it was said at the end of the line.
_NEXT_AMBIGUOUS = re.compile(rf"\bnext\s+(?:{WEEKDAY}|weekend)\b(?!'?s\b)", re.IGNORECASE)
_SAID_ON: Final = "(said on "
_SAID_ON_NOTE = re.compile(r" \(said on [A-Z]\w+, [A-Z]\w+ \d{1,2}\)")
#: Ends a line, and stays after the day it was said.
_CLOSING: Final = ".!?;: \n\t"
_NUMBER_WORDS: Final = "one two three four five six seven eight nine ten eleven twelve"
_NUMBERS: Final = {word: n for n, word in enumerate(_NUMBER_WORDS.split(), start=1)}
#: "in 3 days", "in two weeks", "in six months", "in a year"; not "in a day or two" or
#: "in a month of Sundays", which name no day, nor "in two days' time" (left as said).
_IN_SPAN = re.compile(
    rf"\bin\s+(?P<count>\d{{1,2}}|a|an|{'|'.join(_NUMBERS)})\s+"
    r"(?P<span>day|week|month|year)s?\b(?!')(?!\s+(?:or|of)\b)",
    re.IGNORECASE,
)


def has_date(text: str) -> bool:
    """Whether ``text`` names a calendar day ("March 3", "12 June 2015", "2025-06-12")."""
    return DATE.search(text) is not None


def _ahead(start: datetime, weekday: str) -> int:
    """Days from ``start`` to the next ``weekday`` (0 when it is that day)."""
    return (WEEKDAYS.index(weekday.lower()) - start.weekday()) % 7


def resolve_relative_dates(text: str, now: datetime) -> str:
    """``text`` with its days and spans counted from ``now`` replaced by what they mean
    ("tomorrow" → "on March 4", "on Friday" → "on Friday, March 6", "next week" → "the
    week of March 9", "next month" → "in April 2026", "in 3 days" → "on March 5"), and
    a line with "next Friday" given the day it was said ("the dentist next Friday (said on
    Monday, March 2)")."""

    def absolute(match: re.Match[str]) -> str:
        return f"on {_day(now + timedelta(days=_OFFSETS[match.group('word').lower()]))}"

    def coming(match: re.Match[str]) -> str:
        ahead = _ahead(now, match.group("day"))
        if ahead == 0 and match.groupdict().get("lead", "").lower() != "this":
            ahead = 7  # "on Friday" or "coming Friday", said on a Friday, is the next one
        day = _weekday_and_day(now + timedelta(days=ahead))
        part = match.groupdict().get("part")
        day = f"on the {part.lower()} of {day}" if part else f"on {day}"
        verb = match.groupdict().get("verb")
        return f"{verb} {day}" if verb else day

    def days_from(match: re.Match[str]) -> str:
        first = now + timedelta(days=_ahead(now, match.group("day")) or 7)
        last = first + timedelta(days=_ahead(first, match.group("end")))
        return f"from {_weekday_and_day(first)} {match.group('to')} {_weekday_and_day(last)}"

    def past(match: re.Match[str]) -> str:
        wanted = WEEKDAYS.index(match.group("day").lower())
        back = (now.weekday() - wanted) % 7 or 7
        return f"on {_weekday_and_day(now - timedelta(days=back))}"

    def span(match: re.Match[str]) -> str:
        step = {"this": 0, "next": 1, "last": -1}[match.group("lead").lower()]
        return _span_from(now, match.group("span").lower(), step, "in")

    def weekend(_: re.Match[str]) -> str:
        saturday = now + timedelta(days=(5 - now.weekday()) % 7)
        if now.weekday() == 6:  # said on the Sunday: the weekend under way
            saturday = now - timedelta(days=1)
        return f"the weekend of {_day(saturday)}"

    def later(match: re.Match[str]) -> str:
        word = match.group("count").lower()
        count = int(word) if word.isdigit() else _NUMBERS.get(word, 1)
        unit = match.group("span").lower()
        if unit == "day":
            return f"on {_day(now + timedelta(days=count))}"
        return _span_from(now, unit, count, "around")  # "in six months": roughly then

    text = _RELATIVE.sub(absolute, text)
    text = _WEEKDAY_RANGE.sub(days_from, text)
    text = _COMING_WEEKDAY.sub(coming, text)
    text = _BARE_WEEKDAY.sub(coming, text)
    text = _LAST_WEEKDAY.sub(past, text)
    text = _SPAN.sub(span, text)
    text = _THIS_WEEKEND.sub(weekend, text)
    text = _TONIGHT.sub(lambda _: f"on the evening of {_day(now)}", text)
    text = _IN_SPAN.sub(later, text)
    text = _TO_ON.sub(r"\g<to> ", text)  # "moved to tomorrow" is "moved to January 6"
    if not _NEXT_AMBIGUOUS.search(text) or _SAID_ON in text:
        return text
    # The day it was said goes at the end, where it reads as a note on the whole line.
    body = text.rstrip(_CLOSING)
    return f"{body} {_SAID_ON}{_weekday_and_day(now)}){text[len(body) :]}"


def without_said_on(text: str) -> str:
    """``text`` without the day it was said (:func:`resolve_relative_dates`' note at the
    end of a line): what a line too long for its limit gives up first, so that a cut
    never falls inside it."""
    return _SAID_ON_NOTE.sub("", text, count=1)


def _span_from(now: datetime, unit: str, steps: int, lead: str) -> str:
    """The week, month or year ``steps`` of them from ``now``'s: "the week of January 12",
    or ``lead`` and "February 2026" / "2027"."""
    if unit == "week":
        return f"the week of {_day(_monday(now) + timedelta(weeks=steps))}"
    if unit == "month":
        return f"{lead} {_month(now, steps)}"
    return f"{lead} {now.year + steps}"


def _day(day: datetime) -> str:
    return f"{MONTHS[day.month - 1]} {day.day}"


def _weekday_and_day(day: datetime) -> str:
    return f"{WEEKDAYS[day.weekday()].capitalize()}, {_day(day)}"


def _monday(day: datetime) -> datetime:
    return day - timedelta(days=day.weekday())


def _month(now: datetime, ahead: int) -> str:
    """The month ``ahead`` months after ``now``'s, with its year ("April 2026")."""
    index = now.year * 12 + now.month - 1 + ahead
    return f"{MONTHS[index % 12]} {index // 12}"
