"""What a message asks of Alfred's memory, decided by rules, on the reply hot path.

Every provider (the OpenAI-compatible one and the offline rules) shares this module, so an
explicit "remember that …", a correction, a "forget …", a "what do you remember about
me?" or a standing directive behave the same whichever model is configured, cost nothing
and take microseconds. The functions are pure: text in, a frozen pydantic result (or
``None``) out.

Design choices, each made to avoid false positives, since a wrong intent on the hot path
stores, deletes or rewrites memory the user never asked about:

* **Cues are anchored.** An instruction must open a sentence, after optional addressing
  ("@alfred", "Alfred,", "hey Alfred"), fillers ("oh", "btw", "also") and politeness
  ("please", "can you", "I want you to"). "I remember that film" or "did you forget that
  I'm vegetarian?" are therefore never instructions.
* **Bare questions are not instructions.** "Remember that time we went to Rome?" is
  small talk; "Can you remember that I'm vegetarian?" is a polite request and counts.
* **"remember that" + a demonstrative noun** ("remember that film we saw") is a
  reminiscence, not an instruction.
* **Reminders are not memories.** "remember to buy milk" / "don't forget to call mom"
  ask for a reminder, which this module does not handle.
* **"actually" counts only sentence-initially** and in a statement: "what actually
  happened?" is not a correction. A bare "no, …" is not a correction either: it is far
  more often an answer to Alfred's question than a fix of memory.
* **Implicit corrections need something to correct.** "I'm not vegan anymore" counts
  because "I'm vegan" can be read back from it; "I can't wait anymore" or "it doesn't
  matter anymore" do not.
* **"forget it" / "forget about it" are dismissals** ("never mind"), not deletions.
* **Ambiguous references** (see :func:`detect_ambiguous_reference`): "my mom" always means
  the speaker's mother, since Telegram tells us who speaks; what is ambiguous in a group is
  a kinship word used as a name ("Mom called"), a role with a bare article ("the boss
  wants …") or a third-person possessive with no named antecedent ("her sister").

Text is cleaned first (:func:`clean_text`): Unicode NFKC, smart quotes and apostrophes to
ASCII, invisible characters removed, and long inputs cut at :data:`MAX_INTENT_CHARS` so a
100 KB message costs the same as a short one. Regular expressions that backtrack are only
run on sentences of at most :data:`MAX_PARSE_CHARS` characters.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from memory.models import ThreadKind

#: Only the start of a message is read for intents: instructions come first, and a cap
#: keeps the hot path fast whatever a user pastes.
MAX_INTENT_CHARS: Final = 4000
#: Sentences longer than this are not parsed by backtracking patterns (not atomic anyway).
MAX_PARSE_CHARS: Final = 600


def _words(text: str) -> frozenset[str]:
    """A word set written as one spaced string, which reads better than a long literal."""
    return frozenset(text.split())


# --- results ------------------------------------------------------------------------------


class _Intent(BaseModel):
    model_config = ConfigDict(frozen=True)


class RememberIntent(_Intent):
    """An explicit request to store something: ``payload`` is the text to remember."""

    kind: Literal["remember"] = "remember"
    payload: str


class CorrectionIntent(_Intent):
    """The user corrects something Alfred knows.

    ``statement`` is what is true now, in the speaker's words ("I'm not vegetarian
    anymore"), or ``None`` when the message only rejects something said before ("That's
    not right.", "Not anymore."): the caller must look at the conversation for what.
    ``negated`` is what stopped being true, where the sentence says it ("I'm vegetarian").
    """

    kind: Literal["correction"] = "correction"
    statement: str | None
    negated: str | None = None
    cue: str


class ForgetIntent(_Intent):
    """Delete one memory; ``target`` is ``None`` for "forget that" (the last thing said)."""

    kind: Literal["forget"] = "forget"
    target: str | None


class ForgetAllIntent(_Intent):
    """Erase everything about the speaker (``me``) or the whole circle (``us``)."""

    kind: Literal["forget_all"] = "forget_all"
    target: Literal["me", "us"]


class RecallIntent(_Intent):
    """List what Alfred remembers about the speaker (``me``) or the circle (``us``)."""

    kind: Literal["recall"] = "recall"
    target: Literal["me", "us"]


DirectiveTopic = Literal["language", "name", "length", "style", "avoid", "general"]


class DirectiveIntent(_Intent):
    """A standing instruction on how Alfred should behave with this user.

    ``instruction`` is the sentence without addressing, politeness or final punctuation
    ("always keep your answers short"); ``value`` the key word where there is one
    ("Spanish", "Al", "emojis", "short").
    """

    kind: Literal["directive"] = "directive"
    topic: DirectiveTopic
    instruction: str
    value: str | None = None


Intent = (
    RememberIntent
    | CorrectionIntent
    | ForgetIntent
    | ForgetAllIntent
    | RecallIntent
    | DirectiveIntent
)

# --- cleaning and sentences -------------------------------------------------------------

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


_BOT_HANDLE = r"@(?:alfred\w*|\w*bot)\b"
_LEAD_ADDRESS = re.compile(
    r"^(?:"
    rf"(?:hey|hi|hello|ok|okay|yo|dear)[\s,]+(?:{_BOT_HANDLE}|@?alfred\w*\b)"
    rf"|{_BOT_HANDLE}"
    r"|alfred\b(?=\s*[,:;!.\-–—]|\s+please\b|\s*$)"
    r")[\s,:;!.\-–—]*",
    re.IGNORECASE,
)
_TRAIL_ADDRESS = re.compile(
    rf"(?:\s*[,\-–—]\s*@?alfred\w*|\s+{_BOT_HANDLE})\s*(?=[.!?]*\s*$)", re.IGNORECASE
)


def strip_addressing(text: str) -> str:
    """``text`` without a leading "@alfred" / "Alfred," / "hey Alfred" or trailing ", Alfred".

    Telegram bot usernames always end in "bot", so any leading "@…bot" mention is the bot
    itself. A bare "Alfred" is only an address when punctuation or "please" follows:
    "Alfred is great" keeps its subject.
    """
    text = _LEAD_ADDRESS.sub("", text.strip(), count=1)
    return _TRAIL_ADDRESS.sub("", text, count=1).strip()


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


# --- clause preparation --------------------------------------------------------------------

_FILLERS = (
    r"oh|ok|okay|so|and|also|btw|by\s+the\s+way|hey|hi|hello|um+|uh+|erm?|well|fyi|just"
    r"|one\s+more\s+thing|quick\s+(?:note|one)|alright|right|sorry|oops|anyway"
)
_LEAD_FILLER = re.compile(rf"^(?:(?:{_FILLERS})\b[\s,:;.!\-–—]*)+", re.IGNORECASE)
_LEAD_RETRACTION = re.compile(
    r"^(?:(?:actually|nope|wait|oh\s+wait)\b[\s,:;.!\-–—]*|no\s*[,.!:;\-–—]+\s*)+",
    re.IGNORECASE,
)
_POLITE = re.compile(
    r"^(?:(?:please|pls|plz|kindly)\b[\s,]*"
    r"|(?:can|could|would|will)\s+you\s+(?:please\s+|kindly\s+|just\s+)?"
    r"|i\s+(?:want|need|would\s+like|'d\s+like)\s+you\s+to\s+)",
    re.IGNORECASE,
)
_TRAIL_COURTESY = re.compile(
    r"(?:[\s,]+(?:please|pls|plz|thanks|thank\s+you|thx|ty))+\s*$", re.IGNORECASE
)
_END_PUNCT: Final = frozenset(".!?…,;: ")


def _strip_trailing_marks(text: str) -> str:
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
class _Clause:
    """A sentence reduced to its core: what each detector matches against."""

    text: str
    polite: bool
    question: bool


def _prepare(sentence: str, *, retraction: bool = True) -> _Clause:
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
        stripped = _POLITE.sub("", text, count=1)
        if stripped != text:
            polite = True
            text = stripped
        if text == before:
            break
    text = _strip_trailing_marks(text)
    stripped = _TRAIL_COURTESY.sub("", text)
    if stripped != text:
        polite = True
    text = _strip_trailing_marks(stripped)
    return _Clause(text=text.strip(), polite=polite, question=question)


def _strip_trailing_marks_keep_question(sentence: str) -> str:
    """The sentence without trailing emoji/spaces, so "…?🙂" still reads as a question."""
    end = len(sentence)
    while end > 0 and (
        sentence[end - 1].isspace()
        or unicodedata.category(sentence[end - 1]) in {"So", "Sk", "Mn", "Cf"}
    ):
        end -= 1
    return sentence[:end].strip()


def _clauses(text: str, *, retraction: bool = True) -> list[_Clause]:
    cleaned = strip_addressing(clean_text(text))
    return [_prepare(s, retraction=retraction) for s in split_sentences(cleaned)]


def _payload(text: str) -> str:
    """A payload without wrapping quotes, leading connectors or final punctuation."""
    text = text.strip().strip("\"'").strip()
    text = re.sub(r"^[:\-–—]\s*", "", text)
    return _strip_trailing_marks(text).strip().strip("\"'").strip()


def _has_letters(text: str) -> bool:
    return any(char.isalpha() for char in text)


_SELF_START = r"(?:my|our|i|i'm|im|i've|i'd|i'll|we|we're|we've|we'll|we'd|me|us)\b"

# --- remember ---------------------------------------------------------------------------------

_DONT = r"(?:don'?t|do\s+not)"
_REMEMBER_CUES: Final = (
    re.compile(r"^remember(?:\s+this)?\s*[:\-–—]\s*(?P<p>.+)$", re.I | re.S),
    re.compile(r"^remember\s*,\s*(?P<p>.+)$", re.I | re.S),
    re.compile(r"^remember\s+that\s+(?P<p>.+)$", re.I | re.S),
    re.compile(rf"^remember\s+(?P<p>{_SELF_START}.+)$", re.I | re.S),
    re.compile(rf"^{_DONT}\s+(?:ever\s+)?forget\s*(?:that\s+|[:,\-–—]\s*)(?P<p>.+)$", re.I | re.S),
    re.compile(rf"^{_DONT}\s+(?:ever\s+)?forget\s+(?P<p>{_SELF_START}.+)$", re.I | re.S),
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
# "Remember that film we saw?" — a demonstrative + noun, then a relative clause or nothing.
_REMINISCENCE = re.compile(
    r"^(?:time|day|night|week|weekend|morning|evening|film|movie|song|book|place|restaurant"
    r"|bar|cafe|hotel|trip|holiday|vacation|guy|girl|woman|man|one|show|episode|game|party"
    r"|dinner|lunch|meal|joke|story|concert|summer|winter)"
    r"(?:\s+(?:we|i|you|he|she|they|when|where|with|who|that|at|in|on|from|last|about)\b.*)?$",
    re.IGNORECASE | re.S,
)
_NOT_A_PAYLOAD: Final = frozenset({"this", "that", "it", "me", "us", "everything"})


def detect_remember(text: str) -> RememberIntent | None:
    """An explicit "remember that …" style request, with the text to store.

    Handles "remember that/: /, …", "remember my …", "don't forget (that) …", "keep/bear
    in mind (that) …", "make/take a note (that/of) …", "note that/: …", "for the record,
    …" and "memorise/store/save that …". The payload is the rest of that sentence.
    """
    for clause in _clauses(text):
        for pattern in _REMEMBER_CUES:
            match = pattern.match(clause.text)
            if match is None:
                continue
            payload = _payload(match.group("p"))
            if not _valid_payload(payload, clause, reminiscence_check=pattern is _REMEMBER_CUES[2]):
                break
            return RememberIntent(payload=payload)
    return None


def _valid_payload(payload: str, clause: _Clause, *, reminiscence_check: bool) -> bool:
    if not _has_letters(payload) or payload.lower() in _NOT_A_PAYLOAD:
        return False
    if re.match(r"^to\s", payload, re.IGNORECASE):  # a reminder, not a memory
        return False
    if clause.question and not clause.polite:
        return False
    return not (reminiscence_check and _REMINISCENCE.match(payload))


# --- forget -----------------------------------------------------------------------------------

_WHO_ME = r"me|myself|my\s+(?:life|family\s+and\s+me)"
_WHO_US = (
    r"us|ourselves|the\s+two\s+of\s+us|(?:our|this|the)\s+(?:family|group|circle|household|team)"
    r"|everyone(?:\s+here)?|all\s+of\s+us"
)
_FORGET_ALL: Final = (
    re.compile(
        r"^(?:forget|erase|delete|wipe|remove|clear|purge)\s+(?:absolutely\s+)?"
        r"(?:everything|all(?:\s+of\s+it)?|all\s+(?:the\s+)?(?:data|memories|info|information))"
        r"(?:\s+(?:that\s+)?you\s+(?:know|remember|have(?:\s+(?:stored|saved|learned|learnt))?"
        r"|learned|learnt|stored|saved))?"
        rf"(?:\s+(?:about|on|of|regarding)\s+(?P<who>{_WHO_ME}|{_WHO_US}))?$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:forget|erase|delete|wipe|remove|clear|purge)\s+(?:all\s+(?:of\s+)?)?"
        r"(?P<who>my|our)\s+(?:personal\s+)?(?:data|memories|information|info|history|records?"
        r"|details|profile)$",
        re.IGNORECASE,
    ),
    re.compile(
        rf"^forget\s+(?:all\s+)?(?:about\s+)?(?P<who>{_WHO_ME}|{_WHO_US}|who\s+i\s+am)$",
        re.IGNORECASE,
    ),
)
_FORGET_TARGET: Final = (
    re.compile(
        r"^(?:forget|erase|delete|remove)\s+(?:everything|what|anything)\s+(?:you\s+(?:know|remember)|"
        r"i\s+(?:said|told\s+you))\s+(?:about|regarding)\s+(?P<t>.+)$",
        re.I | re.S,
    ),
    re.compile(r"^forget\s+everything\s+(?:about|regarding)\s+(?P<t>.+)$", re.I | re.S),
    re.compile(
        r"^forget\s+(?:that|about|the\s+fact\s+that|i\s+(?:said|told\s+you)(?:\s+that)?)\s+(?P<t>.+)$",
        re.I | re.S,
    ),
    re.compile(r"^forget\s+(?P<t>(?:my|our|the)\b.+)$", re.I | re.S),
    re.compile(
        r"^(?:delete|erase|remove)\s+(?:the\s+)?(?:memory|fact|note)\s+(?:that|about)\s+(?P<t>.+)$",
        re.I | re.S,
    ),
)
_FORGET_LAST = re.compile(
    r"^(?:forget|delete|erase)\s+(?:that|this|what\s+i\s+(?:just\s+)?(?:said|told\s+you|wrote)"
    r"|(?:that\s+)?i\s+(?:just\s+)?said\s+(?:that|it|this)|the\s+last\s+(?:thing|message|one))$",
    re.IGNORECASE,
)
_DISMISSAL: Final = frozenset({"it", "about it", "it all", "all about it"})
# "forget the party, it's cancelled": the reason after the comma is not part of the target.
_FORGET_TAIL = re.compile(
    r"\s*[,;]\s+(?=(?:it|it's|that|that's|he|she|they|because|since|as|we|i|i'm|thanks)\b)",
    re.IGNORECASE,
)


def detect_forget(text: str) -> ForgetIntent | ForgetAllIntent | None:
    """A request to delete a memory ("forget that …") or everything ("forget me").

    "forget that" / "forget what I just said" give ``ForgetIntent(target=None)``: the
    caller resolves it against the previous message. "forget it" is a dismissal and
    "don't forget …" a remember request, so neither is a forget.
    """
    for clause in _clauses(text):
        if clause.question and not clause.polite:
            continue
        body = clause.text
        for pattern in _FORGET_ALL:
            match = pattern.match(body)
            if match:
                return ForgetAllIntent(target=_who(match.group("who")))
        if _FORGET_LAST.match(body):
            return ForgetIntent(target=None)
        for pattern in _FORGET_TARGET:
            match = pattern.match(body)
            if match is None:
                continue
            target = _payload(_FORGET_TAIL.split(match.group("t"), maxsplit=1)[0])
            low = target.lower()
            if low in _DISMISSAL or not _has_letters(target):
                return None
            if re.fullmatch(rf"{_WHO_ME}|{_WHO_US}", low):
                return ForgetAllIntent(target=_who(low))
            return ForgetIntent(target=target)
    return None


def _who(word: str | None) -> Literal["me", "us"]:
    if word is None:
        return "me"
    word = word.lower()
    if re.fullmatch(_WHO_US, word) or word == "our":
        return "us"
    return "me"


# --- recall -----------------------------------------------------------------------------------

_RECALL_VERB = (
    r"(?:remember|recall|know|learn(?:ed|t)?|store(?:d)?|save(?:d)?|keep|"
    r"have(?:\s+(?:stored|saved|learned|learnt|noted|on\s+file|in\s+memory|got))?|got)"
)
_RECALL_WHO = rf"(?P<who>{_WHO_ME}|{_WHO_US})"
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
    for clause in _clauses(text):
        for pattern in _RECALL:
            match = pattern.match(clause.text)
            if match:
                who = match.groupdict().get("who")
                return RecallIntent(target=_who(who))
    return None


# --- directives ---------------------------------------------------------------------------

_LANGUAGES: Final = frozenset(
    _words(
        """english spanish french german italian portuguese dutch russian chinese mandarin
    cantonese japanese korean arabic hindi polish swedish norwegian danish finnish greek
    turkish hebrew ukrainian czech romanian hungarian catalan vietnamese thai indonesian
    malay tagalog swahili irish welsh latin esperanto"""
    )
)
_STYLE_ADJ = (
    r"brief|concise|short|succinct|terse|formal|informal|casual|friendly|polite|direct"
    r"|detailed|thorough|funny|serious|professional|gentle|blunt|honest|specific|clear"
)
_STYLE_OBJECT = re.compile(
    r"\b(?:emoji|emoticon|smiley|markdown|bullet|lists?|heading|jargon|slang|abbreviation"
    r"|exclamation|caps|capital|formal|informal|swear|profanit|hashtag|gifs?|stickers?|long"
    r"|short|words?|sentences?|paragraphs?|language|british|american|metric|imperial|celsius"
    r"|fahrenheit|first\s+name|full\s+name|nickname|name|titles?|sir|madam|greetings?"
    r"|sign-?off|signature|tables?|links?|puns?|jokes?)",
    re.IGNORECASE,
)
_NOT_NAMES: Final = frozenset(
    _words(
        """tomorrow later back tonight today when whenever if at on in a an the maybe asap now
    soon sometime anytime after before around by again up once twice every this that it
    crazy lazy stupid silly old-fashioned paranoid weird naive picky whatever anything
    what please if you him her them"""
    )
)
_DIRECTIVE_VERBS = (
    r"use|answer|reply|respond|keep|call|mention|say|send|include|start|end|greet|remind"
    r"|ask|write|talk|speak|give|be|add|sign|tell|format|show|put|address|refer|check"
    r"|confirm|explain|summari[sz]e|suggest|offer|translate|spell|round|list|cite"
)
_FROM_NOW_ON = re.compile(
    r"^(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|henceforth|for\s+the\s+future)"
    r"\s*[,:\-–—]?\s*",
    re.IGNORECASE,
)


def detect_directive(text: str) -> DirectiveIntent | None:
    """A standing instruction: reply language, what to call the user, length, style,
    things to avoid, or any "always/never …" / "from now on, …" imperative.
    """
    for clause in _clauses(text):
        if clause.question and not clause.polite:
            continue
        body = clause.text
        standing = False
        stripped = _FROM_NOW_ON.sub("", body, count=1)
        if stripped != body:
            standing = True
            body = _POLITE.sub("", stripped, count=1)
        if not body or len(body) > MAX_PARSE_CHARS:
            continue
        found = _directive(body, clause, standing=standing)
        if found is not None:
            return found
    return None


def _directive(body: str, clause: _Clause, *, standing: bool) -> DirectiveIntent | None:
    for rule in (_language, _name, _avoid, _length_or_style, _always_never):
        found = rule(body, clause)
        if found is not None:
            return found
    if standing and not re.match(_SELF_START, body, re.IGNORECASE):
        return DirectiveIntent(topic="general", instruction=body)
    return None


def _language(body: str, clause: _Clause) -> DirectiveIntent | None:
    match = re.match(
        r"^(?:(?:always|only)\s+)?(?:answer|reply|respond|talk|speak|write|text|chat)"
        r"(?:\s+(?:to\s+me|me|with\s+me|back))?\s+(?:only\s+)?in\s+(?P<lang>[^\W\d_]+)\b",
        body,
        re.IGNORECASE,
    ) or re.match(
        r"^(?:(?:always|only)\s+)?(?:speak|talk|write)\s+(?P<lang>[^\W\d_]+)"
        r"(?:\s+(?:to|with)\s+me)?$",
        body,
        re.IGNORECASE,
    )
    if match and match.group("lang").lower() in _LANGUAGES:
        return DirectiveIntent(
            topic="language", instruction=body, value=match.group("lang").capitalize()
        )
    return None


def _name(body: str, clause: _Clause) -> DirectiveIntent | None:
    explicit = re.match(
        r"^(?:you\s+(?:can|may|should)\s+call\s+me|i\s+(?:prefer\s+to\s+be|like\s+to\s+be|"
        r"'d\s+like\s+to\s+be|would\s+like\s+to\s+be|want\s+to\s+be)\s+called|i\s+go\s+by)"
        r"\s+(?P<name>.+)$",
        body,
        re.IGNORECASE,
    )
    plain = re.match(r"^(?:just\s+)?call\s+me\s+(?P<name>.+)$", body, re.IGNORECASE)
    avoid = re.match(
        rf"^(?:{_DONT}|never|stop)\s+call(?:ing)?\s+me\s+(?P<name>.+)$", body, re.IGNORECASE
    )
    match = explicit or plain or avoid
    if match is None:
        return None
    name = _payload(match.group("name"))
    quoted = match.group("name").strip()[:1] in {'"', "'"}
    words = name.split()
    if not words or len(words) > 3 or words[0].lower() in _NOT_NAMES:
        return None
    if not (quoted or words[0][0].isupper() or explicit or clause.polite or avoid):
        return None
    if not all(_has_letters(w) for w in words):
        return None
    return DirectiveIntent(topic="avoid" if avoid else "name", instruction=body, value=name)


_AVOID = re.compile(
    rf"^(?:please\s+)?(?:{_DONT}(?:\s+ever)?|never|stop|quit|avoid|no\s+more)\s+"
    r"(?P<verb>use|using|send|sending|add|adding|include|including|put|putting|mention|mentioning"
    r"|say|saying|talk(?:ing)?\s+about|bring(?:ing)?\s+up|swear(?:ing)?|curs(?:e|ing)|be|being"
    r"|ask(?:ing)?(?:\s+me)?(?:\s+about)?|remind(?:ing)?\s+me\s+(?:of|about))\b\s*(?P<obj>.*)$",
    re.IGNORECASE | re.S,
)
_NO_X = re.compile(
    r"^no\s+(?P<obj>emojis?|emoticons|smileys|swearing|jokes|puns|markdown|bullet\s+points"
    r"|lists|small\s+talk|exclamation\s+marks?|gifs|stickers|long\s+(?:answers|messages|replies))$",
    re.IGNORECASE,
)


def _avoid(body: str, clause: _Clause) -> DirectiveIntent | None:
    no_x = _NO_X.match(body)
    if no_x:
        return DirectiveIntent(topic="avoid", instruction=body, value=no_x.group("obj"))
    match = _AVOID.match(body)
    if match is None:
        return None
    verb = match.group("verb").lower()
    obj = _payload(match.group("obj"))
    if verb.startswith(("swear", "curs")):
        return DirectiveIntent(topic="avoid", instruction=body, value=obj or "swearing")
    if not obj or obj.lower() in _NOT_A_PAYLOAD | {"why", "how", "what", "when", "so"}:
        return None
    content_verbs = ("use", "send", "add", "includ", "put", "be")
    if verb.startswith(content_verbs) and not (
        _STYLE_OBJECT.search(obj) or re.match(rf"(?:so\s+)?(?:{_STYLE_ADJ})\b", obj, re.I)
    ):
        return None
    return DirectiveIntent(topic="avoid", instruction=body, value=obj)


_LENGTH_WORDS = re.compile(
    r"\b(?:short(?:er|ly)?|brief(?:er|ly)?|concise(?:ly)?|succinct(?:ly)?|terse|long(?:er)?"
    r"|detailed|fewer|"
    r"one\s+line|a\s+few\s+words|under\s+\d+|to\s+the\s+point)\b",
    re.IGNORECASE,
)
_STYLE_RULES: Final = (
    re.compile(
        r"^(?:(?:always|please)\s+)?keep\s+(?:your\s+|the\s+|my\s+)?(?:answers?|replies|reply"
        r"|responses?|messages?|texts?|it|things)\s+(?P<v>.+)$",
        re.IGNORECASE,
    ),
    re.compile(
        rf"^(?:(?:always|please)\s+)?be\s+(?:a\s+(?:bit|little)\s+)?(?:more\s+|less\s+|very\s+|extra\s+)?"
        rf"(?P<v>(?:{_STYLE_ADJ})\b.*)$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:(?:always|please)\s+)?(?:use|give\s+me|write)\s+"
        r"(?P<v>(?:shorter|longer|short|long|brief|detailed|simple|simpler|fewer|more|less|no)"
        r"\s+(?:answers|replies|responses|messages|words|sentences|paragraphs|text|emojis?"
        r"|jargon|bullet\s+points|lists))$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:(?:always|please)\s+)?use\s+(?P<v>(?:bullet\s+points|lists?|markdown|metric"
        r"|imperial|celsius|fahrenheit|british|american|24-hour|12-hour|emojis?|my\s+(?:first\s+|"
        r"full\s+)?name|formal|informal|plain|simple)\b.*)$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:(?:always|please)\s+)?(?:answer|reply|respond|write)\s+(?:more\s+|less\s+)?"
        r"(?P<v>briefly|concisely|shortly|formally|informally|casually|politely|directly"
        r"|in\s+(?:short|one|a\s+few|bullet|plain|simple|full)\b.*"
        r"|in\s+(?:under\s+)?\d+\s+\w+.*)$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^i(?:'d|\s+would)?\s+(?:prefer|like|want|need)\s+(?P<v>(?:much\s+)?(?:short|shorter|brief"
        r"|briefer|concise|long|longer|detailed|simple|simpler)\s+(?:answers|replies|responses"
        r"|messages))$",
        re.IGNORECASE,
    ),
)


def _length_or_style(body: str, clause: _Clause) -> DirectiveIntent | None:
    for pattern in _STYLE_RULES:
        match = pattern.match(body)
        if match is None:
            continue
        value = _payload(match.group("v"))
        if pattern is _STYLE_RULES[0] and not (
            _LENGTH_WORDS.search(value)
            or re.match(rf"(?:{_STYLE_ADJ}|simple|sweet)\b", value, re.I)
        ):
            return None
        topic: DirectiveTopic = "length" if _LENGTH_WORDS.search(value) else "style"
        return DirectiveIntent(topic=topic, instruction=body, value=value)
    return None


def _always_never(body: str, clause: _Clause) -> DirectiveIntent | None:
    match = re.match(
        rf"^(?P<adv>always|never)\s+(?:(?:{_DIRECTIVE_VERBS})\b)\s*(?P<rest>.+)$",
        body,
        re.IGNORECASE,
    )
    if match is None:
        return None
    topic: DirectiveTopic = "avoid" if match.group("adv").lower() == "never" else "general"
    return DirectiveIntent(topic=topic, instruction=body)


# --- corrections ------------------------------------------------------------------------------

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
    clauses = _clauses(text, retraction=False)
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
            rest = _payload(next((g for g in match.groups() if g), ""))
            if not rest and cue != "actually":
                rest = _next_statement(clauses, index)
            if cue == "actually" and len(rest.split()) < 2:
                break
            if cue == "i meant" and re.match(r"^to\s", rest, re.I):
                break
            statement, negated = _split_negation(rest) if rest else (None, None)
            return CorrectionIntent(statement=statement, negated=negated, cue=cue)
        found = _implicit_correction(body)
        if found is not None:
            return found
    return None


def _next_statement(clauses: list[_Clause], index: int) -> str:
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
_CHANGED = re.compile(r"\b(?:has|have)\s+changed\b|\bchanged\s+(?:to|from)\b", re.IGNORECASE)
_ANYMORE = re.compile(
    r"(?:\b(?:not|never)\b|n't\b).*\bany\s?(?:more|longer)\b|\bno\s+longer\b", re.IGNORECASE
)


_DUMMY_SUBJECT = re.compile(
    r"^(?:it|it's|that|that's|this|there|there's|things|nothing|everything)\b", re.IGNORECASE
)


def _implicit_correction(body: str) -> CorrectionIntent | None:
    if len(body) > MAX_PARSE_CHARS:
        return None
    used = _USED_TO.match(body)
    if used:
        subject, old, new = used.group("subj"), used.group("old"), _payload(used.group("new"))
        was = f"{subject} {_conjugate_for(subject, old)}"
        if not new or _STOPPED.match(new):
            return CorrectionIntent(
                statement=f"{subject} no longer {_conjugate_for(subject, old)}",
                negated=was,
                cue="used to",
            )
        if not _SUBJECT_START.match(new):
            new = f"{subject} {new}"
        return CorrectionIntent(statement=new, negated=was, cue="used to")
    # Only when what stopped being true can be read back ("I'm not vegan anymore" →
    # "I'm vegan"); "I can't wait anymore" is a mood, not a correction.
    # Dummy subjects ("it doesn't matter anymore") are not about anyone either.
    statement, negated = _split_negation(body)
    if negated is not None and not _DUMMY_SUBJECT.match(negated):
        cue = "not anymore" if _ANYMORE.search(body) else "not"
        return CorrectionIntent(statement=statement, negated=negated, cue=cue)
    if _CHANGED.search(body) and re.search(r"\b(?:my|our|i|we)\b", body, re.IGNORECASE):
        return CorrectionIntent(statement=body, cue="has changed")
    return None


_COPULA_NEG = re.compile(
    r"^(?P<a>.*?)\b(?P<cop>am|'m|is|'s|are|'re|was|were)\s+(?:not|no\s+longer)\s+(?P<b>.+?)"
    r"(?:\s+any\s?(?:more|longer))?$",
    re.I | re.S,
)
_COPULA_NT = re.compile(
    r"^(?P<a>.*?)\b(?P<cop>is|are|was|were)n'?t\s+(?P<b>.+?)(?:\s+any\s?(?:more|longer))?$",
    re.I | re.S,
)
_DO_NEG = re.compile(
    r"^(?P<a>.*?)\b(?P<aux>don'?t|do\s+not|doesn'?t|does\s+not|never)\s+(?P<b>.+?)"
    r"\s+any\s?(?:more|longer)$",
    re.I | re.S,
)
_NO_LONGER = re.compile(r"^(?P<a>.*?)\bno\s+longer\s+(?P<b>.+)$", re.I | re.S)
# "X, not Y": found with rfind rather than a nested lazy pattern, which would backtrack
# cubically on long sentences.
_NOT_Y_TAIL = re.compile(r",\s*(?:and\s+)?not\s+(?P<y>[^,]+)$", re.IGNORECASE)
_NOT_Y_VERB = re.compile(
    r"\S\s*\b(?:is|are|am|'m|'s|was|were|like|love|prefer|live|work|want)\b\s*\S", re.IGNORECASE
)
_ANCHOR_WORDS = re.compile(
    r"\b(?:is|are|am|'m|'s|was|were|to|in|at|on|for|as|with|of|by|from|called|named)\b",
    re.IGNORECASE,
)


def _split_negation(text: str) -> tuple[str, str | None]:
    """(what is true now, what stopped being true) for a statement, where parseable.

    "my mom's name is Sarah, not Susan" → ("my mom's name is Sarah", "my mom's name is
    Susan"); "I'm not vegetarian anymore" → (unchanged, "I'm vegetarian"); "Bob doesn't eat
    meat anymore" → (unchanged, "Bob eats meat").
    """
    if len(text) > MAX_PARSE_CHARS:
        return text, None
    comma = text.rfind(",")
    not_y = _NOT_Y_TAIL.match(text, comma) if comma > 0 else None
    if not_y and len(not_y.group("y").split()) <= 4 and _NOT_Y_VERB.search(text[:comma]):
        statement = text[:comma].strip()
        return statement, _replace_tail(statement, not_y.group("y").strip())
    if not _ANYMORE.search(text):
        return text, None
    for pattern in (_COPULA_NEG, _COPULA_NT):
        match = pattern.match(text)
        if match:
            cop = match.group("cop")
            joiner = "" if cop.startswith("'") else " "
            head = match.group("a").rstrip() if joiner == "" else match.group("a")
            return text, _tidy(f"{head}{joiner}{cop} {match.group('b')}")
    do = _DO_NEG.match(text)
    if do:
        aux = do.group("aux").lower()
        verb_phrase = do.group("b")
        if aux.startswith("does") or aux.startswith("doesn"):
            verb_phrase = _conjugate_first(verb_phrase)
        elif aux == "never":
            verb_phrase = _conjugate_for(do.group("a").strip(), verb_phrase)
        return text, _tidy(f"{do.group('a')}{verb_phrase}")
    longer = _NO_LONGER.match(text)
    if longer:
        tail = re.sub(r"\s+any\s?(?:more|longer)$", "", longer.group("b"), flags=re.I)
        return text, _tidy(f"{longer.group('a')}{tail}")
    return text, None


def _replace_tail(statement: str, replacement: str) -> str:
    """``statement`` with what follows its last anchor word ("is", "to", "in" …) replaced."""
    anchors = list(_ANCHOR_WORDS.finditer(statement))
    if anchors:
        cut = anchors[-1].end()
        return _tidy(f"{statement[:cut]} {replacement}")
    words = statement.split()
    keep = max(1, len(words) - len(replacement.split()))
    return _tidy(" ".join([*words[:keep], replacement]))


def _tidy(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


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
_UNCHANGED_VERBS: Final = _words(
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


def _conjugate_first(phrase: str) -> str:
    head, _, tail = phrase.strip().partition(" ")
    return f"{third_person_singular(head)} {tail}".strip()


def _is_third_singular(subject: str) -> bool:
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


def _conjugate_for(subject: str, phrase: str) -> str:
    """The verb phrase agreeing with ``subject`` (only third-person singular changes)."""
    if _is_third_singular(subject):
        return _conjugate_first(phrase)
    return phrase.strip()


# --- ambiguous references -------------------------------------------------------------------

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
    _words(
        """the she he they we it i yesterday today tonight tomorrow so and but apparently also
    then when now my our your her his their this that there what why how who where did does
    do is are was were will would can could should please ok okay oh"""
    )
)
_PRONOUN_POSSESSIVE = re.compile(
    rf"\b(?P<ref>(?:his|her|their)\s+(?:{_PERSON_NOUNS}))\b", re.IGNORECASE
)
_DETERMINERS: Final = frozenset(
    _words(
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


# --- everything at once -----------------------------------------------------------------------


def detect_intent(text: str) -> Intent | None:
    """The first memory intent of ``text``, by priority, or None.

    Order: forget (most consequential, and "forget that …" must not be read as a
    statement), recall, remember, directive, correction ("actually, call me Al" is a
    directive; "actually, I'm vegan" a correction).
    """
    if not text or not text.strip():
        return None
    forget = detect_forget(text)
    if forget is not None:
        return forget
    found: Intent | None = detect_recall(text) or detect_remember(text)
    if found is not None:
        return found
    return detect_directive(text) or detect_correction(text)
