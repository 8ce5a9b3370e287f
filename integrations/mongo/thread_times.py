"""The times of Alfred's messages, kept until their thread's next update adds them to the
times that bound a turn's history read.

A turn reads the thread's last :data:`~integrations.mongo.turn_reads.HISTORY_PREFETCH`
messages from a time window (:func:`integrations.mongo.directory.history_from`), because
the embedded server fetches every message a filter matches before it sorts. The thread's
document keeps the times of its last messages for that, but only the user messages' are
written there: each comes with the thread's update anyway, and Alfred's replies are
journaled alone, after the model. In a conversation where every message is answered, the
window then held twice the messages the read returns.

The journal notes here the time of each message of Alfred's it journals, and the thread's
next update (the next user message, a write it makes anyway) takes them along. The bound
stays safe: it is the oldest of as many *real* messages' times as the read returns, so at
least that many messages are at or after it. A time this process does not know (a reply
another process journaled) only leaves the window wider, as before. Each time is taken
once, and floored to the millisecond the database stores, so it is never later than the
message it stands for.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime
from typing import Final

from integrations.mongo.turn_reads import HISTORY_PREFETCH

#: Threads with times waiting; the oldest are dropped beyond it (a wider window, no more).
MAX_THREADS: Final = 4096


def stored_time(at: datetime) -> datetime:
    """``at`` as the database keeps it (milliseconds), never later than it."""
    return at.replace(microsecond=at.microsecond - at.microsecond % 1000)


class JournaledTimes:
    """Times of messages journaled apart from their thread's update, by thread."""

    def __init__(self, max_threads: int = MAX_THREADS) -> None:
        self._times: OrderedDict[str, list[datetime]] = OrderedDict()
        self._max_threads = max_threads

    def add(self, thread_id: str, at: datetime) -> None:
        """A message of the thread was journaled at ``at`` (and its thread not updated)."""
        times = self._times.setdefault(thread_id, [])
        times.append(stored_time(at))
        del times[:-HISTORY_PREFETCH]  # the thread keeps no more (its update's ``$slice``)
        self._times.move_to_end(thread_id)
        while len(self._times) > self._max_threads:
            self._times.popitem(last=False)

    def take(self, thread_id: str) -> list[datetime]:
        """The times waiting for ``thread_id``, oldest first; they are given once."""
        return sorted(self._times.pop(thread_id, []))

    def clear(self) -> None:
        """Messages were deleted: a time of one of them would stand for nothing."""
        self._times.clear()
