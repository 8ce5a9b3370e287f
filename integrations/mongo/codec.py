"""Turning domain models into MongoDB documents and back.

Partitions are flattened onto each document (``visibility``, ``circle_id``,
``owner_user_id``, plus ``pkey`` for grouping) so the privacy filter and Atlas filter
fields work on plain top-level fields. Embeddings are stored as BSON binary float32
vectors: four bytes a dimension, and the format Atlas Vector Search reads natively.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from bson.binary import VECTOR_SUBTYPE, Binary, BinaryVectorDtype

from integrations.mongo.recall_log import FOLD_MARK
from memory.models import (
    Clarification,
    Consolidated,
    Fact,
    Message,
    Partition,
    Reflection,
)
from memory.ports import LoadedFact

Document = dict[str, Any]

#: Fields of a fact's document that are storage's own, not the model's.
FACT_STORAGE_FIELDS = frozenset({"_id", "embedding", "current", "pkey", FOLD_MARK})


def vector_to_bson(vector: list[float] | np.ndarray | None) -> Binary | None:
    if vector is None:
        return None
    values = np.asarray(vector, dtype=np.float32).tolist()
    return Binary.from_vector(values, BinaryVectorDtype.FLOAT32)


def vector_from_bson(value: Any) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, Binary):
        return list(value.as_vector().data)
    return [float(x) for x in value]  # legacy arrays of doubles


def vector_array_from_bson(value: Any) -> npt.NDArray[np.float32] | None:
    """A stored vector as float32, read from its bytes where it is a float32 BSON vector
    (no Python float per component; read-only, as it shares the document's bytes)."""
    if (
        isinstance(value, Binary)
        and value.subtype == VECTOR_SUBTYPE
        and value[:1] == BinaryVectorDtype.FLOAT32.value
        and (len(value) - 2) % 4 == 0
    ):
        return np.frombuffer(value, dtype="<f4", offset=2)
    vector = vector_from_bson(value)
    return None if vector is None else np.asarray(vector, dtype=np.float32)


def _with_partition(doc: Document, partition: Partition) -> Document:
    doc.update(partition.as_fields())
    doc["pkey"] = partition.key()
    return doc


def _partition_of(doc: Document) -> Partition:
    return Partition.from_fields(doc)


def fact_to_doc(fact: Fact) -> Document:
    doc = fact.model_dump(exclude={"id", "partition", "embedding"})
    doc["_id"] = fact.id
    doc["embedding"] = vector_to_bson(fact.embedding)
    doc["current"] = fact.invalid_at is None
    return _with_partition(doc, fact.partition)


def loaded_fact_from_doc(doc: Document) -> LoadedFact:
    """A fact for a search index's load: the embedding beside it as float32, not on it."""
    vector = vector_array_from_bson(doc.pop("embedding", None))
    return LoadedFact(fact_from_doc(doc), vector)


def fact_from_doc(doc: Document) -> Fact:
    data = {k: v for k, v in doc.items() if k not in FACT_STORAGE_FIELDS}
    return Fact(
        id=str(doc["_id"]),
        partition=_partition_of(doc),
        embedding=vector_from_bson(doc.get("embedding")),
        **{k: v for k, v in data.items() if k not in {"visibility", "circle_id", "owner_user_id"}},
    )


def _generic_to_doc(model: Reflection | Consolidated | Clarification | Message) -> Document:
    doc = model.model_dump(exclude={"id", "partition"})
    doc["_id"] = model.id
    return _with_partition(doc, model.partition)


def _generic_fields(doc: Document) -> dict[str, Any]:
    skip = {"_id", "pkey", "visibility", "circle_id", "owner_user_id"}
    return {k: v for k, v in doc.items() if k not in skip}


def reflection_to_doc(reflection: Reflection) -> Document:
    return _generic_to_doc(reflection)


def reflection_from_doc(doc: Document) -> Reflection:
    return Reflection(id=str(doc["_id"]), partition=_partition_of(doc), **_generic_fields(doc))


def consolidated_to_doc(blob: Consolidated) -> Document:
    return _generic_to_doc(blob)


def consolidated_from_doc(doc: Document) -> Consolidated:
    return Consolidated(id=str(doc["_id"]), partition=_partition_of(doc), **_generic_fields(doc))


def clarification_to_doc(item: Clarification) -> Document:
    return _generic_to_doc(item)


def clarification_from_doc(doc: Document) -> Clarification:
    return Clarification(id=str(doc["_id"]), partition=_partition_of(doc), **_generic_fields(doc))


#: A journaled message's wall-clock nanoseconds at insert: the order of messages that share
#: a ``created_at``. BSON dates hold milliseconds, and a replay's or ``alfred chat``'s
#: simulated clock stands still between its clock lines, so a whole conversation can share
#: one; ordered by id instead, "1001:10" came before "1001:9", and "forget that" found the
#: wrong message. Messages journaled before it have none, and sort before those that do.
JOURNALED_NS = "journaled_ns"
#: The journal's order, oldest first: by time, then by insert, then by id, so it is total.
#: Every read of messages in order sorts by it (or by its reverse, :data:`NEWEST_FIRST`).
OLDEST_FIRST: tuple[tuple[str, int], ...] = (("created_at", 1), (JOURNALED_NS, 1), ("_id", 1))
NEWEST_FIRST: tuple[tuple[str, int], ...] = tuple((key, -way) for key, way in OLDEST_FIRST)


def message_to_doc(message: Message) -> Document:
    return _generic_to_doc(message)


def message_from_doc(doc: Document) -> Message:
    return Message(id=str(doc["_id"]), partition=_partition_of(doc), **_generic_fields(doc))
