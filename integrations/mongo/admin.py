"""Operator queries for the admin jobs (``services.admin``): kept apart from the stores the
bot uses, so that nothing here is mistaken for a read path that may reach a person.

Two kinds of reads live here:

* **for a person** (the export): each takes a :class:`Viewer` and runs with
  ``and_visible(viewer, …)`` inside the query, exactly like the bot's own reads; the
  caller re-checks each artefact with :func:`memory.privacy.is_visible`.
* **for the operator** (counts, re-embedding, mem0 reconciliation, the purge's
  footprint): they return counts, ids, or facts to rewrite, never text to show.

Aggregations stay to ``$match`` + ``$group`` on plain fields, which the embedded
MongoDB-wire server and Atlas both support.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.codec import (
    clarification_from_doc,
    consolidated_from_doc,
    fact_from_doc,
    reflection_from_doc,
)
from integrations.mongo.outbox import FORMATION_REQUESTS
from integrations.mongo.upsert import upsert
from memory.constants import (
    CIRCLES,
    CLARIFICATIONS,
    CONSOLIDATED,
    FACTS,
    MESSAGES,
    PARTITIONS,
    REFLECTIONS,
    THREADS,
    USERS,
)
from memory.models import Clarification, Consolidated, Fact, Reflection, Viewer
from memory.privacy import and_visible
from memory.search.context import embedding_text

Document = dict[str, Any]

#: Where the last run of each admin job is recorded (one small document per job name).
JOB_RUNS: Final = "job_runs"
#: The collections ``stats`` counts, in the order it prints them.
COUNTED_COLLECTIONS: Final = (
    USERS,
    CIRCLES,
    THREADS,
    MESSAGES,
    FACTS,
    REFLECTIONS,
    CONSOLIDATED,
    CLARIFICATIONS,
    PARTITIONS,
    FORMATION_REQUESTS,
)
#: The partitioned collections ``stats`` breaks down by partition kind and by circle.
PARTITIONED: Final = (FACTS, REFLECTIONS, CONSOLIDATED, CLARIFICATIONS, MESSAGES)
#: The three partition shapes (DESIGN.md §3), as ``stats`` names them.
PARTITION_KINDS: Final[dict[str, Document]] = {
    "circle": {"visibility": "shared", "owner_user_id": None},
    "member": {"visibility": "shared", "owner_user_id": {"$ne": None}},
    "dm": {"visibility": "dm"},
}
_NO_EMBEDDING: Final = {"embedding": 0}


def _id_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def stale_embedding_filter(model: str, dims: int) -> Document:
    """Facts whose vector did not come from ``model`` at ``dims`` (or have none)."""
    return {
        "$or": [
            {"embedding_model": {"$ne": model}},
            {"embedding_dims": {"$ne": dims}},
            {"embedding": None},
        ]
    }


class MongoAdminQueries:
    """Reads (and a few deletes) the admin jobs need beyond the bot's stores (implements
    :class:`memory.admin_ports.AdminQueries`)."""

    def __init__(self, db: AsyncDatabase[Document]) -> None:
        self._db = db

    # --- the export: reads for one person, privacy filter inside ---------------------

    async def visible_facts(self, viewer: Viewer) -> list[Fact]:
        """Every fact the viewer may see, history included, without vectors."""
        query = and_visible(viewer)
        cursor = self._db[FACTS].find(query, _NO_EMBEDDING).sort([("created_at", 1), ("_id", 1)])
        return [fact_from_doc(d) async for d in cursor]

    async def visible_reflections(self, viewer: Viewer) -> list[Reflection]:
        """Every reflection the viewer may see, absorbed or not, any scope."""
        cursor = self._db[REFLECTIONS].find(and_visible(viewer)).sort([("created_at", 1)])
        return [reflection_from_doc(d) async for d in cursor]

    async def visible_blobs(self, viewer: Viewer) -> list[Consolidated]:
        """Every consolidated blob the viewer may see, any scope."""
        cursor = (
            self._db[CONSOLIDATED].find(and_visible(viewer)).sort([("last_consolidated_at", 1)])
        )
        return [consolidated_from_doc(d) async for d in cursor]

    async def clarifications_for(self, viewer: Viewer) -> list[Clarification]:
        """Questions addressed to the viewer, in partitions they may see (a question for
        another member is theirs, even in a shared partition)."""
        query = and_visible(viewer, {"user_id": viewer.user_id})
        cursor = self._db[CLARIFICATIONS].find(query).sort([("created_at", 1)])
        return [clarification_from_doc(d) async for d in cursor]

    # --- the purge: what is left of a user -------------------------------------------

    async def user_footprint(self, user_id: str) -> dict[str, int]:
        """How many records still carry ``user_id`` (owner, speaker, author, member).

        All zero and no directory entry means there is nothing (left) to purge."""
        owned = {"owner_user_id": user_id}
        counts = {
            FACTS: await self._db[FACTS].count_documents(
                {"$or": [owned, {"provenance.speaker_id": user_id}]}
            ),
            REFLECTIONS: await self._db[REFLECTIONS].count_documents(owned),
            CONSOLIDATED: await self._db[CONSOLIDATED].count_documents(owned),
            CLARIFICATIONS: await self._db[CLARIFICATIONS].count_documents(
                {"$or": [owned, {"user_id": user_id}]}
            ),
            MESSAGES: await self._db[MESSAGES].count_documents(
                {"$or": [owned, {"user_id": user_id}]}
            ),
            USERS: await self._db[USERS].count_documents({"_id": user_id}),
            THREADS: await self._db[THREADS].count_documents({"kind": "dm", "user_id": user_id}),
            "memberships": await self._db[CIRCLES].count_documents({"member_ids": user_id}),
        }
        return counts

    async def delete_dm_requests(self, user_id: str) -> int:
        """Formation requests of the user's DM thread (its id is the user's id): ids and
        counters only, but they name a thread that no longer exists after a purge."""
        result = await self._db[FORMATION_REQUESTS].delete_many({"thread_id": user_id})
        return result.deleted_count

    # --- re-embedding -----------------------------------------------------------------

    async def count_stale_embeddings(self, model: str, dims: int) -> int:
        return await self._db[FACTS].count_documents(stale_embedding_filter(model, dims))

    async def stale_embeddings(
        self, model: str, dims: int, *, limit: int, skip_ids: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """The next ``limit`` facts to re-embed, as ``(id, text to embed)``, in id order:
        the content, followed by the message it answered when it has one, as the writer
        embedded it (memory.search.context).

        The query itself is the resume point: a re-embedded fact no longer matches, so a
        run that was killed continues where it stopped."""
        query: Document = stale_embedding_filter(model, dims)
        if skip_ids:
            query = {"$and": [query, {"_id": {"$nin": list(skip_ids)}}]}
        fields = {"content": 1, "provenance.context": 1}
        cursor = self._db[FACTS].find(query, fields).sort("_id", 1).limit(limit)
        out: list[tuple[str, str]] = []
        async for d in cursor:
            context = (d.get("provenance") or {}).get("context")
            out.append((str(d["_id"]), embedding_text(str(d.get("content", "")), context)))
        return out

    # --- mem0 reconciliation ----------------------------------------------------------

    async def current_facts_without_mem0(self, *, limit: int = 0) -> list[Fact]:
        """Current facts with no mem0 copy on record."""
        cursor = (
            self._db[FACTS]
            .find({"current": True, "mem0_id": None}, _NO_EMBEDDING)
            .sort("_id", 1)
            .limit(limit)
        )
        return [fact_from_doc(d) async for d in cursor]

    async def partition_keys(self) -> list[str]:
        """Every partition key that holds or ever held a fact: the mem0 ``user_id``s to
        look under (``memory_partitions`` keeps a row after its facts are deleted)."""
        keys = {str(d["_id"]) async for d in self._db[PARTITIONS].find({}, {"_id": 1})}
        pipeline: list[Document] = [{"$group": {"_id": "$pkey"}}]
        async for d in await self._db[FACTS].aggregate(pipeline):
            if d.get("_id"):
                keys.add(str(d["_id"]))
        return sorted(keys)

    async def known_mem0_ids(self, mem0_ids: Sequence[str]) -> set[str]:
        """Which of ``mem0_ids`` a local fact (current or history) still points to."""
        if not mem0_ids:
            return set()
        cursor = self._db[FACTS].find({"mem0_id": {"$in": list(mem0_ids)}}, {"mem0_id": 1})
        return {str(d["mem0_id"]) async for d in cursor}

    async def linked_facts(self, partition_key: str) -> list[Fact]:
        """Current facts of one partition that claim a mem0 copy."""
        cursor = self._db[FACTS].find(
            {"pkey": partition_key, "current": True, "mem0_id": {"$ne": None}}, _NO_EMBEDDING
        )
        return [fact_from_doc(d) async for d in cursor]

    # --- stats --------------------------------------------------------------------------

    async def collection_counts(self) -> dict[str, int]:
        return {name: await self._db[name].count_documents({}) for name in COUNTED_COLLECTIONS}

    async def fact_counts(self, model: str, dims: int) -> dict[str, int]:
        facts = self._db[FACTS]
        return {
            "total": await facts.count_documents({}),
            "current": await facts.count_documents({"current": True}),
            "history": await facts.count_documents({"current": False}),
            "with_mem0_copy": await facts.count_documents({"mem0_id": {"$ne": None}}),
            "stale_embeddings": await facts.count_documents(stale_embedding_filter(model, dims)),
        }

    async def partition_kind_counts(self) -> dict[str, dict[str, int]]:
        """``{collection: {"circle": n, "member": n, "dm": n}}``."""
        return {
            name: {
                kind: await self._db[name].count_documents(query)
                for kind, query in PARTITION_KINDS.items()
            }
            for name in PARTITIONED
        }

    async def circle_counts(self) -> dict[str, dict[str, Any]]:
        """Per circle id: members, archived, and its records per collection. No title: a
        group's title is chosen by people and may name them, and this result is logged."""
        out: dict[str, dict[str, Any]] = {}
        async for c in self._db[CIRCLES].find({}, {"title": 0}):
            out[str(c["_id"])] = {
                "members": len(c.get("member_ids", [])),
                "archived": c.get("archived_at") is not None,
                **{name: 0 for name in PARTITIONED},
            }
        for name in PARTITIONED:
            pipeline: list[Document] = [
                {"$match": {"circle_id": {"$ne": None}}},
                {"$group": {"_id": "$circle_id", "n": {"$sum": 1}}},
            ]
            async for d in await self._db[name].aggregate(pipeline):
                row = out.setdefault(
                    str(d["_id"]),
                    {
                        "members": 0,
                        "archived": None,  # records of a circle no longer in the directory
                        **{n: 0 for n in PARTITIONED},
                    },
                )
                row[name] = int(d["n"])
        return out

    async def partition_counts(self, top: int) -> dict[str, Any]:
        """Records per partition (visibility, circle id, owner id: ids only), the ``top``
        largest by records in all; ``total`` is the number of partitions holding any.

        ``{"total": n, "shown": k, "top": [{"visibility", "circle_id", "owner_user_id",
        <collection>: n, …, "records": n}, …]}``, largest first (ties by key)."""
        rows: dict[tuple[str, str | None, str | None], dict[str, Any]] = {}
        for name in PARTITIONED:
            pipeline: list[Document] = [
                {
                    "$group": {
                        "_id": {
                            "visibility": "$visibility",
                            "circle_id": "$circle_id",
                            "owner_user_id": "$owner_user_id",
                        },
                        "n": {"$sum": 1},
                    }
                }
            ]
            async for d in await self._db[name].aggregate(pipeline):
                part = d["_id"] or {}
                key = (
                    str(part.get("visibility")),
                    _id_or_none(part.get("circle_id")),
                    _id_or_none(part.get("owner_user_id")),
                )
                row = rows.setdefault(
                    key,
                    {
                        "visibility": key[0],
                        "circle_id": key[1],
                        "owner_user_id": key[2],
                        **{n: 0 for n in PARTITIONED},
                        "records": 0,
                    },
                )
                row[name] += int(d["n"])
                row["records"] += int(d["n"])
        ranked = sorted(
            rows.items(), key=lambda kv: (-kv[1]["records"], tuple(str(k) for k in kv[0]))
        )
        shown = [row for _, row in ranked[: max(0, top)]]
        return {"total": len(rows), "shown": len(shown), "top": shown}

    # --- job runs ---------------------------------------------------------------------

    async def job_started(self, name: str, job_id: str, at: datetime) -> None:
        await upsert(
            self._db[JOB_RUNS],
            {"_id": name},
            {
                "$set": {
                    "last_job_id": job_id,
                    "last_started_at": at,
                    "last_status": "running",
                    "last_finished_at": None,
                    "last_error": None,
                },
                "$inc": {"runs": 1},
            },
        )

    async def job_finished(
        self,
        name: str,
        job_id: str,
        at: datetime,
        status: str,
        *,
        summary: Document | None = None,
        error: str | None = None,
    ) -> None:
        """Record the end of a run (``summary`` holds counts only, never content)."""
        await self._db[JOB_RUNS].update_one(
            {"_id": name, "last_job_id": job_id},
            {
                "$set": {
                    "last_finished_at": at,
                    "last_status": status,
                    "last_summary": summary,
                    "last_error": error,
                }
            },
        )

    async def job_runs(self) -> dict[str, Document]:
        out: dict[str, Document] = {}
        async for d in self._db[JOB_RUNS].find({}).sort("_id", 1):
            name = str(d.pop("_id"))
            out[name] = d
        return out
