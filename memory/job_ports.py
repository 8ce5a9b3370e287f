"""The ports of the background formation duties: the outbox, the thread locks, the job
queue and an observer of formations.

The duties (``services.formation_duties``, ``services.trigger``) are written against
these, so the durable record (MongoDB), the locks and queue (Redis/arq) and the metrics
(Prometheus) can each be replaced, or faked in a test, without touching the use cases.
The request and job value types live here too: both sides of each port speak them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, Protocol

from memory.errors import Unavailable
from memory.formation import FormationFailed, FormationReport
from memory.models import Thread

#: Characters of an error kept on a request: enough to diagnose, never a transcript.
ERROR_CHARS: Final = 500


class RequestKind(StrEnum):
    """Why formation was asked for: the message/token threshold, a session gone cold, or
    a quiet thread whose few unformed messages are old enough to form anyway."""

    FORM = "form"
    COLD = "cold"
    QUIET = "quiet"


class RequestStatus(StrEnum):
    """Where a request is in its life: written, queued, finished, or given up."""

    PENDING = "pending"
    QUEUED = "queued"
    DONE = "done"
    FAILED = "failed"


OPEN_STATUSES: Final = (RequestStatus.PENDING, RequestStatus.QUEUED)


@dataclass(frozen=True)
class FormationRequest:
    """One request to form a thread's unformed messages (and, for ``cold``, to close a
    session: force-consolidate its reflections and mark it closed)."""

    id: str
    thread_id: str
    kind: RequestKind
    status: RequestStatus
    created_at: datetime
    session_id: str | None = None
    queued_at: datetime | None = None
    started_at: datetime | None = None
    done_at: datetime | None = None
    attempts: int = 0
    requeues: int = 0
    last_error: str | None = None
    result: dict[str, Any] | None = None

    @property
    def open(self) -> bool:
        return self.status in OPEN_STATUSES


def describe_error(exc: BaseException) -> str:
    """An exception as ``Type: message``, clipped (what goes into ``last_error``)."""
    text = f"{type(exc).__name__}: {exc}"
    return text[:ERROR_CHARS]


class Outbox(Protocol):
    """The durable record of formation requests: written before any job is queued, so
    a request survives a queue that is down, emptied or restarted."""

    async def request(
        self, thread_id: str, kind: RequestKind, at: datetime, *, session_id: str | None = None
    ) -> tuple[FormationRequest, bool]:
        """The open request of ``(thread_id, kind)``, created if none: ``(request, created)``."""
        ...

    async def get(self, request_id: str) -> FormationRequest | None: ...

    async def mark_queued(
        self, request_id: str, at: datetime, *, requeued: bool = False
    ) -> bool: ...

    async def begin(self, request_id: str, at: datetime) -> FormationRequest | None: ...

    async def note_error(self, request_id: str, error: BaseException) -> None: ...

    async def mark_done(
        self, request_id: str, at: datetime, result: dict[str, Any] | None = None
    ) -> bool: ...

    async def mark_failed(self, request_id: str, at: datetime, error: str) -> bool: ...

    async def due_for_requeue(self, older_than: datetime) -> list[FormationRequest]: ...

    async def open_requests(self, thread_id: str | None = None) -> list[FormationRequest]: ...


# --- locks ---------------------------------------------------------------------------


class LockBusy(Exception):
    """Another job holds the thread's formation lock."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id} is being formed by another job")
        self.thread_id = thread_id


class LockLost(Exception):
    """The lock lapsed while the job ran (Redis restarted, or renewals failed)."""


class Lease(Protocol):
    """A held lock."""

    @property
    def lost(self) -> bool:
        """True once the lock may be held by someone else: stop before the next batch."""
        ...

    def check(self) -> None:
        """Raise :class:`LockLost` if the lock was lost."""
        ...


class ThreadLocks(Protocol):
    """Per-thread mutual exclusion for formation."""

    def hold(self, thread_id: str, owner: str) -> contextlib.AbstractAsyncContextManager[Lease]:
        """Hold the thread's lock for the block; raises :class:`LockBusy` if taken."""
        ...

    async def holder(self, thread_id: str) -> str | None:
        """The current token (``"<owner>:<random>"``), or None when free."""
        ...


# --- the queue -----------------------------------------------------------------------


class JobState(StrEnum):
    """The queue's view of one job id."""

    QUEUED = "queued"
    DEFERRED = "deferred"
    IN_PROGRESS = "in_progress"
    COMPLETE = "complete"
    NOT_FOUND = "not_found"

    @property
    def live(self) -> bool:
        """A job that will still run (or is running)."""
        return self in (JobState.QUEUED, JobState.DEFERRED, JobState.IN_PROGRESS)


class JobQueue(Protocol):
    """The queue of formation jobs. A formation job's id is its outbox request id, so
    the queue itself refuses a second job for the same request."""

    async def enqueue_form(self, request_id: str, *, defer: float | None = None) -> bool:
        """Queue the formation of ``request_id``; False when its job already exists."""
        ...

    async def state(self, job_id: str) -> JobState: ...

    async def forget_result(self, job_id: str) -> None:
        """Drop a finished job's kept result so the same id can be queued again."""
        ...

    async def in_progress_for(self, job_id: str) -> bool: ...

    async def release_orphan(self, job_id: str) -> bool:
        """Clear the in-progress marker of a job whose worker died."""
        ...


# --- failures and observation ---------------------------------------------------------


@dataclass(frozen=True)
class JobErrors:
    """Which exceptions mean what to the duties. The drivers' own types (a database or
    Redis connection error) are added by the composition root, so the use cases never
    import a driver.

    * ``transient``: a dependency is down or slow, or the model's answer to a batch was
      invalid: retry later, never give up at once;
    * ``queue_down``: the queue cannot be reached (the request stays pending);
    * ``queue_failed``: any failure of the queue when the trigger enqueues.
    """

    transient: tuple[type[BaseException], ...] = (
        Unavailable,
        ConnectionError,
        TimeoutError,
        LockLost,
        FormationFailed,
    )
    queue_down: tuple[type[BaseException], ...] = (OSError,)
    queue_failed: tuple[type[BaseException], ...] = (OSError,)


class FormationObserver(Protocol):
    """Told about every formation a duty runs (metrics count them)."""

    def record_formation(self, report: FormationReport) -> None: ...


# --- what the duties and the trigger read of the directory ------------------------------


class PendingCounters(Protocol):
    """A thread's messages and tokens not yet requested for formation."""

    async def pending(self, thread_id: str) -> tuple[int, int]: ...

    async def reset_pending(self, thread_id: str) -> None: ...


class QuietThreads(Protocol):
    """Where unformed user messages have waited too long (the journal knows)."""

    async def quiet_threads(self, older_than: datetime, *, limit: int = 500) -> list[str]:
        """Threads with an unformed user message created at or before ``older_than``."""
        ...


class RecallCounts(Protocol):
    """Recall counts the replies logged, waiting to be added to their facts."""

    async def fold(self, *, go_on: Callable[[], bool] = ...) -> int:
        """Add every waiting count to its fact; return how many facts were updated.
        One fold at a time; ``go_on`` is asked before every write (False: stop, the
        rest waits for the next fold)."""
        ...


class FormationDirectory(PendingCounters, Protocol):
    """The directory reads and writes of the formation duties."""

    async def thread(self, thread_id: str) -> Thread | None: ...

    async def cold_threads(self, now: datetime) -> Sequence[tuple[Thread, str]]: ...

    async def close_session(self, thread_id: str, session_id: str) -> None: ...
