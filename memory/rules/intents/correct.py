"""Corrections: "actually, …", "that's wrong, …", "I used to … but now …", "X, not Y".

A bare "no, …" is not a correction (it is far more often an answer to Alfred's question),
and an implicit one needs something to correct: "I'm not vegan anymore" counts because
"I'm vegan" can be read back from it; "I can't wait anymore" does not.
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.intents.clause import Clause, clean_payload, sentence_clauses
from memory.rules.intents.kinds import CorrectionIntent
from memory.rules.intents.negation import ANYMORE, split_negation
from memory.rules.text import MAX_PARSE_CHARS
from memory.rules.verbs import conjugate_for

_CUE_PATTERNS: Final = (
    (
        "correction",
        re.compile(
            r"^(?:(?:small|quick|one|a)\s+)?correction\s*[:\-–—,]\s*(?P<s>.*)$|"
            r"^(?:to\s+correct\s+(?:myself|that|you)|let\s+me\s+correct\s+(?:that|myself))\s*"
            r"[:\-–—,]?\s*(?P<s2>.*)$",
            re.I | re.S,
        ),
    ),
    (
        "that's not right",
        re.compile(
            r"^(?:no\s*[,.!]?\s*)?(?:that|this)(?:'s|\s+is|\s+was|\s+isn't|\s+wasn't)\s+"
            r"(?:not\s+(?:right|correct|true|accurate)|wrong|incorrect|inaccurate|false|untrue"
            r"|outdated|out\s+of\s+date|right|correct|true)\s*[,:;.!\-–—]*\s*(?P<s>.*)$",
            re.I | re.S,
        ),
    ),
    (
        "i meant",
        re.compile(
            r"^(?:no\s*[,.!]?\s*)?i\s+meant(?:\s+to\s+say)?\s*[:,]?\s*(?P<s>.+)$", re.I | re.S
        ),
    ),
    (
        "actually",
        re.compile(
            r"^(?:no\s*[,.!]?\s*|wait\s*[,.!]?\s*)?actually\s*[,:\-–—!]*\s*(?:no\s*[,.!]\s*)?(?P<s>.+)$",
            re.I | re.S,
        ),
    ),
    (
        "not anymore",
        re.compile(
            r"^(?:(?:not|no)\s+any\s?(?:more|longer)|no\s+longer|not\s+since\s+\w+)\s*[,:;.!\-–—]*\s*(?P<s>.*)$",
            re.I | re.S,
        ),
    ),
)
_THATS_RIGHT_WORDS = re.compile(
    r"\b(?:not|wrong|incorrect|inaccurate|false|untrue|outdated|out\s+of)\b|n't\b", re.I
)


def detect_correction(text: str) -> CorrectionIntent | None:
    """A correction of something remembered, with the corrected statement.

    Cues: "actually, …" (sentence-initial, a statement), "correction: …", "that's not
    right/wrong, …", "I meant …", "not anymore"/"no longer" (alone or with a statement),
    "I used to … but (now) …", "… anymore"/"… no longer …" in a statement, "X, not Y", and
    "my … has changed". A cue sentence with nothing after it takes the next sentence
    ("That's wrong. My mom's name is Sarah.").
    """
    clauses = sentence_clauses(text, retraction=False)
    for index, clause in enumerate(clauses):
        if clause.question:
            continue
        body = clause.text
        for cue, pattern in _CUE_PATTERNS:
            match = pattern.match(body)
            if match is None:
                continue
            if cue == "that's not right" and not _THATS_RIGHT_WORDS.search(
                body[: match.start("s")]
            ):
                continue
            rest = clean_payload(next((g for g in match.groups() if g), ""))
            if not rest and cue != "actually":
                rest = _next_statement(clauses, index)
            if cue == "actually" and len(rest.split()) < 2:
                break
            if cue == "i meant" and re.match(r"^to\s", rest, re.I):
                break
            swap = _SWAP.match(rest) if cue in ("i meant", "actually") else None
            if swap and not _NOT_Y_VERB_FREE.search(swap.group("x")):
                return CorrectionIntent(
                    statement=None,
                    cue=cue,
                    old_value=clean_payload(swap.group("y")),
                    new_value=clean_payload(swap.group("x")),
                )
            compound = _compound(body if cue == "not anymore" else rest) if rest else None
            if compound is not None:
                return CorrectionIntent(statement=compound[0], negated=compound[1], cue=cue)
            statement, negated = split_negation(rest) if rest else (None, None)
            return CorrectionIntent(statement=statement, negated=negated, cue=cue)
        found = _implicit_correction(body)
        if found is not None:
            return found
    return None


def _next_statement(clauses: list[Clause], index: int) -> str:
    if index + 1 < len(clauses) and not clauses[index + 1].question:
        return clauses[index + 1].text
    return ""


_USED_TO = re.compile(
    r"^(?P<subj>.+?)\s+used\s+to\s+(?P<old>.+?)\s*[,;]?\s+but\s+(?:now\s*,?\s+)?(?P<new>.+)$",
    re.I | re.S,
)
_STOPPED = re.compile(
    r"^(?:(?:i|we|he|she|they|you)\s+)?(?:(?:don'?t|do\s+not|doesn'?t|does\s+not)(?:\s+any\s?more)?"
    r"|no\s+longer|not\s+any\s?more|stopped|quit|gave\s+(?:it\s+)?up|no\s+more)(?:\s+any\s?more)?$",
    re.IGNORECASE,
)
_SUBJECT_START = re.compile(
    r"^(?:i|i'm|im|we|we're|he|she|they|it|my|our|his|her|their|[A-Z][\w'-]*)\b"
)

#: "my car has changed, it's a red Polo now": the subject and its new value.
_CHANGED_TO = re.compile(
    r"^(?P<subj>(?:my|our)\s+[\w' -]{1,40}?)\s+(?:has\s+|have\s+)?changed\s*"
    r"[,;:.\-–—]+\s*(?:now\s*,?\s*)?(?:it'?s|it\s+is|they'?re|they\s+are)(?:\s+now)?"
    r"\s+(?P<new>.+)$",
    re.IGNORECASE | re.S,
)
_CHANGED = re.compile(r"\b(?:has|have)\s+changed\b|\bchanged\s+(?:to|from)\b", re.IGNORECASE)
_DUMMY_SUBJECT = re.compile(
    r"^(?:it|it's|that|that's|this|there|there's|things|nothing|everything)\b", re.IGNORECASE
)


#: "I meant 5k, not 10k": two short values, no verb; one replaces the other.
_SWAP = re.compile(r"^(?P<x>[^,;]{1,40}?)\s*,\s*not\s+(?P<y>[^,;]{1,40})$", re.IGNORECASE)
_NOT_Y_VERB_FREE = re.compile(
    r"\b(?:is|are|am|'m|'s|was|were|live|lives|work|works|like|likes|love|loves|eat|eats)\b",
    re.IGNORECASE,
)
#: Where a compound correction turns from what stopped being true to what is true now.
_TURN = re.compile(r"\s*(?:[;,.]|\s+but|\s+and)\s+(?:but\s+|and\s+)?(?:now\s*,?\s+)?", re.I)
#: A negated fragment with no subject: "not vegetarian anymore", "no longer at the bakery".
_BARE_NOT = re.compile(
    r"^(?:not|no\s+longer)\s+(?P<x>.+?)(?:\s+any\s?(?:more|longer))?$", re.IGNORECASE | re.S
)
_VERB_START = re.compile(
    r"^(?:eat|drink|work|live|like|love|play|run|go|have|use|drive|prefer|take|own)\b", re.I
)
_I_FORMS = frozenset({"i", "i'm", "im"})
_NOW_END = re.compile(r"\s+(?:now|these\s+days|instead)$", re.IGNORECASE)


def _compound(text: str) -> tuple[str, str] | None:
    """(what is true now, what stopped being true) of a sentence that says both: "I don't
    work at the bakery anymore, I work at the library now", "not vegetarian anymore,
    pescatarian now". ``None`` unless the first part is a negation and the second is not."""
    if len(text) > MAX_PARSE_CHARS:
        return None
    for turn in _TURN.finditer(text):
        first, second = text[: turn.start()].strip(), text[turn.end() :].strip()
        second = _NOW_END.sub("", clean_payload(second)).strip()
        if not first or not second or ANYMORE.search(second) or re.match(r"^not\b", second, re.I):
            continue
        bare = _BARE_NOT.match(first)
        if bare is not None and not re.match(r"^any\s?(?:more|longer)$", bare.group("x"), re.I):
            old = bare.group("x").strip()
            if not _SUBJECT_START.match(second):
                second = f"I {second}" if _VERB_START.match(second) else f"I'm {second}"
            return second, old
        if not ANYMORE.search(first):
            continue
        _, negated = split_negation(first)
        if negated is None or _DUMMY_SUBJECT.match(negated):
            continue
        if not _SUBJECT_START.match(second):
            subject = first.split()[0]
            second = f"{'I' if subject.lower() in _I_FORMS else subject} {second}"
        return second, negated
    return None


