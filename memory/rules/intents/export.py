"""Export: "export my memories", "give me a copy of my data", "/export".

A request for a file of what Alfred keeps about the speaker, as opposed to a recall ("what
do you remember about me?"), which answers in the chat. The request is always about the
speaker: an export of someone else or of "us" is not a thing Alfred does (the circle's
memories the speaker may see are in their own export already).
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.intents.clause import sentence_clauses
from memory.rules.intents.kinds import ExportIntent

#: What the speaker's data is called in such a request.
_MINE = (
    r"(?:all\s+(?:of\s+)?)?my\s+(?:memories|data|memory|information|info|facts|notes)"
    r"(?:\s+(?:you\s+(?:have|keep|hold|store|stored)|about\s+me))?"
    r"|everything\s+(?:that\s+)?(?:you\s+(?:know|remember|have|keep|store|stored)\s+)?about\s+me"
    r"|(?:all\s+)?(?:everything\s+|what\s+)(?:that\s+)?you\s+(?:know|remember|have|keep|store)"
    r"(?:\s+(?:about|on)\s+me)?"
)
_EXPORT: Final = (
    # "/export", "/export@alfred"
    re.compile(r"^/export(?:@\w+)?(?:\s.*)?$", re.IGNORECASE | re.DOTALL),
    # "export my memories", "export everything you know about me", "download my data"
    re.compile(rf"^(?:export|download)\s+(?:{_MINE})(?:\s+(?:as|to)\s+a\s+file)?$", re.I),
    # "give me a copy of my data", "send me an export of my memories"
    re.compile(
        r"^(?:give|send|get)\s+me\s+(?:a\s+copy|an\s+export|a\s+file|a\s+download|a\s+dump)"
        rf"\s+(?:of|with)\s+(?:{_MINE})$",
        re.I,
    ),
    # "I want a copy of my data", "I'd like an export of my memories"
    re.compile(
        r"^i(?:\s+(?:want|need|would\s+like)|'d\s+like)\s+(?:a\s+copy|an\s+export)\s+of\s+"
        rf"(?:{_MINE})$",
        re.I,
    ),
    # "can I export my memories?", "how do I download my data?"
    re.compile(
        rf"^(?:can|could|may)\s+i\s+(?:export|download|get\s+a\s+copy\s+of)\s+(?:{_MINE})$",
        re.I,
    ),
)


def detect_export(text: str) -> ExportIntent | None:
    """A request for a file of the speaker's memories, or None."""
    stripped = text.strip()
    if _EXPORT[0].match(stripped):
        return ExportIntent()
    for clause in sentence_clauses(text):
        for pattern in _EXPORT[1:]:
            if pattern.match(clause.text):
                return ExportIntent()
    return None
