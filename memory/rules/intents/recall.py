"""Recall: "what do you remember about me/us?", a listing rather than a retrieval question."""

from __future__ import annotations

import re
from typing import Final

from memory.rules.intents.clause import WHO_ME, WHO_US, sentence_clauses, who_of
from memory.rules.intents.kinds import RecallIntent

_RECALL_VERB = (
    r"(?:remember|recall|know|learn(?:ed|t)?|store(?:d)?|save(?:d)?|keep|"
    r"have(?:\s+(?:stored|saved|learned|learnt|noted|on\s+file|in\s+memory|got))?|got)"
)
_RECALL_WHO = rf"(?P<who>{WHO_ME}|{WHO_US})"
_RECALL: Final = (
    re.compile(
        rf"^(?:so\s+)?what(?:\s+else)?\s+(?:do|did|can|have|would)\s+you\s+(?:already\s+|actually\s+)?"
        rf"{_RECALL_VERB}(?:\s+so\s+far)?\s+(?:about|on|of|regarding)\s+{_RECALL_WHO}"
        r"(?:\s+so\s+far)?$",
        re.IGNORECASE,
    ),
    re.compile(
        rf"^what(?:'s|\s+is|\s+have\s+you\s+got)\s+(?:in\s+your\s+memory\s+|stored\s+|saved\s+)?"
        rf"(?:about|on)\s+{_RECALL_WHO}$",
        re.IGNORECASE,
    ),
    re.compile(
        rf"^(?:tell|show)\s+me\s+(?:what|everything|all)\s+(?:that\s+)?you\s+{_RECALL_VERB}"
        rf"\s+(?:about|on)\s+{_RECALL_WHO}$",
        re.IGNORECASE,
    ),
    re.compile(
        rf"^do\s+you\s+(?:remember|know)\s+anything\s+(?:about|on)\s+{_RECALL_WHO}$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:show|list|give|tell)\s+(?:me\s+)?(?:all\s+)?(?P<who>my|our)\s+memories$",
        re.IGNORECASE,
    ),
    re.compile(r"^what\s+(?:are|is)\s+(?P<who>my|our)\s+memor(?:y|ies)$", re.IGNORECASE),
    re.compile(r"^what\s+do\s+you\s+(?:remember|know)$", re.IGNORECASE),
)


def detect_recall(text: str) -> RecallIntent | None:
    """A request to list memories: "what do you remember/know about me/us?".

    Questions about someone else ("what do you know about my mom?") are ordinary
    retrieval questions, answered by the normal reply path, not a listing.
    """
    for clause in sentence_clauses(text):
        for pattern in _RECALL:
            match = pattern.match(clause.text)
            if match:
                who = match.groupdict().get("who")
                return RecallIntent(target=who_of(who))
    return None
