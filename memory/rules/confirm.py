"""Whether a short answer confirms what Alfred just asked ("yes", "do it", "sure, go ahead").

Used for the erase prompt: erasing everything is irreversible, so only a message that is
*nothing but* a confirmation counts. "yes but keep my calendar", "yes?" or "do it later"
are not confirmations, and neither is anything that contains a no ("no", "yes… no, wait").
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.addressing import strip_addressing
from memory.rules.text import clean_text

_YES: Final = (
    r"(?:yes|yeah|yep|yup|yes+|ya|aye|ok|okay|sure|certainly|absolutely|definitely|of\s+course"
    r"|confirm(?:ed)?|i\s+confirm|correct|affirmative|i'?m\s+sure|i\s+am\s+sure)"
)
_DO: Final = (
    r"(?:(?:please\s+)?(?:do\s+it|go\s+ahead|go\s+for\s+it|proceed|please\s+do|do\s+so"
    r"|erase\s+(?:it|everything|it\s+all|all)|delete\s+(?:it|everything|it\s+all|all)"
    r"|forget\s+(?:it\s+all|everything)|wipe\s+(?:it|everything))(?:\s+please)?)"
)
_TAIL: Final = r"(?:\s+(?:please|thanks|thank\s+you|alfred|i'?m\s+sure))*"
_CONFIRMATION: Final = re.compile(
    rf"^(?:{_YES}(?:\s*[,.!-]?\s*(?:{_YES}|{_DO}))*|{_DO}){_TAIL}$",
    re.IGNORECASE,
)
_NEGATIVE: Final = re.compile(
    r"\b(?:no|not|nope|nah|don'?t|do\s+not|wait|stop|cancel|never|later|keep|but|except)\b",
    re.IGNORECASE,
)


def is_confirmation(text: str) -> bool:
    """True when ``text`` (addressing removed) is only a confirmation: "yes", "yes please",
    "do it", "sure, go ahead", "yes, erase everything". A question ("yes?") is not one."""
    cleaned = clean_text(strip_addressing(text)).strip()
    if not cleaned or cleaned.endswith("?") or len(cleaned) > 80:
        return False
    body = re.sub(r"[\s!.,]+$", "", cleaned)
    body = re.sub(r"\s+", " ", body)
    if _NEGATIVE.search(body):
        return False
    return _CONFIRMATION.match(body) is not None
