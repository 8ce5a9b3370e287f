"""The OpenAI-compatible embedder against a local server speaking the embeddings API."""

from __future__ import annotations

import numpy as np
import pytest
from openai import AsyncOpenAI

from bot.bench.fake_openai import FakeOpenAI, bad_request, malformed_body, rate_limited
from integrations.openai_embedder import OpenAIEmbedder
from memory.errors import BadInput, RateLimited, Unavailable


def embedder_for(
    fake: FakeOpenAI, model: str = "text-embedding-3-small", dims: int = 8
) -> OpenAIEmbedder:
    client = AsyncOpenAI(api_key="k", base_url=fake.base_url, max_retries=0)
    return OpenAIEmbedder(client, model, dimensions=dims)


async def test_batches_are_embedded_in_order_and_normalised() -> None:
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        embedder = embedder_for(fake)
        texts = [f"text {i}" for i in range(300)]
        vectors = await embedder.embed(texts)
        assert vectors.shape == (300, 8)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        again = await embedder.embed(["text 299"])
        assert np.allclose(again[0], vectors[299])
        # 300 texts in batches of 256: two requests, then one more
        assert len(fake.requests_to("embeddings")) == 3
        assert fake.requests_to("embeddings")[0].model == "text-embedding-3-small"


async def test_empty_and_huge_texts() -> None:
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        embedder = embedder_for(fake)
        assert (await embedder.embed([])).shape == (0, 8)
        vectors = await embedder.embed(["", "x" * 100_000])
        assert vectors.shape == (2, 8)
        sent = fake.requests_to("embeddings")[-1].json["input"]
        assert sent[0] == " " and len(sent[1]) <= 24_000


async def test_wrong_dimension_is_reported() -> None:
    async with FakeOpenAI(embedding_dimensions=5) as fake:
        with pytest.raises(Unavailable, match="expected"):
            await embedder_for(fake, dims=8).embed(["hello"])


@pytest.mark.parametrize(
    ("answer", "error"),
    [(rate_limited(0.01), RateLimited), (bad_request(), BadInput), (malformed_body(), Unavailable)],
)
async def test_errors_are_translated(answer: object, error: type[Exception]) -> None:
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        fake.enqueue(answer, endpoint="embeddings")
        with pytest.raises(error):
            await embedder_for(fake).embed(["hello"])
