"""The local MiniLM embedder, with the real int8 model (loads in well under a second)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from integrations.onnx_embedder import (
    DIMENSIONS,
    MODEL_NAME,
    OnnxMiniLMEmbedder,
    default_model_path,
    default_tokenizer_path,
)
from memory.ports import Embedder


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    # A small batch size so that a handful of texts already spans several batches.
    return OnnxMiniLMEmbedder(batch_size=3)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_implements_the_port_and_ships_its_files() -> None:
    e = OnnxMiniLMEmbedder()
    assert isinstance(e, Embedder)
    assert e.model_name == MODEL_NAME == "all-MiniLM-L6-v2-int8"
    assert e.dimensions == DIMENSIONS == 384
    assert default_model_path().is_file()
    assert default_tokenizer_path().name == "tokenizer.json"


async def test_shapes_dtype_and_unit_rows(embedder: OnnxMiniLMEmbedder) -> None:
    vectors = await embedder.embed(["one", "two words", "three words here", "four", "five"])
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    empty = await embedder.embed([])
    assert empty.shape == (0, 384)


async def test_semantic_ordering(embedder: OnnxMiniLMEmbedder) -> None:
    pizza, favourite, train = await embedder.embed(
        ["I love pizza", "Pizza is my favourite food", "The train leaves at noon"]
    )
    assert _cos(pizza, favourite) > _cos(pizza, train) + 0.3


async def test_batching_and_padding_do_not_change_vectors(embedder: OnnxMiniLMEmbedder) -> None:
    texts = ["short", "a considerably longer sentence about gardening and tomatoes", "mid one"]
    together = await embedder.embed(texts * 2)
    alone = np.vstack([await embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together[:3], alone, atol=1e-4)
    np.testing.assert_allclose(together[3:], alone, atol=1e-4)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "😀🎉🍕", "我喜欢吃披萨", "Я люблю пиццу", "مرحبا بالعالم", "x" * 20_000],
)
async def test_awkward_inputs_give_unit_vectors(embedder: OnnxMiniLMEmbedder, text: str) -> None:
    (vector,) = await embedder.embed([text])
    assert np.all(np.isfinite(vector))
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


async def test_long_texts_are_truncated_at_256_tokens(embedder: OnnxMiniLMEmbedder) -> None:
    # Both exceed 256 word pieces, so only their identical beginnings are embedded.
    long_a = "the garden is full of tomatoes. " * 400
    long_b = long_a + "but the zebra ate them all."
    a, b = await embedder.embed([long_a, long_b])
    np.testing.assert_allclose(a, b, atol=1e-5)


async def test_concurrent_first_use_loads_once() -> None:
    fresh = OnnxMiniLMEmbedder()
    sessions: list[object] = []

    def load() -> None:
        fresh.warm_up()
        sessions.append(fresh._session)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(s) for s in sessions}) == 1
    results = await asyncio.gather(*(fresh.embed(["same text"]) for _ in range(4)))
    for result in results[1:]:
        np.testing.assert_allclose(result, results[0], atol=1e-6)


def test_rejects_bad_configuration() -> None:
    with pytest.raises(ValueError):
        OnnxMiniLMEmbedder(batch_size=0)
    with pytest.raises(ValueError):
        OnnxMiniLMEmbedder(max_tokens=1024)
