"""Shared lists ("the shopping list", "the hardware list"): the record and its port.

A list is not a memory. It is never a fact, a note or a summary, it is never searched
or put into a prompt as memory, and the messages that change it are marked handled so
formation learns nothing from them. It does carry a :class:`memory.models.Partition`,
because the one privacy rule (:mod:`memory.privacy`) decides where it may be read: a
list made in a group belongs to the circle (``Partition.circle``), one made in a DM to
that person (``Partition.dm``). Lists are changed only in the thread they live in (their
home thread); reading follows :func:`memory.privacy.is_visible`, so a member may read
the circle's list from their DM, and nobody reads a DM's list anywhere else.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Final, Protocol

from pydantic import BaseModel, Field

from memory.models import Partition, Viewer

#: How many items a list keeps, and how long an item may be: a list is a short thing,
#: and a pasted novel must not become one.
MAX_ITEMS: Final = 200
MAX_ITEM_CHARS: Final = 120
MAX_NAME_CHARS: Final = 40

#: Length of an item id: short, because a tick-off button's callback data (list id and
#: item id, never the item's text) must fit Telegram's 64 bytes.
ITEM_ID_CHARS: Final = 12


#: How many of the messages that took items off a list it keeps (``removed_by``): a
#: replay comes within minutes, after at most a few more removals.
REMOVALS_KEPT = 20


def list_key(name: str) -> str:
    """The name a list is found by: lower case, single spaces, without "list"."""
    words = re.sub(r"[^\w' -]+", " ", name.lower()).split()
    while words and words[-1] in {"list", "lists"}:
        words.pop()
    return " ".join(words)[:MAX_NAME_CHARS]


def item_key(text: str) -> str:
    """The form an item is matched by ("the Eggs" and "eggs" are one item)."""
    words = re.sub(r"[^\w' -]+", " ", text.lower()).split()
    while len(words) > 1 and words[0] in {"the", "a", "an", "some", "more", "our", "my"}:
        words.pop(0)
    if words:
        words[-1] = _singular(words[-1])
    return " ".join(words)


def _singular(word: str) -> str:
    """A crude singular, enough to match "eggs" with "egg" and "batteries" with "battery"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses", "oes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def item_id_for(list_id: str, key: str) -> str:
    """The id of an item stored before items had ids: derived from its list and key
    (unique within a list), so a button made for it stays valid across reads."""
    return hashlib.sha256(f"{list_id}:{key}".encode()).hexdigest()[:ITEM_ID_CHARS]


class ListItem(BaseModel):
    """One entry of a list, with who added it (so a forget can take theirs out)."""

    #: Names the item in a tick-off button; unique within its list.
    id: str = ""
    text: str
    key: str
    added_by: str | None = None
    added_at: datetime
    #: The message that added it ("chat:message"): its replay (a first try that added
    #: the item and then failed) tells it was added, not that it was "already on it".
    source: str | None = None


class SharedList(BaseModel):
    """A named list in one partition, living in one thread."""

    id: str
    key: str
    title: str
    partition: Partition
    thread_id: str
    created_by: str | None = None
    items: list[ListItem] = Field(default_factory=list)
    created_at: datetime
    #: Last added to, read or changed in its home thread: "we need batteries" goes to the
    #: thread's most recently used list.
    used_at: datetime
    #: The last messages ("chat:message") that took items off it: the replay of one (a
    #: first try that took them off and then failed) says so again.
    removed_by: list[str] = Field(default_factory=list)

    def label(self) -> str:
        """ "Shopping list", as replies name it."""
        title = self.title.strip() or "The"
        return f"{title[:1].upper()}{title[1:]} list"

    def shown(self) -> str:
        """The list as text: "Shopping list: milk, eggs" (or that it is empty)."""
        if not self.items:
            return f"{self.label()}: empty."
        return f"{self.label()}: {', '.join(i.text for i in self.items)}"


class ListStore(Protocol):
    """Where lists are kept. Every read is for a viewer and filtered by the privacy rule
    inside the query; callers check :func:`memory.privacy.is_visible` again."""

    async def visible(self, viewer: Viewer) -> list[SharedList]:
        """Every list ``viewer`` may read in their thread, most recently used first."""
        ...

    async def create(self, shared: SharedList) -> SharedList:
        """Store a new list; if one with the same key already exists in the partition
        (a race), return that one instead."""
        ...

    async def add_items(self, list_id: str, items: Sequence[ListItem], at: datetime) -> None:
        """Append ``items`` (the caller left out those already there) and mark it used."""
        ...

    async def remove_items(
        self, list_id: str, keys: Sequence[str], at: datetime, *, source: str | None = None
    ) -> None:
        """Take out the items with these keys and mark it used; ``source`` names the
        message that asked (kept among the list's last :data:`REMOVALS_KEPT`)."""
        ...

    async def clear(self, list_id: str, at: datetime) -> None:
        """Empty the list (it stays, to be filled again) and mark it used."""
        ...

    async def touch(self, list_id: str, at: datetime) -> None:
        """Mark the list used (it was read in its home thread)."""
        ...

    async def get(self, list_id: str, viewer: Viewer) -> SharedList | None:
        """The list with this id if ``viewer`` may read it, else None (whether it exists
        or not: a button's id reveals nothing to someone who may not see the list)."""
        ...

    async def tick(self, list_id: str, item_id: str, at: datetime) -> ListItem | None:
        """Take the item with this id off the list and mark it used; the item taken off,
        or None when it was no longer there (someone ticked it off first)."""
        ...

    async def forget_circle(self, circle_id: str) -> int:
        """Delete every list of the circle ("forget everything about us"); how many."""
        ...

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """Erase what a person put in lists: their DM lists whole, their items on circle
        lists, and circle lists they made that nobody else added to. Returns counts:
        ``lists`` deleted and ``list_items`` taken off circle lists."""
        ...
