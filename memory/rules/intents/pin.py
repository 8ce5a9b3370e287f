"""Pin and unpin: "pin that", "pin my blood type", "unpin the wifi password".

A pinned memory never fades with age (seed 001: "pinned memories do not decay"); explicit
"remember that …" memories are pinned when stored, so these requests are for memories
Alfred learned by itself, or for taking the pin off again.
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.intents.clause import clean_payload, has_letters, sentence_clauses
from memory.rules.intents.kinds import PinIntent

_PIN_LAST: Final = re.compile(
    r"^(?P<verb>pin|unpin)\s+(?:that|this|it)(?:\s+(?:one|memory|fact))?(?:\s+for\s+me)?$",
    re.IGNORECASE,
)
_PIN_TARGET: Final = re.compile(
    r"^(?P<verb>pin|unpin)\s+(?:the\s+(?:memory|fact|note)\s+(?:that|about)\s+"
    r"|what\s+i\s+(?:said|told\s+you)\s+about\s+|that\s+)?(?P<t>.+)$",
    re.IGNORECASE | re.DOTALL,
)
#: "pin" is also a noun and a verb of its own ("pin the poster up", "pin number"): a target
#: must start like a memory reference.
_TARGET_START: Final = re.compile(r"^(?:my|our|his|her|their|the|that|[a-z]+'s)\b", re.IGNORECASE)
_NOT_MEMORY: Final = re.compile(r"\b(?:up|down|on\s+the\s+(?:wall|board|map|fridge))$", re.I)


def detect_pin(text: str) -> PinIntent | None:
    """A request to pin or unpin a memory; ``target`` is None for "pin that"."""
    for clause in sentence_clauses(text):
        if clause.question and not clause.polite:
            continue
        body = clause.text
        last = _PIN_LAST.match(body)
        if last is not None:
            return PinIntent(pinned=last.group("verb").lower() == "pin", target=None)
        match = _PIN_TARGET.match(body)
        if match is None:
            continue
        target = clean_payload(match.group("t"))
        if not has_letters(target) or not _TARGET_START.match(target) or _NOT_MEMORY.search(target):
            continue
        return PinIntent(pinned=match.group("verb").lower() == "pin", target=target)
    return None
