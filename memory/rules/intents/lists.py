"""List requests: "add milk and eggs to the shopping list", "what's on the list?",
"tick off milk", "clear the list", "we need batteries", "what lists do we have?".

Pure rules, like every intent here: text in, a :class:`ListIntent` (or ``None``) out.
What the rules cannot know (which lists the thread has) is decided by the caller, which
is why some results are *tentative*:

* ``implicit`` adds ("we need batteries", "we're out of milk") only name items. The
  caller adds them only when the thread used a list recently; and the rule only offers
  a plain noun phrase, never "we need to talk", "we need a break" or "we need you".
  "I need …" is never a list add: it is far more often about the speaker than the house.
* ``implicit`` removes ("remove milk", "we got the eggs", "got milk") count only when
  the item is on the thread's list; otherwise the message is ordinary conversation.

Questions are read only when they ask what is on a list, or which lists exist.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from memory.lists import MAX_ITEM_CHARS
from memory.rules.intents.clause import clean_payload, sentence_clauses

ListAction = Literal["add", "remove", "show", "clear", "lists"]


class ListIntent(BaseModel):
    """A request about a list. ``name`` None means "the list last used in this thread"."""

    model_config = ConfigDict(frozen=True)

    action: ListAction
    name: str | None = None
    items: tuple[str, ...] = ()
    #: Said without naming a list ("we need batteries", "we got the eggs"): acted on only
    #: when the thread's list makes it one (see the module docstring).
    implicit: bool = False


_NAME = r"(?:the|our|my|a|an|this|that)?\s*(?P<name>[a-z][\w' -]{0,38}?\s+)?list"
_ADD: Final = re.compile(
    rf"^(?:add|put|stick|pop|throw|write|jot(?:\s+down)?)\s+(?P<items>.+?)\s+"
    rf"(?:to|on|onto|in|into)\s+{_NAME}$",
    re.IGNORECASE | re.DOTALL,
)
_SHOW: Final = re.compile(
    rf"^(?:what(?:'s|\s+is|\s+do\s+we\s+have|\s+have\s+we\s+got|\s+else\s+is)\s+(?:on|in)"
    rf"|(?:show|read|tell|give|send)(?:\s+(?:me|us))?(?:\s+(?:out|back))?"
    rf"|(?:check)|(?:remind\s+(?:me|us)\s+what(?:'s|\s+is)\s+on))\s+{_NAME}$",
    re.IGNORECASE,
)
_CLEAR: Final = re.compile(
    rf"^(?:clear(?:\s+out)?|empty|wipe|reset|(?:delete|remove)\s+everything\s+(?:from|on))"
    rf"\s+{_NAME}$",
    re.IGNORECASE,
)
_LISTS: Final = re.compile(
    r"^(?:what|which)\s+lists\s+(?:do|have)\s+(?:we|i|you)(?:\s+got)?(?:\s+have)?$"
    r"|^(?:show|list)(?:\s+(?:me|us))?\s+(?:all\s+)?(?:the|our|my)?\s*lists$",
    re.IGNORECASE,
)
_REMOVE: Final = re.compile(
    rf"^(?:remove|delete|take|tick|cross|strike|check)(?:\s+off|\s+out)?\s+(?P<items>.+?)"
    rf"(?:\s+(?:off|out))?(?:\s+(?:from|off|of)\s+{_NAME})?$",
    re.IGNORECASE | re.DOTALL,
)
_GOT: Final = re.compile(
    r"^(?:(?:we|i)\s+(?:got|bought|picked\s+up|have|grabbed)|got|bought)\s+(?P<items>.+)$",
    re.IGNORECASE,
)
_NEED: Final = re.compile(
    r"^(?:we\s+(?:still\s+|also\s+)?need|we're\s+out\s+of|we\s+are\s+out\s+of"
    r"|we've\s+run\s+out\s+of|we\s+ran\s+out\s+of|we're\s+(?:running\s+)?low\s+on"
    r"|we\s+are\s+(?:running\s+)?low\s+on|we're\s+running\s+out\s+of)\s+(?P<items>.+)$",
    re.IGNORECASE,
)
_SPLIT: Final = re.compile(r"\s*(?:,|;|\band\b|&|\+)\s*", re.IGNORECASE)
_LEADING: Final = re.compile(r"^(?:some|more|a\s+few|a\s+couple\s+of|the|a|an)\s+", re.IGNORECASE)
#: Words that make "we need X" about something other than a thing to buy or fetch.
_NOT_A_THING: Final = frozenset(
    re.findall(
        r"\S+",
        """to break rest help time talk word words chat plan plans holiday holidays vacation
        space sleep change changes break-up advice answer answers decision idea ideas sense
        you me him her them us it this that everything anything nothing something someone
        anyone everyone somebody more less much doctor lawyer therapist miracle luck
        moment minute second day days week weeks hour hours night""",
    )
)
_VERB_START: Final = re.compile(
    r"^(?:to|be|get|go|do|have|make|find|talk|stop|start|leave|decide|think|figure|sort)\b",
    re.IGNORECASE,
)
_THING: Final = re.compile(r"^[a-z0-9][a-z0-9' -]*$", re.IGNORECASE)


def split_items(text: str) -> tuple[str, ...]:
    """ "milk, eggs and some bread" → ("milk", "eggs", "bread")."""
    items = []
    for part in _SPLIT.split(clean_payload(text)):
        item = _LEADING.sub("", part.strip()).strip(" .!'\"")
        if item and len(item) <= MAX_ITEM_CHARS and item.lower() not in {"it", "that", "them"}:
            items.append(item)
    return tuple(items)


def _plain_things(items: tuple[str, ...]) -> bool:
    """Whether every item is a short plain noun phrase: "batteries", "oat milk", "AA
    batteries", not "to talk", "a break", "you" or "a word with Bob"."""
    if not items:
        return False
    for item in items:
        words = item.lower().split()
        if not _THING.match(item) or len(words) > 4 or _VERB_START.match(item):
            return False
        if words[-1] in _NOT_A_THING or words[0] in _NOT_A_THING:
            return False
        if "with" in words or "for" in words or "from" in words:
            return False
    return True


