"""English verb agreement, for rewriting "I love" as "Alice loves" and "used to" sentences."""

from __future__ import annotations

import re
from typing import Final

from memory.rules.text import word_set

_PLURAL_PRONOUNS: Final = frozenset({"i", "we", "they", "you", "these", "those"})
_IRREGULAR_3SG: Final = {
    "be": "is",
    "am": "is",
    "are": "is",
    "'m": "is",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "dont": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
}
_UNCHANGED_VERBS: Final = word_set(
    """can could will would shall should may might must was is has can't couldn't won't
    wouldn't shouldn't mustn't didn't wasn't hasn't used got went had did made said saw came
    took gave knew thought told felt left met ran ate bought brought began became found kept
    lost paid sent sold spent won wrote forgot broke chose drove flew grew heard held hurt
    led let put read rode sang sat slept spoke stood swam taught threw understood woke wore
    quit cut set shut hit cost became fell forgave hid meant""",
)


def third_person_singular(verb: str) -> str:
    """The he/she form of an English base-form verb ("love" → "loves", "go" → "goes").

    Past forms, modals and non-words are returned unchanged; shouting stays shouting
    ("LOVE" → "LOVES").
    """
    low = verb.lower()
    if low in _IRREGULAR_3SG:
        form = _IRREGULAR_3SG[low]
    else:
        past = low.endswith("ed") and not low.endswith("eed") and len(low) > 3
        if low in _UNCHANGED_VERBS or not low.isalpha() or past:
            return verb
        if re.search(r"(?:s|sh|ch|x|z|o)$", low):
            form = low + "es"
        elif re.search(r"[^aeiou]y$", low):
            form = low[:-1] + "ies"
        else:
            form = low + "s"
    if verb.isupper() and len(verb) > 1:
        return form.upper()
    if verb[:1].isupper():
        return form[:1].upper() + form[1:]
    return form


def conjugate_first(phrase: str) -> str:
    head, _, tail = phrase.strip().partition(" ")
    return f"{third_person_singular(head)} {tail}".strip()


def is_third_singular(subject: str) -> bool:
    """Whether ``subject`` takes "loves" rather than "love": he, she, it, a name, "my sister"."""
    subject = subject.strip()
    low = subject.lower()
    if not subject or low in _PLURAL_PRONOUNS or re.search(r"\band\b", low):
        return False
    if low in {"he", "she", "it"}:
        return True
    possessive = re.fullmatch(r"(?:my|our|his|her|their|your)\s+([\w'-]+)", low)
    if possessive:
        return not possessive.group(1).endswith("s") or possessive.group(1).endswith("ss")
    return subject[0].isupper() and len(subject.split()) <= 3


def conjugate_for(subject: str, phrase: str) -> str:
    """The verb phrase agreeing with ``subject`` (only third-person singular changes)."""
    if is_third_singular(subject):
        return conjugate_first(phrase)
    return phrase.strip()
