"""Who a group message is about: the members it names, and plans made together.

Proactive partner context (seed 004 §18.2): when Alice asks the group "any ideas for
dinner with Bob tonight?", what Bob has shared in that group helps, and Alfred offers it
as Bob's. Two things decide that a message is about the partners: it names a member
other than the speaker ("Bob", "Bob's"), or it is a plan made together ("what should we
do this weekend?", "a gift for our anniversary"). Retrieval reads the named members'
memories (their name counts as a term of what they said, see
:mod:`memory.retrieval`), and the reply marks each as theirs. Which memories may be
offered is never decided here: only what the visibility function shows in the thread
ever reaches a reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from memory.prompts.common import Person
from memory.search.text import tokenize

#: Plans people make for or with each other: what a partner's preferences help with.
PLAN_WORDS: Final = (
    r"dinner|lunch|brunch|breakfast|supper|meals?|cook(?:ing)?|bake|baking|recipes?|eat"
    r"|eating|food|drinks|restaurants?|takeaway|gifts?|presents?|surprise|birthday"
    r"|anniversary|christmas|valentine'?s?|date night|trip|holiday|vacation|weekend"
    r"|tonight|tomorrow|party|visit|movie|film"
)
_PLAN: Final = re.compile(rf"\b(?:{PLAN_WORDS})\b", re.IGNORECASE)
#: What someone likes, eats or wants: the memories a plan for them is helped by.
_PREFERENCE: Final = re.compile(
    r"\b(?:lov(?:e|es|ed|ing)|likes?|liked|enjoys?|adores?|prefers?|favou?rites?|fond of"
    r"|fan of|into|hates?|dislikes?|can'?t stand|allergic|allergy|intolerant|vegetarian"
    r"|vegan|pescatarian|gluten|lactose|dairy|keto|diet|spicy|sweet tooth|halal|kosher"
    r"|sober|(?:doesn'?t|don'?t|can'?t|never) (?:eat|drink)s?|eats?|drinks?|collects?"
    r"|wants?|would love|wish(?:es)?|dreams? of|comfort food|hobby|hobbies)\b",
    re.IGNORECASE,
)
_TOGETHER: Final = re.compile(r"\b(?:we|us|our|ours|we're|we've|we'll|let's)\b", re.IGNORECASE)


def _name_pattern(name: str) -> re.Pattern[str] | None:
    """The member's full name or first name as whole words, possessive included. A name
    that is also a common word ("Will", "May") must be written with its capital."""
    words = name.split()
    if not words:
        return None
    forms = {re.escape(name.strip()), re.escape(words[0])}
    alternatives = "|".join(sorted(forms, key=len, reverse=True))
    flags = re.IGNORECASE if tokenize(words[0]) else 0
    return re.compile(rf"(?<![\w@])(?:{alternatives})(?:['’]s)?(?!\w)", flags)


def named_members(text: str, people: Sequence[Person], speaker_id: str) -> list[Person]:
    """The members other than the speaker whom ``text`` names, in the circle's order.

    A name shared by two members names neither: Alfred cannot tell whose memories
    would help, and attributing one's to the other would be wrong.
    """
    firsts: dict[str, int] = {}
    for person in people:
        words = person.name.split()
        if words:
            firsts[words[0].lower()] = firsts.get(words[0].lower(), 0) + 1
    found = []
    for person in people:
        if person.id == speaker_id:
            continue
        pattern = _name_pattern(person.name)
        if pattern is None or not pattern.search(text):
            continue
        first = person.name.split()[0].lower()
        full = re.search(rf"(?<!\w){re.escape(person.name.strip())}(?!\w)", text, re.I)
        if firsts.get(first, 0) > 1 and full is None:
            continue
        found.append(person)
    return found


def is_joint_plan(text: str) -> bool:
    """A plan made together: "we"/"us"/"our" with a plan word (dinner, gift, trip, …)."""
    return _TOGETHER.search(text) is not None and _PLAN.search(text) is not None


def mentions_plan(text: str) -> bool:
    """Whether ``text`` speaks of a plan a partner's preferences could help with."""
    return _PLAN.search(text) is not None


def states_preference(text: str) -> bool:
    """Whether a memory says what someone likes, eats, avoids or wants."""
    return _PREFERENCE.search(text) is not None
