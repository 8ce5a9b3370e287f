"""What the background jobs do, written without arq so any queue (or none) can run it.

* :func:`process_request` — one outbox request: under the thread's lock, form batch
  after batch while at least 4 user messages are unformed, close the session for a
  ``cold`` request, consolidate what is due, mark the request done.
* :func:`cold_sessions` — every thread whose session went cold gets a ``cold`` request,
  and every quiet thread whose oldest unformed user message is 6 hours old a ``quiet``
  one, formed however few messages it has (nothing waits forever, DESIGN.md §5).
* :func:`requeue_outbox` — open requests without a live job are queued again, and jobs
  orphaned by a killed worker are released so another worker re-runs them.

Failures are sorted here: a busy lock raises :class:`LockBusy`, a dependency that is
down raises :class:`Transient` with a back-off; :mod:`jobs.tasks` turns both into arq
retries. Formation itself is idempotent (facts unique per partition and content hash,
reflection ids derived from the batch, messages marked formed last), so running a
request twice — after a crash, a lost lock or a duplicate job — duplicates nothing.

Everything outside the domain is a port of :mod:`memory.job_ports` (outbox, locks,
queue, observer), wired by the composition root (:mod:`runtime.jobs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from memory.consolidation import ConsolidationService
from memory.constants import FORMATION_MIN_MESSAGES, FORMATION_QUIET_AFTER_SECONDS
from memory.errors import RateLimited
from memory.formation import FormationFailed, FormationReport, FormationService
from memory.job_ports import (
    FormationDirectory,
    FormationObserver,
    FormationRequest,
    JobErrors,
    JobQueue,
    JobState,
    Lease,
    LockBusy,
    Outbox,
    QuietThreads,
    RecallCounts,
    RequestKind,
    RequestStatus,
    ThreadLocks,
    describe_error,
)
from memory.models import Partition, ReflectionScope, Thread
from memory.ports import Clock
from services.job_config import JobsConfig

log = logging.getLogger(__name__)


class MoreLeft(Exception):
    """The time budget ran out with messages still unformed: run the job again at once.

    The request stays open between runs, so a crash in between loses nothing."""

    def __init__(self, outcome: RequestOutcome) -> None:
        super().__init__(f"request {outcome.request_id}: more messages to form")
        self.outcome = outcome


class Transient(Exception):
    """A retryable failure: run the job again after ``defer`` seconds."""

    def __init__(self, defer: float, cause: BaseException) -> None:
        super().__init__(describe_error(cause))
        self.defer = defer
        self.cause = cause


def transient_delay(
    exc: BaseException, job_try: int, config: JobsConfig, errors: JobErrors
) -> float | None:
    """The back-off for a retryable failure, or None when retrying would not help."""
    if isinstance(exc, RateLimited) and exc.retry_after:
        return max(float(exc.retry_after), config.retry_base)
    if isinstance(exc, errors.transient):
        return config.backoff(job_try)
    return None


@dataclass
class JobsRuntime:
    """What the duties need: the domain services they drive, the directory, the outbox,
    locks, tunables and (when jobs run through a queue) the queue. Without a queue,
    duties do their work inline. The composition root builds it (``runtime.jobs``)."""

    formation: FormationService
    consolidation: ConsolidationService
    directory: FormationDirectory
    clock: Clock
    outbox: Outbox
    locks: ThreadLocks
    config: JobsConfig
    #: Which driver errors are transient or mean the queue is down: required, because
    #: only the composition root knows the drivers (a default would miss their types).
    errors: JobErrors
    queue: JobQueue | None = None
    observer: FormationObserver | None = None
    #: Finds threads whose few unformed messages waited too long; None: no such sweep.
    quiet: QuietThreads | None = None
    #: The replies' recall counts, added to the facts off the reply path; None: none kept.
    recalls: RecallCounts | None = None

    def transient_delay(self, exc: BaseException, job_try: int) -> float | None:
        """The back-off for a retryable failure of one of these duties, or None."""
        return transient_delay(exc, job_try, self.config, self.errors)


# --- forming a backlog --------------------------------------------------------------


@dataclass
class BacklogReport:
    """The sum of the formations one request ran."""

    formations: int = 0
    messages: int = 0
    facts_added: int = 0
    facts_updated: int = 0
    facts_invalidated: int = 0
    reflections_added: int = 0
    llm_calls: int = 0
    set_aside: int = 0
    more_left: bool = False
    stopped: str | None = None

    def add(self, report: FormationReport) -> None:
        self.formations += 1
        self.messages += report.messages
        self.facts_added += report.facts_added
        self.facts_updated += report.facts_updated
        self.facts_invalidated += report.facts_invalidated
        self.reflections_added += report.reflections_added
        self.llm_calls += report.llm_calls


async def form_backlog(
    formation: FormationService,
    thread_id: str,
    lease: Lease,
    *,
    min_messages: int = FORMATION_MIN_MESSAGES,
    deadline: float | None = None,
    observer: FormationObserver | None = None,
) -> BacklogReport:
    """Form batch after batch until fewer than ``min_messages`` user messages are left
    (they stay for later, never dropped) or the ``deadline`` (monotonic) passes.

    A batch the model failed on raises :class:`FormationFailed` (retryable: the job
    backs off and the batch is tried again); one set aside after too many failures is
    stepped over, so the thread's later messages form now."""
    total = BacklogReport()
    last_batch: str | None = None
    while True:
        lease.check()
        try:
            report = await formation.form_thread(thread_id, min_messages=min_messages)
        except FormationFailed as exc:
            if observer is not None:
                observer.record_formation(exc.report)
            raise
        if observer is not None:
            observer.record_formation(report)
        if report.set_aside:
            total.set_aside += report.set_aside
            total.llm_calls += report.llm_calls
            continue
        if report.skipped:
            total.stopped = report.skipped
            return total
        if report.batch_id == last_batch:
            # The batch was not marked formed: looping would form it forever.
            log.error("formation of thread %s repeated batch %s; stopping", thread_id, last_batch)
            total.stopped = "batch repeated"
            return total
        last_batch = report.batch_id
        total.add(report)
        if deadline is not None and time.monotonic() >= deadline:
            total.more_left = True
            total.stopped = "time budget used; the job runs again"
            return total


