"""Shared lists on the reply path: the rules' requests and the chat model's list tools.

A list lives where it was made (:mod:`memory.lists`): a group's list is the circle's, a
DM's list is that person's. Here that means:

* **Changes only in the list's own thread.** Adding, ticking off and clearing act on the
  lists of the thread's home partition; in a DM, "add milk to the shopping list" makes
  (or fills) the person's own list, never the circle's, so a private "gift for Bob" can
  never land on the family's list by accident.
* **Reading under the privacy rule.** Every list read goes through the store's filter
  and :func:`memory.privacy.is_visible` again; a member may read the circle's list from
  their DM, and a DM's list is readable nowhere else.
* **"We need batteries"** adds to the thread's most recently used list, only if it was
  used within :data:`RECENT`; "we got the eggs" ticks off only what is on a list here.
  Otherwise the message is not a list request and goes on as ordinary conversation.

* **Tick-off buttons.** A list shown in its own thread (read, added to, ticked off)
  carries one inline button per item (:func:`tick_buttons`). The button's data names
  the list and the item by id only, never the item's text, and a press
  (:meth:`Lists.tick`) acts only for someone who may see the list, in the list's own
  thread; any other press changes nothing and is told only "nothing to tick off here".

The caller marks the message handled (formation learns nothing from it) and journals
Alfred's answer as :func:`journal_note`, so no list text becomes a memory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from memory.ids import new_id
from memory.lists import (
    ITEM_ID_CHARS,
    MAX_NAME_CHARS,
    ListItem,
    ListStore,
    SharedList,
    item_key,
    list_key,
)
from memory.llm import ToolCall, ToolSpec
from memory.models import Thread, ThreadKind, Viewer
from memory.ports import Clock
from memory.privacy import is_visible
from memory.rules.intents.lists import ListIntent, split_items

#: How recently a list must have been used for "we need batteries" to go on it.
RECENT = timedelta(days=14)
NONE_HERE = 'There are no lists here yet. Say e.g. "add milk to the shopping list".'
WHICH_LIST = 'Which list? Say e.g. "add milk to the shopping list".'
#: The answer to a press that ticks nothing off: the same whether the list does not
#: exist, is someone else's, or lives in another chat, so a forged button learns nothing.
NOTHING_TO_TICK = "Nothing to tick off here."
#: How many items get a button: Telegram allows 100 per message, a phone shows far fewer.
MAX_BUTTONS = 30
#: Callback data of a tick-off button: ``lst:<list id>:<item id>`` (ids only).
CALLBACK_PREFIX = "lst"
_CALLBACK = re.compile(rf"^{CALLBACK_PREFIX}:([0-9a-f]{{32}}):([0-9a-f]{{{ITEM_ID_CHARS}}})$")

Button = tuple[str, str]


def tick_buttons(shared: SharedList) -> tuple[Button, ...]:
    """One (label, callback data) per item, the item's text as its label."""
    return tuple(
        (i.text[:60], f"{CALLBACK_PREFIX}:{shared.id}:{i.id}") for i in shared.items[:MAX_BUTTONS]
    )


def parse_tick(data: str) -> tuple[str, str] | None:
    """(list id, item id) of a tick-off button's data, or None for anything else."""
    match = _CALLBACK.match(data)
    return (match.group(1), match.group(2)) if match else None


@dataclass(frozen=True)
class ListAnswer:
    """A list request's answer, and the list of this thread it ends by showing (whose
    items get tick-off buttons), if any."""

    text: str
    shown: SharedList | None = None

    @property
    def buttons(self) -> tuple[Button, ...]:
        return tick_buttons(self.shown) if self.shown is not None else ()


@dataclass(frozen=True)
class Ticked:
    """What a tick-off press leads to: ``answer`` for the press itself (a short notice),
    and when the press was allowed, the list as it now is for the pressed message."""

    answer: str
    text: str | None = None
    buttons: tuple[Button, ...] = ()


def journal_note(intent: ListIntent) -> str:
    """What Alfred's list answer is journaled as: the action, never the items, so the
    list's text cannot reach formation through Alfred's own words either."""
    return f"[a list request was answered: {intent.action}]"


