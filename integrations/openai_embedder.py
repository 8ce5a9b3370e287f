"""Embeddings from any OpenAI-compatible endpoint (``text-embedding-3-small`` by default)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import openai
from openai import AsyncOpenAI

from memory.errors import BadInput, RateLimited, Unavailable

#: Known output sizes, so the dimension is right before the first call.
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
#: The API rejects inputs beyond ~8k tokens; cut long texts on the client side.
MAX_INPUT_CHARS = 24_000
BATCH = 256


class OpenAIEmbedder:
    """An :class:`memory.ports.Embedder` over the ``/embeddings`` endpoint."""

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str = "text-embedding-3-small",
        dimensions: int | None = None,
    ) -> None:
        self._client = client
        self._model = model
        self._dims = dimensions or KNOWN_DIMENSIONS.get(model, 1536)

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        return self._dims

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = [(t[:MAX_INPUT_CHARS] or " ") for t in texts[start : start + BATCH]]
            try:
                response = await self._client.embeddings.create(model=self._model, input=batch)
            except openai.RateLimitError as exc:
                raise RateLimited("embeddings", f"rate limited: {exc.message}") from None
            except openai.BadRequestError as exc:
                raise BadInput(
                    f"the embeddings endpoint refused the input: {exc.message}"
                ) from None
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                raise Unavailable("embeddings", f"{type(exc).__name__}: {exc}") from None
            except ValueError as exc:  # the SDK lets a broken JSON body through as ValueError
                raise Unavailable("embeddings", f"malformed answer: {exc}") from None
            if not hasattr(response, "data"):
                raise Unavailable("embeddings", "the endpoint did not answer with embeddings")
            ordered = sorted(response.data, key=lambda d: d.index)
            rows.extend(list(d.embedding) for d in ordered)
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape != (len(texts), self._dims):
            raise Unavailable(
                "embeddings",
                f"{self._model} returned vectors of shape {matrix.shape}, "
                f"expected ({len(texts)}, {self._dims})",
                hint="set EMBEDDINGS_MODEL to the model the endpoint serves",
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        normalised: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32)
        return normalised
