"""Asking which memory to forget, and reading the answer ("2", "both", "none").

When two different memories match a "forget …" equally well, deleting either could lose
data, so Alfred lists them and the person's next message picks.
"""

from __future__ import annotations

import re

from memory.rules.addressing import strip_addressing

FORGET_WHICH = "I remember a few things like that — which should I forget?"
FORGET_WHICH_END = 'Reply with the number, or "all" (or "none" to keep them).'
#: What the journal keeps of a "which should I forget?" question once it is answered.
FORGET_WHICH_REDACTED = "[a question about which memory to forget]"
KEPT_ALL = "All right — I haven't forgotten anything."
#: At most this many distinct memories are offered to choose from.
FORGET_CHOICES_MAX = 9

_NONE_OF_THEM = re.compile(
    r"^(?:none|neither|nothing|cancel|no|nope|keep (?:them|both|all|everything))"
    r"(?: of (?:them|those|these))?(?:,? thanks?(?: you)?)?$",
    re.I,
)
_ALL_OF_THEM = re.compile(
    r"^(?:all|both|all of them|both of them|all of those|both of those|everything)"
    r"(?:,? please)?$",
    re.I,
)
_NUMBERS = re.compile(
    r"^(?:(?:number|no\.?|#)\s*)?\d{1,2}(?:\s*(?:,|and|&|\+|\s)\s*#?\d{1,2})*$", re.I
)


def choice_answer(text: str, count: int) -> list[int] | None:
    """The (0-based) items an answer to a numbered question picks: ``[]`` for "none",
    every item for "all"/"both", the numbers given; ``None`` if it is not an answer
    (or names a number that was not offered)."""
    body = re.sub(r"[\s.!]+$", "", strip_addressing(text).strip()).strip()
    if _NONE_OF_THEM.match(body):
        return []
    if _ALL_OF_THEM.match(body):
        return list(range(count))
    if not _NUMBERS.match(body):
        return None
    numbers = [int(n) for n in re.findall(r"\d+", body)]
    if not numbers or any(not 1 <= n <= count for n in numbers):
        return None
    return sorted({n - 1 for n in numbers})
