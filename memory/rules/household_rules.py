"""Household basics worth remembering (issue: "offline extraction learns household
basics"): the people a household relies on and their roles, pets, recurring dates,
appointments and budgets.

These extend :data:`memory.rules.statement_rules.RULES` and are read the same way, one
clause at a time, by :func:`memory.rules.statements.match_statement`. Household things
said with "the" ("the rent is due on the 1st", "bin day is Thursday") are the speaker's
household's: :func:`claim` turns them into "our …" first, which reads as the circle's in
a group and as the speaker's own in a DM.

=============================  =============  ==========
family                         category       importance
=============================  =============  ==========
people by role ("our landlord  relationship   7
is Mr Patel", "Ruth is my
neighbour"), pets by name
recurring dates (rent, bills,  fact           7
bin day, payday)
budgets and regular spending   fact           6
appointments with a time       context        6
events with a time ("the       context        6
client review is on Thursday
at 3pm", "our flight is on
Saturday at 7am")
visits with a time ("the       context        6
plumber is coming Thursday
at 10", "Grandpa is coming
for dinner on Sunday")
=============================  =============  ==========

Secrets (passwords, door codes) are deliberately not here: the background never files
them; a person who wants one kept says "remember that …" and decides where it is said.
"""

from __future__ import annotations

import re
from typing import Final

from memory.models import Category
from memory.rules.dates import CALLED_OFF, MOVED_TO, NOT_COMING, WEEKDAY, WHEN_TAIL
from memory.rules.statement_rules import PERSON, PET, Rule, make_rule

#: People a household deals with by their role, beyond family (statement_rules' PERSON).
ROLE: Final = (
    r"landlord|landlady|letting\s+agent|plumber|electrician|babysitter|baby-sitter|nanny"
    r"|au\s+pair|childminder|cleaner|housekeeper|gardener|vet|mechanic|accountant|lawyer"
    r"|solicitor|gp|family\s+doctor|doctor|dentist|therapist|pediatrician|paediatrician"
    r"|midwife|dog[\s-]walker|tutor|coach|piano\s+teacher|teacher|hairdresser|barber|physio"
    r"|physiotherapist|pharmacist|handyman|builder|nurse|carer|caregiver|neighbou?rs?"
    r"|godmother|godfather|godparent|priest|pastor|rabbi|imam|optician|chiropractor"
)
_TITLE = r"(?:(?-i:Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s+)"
#: A name: capitalised words, never a pronoun or a demonstrative opening the sentence.
_NAME = (
    r"(?!(?:this|that|these|those|he|she|it|they|there|here|who|what|which|mine|ours|today"
    r"|tomorrow|tonight|everyone|someone|nobody)\b)"
    rf"{_TITLE}?(?-i:[A-Z])[\w'-]*(?:\s+(?-i:[A-Z])[\w'-]*)?"
)
#: Household things that recur, said with "the", with "our/my", or bare ("rent is …").
_THING: Final = (
    r"rent|mortgage(?:\s+payment)?|council\s+tax|property\s+tax|(?:water|electricity|gas"
    r"|phone|internet|energy|credit\s+card)\s+bill|bills|insurance|car\s+insurance"
    r"|home\s+insurance|car\s+(?:tax|service|mot)|mot|tv\s+licen[cs]e|subscription|payday"
    r"|pay\s*day|bin\s+day|recycling(?:\s+day)?|bins|rubbish|trash|garbage|school\s+fees"
    r"|allowance|pocket\s+money"
)
#: When something recurs: a weekday, a day of the month, a date or a period.
_WHEN: Final = re.compile(
    r"\b(?:on\s+(?:the\s+)?(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)\b|(?:on|every)\s+"
    rf"{WEEKDAY}s?|{WEEKDAY}s?$|every\s+(?:week|month"
    r"|year|other\s+\w+|\d+\s+\w+)|(?:weekly|monthly|yearly|annually|quarterly)\b"
    r"|(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b|end\s+of\s+(?:the\s+)?month)",
    re.IGNORECASE,
)
_AMOUNT: Final = (
    r"(?:[$€£¥]\s?\d[\d,.]*|\d[\d,.]*\s?(?:[$€£¥]|k\b|euros?|dollars?|pounds?|bucks|usd|eur"
    r"|gbp|chf)?)"
)
_CLAIMABLE = re.compile(rf"^(?:the\s+)?(?P<thing>(?:{_THING})\b)", re.IGNORECASE)
_APPOINTMENT = (
    r"appointment|check-?up|visit|consultation|surgery|operation|scan|x-ray|vaccination|jab"
    r"|parent-teacher\s+(?:meeting|evening|conference)|parents'?\s+evening|interview|exam"
)
#: Things a family or a team puts in its calendar, which people ask "when is …?" about.
_EVENT = (
    r"meeting|review|call|demo|presentation|pitch|workshop|deadline|launch|kick-?off|offsite"
    r"|party|dinner|lunch|brunch|barbecue|bbq|picnic|wedding|funeral|christening|ceremony"
    r"|graduation|recital|concert|show|play|performance|rehearsal|practice|training|match"
    r"|game|tournament|race|class|lesson|flight|train|trip|ferry|move|viewing|inspection"
    r"|delivery|pickup|pick-?up|drop-?off|open\s+day|sports\s+day|school\s+trip"
    rf"|{_APPOINTMENT}"
)
#: An event by its owner and its kind: "the client review with Northwind", "Mia's recital",
#: or by its kind alone ("Dentist appointment is on Monday").
_AN_EVENT = (
    rf"(?:(?:the|(?:my|our)|{_NAME}'s)\s+)?(?!(?:every|each|any|no|all|some)\b)"
    rf"(?:[\w'-]+\s+){{0,2}}?(?:{_EVENT})"
    r"(?:\s+(?:with|for|at|in|to)\s+[\w\s.'-]{1,40}?)?"
)
_ROLE, _CTX_, _FACT_ = Category.RELATIONSHIP, Category.CONTEXT, Category.FACT
#: Coming to the household: "is coming (over)", "is stopping by", "arrives".
_COMES = (
    r"(?:is|are)\s+(?:coming(?:\s+(?:over|round|around|by|back))?|visiting|arriving"
    r"|stopping\s+by|dropping\s+by|popping\s+(?:in|round|over|by))|comes|arrives|visits"
)
#: Someone expected: "the plumber", "Grandpa", "my sister".
_VISITOR = rf"(?:(?:the|our|my)\s+(?:new\s+)?(?:{ROLE})|{_NAME}|(?:my|our)\s+(?:{PERSON}))"
#: When, first thing after it: a day ("Thursday", "on Friday", "tomorrow", "next week")
#: or an hour ("at 10", "4pm").
_WHEN_FIRST = (
    rf"(?:(?:on|this|next)\s+)?(?:{WEEKDAY}|tomorrow|today|tonight|next\s+week|this\s+week"
    r"(?:end)?|next\s+month|at\s+\d|\d{1,2}(?::\d\d)?\s*[ap]\.?m\b)"
)

