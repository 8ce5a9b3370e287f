"""Forget: one memory ("forget that …"), the last thing said, or everything ("forget me").

"forget it" is a dismissal and "don't forget …" a remember request: neither deletes.
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.intents.clause import (
    WHO_ME,
    WHO_US,
    clean_payload,
    has_letters,
    sentence_clauses,
    who_of,
)
from memory.rules.intents.kinds import ForgetAllIntent, ForgetIntent

_FORGET_ALL: Final = (
    re.compile(
        r"^(?:forget|erase|delete|wipe|remove|clear|purge)\s+(?:absolutely\s+)?"
        r"(?:everything|all(?:\s+of\s+it)?|all\s+(?:the\s+)?(?:data|memories|info|information))"
        r"(?:\s+(?:that\s+)?you\s+(?:know|remember|have(?:\s+(?:stored|saved|learned|learnt))?"
        r"|learned|learnt|stored|saved))?"
        rf"(?:\s+(?:about|on|of|regarding)\s+(?P<who>{WHO_ME}|{WHO_US}))?$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:forget|erase|delete|wipe|remove|clear|purge)\s+(?:all\s+(?:of\s+)?)?"
        r"(?P<who>my|our)\s+(?:personal\s+)?(?:data|memories|information|info|history|records?"
        r"|details|profile)$",
        re.IGNORECASE,
    ),
    re.compile(
        rf"^forget\s+(?:all\s+)?(?:about\s+)?(?P<who>{WHO_ME}|{WHO_US}|who\s+i\s+am)$",
        re.IGNORECASE,
    ),
)
#: Words whose "'s" is "is" or "us", not a possessive.
_CONTRACTED: Final = (
    r"(?:it|that|this|what|there|here|he|she|who|where|when|how|why|let|everyone|everybody"
    r"|everything|nothing|someone|somebody|something)"
)
_FORGET_TARGET: Final = (
    re.compile(
        r"^(?:forget|erase|delete|remove)\s+(?:everything|what|anything)\s+(?:you\s+(?:know|remember)|"
        r"i\s+(?:said|told\s+you))\s+(?:about|regarding)\s+(?P<t>.+)$",
        re.I | re.S,
    ),
    re.compile(r"^forget\s+everything\s+(?:about|regarding)\s+(?P<t>.+)$", re.I | re.S),
    re.compile(
        r"^forget\s+(?:that|about|the\s+fact\s+that|i\s+(?:said|told\s+you)(?:\s+that)?)\s+(?P<t>.+)$",
        re.I | re.S,
    ),
    re.compile(r"^forget\s+(?P<t>(?:my|our|the)\b.+)$", re.I | re.S),
    # "forget Eve's birthday": someone's thing, named by a possessive. A contraction
    # ("forget it's fine", "forget that's done", "forget let's …") is no possessive.
    re.compile(
        rf"^forget\s+(?!{_CONTRACTED}['’]s\b)(?P<t>[^\W\d_][\w-]*['’]s\s+\w.*)$", re.I | re.S
    ),
    re.compile(
        r"^(?:delete|erase|remove)\s+(?:the\s+)?(?:memory|fact|note)\s+(?:that|about)\s+(?P<t>.+)$",
        re.I | re.S,
    ),
)
_FORGET_LAST = re.compile(
    r"^(?:forget|delete|erase)\s+(?:that|this|what\s+i\s+(?:just\s+)?(?:said|told\s+you|wrote)"
    r"|(?:that\s+)?i\s+(?:just\s+)?said\s+(?:that|it|this)|the\s+last\s+(?:thing|message|one))$",
    re.IGNORECASE,
)
_DISMISSAL: Final = frozenset({"it", "about it", "it all", "all about it"})
# "forget the party, it's cancelled": the reason after the comma is not part of the target.
_FORGET_TAIL = re.compile(
    r"\s*[,;]\s+(?=(?:it|it's|that|that's|he|she|they|because|since|as|we|i|i'm|thanks)\b)",
    re.IGNORECASE,
)


def detect_forget(text: str) -> ForgetIntent | ForgetAllIntent | None:
    """A request to delete a memory ("forget that …") or everything ("forget me").

    "forget that" / "forget what I just said" give ``ForgetIntent(target=None)``: the
    caller resolves it against the previous message. "forget it" is a dismissal and
    "don't forget …" a remember request, so neither is a forget.
    """
    for clause in sentence_clauses(text):
        if clause.question and not clause.polite:
            continue
        body = clause.text
        for pattern in _FORGET_ALL:
            match = pattern.match(body)
            if match:
                return ForgetAllIntent(target=who_of(match.group("who")))
        if _FORGET_LAST.match(body):
            return ForgetIntent(target=None)
        for pattern in _FORGET_TARGET:
            match = pattern.match(body)
            if match is None:
                continue
            target = clean_payload(_FORGET_TAIL.split(match.group("t"), maxsplit=1)[0])
            low = target.lower()
            if low in _DISMISSAL or not has_letters(target):
                return None
            if re.fullmatch(rf"{WHO_ME}|{WHO_US}", low):
                return ForgetAllIntent(target=who_of(low))
            return ForgetIntent(target=target)
    return None
