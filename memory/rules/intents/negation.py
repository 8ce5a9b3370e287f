"""Reading back what stopped being true from a negated statement.

"I'm not vegetarian anymore" was "I'm vegetarian"; "my mom's name is Sarah, not Susan"
was "my mom's name is Susan". Corrections store the first and retire the second.
"""

from __future__ import annotations

import re

from memory.rules.text import MAX_PARSE_CHARS
from memory.rules.verbs import conjugate_first, conjugate_for

#: "not … anymore" / "no longer": the mark of a statement that stopped being true.
ANYMORE = re.compile(
    r"(?:\b(?:not|never)\b|n't\b).*\bany\s?(?:more|longer)\b|\bno\s+longer\b", re.IGNORECASE
)

_COPULA_NEG = re.compile(
    r"^(?P<a>.*?)\b(?P<cop>am|'m|is|'s|are|'re|was|were)\s+(?:not|no\s+longer)\s+(?P<b>.+?)"
    r"(?:\s+any\s?(?:more|longer))?$",
    re.I | re.S,
)
_COPULA_NT = re.compile(
    r"^(?P<a>.*?)\b(?P<cop>is|are|was|were)n'?t\s+(?P<b>.+?)(?:\s+any\s?(?:more|longer))?$",
    re.I | re.S,
)
_DO_NEG = re.compile(
    r"^(?P<a>.*?)\b(?P<aux>don'?t|do\s+not|doesn'?t|does\s+not|never)\s+(?P<b>.+?)"
    r"\s+any\s?(?:more|longer)$",
    re.I | re.S,
)
_NO_LONGER = re.compile(r"^(?P<a>.*?)\bno\s+longer\s+(?P<b>.+)$", re.I | re.S)
# "X, not Y": found with rfind rather than a nested lazy pattern, which would backtrack
# cubically on long sentences.
_NOT_Y_TAIL = re.compile(r",\s*(?:and\s+)?not\s+(?P<y>[^,]+)$", re.IGNORECASE)
_NOT_Y_VERB = re.compile(
    r"\S\s*\b(?:is|are|am|'m|'s|was|were|like|love|prefer|live|work|want)\b\s*\S", re.IGNORECASE
)
_ANCHOR_WORDS = re.compile(
    r"\b(?:is|are|am|'m|'s|was|were|to|in|at|on|for|as|with|of|by|from|called|named)\b",
    re.IGNORECASE,
)


def split_negation(text: str) -> tuple[str, str | None]:
    """(what is true now, what stopped being true) for a statement, where parseable.

    "my mom's name is Sarah, not Susan" → ("my mom's name is Sarah", "my mom's name is
    Susan"); "I'm not vegetarian anymore" → (unchanged, "I'm vegetarian"); "Bob doesn't eat
    meat anymore" → (unchanged, "Bob eats meat").
    """
    if len(text) > MAX_PARSE_CHARS:
        return text, None
    comma = text.rfind(",")
    not_y = _NOT_Y_TAIL.match(text, comma) if comma > 0 else None
    if not_y and len(not_y.group("y").split()) <= 4 and _NOT_Y_VERB.search(text[:comma]):
        statement = text[:comma].strip()
        return statement, _replace_tail(statement, not_y.group("y").strip())
    if not ANYMORE.search(text):
        return text, None
    for pattern in (_COPULA_NEG, _COPULA_NT):
        match = pattern.match(text)
        if match:
            cop = match.group("cop")
            joiner = "" if cop.startswith("'") else " "
            head = match.group("a").rstrip() if joiner == "" else match.group("a")
            return text, _tidy(f"{head}{joiner}{cop} {match.group('b')}")
    do = _DO_NEG.match(text)
    if do:
        aux = do.group("aux").lower()
        verb_phrase = do.group("b")
        if aux.startswith("does") or aux.startswith("doesn"):
            verb_phrase = conjugate_first(verb_phrase)
        elif aux == "never":
            verb_phrase = conjugate_for(do.group("a").strip(), verb_phrase)
        return text, _tidy(f"{do.group('a')}{verb_phrase}")
    longer = _NO_LONGER.match(text)
    if longer:
        tail = re.sub(r"\s+any\s?(?:more|longer)$", "", longer.group("b"), flags=re.I)
        return text, _tidy(f"{longer.group('a')}{tail}")
    return text, None


def _replace_tail(statement: str, replacement: str) -> str:
    """``statement`` with what follows its last anchor word ("is", "to", "in" …) replaced."""
    anchors = list(_ANCHOR_WORDS.finditer(statement))
    if anchors:
        cut = anchors[-1].end()
        return _tidy(f"{statement[:cut]} {replacement}")
    words = statement.split()
    keep = max(1, len(words) - len(replacement.split()))
    return _tidy(" ".join([*words[:keep], replacement]))


def _tidy(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
