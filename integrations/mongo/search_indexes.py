"""Atlas Search index definitions for facts, shared by the migrator and the search adapter,
and the reconcile that makes a deployment's indexes match them on every ``alfred migrate``.

The partition fields are declared as filter fields in both indexes, so the privacy
filter runs *inside* ``$vectorSearch`` and ``$search`` rather than after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pymongo.errors import PyMongoError
from pymongo.operations import SearchIndexModel

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


# --- reconciling the indexes of a deployment -------------------------------------------

#: The type Atlas reports for each of Alfred's search indexes.
INDEX_TYPES: dict[str, str] = {VECTOR_INDEX: "vectorSearch", TEXT_INDEX: "search"}

#: What it means for an index, as words for the operator.
MATCHES, MISSING, DIFFERS, WRONG_TYPE = "matches", "missing", "differs", "wrong type"


class SearchIndexCollection(Protocol):
    """The three search-index calls of PyMongo's ``AsyncCollection`` that the reconcile
    uses (a protocol, so the logic can be checked without an Atlas cluster)."""

    async def list_search_indexes(self) -> Any: ...

    async def create_search_index(self, model: SearchIndexModel) -> Any: ...

    async def update_search_index(self, name: str, definition: Mapping[str, Any]) -> Any: ...


@dataclass(frozen=True)
class SearchIndexCheck:
    """How one of Alfred's search indexes compares with the configured definition."""

    name: str
    state: str
    #: Why it differs (``numDimensions 1536, configured 384``); empty when it matches.
    differences: tuple[str, ...] = ()
    #: Atlas's build state (``READY``, ``BUILDING`` …) of an existing index.
    status: str | None = None

    def line(self) -> str:
        """One line for ``alfred migrate --status``."""
        if self.state == MISSING:
            return f"search index {self.name}: missing (run `alfred migrate`)"
        built = f", {self.status}" if self.status else ""
        if self.state == MATCHES:
            return f"search index {self.name}: up to date{built}"
        why = "; ".join(self.differences)
        return f"search index {self.name}: {self.state} ({why}){built}: run `alfred migrate`"


def wanted_definitions(dims: int) -> dict[str, dict[str, Any]]:
    """Alfred's search indexes by name, for an embedder of ``dims`` dimensions."""
    return {VECTOR_INDEX: vector_index_definition(dims), TEXT_INDEX: text_index_definition()}


def _vector_shape(definition: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    vector: dict[str, Any] = {}
    filters: set[str] = set()
    for item in definition.get("fields") or []:
        if item.get("type") == "vector" and item.get("path") == "embedding":
            vector = {k: item.get(k) for k in ("numDimensions", "similarity")}
        elif item.get("type") == "filter":
            filters.add(str(item.get("path")))
    return vector, filters


def _text_shape(definition: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    fields = (definition.get("mappings") or {}).get("fields") or {}
    return {
        str(name): (spec.get("type"), spec.get("analyzer"))
        for name, spec in fields.items()
        if isinstance(spec, Mapping)
    }


def definition_differences(
    name: str, present: Mapping[str, Any], wanted: Mapping[str, Any]
) -> list[str]:
    """What differs between an index Atlas reports and the definition Alfred wants.

    Only what Alfred's queries depend on is compared (Atlas fills in defaults of its
    own, so a whole-document comparison would always differ): for ``facts_vector`` the
    dimension, the similarity and the filter fields; for ``facts_text`` each mapped
    field's type and analyser.
    """
    out: list[str] = []
    if name == VECTOR_INDEX:
        have, have_filters = _vector_shape(present)
        want, want_filters = _vector_shape(wanted)
        for key in ("numDimensions", "similarity"):
            if have.get(key) != want.get(key):
                out.append(f"{key} {have.get(key)}, configured {want.get(key)}")
        if have_filters != want_filters:
            out.append(f"filter fields {sorted(have_filters)}, configured {sorted(want_filters)}")
    else:
        have_fields, want_fields = _text_shape(present), _text_shape(wanted)
        for field_name in sorted(set(have_fields) | set(want_fields)):
            have_spec, want_spec = have_fields.get(field_name), want_fields.get(field_name)
            # An analyser Atlas left unset is its default; only a different one counts.
            if have_spec is not None and want_spec is not None and have_spec[1] is None:
                have_spec = (have_spec[0], want_spec[1])
            if have_spec != want_spec:
                out.append(f"field {field_name} {have_spec}, configured {want_spec}")
    return out


async def check_search_indexes(facts: SearchIndexCollection, dims: int) -> list[SearchIndexCheck]:
    """Compare the search indexes on ``facts`` with the configured ones (reads only)."""
    cursor = await facts.list_search_indexes()
    present = {doc["name"]: doc async for doc in cursor}
    checks: list[SearchIndexCheck] = []
    for name, wanted in wanted_definitions(dims).items():
        doc = present.get(name)
        if doc is None:
            checks.append(SearchIndexCheck(name, MISSING))
            continue
        status = doc.get("status")
        kind = doc.get("type")
        if kind is not None and kind != INDEX_TYPES[name]:
            checks.append(
                SearchIndexCheck(
                    name, WRONG_TYPE, (f"type {kind}, configured {INDEX_TYPES[name]}",), status
                )
            )
            continue
        # Atlas reports the definition being built as ``latestDefinition``.
        definition = doc.get("latestDefinition") or doc.get("definition") or {}
        differences = definition_differences(name, definition, wanted)
        state = DIFFERS if differences else MATCHES
        checks.append(SearchIndexCheck(name, state, tuple(differences), status))
    return checks


async def reconcile_search_indexes(facts: SearchIndexCollection, dims: int) -> list[str]:
    """Make the search indexes on ``facts`` match the configuration; return report lines.

    Idempotent: a missing index is created, one whose definition differs is updated in
    place (``updateSearchIndex``; Atlas keeps serving the old one until the new one is
    built), a matching one is left alone. An index of the wrong type cannot be updated
    and is reported for the operator to drop. A failure is reported, not raised: the
    next ``alfred migrate`` (or bot start-up) tries again, and until then Alfred
    searches in the application.
    """
    wanted = wanted_definitions(dims)
    lines: list[str] = []
    try:
        checks = await check_search_indexes(facts, dims)
    except PyMongoError as exc:
        return [
            f"search indexes could not be listed ({type(exc).__name__}: {str(exc)[:200]}); "
            "the next `alfred migrate` tries again"
        ]
    for check in checks:
        name = check.name
        why = "; ".join(check.differences)
        try:
            if check.state == MISSING:
                await facts.create_search_index(
                    SearchIndexModel(definition=wanted[name], name=name, type=INDEX_TYPES[name])
                )
                lines.append(f"search index {name} created")
            elif check.state == DIFFERS:
                await facts.update_search_index(name, wanted[name])
                lines.append(f"search index {name} updated ({why})")
            elif check.state == WRONG_TYPE:
                lines.append(
                    f"search index {name} has the wrong type ({why}): drop it in Atlas and "
                    "run `alfred migrate` again"
                )
            else:
                built = f" ({check.status})" if check.status else ""
                lines.append(f"search index {name} up to date{built}")
        except PyMongoError as exc:
            verb = "created" if check.state == MISSING else "updated"
            lines.append(
                f"search index {name} could not be {verb} ({type(exc).__name__}: "
                f"{str(exc)[:200]}); the next `alfred migrate` tries again"
            )
    return lines