# --- one request --------------------------------------------------------------------


@dataclass
class RequestOutcome:
    """What one run of a request did (stored on the request, returned by the job)."""

    request_id: str
    thread_id: str | None
    kind: str | None
    status: str  # "done" | "skipped" | "continued"
    backlog: BacklogReport = field(default_factory=BacklogReport)
    consolidated: int = 0
    session_closed: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def session_partition(thread: Thread) -> Partition:
    """Where a thread's session reflections live (as formation writes them)."""
    return thread.home_partition()


async def process_request(
    rt: JobsRuntime,
    request_id: str,
    *,
    job_id: str | None = None,
    job_try: int = 1,
) -> RequestOutcome:
    """Run one outbox request to completion (see the module docstring).

    ``job_id`` names the lock's owner (the arq job id); inline runs get their own.
    Raises :class:`LockBusy` if another job forms the thread, :class:`MoreLeft` when the
    time budget ran out before the backlog did, :class:`Transient` when a dependency
    failed (the request stays open, with ``last_error``).
    """
    owner = job_id or f"inline-{uuid.uuid4().hex}"
    inline = rt.queue is None
    try:
        request = await rt.outbox.get(request_id)
        if request is None or not request.open:
            return RequestOutcome(
                request_id,
                request.thread_id if request else None,
                request.kind.value if request else None,
                "skipped",
            )
        async with rt.locks.hold(request.thread_id, owner) as lease:
            await rt.outbox.begin(request.id, rt.clock.now())
            # Inline runs have no job timeout to respect: they finish the backlog.
            deadline = None if inline else time.monotonic() + rt.config.form_budget
            outcome = await _run_locked(rt, request, lease, deadline)
        if outcome.status == "continued":
            raise MoreLeft(outcome)  # after the lock is released, so the next run gets it
        return outcome
    except (LockBusy, MoreLeft):
        raise
    except Exception as exc:
        with contextlib.suppress(Exception):
            await rt.outbox.note_error(request_id, exc)
        delay = rt.transient_delay(exc, job_try)
        if delay is None:
            raise
        log.warning(
            "formation request %s: %s; retrying in %.1fs", request_id, describe_error(exc), delay
        )
        raise Transient(delay, exc) from exc


