"""Text as the rules read it: normalised, capped, split into sentences.

Every rule starts here, so the hot path costs the same for a 100 KB paste as for a short
message: input is cut at :data:`MAX_INTENT_CHARS`, and patterns that backtrack only ever
see sentences of at most :data:`MAX_PARSE_CHARS` characters.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

#: Only the start of a message is read for intents: instructions come first, and a cap
#: keeps the hot path fast whatever a user pastes.
MAX_INTENT_CHARS: Final = 4000
#: Sentences longer than this are not parsed by backtracking patterns (not atomic anyway).
MAX_PARSE_CHARS: Final = 600


def word_set(text: str) -> frozenset[str]:
    """A word set written as one spaced string, which reads better than a long literal."""
    return frozenset(text.split())


_QUOTES: Final = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u00b4": "'",
        "`": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
    }
)
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_SPACES = re.compile(r"[^\S\n]+")


def clean_text(text: str, *, limit: int | None = MAX_INTENT_CHARS) -> str:
    """``text`` normalised for matching: NFKC, ASCII quotes, single spaces, no blank lines.

    Newlines are kept because they end sentences in chat messages. ``limit`` caps the
    result too: NFKC can make a text up to 18 times longer ("\ufdfa").
    """
    if limit is not None:
        text = text[:limit]
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _INVISIBLE.sub("", text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    cleaned = "\n".join(line for line in lines if line)
    return cleaned if limit is None else cleaned[:limit].rstrip()


_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+|\n+")
_ABBREVIATIONS: Final = frozenset(
    {"dr", "mr", "mrs", "ms", "st", "jr", "sr", "prof", "vs", "e.g", "i.e", "approx", "mt"}
)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, split at ``.!?…`` followed by space and at newlines.

    Common title abbreviations ("Dr.", "Mrs.") and initials ("J.") do not end a sentence.
    """
    sentences: list[str] = []
    for piece in _SENTENCE_BREAK.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if sentences and _ends_with_abbreviation(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def _ends_with_abbreviation(sentence: str) -> bool:
    if not sentence.endswith("."):
        return False
    last = sentence.rsplit(" ", 1)[-1][:-1].lower()
    return last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())
