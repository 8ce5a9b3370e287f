"""What the bot calls after journaling a message: request a formation when one is due.

Formation is due every 45 messages or ~1000 tokens of a thread, never under 4 messages
(DESIGN.md §5); the thread's counters (``pending_messages``/``pending_tokens``) are
kept by ``directory.touch`` as messages are journaled. When due:

1. the request is written to the outbox (MongoDB) — from here on it cannot be lost;
2. the counters are reset;
3. the job is queued with the request id as its arq id (so arq refuses a duplicate).

If the queue is down, step 3 is logged and skipped: the request stays ``pending`` and the
requeue cron queues it once the queue is back. Nothing here raises to the caller: the
user's message is already journaled, and a reply must never fail because background
work could not be scheduled.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from memory.constants import (
    FORMATION_EVERY_MESSAGES,
    FORMATION_EVERY_TOKENS,
    FORMATION_MIN_MESSAGES,
)
from memory.job_ports import (
    FormationRequest,
    JobErrors,
    JobQueue,
    Outbox,
    PendingCounters,
    RequestKind,
    RequestStatus,
)
from memory.ports import Clock

log = logging.getLogger(__name__)


def formation_due(messages: int, tokens: int) -> bool:
    """Every 45 messages or 1000 tokens, never under 4 messages."""
    if messages < FORMATION_MIN_MESSAGES:
        return False
    return messages >= FORMATION_EVERY_MESSAGES or tokens >= FORMATION_EVERY_TOKENS


class FormationTrigger:
    """Turns a thread's pending counters into an outbox request and a queued job.

    ``queue`` may be None (no Redis at all): requests then stay pending until a
    requeue (the worker's cron, or :func:`jobs.inprocess.run_due_crons`) picks them up.
    The composition root builds it (``runtime.jobs.formation_trigger``).
    """

    def __init__(
        self,
        directory: PendingCounters,
        outbox: Outbox,
        clock: Clock,
        queue: JobQueue | None,
        errors: JobErrors,
    ) -> None:
        self.directory = directory
        self.outbox = outbox
        self.clock = clock
        self.queue = queue
        self.errors = errors

    async def after_message(self, thread_id: str) -> FormationRequest | None:
        """Request a formation of ``thread_id`` if one is due; the request, or None.

        The returned request's ``status`` says whether its job was queued (``queued``)
        or is waiting for Redis (``pending``). Never raises.
        """
        try:
            messages, tokens = await self.directory.pending(thread_id)
            if not formation_due(messages, tokens):
                return None
            now = self.clock.now()
            request, created = await self.outbox.request(thread_id, RequestKind.FORM, now)
            await self.directory.reset_pending(thread_id)
            log.info(
                "formation requested thread=%s request=%s messages=%d tokens=%d new=%s",
                thread_id,
                request.id,
                messages,
                tokens,
                created,
            )
        except Exception:
            log.exception("formation request for thread %s not written; retried later", thread_id)
            return None
        return await self._enqueue(request)

    async def _enqueue(self, request: FormationRequest) -> FormationRequest:
        if self.queue is None:
            log.warning("formation request %s pending: no job queue configured", request.id)
            return request
        try:
            queued = await self.queue.enqueue_form(request.id)
        except self.errors.queue_failed as exc:
            log.warning(
                "formation request %s pending: the job queue is unreachable (%s); "
                "the requeue cron will queue it",
                request.id,
                type(exc).__name__,
            )
            return request
        if not queued and request.status is RequestStatus.QUEUED:
            # Its job is already queued or running (arq refused the duplicate); keep the
            # request's queue time so the requeue cron's age check is not pushed back.
            return request
        now = self.clock.now()
        try:
            await self.outbox.mark_queued(request.id, now)
        except Exception:
            # The job is queued; the outbox says pending. The requeue cron sees a live
            # job and only corrects the status.
            log.exception("formation request %s queued but not marked so", request.id)
            return request
        return replace(request, status=RequestStatus.QUEUED, queued_at=now)
