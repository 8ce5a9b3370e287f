"""The versions of the partitions a viewer may see, kept between searches by a change stream.

Before each search the scope-index cache (:mod:`memory.search.scope_index`) asks which
partitions the viewer may see and at which version, and a version that moved makes it
catch up. That question was one read per search, and at 10,000 facts it cost more than
the keyword leg (the reply waited on it while the query was being embedded). The answer
changes only when a partition document does: a fact written, changed or forgotten bumps
its partition's version, a first fact in a new place creates one.

So the answer is kept per viewer, and a change stream on ``memory_partitions`` tells this
process when to drop it:

* **Another process's write** arrives as an event (a few milliseconds after the write on
  the embedded server; measured 3-5 ms). Every kept answer that lists that partition, or
  whose viewer may see the partition as it now is, is dropped, so the next search reads.
* **This process's write** drops every kept answer as the write starts and again as it
  ends, synchronously (:func:`integrations.mongo.turn_memo.observe_writes`): what a
  person was just told ("Got it", "Done") is what their next search sees.
* **A read that raced a change is not kept**: an answer is kept only if no event and no
  write of this process came after its read was sent.
* **Only while the stream is known to be alive.** The stream waits at most
  :data:`MAX_AWAIT_MS` for events; when it has not answered for :data:`STALE_AFTER_S`
  (server gone, loop stalled), nothing kept is served and every search reads, as it did
  before. When it opens again, all that was kept is dropped (what happened meanwhile was
  not seen). A server without change streams (a standalone ``mongod``) never opens one:
  every search reads.

What is kept came from reads with the privacy filter inside (:func:`visibility_filter`),
and it is kept per viewer (:func:`integrations.mongo.turn_reads.viewer_key`), never
shared: the feed only decides when to forget it. The window in which another process's
change is not yet seen is the event's delivery time, as a search that read the versions
just before a write always had.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from integrations.mongo import turn_memo
from integrations.mongo.turn_reads import viewer_key
from memory.constants import PARTITIONS
from memory.models import Partition, Viewer
from memory.privacy import is_visible

log = logging.getLogger(__name__)

Document = dict[str, Any]

#: How long one wait for events may last; an answer, even empty, proves the stream alive.
MAX_AWAIT_MS: Final = 400
#: Kept answers are served only if the stream answered within this time.
STALE_AFTER_S: Final = 1.5
#: Viewers whose answer is kept (least recently used dropped first).
MAX_VIEWERS: Final = 4096
#: Waits between attempts to open the stream again: doubling from the first to the last.
RETRY_S: Final = (0.5, 30.0)
#: Changes that touch one partition document; any other event drops everything.
_DOCUMENT_CHANGES: Final = frozenset({"insert", "update", "replace", "delete"})


@dataclass(frozen=True, slots=True)
class KeptAnswer:
    """One viewer's visible partitions as last read, and the keys among them."""

    viewer: Viewer
    keys: frozenset[str]
    documents: tuple[Document, ...]


