"""First-person statements worth remembering, read one clause at a time.

A sentence is cut into clauses (fillers, tails and final marks removed), each clause is
matched against the table of :mod:`memory.rules.statement_rules`, and a match becomes a
stand-alone third-person fact with the rule's category and importance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from memory.constants import FACT_MAX_WORDS
from memory.models import Category
from memory.rules.dates import has_date, resolve_relative_dates, without_said_on
from memory.rules.household_rules import HOUSEHOLD_RULES, claim, recurs
from memory.rules.language import capitalise, content_terms, looks_english, strip_end, word_count
from memory.rules.person import Voice, to_third_person, uses_group
from memory.rules.statement_rules import (
    EMPTY_OBJECT,
    GROUP_PLAN,
    HEDGE,
    PERSON_REFERENCE,
    RULES,
    STATE_OBJECT,
    TIME_MARKER,
    Rule,
)

_LEAD = re.compile(
    r"^(?:(?:oh|ok|okay|so|and|also|btw|by\s+the\s+way|well|fyi|actually|anyway|um+|uh+|hey"
    r"|hi|hello|just\s+so\s+you\s+know|for\s+the\s+record|yeah|yes|no|nope|haha|lol"
    r"|alfred)\b[\s,:;.!\-–—]*)+",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*|,?\s+(?:and|but)\s+(?=(?:i|i'm|im|i've|we|we're|my|our)\b"
    r"|(?-i:[A-Z])[\w'-]*\s+(?:is|has|doesn'?t|can'?t|never)\b)",
    re.IGNORECASE,
)
#: The words a question opens with ("what …", "do you …", "anyone …"), shared with the
#: offline reply's reading of a question.
QUESTION_WORDS: Final = (
    r"what|when|where|who|how|which|why|can|could|should|shall|would|will|do|does|did|is|are"
    r"|am|was|were|have|has|any|anyone|anybody"
)
#: A clause that opens as a question.
_ASKED = re.compile(rf"^(?:{QUESTION_WORDS})\b", re.IGNORECASE)
#: A question after a statement, to the end: "…at 10, what should we prepare?".
_ASKED_AFTER = re.compile(rf",\s*(?:{QUESTION_WORDS})\b[^?]*\?[\s?!]*$", re.IGNORECASE)
_SUBJECT_PRONOUN = re.compile(r"^(?:i|i'm|im|i've|we|we're|we've)\b", re.IGNORECASE)
_TAIL = re.compile(
    r"(?:\s+(?:because|since|cause|cuz|'cause|although|though|which|lol|haha\w*|hehe\w*)\b"
    r"|,\s*(?:so|but|which|because|and\s+(?:it|that|they|he|she)|(?:and\s+)?not"
    r"|don'?t\s+forget|remember|ok(?:ay)?|right|yeah|fyi|btw|by\s+the\s+way|for\s+the\s+record"
    r"|keep\s+(?:it|this|that)\s+(?:quiet|secret|to\s+yourself|between\s+us)"
    r"|don'?t\s+tell\s+(?:anyone|anybody|\w+)|between\s+(?:you\s+and\s+me|us)"
    r"|just\s+so\s+(?:you(?:\s+all)?|everyone|everybody|y'?all|u)\s+knows?|in\s+case\s+(?:you|anyone))\b"
    r"|\s+[-–—]\s).*$",
    re.IGNORECASE | re.S,
)
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|we'll|we'd|us|our|ours"
    r"|ourselves)\b",
    re.IGNORECASE,
)
_MAX_CLAUSE_CHARS: Final = 400
_MAX_OBJECT_WORDS: Final = 12


@dataclass(frozen=True)
class Statement:
    """A fact found in one clause, already in third person."""

    content: str
    category: Category
    importance: int
    about_group: bool
    rule: str


def clauses(sentence: str) -> list[str]:
    """The clauses of a sentence that rules can read: no fillers, tails or final marks.

    "Oh and I love hiking because it's calm, but I hate running" → ["I love hiking",
    "I hate running"].
    """
    out: list[str] = []
    for part in _split_clauses(sentence):
        part = _LEAD.sub("", part.strip())
        if _ASKED.match(part) and part.rstrip(" !").endswith("?"):
            continue  # a question, whatever follows its comma ("is he coming, do you know?")
        part = _TAIL.sub("", _ASKED_AFTER.sub("", part))
        part = strip_end(_strip_symbols(part))
        if part and len(part) <= _MAX_CLAUSE_CHARS:
            out.append(part)
    return out


def only_asks(sentence: str) -> bool:
    """Whether a sentence asks and states nothing: it ends with "?" and either opens as a
    question or has no question after a statement of its own ("the plumber is coming at
    10, what should we prepare?" states the visit; "Bob loves sushi?" asks)."""
    text = sentence.strip()
    if not text.rstrip(" !").endswith("?"):
        return False
    return _ASKED.match(_LEAD.sub("", text)) is not None or _ASKED_AFTER.search(text) is None


def _split_clauses(sentence: str) -> list[str]:
    """Split at ";" and at "and/but" + a new subject (first person, or someone named: "I'm
    vegetarian, and Sam is allergic to shellfish"), unless what precedes is only a
    coordinated subject ("Bob and I love sushi", "my sister and I …")."""
    parts: list[str] = []
    start = 0
    for match in _CLAUSE_BREAK.finditer(sentence):
        left = _LEAD.sub("", sentence[start : match.start()].strip())
        if match.group().strip() == ";" or _SUBJECT_PRONOUN.match(left) or len(left.split()) >= 3:
            parts.append(sentence[start : match.start()])
            start = match.end()
    parts.append(sentence[start:])
    return parts


def _strip_symbols(text: str) -> str:
    """Drop emoji and other symbols, which patterns and facts do without."""
    return "".join(c for c in text if not (ord(c) > 0x2000 and not c.isalnum() and c != "'"))


def match_statement(clause: str, voice: Voice, now: datetime) -> Statement | None:
    """The fact a clause states, by the first rule that matches, or None."""
    if HEDGE.search(clause):
        return None
    claimed = claim(clause)
    for rule, text in (*((r, clause) for r in RULES), *((r, claimed) for r in HOUSEHOLD_RULES)):
        match = rule.pattern.match(text)
        if match is None or not _conditions_hold(rule, match, text):
            continue
        clause = text
        content = render(clause, voice, now)
        if word_count(content) > FACT_MAX_WORDS:  # long: the day it was said goes first
            content = without_said_on(content)
        if word_count(content) > FACT_MAX_WORDS:
            return None
        category, importance = rule.category, rule.importance
        if rule.name == "family" and TIME_MARKER.search(clause):
            # "my mom is visiting next week" is a situation, not a relationship.
            category, importance = Category.CONTEXT, 5
        return Statement(content, category, importance, _about_group(rule, clause), rule.name)
    return None


def _about_group(rule: Rule, clause: str) -> bool:
    """Whether a clause said in a group is the circle's: "we/our …", or a shared rule's
    (someone named, "the review …") unless it is the speaker's own ("my …")."""
    if uses_group(clause):
        return True
    return rule.shared and re.match(r"^(?:my|i)\b", clause, re.IGNORECASE) is None


def _conditions_hold(rule: Rule, match: re.Match[str], clause: str) -> bool:
    obj = match.groupdict().get("obj") or ""
    if rule.check_object:
        obj = obj.strip()
        if (
            not obj
            or EMPTY_OBJECT.match(obj)
            or not content_terms(obj)
            or len(obj.split()) > _MAX_OBJECT_WORDS
        ):
            return False
    if rule.reject_states and STATE_OBJECT.match(obj.strip()) and not TIME_MARKER.search(clause):
        return False
    if rule.needs_date and not (
        has_date(clause) or re.search(r"\b(?:today|tomorrow)\b", clause, re.I)
    ):
        return False
    if rule.needs_recurrence and not recurs(clause):
        return False
    return not (rule.needs_time and not (TIME_MARKER.search(clause) or has_date(clause)))


def render(text: str, voice: Voice, now: datetime) -> str:
    """``text`` as a stand-alone third-person sentence without final punctuation."""
    text = resolve_relative_dates(text, now)
    return capitalise(strip_end(to_third_person(text, voice)))


def as_stated(text: str, voice: Voice, now: datetime) -> str:
    """An explicit statement no rule read, kept whole as a stand-alone sentence.

    English in the first person is put in the third ("I keep my passport in the desk" →
    "Dana keeps Dana's passport in the desk": no guessed "her"); anything else stays as
    said ("The spare key is under the blue pot"). The speaker's name is never put in
    front: whose memory it is lives in its partition and provenance, and a "Dana: …"
    prefix would make every search that names Dana find it.
    """
    said = strip_end(text)
    if _FIRST_PERSON.search(said) and looks_english(said):
        return render(said, voice, now)
    return capitalise(said)


def is_group_plan(clause: str) -> bool:
    """Whether a clause is the group's ongoing plan ("we're organising a dinner …")."""
    return GROUP_PLAN.match(clause) is not None and not HEDGE.search(clause)


def classify(text: str) -> tuple[Category, int]:
    """Category and importance for a statement no rule matched (explicit or corrected)."""
    if re.search(r"\ballerg", text, re.IGNORECASE):
        return Category.FACT, 9
    if has_date(text):
        return Category.FACT, 8
    if PERSON_REFERENCE.search(text):
        return Category.RELATIONSHIP, 6
    if TIME_MARKER.search(text):
        return Category.CONTEXT, 5
    return Category.FACT, 5
