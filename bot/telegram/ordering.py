"""Updates of different chats handled side by side, each chat's in order, and rate-limit
waits that hold only their own chat.

Why: handled one at a time, a busy group (40 mentions, each reply throttled by
Telegram's 20-messages-a-minute group limit) kept a DM waiting a minute. Why not plain
``concurrent_updates(True)``: two messages of one chat ("remember that …", then "what
did I just say?") must be handled in the order they were written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from telegram import Update
from telegram.error import RetryAfter
from telegram.ext import AIORateLimiter, BaseUpdateProcessor

log = logging.getLogger(__name__)

#: The bound on updates waiting in the processor (for their chat's turn or a running
#: slot): beyond it PTB holds new updates in its queue. Waiting costs a task, not work.
WAITING_UPDATES = 10_000


def chat_key(update: object) -> int | None:
    """What orders an update: its chat, else its user (an inline query has no chat), else
    nothing (it may run beside anything)."""
    if not isinstance(update, Update):
        return None
    if update.effective_chat is not None:
        return update.effective_chat.id
    if update.effective_user is not None:
        return update.effective_user.id
    return None


class _Turn:
    """One chat's lock and how many updates hold or wait for it (the chat is pruned at 0)."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class ChatOrderedProcessor(BaseUpdateProcessor):
    """At most ``running`` updates are handled at once; updates of one chat one after the
    other, in the order PTB took them from its queue.

    An update waiting for its chat's turn does not take a running slot, so a chat with a
    long queue cannot starve the others. The order holds because each update reaches its
    chat's lock without awaiting anything first (PTB starts one task per update, in queue
    order) and ``asyncio.Lock`` hands itself to its waiters first come, first served.
    """

    __slots__ = ("_running", "_turns")

    def __init__(self, running: int) -> None:
        super().__init__(max_concurrent_updates=max(running, WAITING_UPDATES))
        self._running = asyncio.Semaphore(running)
        self._turns: dict[int, _Turn] = {}

    @property
    def chats(self) -> int:
        """Chats with an update being handled or waiting (idle chats are forgotten)."""
        return len(self._turns)

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = chat_key(update)
        if key is None:
            async with self._running:
                await coroutine
            return
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock, self._running:
                await coroutine
        finally:
            turn.users -= 1
            if turn.users == 0:
                del self._turns[key]

    async def initialize(self) -> None:
        """Nothing to allocate: locks are made per chat as updates arrive."""

    async def shutdown(self) -> None:
        """Nothing to free: PTB waits for the update tasks themselves."""


#: Expired 429 pauses are swept once more than this many chats have one on record.
PAUSES_KEPT = 256

Request = Callable[..., Coroutine[Any, Any, Any]]


class ChatRateLimiter(AIORateLimiter):
    """PTB's :class:`AIORateLimiter` (30 messages a second overall, 20 a minute per group),
    with one change: a 429 "retry after N" pauses only the chat it was answered for.

    PTB's own limiter pauses every request of the bot until N has passed, so one group's
    flood wait would hold every DM. A 429 for a request with no chat still pauses all.
    """

    __slots__ = ("_paused_until", "_retries")

    def __init__(self, max_retries: int) -> None:
        super().__init__(max_retries=0)  # the retries are ours, per chat
        self._retries = max_retries
        self._paused_until: dict[object, float] = {}

    async def process_request(
        self,
        callback: Request,
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> Any:
        retries = rate_limit_args or self._retries
        chat_id = data.get("chat_id")
        chat = chat_id is not None
        with contextlib.suppress(TypeError, ValueError):
            chat_id = int(chat_id)  # type: ignore[arg-type]
        group: int | str | bool = False
        if (isinstance(chat_id, int) and chat_id < 0) or isinstance(chat_id, str):
            group = chat_id  # a group or channel: 20 messages a minute
        paused = chat_id if chat else None  # None: the whole bot
        loop = asyncio.get_running_loop()
        if len(self._paused_until) > PAUSES_KEPT:  # chats paused once and silent since
            now = loop.time()
            self._paused_until = {k: t for k, t in self._paused_until.items() if t > now}
        for attempt in range(retries + 1):
            await self._wait_pause(paused, loop)
            try:
                return await self._run_request(
                    chat=chat,
                    group=group,
                    allow_paid_broadcast=bool(data.get("allow_paid_broadcast", False)),
                    callback=callback,
                    args=args,
                    kwargs=kwargs,
                )
            except RetryAfter as exc:
                if attempt == retries:
                    log.warning("rate limited after %d retries on %s", retries, endpoint)
                    raise
                # the timedelta itself, as PTB's limiter reads it: the public attribute
                # warns (PTBDeprecationWarning) unless PTB_TIMEDELTA is set
                seconds = exc._retry_after.total_seconds() + 0.1
                log.info("rate limited on %s: chat %s waits %.1f s", endpoint, paused, seconds)
                until = loop.time() + seconds
                self._paused_until[paused] = max(until, self._paused_until.get(paused, 0.0))
        raise RuntimeError("unreachable: the last attempt returns or raises")

    async def _wait_pause(self, key: object, loop: asyncio.AbstractEventLoop) -> None:
        """Wait out a 429 pause of this chat, and of the whole bot; forget expired ones."""
        for k in (None, key) if key is not None else (None,):
            until = self._paused_until.get(k)
            if until is None:
                continue
            delay = until - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if self._paused_until.get(k, 0.0) <= loop.time():
                self._paused_until.pop(k, None)
