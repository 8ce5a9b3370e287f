"""Whether a message needs fact retrieval, and how many facts to fetch (seed 004 §15.1).

Retrieval costs latency and prompt space; a greeting or an "ok" gains nothing from it.
Messages about people, preferences, dates, plans or memory itself trigger it; anything
else longer than 50 characters does too, since longer messages are more likely to need
context, and so does a question that names something ("gate code?", not "really?").
The limit grows with the message: longer, multi-topic questions get more facts.
"""

from __future__ import annotations

import re

from memory.constants import RETRIEVAL_MAX_LIMIT, RETRIEVAL_MIN_LIMIT
from memory.search.text import tokenize

_SKIP = [
    re.compile(
        r"^(hi|hey|hello|good (morning|afternoon|evening|night)|yo|sup|hiya)[\s!.?]*$", re.I
    ),
    re.compile(
        r"^(ok|okay|k|sure|thanks|thank you|thx|ty|got it|cool|nice|great|perfect|"
        r"yes|no|yep|nope|yeah|lol|haha)[\s!.?]*$",
        re.I,
    ),
    re.compile(r"^/\w+"),
]
#: Topics worth a search even in a message of a few words ("birthday?", "remember?").
_SHORT_TRIGGERS = [
    re.compile(r"\b(remember|forgot|forget|told you|mentioned|said)\b", re.I),
    re.compile(
        r"\b(plan\w*|schedul\w*|book(ed|ing)?|reserv\w*|arrang\w*|trip|holiday|vacation"
        # plans a partner's preferences help with (seed 004 §18.2: "dinner with Bob")
        r"|dinner|lunch|brunch|gifts?|weekend)\b",
        re.I,
    ),
    re.compile(r"\b(birthday|anniversary|appointment|meeting|party|wedding)\b", re.I),
]
_TRIGGERS = [
    re.compile(
        r"\b(who|what|when|where|how|which)\b.*\b(is|are|am|was|were|does|do|did|has|have)\b",
        re.I,
    ),
    # "where's …", "what's …": the contraction the pattern above cannot see
    re.compile(r"\b(who|what|when|where|how)['’]s\b", re.I),
    # a direct question, however short ("wifi password?"), is asking for something
    re.compile(r"\?\s*$"),
    re.compile(
        r"\b(my|our|your|partner'?s?|his|her|their)\s+(mom|mum|dad|mother|father|brother|"
        r"sister|son|daughter|kids?|boss|friend|doctor|dentist|wife|husband|partner)",
        re.I,
    ),
    re.compile(r"\b(like|love|hate|prefer|favou?rite|allergic|can'?t eat|don'?t eat)", re.I),
    *_SHORT_TRIGGERS,
]
_MULTI_TOPIC = re.compile(r"\b(and|also|plus|as well)\b", re.I)


def _stripped(message: str) -> str:
    # Addressing the bot ("@alfred", "Alfred,") is not content.
    text = re.sub(r"^\s*(@\w+|alfred\b)[\s,:!-]*", "", message.strip(), flags=re.I)
    return text.strip()


def _short_question(text: str) -> bool:
    """A question of a few words that names something ("gate code?"), unlike "really?"
    or "who is it?" (one word, or nothing but function words)."""
    return text.endswith("?") and len(text.split()) >= 2 and bool(tokenize(text))


def should_retrieve(message: str) -> bool:
    """True when fact retrieval is likely to help answer ``message``."""
    text = _stripped(message)
    if (
        len(text) <= 10
        and not any(p.search(text) for p in _SHORT_TRIGGERS)
        and not _short_question(text)
    ):
        return False
    if any(p.search(text) for p in _SKIP):
        return False
    if any(p.search(text) for p in _TRIGGERS):
        return True
    return len(text) > 50


def dynamic_limit(message: str) -> int:
    """How many facts to retrieve: 5, more for long, multi-topic questions, at most 15."""
    text = _stripped(message)
    limit = RETRIEVAL_MIN_LIMIT
    if len(text.split()) > 20:
        limit += 3
    if _MULTI_TOPIC.search(text):
        limit += 3
    if "?" in text:
        limit += 2
    return min(limit, RETRIEVAL_MAX_LIMIT)
