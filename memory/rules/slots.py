"""Read a third-person fact back into (subject, predicate, object, polarity).

Deterministic update decisions need to know when two facts talk about the same thing:
"Alice likes coffee" and "Alice dislikes coffee" share a subject and a topic but disagree;
"Alice's sister's name is Jane" and "… is Anna" share a single-valued slot with two
values. The parser understands the wordings the offline rules produce (and the ones a
model typically writes); anything else gives ``None`` and falls back to text similarity.

Two kinds of slot:

* **single-valued** — at most one value is true at a time: "S's X is Y", "S works at Y",
  "S lives in Y", "S is married to Y", "S wants replies in Y", "S wants to be called Y",
  and when an event happens ("the review is on Thursday", "… was moved to Friday", "the
  plumber cancelled", "Bob has a meeting on Monday"). A different value is a
  contradiction, except another "has a meeting", which is another meeting.
* **multi-valued** — the object is part of the slot: "S likes Y", "S is allergic to Y",
  "S is vegetarian", "S eats Y". Only the opposite polarity contradicts ("S is not
  vegetarian anymore"); the same polarity in other words ("likes" → "loves") refines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from memory.rules.dates import (
    CALLED_OFF,
    MONTHS,
    MOVED_TO,
    NOT_COMING,
    PART_OF_DAY,
    WEEKDAY,
    WHEN_TAIL,
    has_date,
)
from memory.rules.language import norm_key, strip_end

Relation = Literal["same", "refines", "contradicts"]


@dataclass(frozen=True)
class Slot:
    """A fact's subject, predicate and object, and whether it is affirmed."""

    subject: str
    predicate: str
    obj: str
    positive: bool
    single: bool
    verb: str = ""


