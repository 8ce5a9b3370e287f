"""Timing every registered job in the Prometheus metrics: shared by the formation,
admin and calendar registrations (:mod:`jobs.worker`, :mod:`jobs.admin.tasks`), kept
apart from both so neither imports the other for it."""

from __future__ import annotations

import functools
from typing import Any

from arq.worker import Retry

from runtime.metrics import get_metrics


def timed(name: str, job: Any) -> Any:
    """The job with its duration and outcome recorded in the Prometheus metrics
    (``alfred_job_seconds``, ``alfred_jobs``, ``alfred_job_failures``). Every registered
    job goes through it, admin jobs included. The process-wide metrics are looked up at
    each run, not at registration, so a worker built before :func:`set_metrics` (a test,
    a process that swaps its registry) still records into the one ``/metrics`` serves."""

    @functools.wraps(job)
    async def run(*args: Any, **kwargs: Any) -> Any:
        async with get_metrics().time_job(name, retry_types=(Retry,)):
            return await job(*args, **kwargs)

    return run
