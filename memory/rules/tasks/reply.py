"""The reply without a model: what the offline provider says when asked to chat.

It cannot read a conversation, so it must not pretend to. Given the structured reply
context (:class:`memory.prompts.reply.ReplyContext`) it answers a question from the
memories retrieval found, citing them, and says plainly that it runs offline when it
cannot do better. It never claims to have stored anything, because a reply stores
nothing: a statement gets an honest "I can't chat about that" with the way to have it
remembered, an acknowledgement ("ok thanks", "cool") a short answer, a request to forget that the
rules could not read ("forget Hana") the way to ask, and a greeting a short introduction
to what works offline. (Explicit requests never reach it: the reply path
handles them, and only they say "Noted"/"I'll remember that", after storing.)

Proactive partner context (seed 004 §18.2): in a group, a question or a plan that names a
member ("any ideas for dinner with Bob tonight?"), or a plan made together ("what should
we do this weekend?"), is answered with what those members shared there, each said to be
theirs ("From what Bob has shared here: …"). Only memories retrieval found, above its
relevance floor, are offered, and retrieval shows a group only what is visible in it.

A question no memory answers by a keyword is answered from the notes kept in mind in
that chat when one shares a keyword with it (the always-in-context block, built through
the privacy filter for this viewer). A line formation has not reached yet is cited in
its author's words, in quotes ('Bob said: "I parked on level 3"'): its "I" is Bob's, not
Alfred's or the reader's.
"""

from __future__ import annotations

import re
from typing import Final

from memory.models import ThreadKind
from memory.prompts.common import Person
from memory.prompts.reply import CitedMemory, ReplyContext, ReplyRequest, local_now
from memory.rules.addressing import strip_addressing
from memory.rules.partners import (
    is_joint_plan,
    mentions_plan,
    named_members,
    states_preference,
)
from memory.rules.statements import QUESTION_WORDS
from memory.search.recent import DELETE_REQUEST
from memory.search.related import covers
from memory.search.text import tokenize

#: Words that address Alfred rather than ask about anything.
_ADDRESSING: Final = frozenset(tokenize("alfred remind tell know remember idea forgot"))

NO_MEMORY: Final = (
    "I don't know — I have nothing about that in what I remember here. "
    "(I'm running offline, without a language model, so I can only answer from memory.)"
)
GREETING: Final = (
    "Hello! I'm running offline (no language model), so I can't chat, but I can remember "
    'things ("remember that …"), correct or forget them, and tell you what I remember.'
)
#: The answer to a statement: nothing was stored by replying, so nothing is claimed; but
#: formation reads the line later, so the person is not told it will be lost either.
OFFLINE_STATEMENT: Final = (
    "I can't chat about that: I'm running offline, without a language model. "
    "I may still learn from it in the background; to be sure I keep something, "
    'say "remember that …".'
)
#: The answer to a request to forget that the rules could not read ("forget Hana"): a bare
#: name may be a change of plan ("forget Paris") as much as a deletion, so it is not acted
#: on, and the person is told how to ask.
FORGET_HOW: Final = (
    'I\'m not sure what to forget. Say "forget that …" with the memory itself, or '
    '"forget about …" with what it concerns, and I\'ll find it.'
)
WELCOME: Final = "You're welcome!"
#: The answer to an acknowledgement ("ok", "cool", "got it").
ACKNOWLEDGED: Final = "👍"
MAX_CITED: Final = 3

_QUESTION = re.compile(
    rf"\?\s*$|^\s*(?:@\w+\s*,?\s*)?(?:alfred\s*,?\s*)?(?:{QUESTION_WORDS})\b", re.I
)
#: Requests for something remembered that need no question mark ("remind me, …").
_ASKING = re.compile(
    r"\b(remind me|tell me|do you (know|remember)|any idea|i forgot|i can'?t remember)\b", re.I
)
_THANKS = re.compile(
    r"^\s*(?:@\w+\s*,?\s*)?(?:alfred\s*,?\s*)?(thanks|thank you|thx|ty|cheers|much appreciated)"
    r"\b[\s\w,!.]*$",
    re.I,
)
_ACK = re.compile(
    r"^\s*(?:@\w+\s*,?\s*)?(?:alfred\s*,?\s*)?(?:(?:ok|okay|k|kk|cool|great|nice|good|fine"
    r"|perfect|awesome|super|lovely|alright|all right|sure|yes|yeah|yep|yup|no|nope|nah|got it"
    r"|gotcha|i see|understood|sounds good|makes sense|fair enough|right|wow|haha|lol|oh|ah"
    r"|will do|no worries|no problem|np|noted|then|never\s*mind|forget\s+(?:about\s+)?it)"
    r"\b[\s,!.]*)+"
    r"(?:(?:thanks|thank you|thx|ty|cheers)\b[\s\w,!.]*)?$",
    re.I,
)
#: "what time is it?", "what's the date today?": answered from the speaker's clock.
_CLOCK = re.compile(
    r"^\s*(?:@\w+\s*,?\s*)?(?:alfred\s*,?\s*)?(?:what(?:'s|\s+is)\s+the\s+(?:time|date)"
    r"(?:\s+(?:now|today))?|what\s+time\s+is\s+it(?:\s+now)?|what\s+day\s+is\s+(?:it|today)"
    r"|what(?:'s|\s+is)\s+today'?s\s+date)(?:\s*,?\s*alfred)?\s*\??\s*$",
    re.I,
)
_EMOJI_ONLY = re.compile(r"^[\W_]+$")
#: "forget Hana", "please delete Bob": a request to remove something, as the recent leg
#: reads one, that names what (not "forget it").
_FORGET_REQUEST = re.compile(
    DELETE_REQUEST.pattern + r"(?:\s+(?!it\b|about\s+it\b)\w|[\s.!]*$)", re.I
)
_GREETING = re.compile(
    r"^\s*(?:@\w+\s*)?(hi|hey|hello|hiya|good (morning|afternoon|evening)|yo)\b[\s\w,!.]*$", re.I
)


