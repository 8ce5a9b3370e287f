"""First person to third person: "I'm allergic to peanuts" (Alice) → "Alice is allergic to
peanuts".

Facts and reflections must stand alone months later, in any thread, so "I", "my", "we"
are replaced by names (DESIGN.md §2). The wording chosen for "we":

* in a group, the members by name — "we love hiking" → "Alice and Bob love hiking" — which
  keeps the plural verb agreement of the original and says exactly who is meant; with no
  (or too many) known names, "The group members";
* in a DM, "we" cannot be the circle (DESIGN.md §3), so it becomes "Alice and others" (a
  plural that keeps the verb as said) and "our" becomes "Alice's".

Only English pronouns are rewritten; callers check :func:`looks_english` first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from memory.models import ThreadKind
from memory.prompts.common import Person
from memory.rules.verbs import third_person_singular

#: Up to this many members are named in a group "we"; more reads as a list, not a subject.
MAX_NAMED_MEMBERS: Final = 4
GROUP_FALLBACK: Final = "The group members"


@dataclass(frozen=True)
class Voice:
    """How to name the speaker, and the speaker's "we", in third person."""

    name: str
    group: str
    group_possessive: str

    @classmethod
    def for_speaker(
        cls, name: str, thread_kind: ThreadKind, people: list[Person] | None = None
    ) -> Voice:
        """The voice of ``name`` speaking in a thread of ``thread_kind`` among ``people``."""
        if thread_kind is not ThreadKind.GROUP:
            return cls(name=name, group=f"{name} and others", group_possessive=f"{name}'s")
        names: list[str] = []
        for person in people or []:
            if person.name and person.name not in names:
                names.append(person.name)
        if name not in names:
            names.insert(0, name)
        if 2 <= len(names) <= MAX_NAMED_MEMBERS:
            group = join_names(names)
            return cls(name=name, group=group, group_possessive=f"{group}'s")
        return cls(name=name, group=GROUP_FALLBACK, group_possessive=f"{GROUP_FALLBACK}'")


def join_names(names: list[str]) -> str:
    """ "Alice", "Alice and Bob", "Alice, Bob and Carol"."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


_ADVERBS = (
    r"really|also|usually|always|never|just|still|absolutely|totally|actually|currently|now"
    r"|definitely|truly|often|sometimes|mostly|generally|honestly|rarely|seriously|kind\s+of"
    r"|sort\s+of|no\s+longer|even|only|already|recently|finally|strongly|much|so"
)
_I_CONTRACTIONS: Final = (
    (re.compile(r"\bi'?m\b", re.IGNORECASE), "is"),
    (re.compile(r"\bi\s+am\b", re.IGNORECASE), "is"),
    (re.compile(r"\bi've\b", re.IGNORECASE), "has"),
    (re.compile(r"\bi'd\b", re.IGNORECASE), "would"),
    (re.compile(r"\bi'll\b", re.IGNORECASE), "will"),
)
_I_VERB = re.compile(
    rf"\bi\b(?P<adv>(?:\s+(?:{_ADVERBS}))*)\s+(?P<verb>[a-z][\w'-]*)", re.IGNORECASE
)
_LONE_I = re.compile(r"\bi\b", re.IGNORECASE)
_WE_CONTRACTIONS: Final = (
    (re.compile(r"\bwe're\b", re.IGNORECASE), "are"),
    (re.compile(r"\bwe've\b", re.IGNORECASE), "have"),
    (re.compile(r"\bwe'll\b", re.IGNORECASE), "will"),
    (re.compile(r"\bwe'd\b", re.IGNORECASE), "would"),
)
_DETERMINERS: Final = frozenset({"my", "our", "his", "her", "their", "the", "your", "a", "an"})


def to_third_person(text: str, voice: Voice) -> str:
    """``text`` with the speaker's first-person words replaced by names.

    "I love" → "Alice loves" (verb agreement), "Bob and I love" → "Bob and Alice love"
    (coordinated: plural stays), "my"/"mine" → "Alice's", "me" → "Alice", "myself" →
    "themselves" ("I'll tell Bob myself" is not "… tell Bob Alice"), "we"/"us" → the
    voice's group, "our"/"ours" → its possessive. "US" (the country) is left alone.
    """
    name = voice.name
    # "I'm Maya, I run the studio": the introduction would read "Maya is Maya". Said alone
    # it is kept as said ("remember that I'm Maya" is stored, as the person was told).
    rest = _without_introduction(text, name)
    if rest:
        text = rest
    for pattern, verb in _I_CONTRACTIONS:
        text = pattern.sub(f"{name} {verb}", text)
    text = _I_VERB.sub(lambda m: _i_with_verb(m, name), text)
    text = _LONE_I.sub(name, text)
    text = re.sub(r"\bmyself\b", "themselves", text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?:my|mine)\b", f"{name}'s", text, flags=re.IGNORECASE)
    text = re.sub(r"\bme\b", name, text, flags=re.IGNORECASE)
    for pattern, verb in _WE_CONTRACTIONS:
        text = pattern.sub(f"{voice.group} {verb}", text)
    text = re.sub(r"\bourselves\b", "themselves", text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?:our|ours)\b", voice.group_possessive, text, flags=re.IGNORECASE)
    text = re.sub(r"\bwe\b", voice.group, text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?:us|Us)\b", voice.group, text)
    return text[:1].upper() + text[1:] if text else text


@lru_cache(maxsize=256)
def _introduction(name: str) -> re.Pattern[str]:
    """ "Hi! I'm <name>, …" / "my name is <name> and …" at the start of a line."""
    return re.compile(
        rf"^(?:hi|hello|hey)?[\s,!]*(?:i'?m|i\s+am|my\s+name\s+is|this\s+is)\s+{re.escape(name)}"
        r"\b(?=\s*(?:[,.;!]|and\b|$))(?:\s*[,.;!])?(?:\s*and\b)?\s*",
        re.IGNORECASE,
    )


def _without_introduction(text: str, name: str) -> str:
    """``text`` after the speaker's introduction of themselves; empty if that is all."""
    rest = _introduction(name).sub("", text)
    return rest if rest.strip(" ,.;!") else ""


def only_introduces(text: str, voice: Voice) -> bool:
    """Whether ``text`` only says who the speaker is ("Hi! I'm Maya."): a note of it
    would read "Maya is Maya"."""
    return not _without_introduction(text, voice.name)


def _i_with_verb(match: re.Match[str], name: str) -> str:
    adverbs, verb = match.group("adv"), match.group("verb")
    if _coordinated(match.string[: match.start()]):
        return f"{name}{adverbs} {verb}"
    return f"{name}{adverbs} {third_person_singular(verb)}"


def _coordinated(before: str) -> bool:
    """Whether the "I" after ``before`` is part of a plural subject ("my sister and I")."""
    words = re.findall(r"[\w'-]+|[,.;:!?]", before)
    if len(words) < 2 or words[-1].lower() not in {"and", "or"}:
        return False
    previous = words[-2]
    if previous[:1].isupper() and previous.lower() not in {"i"}:
        return True
    window = [w.lower() for w in words[-4:-1]]
    return any(w in _DETERMINERS for w in window) or previous.lower() in {"you", "he", "she"}


def uses_group(text: str) -> bool:
    """Whether ``text`` opens with a first-person plural subject ("we", "our …", "us")."""
    return (
        re.match(r"^(?:we|we're|we've|we'll|we'd|our|us|ours)\b", text, re.IGNORECASE) is not None
    )