async def _run_locked(
    rt: JobsRuntime, request: FormationRequest, lease: Lease, deadline: float | None
) -> RequestOutcome:
    outcome = RequestOutcome(request.id, request.thread_id, request.kind.value, "done")
    # A quiet thread is formed down to its last user message: it waited long enough.
    least = 1 if request.kind is RequestKind.QUIET else FORMATION_MIN_MESSAGES
    outcome.backlog = await form_backlog(
        rt.formation,
        request.thread_id,
        lease,
        min_messages=least,
        deadline=deadline,
        observer=rt.observer,
    )
    if outcome.backlog.more_left:
        # The request stays open: the same job runs again (crash-safe, nothing to hand over).
        outcome.status = "continued"
        return outcome
    if request.kind is RequestKind.COLD:
        thread = await rt.directory.thread(request.thread_id)
        if thread is not None and request.session_id is not None:
            lease.check()
            report = await rt.consolidation.consolidate(
                ReflectionScope.SESSION, session_partition(thread), request.session_id, force=True
            )
            outcome.consolidated += int(report is not None)
            await rt.directory.close_session(thread.id, request.session_id)
            outcome.session_closed = True
            if outcome.backlog.formations:
                await rt.directory.reset_pending(thread.id)
    lease.check()
    outcome.consolidated += len(await rt.consolidation.consolidate_due())
    await rt.outbox.mark_done(request.id, rt.clock.now(), outcome.as_dict())
    return outcome


async def _enqueue(
    rt: JobsRuntime, request_id: str, status: RequestStatus = RequestStatus.PENDING
) -> bool:
    """Queue a request's job and record it; False (and logged) when the queue is down:
    the request stays pending and the requeue cron queues it later. A request already
    ``queued`` whose job arq still holds keeps its queue time (the requeue age)."""
    if rt.queue is None:  # no queue configured: the request stays pending
        return False
    try:
        queued = await rt.queue.enqueue_form(request_id)
    except rt.errors.queue_down as exc:
        log.warning(
            "formation request %s kept pending: the job queue is unreachable (%s)",
            request_id,
            type(exc).__name__,
        )
        return False
    if queued or status is RequestStatus.PENDING:
        # Queued now, or its job existed while the outbox still said pending.
        await rt.outbox.mark_queued(request_id, rt.clock.now())
    return True


# --- crons ---------------------------------------------------------------------------


@dataclass
class ColdReport:
    """Cold threads found, and what happened to each request."""

    cold: int = 0
    #: Quiet threads whose oldest unformed user message waited 6 hours.
    quiet: int = 0
    queued: list[str] = field(default_factory=list)
    processed: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)


async def cold_sessions(rt: JobsRuntime, now: datetime | None = None) -> ColdReport:
    """Give every thread whose session went cold a ``cold`` request; queue it (or, with
    no queue, run it here)."""
    now = now or rt.clock.now()
    report = ColdReport()
    for thread, session_id in await rt.directory.cold_threads(now):
        report.cold += 1
        request, _ = await rt.outbox.request(
            thread.id, RequestKind.COLD, now, session_id=session_id
        )
        await _run_or_queue(rt, request, report)
    if rt.quiet is not None:
        cutoff = now - timedelta(seconds=FORMATION_QUIET_AFTER_SECONDS)
        for thread_id in await rt.quiet.quiet_threads(cutoff):
            if not await rt.formation.may_form(thread_id):
                continue  # memory is off there: its messages wait, unrequested
            report.quiet += 1
            request, _ = await rt.outbox.request(thread_id, RequestKind.QUIET, now)
            await _run_or_queue(rt, request, report)
    return report


async def _run_or_queue(rt: JobsRuntime, request: FormationRequest, report: ColdReport) -> None:
    """Queue a cron's request (or, with no queue, run it here)."""
    if rt.queue is not None:
        if await _enqueue(rt, request.id, request.status):
            report.queued.append(request.id)
        return
    try:
        outcome = await process_request(rt, request.id)
    except (LockBusy, Transient) as exc:
        log.warning(
            "%s request of thread %s left for later: %s", request.kind, request.thread_id, exc
        )
        report.deferred.append(request.id)
    else:
        report.processed.append(outcome.as_dict())


@dataclass
class RequeueReport:
    """Requests queued again, run inline, given up; orphaned jobs released."""

    requeued: list[str] = field(default_factory=list)
    processed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    unreachable: bool = False