def _implicit_correction(body: str) -> CorrectionIntent | None:
    if len(body) > MAX_PARSE_CHARS:
        return None
    compound = _compound(body)
    if compound is not None:
        return CorrectionIntent(statement=compound[0], negated=compound[1], cue="not anymore")
    changed = _CHANGED_TO.match(body)
    if changed is not None:
        subject, new = changed.group("subj"), _NOW_END.sub("", changed.group("new")).strip()
        return CorrectionIntent(statement=f"{subject} is {new}", negated=subject, cue="has changed")
    used = _USED_TO.match(body)
    if used:
        subject, old, new = used.group("subj"), used.group("old"), clean_payload(used.group("new"))
        was = f"{subject} {conjugate_for(subject, old)}"
        if not new or _STOPPED.match(new):
            return CorrectionIntent(
                statement=f"{subject} no longer {conjugate_for(subject, old)}",
                negated=was,
                cue="used to",
            )
        if not _SUBJECT_START.match(new):
            new = f"{subject} {new}"
        return CorrectionIntent(statement=new, negated=was, cue="used to")
    # Only when what stopped being true can be read back ("I'm not vegan anymore" →
    # "I'm vegan"); "I can't wait anymore" is a mood, not a correction.
    # Dummy subjects ("it doesn't matter anymore") are not about anyone either.
    statement, negated = split_negation(body)
    if negated is not None and not _DUMMY_SUBJECT.match(negated):
        cue = "not anymore" if ANYMORE.search(body) else "not"
        return CorrectionIntent(statement=statement, negated=negated, cue=cue)
    if _CHANGED.search(body) and re.search(r"\b(?:my|our|i|we)\b", body, re.IGNORECASE):
        return CorrectionIntent(statement=body, cue="has changed")
    return None