def _is_question(text: str) -> bool:
    text = text.strip()
    return _QUESTION.search(text) is not None or _ASKING.search(text) is not None


#: How a note of another member starts in the always-in-context block ("[Bob] ").
_NOTE_OWNER = re.compile(r"^\[[^\]]+\]\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _noted(ctx: ReplyContext) -> list[str]:
    """The sentences of the notes kept in mind in this chat (``ctx.always``, built for
    this viewer through the privacy filter) that share a keyword with the question,
    names aside, those sharing most first: a plan said in passing ("we're going to
    Lisbon in two weeks") is often kept as a note rather than a fact, and a question
    about it is answered from there rather than with "I don't know"."""
    names, asked = _asked_beside_names(ctx)
    if not asked or not ctx.always:
        return []
    shared: dict[str, int] = {}
    for line in ctx.always.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "**")):
            continue
        for sentence in _SENTENCE_END.split(_NOTE_OWNER.sub("", line.removeprefix("- "))):
            overlap = len(asked & (set(tokenize(sentence)) - names))
            if overlap and sentence.strip():
                shared.setdefault(sentence.strip(), overlap)
    return sorted(shared, key=lambda sentence: -shared[sentence])[:MAX_CITED]


def _asked_beside_names(ctx: ReplyContext) -> tuple[set[str], set[str]]:
    """The terms of the members' names, and the question's terms without them (every
    memory of Bob shares "Bob" with a question about him)."""
    names = {t for p in ctx.people for t in tokenize(p.name)}
    return names, set(tokenize(ctx.text)) - _ADDRESSING - names


def _keyword_matches(ctx: ReplyContext) -> list[CitedMemory]:
    """The memories sharing a keyword with the question (none: retrieval matched them by
    meaning alone)."""
    asked = set(tokenize(ctx.text)) - _ADDRESSING
    return [m for m in ctx.memories if asked & set(tokenize(m.content))]


def _on_topic(ctx: ReplyContext) -> list[CitedMemory]:
    """The memories sharing a keyword with the question, when any do; otherwise all
    that retrieval found (a match by meaning alone is still a match). Without a model
    to read them, citing the memory about the wifi to a question about the gate code
    would be noise."""
    return _keyword_matches(ctx) or list(ctx.memories)


def _cite(ctx: ReplyContext) -> str:
    lines = []
    for memory in _on_topic(ctx)[:MAX_CITED]:
        if memory.said:  # a line in its author's words: whose "I" it is comes first
            author = memory.from_name or (
                "You" if memory.owner_id == ctx.speaker_id else "Someone here"
            )
            lines.append(f"- {author} said: {_sentence(memory)}")
            continue
        source = f" ({memory.from_name} told me)" if memory.from_name else ""
        lines.append(f"- {memory.content}{source}")
    return "\n".join(lines)


def _sentence(memory: CitedMemory) -> str:
    """The memory as a clause to cite; a line in its author's words in quotes."""
    text = memory.content.strip().rstrip(".;")
    return f'"{text}"' if memory.said else text


def _helpful(ctx: ReplyContext, memories: list[CitedMemory]) -> list[CitedMemory]:
    """The ``memories`` that help with the message: those sharing a word with it (names
    aside: every memory of Bob shares "Bob" with a question about him) and, for a plan
    (dinner, a gift, a trip), those saying what someone likes, eats or avoids."""
    names, asked = _asked_beside_names(ctx)
    plan = mentions_plan(ctx.text)
    return [
        m
        for m in memories
        if _shares_topic(asked, set(tokenize(m.content)) - names)
        or (plan and states_preference(m.content))
    ]


