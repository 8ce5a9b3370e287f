"""Tunables of the background jobs.

Every value has a reason next to it; tests and benchmarks pass a smaller
:class:`JobsConfig` (short locks, quick retries) instead of waiting on real-time ones.
The duties read the budgets and back-offs, the composition root the lock's lifetime,
the worker its time limits: so it lives here, below all three.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobsConfig:
    """How long jobs may run, hold locks and wait before retrying."""

    #: A formation lock lives this long unless renewed; a live job renews it every third,
    #: so a killed worker's lock lapses within this time and another worker takes over.
    #: Short, because recovery from a killed worker waits for it (docs/reliability.md);
    #: long enough that a Redis restart (well under a second) does not lose it.
    lock_ttl: float = 4.0
    #: arq's "in progress" marker of a running formation job lives this long unless
    #: renewed (the job renews it every quarter, beside the lock): a killed worker's job
    #: is taken up again by any live worker within this time, instead of after arq's own
    #: marker lifetime (the job timeout + 10 s). Longer than ``lock_ttl``, so the lock has
    #: lapsed by the time another worker starts the job.
    job_lease: float = 6.0
    #: A job that finds its thread locked is retried after this long, growing per try.
    lock_busy_defer: float = 5.0
    #: Transient failures (database, Redis, LLM down) back off ``base * 2**(try-1)``.
    retry_base: float = 2.0
    retry_max: float = 300.0
    #: One run forms batches for at most this long, then the job is run again at once
    #: (same request, still open), so a 10,000-message backlog never hits the timeout.
    form_budget: float = 300.0
    #: arq's timeout of a formation job: the budget plus one slow batch (3 LLM calls
    #: with retries) to finish.
    form_job_timeout: float = 900.0
    #: arq runs of one formation job (lock waits and budget continuations count too)
    #: before arq gives up; the outbox request stays open and the requeue cron queues it
    #: again later (with a fresh count).
    form_max_tries: int = 12
    #: An open request older than this without a live job is queued again.
    requeue_after: float = 120.0
    #: Requeues after which a request is marked failed (its messages stay unformed and
    #: are picked up by the next request of the thread).
    max_requeues: int = 50
    #: A job that looks orphaned (arq says in progress, its lock is gone) is checked again
    #: after this long before its in-progress marker is cleared.
    orphan_confirm: float = 1.0
    #: Cron duties' own time limit (a cold-session sweep queues jobs; it does not form).
    cron_timeout: float = 120.0

    def backoff(self, job_try: int) -> float:
        """Delay before retry number ``job_try`` (1-based) after a transient failure."""
        return float(min(self.retry_max, self.retry_base * 2 ** max(0, job_try - 1)))

    def lock_wait(self, job_try: int) -> float:
        """Delay before a job that found its thread locked looks again."""
        return float(min(60.0, self.lock_busy_defer * max(1, job_try)))