def _name(match: re.Match[str]) -> str | None:
    name = match.group("name")
    return name.strip() if name and name.strip() else None


def detect_list_intent(text: str) -> ListIntent | None:
    """The list request in ``text``, or None. See the module docstring for what is
    tentative (``implicit``)."""
    for clause in sentence_clauses(text):
        body = clause.text
        if not body or len(body) > 400:
            continue
        if clause.question and not clause.polite:  # "could you add …?" is a request
            found = _LISTS.match(body)
            if found:
                return ListIntent(action="lists")
            show = _SHOW.match(body)
            if show:
                return ListIntent(action="show", name=_name(show))
            continue
        if _LISTS.match(body):
            return ListIntent(action="lists")
        show = _SHOW.match(body)
        if show:
            return ListIntent(action="show", name=_name(show))
        clear = _CLEAR.match(body)
        if clear:
            return ListIntent(action="clear", name=_name(clear))
        add = _ADD.match(body)
        if add:
            items = split_items(add.group("items"))
            if items:
                return ListIntent(action="add", name=_name(add), items=items)
        remove = _REMOVE.match(body)
        if remove:
            items = split_items(remove.group("items"))
            explicit = bool(re.search(r"\blist$", body, re.IGNORECASE))
            if items:
                return ListIntent(
                    action="remove", name=_name(remove), items=items, implicit=not explicit
                )
        got = _GOT.match(body)
        if got:
            items = split_items(got.group("items"))
            if items:
                return ListIntent(action="remove", items=items, implicit=True)
        need = _NEED.match(body)
        if need:
            items = split_items(need.group("items"))
            if _plain_things(items):
                return ListIntent(action="add", items=items, implicit=True)
    return None
