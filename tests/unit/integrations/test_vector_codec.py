"""A stored vector read as float32 straight from its bytes (a search index's first load)
must be the vector the slow path reads, for every form a vector is stored in."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from bson.binary import Binary, BinaryVectorDtype

from integrations.mongo.codec import (
    fact_to_doc,
    loaded_fact_from_doc,
    vector_array_from_bson,
    vector_from_bson,
    vector_to_bson,
)
from memory.ids import content_hash
from memory.models import Category, Fact, Partition


def test_a_float32_vector_is_read_from_its_bytes_exactly() -> None:
    rng = np.random.default_rng(7)
    stored = vector_to_bson(rng.standard_normal(384).astype(np.float32))
    fast = vector_array_from_bson(stored)
    slow = vector_from_bson(stored)
    assert fast is not None and slow is not None
    assert fast.dtype == np.float32 and fast.shape == (384,)
    assert np.array_equal(fast, np.asarray(slow, dtype=np.float32))


def test_other_stored_forms_take_the_slow_path() -> None:
    legacy = [0.25, -0.5, 1.0]  # an array of doubles, as older releases stored them
    assert np.array_equal(vector_array_from_bson(legacy), np.asarray(legacy, dtype=np.float32))
    int8 = Binary.from_vector([1, -2, 3], BinaryVectorDtype.INT8)
    assert np.array_equal(vector_array_from_bson(int8), np.asarray([1, -2, 3], dtype=np.float32))
    assert vector_array_from_bson(None) is None


def test_a_loaded_fact_carries_its_vector_beside_it_not_on_it() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    vector = np.linspace(-1, 1, 8, dtype=np.float32)
    fact = Fact(
        id="f1",
        content="Alice is allergic to peanuts",
        hash=content_hash("Alice is allergic to peanuts"),
        category=Category.FACT,
        importance=8,
        partition=Partition.dm("u1"),
        embedding=[float(x) for x in vector],
        embedding_model="m",
        embedding_dims=8,
        valid_at=now,
        created_at=now,
        updated_at=now,
    )
    loaded = loaded_fact_from_doc(fact_to_doc(fact))
    assert loaded.id == "f1" and loaded.fact.embedding is None
    assert loaded.fact.model_copy(update={"embedding": fact.embedding}) == fact
    assert loaded.vector is not None and np.array_equal(loaded.vector, vector)