class PartitionFeed:
    """Per-viewer partition documents, valid while the change stream vouches for them."""

    def __init__(
        self,
        db: AsyncDatabase[Document],
        *,
        max_await_ms: int = MAX_AWAIT_MS,
        stale_after_s: float = STALE_AFTER_S,
        max_viewers: int = MAX_VIEWERS,
    ) -> None:
        self._coll = db[PARTITIONS]
        self._max_await_ms = max_await_ms
        self._stale_after_s = stale_after_s
        self._max_viewers = max_viewers
        self._kept: OrderedDict[Hashable, KeptAnswer] = OrderedDict()
        self._changed_at = 0.0  # monotonic time of the last change seen or made
        self._heard_at = 0.0  # monotonic time the stream last answered
        self._open = False
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._reported = False
        #: Searches served from what was kept, and those that read: for tests and metrics.
        self.hits = 0
        self.misses = 0
        turn_memo.observe_writes(self)

    # --- what the fact store asks -----------------------------------------------------

    @property
    def live(self) -> bool:
        """Whether the stream is open and answered recently enough to be trusted."""
        return self._open and time.monotonic() - self._heard_at < self._stale_after_s

    @property
    def last_change(self) -> float:
        """When (:func:`time.monotonic`) a change was last seen or made."""
        return self._changed_at

    def kept(self, viewer: Viewer) -> list[Document] | None:
        """The viewer's partition documents if kept and still vouched for, else None
        (the caller reads, and offers what it read to :meth:`keep`)."""
        self._start()
        answer = self._kept.get(viewer_key(viewer)) if self.live else None
        if answer is None:
            self.misses += 1
            return None
        self._kept.move_to_end(viewer_key(viewer))
        self.hits += 1
        return list(answer.documents)

    def keep(self, viewer: Viewer, documents: Sequence[Document], *, read_at: float) -> None:
        """Keep what a read sent at ``read_at`` (:func:`time.monotonic`) returned, unless
        a change was seen or made since it was sent, or the stream is not vouching."""
        if not self.live or self._changed_at >= read_at:
            return
        key = viewer_key(viewer)
        self._kept[key] = KeptAnswer(
            viewer,
            frozenset(str(d["_id"]) for d in documents),
            tuple(dict(d) for d in documents),
        )
        self._kept.move_to_end(key)
        while len(self._kept) > self._max_viewers:
            self._kept.popitem(last=False)

    # --- what changes it --------------------------------------------------------------

    def local_write(self, collection: str) -> None:
        """This process starts or ends a write (see :func:`turn_memo.observe_writes`)."""
        if collection in (PARTITIONS, "*"):
            self._forget_all()

    def apply(self, event: Document) -> None:
        """Drop what one change-stream event makes stale."""
        if event.get("operationType") not in _DOCUMENT_CHANGES:
            self._forget_all()  # a drop, a rename, an invalidate: start again
            return
        self._changed_at = time.monotonic()
        key = str((event.get("documentKey") or {}).get("_id"))
        document = event.get("fullDocument")
        partition: Partition | None = None
        if document is not None:
            try:
                partition = Partition.from_fields(document)
            except (KeyError, ValueError):
                self._forget_all()  # not a partition as Alfred writes them: trust nothing
                return
        for held, answer in list(self._kept.items()):
            now_visible = partition is not None and is_visible(partition, answer.viewer)
            if key in answer.keys or now_visible:
                del self._kept[held]

    def _forget_all(self) -> None:
        self._changed_at = time.monotonic()
        self._kept.clear()

    # --- the stream -------------------------------------------------------------------

    def _start(self) -> None:
        """Open the stream on first use, in the loop that uses the store."""
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        wait = RETRY_S[0]
        while not self._closed:
            try:
                await self._follow()
                wait = RETRY_S[0]
            except PyMongoError as exc:
                # Once, not every retry: a standalone mongod will never have one.
                level = logging.DEBUG if self._reported else logging.INFO
                log.log(level, "partition change stream unavailable (%s): searches read", exc)
                self._reported = True
            except Exception:  # never lose the follower: searches read until it is back
                log.warning("partition change stream failed: searches read", exc_info=True)
            finally:
                self._open = False
                self._forget_all()
            await asyncio.sleep(wait)
            wait = min(wait * 2, RETRY_S[1])

    async def _follow(self) -> None:
        stream = await self._coll.watch(
            full_document="updateLookup", max_await_time_ms=self._max_await_ms
        )
        async with stream:
            # Opened before anything is kept: every change from here on is an event.
            self._forget_all()
            self._heard_at = time.monotonic()
            self._open = True
            while stream.alive and not self._closed:
                event = await stream.try_next()
                self._heard_at = time.monotonic()
                if event is not None:
                    self.apply(event)

    async def aclose(self) -> None:
        """Stop following; nothing kept is served any more."""
        self._closed = True
        self._open = False
        self._kept.clear()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            if task.get_loop() is not asyncio.get_running_loop():
                return  # started in a loop that is gone; cancelling is all there is to do
            with contextlib.suppress(asyncio.CancelledError, PyMongoError):
                await task
