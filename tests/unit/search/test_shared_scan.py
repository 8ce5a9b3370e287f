"""A big scan shared with a helper thread gives exactly the one-thread product, and never
waits on a helper that is busy elsewhere (memory/search/vector.py).

BLAS runs on one thread in Alfred (runtime/native_threads.py), and so it does here: its
own pool splits a product at rows of its choosing, where its kernel's last rows are
summed in another order, so the pool's product is not the reference.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from memory.search import vector
from memory.search.vector import SCAN_BLOCK_ROWS, SHARED_SCAN_ROWS, cosine_scores

WAIT = 30.0  # a deadline, never a measured duration


@pytest.fixture(autouse=True)
def one_blas_thread() -> Iterator[None]:
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _unit_rows(rows: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, 384), dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.mark.parametrize("rows", [SHARED_SCAN_ROWS, 3 * SCAN_BLOCK_ROWS + 5, 50_001])
def test_a_shared_scan_equals_the_one_thread_product(rows: int) -> None:
    matrix = _unit_rows(rows, seed=rows)
    for query in _unit_rows(20, seed=7):
        shared = cosine_scores(matrix, query)
        assert shared.dtype == np.float32
        assert np.array_equal(shared, matrix @ query)  # bit for bit, not approximately


def test_a_scan_does_not_wait_for_a_helper_that_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper is held by another task for the whole scan: the calling thread scans
    every block itself and returns, where waiting for the helper would never end."""
    matrix = _unit_rows(SHARED_SCAN_ROWS + 100, seed=1)
    query = _unit_rows(1, seed=2)[0]
    helper = vector._scan_helper()
    if helper is None:  # one core: no helper, and nothing shared to wait on
        pytest.skip("a one-core machine scans alone")
    release = threading.Event()
    held = helper.submit(release.wait, 4 * WAIT)  # released below, once the scan is over
    result: list[np.ndarray] = []
    scanning = threading.Thread(target=lambda: result.append(cosine_scores(matrix, query)))
    try:
        scanning.start()
        scanning.join(WAIT)
        assert not scanning.is_alive(), "the scan waited for the busy helper"
        assert np.array_equal(result[0], matrix @ query)
    finally:
        release.set()
        held.result(WAIT)
        scanning.join(WAIT)


def test_a_small_scan_stays_on_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_helper() -> None:
        raise AssertionError("a small scan asked for the helper")

    monkeypatch.setattr(vector, "_scan_helper", no_helper)
    matrix = _unit_rows(SHARED_SCAN_ROWS - 1, seed=3)
    query = _unit_rows(1, seed=4)[0]
    assert np.array_equal(cosine_scores(matrix, query), matrix @ query)
