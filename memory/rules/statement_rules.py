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
from typing import Final

from memory.models import Category
from memory.rules.dates import WEEKDAY

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
#: Someone named, as a sentence's subject: a capitalised word that is not a pronoun or a
#: word that opens sentences.
_NAMED = (
    r"(?!(?:this|that|these|those|he|she|it|they|there|here|who|what|which|everyone"
    r"|someone|somebody|nobody|everybody|alfred)\b)(?-i:[A-Z])[\w'-]*"
)
#: Where a thing is ("on level 3", "under the mat", "next to the bins").
_PLACE = r"(?:on|in|at|under|behind|inside|beside|next\s+to|in\s+front\s+of|by)"
_PET = r"dog|cat|puppy|kitten|pet|horse|parrot|rabbit|bunny|hamster|fish|turtle|tortoise"
PET = _PET
PERSON = _PERSON
HEDGE = re.compile(
    r"\b(?:if|maybe|might|perhaps|wish|would|could|should|hope|hopefully|pretend|imagine"
    r"|suppose|supposedly|kidding|joking|jk|think|guess|wonder|not\s+sure|probably)\b|\?",
    re.IGNORECASE,
)
EMPTY_OBJECT = re.compile(
    r"^(?:it|that|this|these|those|you|your|yours|them|him|her|so|too|much|everything"
    r"|anything|nothing|lots|a\s+lot|when|how|what|where|why|who|the\s+way|\d"
    r"|a\s+(?:bit|minute|moment|second|sec|while|few\s+minutes)|an\s+hour|the\s+(?:morning"
    r"|afternoon|evening)|tomorrow|today|tonight|later|soon)\b",
    re.IGNORECASE,
)
# "my job is killing me", "my kids are driving me crazy": moods, not facts (unless dated:
# "my mom is visiting next week").
STATE_OBJECT = re.compile(
    r"^(?:so|too|very|really|quite|pretty|not|such|\w+ing\b|a\s+(?:mess|nightmare|pain"
    r"|disaster|joke))",
    re.IGNORECASE,
)
#: When something happens: "next week", "on Monday", "on Tuesdays", "at 5", "at 5pm". A
#: clause with one is a situation or a schedule, not a mood.
TIME_MARKER = re.compile(
    r"\b(?:next|tomorrow|tonight|soon|this\s+(?:week|weekend|month|year|summer|winter|spring"
    rf"|autumn|fall|{WEEKDAY})|(?:on|from|until|till)\s+{WEEKDAY}s?|on\s+the\s+\d{{1,2}}"
    r"(?:st|nd|rd|th)|(?:coming|arriving|arrives|comes|visiting"
    rf"|visits)\s+{WEEKDAY}|in\s+(?:january|february|march"
    r"|april|may|june|july|august|september|october|november|december|\d+\s+(?:days|weeks"
    r"|months|years))|at\s+\d{1,2}(?::\d{2})?\s*(?:[ap]\.?m\b\.?)?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Rule:
    """One statement family: its pattern, category, importance and extra conditions."""

    name: str
    pattern: re.Pattern[str]
    category: Category
    importance: int
    check_object: bool = False
    needs_date: bool = False
    needs_time: bool = False
    reject_states: bool = False
    #: The clause must say when the thing recurs ("on the 1st", "every Thursday").
    needs_recurrence: bool = False
    #: Said in a group about someone named or something of everyone's ("Sam is allergic
    #: to …", "the review is on …", "Mia's recital …"), not "my …": the circle's, as
    #: "our …" is, so any member (Sam too) may correct or forget it.
    shared: bool = False


def make_rule(
    name: str,
    pattern: str,
    category: Category,
    importance: int,
    *,
    check_object: bool = False,
    needs_date: bool = False,
    needs_time: bool = False,
    reject_states: bool = False,
    needs_recurrence: bool = False,
    shared: bool = False,
) -> Rule:
    """A :class:`Rule` with its pattern compiled case-insensitively."""
    return Rule(
        name,
        re.compile(pattern, re.IGNORECASE),
        category,
        importance,
        check_object=check_object,
        needs_date=needs_date,
        needs_time=needs_time,
        reject_states=reject_states,
        needs_recurrence=needs_recurrence,
        shared=shared,
    )


_rule = make_rule


_FACT, _REL, _CTX = Category.FACT, Category.RELATIONSHIP, Category.CONTEXT
_OWNER = rf"(?:{_IAM}|(?:my|our)\s+[\w'-]+(?:\s+[\w'-]+)?\s+(?:is|are|'s))"
# The health rules read the speaker, their people, and someone named ("Sam is allergic to
# shellfish", said by Leo): what a family or a team must not get wrong when it cooks or
# orders for everyone. Shared: someone named is the circle's ("I …", "my …" are not).
_WHOSE_IS = rf"(?:{_OWNER}|{_NAMED}\s+is)"
RULES: Final = (
    _rule("allergy", rf"^{_WHOSE_IS}\s+{_ADV}allergic\s+to\s+(?P<obj>.+)$", _FACT, 9, shared=True),
    _rule(
        "allergy",
        rf"^(?:{_HAVE}|{_NAMED}\s+has)\s+(?:an?\s+)?(?:severe\s+|mild\s+|serious\s+)?"
        r"(?P<obj>[\w\s-]{1,40}?)\s+allerg(?:y|ies)$",
        _FACT,
        9,
        shared=True,
    ),
    _rule(
        "intolerance",
        rf"^{_WHOSE_IS}\s+{_ADV}(?:lactose[\s-]+|gluten[\s-]+)?(?:intolerant|coeliac|celiac"
        r"|diabetic|epileptic|asthmatic)\b(?P<obj>.*)$",
        _FACT,
        8,
        shared=True,
    ),
    _rule(
        "diet",
        rf"^{_NAMED}\s+is\s+{_ADV}(?:an?\s+)?(?:strict\s+)?(?P<obj>vegetarian|vegan"
        r"|pesc[ae]tarian|gluten[\s-]free|kosher|halal|teetotal|dairy[\s-]free)\b.*$",
        _FACT,
        8,
        shared=True,
    ),
    _rule(
        "diet",
        rf"^{_NAMED}\s+{_ADV}(?:doesn'?t|does\s+not|never|can'?t|cannot|can\s+not)\s+"
        r"(?:eat|drink)\s+(?P<obj>.+)$",
        _FACT,
        7,
        check_object=True,
        shared=True,
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
        rf"^(?:my|our|{_NAMED}'s)\s+(?:[\w'-]+\s+){{0,3}}?(?:birthday|b-?day|anniversary"
        r"|wedding|due\s+date|name\s*day|graduation)\s+(?:is|falls|was|will\s+be)\s+(?P<obj>.+)$",
        _FACT,
        8,
        needs_date=True,
        shared=True,
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
    # A named child's or partner's week ("Mia has ballet on Wednesdays at 5"), and a day
    # of theirs ("Bob has a meeting on Monday at 10").
    _rule(
        "schedule",
        rf"^{_NAMED}\s+has\s+(?P<obj>(?:[\w'-]+\s+){{1,4}}?(?:on\s+{WEEKDAY}s|every\s+{WEEKDAY})\b.*)$",
        _FACT,
        6,
        check_object=True,
        shared=True,
    ),
    _rule(
        "schedule",
        rf"^{_NAMED}\s+has\s+(?P<obj>(?:[\w'-]+\s+){{1,4}}?(?:on\s+{WEEKDAY}|tomorrow|today|tonight)\b.*)$",
        _CTX,
        6,
        check_object=True,
        shared=True,
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
    # A change of work, which lasts after the week it was told in ("I started a new job
    # last week", "I got promoted", "I'm starting at the hospital in May").
    _rule(
        "work",
        rf"^{_I}\s+{_ADV}(?P<obj>(?:started|began|got|found|landed|accepted|took)\s+"
        r"(?:a\s+|my\s+|the\s+)?(?:new\s+)?(?:job|position|role)\b.*"
        r"|(?:started|began)\s+(?:working\s+)?(?:at|for|as)\s+(?!\d).+"
        r"|got\s+(?:promoted|a\s+promotion|hired|laid\s+off|fired|made\s+redundant)\b.*"
        r"|(?:quit|left|lost|changed)\s+(?:my\s+|our\s+)?jobs?\b.*"
        r"|retired\b.*)$",
        _FACT,
        6,
    ),
    _rule(
        "work",
        rf"^{_IAM}\s+{_ADV}(?P<obj>starting\s+(?:(?:a\s+)?new\s+(?:job|position|role)\b.*"
        r"|(?:work(?:ing)?\s+)?(?:at|as)\s+(?!\d).+)|retiring\b.*)$",
        _FACT,
        6,
        needs_time=True,
    ),
    # Something taken up ("I joined a choir", "I started learning Spanish").
    _rule(
        "activity",
        rf"^{_I}\s+{_ADV}(?P<obj>(?:joined|signed\s+up\s+for|enrolled\s+in)\s+(?:a|an)"
        r"\s+.+|(?:started|began|took\s+up)\s+(?:learning|taking|studying|playing|training"
        r"|running|swimming|climbing|yoga|piano|guitar|pottery|boxing)\b.*)$",
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
    # Where a thing was put ("I parked on level 3", "I keep my passport in the desk"): the
    # question a family asks a day later, once formation has read the line.
    _rule(
        "placed",
        rf"^{_I}\s+{_ADV}parked\s+(?P<obj>(?:(?:the|my|our)\s+[\w'-]+(?:\s+[\w'-]+)?\s+)?"
        rf"{_PLACE}\s+.+)$",
        _CTX,
        5,
        check_object=True,
    ),
    _rule(
        "placed",
        rf"^{_I}\s+{_ADV}(?:(?:put|hid|stashed|stored|keep)\s+(?:the|my|our)|left\s+(?:my|our))"
        rf"\s+(?P<obj>[\w'-]+(?:\s+[\w'-]+){{0,2}}?\s+{_PLACE}\s+.+)$",
        _CTX,
        5,
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
        rf"^(?:i'?m|i\s+am|we're|we\s+are)\s+{_ADV}(?P<obj>(?:going|heading|off\s+to|away|travel+ing|flying"
        r"|driving|visiting|interviewing|meeting|seeing|starting|moving|leaving|coming|staying)\b(?!\s+to\s+(?:bed|sleep|be|do|try|say|need|have|make|get|eat"
        r"|cook|shower|the\s+bathroom)\b).+)$",
        _CTX,
        5,
        needs_time=True,
    ),
    _rule("plan", rf"^{_I}\s+(?:plan|intend)\s+to\s+(?P<obj>.+)$", _CTX, 5),
    # "I'll be in Berlin from Tuesday to Thursday", "we'll be away next week": where
    # someone will be, said with when.
    _rule(
        "plan",
        r"^(?:i'll|i\s+will|we'll|we\s+will)\s+be\s+(?P<obj>(?:in|at|away|abroad|off)\b.+)$",
        _CTX,
        5,
        needs_time=True,
    ),
    _rule(
        "plan",
        rf"^(?:{_HAVE}|{_IAM}\s+{_ADV}having)\s+(?:a|an|our|my)\s+(?P<obj>(?:[\w-]+\s+)?"
        r"(?:party|dinner|trip|wedding|vacation|holiday|appointment|meeting|interview|flight"
        r"|exam|surgery|operation|concert|barbecue|bbq|picnic|lunch|brunch|get-together"
        r"|sleepover|playdate|celebration)\b.+)$",
        _CTX,
        5,
        needs_time=True,
    ),
)
GROUP_PLAN = re.compile(
    r"^(?:we're|we\s+are)\s+(?:(?:currently|now|still|also|busy)\s+)*(?:planning|organi[sz]ing"
    r"|preparing|arranging|renovating|saving|getting|having|hosting|throwing|moving|going"
    r"|looking\s+for|trying\s+to|thinking\s+(?:of|about)|working\s+on|booking)\b",
    re.IGNORECASE,
)

PERSON_REFERENCE = re.compile(rf"\b(?:my|our)\s+{_MOD}(?:{_PERSON}|{_PET})\b", re.IGNORECASE)
