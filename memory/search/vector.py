"""Exact cosine top-k over a float32 matrix, for the dense leg outside Atlas.

Why exact and numpy: a household's partition holds hundreds to tens of thousands of facts;
a matrix-vector product over 10,000 × 384 float32 is ~1 ms, so an approximate index would
add a dependency and recall loss for nothing. ``np.argpartition`` selects the top k in
O(n) before sorting only those k.

Rows are assumed L2-normalised (every :class:`memory.ports.Embedder` guarantees it), so
the dot product is the cosine.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float32]
FloatVector = npt.NDArray[np.float32]
IndexArray = npt.NDArray[np.int64]


def cosine_scores(matrix: FloatMatrix, query: FloatVector) -> FloatVector:
    """The cosine of ``query`` with every row of ``matrix`` (rows and query unit-length)."""
    if matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    scores: FloatVector = matrix @ np.asarray(query, dtype=np.float32).reshape(-1)
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
