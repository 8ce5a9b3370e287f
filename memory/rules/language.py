"""Small text helpers shared by the offline rules: keys, word limits, language checks.

The offline provider must never store garbage, so every rule first asks whether a line is
English it can parse (:func:`looks_english`); everything else is left alone rather than
mangled by English-only patterns.
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.dates import without_said_on
from memory.search.text import CHAT_STOPWORDS, ENGLISH_STOPWORDS, tokenize

_KEY_STRIP = re.compile(r"[^\w\s]", re.UNICODE)
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
_LATIN_LIMIT: Final = 0x250  # Basic Latin … Latin Extended-B
# Frequent English function words that are not also common Spanish/Italian/German words
# ("a", "me", "in" are left out for that reason), and the English words of days, which a
# short plan may be made of ("Grandma arrives next Saturday").
_ENGLISH_MARKER_TEXT: Final = (
    "the and you your my our we we're i'm i've is are was to of it it's that this with "
    "have has for not what when do don't love like i at as an am im be been he she they his "
    "her their from but or so just really next tomorrow tonight yesterday today weekend "
    "monday tuesday wednesday thursday friday saturday sunday"
)
_ENGLISH_MARKERS: Final = frozenset(_ENGLISH_MARKER_TEXT.split())
# Function words of the other common Latin-script languages (es, fr, de, it, pt, nl).
_FOREIGN_MARKER_TEXT: Final = (
    "el la los las del que y en es un una por con para pero muy je suis le les des et est une "
    "pas avec mais ich und der die das ist nicht ein eine mit aber il lo di che per sono non "
    "della em não com uma mas het een niet ook"
)
_FOREIGN_MARKERS: Final = frozenset(_FOREIGN_MARKER_TEXT.split())
#: Stopwords for "is this sentence informative?": NLTK's list plus chat filler.
CONTENT_STOPWORDS: Final = ENGLISH_STOPWORDS | CHAT_STOPWORDS


def norm_key(text: str) -> str:
    """A comparison key: lower case, no punctuation, single spaces ("Alice likes tea." ==
    "alice likes tea")."""
    return " ".join(_KEY_STRIP.sub(" ", text.lower().replace("'", "")).split())


def clip_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` words at a word boundary, marked with "…" if cut
    (the day a line was said, if it has one, is dropped before any word is)."""
    words = text.split()
    if len(words) <= limit:
        return text.strip()
    words = without_said_on(text).split()
    if len(words) <= limit:
        return " ".join(words)
    return " ".join(words[: max(limit, 1)]).rstrip(",;:-–—") + "…"


def word_count(text: str) -> int:
    return len(text.split())


def is_latin(text: str) -> bool:
    """Whether at least 90 % of the letters of ``text`` are Latin script."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    latin = sum(1 for c in letters if ord(c) < _LATIN_LIMIT)
    return latin / len(letters) >= 0.9


def looks_english(text: str) -> bool:
    """Whether ``text`` is English the rules can parse: Latin script, and more English
    function words than those of other Latin-script languages, either at least 10 % of the
    words or at least three of them (long lists of nouns dilute the ratio).
    """
    if not is_latin(text):
        return False
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return False
    hits = sum(1 for w in words if w in _ENGLISH_MARKERS)
    foreign = sum(1 for w in words if w in _FOREIGN_MARKERS)
    return hits > foreign and (hits >= 3 or hits / len(words) >= 0.1)


def content_terms(text: str) -> set[str]:
    """The stemmed content words of ``text``: what makes a sentence informative."""
    return {t for t in tokenize(text, stopwords=CONTENT_STOPWORDS, min_length=3) if t.isalpha()}


def capitalise(text: str) -> str:
    """``text`` with its first letter upper-cased, the rest untouched."""
    for index, char in enumerate(text):
        if char.isalpha():
            return text[:index] + char.upper() + text[index + 1 :]
    return text


def end_sentence(text: str) -> str:
    """``text`` ending with terminal punctuation, for joining sentences into a note."""
    text = text.strip()
    if not text or text[-1] in ".!?…":
        return text
    return text + "."


def strip_end(text: str) -> str:
    """``text`` without trailing punctuation and spaces."""
    return text.strip().rstrip(".!?,;: ").strip()
