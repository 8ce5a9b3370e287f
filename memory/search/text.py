"""Text to keyword terms, for the BM25 leg of hybrid search.

Why each step:

* Lower-casing and a Unicode-aware word split (``[^\\W_]+``) so accented, Cyrillic, Greek
  … words stay whole; apostrophes split (``don't`` -> ``don``, ``t``) which is why the
  stopword list carries the fragments.
* Scripts written without spaces (Chinese, Japanese kana) have no words to split on; each
  such character becomes its own term, so keyword search still matches them at all.
* A 179-word English stopword list (the classic NLTK list): on LoCoMo a 33-word list cost
  0.05 recall@10 against it, because questions are full of "what/when/did/the" that match
  every turn and drown the content words.
* Light Porter stemming (optional, on by default): "paint", "painting", "painted" meet.
  The Porter (1980) algorithm is implemented here because it is small and adds no
  dependency; results are cached since vocabularies are small and repetitive.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

#: The 179-word English stopword list of NLTK (Porter et al.), as used by the LoCoMo figures.
_ENGLISH_STOPWORDS_TEXT: Final = """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them
    their theirs themselves what which who whom this that that'll these those am is are was
    were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don don't should should've now d ll m o re ve y
    ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
    haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
"""
ENGLISH_STOPWORDS: Final[frozenset[str]] = frozenset(_ENGLISH_STOPWORDS_TEXT.split())

#: Words of chat small talk that carry no topic (greetings, fillers, intensifiers). Not in
#: the default list: an option for conversational corpora, measured by scripts/locomo_eval.py.
_CHAT_STOPWORDS_TEXT: Final = """
    hey hi hello yeah yes yep ok okay oh wow really like just thanks thank lol haha
    also would could get got gonna wanna much many lot lots well thing things
"""
CHAT_STOPWORDS: Final[frozenset[str]] = frozenset(_CHAT_STOPWORDS_TEXT.split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: Longer words are kept as they are: no English word is, and a stemmer's work on a
#: hostile run of thousands of letters is wasted time on the event loop.
_MAX_STEMMED: Final = 40
# Han, Hiragana, Katakana, CJK extension A, compatibility ideographs, Thai, Lao, Khmer,
# Myanmar: scripts that do not separate words with spaces.
_UNSPACED = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f]"
)


def tokenize(
    text: str,
    *,
    stopwords: frozenset[str] = ENGLISH_STOPWORDS,
    stem: bool = True,
    min_length: int = 1,
) -> list[str]:
    """The keyword terms of ``text``, in order, duplicates kept (BM25 counts them).

    Stopwords are matched before stemming, so the list is a list of real words.
    """
    if not text:
        return []
    normalised = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    terms: list[str] = []
    for word in _WORD.findall(normalised):
        if _UNSPACED.search(word):
            terms.extend(_split_unspaced(word))
            continue
        if word in stopwords or len(word) < min_length:
            continue
        terms.append(porter_stem(word) if stem and len(word) <= _MAX_STEMMED else word)
    return terms


def _split_unspaced(word: str) -> list[str]:
    """One term per character of an unspaced script; runs of other letters stay whole."""
    out: list[str] = []
    run = ""
    for char in word:
        if _UNSPACED.match(char):
            if run:
                out.append(run)
                run = ""
            out.append(char)
        else:
            run += char
    if run:
        out.append(run)
    return out


# --- Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980) ----------

_VOWELS: Final = frozenset("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    """Porter's consonant: not a vowel, and a "y" only at the start or after a vowel; a
    run of "y"s alternates. Counted along the run, not recursively: a hostile "yyyy…" of
    thousands is one word, and recursion ran out of stack on it."""
    char = word[i]
    if char in _VOWELS:
        return False
    if char != "y":
        return True
    start = i
    while start > 0 and word[start - 1] == "y":
        start -= 1
    first = start == 0 or word[start - 1] in _VOWELS
    return first if (i - start) % 2 == 0 else not first


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    m = 0
    previous_vowel = False
    for i in range(len(stem)):
        vowel = not _is_consonant(stem, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _ends_cvc(word: str) -> bool:
    """Consonant-vowel-consonant, the last not w, x or y (e.g. "hop", not "snow")."""
    if len(word) < 3:
        return False
    return (
        _is_consonant(word, len(word) - 1)
        and not _is_consonant(word, len(word) - 2)
        and _is_consonant(word, len(word) - 3)
        and word[-1] not in "wxy"
    )


_STEP2: Final = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
    ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"),
)  # fmt: skip
_STEP3: Final = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4: Final = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
    "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def _replace(word: str, suffix: str, replacement: str, min_measure: int) -> str | None:
    """``word`` with ``suffix`` replaced if it ends so and the stem's m > min_measure."""
    if not word.endswith(suffix):
        return None
    stem = word[: len(word) - len(suffix)]
    return stem + replacement if _measure(stem) > min_measure else word


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The Porter stem of a lower-case word; non-ASCII or short words are left alone."""
    if len(word) <= 2 or not word.isascii() or not word.isalpha():
        return word
    # Step 1a: plurals.
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    # Step 1b: -ed, -ing.
    step1b_extra = False
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                step1b_extra = True
                break
    if step1b_extra:
        if word.endswith(("at", "bl", "iz")):
            word += "e"
        elif _ends_double_consonant(word) and word[-1] not in "lsz":
            word = word[:-1]
        elif _measure(word) == 1 and _ends_cvc(word):
            word += "e"
    # Step 1c: y -> i after a vowel-bearing stem.
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    # Step 2 and 3: double and derivational suffixes, when the stem has m > 0.
    for table in (_STEP2, _STEP3):
        for suffix, replacement in table:
            replaced = _replace(word, suffix, replacement, 0)
            if replaced is not None:
                word = replaced
                break
    # Step 4: strip a suffix when m > 1.
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                word = stem
            break
    # Step 5: final -e and -ll.
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _ends_cvc(stem)):
            word = stem
    if _measure(word) > 1 and _ends_double_consonant(word) and word.endswith("l"):
        word = word[:-1]
    return word
