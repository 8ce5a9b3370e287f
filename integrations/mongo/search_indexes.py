"""Atlas Search index definitions for facts, shared by migrations and the search adapter.

The partition fields are declared as filter fields in both indexes, so the privacy
filter runs *inside* ``$vectorSearch`` and ``$search`` rather than after them.
"""

from __future__ import annotations

from typing import Any

VECTOR_INDEX = "facts_vector"
TEXT_INDEX = "facts_text"

#: The fields every search pre-filters on: the partition (its flat fields and its key), and
#: whether the fact is current. Queries filter on ``pkey`` (a string, never null, so every
#: Atlas filter operator supports it) with the keys the privacy filter allowed.
FILTER_FIELDS = ("pkey", "visibility", "circle_id", "owner_user_id", "current")


def vector_index_definition(dims: int) -> dict[str, Any]:
    """The ``vectorSearch`` index over fact embeddings (BSON float32 vectors, cosine)."""
    fields: list[dict[str, Any]] = [
        {"type": "vector", "path": "embedding", "numDimensions": dims, "similarity": "cosine"}
    ]
    fields += [{"type": "filter", "path": name} for name in FILTER_FIELDS]
    return {"fields": fields}


def text_index_definition() -> dict[str, Any]:
    """The ``search`` index: fact content for keywords, partition fields as tokens."""
    return {
        "mappings": {
            "dynamic": False,
            "fields": {
                "content": {"type": "string", "analyzer": "lucene.english"},
                "pkey": {"type": "token"},
                "visibility": {"type": "token"},
                "circle_id": {"type": "token"},
                "owner_user_id": {"type": "token"},
                "current": {"type": "boolean"},
            },
        }
    }
