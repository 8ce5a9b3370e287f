"""Directives: standing instructions on how Alfred should answer this user.

Reply language, what to call the user, length, style, things to avoid, and any
"always/never …" or "from now on, …" imperative; and their withdrawal ("you can use
emojis again", "you don't have to keep it short anymore"). :func:`directive_echo` says
an instruction back in the second person ("I'll call you Robert"), and
:func:`directive_matches` decides which stored instruction a withdrawal or a "forget
that …" is about.
"""

from __future__ import annotations

import re
from typing import Final

from memory.rules.intents.clause import (
    DONT,
    NOT_A_PAYLOAD,
    POLITE,
    SELF_START,
    Clause,
    clean_payload,
    has_letters,
    sentence_clauses,
)
from memory.rules.intents.kinds import DirectiveIntent, DirectiveTopic
from memory.rules.text import MAX_PARSE_CHARS, word_set

_LANGUAGES: Final = frozenset(
    word_set(
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
    word_set(
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
    things to avoid, or any "always/never …" / "from now on, …" imperative; or the
    withdrawal of one (``revoke=True``).
    """
    for clause in sentence_clauses(text):
        if clause.question and not clause.polite:
            continue
        body = clause.text
        if len(body) <= MAX_PARSE_CHARS:
            withdrawn = _revoke(body)
            if withdrawn is not None:
                return withdrawn
        standing = False
        stripped = _FROM_NOW_ON.sub("", body, count=1)
        if stripped != body:
            standing = True
            body = POLITE.sub("", stripped, count=1)
        if not body or len(body) > MAX_PARSE_CHARS:
            continue
        found = _directive(body, clause, standing=standing)
        if found is not None:
            return found
    return None


def _directive(body: str, clause: Clause, *, standing: bool) -> DirectiveIntent | None:
    for rule in (_language, _name, _avoid, _length_or_style, _always_never):
        found = rule(body, clause)
        if found is not None:
            return found
    if standing and not re.match(SELF_START, body, re.IGNORECASE):
        return DirectiveIntent(topic="general", instruction=body)
    return None


def _language(body: str, clause: Clause) -> DirectiveIntent | None:
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


def _name(body: str, clause: Clause) -> DirectiveIntent | None:
    explicit = re.match(
        r"^(?:you\s+(?:can|may|should)\s+call\s+me|i\s+(?:prefer\s+to\s+be|like\s+to\s+be|"
        r"'d\s+like\s+to\s+be|would\s+like\s+to\s+be|want\s+to\s+be)\s+called|i\s+go\s+by)"
        r"\s+(?P<name>.+)$",
        body,
        re.IGNORECASE,
    )
    plain = re.match(r"^(?:just\s+)?call\s+me\s+(?P<name>.+)$", body, re.IGNORECASE)
    avoid = re.match(
        rf"^(?:{DONT}|never|stop)\s+call(?:ing)?\s+me\s+(?P<name>.+)$", body, re.IGNORECASE
    )
    match = explicit or plain or avoid
    if match is None:
        return None
    name = _UNTIL_NOW.sub("", clean_payload(match.group("name"))).strip()
    quoted = match.group("name").strip()[:1] in {'"', "'"}
    words = name.split()
    if not words or len(words) > 3 or words[0].lower() in _NOT_NAMES:
        return None
    if not (quoted or words[0][0].isupper() or explicit or clause.polite or avoid):
        return None
    if not all(has_letters(w) for w in words):
        return None
    return DirectiveIntent(topic="avoid" if avoid else "name", instruction=body, value=name)


_AVOID = re.compile(
    rf"^(?:please\s+)?(?:{DONT}(?:\s+ever)?|never|stop|quit|avoid|no\s+more)\s+"
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


def _avoid(body: str, clause: Clause) -> DirectiveIntent | None:
    no_x = _NO_X.match(body)
    if no_x:
        return DirectiveIntent(topic="avoid", instruction=body, value=no_x.group("obj"))
    match = _AVOID.match(body)
    if match is None:
        return None
    verb = match.group("verb").lower()
    obj = clean_payload(match.group("obj"))
    if verb.startswith(("swear", "curs")):
        return DirectiveIntent(topic="avoid", instruction=body, value=obj or "swearing")
    if not obj or obj.lower() in NOT_A_PAYLOAD | {"why", "how", "what", "when", "so"}:
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


def _length_or_style(body: str, clause: Clause) -> DirectiveIntent | None:
    for pattern in _STYLE_RULES:
        match = pattern.match(body)
        if match is None:
            continue
        value = clean_payload(match.group("v"))
        if pattern is _STYLE_RULES[0] and not (
            _LENGTH_WORDS.search(value)
            or re.match(rf"(?:{_STYLE_ADJ}|simple|sweet)\b", value, re.I)
        ):
            return None
        topic: DirectiveTopic = "length" if _LENGTH_WORDS.search(value) else "style"
        return DirectiveIntent(topic=topic, instruction=body, value=value)
    return None


def _always_never(body: str, clause: Clause) -> DirectiveIntent | None:
    match = re.match(
        rf"^(?P<adv>always|never)\s+(?:(?:{_DIRECTIVE_VERBS})\b)\s*(?P<rest>.+)$",
        body,
        re.IGNORECASE,
    )
    if match is None:
        return None
    topic: DirectiveTopic = "avoid" if match.group("adv").lower() == "never" else "general"
    return DirectiveIntent(topic=topic, instruction=body)


# --- withdrawing an instruction ---------------------------------------------------------

#: "… anymore", "… again", "… now": when, not what (never part of a name or an object).
_UNTIL_NOW = re.compile(r"\s+(?:any\s*more|again|now|from\s+now\s+on|please)$", re.IGNORECASE)
_REVOKE_RULES: Final = (
    # "you can use emojis again", "feel free to swear again", "go ahead and use lists again"
    re.compile(
        r"^(?:you\s+(?:can|may|could|are\s+allowed\s+to)|feel\s+free\s+to"
        r"|it'?s\s+(?:ok|okay|fine|alright|all\s+right)\s+(?:to|if\s+you)|go\s+ahead\s+and"
        r"|(?:you\s+can\s+)?start)\s+(?:\w+ing\s+|\w+\s+)?(?P<what>.+?)\s+again$",
        re.IGNORECASE,
    ),
    # "use emojis again" (after "please", "can you")
    re.compile(r"^(?:use|send|add|include|mention)\s+(?P<what>.+?)\s+again$", re.IGNORECASE),
    # "you don't have to keep your answers short anymore", "no need to avoid emojis"
    re.compile(
        r"^(?:(?:you\s+(?:don'?t|do\s+not|no\s+longer)\s+(?:have|need)\s+to|no\s+need\s+to)"
        r"\s+(?:avoid(?:ing)?\s+|keep(?:ing)?\s+)?|(?:you\s+can\s+stop|stop|quit)\s+"
        r"(?:avoiding|keeping)\s+)(?P<what>.+?)(?:\s+(?:any\s*more|now))?$",
        re.IGNORECASE,
    ),
    # "emojis are fine again", "swearing is ok now"
    re.compile(
        r"^(?P<what>[\w\s'-]+?)\s+(?:are|is)\s+(?:ok|okay|fine|allowed|alright|all\s+right)"
        r"\s+(?:again|now)$",
        re.IGNORECASE,
    ),
    # "cancel my instruction about emojis", "drop the rule about short answers"
    re.compile(
        r"^(?:cancel|drop|scrap|ignore|undo|withdraw|lift|remove)\s+(?:my|that|the|your)\s+"
        r"(?:last\s+)?(?:instruction|rule|directive|request|ban)\s+(?:about|on|against|to)\s+"
        r"(?P<what>.+)$",
        re.IGNORECASE,
    ),
)


def _revoke(body: str) -> DirectiveIntent | None:
    for number, pattern in enumerate(_REVOKE_RULES):
        match = pattern.match(body)
        if match is None:
            continue
        what = clean_payload(match.group("what"))
        if not what or not has_letters(what) or what.lower() in NOT_A_PAYLOAD:
            continue
        name = re.match(r"^(?:call(?:ing)?\s+)?me\s+(?P<name>.+)$", what, re.IGNORECASE)
        if name is not None:
            return None  # "you can call me Al again" is a (new) name, handled as one
        if number in (0, 1, 3) and not (_STYLE_OBJECT.search(what) or _words(what) & _LANGUAGES):
            continue  # "you can come again" is no withdrawal of how Alfred answers
        topic: DirectiveTopic = "language" if _words(what) & _LANGUAGES else "avoid"
        return DirectiveIntent(topic=topic, instruction=body, value=what, revoke=True)
    return None


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[^\W\d_]+", text)}


#: Words of an instruction that say how, not what: ignored when matching two of them.
_HOW_WORDS: Final = frozenset(
    word_set(
        """use using send sending add adding include including put putting mention mentioning say
    saying talk talking about bring bringing up be being ask asking remind reminding of me my
    you your i i'm don't dont do not never always stop quit avoid avoiding no more any anymore
    again now please keep keeping want wants like would should can could answer answers reply
    replies respond responses write writing speak speaking call calling messages message it so
    the a an to in with from on that this instruction rule directive request ban"""
    )
)
#: A "forget that …" about an instruction, not a fact ("forget that I don't want emojis").
_ABOUT_AN_INSTRUCTION = re.compile(
    r"\b(?:want|don'?t|do\s+not|no|never|always|call|use|answer|repl|respond|speak|avoid|keep"
    r"|should|instruction|rule|asked|told\s+you)\b",
    re.IGNORECASE,
)


def _key_terms(text: str) -> set[str]:
    """The content words of an instruction, singular ("emojis" and "emoji" are one)."""
    return {w.removesuffix("ing").rstrip("s") or w for w in _words(text) - _HOW_WORDS}


def directive_matches(
    asked: str, topic: str, value: str | None, instruction: str, *, forgetting: bool = False
) -> bool:
    """Whether ``asked`` (a withdrawal's object, or the target of "forget that …") is about
    a stored instruction of ``topic``. Every key word of the stored instruction must be
    named, so "forget that I like short stories" leaves "keep your answers short" alone
    (it does not read as an instruction at all)."""
    if forgetting and not _ABOUT_AN_INSTRUCTION.search(asked):
        return False
    named = _key_terms(asked)
    if topic == "language" and named & _LANGUAGES:
        return not forgetting or bool(value and value.lower() in named)
    stored = _key_terms(value or "") or _key_terms(instruction)
    return bool(stored) and stored <= named


#: How background formation words an instruction it learned from a message Alfred did not
#: act on (:func:`memory.rules.tasks.reflect.render_directive`; a model is asked for the
#: same shapes): "Alice's instruction to Alfred: no emojis.", "Alice wants to be called
#: Al.", "Alice wants Alfred to reply in Spanish.", "Alice wants short answers from Alfred."
_LEARNED: Final = (
    ("name", re.compile(r"\bwants\s+to\s+be\s+called\s+(?P<v>.+?)\.?$", re.I)),
    ("language", re.compile(r"\bwants\s+Alfred\s+to\s+reply\s+in\s+(?P<v>\w+)", re.I)),
    ("length", re.compile(r"\bwants\s+(?P<v>\w+)\s+answers\s+from\s+Alfred\b", re.I)),
    ("general", re.compile(r"\binstruction\s+to\s+Alfred\s*:\s*(?P<v>.+?)\.?$", re.I)),
)


def learned_instruction(note: str) -> tuple[str, str] | None:
    """(topic, what) of a note that records an instruction, or ``None``."""
    for topic, pattern in _LEARNED:
        match = pattern.search(note)
        if match is not None:
            return topic, match.group("v").strip()
    return None


# --- saying it back -------------------------------------------------------------------

_SWAP: Final = {
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i": "you",
    "i'm": "you're",
    "i've": "you've",
    "i'd": "you'd",
    "am": "are",
    "you": "me",
    "your": "my",
    "yours": "mine",
    "yourself": "myself",
}
_BASE: Final = {
    "using": "use",
    "sending": "send",
    "adding": "add",
    "including": "include",
    "putting": "put",
    "mentioning": "mention",
    "saying": "say",
    "talking": "talk",
    "bringing": "bring",
    "swearing": "swear",
    "cursing": "curse",
    "being": "be",
    "asking": "ask",
    "reminding": "remind",
    "calling": "call",
}


def second_person(text: str) -> str:
    """``text`` said back to its speaker: "me"/"my" become "you"/"your" and back."""

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        return _SWAP.get(word.lower(), word)

    return re.sub(r"\b[A-Za-z]+(?:'[a-z]+)?\b", swap, text)


def directive_echo(intent: DirectiveIntent) -> str:
    """The instruction said back, in the second person: "I'll call you Robert.",
    "I won't use emojis.", "I'll always keep my answers short." """
    value = intent.value or ""
    if intent.topic == "name":
        return f"I'll call you {value}."
    if intent.topic == "language":
        return f"I'll answer you in {value}."
    body = intent.instruction.strip().rstrip(".!")
    if intent.topic == "avoid":
        if re.match(rf"^(?:{DONT}|never|stop)\s+call(?:ing)?\s+me\b", body, re.IGNORECASE):
            return f"I won't call you {value}."
        if _NO_X.match(body):
            return f"I won't use {second_person(value)}."
        rest = re.sub(
            rf"^(?:please\s+)?(?:{DONT}(?:\s+ever)?|never|stop|quit|avoid|no\s+more)\s+",
            "",
            body,
            flags=re.IGNORECASE,
        )
        first, _, tail = rest.partition(" ")
        verb = _BASE.get(first.lower(), first)
        return f"I won't {second_person(f'{verb} {tail}'.strip())}."
    said = second_person(body)
    if re.match(r"^you\b", said, re.IGNORECASE):  # "I prefer short answers"
        return f"I'll give you {second_person(value)}." if value else "I'll do that."
    return f"I'll {said[:1].lower()}{said[1:]}."