_ADV = r"(?:(?:really|absolutely|also|truly|still|now|totally|definitely|currently)\s+)*"
_NEGATIVE_SENTIMENT = re.compile(
    r"^(?:dislikes?|hates?|detests?|loathes?|despises?|can't\s+stand|cannot\s+stand"
    r"|doesn't\s+(?:like|enjoy)|does\s+not\s+(?:like|enjoy)|don't\s+(?:like|enjoy)"
    r"|no\s+longer\s+(?:likes?|loves?|enjoys?)|is\s+not\s+a\s+fan\s+of)$",
    re.IGNORECASE,
)
_SENTIMENT = re.compile(
    rf"^(?P<s>.+?)\s+{_ADV}(?P<v>likes?|loves?|enjoys?|adores?|prefers?|is\s+a\s+(?:big\s+"
    r"|huge\s+)?fan\s+of|is\s+not\s+a\s+fan\s+of|dislikes?|hates?|detests?|loathes?|despises?"
    r"|can't\s+stand|cannot\s+stand|doesn't\s+(?:like|enjoy)|does\s+not\s+(?:like|enjoy)"
    r"|don't\s+(?:like|enjoy)|no\s+longer\s+(?:likes?|loves?|enjoys?))\s+(?P<o>.+)$",
    re.IGNORECASE,
)
_HABIT = re.compile(
    r"^(?P<s>.+?)\s+(?P<neg>doesn't\s+|does\s+not\s+|don't\s+|no\s+longer\s+|never\s+)?"
    r"(?P<v>eats?|drinks?|smokes?)\b\s*(?P<o>.*?)(?:\s+any\s?(?:more|longer))?$",
    re.IGNORECASE,
)
_SINGLE = re.compile(
    r"^(?P<s>.+?)\s+(?P<neg>no\s+longer\s+|doesn't\s+|does\s+not\s+)?(?P<p>works?\s+(?:at|for"
    r"|as)|(?:started|began)\s+working\s+(?:at|for|as)|(?:started|got)\s+a\s+new\s+job\s+(?:at|with)"
    r"|lives?\s+(?:in|at)|moved\s+to|is\s+from|is\s+married\s+to|is\s+engaged\s+to"
    r"|is\s+dating|wants\s+(?:alfred\s+to\s+)?(?:reply|replies|answers)\s+in"
    r"|wants\s+to\s+be\s+called)\s+(?P<o>.+?)(?:\s+any\s?(?:more|longer))?$",
    re.IGNORECASE,
)
_COPULA = re.compile(
    r"^(?P<s>[^:]+?)\s+(?:is|are)\s+(?P<neg>not\s+|no\s+longer\s+)?(?P<o>.+?)"
    r"(?:\s+any\s?(?:more|longer))?$",
    re.IGNORECASE,
)
#: When something happens, as the rules write it once dated: a day, a month, a part of a
#: day or an hour first ("on Friday, January 9 at 10", "at 3pm", "the week of January
#: 12"), so "Leo is on holiday", "the meeting is at the office" and "Sam is 30" are not
#: times.
_WHEN_VALUE = (
    rf"(?:(?:on\s+)?(?:the\s+(?:{PART_OF_DAY}|week|weekend)\s+of\s+"
    rf"|{WEEKDAY}s?\b|(?:{'|'.join(MONTHS)})\b)"
    r"|(?:at\s+)?\d{1,2}(?::\d\d)?\s*(?:[ap]\.?m\b|o'clock\b)|at\s+\d{1,2}(?::\d\d)?$)"
)
#: An event and when it is: "the review is on Thursday, January 8 at 3pm", "the Northwind
#: review was moved to Friday, January 9". One time at once: a later one replaces it.
_WHEN = re.compile(
    rf"^(?P<s>.+?)\s+(?:is\s+(?:now\s+)?|(?:(?:has|have)\s+been\s+|was\s+|were\s+|got\s+"
    rf"|is\s+|are\s+)?{MOVED_TO}\s+|(?:(?:is|are)\s+(?:coming|visiting|arriving)|comes|arrives"
    rf"|visits)(?:\s+(?:over|round|around|by|back))?(?:\s+for\s+\w+)?\s+)(?P<o>{_WHEN_VALUE}.*)$",
    re.IGNORECASE,
)
#: An event or a visit that is off: "the review is cancelled", "dinner with the Smiths is
#: off", "the plumber cancelled", "Grandpa can't come on Sunday after all". Nothing else
#: may follow but when, so "Sam cancelled the meeting" is not Sam's visit called off.
_CALLED_OFF = re.compile(
    rf"^(?P<s>.+?)\s+(?:(?:is|has\s+been|was|got|'s)\s+(?:{CALLED_OFF}|off\b)"
    rf"|(?:has\s+)?{CALLED_OFF}|{NOT_COMING})(?:{WHEN_TAIL}|,.+)?$",
    re.IGNORECASE,
)
_MOVED = re.compile(rf"\b{MOVED_TO}\b", re.IGNORECASE)
#: When an event that is off happens: never.
_OFF: Final = "called off"
#: Someone's event and when: "Bob has a meeting on Monday at 10", "Mia has ballet on
#: Wednesdays at 5" (the event is "Bob's meeting", "Mia's ballet").
_HAS_EVENT = re.compile(
    rf"^(?P<who>[^\s']+(?:'s\s+\w+)?)\s+has\s+(?P<a>(?:a|an)\s+)?(?P<event>.+?)\s+"
    rf"(?P<o>{_WHEN_VALUE}.*)$",
    re.IGNORECASE,
)
#: A day a fact names: "Thursday, January 8", "January 8", "Tuesdays".
_A_DAY = re.compile(
    rf"\b(?:{WEEKDAY},?\s+)?(?:{'|'.join(MONTHS)})\s+\d{{1,2}}\b|\b{WEEKDAY}s?\b",
    re.IGNORECASE,
)
#: An addition, not a change: "the practice is on Thursdays too".
_ALSO = re.compile(r"\b(?:too|also|as\s+well)$", re.IGNORECASE)
#: Words that do not tell one event from another: "the review with Northwind" is "the
#: Northwind review".
_EVENT_FILLER: Final = frozenset({"a", "an", "the", "with", "for", "at", "in", "to", "of", "our"})
_SAME_PREDICATE: Final = {"moved to": "lives in", "live in": "lives in", "work at": "works at"}
#: A new job is where the person works now: "started working for" is "works for",
#: "got a new job with" is "works at".
_NEW_JOB = re.compile(r"^(?:(?:started|began)\s+working|(?:started|got)\s+a\s+new\s+job)\b")
_MAX_SUBJECT_WORDS: Final = 6


def parse_slot(fact: str) -> Slot | None:
    """The slot a fact fills, or None when its wording is not understood."""
    text = strip_end(" ".join(fact.split()))
    if not text or len(text) > 300:
        return None
    for parse in (_sentiment, _habit, _when, _single, _copula):
        slot = parse(text)
        if slot is not None and len(slot.subject.split()) <= _MAX_SUBJECT_WORDS:
            return slot
    return None


def _key(text: str) -> str:
    return re.sub(r"^(?:a|an|the)\s+", "", norm_key(text))


def _sentiment(text: str) -> Slot | None:
    match = _SENTIMENT.match(text)
    if match is None:
        return None
    verb = " ".join(match.group("v").lower().split())
    positive = _NEGATIVE_SENTIMENT.match(verb) is None
    return Slot(_key(match.group("s")), "sentiment", _key(match.group("o")), positive, False, verb)


def _habit(text: str) -> Slot | None:
    match = _HABIT.match(text)
    if match is None:
        return None
    verb = match.group("v").lower().rstrip("s")
    return Slot(
        _key(match.group("s")), verb, _key(match.group("o")), match.group("neg") is None, False
    )