def _join(words: Sequence[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"


def _once_each(texts: Sequence[str]) -> list[str]:
    """``texts`` without a second one of the same item ("milk and Milk": milk)."""
    seen: set[str] = set()
    out = []
    for text in texts:
        if item_key(text) not in seen:
            seen.add(item_key(text))
            out.append(text)
    return out


class Lists:
    """List requests for one reply: reads and changes through the :class:`ListStore`."""

    def __init__(self, store: ListStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def _visible(self, viewer: Viewer) -> list[SharedList]:
        return [s for s in await self.store.visible(viewer) if is_visible(s.partition, viewer)]

    async def handle(
        self, intent: ListIntent, thread: Thread, viewer: Viewer, *, quiet: bool = False
    ) -> str | None:
        """The answer to a list request, or None when the message turns out not to be
        one (an implicit add with no recent list, a "we got X" with X on no list here).
        ``quiet``: an unaddressed group message, where only adds and tick-offs act."""
        answer = await self.answer(intent, thread, viewer, quiet=quiet)
        return answer.text if answer is not None else None

    async def answer(
        self,
        intent: ListIntent,
        thread: Thread,
        viewer: Viewer,
        *,
        quiet: bool = False,
        source: str | None = None,
    ) -> ListAnswer | None:
        """As :meth:`handle`, with the list of this thread the answer shows; ``source``
        names the message that asked (items it adds carry it)."""
        if quiet and intent.action not in ("add", "remove"):
            return None
        visible = await self._visible(viewer)
        home = thread.home_partition()
        own = [s for s in visible if s.partition == home]  # most recently used first
        if intent.action == "lists":
            return ListAnswer(self._overview(visible, own, thread))
        if intent.action == "add":
            return await self._add(intent, thread, viewer, visible, own, source)
        if intent.action == "remove":
            return await self._remove(intent, visible, own, source)
        named = self._named(intent.name, own) if intent.name else (own[0] if own else None)
        if intent.action == "clear":
            if named is None:
                return ListAnswer(self._missing(intent.name, visible, "clear"))
            await self.store.clear(named.id, self.clock.now())
            return ListAnswer(f"Cleared the {named.label().lower()}.")
        if named is None and intent.name:  # reading the circle's list from a DM
            other = self._named(intent.name, visible)
            return ListAnswer(
                other.shown() + " (the group's list)"
                if other
                else self._missing(intent.name, visible, "show")
            )
        if named is None:
            return ListAnswer(NONE_HERE)
        await self.store.touch(named.id, self.clock.now())
        return ListAnswer(named.shown(), named)

    async def tick(self, viewer: Viewer, list_id: str, item_id: str, who: str) -> Ticked:
        """A tick-off button pressed by ``viewer`` (named ``who``) in their thread: the
        item comes off only when the viewer may see the list and the list lives in this
        very thread (lists change only at home); otherwise nothing happens and the answer
        is the same whatever the ids name."""
        shared = await self.store.get(list_id, viewer)
        if (
            shared is None
            or not is_visible(shared.partition, viewer)
            or shared.partition != viewer.thread.home_partition()
        ):
            return Ticked(NOTHING_TO_TICK)
        item = await self.store.tick(list_id, item_id, self.clock.now())
        now = await self.store.get(list_id, viewer) or shared
        if item is None:
            return Ticked("That's already off the list.", now.shown(), tick_buttons(now))
        text = f"{who} ticked off {item.text}.\n{now.shown()}"
        return Ticked(f"Ticked off {item.text}.", text, tick_buttons(now))

    @staticmethod
    def _named(name: str | None, lists: Sequence[SharedList]) -> SharedList | None:
        key = list_key(name or "")
        return next((s for s in lists if s.key == key), None)

    @staticmethod
    def _missing(name: str | None, visible: Sequence[SharedList], verb: str) -> str:
        if not name:
            return NONE_HERE
        elsewhere = Lists._named(name, visible)
        if elsewhere is not None and verb == "clear":
            return f"The {elsewhere.label().lower()} is the group's: clear it in the group."
        return f"There's no {list_key(name)} list here."

    async def _add(
        self,
        intent: ListIntent,
        thread: Thread,
        viewer: Viewer,
        visible: Sequence[SharedList],
        own: Sequence[SharedList],
        source: str | None = None,
    ) -> ListAnswer | None:
        now = self.clock.now()
        target: SharedList | None
        if intent.implicit:  # "we need batteries": only onto a list used here lately
            target = own[0] if own and now - own[0].used_at <= RECENT else None
            if target is None:
                return None
        elif intent.name:
            target = self._named(intent.name, own)
            if target is None:
                key = list_key(intent.name)
                if not key:
                    return ListAnswer(WHICH_LIST)
                target = await self.store.create(
                    SharedList(
                        id=new_id(),
                        key=key,
                        title=key,
                        partition=thread.home_partition(),
                        thread_id=thread.id,
                        created_by=viewer.user_id,
                        created_at=now,
                        used_at=now,
                    )
                )
        else:
            target = own[0] if own else None
            if target is None:
                return ListAnswer(WHICH_LIST)
        have = {i.key for i in target.items}
        # Added by this very message on a try that failed before its turn was done.
        again = {i.key for i in target.items if source is not None and i.source == source}
        fresh: list[ListItem] = []
        for text in intent.items:
            key = item_key(text)
            if key and key not in have:
                have.add(key)
                fresh.append(
                    ListItem(
                        id=new_id()[:ITEM_ID_CHARS],
                        text=text,
                        key=key,
                        added_by=viewer.user_id,
                        added_at=now,
                        source=source,
                    )
                )
        await self.store.add_items(target.id, fresh, now)
        target.items.extend(fresh)
        added_keys = {i.key for i in fresh} | again
        added = _once_each([t for t in intent.items if item_key(t) in added_keys])
        there = [t for t in intent.items if item_key(t) not in added_keys]
        head = f"Added {_join(added)} to the {target.label().lower()}."
        if not added:
            head = f"{_join(there)} {'is' if len(there) == 1 else 'are'} already on it."
        elif there:
            head += f" ({_join(there)} {'was' if len(there) == 1 else 'were'} already on it.)"
        note = ""
        if thread.kind is ThreadKind.DM and any(
            s.key == target.key and s.partition != target.partition for s in visible
        ):
            note = "\n(This is your own list, just here: the group's list is changed in the group.)"
        return ListAnswer(f"{head}\n{target.shown()}{note}", target)

    async def _remove(
        self,
        intent: ListIntent,
        visible: Sequence[SharedList],
        own: Sequence[SharedList],
        source: str | None = None,
    ) -> ListAnswer | None:
        keys = {item_key(t): t for t in intent.items}
        # Taken off by this very message on a try that failed before its turn was done.
        # Only when none of the items is still there: the chat model may tick off one
        # item, then another, in the same turn, and each call names the same message.
        done = next(
            (
                s
                for s in own
                if source is not None
                and source in s.removed_by
                and not any(i.key in keys for i in s.items)
            ),
            None,
        )
        if done is not None:
            return ListAnswer(f"Ticked off {_join(intent.items)}.\n{done.shown()}", done)
        if intent.name:
            candidates = [s for s in own if s.key == list_key(intent.name)]
        else:
            candidates = [s for s in own if any(i.key in keys for i in s.items)] or list(own[:1])
        target = candidates[0] if candidates else None
        on_it = [i for i in target.items if i.key in keys] if target else []
        if not on_it:
            if intent.implicit:
                return None  # "we got the eggs" with no eggs on a list here: just chat
            elsewhere = [s for s in visible if s not in own and any(i.key in keys for i in s.items)]
            if elsewhere:
                label = elsewhere[0].label().lower()
                return ListAnswer(f"That's on the group's {label}: tick it off there.")
            if target is None:
                return ListAnswer(self._missing(intent.name, visible, "remove"))
            return ListAnswer(f"{_join(intent.items)} isn't on the {target.label().lower()}.")
        if target is None:  # unreachable: on_it is empty without a target
            return None
        gone = {i.key for i in on_it}
        await self.store.remove_items(target.id, sorted(gone), self.clock.now(), source=source)
        target.items[:] = [i for i in target.items if i.key not in gone]
        return ListAnswer(f"Ticked off {_join([i.text for i in on_it])}.\n{target.shown()}", target)

    @staticmethod
    def _overview(visible: Sequence[SharedList], own: Sequence[SharedList], thread: Thread) -> str:
        if not visible:
            return NONE_HERE
        lines = ["Lists here:"]
        for s in sorted(visible, key=lambda s: (s not in own, s.key)):
            count = f"{len(s.items)} item{'s' if len(s.items) != 1 else ''}"
            whose = " (the group's)" if thread.kind is ThreadKind.DM and s not in own else ""
            lines.append(f"- {s.label()}{whose}: {count}")
        return "\n".join(lines)


# --- the chat model's tools ------------------------------------------------------------

_LIST_ARG = {
    "type": "string",
    "maxLength": MAX_NAME_CHARS,
    "description": "the list's name without the word 'list', e.g. 'shopping'; omit for the "
    "list last used in this chat",
}
_ITEMS_ARG = {
    "type": "array",
    "minItems": 1,
    "maxItems": 20,
    "items": {"type": "string", "maxLength": 120},
}
ADD_TO_LIST = ToolSpec(
    name="add_to_list",
    description="Add items to a shared list of this chat (a group's lists are the whole "
    "group's; a private chat's are the person's own). Creates the list if needed.",
    parameters={
        "type": "object",
        "properties": {"list": _LIST_ARG, "items": _ITEMS_ARG},
        "required": ["items"],
        "additionalProperties": False,
    },
)
SHOW_LIST = ToolSpec(
    name="show_list",
    description="Read a list of this chat (what is on the shopping list, …); with no list "
    "named, the one last used here. Use list='*' to name every list there is.",
    parameters={
        "type": "object",
        "properties": {"list": _LIST_ARG},
        "additionalProperties": False,
    },
)
REMOVE_FROM_LIST = ToolSpec(
    name="remove_from_list",
    description="Tick items off a list of this chat (bought, done, not needed).",
    parameters={
        "type": "object",
        "properties": {"list": _LIST_ARG, "items": _ITEMS_ARG},
        "required": ["items"],
        "additionalProperties": False,
    },
)
LIST_TOOLS = (ADD_TO_LIST, SHOW_LIST, REMOVE_FROM_LIST)


class ListTools:
    """The list tools for one reply, bound to its thread and viewer; records whether a
    tool changed or read a list, so the reply marks the message handled, and the list of
    this thread a tool last showed, whose tick-off buttons go under the reply."""

    specs = LIST_TOOLS

    def __init__(
        self, lists: Lists, thread: Thread, viewer: Viewer, source: str | None = None
    ) -> None:
        self.lists = lists
        self.thread = thread
        self.viewer = viewer
        #: The message being answered ("chat:message"): a replay of it after a cut finds
        #: what its first try added and took off, as the rules' requests do.
        self.source = source
        self.used = False
        self.buttons: tuple[Button, ...] = ()

    @staticmethod
    def handles(name: str) -> bool:
        return name in {t.name for t in LIST_TOOLS}

    async def run(self, call: ToolCall) -> str:
        args: dict[str, Any] = call.arguments
        name = args.get("list")
        name = str(name)[:MAX_NAME_CHARS] if name else None
        raw = args.get("items") or []
        items = tuple(part for item in raw if isinstance(item, str) for part in split_items(item))[
            :20
        ]
        if call.name == SHOW_LIST.name:
            every = name == "*"
            intent = ListIntent(action="lists" if every else "show", name=None if every else name)
        elif not items:
            return "error: name at least one item"
        elif call.name == ADD_TO_LIST.name:
            intent = ListIntent(action="add", name=name, items=items)
        else:
            intent = ListIntent(action="remove", name=name, items=items)
        answer = await self.lists.answer(intent, self.thread, self.viewer, source=self.source)
        self.used = True
        if answer is None:
            return "error: nothing to do"
        self.buttons = answer.buttons
        return answer.text
