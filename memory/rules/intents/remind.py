"""Reminder requests, by rules: "remind me to … tomorrow at 9", "what are my reminders?",
"cancel the bins reminder", "move the vet reminder to 10", "snooze 10 minutes".

Only the words are split here (who, what, the time phrase); the time phrase is read by
:mod:`services.reminder_time` once one of these rules matched, so ordinary messages pay
one anchored regular expression and nothing else.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from memory.rules.addressing import strip_addressing
from memory.rules.dates import WEEKDAY
from memory.rules.text import clean_text

_POLITE = r"(?:(?:please|pls|can you|could you|would you|will you|hey)\s+)*"
_SET = re.compile(
    rf"^{_POLITE}remind\s+(me|us|everyone|@?[\w'-]+)\s+(.+?)\s*[.!?]*\s*(?:,?\s*please)?[.!?]*$",
    re.I,
)
#: Where a time phrase may begin inside "to call the vet tomorrow at 9".
_WHEN_START = re.compile(
    r"\b(?:in\s+(?:an?|\d+|a few|half an)\s+\w+|every\b|each\b|daily\b|weekly\b|on\s+"
    rf"(?:weekdays|the\s+\d|{WEEKDAY}|\d|"
    r"january|february|march|april|may|june|july|august|september|october|november|"
    r"december)|at\s+\d|tomorrow\b|today\b|tonight\b|this\s+(?:morning|afternoon|evening)|"
    rf"next\s+\w+|{WEEKDAY}\b|noon\b)",
    re.I,
)
_LIST = re.compile(
    r"^(?:what|which)\s+(?:are|reminders)\s+(?:my|our|the)?\s*(?:reminders|do i have|"
    r"do we have|are set)|^(?:list|show)(?:\s+me)?\s+(?:my|our|the|all)?\s*reminders\b|"
    r"^(?:my|our)\s+reminders\s*\??$|^what\s+reminders\b",
    re.I,
)
_CANCEL = re.compile(
    r"^(?:cancel|delete|remove|stop|drop)\s+(?:the|my|our|that)?\s*(?:(.+?)\s+)?reminder"
    r"(?:\s+(?:to|about|for)\s+(.+))?$",
    re.I,
)
_MOVE = re.compile(
    r"^(?:move|change|reschedule|push|shift)\s+(?:the|my|our)?\s*(.+?)\s+reminder\s+to\s+(.+)$",
    re.I,
)
_SNOOZE = re.compile(
    r"^snooze(?:\s+(?:it|that|this))?(?:\s+(?:for|by))?(?:\s+(\d+|an?|ten|five|fifteen|"
    r"twenty|thirty)\s*(minutes?|mins?|m|hours?|h)?)?$",
    re.I,
)
_WORDS = {"a": 1, "an": 1, "five": 5, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30}


class SetReminder(BaseModel):
    """ "remind me/us/Bob to <task> <when>"."""

    model_config = ConfigDict(frozen=True)
    who: str  # "me", "us", or a name
    task: str
    when: str


class ListReminders(BaseModel):
    model_config = ConfigDict(frozen=True)


class CancelReminder(BaseModel):
    model_config = ConfigDict(frozen=True)
    about: str


class MoveReminder(BaseModel):
    model_config = ConfigDict(frozen=True)
    about: str
    when: str


class Snooze(BaseModel):
    model_config = ConfigDict(frozen=True)
    minutes: int = 10


ReminderIntent = SetReminder | ListReminders | CancelReminder | MoveReminder | Snooze


def _split(rest: str) -> tuple[str, str] | None:
    """("call the vet", "tomorrow at 9") out of "to call the vet tomorrow at 9" or
    "tomorrow at 9 to call the vet"."""
    if not rest.lower().startswith("to "):
        head = re.match(r"^(.+?)\s+to\s+(.+)$", rest, re.I)
        if head and _WHEN_START.match(head.group(1)):
            return head.group(2), head.group(1)
        return None
    body = rest[3:]
    for match in _WHEN_START.finditer(body):
        if match.start() == 0:
            continue
        task, when = body[: match.start()].strip(" ,"), body[match.start() :].strip()
        if task:
            return task, when
    return None


def detect_reminder(text: str) -> ReminderIntent | None:
    """The reminder request ``text`` makes, or None."""
    clean = strip_addressing(clean_text(text)).strip()
    if not clean or len(clean) > 400:
        return None
    bare = clean.rstrip(" ?!.")
    if _LIST.search(bare):
        return ListReminders()
    snooze = _SNOOZE.match(bare)
    if snooze:
        amount = snooze.group(1)
        number = (
            int(amount) if amount and amount.isdigit() else _WORDS.get((amount or "").lower(), 10)
        )
        unit = (snooze.group(2) or "m").lower()
        return Snooze(minutes=number * (60 if unit.startswith("h") else 1))
    move = _MOVE.match(bare)
    if move:
        return MoveReminder(about=move.group(1), when=move.group(2))
    cancel = _CANCEL.match(bare)
    if cancel and (cancel.group(1) or cancel.group(2)):
        return CancelReminder(about=(cancel.group(2) or cancel.group(1)).strip())
    found = _SET.match(clean)
    if found is None:
        return None
    who = found.group(1).lstrip("@").lower()
    who = "us" if who == "everyone" else who
    parts = _split(found.group(2))
    if parts is None:
        rest = found.group(2)
        if not rest.lower().startswith("to ") or _WHEN_START.search(rest):
            return None
        parts = rest, ""  # "remind me to buy milk": when? (asked, not guessed)
    task, when = parts
    task = re.sub(r"^(?:to\s+)", "", task, flags=re.I).strip(" ,.")
    return SetReminder(who=who, task=task, when=when)
