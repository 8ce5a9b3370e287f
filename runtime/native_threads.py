"""One BLAS thread per process: numpy's matrix products run on the calling thread.

Why: retrieval's dense leg is one matrix-vector product over the viewer's vectors. numpy
ships OpenBLAS with a pool of one thread per core, and it splits even that small
product across the pool and spin-waits for the parts. On the 2-core machines Alfred runs
on, next to the embedding thread, the database and other processes, a pool thread is
often descheduled, and the product waits for it: measured interleaved in one run at 10k
facts, the product took 9.8 ms at the median and 18 ms at p95 with the pool, 0.5 and
1.8 ms on one thread. A big index (20,000 facts and more) is still scanned by two
threads, without the pool's spinning: the search's thread and a helper share it block by
block (``memory/search/vector.py``), with the one-thread product's results bit for bit.

``ALFRED_BLAS_THREADS`` overrides the count (for a machine with cores to spare).
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

_applied: int | None = None


def limit_blas_threads(default: int = 1) -> int:
    """Cap the BLAS thread pool (once per process; later calls keep the first cap).

    Returns the cap in force. Without ``threadpoolctl`` nothing changes (and 0 is
    returned): speed is lost, never correctness.
    """
    global _applied
    if _applied is not None:
        return _applied
    try:
        limit = max(1, int(os.environ.get("ALFRED_BLAS_THREADS", default)))
    except ValueError:
        limit = default
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a declared dependency
        log.warning("threadpoolctl is missing: BLAS keeps one thread per core")
        _applied = 0
        return 0
    threadpool_limits(limits=limit, user_api="blas")
    _applied = limit
    return limit
