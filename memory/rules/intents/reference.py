"""Ambiguous references in a group: whose "Mom", which "boss", whose "her sister"."""

from __future__ import annotations

import re
from typing import Final

from memory.models import ThreadKind
from memory.rules.addressing import strip_addressing
from memory.rules.text import MAX_PARSE_CHARS, clean_text, split_sentences, word_set

_KIN_NAMES = (
    r"mom|mum|mommy|mummy|mama|mother|dad|daddy|papa|father|grandma|grandmother|granny|nana"
    r"|grandpa|grandfather|grandad|granddad|gramps"
)
_PERSON_NOUNS = (
    rf"{_KIN_NAMES}|sister|brother|sis|aunt|auntie|uncle|cousin|son|daughter|wife|husband"
    r"|partner|boyfriend|girlfriend|fiance|fiancee|boss|manager|doctor|dentist|therapist"
    r"|teacher|coach|trainer|lawyer|accountant|friend|colleague|coworker|in-laws?|parents"
)
_ROLES = r"boss|manager|doctor|dentist|therapist|physio|teacher|coach|trainer|lawyer|accountant"
_BARE_KIN = re.compile(rf"(?<![\w'-])(?P<ref>{_KIN_NAMES})(?![\w-])", re.IGNORECASE)
_THE_ROLE = re.compile(
    rf"(?:^|\b(?:and|but|so|because|when|if|since)\s+)(?P<ref>the\s+(?:{_ROLES}))\b",
    re.IGNORECASE,
)
_NOT_NAMES_AT_START: Final = frozenset(
    word_set(
        """the she he they we it i yesterday today tonight tomorrow so and but apparently also
    then when now my our your her his their this that there what why how who where did does
    do is are was were will would can could should please ok okay oh"""
    )
)
_PRONOUN_POSSESSIVE = re.compile(
    rf"\b(?P<ref>(?:his|her|their)\s+(?:{_PERSON_NOUNS}))\b", re.IGNORECASE
)
_DETERMINERS: Final = frozenset(
    word_set(
        """my your his her their our the a an this that these those whose every no one's own
    any some each step"""
    )
)
_KIN_COMPOUNDS = re.compile(
    rf"^(?:{_KIN_NAMES})(?:'s\s+day|\s+(?:nature|tongue|ship|earth|jeans|jokes?|bod|board|land"
    r"|figure|hen|of\s+all|of\s+god))\b",
    re.IGNORECASE,
)


def detect_ambiguous_reference(text: str, thread_kind: ThreadKind) -> str | None:
    """In a group, a reference to a person whose owner is unclear, as written; else None.

    A DM has one possible owner, so nothing is ambiguous there. In a group, "my mom" is not
    ambiguous: Telegram says who speaks, so "my" is the speaker. "our doctor" is the
    circle's. What is ambiguous, and should be clarified before it is stored as someone's
    (DESIGN.md §5), is:

    * a parent/grandparent word used as a name: "Mom called", "grandma is sick";
    * a personal role with a bare article: "the boss wants …", "the dentist said …";
    * "his/her/their" + a person noun with no capitalised name before it in the sentence
      ("her sister is visiting" — whose?).

    Not flagged: vocatives ("Mom, are you coming?", "thanks, Dad"), titles followed by a
    name ("Mother Teresa"), and compounds ("Mother's Day", "dad jokes", "mother tongue").
    """
    if thread_kind is not ThreadKind.GROUP:
        return None
    cleaned = strip_addressing(clean_text(text))
    for sentence in split_sentences(cleaned):
        if len(sentence) > MAX_PARSE_CHARS:
            sentence = sentence[:MAX_PARSE_CHARS]
        found = _ambiguous_in(sentence)
        if found is not None:
            return found
    return None


def _ambiguous_in(sentence: str) -> str | None:
    for match in _BARE_KIN.finditer(sentence):
        if _bare_kin_is_ambiguous(sentence, match.start(), match.end()):
            return match.group("ref")
    role = _THE_ROLE.search(sentence)
    if role:
        return role.group("ref")
    for match in _PRONOUN_POSSESSIVE.finditer(sentence):
        if not _names_someone(sentence[: match.start()]):
            return match.group("ref")
    return None


def _names_someone(text: str) -> bool:
    """Whether ``text`` contains a capitalised name an "her"/"his" could refer back to."""
    words = re.findall(r"[\w'-]+", text)
    for position, word in enumerate(words):
        bare = word.removesuffix("'s")
        if not bare[:1].isupper() or bare == "I":
            continue
        if position == 0 and bare.lower() in _NOT_NAMES_AT_START:
            continue
        return True
    return False


def _bare_kin_is_ambiguous(sentence: str, start: int, end: int) -> bool:
    before = sentence[:start].rstrip()
    after = sentence[end:]
    previous = re.findall(r"[\w'-]+", before)[-1:] if before else []
    if previous:
        word = previous[0].lower()
        if word in _DETERMINERS or word.endswith("'s") or word.endswith("-"):
            return False
    if sentence[start - 1 : start] == "-":
        return False
    if _KIN_COMPOUNDS.match(sentence[start:]):
        return False
    if re.match(r"^\s+[A-Z][a-z]", after) and sentence[start].isupper():
        return False  # a title: "Mother Teresa", "Father Brown"
    if re.match(r"^\s*,", after) and not before:
        return False  # vocative opening: "Mom, are you coming?"
    if re.search(r",\s*$", before) and re.match(r"^\s*[.!?]*\s*$", after):
        return False  # vocative closing: "thanks, Dad!"
    # The word alone ("Mom!") is a call, not a statement about anyone.
    return bool(before) or re.match(r"^\s*[\w']", after) is not None
