"""The jobs' tunables, arq function names and Redis names, in one import for the entry
points (the bot, the CLI, benchmarks, tests). Each lives with its owner: the tunables
beside the duties that read them, the function names in the queue adapter (they are
part of its format), the Redis names in the composition root (they follow the settings).
"""

from __future__ import annotations

from integrations.redis.queue import COLD_SESSIONS, CONSOLIDATE, FORM_THREAD, REQUEUE_OUTBOX
from runtime.jobs import lock_prefix, namespace, progress_key, queue_name
from services.job_config import JobsConfig

__all__ = [
    "COLD_SESSIONS",
    "CONSOLIDATE",
    "FORM_THREAD",
    "REQUEUE_OUTBOX",
    "JobsConfig",
    "lock_prefix",
    "namespace",
    "progress_key",
    "queue_name",
]