async def requeue_outbox(rt: JobsRuntime, now: datetime | None = None) -> RequeueReport:
    """Open requests older than ``requeue_after`` with no live job are queued again (run
    inline without a queue); then orphans of killed workers are released."""
    now = now or rt.clock.now()
    report = RequeueReport()
    cutoff = now - timedelta(seconds=rt.config.requeue_after)
    for request in await rt.outbox.due_for_requeue(cutoff):
        if rt.queue is None:
            try:
                await process_request(rt, request.id)
            except (LockBusy, Transient) as exc:
                log.warning("formation request %s left for later: %s", request.id, exc)
            else:
                report.processed.append(request.id)
            continue
        try:
            state = await rt.queue.state(request.id)
            if state.live:
                if request.status is RequestStatus.PENDING:
                    await rt.outbox.mark_queued(request.id, now)
                continue
            if request.requeues >= rt.config.max_requeues:
                await rt.outbox.mark_failed(
                    request.id, now, f"given up after {request.requeues} requeues"
                )
                report.failed.append(request.id)
                continue
            if state is JobState.COMPLETE:
                await rt.queue.forget_result(request.id)  # a failed run's result
            await rt.queue.enqueue_form(request.id)
        except rt.errors.queue_down as exc:
            log.warning("requeue skipped: the job queue is unreachable (%s)", type(exc).__name__)
            report.unreachable = True
            return report
        await rt.outbox.mark_queued(request.id, now, requeued=True)
        report.requeued.append(request.id)
    if rt.queue is not None:
        report.orphans = await recover_orphans(rt)
    return report


async def recover_orphans(rt: JobsRuntime) -> list[str]:
    """Release jobs that arq thinks are running but whose worker died.

    A live formation job holds its thread's lock under its own job id and renews it;
    a killed worker's lock lapses within ``lock_ttl``. A job still "in progress" without
    its lock, twice ``orphan_confirm`` apart (a job that has just started takes its lock
    within milliseconds), is an orphan: its in-progress marker is cleared and any worker
    runs it again now rather than after arq's in-progress timeout. A false positive is
    harmless: the lock still lets only one run form the thread.
    """
    queue = rt.queue
    if queue is None:  # without a queue no job can be in progress
        return []

    async def orphaned(request: FormationRequest) -> bool:
        if not await queue.in_progress_for(request.id):
            return False
        holder = await rt.locks.holder(request.thread_id)
        return holder is None or not holder.startswith(f"{request.id}:")

    suspects = [r for r in await rt.outbox.open_requests() if await orphaned(r)]
    if not suspects:
        return []
    await asyncio.sleep(rt.config.orphan_confirm)
    released = []
    for request in suspects:
        if await orphaned(request) and await queue.release_orphan(request.id):
            log.warning("formation job %s was orphaned by a dead worker; released", request.id)
            released.append(request.id)
    return released


# --- admin -------------------------------------------------------------------------


async def request_formation(rt: JobsRuntime, thread_id: str) -> str:
    """Ask for a formation of ``thread_id`` now, as the trigger does: an outbox request,
    queued (or, with no queue, run here; a busy lock or a failure leaves it open for
    the requeue cron). Returns the request id."""
    request, _ = await rt.outbox.request(thread_id, RequestKind.FORM, rt.clock.now())
    if rt.queue is not None:
        await _enqueue(rt, request.id, request.status)
        return request.id
    try:
        await process_request(rt, request.id)
    except (LockBusy, Transient) as exc:
        log.warning("formation of thread %s left for later: %s", thread_id, exc)
    return request.id


async def consolidate_now(
    rt: JobsRuntime,
    scope: ReflectionScope,
    partition: Partition,
    session_id: str | None = None,
    *,
    force: bool = True,
) -> dict[str, Any] | None:
    """Consolidate one (scope, partition[, session]) now (the operator's job)."""
    report = await rt.consolidation.consolidate(scope, partition, session_id, force=force)
    return None if report is None else {**asdict(report), "scope": report.scope.value}


# --- recall counts ------------------------------------------------------------------


#: The lock that keeps recall folds one at a time (no thread id looks like it).
RECALL_FOLD_LOCK: Final = "recall-counts"


async def fold_recalls(rt: JobsRuntime) -> int:
    """Add the recall counts the replies logged to their facts (a fact document's update
    is costly on the embedded server, so the bot only logs them: ``recall_log``).

    Under a lock, so two workers' crons never fold at once; the one that finds it taken
    leaves the work to the holder. If the lock is lost midway the fold stops, and the
    next one finishes what it marked."""
    if rt.recalls is None:
        return 0
    try:
        async with rt.locks.hold(RECALL_FOLD_LOCK, "fold") as lease:
            return await rt.recalls.fold(go_on=lambda: not lease.lost)
    except LockBusy:
        return 0
