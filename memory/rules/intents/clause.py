"""A sentence reduced to the part an intent pattern reads, and pieces every intent shares.

Fillers ("oh", "btw"), politeness ("please", "can you") and final marks are stripped so
that the cue patterns can be anchored at the start of the sentence.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

from memory.rules.addressing import strip_addressing
from memory.rules.text import clean_text, split_sentences

_FILLERS = (
    r"oh|ok|okay|so|and|also|btw|by\s+the\s+way|hey|hi|hello|um+|uh+|erm?|well|fyi|just"
    r"|one\s+more\s+thing|quick\s+(?:note|one)|alright|right|sorry|oops|anyway"
)
_LEAD_FILLER = re.compile(rf"^(?:(?:{_FILLERS})\b[\s,:;.!\-–—]*)+", re.IGNORECASE)
_LEAD_RETRACTION = re.compile(
    r"^(?:(?:actually|nope|wait|oh\s+wait)\b[\s,:;.!\-–—]*|no\s*[,.!:;\-–—]+\s*)+",
    re.IGNORECASE,
)
POLITE = re.compile(
    r"^(?:(?:please|pls|plz|kindly)\b[\s,]*"
    r"|(?:can|could|would|will)\s+you\s+(?:please\s+|kindly\s+|just\s+)?"
    r"|i\s+(?:want|need|would\s+like|'d\s+like)\s+you\s+to\s+)",
    re.IGNORECASE,
)
_TRAIL_COURTESY = re.compile(
    r"(?:[\s,]+(?:please|pls|plz|thanks|thank\s+you|thx|ty))+\s*$", re.IGNORECASE
)
_END_PUNCT: Final = frozenset(".!?…,;: ")


def strip_trailing_marks(text: str) -> str:
    """Drop final punctuation and emoji (symbols, variation selectors, joiners)."""
    end = len(text)
    while end > 0:
        char = text[end - 1]
        if char in _END_PUNCT or unicodedata.category(char) in {"So", "Sk", "Mn", "Cf"}:
            end -= 1
        else:
            break
    return text[:end]


@dataclass(frozen=True)
class Clause:
    """A sentence reduced to its core: what each detector matches against."""

    text: str
    polite: bool
    question: bool


def prepare(sentence: str, *, retraction: bool = True) -> Clause:
    """Strip fillers, politeness, courtesy and final marks; remember if it was a question.

    ``retraction`` also strips "actually", "no", "wait": right for every detector except
    the correction one, where they are the signal.
    """
    raw = _strip_trailing_marks_keep_question(sentence)
    question = re.search(r"\?[!?.…]*$", raw) is not None
    text = raw
    polite = False
    for _ in range(4):
        before = text
        text = _LEAD_FILLER.sub("", text)
        if retraction:
            text = _LEAD_RETRACTION.sub("", text)
        stripped = POLITE.sub("", text, count=1)
        if stripped != text:
            polite = True
            text = stripped
        if text == before:
            break
    text = strip_trailing_marks(text)
    stripped = _TRAIL_COURTESY.sub("", text)
    if stripped != text:
        polite = True
    text = strip_trailing_marks(stripped)
    return Clause(text=text.strip(), polite=polite, question=question)


def _strip_trailing_marks_keep_question(sentence: str) -> str:
    """The sentence without trailing emoji/spaces, so "…?🙂" still reads as a question."""
    end = len(sentence)
    while end > 0 and (
        sentence[end - 1].isspace()
        or unicodedata.category(sentence[end - 1]) in {"So", "Sk", "Mn", "Cf"}
    ):
        end -= 1
    return sentence[:end].strip()


def sentence_clauses(text: str, *, retraction: bool = True) -> list[Clause]:
    cleaned = strip_addressing(clean_text(text))
    return [prepare(s, retraction=retraction) for s in split_sentences(cleaned)]


def clean_payload(text: str) -> str:
    """A payload without wrapping quotes, leading connectors or final punctuation."""
    text = text.strip().strip("\"'").strip()
    text = re.sub(r"^[:\-–—]\s*", "", text)
    return strip_trailing_marks(text).strip().strip("\"'").strip()


def has_letters(text: str) -> bool:
    return any(char.isalpha() for char in text)


#: A payload that opens with the speaker ("remember my …", "don't forget I'm …").
SELF_START = r"(?:my|our|i|i'm|im|i've|i'd|i'll|we|we're|we've|we'll|we'd|me|us)\b"

#: "don't" as people type it.
DONT = r"(?:don'?t|do\s+not)"

#: Words that only point back ("remember this"): nothing to store or avoid on their own.
NOT_A_PAYLOAD: Final = frozenset({"this", "that", "it", "me", "us", "everything"})

#: Who a forget-all or a recall is about: the speaker, or the whole circle.
WHO_ME = r"me|myself|my\s+(?:life|family\s+and\s+me)"
WHO_US = (
    r"us|ourselves|the\s+two\s+of\s+us|(?:our|this|the)\s+(?:family|group|circle|household|team)"
    r"|everyone(?:\s+here)?|all\s+of\s+us"
)


def who_of(word: str | None) -> Literal["me", "us"]:
    """ "me" or "us" for the phrase a pattern captured; no phrase means the speaker."""
    if word is None:
        return "me"
    word = word.lower()
    if re.fullmatch(WHO_US, word) or word == "our":
        return "us"
    return "me"