def _not_by_name(memory: CitedMemory, partners: set[str], names: set[str], asked: set[str]) -> bool:
    """Whether a memory answers more than the name in a question about ``partners``: it
    shares a topic with it, or it is no partner's and names nobody asked about. For a
    question, not a plan: a plan also takes their likes and diets (:func:`_helpful`)."""
    terms = set(tokenize(memory.content))
    if _shares_topic(asked, terms - names):
        return True
    return memory.owner_id not in partners and not names & terms


def _shares_topic(asked: set[str], terms: set[str]) -> bool:
    """Whether a memory's terms answer one of the question's, a word of the same family
    included ("what can Leo eat?" and "Leo is vegetarian": memory.search.related)."""
    return any(covers(word, terms) for word in asked)


def _partners_asked_about(ctx: ReplyContext) -> list[Person]:
    """The partners a group message is about: the members it names, or, for a plan made
    together ("our weekend", "what should we cook?"), every member but the speaker. A
    statement must be a plan to count ("cooking for Bob tonight"), not merely name them."""
    if ctx.thread_kind is not ThreadKind.GROUP:
        return []
    text = ctx.text
    if not (_is_question(text) or mentions_plan(text)):
        return []
    named = named_members(text, ctx.people, ctx.speaker_id)
    if named:
        return named
    if is_joint_plan(text):
        return [p for p in ctx.people if p.id != ctx.speaker_id]
    return []


def partner_context(ctx: ReplyContext, partners: list[Person] | None = None) -> str | None:
    """What the partners a group message is about shared there, attributed to each
    ("From what Bob has shared here: Bob is vegetarian; Bob loves Thai food."), then the
    speaker's own and the circle's memories on the topic; ``None`` when retrieval found
    nothing of theirs that helps."""
    lines = []
    for person in _partners_asked_about(ctx) if partners is None else partners:
        # Only what helps: naming Bob makes every memory of his match the name, and
        # "did Bob fix the boiler?" is not helped by his being vegetarian.
        theirs = _helpful(ctx, [m for m in ctx.memories if m.owner_id == person.id])
        if theirs:
            cited = "; ".join(_sentence(m) for m in theirs[:MAX_CITED])
            lines.append(f"From what {person.name} has shared here: {cited}.")
    if not lines:
        return None
    mine = _helpful(ctx, [m for m in ctx.memories if m.owner_id == ctx.speaker_id])
    if mine:
        lines.append(f"You mentioned: {'; '.join(_sentence(m) for m in mine[:MAX_CITED])}.")
    ours = _helpful(ctx, [m for m in ctx.memories if m.owner_id is None])
    if ours:
        lines.append(f"For everyone: {'; '.join(_sentence(m) for m in ours[:MAX_CITED])}.")
    return "\n".join(lines)


def compose_for(ctx: ReplyContext) -> str:
    """The offline answer to one message, from its structured reply context."""
    text = ctx.text.strip()
    bare = strip_addressing(text)  # "hello @alfred", or a mention alone, is a greeting
    if not bare or (_GREETING.match(bare) and len(bare) < 40):
        return GREETING
    if _THANKS.match(text) and len(text) < 60:
        return WELCOME
    if len(text) < 60 and (_ACK.match(text) or _EMOJI_ONLY.match(text)):
        return (
            WELCOME
            if re.search(r"\b(?:thanks|thank you|thx|ty|cheers)\b", text, re.I)
            else ACKNOWLEDGED
        )
    if _CLOCK.match(text):
        local = local_now(ctx)
        return f"It's {local:%H:%M} on {local:%A} {local.day} {local:%B %Y} ({ctx.time_zone})."
    partners = _partners_asked_about(ctx)
    if partners:
        offered = partner_context(ctx, partners)
        if offered is not None:
            return offered
        ids = {p.id for p in partners}
        if mentions_plan(text):
            # Nothing of theirs helps the plan: their other memories matched only the name.
            ctx = ctx.model_copy(
                update={"memories": [m for m in ctx.memories if m.owner_id not in ids]}
            )
        elif (asked := _asked_beside_names(ctx))[1]:
            # "where does Leo work?" is not answered by "Leo is vegetarian": a memory of
            # theirs that shares nothing but the name is left out, and so is anyone's
            # ("when is Tom in Berlin?" is not answered by "Ava and Tom's dinner is …").
            ctx = ctx.model_copy(
                update={"memories": [m for m in ctx.memories if _not_by_name(m, ids, *asked)]}
            )
    if _is_question(text):
        noted = _noted(ctx)
        if ctx.memories and (not noted or _keyword_matches(ctx)):
            return "From what I remember:\n" + _cite(ctx)
        if noted:
            return "From what I keep in mind here:\n" + "\n".join(f"- {n}" for n in noted)
        return NO_MEMORY
    if _FORGET_REQUEST.match(text):
        return FORGET_HOW
    return OFFLINE_STATEMENT


def reply(request: ReplyRequest) -> str:
    """The offline answer to the reply task (:data:`memory.prompts.reply.REPLY`)."""
    return compose_for(request.reply)
