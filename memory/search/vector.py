"""Exact cosine top-k over a float32 matrix, for the dense leg outside Atlas.

Why exact and numpy: a household's partition holds hundreds to tens of thousands of facts;
a matrix-vector product over 10,000 × 384 float32 is ~1 ms, so an approximate index would
add a dependency and recall loss for nothing. ``np.argpartition`` selects the top k in
O(n) before sorting only those k.

Rows are assumed L2-normalised (every :class:`memory.ports.Embedder` guarantees it), so
the dot product is the cosine.

A big matrix (:data:`SHARED_SCAN_ROWS` rows and more) is scanned by the calling thread
and one helper thread together, each taking blocks of rows until none is left. BLAS
runs on one thread per process (``runtime/native_threads.py``: its own pool spin-waits
for descheduled threads), but at 100,000 facts one thread cannot read 150 MB of vectors
as fast as two: 13.4 against 7.8 ms at the median in one quiet run. The helper only
takes blocks the caller has not reached, so a helper that is never scheduled costs
nothing but the hand-over; each row's cosine is the same sum either way.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float32]
FloatVector = npt.NDArray[np.float32]
IndexArray = npt.NDArray[np.int64]

#: From this many rows on, a scan is shared with a helper thread (below it, the
#: hand-over costs about what a second thread saves).
SHARED_SCAN_ROWS = 20_000
#: Rows per block of a shared scan: small enough that the thread left waiting for the
#: other's last block waits little. A multiple of the rows BLAS's kernel sums together
#: (a block ending elsewhere would sum its last rows in another order).
SCAN_BLOCK_ROWS = 8_192

_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _scan_helper() -> ThreadPoolExecutor | None:
    """The shared scan's helper thread, started at the first big scan; None on one core."""
    global _helper
    if (os.cpu_count() or 1) < 2:
        return None
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="alfred-scan")
        return _helper


def cosine_scores(matrix: FloatMatrix, query: FloatVector) -> FloatVector:
    """The cosine of ``query`` with every row of ``matrix`` (rows and query unit-length)."""
    rows = matrix.shape[0]
    if rows == 0:
        return np.zeros(0, dtype=np.float32)
    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    helper = _scan_helper() if rows >= SHARED_SCAN_ROWS else None
    if helper is None:
        scores: FloatVector = matrix @ vector
        return scores
    return _shared_scan(matrix, vector, helper)


def _shared_scan(
    matrix: FloatMatrix, vector: FloatVector, helper: ThreadPoolExecutor
) -> FloatVector:
    """``matrix @ vector`` computed block by block by this thread and ``helper``."""
    rows = matrix.shape[0]
    scores: FloatVector = np.empty(rows, dtype=np.float32)
    starts = range(0, rows, SCAN_BLOCK_ROWS)
    taken = itertools.count()  # its next() is atomic: each block is taken once

    def scan_blocks() -> None:
        while (block := next(taken)) < len(starts):
            start = starts[block]
            end = min(start + SCAN_BLOCK_ROWS, rows)
            np.matmul(matrix[start:end], vector, out=scores[start:end])

    helping = helper.submit(scan_blocks)
    scan_blocks()
    if not helping.cancel():  # it started: wait for the block it holds, if any
        helping.result()
    return scores


def top_k_indices(scores: FloatVector, k: int) -> IndexArray:
    """Indices of the ``k`` largest ``scores``, best first (ties: lower index first)."""
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    order = np.lexsort((part, -scores[part]))
    result: IndexArray = part[order].astype(np.int64)
    return result


def top_k_cosine(
    matrix: FloatMatrix,
    query: FloatVector,
    k: int,
    rows: npt.NDArray[np.int64] | None = None,
) -> tuple[IndexArray, FloatVector]:
    """The ``k`` rows most similar to ``query``: ``(row indices, cosines)``, best first.

    ``rows`` restricts the search to a subset of rows (a pre-filtered candidate set); the
    returned indices are always row indices of ``matrix``.
    """
    if rows is None:
        scores = cosine_scores(matrix, query)
        best = top_k_indices(scores, k)
        return best, scores[best]
    rows = np.asarray(rows, dtype=np.int64)
    scores = cosine_scores(matrix[rows], query)
    best = top_k_indices(scores, k)
    return rows[best], scores[best]


class VectorIndex:
    """Unit vectors under string ids, with add/remove and exact cosine search.

    The matrix grows by doubling; removal swaps the last row into the hole so the live
    rows stay contiguous and a search is one matrix-vector product.
    """

    def __init__(self, dimensions: int) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be positive")
        self.dimensions = dimensions
        self._matrix = np.zeros((0, dimensions), dtype=np.float32)
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._row_of

    @property
    def matrix(self) -> FloatMatrix:
        """The live rows (a view; do not modify)."""
        return self._matrix[: len(self._ids)]

    @property
    def ids(self) -> list[str]:
        """Ids aligned with the rows of :attr:`matrix`."""
        return list(self._ids)

    def add(self, doc_id: str, vector: FloatVector) -> None:
        """Store ``vector`` under ``doc_id``, replacing any earlier one."""
        self.add_many([doc_id], np.asarray(vector, dtype=np.float32).reshape(1, -1))

    def add_many(self, doc_ids: Sequence[str], vectors: FloatMatrix) -> None:
        """Store many vectors (shape ``(len(doc_ids), dimensions)``)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(doc_ids), self.dimensions):
            raise ValueError(
                f"expected shape {(len(doc_ids), self.dimensions)}, got {vectors.shape}"
            )
        for doc_id, vector in zip(doc_ids, vectors, strict=True):
            row = self._row_of.get(doc_id)
            if row is None:
                row = len(self._ids)
                if row >= self._matrix.shape[0]:
                    grown = np.zeros(
                        (max(16, 2 * self._matrix.shape[0]), self.dimensions), dtype=np.float32
                    )
                    grown[:row] = self._matrix[:row]
                    self._matrix = grown
                self._ids.append(doc_id)
                self._row_of[doc_id] = row
            self._matrix[row] = vector

    def remove(self, doc_id: str) -> bool:
        """Forget ``doc_id``; False if it was not stored."""
        row = self._row_of.pop(doc_id, None)
        if row is None:
            return False
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._row_of[moved] = row
        self._ids.pop()
        return True

    def scores(self, query: FloatVector) -> dict[str, float]:
        """The cosine of ``query`` with every stored vector."""
        cosines = cosine_scores(self.matrix, query)
        return dict(zip(self._ids, cosines.tolist(), strict=True))

    def top_k(
        self, query: FloatVector, k: int, candidates: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` most similar ``(doc_id, cosine)``, best first, optionally among candidates."""
        rows = None
        if candidates is not None:
            rows = np.fromiter(
                (self._row_of[d] for d in candidates if d in self._row_of), dtype=np.int64
            )
        best, cosines = top_k_cosine(self.matrix, query, k, rows)
        return [(self._ids[int(r)], float(c)) for r, c in zip(best, cosines, strict=True)]
