"""The Atlas search stages and index definitions, shape by shape, as the Atlas
documentation describes them (no Atlas cluster is needed: the embedded server has no
Atlas Search, so these are exact-shape checks plus the adapter's wiring).

Documentation checked:
* ``$vectorSearch``: https://mongodb.com/docs/atlas/atlas-vector-search/vector-search-stage/
  (index, path, queryVector, numCandidates ≤ 10 000 and ≥ limit, limit, filter with
  MQL operators $eq/$in/$and on fields indexed as ``filter``; score via
  ``{"$meta": "vectorSearchScore"}``).
* vector index: https://mongodb.com/docs/atlas/atlas-vector-search/vector-search-type/
  (``{"fields": [{"type": "vector", "path", "numDimensions", "similarity"},
  {"type": "filter", "path"}]}``).
* ``$search``: compound (must / filter), ``text`` (query, path), ``in`` (path, value; strings
  need the ``token`` type), ``equals`` (path, value; booleans), score via
  ``{"$meta": "searchScore"}``: https://mongodb.com/docs/atlas/atlas-search/in,
  https://mongodb.com/docs/atlas/atlas-search/equals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from integrations.mongo import atlas_search
from integrations.mongo.atlas_search import (
    AtlasSearch,
    AtlasSearchBackend,
    missing_search_indexes,
    prefilter,
    text_pipeline,
    vector_pipeline,
)
from integrations.mongo.facts import StoredPartitionVersion
from integrations.mongo.search_indexes import (
    FILTER_FIELDS,
    TEXT_INDEX,
    VECTOR_INDEX,
    check_search_indexes,
    reconcile_search_indexes,
    text_index_definition,
    vector_index_definition,
)
from memory.constants import FACTS
from memory.models import Partition, Viewer
from tests.helpers.world import dm, group, viewer

KEYS = ["shared:fam:-", "shared:fam:alice"]


# --- $vectorSearch ------------------------------------------------------------------------


def test_vector_pipeline_is_exactly_the_documented_stage() -> None:
    pipeline = vector_pipeline([0.5, -0.25, 1], KEYS, 8)
    assert pipeline == [
        {
            "$vectorSearch": {
                "index": "facts_vector",
                "path": "embedding",
                "queryVector": [0.5, -0.25, 1.0],
                "numCandidates": 120,
                "limit": 8,
                "filter": {
                    "$and": [
                        {"pkey": {"$in": ["shared:fam:-", "shared:fam:alice"]}},
                        {"current": {"$eq": True}},
                    ]
                },
            }
        },
        {"$project": {"_id": 1, "score": {"$meta": "vectorSearchScore"}}},
    ]
    # the query vector is plain doubles (a BSON double array), ints included
    query = pipeline[0]["$vectorSearch"]["queryVector"]
    assert all(type(x) is float for x in query)


@pytest.mark.parametrize(
    ("k", "candidates", "limit"),
    [
        (1, 100, 1),  # at least 100 candidates
        (6, 100, 6),
        (7, 105, 7),  # then 15 per result (Atlas advises 10-20x)
        (15, 225, 15),
        (666, 9990, 666),
        (667, 10_000, 667),  # numCandidates may not exceed 10 000
        (10_000, 10_000, 10_000),
        (20_000, 10_000, 10_000),  # and limit may not exceed numCandidates
    ],
)
def test_num_candidates_stay_in_the_documented_bounds(k: int, candidates: int, limit: int) -> None:
    (stage, _) = vector_pipeline([1.0], KEYS, k)
    assert stage["$vectorSearch"]["numCandidates"] == candidates
    assert stage["$vectorSearch"]["limit"] == limit
    assert limit <= candidates <= 10_000


def test_prefilter_uses_only_supported_operators_on_filter_fields() -> None:
    supported = {"$eq", "$ne", "$gt", "$lt", "$gte", "$lte", "$in", "$nin", "$and", "$or"}
    used_ops: set[str] = set()
    used_fields: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                (used_ops if key.startswith("$") else used_fields).add(key)
                if not key.startswith("$"):
                    # full form only: {field: {"$op": value}}
                    assert isinstance(value, dict) and all(k.startswith("$") for k in value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(prefilter(KEYS))
    assert used_ops <= supported
    assert used_fields == {"pkey", "current"}
    assert used_fields <= set(FILTER_FIELDS)
    declared = {f["path"] for f in vector_index_definition(384)["fields"] if f["type"] == "filter"}
    assert used_fields <= declared


# --- $search ------------------------------------------------------------------------------


def test_text_pipeline_is_exactly_the_documented_stage() -> None:
    assert text_pipeline("ramen in Lisbon", KEYS, 12) == [
        {
            "$search": {
                "index": "facts_text",
                "compound": {
                    "must": [{"text": {"query": "ramen in Lisbon", "path": "content"}}],
                    "filter": [
                        {"in": {"path": "pkey", "value": ["shared:fam:-", "shared:fam:alice"]}},
                        {"equals": {"path": "current", "value": True}},
                    ],
                },
            }
        },
        {"$limit": 12},
        {"$project": {"_id": 1, "score": {"$meta": "searchScore"}}},
    ]


def test_text_filter_fields_have_the_types_their_operators_need() -> None:
    fields = text_index_definition()["mappings"]["fields"]
    (stage, _, _) = text_pipeline("x", KEYS, 1)
    for clause in stage["$search"]["compound"]["filter"]:
        ((operator, spec),) = clause.items()
        declared = fields[spec["path"]]["type"]
        if operator == "in":
            # `in` on strings needs the token type
            assert all(isinstance(v, str) for v in spec["value"]) and declared == "token"
        else:
            assert operator == "equals" and isinstance(spec["value"], bool)
            assert declared == "boolean"


# --- index definitions ------------------------------------------------------------------


def test_vector_index_definition() -> None:
    assert VECTOR_INDEX == "facts_vector"
    assert vector_index_definition(1536) == {
        "fields": [
            {"type": "vector", "path": "embedding", "numDimensions": 1536, "similarity": "cosine"},
            {"type": "filter", "path": "pkey"},
            {"type": "filter", "path": "visibility"},
            {"type": "filter", "path": "circle_id"},
            {"type": "filter", "path": "owner_user_id"},
            {"type": "filter", "path": "current"},
        ]
    }
    assert vector_index_definition(384)["fields"][0]["numDimensions"] == 384


def test_text_index_definition() -> None:
    assert TEXT_INDEX == "facts_text"
    assert text_index_definition() == {
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
    # every partition field is a filter field of both indexes
    assert set(FILTER_FIELDS) <= set(text_index_definition()["mappings"]["fields"])


# --- the adapter's wiring -----------------------------------------------------------------


class FakeCursor:
    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self._docs = iter(docs)

    def __aiter__(self) -> FakeCursor:
        return self

    async def __anext__(self) -> dict[str, Any]:
        try:
            return next(self._docs)
        except StopIteration:
            raise StopAsyncIteration from None


class FakeCollection:
    def __init__(self, hits: list[dict[str, Any]], indexes: list[dict[str, Any]]) -> None:
        self.hits = hits
        self.indexes = indexes
        self.pipelines: list[list[dict[str, Any]]] = []

    async def aggregate(self, pipeline: list[dict[str, Any]]) -> FakeCursor:
        self.pipelines.append(pipeline)
        return FakeCursor(self.hits)

    async def list_search_indexes(self) -> FakeCursor:
        return FakeCursor(self.indexes)


class FakeDb:
    def __init__(self, collection: FakeCollection) -> None:
        self.collection = collection
        self.names: list[str] = []

    def __getitem__(self, name: str) -> FakeCollection:
        self.names.append(name)
        return self.collection


class FakeStore:
    def __init__(self, partitions: list[Partition]) -> None:
        self.partitions = partitions
        self.seen: list[Viewer] = []

    async def visible_partitions(self, viewer: Viewer) -> list[StoredPartitionVersion]:
        self.seen.append(viewer)
        return [StoredPartitionVersion(p, 1) for p in self.partitions]


async def test_prepare_keeps_only_visible_partitions_and_runs_both_legs() -> None:
    collection = FakeCollection([{"_id": "f1", "score": 0.9}, {"_id": "f2"}], [])
    db = FakeDb(collection)
    # a partition the store should not have returned is dropped by the re-check
    store = FakeStore(
        [Partition.member("fam", "alice"), Partition.circle("fam"), Partition.dm("bob")]
    )
    backend = AtlasSearchBackend(db, store)  # type: ignore[arg-type]
    bob_group = viewer("bob", group("fam"), ["fam"])
    search = await backend.prepare(bob_group)
    assert backend.name == "atlas"
    assert store.seen == [bob_group]

    dense = await search.dense(np.asarray([1.0, 0.0], dtype=np.float32), 5)
    keyword = await search.keyword("ramen", 5)
    assert dense == keyword == {"f1": 0.9, "f2": 0.0}
    expected_keys = ["shared:fam:-", "shared:fam:alice"]
    assert collection.pipelines == [
        vector_pipeline([1.0, 0.0], expected_keys, 5),
        text_pipeline("ramen", expected_keys, 5),
    ]
    assert set(db.names) == {FACTS}


async def test_nothing_visible_means_no_query_at_all() -> None:
    collection = FakeCollection([{"_id": "leak", "score": 1.0}], [])
    search = AtlasSearch(FakeDb(collection), None, viewer("x", dm("x"), []), [])  # type: ignore[arg-type]
    assert await search.dense(np.asarray([1.0], dtype=np.float32), 5) == {}
    assert await search.keyword("anything", 5) == {}
    assert collection.pipelines == []


@pytest.mark.parametrize(
    ("indexes", "missing"),
    [
        ([], ["facts_vector", "facts_text"]),
        (
            [
                {"name": "facts_vector", "queryable": True, "status": "READY"},
                {"name": "facts_text", "queryable": True, "status": "READY"},
            ],
            [],
        ),
        (
            [
                {"name": "facts_vector", "queryable": False, "status": "BUILDING"},
                {"name": "facts_text", "status": "READY"},  # no `queryable`: status decides
            ],
            ["facts_vector"],
        ),
        ([{"name": "facts_text", "status": "PENDING"}], ["facts_vector", "facts_text"]),
        ([{"name": "other", "queryable": True}], ["facts_vector", "facts_text"]),
    ],
)
async def test_missing_search_indexes(indexes: list[dict[str, Any]], missing: list[str]) -> None:
    db = FakeDb(FakeCollection([], indexes))
    assert await missing_search_indexes(db) == missing  # type: ignore[arg-type]
    assert db.names == [FACTS]


def test_constants_match_the_documented_guidance() -> None:
    assert 10 <= atlas_search.CANDIDATES_PER_RESULT <= 20
    assert atlas_search.MAX_CANDIDATES == 10_000


# --- reconciling the search indexes (alfred migrate) ----------------------------------------


class SearchIndexStandIn:
    """The three search-index calls of a collection, over a list of index documents shaped
    as Atlas's ``$listSearchIndexes`` reports them (``latestDefinition``, ``status``).
    Atlas cannot run here; this is the only stand-in for it. ``fail`` makes the next
    create or update raise as Atlas does for a bad definition."""

    def __init__(self, indexes: list[dict[str, Any]] | None = None) -> None:
        self.indexes = {d["name"]: d for d in indexes or []}
        self.calls: list[tuple[str, str]] = []
        self.fail = False

    async def list_search_indexes(self) -> FakeCursor:
        return FakeCursor([dict(d) for d in self.indexes.values()])

    def _maybe_fail(self) -> None:
        if self.fail:
            self.fail = False
            raise OperationFailure("Index build failed", code=8)

    async def create_search_index(self, model: SearchIndexModel) -> str:
        doc = model.document
        self.calls.append(("create", doc["name"]))
        self._maybe_fail()
        self.indexes[doc["name"]] = {
            "name": doc["name"],
            "type": doc["type"],
            "status": "PENDING",
            "latestDefinition": doc["definition"],
        }
        return str(doc["name"])

    async def update_search_index(self, name: str, definition: dict[str, Any]) -> None:
        self.calls.append(("update", name))
        self._maybe_fail()
        self.indexes[name]["latestDefinition"] = definition
        self.indexes[name]["status"] = "PENDING"


def atlas_doc(name: str, definition: dict[str, Any], status: str = "READY") -> dict[str, Any]:
    kind = "vectorSearch" if name == VECTOR_INDEX else "search"
    return {"name": name, "type": kind, "status": status, "latestDefinition": definition}


async def test_reconcile_creates_what_is_missing_then_leaves_it_alone() -> None:
    facts = SearchIndexStandIn()
    lines = await reconcile_search_indexes(facts, 384)
    assert lines == [f"search index {VECTOR_INDEX} created", f"search index {TEXT_INDEX} created"]
    assert facts.calls == [("create", VECTOR_INDEX), ("create", TEXT_INDEX)]
    assert facts.indexes[VECTOR_INDEX]["type"] == "vectorSearch"
    assert facts.indexes[VECTOR_INDEX]["latestDefinition"] == vector_index_definition(384)
    assert facts.indexes[TEXT_INDEX]["type"] == "search"
    assert facts.indexes[TEXT_INDEX]["latestDefinition"] == text_index_definition()

    facts.calls.clear()
    again = await reconcile_search_indexes(facts, 384)
    assert again == [
        f"search index {VECTOR_INDEX} up to date (PENDING)",
        f"search index {TEXT_INDEX} up to date (PENDING)",
    ]
    assert facts.calls == [], "a matching index is not touched"


async def test_reconcile_updates_the_vector_index_to_a_new_dimension() -> None:
    facts = SearchIndexStandIn(
        [
            atlas_doc(VECTOR_INDEX, vector_index_definition(1536)),
            atlas_doc(TEXT_INDEX, text_index_definition()),
        ]
    )
    lines = await reconcile_search_indexes(facts, 384)
    assert lines == [
        f"search index {VECTOR_INDEX} updated (numDimensions 1536, configured 384)",
        f"search index {TEXT_INDEX} up to date (READY)",
    ]
    assert facts.calls == [("update", VECTOR_INDEX)]
    assert facts.indexes[VECTOR_INDEX]["latestDefinition"] == vector_index_definition(384)


async def test_reconcile_updates_missing_filter_fields() -> None:
    old = vector_index_definition(384)
    old["fields"] = [f for f in old["fields"] if f.get("path") != "pkey"]
    facts = SearchIndexStandIn(
        [atlas_doc(VECTOR_INDEX, old), atlas_doc(TEXT_INDEX, text_index_definition())]
    )
    lines = await reconcile_search_indexes(facts, 384)
    wanted = sorted(FILTER_FIELDS)
    without = sorted(set(FILTER_FIELDS) - {"pkey"})
    assert lines[0] == (
        f"search index {VECTOR_INDEX} updated (filter fields {without}, configured {wanted})"
    )
    assert facts.calls == [("update", VECTOR_INDEX)]


async def test_atlas_defaults_in_the_reported_definition_are_not_differences() -> None:
    # Atlas reports definitions with its own defaults filled in (field order, analysers
    # left unset on tokens, search analyser): none of that is a reason to rebuild.
    vector = vector_index_definition(384)
    vector["fields"] = list(reversed(vector["fields"]))
    text = text_index_definition()
    text["analyzer"] = "lucene.standard"
    text["searchAnalyzer"] = "lucene.standard"
    text["mappings"]["fields"]["pkey"] = {"type": "token", "normalizer": "none"}
    facts = SearchIndexStandIn([atlas_doc(VECTOR_INDEX, vector), atlas_doc(TEXT_INDEX, text)])
    checks = await check_search_indexes(facts, 384)
    assert [(c.name, c.state) for c in checks] == [
        (VECTOR_INDEX, "matches"),
        (TEXT_INDEX, "matches"),
    ]
    assert await reconcile_search_indexes(facts, 384) == [
        f"search index {VECTOR_INDEX} up to date (READY)",
        f"search index {TEXT_INDEX} up to date (READY)",
    ]
    assert facts.calls == []


async def test_a_changed_text_mapping_is_updated() -> None:
    text = text_index_definition()
    text["mappings"]["fields"]["content"] = {"type": "string", "analyzer": "lucene.standard"}
    facts = SearchIndexStandIn(
        [atlas_doc(VECTOR_INDEX, vector_index_definition(384)), atlas_doc(TEXT_INDEX, text)]
    )
    lines = await reconcile_search_indexes(facts, 384)
    assert lines[1] == (
        f"search index {TEXT_INDEX} updated (field content ('string', 'lucene.standard'), "
        "configured ('string', 'lucene.english'))"
    )
    assert facts.calls == [("update", TEXT_INDEX)]


async def test_a_wrong_type_is_reported_not_touched() -> None:
    wrong = {"name": VECTOR_INDEX, "type": "search", "status": "READY", "latestDefinition": {}}
    facts = SearchIndexStandIn([wrong, atlas_doc(TEXT_INDEX, text_index_definition())])
    lines = await reconcile_search_indexes(facts, 384)
    assert lines[0] == (
        f"search index {VECTOR_INDEX} has the wrong type (type search, configured "
        "vectorSearch): drop it in Atlas and run `alfred migrate` again"
    )
    assert facts.calls == []


async def test_a_failed_creation_is_reported_and_retried_by_the_next_run() -> None:
    facts = SearchIndexStandIn([atlas_doc(TEXT_INDEX, text_index_definition())])
    facts.fail = True
    first = await reconcile_search_indexes(facts, 384)
    assert first[0].startswith(
        f"search index {VECTOR_INDEX} could not be created (OperationFailure: Index build failed"
    )
    assert first[0].endswith("the next `alfred migrate` tries again")
    assert VECTOR_INDEX not in facts.indexes

    second = await reconcile_search_indexes(facts, 384)
    assert second[0] == f"search index {VECTOR_INDEX} created"
    assert facts.calls == [("create", VECTOR_INDEX), ("create", VECTOR_INDEX)]


async def test_status_lines_name_what_migrate_would_do() -> None:
    facts = SearchIndexStandIn([atlas_doc(VECTOR_INDEX, vector_index_definition(1536))])
    checks = await check_search_indexes(facts, 384)
    assert [c.line() for c in checks] == [
        f"search index {VECTOR_INDEX}: differs (numDimensions 1536, configured 384), READY: "
        "run `alfred migrate`",
        f"search index {TEXT_INDEX}: missing (run `alfred migrate`)",
    ]
    assert facts.calls == [], "checking never changes anything"