HOUSEHOLD_RULES: Final = (
    make_rule(
        "role",
        rf"^(?:my|our)\s+(?:new\s+|old\s+|current\s+)?(?:{ROLE})(?:'s\s+name)?\s+is\s+"
        rf"(?:called\s+|named\s+)?(?P<obj>{_NAME})(?:\s+(?:at|from|in|on|of)\s+.{{1,60}})?$",
        _ROLE,
        7,
    ),
    make_rule(
        "role",
        rf"^(?P<obj>{_NAME})\s+is\s+(?:my|our)\s+(?:new\s+)?(?:{ROLE}|{PET})\b.*$",
        _ROLE,
        7,
    ),
    make_rule(
        "role",
        rf"^(?:my|our)\s+(?:{ROLE}),?\s+(?P<obj>{_NAME}),?\s+(?:\w+s|is|has|lives|works)\b.+$",
        _ROLE,
        6,
        reject_states=True,
    ),
    make_rule(
        "recurring",
        rf"^(?:my|our)\s+(?:monthly\s+|weekly\s+|annual\s+|yearly\s+)?(?:{_THING})\s+"
        r"(?:is|are|goes|go|gets|get|comes|come)\s+(?:due|paid|collected|out|taken\s+out"
        r"|renewed|charged)?\s*(?P<obj>.+)$",
        _FACT_,
        7,
        needs_recurrence=True,
    ),
    make_rule(
        "recurring",
        rf"^(?:my|our)\s+(?:{_THING})\s+(?:renews?|resets?)\s+(?P<obj>.+)$",
        _FACT_,
        7,
        needs_recurrence=True,
    ),
    make_rule(
        "budget",
        r"^(?:my|our)\s+(?:monthly\s+|weekly\s+|annual\s+|yearly\s+|total\s+)?(?:[\w-]+\s+){0,2}?"
        rf"budget(?:\s+for\s+[\w\s'-]{{1,30}}?)?\s+is\s+(?:about\s+|around\s+|roughly\s+)?"
        rf"(?P<obj>{_AMOUNT}.*)$",
        _FACT_,
        6,
    ),
    make_rule(
        "budget",
        rf"^(?:i|we)\s+(?:usually\s+|typically\s+|normally\s+)?(?:spend|budget|pay)\s+"
        rf"(?:about\s+|around\s+|roughly\s+|up\s+to\s+)?(?P<obj>{_AMOUNT}\s+(?:a|per|each|every)"
        r"\s+(?:day|week|month|year)\b.*)$",
        _FACT_,
        6,
    ),
    make_rule(
        "budget",
        rf"^(?:my|our)\s+(?:{_THING})\s+(?:is|costs?|comes\s+to)\s+(?:about\s+|around\s+)?"
        rf"(?P<obj>{_AMOUNT}\s+(?:a|per|each|every)\s+(?:week|month|year|quarter)\b.*)$",
        _FACT_,
        6,
    ),
    make_rule(
        "appointment",
        rf"^(?:(?:my|our)|{_NAME}'s)\s+(?:[\w'-]+\s+){{0,2}}?(?:{_APPOINTMENT})"
        r"(?:\s+with\s+[\w\s.'-]{1,40}?)?\s+is\s+(?P<obj>.+)$",
        _CTX_,
        6,
        needs_time=True,
    ),
    # "the client review with Northwind is on Thursday at 3pm", "Mia's recital is Friday at
    # 6", "our flight is on Saturday at 7am": a planned event, said with when it is.
    make_rule(
        "event",
        rf"^{_AN_EVENT}\s+(?:is|starts|begins|leaves|will\s+be)"
        rf"\s+(?P<obj>(?:now\s+)?{_WHEN_FIRST}.*|on\s+.+|at\s+.+|in\s+.+)$",
        _CTX_,
        6,
        needs_time=True,
        shared=True,
    ),
    # "the review was moved to Friday", "the party got pushed back to Saturday": the day
    # it falls on now (a correction, said with "actually", replaces the old one).
    make_rule(
        "event",
        rf"^{_AN_EVENT}\s+(?:has\s+|was\s+|got\s+|is\s+|'s\s+)?(?:been\s+)?{MOVED_TO}\s+"
        rf"(?P<obj>{_WHEN_FIRST}.*)$",
        _CTX_,
        6,
        shared=True,
    ),
    # "the review is cancelled", "dinner with the Smiths is off", "the party got called
    # off": it is not happening; it replaces when it was (memory.rules.slots).
    make_rule(
        "event",
        rf"^{_AN_EVENT}\s+(?:is|has\s+been|was|got|'s)\s+(?P<obj>{CALLED_OFF}\b.*|off(?:,.+)?)$",
        _CTX_,
        6,
        shared=True,
    ),
    # "the plumber cancelled", "Grandpa can't come on Sunday after all": a visit that is
    # off. Only with nothing after it but when: "Sam cancelled the meeting" is not a visit.
    make_rule(
        "visit",
        rf"^{_VISITOR}\s+(?P<obj>(?:has\s+)?{CALLED_OFF}|{NOT_COMING}){WHEN_TAIL}?$",
        _CTX_,
        6,
        shared=True,
    ),
    # "the plumber is coming Thursday at 10", "our cleaner comes on Friday": a visit the
    # household plans for, said with when it is.
    make_rule(
        "visit",
        rf"^(?:the|our|my)\s+(?:new\s+)?(?:{ROLE})\s+(?:{_COMES})\s+(?P<obj>{_WHEN_FIRST}.*)$",
        _CTX_,
        6,
        shared=True,
    ),
    # "Grandpa is coming for dinner on Sunday", "my sister arrives on Saturday": family
    # and friends coming, by name or by kinship, with when somewhere in the clause.
    make_rule(
        "visit",
        rf"^(?:{_NAME}|(?:my|our)\s+(?:{PERSON}))\s+(?:{_COMES})\b(?P<obj>.+)$",
        _CTX_,
        6,
        needs_time=True,
        shared=True,
    ),
)


def claim(clause: str) -> str:
    """ "the rent is due on the 1st" / "rent is due …" → "our rent is due …": a household
    thing said without an owner is the speaker's household's."""
    match = _CLAIMABLE.match(clause)
    if match is None:
        return clause
    return f"our {match.group('thing').lower()}{clause[match.end('thing') :]}"


def recurs(clause: str) -> bool:
    """Whether a clause says when something recurs ("on the 1st", "every Thursday")."""
    return _WHEN.search(clause) is not None


__all__ = ["HOUSEHOLD_RULES", "ROLE", "Rule", "claim", "recurs"]
