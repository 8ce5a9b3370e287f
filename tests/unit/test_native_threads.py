"""Start-up caps numpy's BLAS pool at one thread (see runtime/native_threads.py)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from runtime.native_threads import limit_blas_threads


def test_blas_runs_on_one_thread_after_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALFRED_BLAS_THREADS", raising=False)
    np.ones((4, 4), dtype=np.float32) @ np.ones(4, dtype=np.float32)  # BLAS is loaded
    assert limit_blas_threads() == 1
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas, "numpy's BLAS should be visible to threadpoolctl"
    assert all(pool["num_threads"] == 1 for pool in blas)
