"""Directory reads shared by the steps of one reply.

A reply names people three times (the memory block's owner notes, the people in the
chat, the authors of the recent history), and each step used to read the same circle
and the same users again. One :class:`TurnLookups` per reply reads each once. It lives
for one reply only, so it can never serve a stale membership to a later message.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory.models import Circle, User
from memory.stores import DirectoryStore


class TurnLookups:
    """Read-through memo of circles and users for one reply."""

    def __init__(self, directory: DirectoryStore) -> None:
        self._directory = directory
        self._circles: dict[str, Circle | None] = {}
        self._users: dict[str, User | None] = {}

    async def circle(self, circle_id: str) -> Circle | None:
        if circle_id not in self._circles:
            self._circles[circle_id] = await self._directory.circle(circle_id)
        return self._circles[circle_id]

    async def users(self, user_ids: Iterable[str]) -> dict[str, User]:
        """The known users among ``user_ids`` (unknown ids are left out)."""
        wanted = sorted(set(user_ids))
        missing = [uid for uid in wanted if uid not in self._users]
        if missing:
            found = await self._directory.users(missing)
            for uid in missing:
                self._users[uid] = found.get(uid)
        return {uid: user for uid in wanted if (user := self._users[uid]) is not None}

    async def members(self, circle_id: str) -> list[User]:
        """The circle's members, in the order of its member list."""
        circle = await self.circle(circle_id)
        if circle is None:
            return []
        found = await self.users(circle.member_ids)
        return [found[uid] for uid in circle.member_ids if uid in found]
