"""Who is in which circle: registering the people of a message, joins and leaves, the bot
added to or removed from a group, and a group upgraded to a supergroup.

Every change of membership goes through here, so the Telegram handlers never write to
the directory themselves. The reply path's cache of registrations is dropped when a
circle moves or a person is erased; a member who leaves stops seeing the circle at once
anyway, since the viewer is read fresh on every message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from memory.errors import NotFound
from memory.flags import MemoryFlags
from memory.models import CircleMove, Thread, Viewer
from memory.ports import Clock
from memory.reply_ports import CircleMover
from memory.stores import DirectoryStore, FactStore, SemanticMirror
from services.messages import Incoming, Sender

log = logging.getLogger(__name__)

#: How long a chat's registration (user, circle, membership, thread) is trusted.
REGISTRATION_TTL_S = 300
#: Registrations remembered at most (the oldest is dropped first).
REGISTRATION_CACHE_MAX = 10_000


class Membership:
    """Registration and membership changes, on the directory port."""

    def __init__(
        self,
        *,
        directory: DirectoryStore,
        clock: Clock,
        circles: CircleMover,
        facts: FactStore,
        mirror: SemanticMirror | None,
        flags: Callable[[], MemoryFlags],
    ) -> None:
        self.directory = directory
        self.clock = clock
        self.circles = circles
        self.facts = facts
        self.mirror = mirror
        self.flags = flags
        self._registered: dict[tuple[object, ...], tuple[Thread, datetime]] = {}

    # --- the people of a message --------------------------------------------------------

    async def register(self, inc: Incoming) -> tuple[Thread, Viewer]:
        """The thread and viewer of a message, creating circle, user and thread as needed.

        Registration is remembered for a few minutes per (chat, sender, name, title), so a
        busy chat costs one query here (the viewer's circles, always read fresh: a member
        who left stops seeing the circle at once). A sender whose viewer lacks the group's
        circle is registered again, since writing in the group makes them a member."""
        key = (inc.chat_id, inc.sender.telegram_id, inc.sender.name, inc.chat_title)
        now = self.clock.now()
        cached = self._registered.get(key)
        if cached is not None:
            thread, at = cached
            viewer = await self.directory.viewer(str(inc.sender.telegram_id), thread)
            if thread.circle_id is None or thread.circle_id in viewer.circle_ids:
                if (now - at).total_seconds() < REGISTRATION_TTL_S:
                    return thread, viewer
                if await self._unchanged(inc, thread):
                    self._remember(key, thread, now)
                    return thread, viewer
        thread, viewer = await self._register(inc, now)
        self._remember(key, thread, now)
        return thread, viewer

    def _remember(self, key: tuple[object, ...], thread: Thread, at: datetime) -> None:
        self._registered.pop(key, None)  # to the end: the oldest is dropped first
        self._registered[key] = (thread, at)
        if len(self._registered) > REGISTRATION_CACHE_MAX:
            self._registered.pop(next(iter(self._registered)))

    async def _unchanged(self, inc: Incoming, thread: Thread) -> bool:
        """Whether registering ``inc`` again would write nothing: the person, their
        thread and (in a group) the circle's title are as the registration left them.
        That the circle is still active with the person in it, the caller has seen:
        it is among the viewer's circles, which are only those. In a reply turn these
        reads are served by the turn's directory read, which the viewer just made, so an
        expired registration of a chat where nothing changed costs no command; a
        registration redone wrote five."""
        d = self.directory
        user = await d.user(str(inc.sender.telegram_id))
        if user is None or (user.name, user.username) != (inc.sender.name, inc.sender.username):
            return False
        if await d.thread(thread.id) != thread:
            return False
        if not inc.is_group:
            return True
        circle = await d.circle(str(inc.chat_id))
        return circle is not None and circle.title == inc.chat_title

    async def _register(self, inc: Incoming, now: datetime) -> tuple[Thread, Viewer]:
        d = self.directory
        user = await d.upsert_user(
            inc.sender.telegram_id, inc.sender.name, inc.sender.username, now
        )
        if inc.is_group:
            circle = await d.upsert_circle(inc.chat_id, inc.chat_title, now)
            await d.add_member(circle.id, user.id)
            thread = await d.thread(circle.id)
            if thread is None:  # upsert_circle made it; a concurrent move or purge removed it
                raise NotFound(
                    f"the thread of group {circle.id} vanished while registering a message",
                    hint="the group was just moved or purged; its next message registers it",
                )
        else:
            thread = await d.dm_thread(user.id, inc.chat_id, now)
        return thread, await d.viewer(user.id, thread)

    def forget_registrations(self) -> None:
        """Drop every cached registration (a user erased, a circle moved)."""
        self._registered.clear()

    # --- joins and leaves ---------------------------------------------------------------

    async def members_changed(
        self,
        chat_id: int,
        title: str | None,
        joined: Sequence[Sender],
        left: Sequence[Sender],
        *,
        bot_id: int,
    ) -> None:
        """People joined or left a group; the bot itself leaving archives the circle."""
        now = self.clock.now()
        d = self.directory
        circle = await d.upsert_circle(chat_id, title, now)
        for person in joined:
            if person.telegram_id == bot_id:
                continue
            user = await d.upsert_user(person.telegram_id, person.name, person.username, now)
            await d.add_member(circle.id, user.id)
        for person in left:
            if person.telegram_id == bot_id:
                await d.archive_circle(circle.id, now)
            else:
                await d.remove_member(circle.id, str(person.telegram_id))

    async def bot_added(self, chat_id: int, title: str | None, by: Sender | None) -> None:
        """The bot was added to a group: a new circle, with the person who added it."""
        now = self.clock.now()
        circle = await self.directory.upsert_circle(chat_id, title, now)
        if by is not None and not by.is_bot:
            user = await self.directory.upsert_user(by.telegram_id, by.name, by.username, now)
            await self.directory.add_member(circle.id, user.id)

    async def bot_removed(self, chat_id: int, title: str | None) -> None:
        """The bot left or was removed: the circle is archived (its memories stay)."""
        now = self.clock.now()
        circle = await self.directory.upsert_circle(chat_id, title, now)
        await self.directory.archive_circle(circle.id, now)

    # --- a group upgraded to a supergroup -----------------------------------------------

    async def group_upgraded(self, old_chat_id: int, new_chat_id: int, title: str | None) -> int:
        """Move the group's circle to the supergroup's id; returns the documents moved
        (0 when it had moved already: Telegram announces the upgrade more than once)."""
        move = await self.move_circle(old_chat_id, new_chat_id, title)
        return sum(move.moved.values())

    async def move_circle(
        self, old_chat_id: int, new_chat_id: int, title: str | None
    ) -> CircleMove:
        """Move the circle of group ``old_chat_id`` to supergroup ``new_chat_id``.

        Telegram announces the upgrade twice (a service message in the old group naming
        the new id, one in the supergroup naming the old id) and refuses sends to the old
        id; any of the three starts the same move, which is idempotent."""
        move = await self.circles.move_circle(old_chat_id, new_chat_id, title, self.clock.now())
        if move.anything or move.fact_ids:
            log.info(
                "circle moved to its supergroup: %s → %s (%s; %d duplicate(s) merged)",
                move.old_id,
                move.new_id,
                ", ".join(f"{name} {n}" for name, n in sorted(move.moved.items()) if n)
                or "nothing",
                move.merged_duplicates,
            )
            await self._rehome_semantic_copies(move)
        self.forget_registrations()  # cached threads of the old chat id are gone
        allowed = self.flags().allowed_circles
        if allowed and move.old_id in allowed and move.new_id not in allowed:
            log.warning(
                "MEMORY_ALLOWED_CIRCLES lists %s, which is now supergroup %s: add the new id "
                "to keep memory on there",
                move.old_id,
                move.new_id,
            )
        return move

    async def _rehome_semantic_copies(self, move: CircleMove) -> None:
        """mem0 copies are scoped by partition: each moved fact gets a copy under its new
        partition (the old copy is deleted by the mirror). Best effort, like all
        mirroring: a copy left under the old scope is never shown (no viewer's search is
        scoped there, and every hit is checked against the local fact), and
        reconcile-mem0 can tidy up."""
        mirror = self.mirror
        if mirror is None:
            return
        if move.dropped_mem0_ids:
            try:
                await mirror.delete_copies(move.dropped_mem0_ids)
            except Exception as exc:  # the copies are unreachable; reconcile removes them
                log.warning("mem0 copies of merged duplicates not deleted (%s)", type(exc).__name__)
        wanted = set(move.fact_ids)
        for fact in await self.facts.in_circle(move.new_id):
            if fact.id in wanted and fact.mem0_id and fact.current:
                await mirror.mirror(fact)
