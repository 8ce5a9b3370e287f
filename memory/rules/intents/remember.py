"""Remember: an explicit "remember that …" and the text it asks to keep.

"I remember that film", "remember that time we went to Rome?" (a reminiscence) and
"remember to buy milk" (a reminder) are not requests to store anything.

The cue may also come last: "the gate code is 4471, remember that", "Sam starts school
on the 9th, don't forget", or a sentence of its own after the statement ("The dentist
moved to 4pm. Keep that in mind."). Asked ("…, remember that?") it is a reminiscence.
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.intents.clause import (
    DONT,
    NOT_A_PAYLOAD,
    SELF_START,
    Clause,
    clean_payload,
    has_letters,
    sentence_clauses,
)
from memory.rules.intents.kinds import RememberIntent, RememberLastIntent

_REMEMBER_CUES: Final = (
    re.compile(r"^remember(?:\s+this)?\s*[:\-–—]\s*(?P<p>.+)$", re.I | re.S),
    re.compile(r"^remember\s*,\s*(?P<p>.+)$", re.I | re.S),
    re.compile(r"^remember\s+that\s+(?P<p>.+)$", re.I | re.S),
    re.compile(rf"^remember\s+(?P<p>{SELF_START}.+)$", re.I | re.S),
    re.compile(rf"^{DONT}\s+(?:ever\s+)?forget\s*(?:that\s+|[:,\-–—]\s*)(?P<p>.+)$", re.I | re.S),
    re.compile(rf"^{DONT}\s+(?:ever\s+)?forget\s+(?P<p>{SELF_START}.+)$", re.I | re.S),
    re.compile(r"^(?:keep|bear)\s+in\s+mind\s*(?:that\s+|[:,\-–—]\s*)?(?P<p>.+)$", re.I | re.S),
    re.compile(
        r"^(?:make|take)\s+(?:a\s+)?(?:mental\s+)?note\s*(?:that\s+|of\s+|[:,\-–—]\s*)(?P<p>.+)$",
        re.I | re.S,
    ),
    re.compile(r"^note\s*(?:that\s+|[:\-–—]\s*)(?P<p>.+)$", re.I | re.S),
    re.compile(r"^note\s+to\s+self\s*[:\-–—,]?\s*(?P<p>.+)$", re.I | re.S),
    re.compile(r"^for\s+the\s+record\s*[,:\-–—]?\s*(?P<p>.+)$", re.I | re.S),
    re.compile(
        r"^(?:memori[sz]e|store|save)\s+(?:that\s+|this\s*[:\-–—]\s*)(?P<p>.+)$", re.I | re.S
    ),
)
# A cue that only points back at what was just said: "remember that", "don't forget",
# "keep that in mind", "note that", "make a note of it".
_BACK_CUE = (
    rf"(?:remember\s+(?:that|this|it)|{DONT}\s+(?:ever\s+)?forget(?:\s+(?:that|this|it))?"
    r"|(?:keep|bear)\s+(?:that|this|it)\s+in\s+mind"
    r"|(?:make|take)\s+(?:a\s+)?(?:mental\s+)?note\s+of\s+(?:that|this|it)"
    r"|note\s+(?:that|this|it)(?:\s+down)?)"
)
# "… , remember that": the statement, a separator, then the cue closing the sentence.
_TRAILING_CUE = re.compile(
    rf"^(?P<p>.+?)\s*(?:[,;:\-–—]+|\.\.\.)\s*(?:(?:so|and|please)\s+)*{_BACK_CUE}$",
    re.I | re.S,
)
# "The dentist moved to 4pm. Remember that." — the cue as a sentence of its own.
_BARE_CUE = re.compile(rf"^{_BACK_CUE}$", re.I)
#: "I will, don't forget" is a promise, not something to store: a statement before a
#: closing cue has a few words at least.
_TRAILING_MIN_WORDS: Final = 3
# "Remember that film we saw?" — a demonstrative + noun, then a relative clause or nothing.
_REMINISCENCE = re.compile(
    r"^(?:time|day|night|week|weekend|morning|evening|film|movie|song|book|place|restaurant"
    r"|bar|cafe|hotel|trip|holiday|vacation|guy|girl|woman|man|one|show|episode|game|party"
    r"|dinner|lunch|meal|joke|story|concert|summer|winter)"
    r"(?:\s+(?:we|i|you|he|she|they|when|where|with|who|that|at|in|on|from|last|about)\b.*)?$",
    re.IGNORECASE | re.S,
)


def detect_remember(text: str) -> RememberIntent | None:
    """An explicit "remember that …" style request, with the text to store.

    Handles "remember that/: /, …", "remember my …", "don't forget (that) …", "keep/bear
    in mind (that) …", "make/take a note (that/of) …", "note that/: …", "for the record,
    …" and "memorise/store/save that …". The payload is the rest of that sentence.
    """
    clauses = sentence_clauses(text)
    for index, clause in enumerate(clauses):
        trailing = _trailing(clauses, index)
        if trailing is not None:
            return trailing
        for pattern in _REMEMBER_CUES:
            match = pattern.match(clause.text)
            if match is None:
                continue
            payload = clean_payload(match.group("p"))
            if not _valid_payload(payload, clause, reminiscence_check=pattern is _REMEMBER_CUES[2]):
                break
            return RememberIntent(payload=payload)
    return None


def detect_remember_last(text: str) -> RememberLastIntent | None:
    """A message that is nothing but a cue pointing back ("remember that", "please keep
    that in mind", "@alfred don't forget it"): what to keep is the person's message before
    it. Asked ("remember that?") it is a reminiscence."""
    clauses = sentence_clauses(text)
    if len(clauses) != 1 or clauses[0].question:
        return None
    return RememberLastIntent() if _BARE_CUE.match(clauses[0].text) else None


def _trailing(clauses: list[Clause], index: int) -> RememberIntent | None:
    """A cue at the end of the clause, or a bare cue clause after a statement."""
    clause = clauses[index]
    if clause.question:
        return None
    match = _TRAILING_CUE.match(clause.text)
    if match is not None:
        payload = clean_payload(match.group("p"))
    elif index > 0 and _BARE_CUE.match(clause.text) and not clauses[index - 1].question:
        payload = clean_payload(clauses[index - 1].text)
    else:
        return None
    if len(payload.split()) < _TRAILING_MIN_WORDS or payload.lower() in NOT_A_PAYLOAD:
        return None
    if re.match(r"^to\s", payload, re.IGNORECASE):
        return None
    return RememberIntent(payload=payload)


def _valid_payload(payload: str, clause: Clause, *, reminiscence_check: bool) -> bool:
    if not has_letters(payload) or payload.lower() in NOT_A_PAYLOAD | {"down"}:
        return False  # "note that down" points back too
    if re.match(r"^to\s", payload, re.IGNORECASE):  # a reminder, not a memory
        return False
    if clause.question and not clause.polite:
        return False
    return not (reminiscence_check and _REMINISCENCE.match(payload))