def _when(text: str) -> Slot | None:
    if _ALSO.search(text):
        return None
    if (off := _CALLED_OFF.match(text)) is not None:
        return Slot(_key(off.group("s")), "happens", _OFF, True, True)
    if (has := _HAS_EVENT.match(text)) is not None:
        # "has a meeting" is one of maybe several: another one adds, a move of it replaces.
        subject = _key(f"{has.group('who')}'s {has.group('event')}")
        verb = "has a" if has.group("a") else ""
        return Slot(subject, "happens", _when_key(has.group("o")), True, True, verb)
    match = _WHEN.match(text)
    if match is None:
        return None
    return Slot(_key(match.group("s")), "happens", _when_key(match.group("o")), True, True)


def _when_key(when: str) -> str:
    return re.sub(r"^on\s+", "", _key(when))  # "is on Friday" is "moved to Friday"


def says_it_changed(fact: str) -> bool:
    """Whether a fact itself says that an event moved or is off ("the review was moved to
    Friday", "the plumber cancelled"): then the time it replaces was not contradicted but
    changed, and there is nothing to ask the person who said so."""
    text = strip_end(" ".join(fact.split()))
    slot = _when(text)
    return slot is not None and (slot.obj == _OFF or _MOVED.search(text) is not None)


def with_its_day(new: str, old: str) -> str:
    """``new`` with the day ``old`` named, when ``new`` moves an event to another hour
    only ("the review was moved to 4pm" after "… is on Thursday, January 8 at 3pm" is
    "… moved to 4pm on Thursday, January 8"): the day is still true."""
    slot = parse_slot(new)
    if slot is None or slot.predicate != "happens" or slot.obj == _OFF:
        return new
    day = _A_DAY.search(old)
    if day is None or _A_DAY.search(slot.obj) or has_date(slot.obj):
        return new
    return f"{strip_end(new)} on {day.group(0)}"


def _single(text: str) -> Slot | None:
    match = _SINGLE.match(text)
    if match is None:
        return None
    predicate = " ".join(match.group("p").lower().split())
    predicate = _NEW_JOB.sub("works", predicate).replace("works with", "works at")
    predicate = re.sub(r"^(work|live)s?\b", r"\1s", predicate)
    predicate = _SAME_PREDICATE.get(predicate, predicate)
    if predicate.startswith("wants"):
        predicate = "wants replies in" if "called" not in predicate else predicate
    return Slot(
        _key(match.group("s")), predicate, _key(match.group("o")), match.group("neg") is None, True
    )


def _copula(text: str) -> Slot | None:
    match = _COPULA.match(text)
    if match is None:
        return None
    subject = match.group("s")
    positive = match.group("neg") is None
    if "'s " in subject or subject.endswith("'s"):
        # "Alice's sister's name is Jane": one value at a time.
        return Slot(_key(subject), "is", _key(match.group("o")), positive, True)
    return Slot(_key(subject), "is " + _key(match.group("o")), "", positive, False)


def shares_slot(a: str, b: str) -> bool:
    """Whether two facts talk about the same single-valued thing ("Ann lives in Oslo",
    "Ann lives in Tromso"): then one may replace the other however far apart their
    embeddings are (two city names can sit below the candidate similarity)."""
    first, second = parse_slot(a), parse_slot(b)
    return (
        first is not None
        and second is not None
        and first.single
        and first.predicate == second.predicate
        and _same_subject(first, second)
    )


def _same_subject(first: Slot, second: Slot) -> bool:
    """Whether two slots are about the same subject. An event may be named with fewer
    words the second time ("the review with Northwind", then "the Northwind review"), so
    for when it happens one name's words within the other's is enough."""
    if first.subject == second.subject:
        return True
    if first.predicate != "happens":
        return False
    one, other = (set(s.subject.split()) - _EVENT_FILLER for s in (first, second))
    return bool(one and other) and (one <= other or other <= one)


def other_value(new: Slot, old: Slot) -> bool:
    """Whether two slots are one single-valued thing with different values ("Maya has a
    meeting on Wednesday at 2pm", "… on Thursday at 11am"): however alike their wording,
    two facts. (Two likes may differ by a word and be one: "hiking in the Alps".)"""
    return (
        new.single
        and new.predicate == old.predicate
        and _same_subject(new, old)
        and new.obj != old.obj
    )


def relate(new: Slot, old: Slot) -> Relation | None:
    """How a newer fact's slot relates to an older one's, or None if unrelated."""
    if new.predicate != old.predicate or not _same_subject(new, old):
        return None
    if new.single:
        if new.obj == old.obj:
            return "same" if new.positive == old.positive else "contradicts"
        if new.verb == "has a":  # "Bob has a meeting on Wednesday": another meeting
            return None
        return "contradicts" if new.positive and old.positive else None
    if new.obj != old.obj:
        return None
    if new.positive != old.positive:
        return "contradicts"
    return "same" if new.verb == old.verb else "refines"
