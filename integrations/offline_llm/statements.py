"""Rules for simple first-person statements worth remembering, and how much they matter.

Each rule is an anchored pattern over one clause in the speaker's words ("I'm allergic to
peanuts"), with the category and importance its facts get (DESIGN.md §2, seed 004's
categories, the extraction prompt's importance scale):

=============================  =============  ==========
family                         category       importance
=============================  =============  ==========
allergies                      fact           9
intolerances, diets, dates     fact           8
"don't eat/drink …"            fact           7
names of people and pets       relationship   7
partner ("married to …")       relationship   7
family, pets, "my boss is …"   relationship   6
likes / dislikes / favourites  fact           6
work, home, personal details   fact           6
origin, studies                fact           5
plans ("we're planning …")     context        5
=============================  =============  ==========

Clauses that hedge ("if", "maybe", "I think", "would") are skipped: the seeds say not to
remember hypotheticals. Objects that are only pronouns ("I love it", "I hate that") are
skipped: they mean nothing out of context. A fact over 30 words is not atomic and is
skipped rather than cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from integrations.offline_llm.dates import has_date, resolve_relative_dates
from integrations.offline_llm.language import capitalise, content_terms, strip_end, word_count
from integrations.offline_llm.person import Voice, to_third_person, uses_group
from memory.constants import FACT_MAX_WORDS
from memory.models import Category

# "I", "we", or a coordinated subject with the speaker: "Bob and I", "my sister and I".
_I = r"(?:i|we|(?:my\s+)?[\w'-]+\s+and\s+i)"
_IAM = r"(?:i'?m|i\s+am|we're|we\s+are)"
_HAVE = r"(?:i|we)(?:\s+have(?:\s+got)?|'ve(?:\s+got)?)"
_ADV = (
    r"(?:(?:really|absolutely|totally|also|truly|so|very|still|actually|just|seriously"
    r"|severely|deathly|highly|extremely|mildly|quite|kind\s+of|pretty|now|currently"
    r"|definitely|especially)\s+)*"
)
_MOD = r"(?:(?:older|younger|little|big|best|eldest|oldest|youngest|new|ex|step|twin)[\s-]+)?"
_PERSON = (
    r"mom|mum|mother|dad|father|parents|sister|brother|sibling|grandma|grandmother|grandpa"
    r"|grandfather|grandparents|aunt|uncle|cousin|niece|nephew|son|daughter|kids?|children"
    r"|child|baby|wife|husband|partner|spouse|boyfriend|girlfriend|fianc[eé]e?|friend"
    r"|boss|manager|colleague|coworker|co-worker|doctor|dentist|therapist|neighbou?r"
    r"|in-laws|mother-in-law|father-in-law|roommate|flatmate|teacher"
)
_PET = r"dog|cat|puppy|kitten|pet|horse|parrot|rabbit|bunny|hamster|fish|turtle|tortoise"
_HEDGE = re.compile(
    r"\b(?:if|maybe|might|perhaps|wish|would|could|should|hope|hopefully|pretend|imagine"
    r"|suppose|supposedly|kidding|joking|jk|think|guess|wonder|not\s+sure|probably)\b|\?",
    re.IGNORECASE,
)
_EMPTY_OBJECT = re.compile(
    r"^(?:it|that|this|these|those|you|your|yours|them|him|her|so|too|much|everything"
    r"|anything|nothing|lots|a\s+lot|when|how|what|where|why|who|the\s+way|\d"
    r"|a\s+(?:bit|minute|moment|second|sec|while|few\s+minutes)|an\s+hour|the\s+(?:morning"
    r"|afternoon|evening)|tomorrow|today|tonight|later|soon)\b",
    re.IGNORECASE,
)
# "my job is killing me", "my kids are driving me crazy": moods, not facts (unless dated:
# "my mom is visiting next week").
_STATE_OBJECT = re.compile(
    r"^(?:so|too|very|really|quite|pretty|not|such|\w+ing\b|a\s+(?:mess|nightmare|pain"
    r"|disaster|joke))",
    re.IGNORECASE,
)
_TIME_MARKER = re.compile(
    r"\b(?:next|tomorrow|tonight|soon|this\s+(?:week|weekend|month|year|summer|winter|spring"
    r"|autumn|fall|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|on\s+(?:monday"
    r"|tuesday|wednesday|thursday|friday|saturday|sunday)|in\s+(?:january|february|march"
    r"|april|may|june|july|august|september|october|november|december|\d+\s+(?:days|weeks"
    r"|months|years))|at\s+\d)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Rule:
    """One statement family: its pattern, category, importance and extra conditions."""

    name: str
    pattern: re.Pattern[str]
    category: Category
    importance: int
    check_object: bool = False
    needs_date: bool = False
    needs_time: bool = False
    reject_states: bool = False


def _rule(
    name: str,
    pattern: str,
    category: Category,
    importance: int,
    *,
    check_object: bool = False,
    needs_date: bool = False,
    needs_time: bool = False,
    reject_states: bool = False,
) -> _Rule:
    return _Rule(
        name,
        re.compile(pattern, re.IGNORECASE),
        category,
        importance,
        check_object,
        needs_date,
        needs_time,
        reject_states,
    )


_FACT, _REL, _CTX = Category.FACT, Category.RELATIONSHIP, Category.CONTEXT
_OWNER = rf"(?:{_IAM}|(?:my|our)\s+[\w'-]+(?:\s+[\w'-]+)?\s+(?:is|are|'s))"
RULES: Final = (
    _rule("allergy", rf"^{_OWNER}\s+{_ADV}allergic\s+to\s+(?P<obj>.+)$", _FACT, 9),
    _rule(
        "allergy",
        rf"^{_HAVE}\s+(?:an?\s+)?(?:severe\s+|mild\s+|serious\s+)?"
        r"(?P<obj>[\w\s-]{1,40}?)\s+allerg(?:y|ies)$",
        _FACT,
        9,
    ),
    _rule(
        "intolerance",
        rf"^{_OWNER}\s+{_ADV}(?:lactose[\s-]+|gluten[\s-]+)?(?:intolerant|coeliac|celiac"
        r"|diabetic|epileptic|asthmatic)\b(?P<obj>.*)$",
        _FACT,
        8,
    ),
    _rule(
        "diet",
        rf"^{_IAM}\s+{_ADV}(?:an?\s+)?(?:strict\s+)?(?P<obj>vegetarians?|vegans?"
        r"|pesc[ae]tarians?|gluten[\s-]free|kosher|halal|teetotal(?:ers?)?|sober|dairy[\s-]free"
        r"|keto)\b.*$",
        _FACT,
        8,
    ),
    _rule(
        "diet",
        rf"^{_I}\s+{_ADV}(?:don'?t|do\s+not|never|can'?t|cannot|can\s+not)\s+(?:eat|drink)"
        r"\s+(?P<obj>.+)$",
        _FACT,
        7,
        check_object=True,
    ),
    _rule(
        "date",
        r"^(?:my|our)\s+(?:[\w'-]+\s+){0,3}?(?:birthday|b-?day|anniversary|wedding|due\s+date"
        r"|name\s*day|graduation)\s+(?:is|falls|was|will\s+be)\s+(?P<obj>.+)$",
        _FACT,
        8,
        needs_date=True,
    ),
    _rule(
        "date",
        rf"^{_I}\s+(?:was|were)\s+born\s+(?P<obj>.+)$",
        _FACT,
        8,
        needs_date=True,
    ),
    _rule(
        "date",
        rf"^{_I}\s+got\s+(?:married|engaged)\s+(?P<obj>.+)$",
        _FACT,
        8,
        needs_date=True,
    ),
    _rule(
        "name",
        r"^(?:my|our)\s+[\w'-]+(?:\s+[\w'-]+){0,2}?'s\s+name\s+is\s+(?P<obj>.+)$",
        _REL,
        7,
    ),
    _rule(
        "name",
        r"^(?:my|our)\s+[\w'-]+(?:\s+[\w'-]+){0,2}?\s+is\s+(?:called|named)\s+(?P<obj>.+)$",
        _REL,
        7,
    ),
    _rule(
        "name",
        rf"^(?:my|our)\s+{_MOD}(?:{_PERSON}|{_PET})\s+is\s+"
        r"(?P<obj>(?-i:[A-Z])[\w'-]*(?:\s+(?-i:[A-Z])[\w'-]*)?)$",
        _REL,
        7,
    ),
    _rule(
        "partner",
        rf"^{_IAM}\s+(?:happily\s+)?(?:married|engaged)\s+to\s+(?P<obj>.+)$",
        _REL,
        7,
    ),
    _rule("partner", rf"^{_IAM}\s+dating\s+(?P<obj>.+)$", _REL, 6),
    _rule(
        "family",
        rf"^{_HAVE}\s+(?:a|an|one|two|three|four|five|six|\d+)\s+"
        rf"(?:[\w-]+\s+)?(?P<obj>(?:{_PERSON}|{_PET})s?)\b.*$",
        _REL,
        6,
    ),
    _rule(
        "details",
        r"^(?:my|our)\s+(?:favou?rite\s+[\w\s-]{1,25}?|e-?mail(?:\s+address)?|phone\s+number"
        r"|(?:mobile|cell)\s+number|(?:home\s+)?address|job|profession|occupation|nickname"
        r"|middle\s+name|surname|last\s+name|maiden\s+name|blood\s+type|shoe\s+size|dress\s+size"
        r"|home\s*town|zodiac\s+sign|star\s+sign|pronouns|religion)\s+(?:is|are)\s+(?P<obj>.+)$",
        _FACT,
        6,
        reject_states=True,
    ),
    _rule(
        "family",
        rf"^(?:my|our)\s+{_MOD}(?:{_PERSON}|(?:{_PET})s?)(?:,?\s+(?-i:[A-Z])[\w'-]*,?)?\s+"
        r"(?:is|are|was|'s|works|lives|loves|likes|hates|has|have|studies|goes|plays|just"
        r"|recently|got|moved|turned|turns|starts|started)\b"
        r"(?P<obj>.*)$",
        _REL,
        6,
        reject_states=True,
    ),
    _rule(
        "favourite",
        r"^(?P<obj>[\w\s'-]{1,40}?)\s+(?:is|are)\s+my\s+(?:absolute\s+)?favou?rite\b.*$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "likes",
        rf"^{_I}\s+{_ADV}(?:like|love|enjoy|adore|prefer)\s+(?P<obj>.+)$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "likes",
        rf"^{_IAM}\s+{_ADV}(?:a\s+(?:big|huge|great)\s+)?(?:fan\s+of|into|passionate\s+about"
        r"|obsessed\s+with|crazy\s+about)\s+(?P<obj>.+)$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "dislikes",
        rf"^{_I}\s+{_ADV}(?:dislike|hate|detest|loathe|despise|can'?t\s+stand|cannot\s+stand"
        rf"|(?:don'?t|do\s+not)\s+{_ADV}(?:like|enjoy))\s+(?P<obj>.+)$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "dislikes",
        rf"^{_IAM}\s+(?:not\s+a\s+(?:big\s+)?fan\s+of|not\s+into)\s+(?P<obj>.+)$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "work",
        rf"^{_I}\s+{_ADV}work\s+(?:at|for|as|in)\s+(?P<obj>.+)$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "work",
        rf"^{_IAM}\s+{_ADV}(?:employed|working)\s+(?:at|for|as)\s+(?P<obj>.+)$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "work",
        rf"^{_IAM}\s+an?\s+(?P<obj>[\w\s-]{{1,30}}?)\s+(?:at|for)\s+(?-i:[A-Z]).*$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule(
        "work",
        rf"^{_IAM}\s+(?:a\s+)?(?:retired|unemployed|self-employed|freelancer|student"
        r"|studying\s+\w+)\b(?P<obj>.*)$",
        _FACT,
        5,
    ),
    _rule(
        "home",
        rf"^{_I}\s+{_ADV}(?:live\s+(?:in|at|on|near)|moved\s+to)\s+(?P<obj>.+)$",
        _FACT,
        6,
        check_object=True,
    ),
    _rule("age", rf"^{_IAM}\s+(?P<obj>\d{{1,3}})(?:\s+years?\s+old)?$", _FACT, 5),
    _rule(
        "languages",
        rf"^{_I}\s+{_ADV}speak\s+(?P<obj>(?-i:[A-Z])\w+(?:(?:,|\s+and)\s+(?-i:[A-Z])\w+)*)$",
        _FACT,
        5,
    ),
    _rule(
        "origin",
        rf"^(?:{_IAM}\s+(?:originally\s+)?from|{_I}\s+grew\s+up\s+in)\s+"
        r"(?!(?:work|home|school|the\s+office|the\s+shop)\b)(?P<obj>.+)$",
        _FACT,
        5,
        check_object=True,
    ),
    _rule(
        "plan",
        rf"^(?:i'?m|i\s+am|we're|we\s+are)\s+{_ADV}(?P<obj>(?:planning|organi[sz]ing|preparing"
        r"|arranging|renovating|saving\s+(?:up\s+)?for|getting\s+married|having\s+a\s+baby"
        r"|expecting\s+a|hosting|throwing|moving)\b.+)$",
        _CTX,
        5,
    ),
    _rule(
        "plan",
        rf"^(?:i'?m|i\s+am|we're|we\s+are)\s+{_ADV}(?P<obj>(?:going|heading|travel+ing|flying"
        r"|driving|visiting)\b(?!\s+to\s+(?:bed|sleep|be|do|try|say|need|have|make|get|eat"
        r"|cook|shower|the\s+bathroom)\b).+)$",
        _CTX,
        5,
        needs_time=True,
    ),
    _rule("plan", rf"^{_I}\s+(?:plan|intend)\s+to\s+(?P<obj>.+)$", _CTX, 5),
    _rule(
        "plan",
        rf"^{_HAVE}\s+(?:a|an|our|my)\s+(?P<obj>(?:[\w-]+\s+)?(?:party|dinner"
        r"|trip|wedding|vacation|holiday|appointment|meeting|interview|flight|exam|surgery"
        r"|operation|concert)\b.+)$",
        _CTX,
        5,
        needs_time=True,
    ),
)
_GROUP_PLAN = re.compile(
    r"^(?:we're|we\s+are)\s+(?:(?:currently|now|still|also|busy)\s+)*(?:planning|organi[sz]ing"
    r"|preparing|arranging|renovating|saving|getting|having|hosting|throwing|moving|going"
    r"|looking\s+for|trying\s+to|thinking\s+(?:of|about)|working\s+on|booking)\b",
    re.IGNORECASE,
)

_LEAD = re.compile(
    r"^(?:(?:oh|ok|okay|so|and|also|btw|by\s+the\s+way|well|fyi|actually|anyway|um+|uh+|hey"
    r"|hi|hello|just\s+so\s+you\s+know|for\s+the\s+record|yeah|yes|no|nope|haha|lol"
    r"|alfred)\b[\s,:;.!\-–—]*)+",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*|,?\s+(?:and|but)\s+(?=(?:i|i'm|im|i've|we|we're|my|our)\b)", re.IGNORECASE
)
_SUBJECT_PRONOUN = re.compile(r"^(?:i|i'm|im|i've|we|we're|we've)\b", re.IGNORECASE)
_TAIL = re.compile(
    r"(?:\s+(?:because|since|cause|cuz|'cause|although|though|which|lol|haha\w*|hehe\w*)\b"
    r"|,\s*(?:so|but|which|because|and\s+(?:it|that|they|he|she)|(?:and\s+)?not)\b"
    r"|\s+[-–—]\s).*$",
    re.IGNORECASE | re.S,
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
        part = _TAIL.sub("", part)
        part = strip_end(_strip_symbols(part))
        if part and len(part) <= _MAX_CLAUSE_CHARS:
            out.append(part)
    return out


def _split_clauses(sentence: str) -> list[str]:
    """Split at ";" and at "and/but" + a new first-person subject, unless what precedes is
    only a coordinated subject ("Bob and I love sushi", "my sister and I …")."""
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
    if _HEDGE.search(clause):
        return None
    for rule in RULES:
        match = rule.pattern.match(clause)
        if match is None or not _conditions_hold(rule, match, clause):
            continue
        content = render(clause, voice, now)
        if word_count(content) > FACT_MAX_WORDS:
            return None
        category, importance = rule.category, rule.importance
        if rule.name == "family" and _TIME_MARKER.search(clause):
            # "my mom is visiting next week" is a situation, not a relationship.
            category, importance = Category.CONTEXT, 5
        return Statement(content, category, importance, uses_group(clause), rule.name)
    return None


def _conditions_hold(rule: _Rule, match: re.Match[str], clause: str) -> bool:
    obj = match.groupdict().get("obj") or ""
    if rule.check_object:
        obj = obj.strip()
        if (
            not obj
            or _EMPTY_OBJECT.match(obj)
            or not content_terms(obj)
            or len(obj.split()) > _MAX_OBJECT_WORDS
        ):
            return False
    if rule.reject_states and _STATE_OBJECT.match(obj.strip()) and not _TIME_MARKER.search(clause):
        return False
    if rule.needs_date and not (
        has_date(clause) or re.search(r"\b(?:today|tomorrow)\b", clause, re.I)
    ):
        return False
    return not (rule.needs_time and not (_TIME_MARKER.search(clause) or has_date(clause)))


def render(text: str, voice: Voice, now: datetime) -> str:
    """``text`` as a stand-alone third-person sentence without final punctuation."""
    text = resolve_relative_dates(text, now)
    return capitalise(strip_end(to_third_person(text, voice)))


def is_group_plan(clause: str) -> bool:
    """Whether a clause is the group's ongoing plan ("we're organising a dinner …")."""
    return _GROUP_PLAN.match(clause) is not None and not _HEDGE.search(clause)


_PERSON_REFERENCE = re.compile(rf"\b(?:my|our)\s+{_MOD}(?:{_PERSON}|{_PET})\b", re.IGNORECASE)


def classify(text: str) -> tuple[Category, int]:
    """Category and importance for a statement no rule matched (explicit or corrected)."""
    if re.search(r"\ballerg", text, re.IGNORECASE):
        return Category.FACT, 9
    if has_date(text):
        return Category.FACT, 8
    if _PERSON_REFERENCE.search(text):
        return Category.RELATIONSHIP, 6
    if _TIME_MARKER.search(text):
        return Category.CONTEXT, 5
    return Category.FACT, 5
