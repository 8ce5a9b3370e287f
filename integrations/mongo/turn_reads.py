"""The two combined reads of a reply turn (see :mod:`.turn_memo`).

* :func:`directory_snapshot`, when the viewer is read: the person's own user document,
  the thread's document and the person's active circles with their members' user
  documents, in one database-level aggregate that opens with the two ids
  (``$documents``) and fetches each part by ``$lookup``. It serves the viewer, the names
  of a reply, both time zone lookups and the thread's session state.
* :func:`memory_snapshot`, when the first memory read of the turn comes: the thread's
  last messages (bounded by :func:`integrations.mongo.directory.history_from`), the
  versions of the partitions the viewer may see and their open clarifications, in one
  read; the viewer's visible unformed messages in a second, sent with it. The privacy
  filter (:func:`memory.privacy.visibility_filter`) is inside every part that reads
  memories, exactly as in the single reads it replaces.

Every part is fetched through an index: each read opens with a ``$match`` an index
serves (the journal grows without end), and a ``$lookup`` only by a field that leads an
index of the collection it reads (see :func:`_lookup`; never ``$unionWith``, which the
embedded server runs over the whole collection). The parts are memoised under the
collection they come from, so a write to any of those collections invalidates just
that part.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Hashable
from datetime import datetime
from typing import Any, Final

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.command_cursor import AsyncCommandCursor
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo import turn_memo
from integrations.mongo.codec import NEWEST_FIRST as JOURNAL_NEWEST_FIRST
from integrations.mongo.turn_memo import MISSING, TurnMemo
from memory.constants import CIRCLES, CLARIFICATIONS, MESSAGES, PARTITIONS, THREADS, USERS
from memory.models import Partition, Role, Viewer
from memory.privacy import (
    and_visible,
    and_visible_branches,
    visibility_branches,
    visibility_filter,
)

Document = dict[str, Any]

#: The thread's last messages fetched for the history: what a reply uses (its 12 turns
#: and the message it answers, ``services.reply.conversation.HISTORY_TURNS`` + 1) and
#: no more. The embedded server's time grows with every message a read matches, sorts and
#: returns, and the history's time window is set by this many user messages (each may
#: have a reply beside it).
HISTORY_PREFETCH: Final = 13
#: Unformed messages fetched for the recent leg (it asks for 20).
UNFORMED_PREFETCH: Final = 20
#: The journal's order for both of a turn's message reads (:data:`codec.NEWEST_FIRST`).
NEWEST_FIRST: Final[Document] = {"$sort": dict(JOURNAL_NEWEST_FIRST)}
_SRC: Final = "_alfred_turn_src"
_MEMBERS: Final = "_alfred_members"
_BY_KEY: Final = "_alfred_by_key"
_BY_CIRCLE: Final = "_alfred_by_circle"
#: A circle still in use (the second stage of :func:`active_circles_of`).
NOT_ARCHIVED: Final[Document] = {"$match": {"archived_at": None}}


def viewer_key(viewer: Viewer) -> Hashable:
    """Everything the privacy filter of ``viewer`` depends on."""
    t = viewer.thread
    return (viewer.user_id, t.id, t.kind.value, t.circle_id, t.user_id, viewer.circle_ids)


def history_window_key(thread_id: str) -> Hashable:
    """Where a turn keeps the thread's history bound, written by the journal write."""
    return ("history_from", thread_id)


def history_window(memo: TurnMemo, thread_id: str) -> datetime | None:
    """The time this turn's journal write left for the thread's history read
    (:func:`integrations.mongo.directory.history_from`): at least
    :data:`HISTORY_PREFETCH` messages are newer. None when the turn wrote none, or the
    thread is too new to bound."""
    window = memo.get(THREADS, history_window_key(thread_id), max_age=None)
    return window if isinstance(window, datetime) else None


async def _documents(coll: AsyncCollection[Document], pipeline: list[Document]) -> list[Document]:
    return [d async for d in await coll.aggregate(pipeline)]


async def _one(cursor: Awaitable[AsyncCommandCursor[Document]]) -> Document:
    """The single document a read that gathers its parts into one returns."""
    docs = [d async for d in await cursor]
    return docs[0] if docs else {}


def _lookup(
    coll: str, local: str, foreign: str, into: str, pipeline: list[Document] | None = None
) -> Document:
    """A ``$lookup`` by equality on ``foreign``, then ``pipeline`` on what it found.

    Where a read fetches another collection's documents by key, it does so through a
    ``$lookup`` whose ``foreignField`` leads an index: the embedded server serves that
    from the index, but runs a ``$unionWith`` sub-pipeline over the whole foreign
    collection (measured: one user by ``_id`` 2.3 ms among 10 users, 149 ms among
    8,000; by ``$lookup`` 1.4-2.4 ms at every size)."""
    spec: Document = {"from": coll, "localField": local, "foreignField": foreign, "as": into}
    if pipeline:
        spec["pipeline"] = pipeline
    return {"$lookup": spec}


def active_circles_of(user_id: str) -> list[Document]:
    """The stages that select the person's circles not archived: the member first, which
    the ``member_ids`` index serves, then the rest. Together in one ``$match`` the
    embedded server scanned every circle (an equality on null is no index key to it)."""
    return [{"$match": {"member_ids": user_id}}, NOT_ARCHIVED]


async def directory_snapshot(
    db: AsyncDatabase[Document], memo: TurnMemo, user_id: str, thread_id: str
) -> list[Document]:
    """The person's active circles (one read that also memoises their members, the
    person and the thread); served from the memo when this turn has read them."""
    cached = memo.get(CIRCLES, ("of", user_id))
    if cached is not MISSING:
        return list(cached)
    seen = {c: turn_memo.generation(c) for c in (CIRCLES, USERS, THREADS)}
    pipeline: list[Document] = [
        {"$documents": [{"u": {"$literal": user_id}, "t": {"$literal": thread_id}}]},
        _lookup(USERS, "u", "_id", "user"),
        _lookup(THREADS, "t", "_id", "thread"),
        _lookup(
            CIRCLES,
            "u",
            "member_ids",
            "circles",
            [NOT_ARCHIVED, _lookup(USERS, "member_ids", "_id", _MEMBERS)],
        ),
    ]
    found = await _one(db.aggregate(pipeline))
    circles: list[Document] = found.get("circles", [])
    users: dict[str, Document] = {}
    for circle in circles:
        for member_doc in circle.pop(_MEMBERS, []):
            users[str(member_doc["_id"])] = member_doc
        memo.put(CIRCLES, ("id", str(circle["_id"])), circle, seen=seen[CIRCLES])
    for user in found.get("user", []):
        users[str(user["_id"])] = user
    memo.put(USERS, ("id", user_id), users.get(user_id), seen=seen[USERS])
    for uid, user in users.items():
        memo.put(USERS, ("id", uid), user, seen=seen[USERS])
    thread = (found.get("thread") or [None])[0]
    memo.put(THREADS, ("id", thread_id), thread, seen=seen[THREADS])
    memo.put(CIRCLES, ("of", user_id), circles, seen=seen[CIRCLES])
    return circles


def memoised_users(memo: TurnMemo, user_ids: list[str]) -> dict[str, Document | None] | None:
    """The user documents of ``user_ids`` if this turn holds every one (None otherwise)."""
    found: dict[str, Document | None] = {}
    for uid in user_ids:
        doc = memo.get(USERS, ("id", uid))
        if doc is MISSING:
            return None
        found[uid] = doc
    return found


async def memory_snapshot(
    db: AsyncDatabase[Document], memo: TurnMemo, viewer: Viewer
) -> dict[str, list[Document]]:
    """The memory reads of a reply for ``viewer``, in two concurrent reads (memoised)."""
    key = viewer_key(viewer)
    async with memo.lock:
        parts = {
            PARTITIONS: memo.get(PARTITIONS, key),
            CLARIFICATIONS: memo.get(CLARIFICATIONS, key),
            MESSAGES: memo.get(MESSAGES, key),
        }
        if all(v is not MISSING for v in parts.values()):
            return {name: list(v) for name, v in parts.items()}
        seen = {c: turn_memo.generation(c) for c in parts}
        open_questions = {"user_id": viewer.user_id, "status": {"$in": ["pending", "asked"]}}
        in_thread: Document = {"thread_id": viewer.thread.id}
        since = history_window(memo, viewer.thread.id)
        if since is not None:
            in_thread["created_at"] = {"$gte": since}
        # Two reads, sent together. Each starts with a ``$match`` an index serves (the
        # journal only grows). The first gathers the thread's last messages into one
        # document and fetches the partitions and open questions by key beside them.
        partition_fields, partition_lookups = partition_record_lookups(viewer)
        keys = {"_u": {"$literal": viewer.user_id}, **partition_fields}
        around = history_and_parts(
            in_thread,
            keys,
            [
                _lookup(
                    CLARIFICATIONS,
                    "_u",
                    "user_id",
                    "questions",
                    [{"$match": and_visible(viewer, open_questions)}],
                ),
                *partition_lookups,
            ],
        )
        fresh = unformed_visible_pipeline(viewer, UNFORMED_PREFETCH)
        first, second = await asyncio.gather(
            _one(db[MESSAGES].aggregate(around)), _documents(db[MESSAGES], fresh)
        )
        history, found = history_and_parts_in(first)
        partitions = partition_records_in(found)
        questions: list[Document] = found.get("questions", [])
        # Messages are memoised as one part (a write to the journal drops both lists).
        messages = [{_SRC: "history", **d} for d in history] + [
            {_SRC: "unformed", **d} for d in second
        ]
        memo.put(PARTITIONS, key, partitions, seen=seen[PARTITIONS])
        memo.put(CLARIFICATIONS, key, questions, seen=seen[CLARIFICATIONS])
        memo.put(MESSAGES, key, messages, seen=seen[MESSAGES])
        memo.put(MESSAGES, ("thread", viewer.thread.id), key, seen=seen[MESSAGES])
        return {
            PARTITIONS: partitions,
            CLARIFICATIONS: questions,
            MESSAGES: messages,
        }


def history_and_parts(
    in_thread: Document, keys: Document, lookups: list[Document]
) -> list[Document]:
    """The thread's last :data:`HISTORY_PREFETCH` messages matching ``in_thread``, and
    beside them what ``lookups`` fetch by ``keys``, in one document
    (:func:`history_and_parts_in` reads it back).

    The lookups run on a document of their keys alone, never on the one that holds the
    history: the embedded server copies the whole document at every ``$lookup`` (and
    ``$addFields``) stage, and with the history in it the read took 0.55-0.65 ms longer
    (4.9-5.2 against 4.4-4.6 ms p50, a thread of 400 messages). The first ``$facet``
    makes one document even of a thread with no messages; the second runs the lookups
    on a projection of that one to the keys alone."""
    return [
        {"$match": in_thread},
        NEWEST_FIRST,
        {"$limit": HISTORY_PREFETCH},
        {"$facet": {"history": []}},
        {"$facet": {"history": [], "parts": [{"$project": {"_id": 0, **keys}}, *lookups]}},
    ]


def history_and_parts_in(found: Document) -> tuple[list[Document], Document]:
    """The messages and the fetched parts of a :func:`history_and_parts` read."""
    history = (found.get("history") or [{}])[0].get("history", [])
    parts = (found.get("parts") or [{}])[0]
    return history, parts


def partition_lookup_keys(viewer: Viewer) -> tuple[list[str], list[str]]:
    """How to fetch the partition records ``viewer`` may see by key: the ``_id`` of each
    one :func:`memory.privacy.visibility_branches` names whole (every partition of a
    DM), and the circle of each branch that names a circle only (a group's, whoever
    owns them, former members included). The privacy filter still runs on what they
    fetch."""
    keys: list[str] = []
    circles: list[str] = []
    for branch in visibility_branches(viewer):
        if "owner_user_id" in branch:
            keys.append(Partition.from_fields(branch).key())
        else:
            circles.append(str(branch["circle_id"]))
    return keys, circles


def partition_record_lookups(viewer: Viewer) -> tuple[Document, list[Document]]:
    """The fields and the ``$lookup`` stages that fetch the partition records ``viewer``
    may see (:func:`partition_lookup_keys`, the privacy filter inside each) into the
    document they run on; :func:`partition_records_in` reads them back."""
    keys, circles = partition_lookup_keys(viewer)
    visible: Document = {"$match": visibility_filter(viewer)}
    stages: list[Document] = []
    # An empty key list would match the partitions without one: leave its stage out.
    if keys:
        stages.append(_lookup(PARTITIONS, "_k", "_id", _BY_KEY, [visible]))
    if circles:
        stages.append(_lookup(PARTITIONS, "_c", "circle_id", _BY_CIRCLE, [visible]))
    return {"_k": {"$literal": keys}, "_c": {"$literal": circles}}, stages


def partition_records_in(found: Document) -> list[Document]:
    """The partition records :func:`partition_record_lookups` fetched into ``found``."""
    docs = (*found.get(_BY_KEY, []), *found.get(_BY_CIRCLE, []))
    return list({str(d["_id"]): d for d in docs}.values())


async def visible_partition_records(db: AsyncDatabase[Document], viewer: Viewer) -> list[Document]:
    """The partition records ``viewer`` may see, read alone (outside a reply turn).

    A group's filter, and a DM's outside any circle, are plain equalities, which the
    partition index serves as they are. A DM of someone in a circle has an ``$or``, for
    which the embedded server read every partition record of the deployment (672-934 ms
    among 20,000): those records are fetched by ``_id`` (its branches name each whole,
    :func:`partition_lookup_keys`), the filter in a second stage (2.6 ms)."""
    keys, circles = partition_lookup_keys(viewer)
    if not keys and not circles:
        return []  # may see nothing
    visible = visibility_filter(viewer)
    if "$or" not in visible:
        return [d async for d in db[PARTITIONS].find(visible)]
    firsts = [{"_id": {"$in": keys}}] if keys else []
    firsts += [{"circle_id": {"$in": circles}}] if circles else []
    found = await asyncio.gather(
        *(_documents(db[PARTITIONS], [{"$match": first}, {"$match": visible}]) for first in firsts)
    )
    return list({str(d["_id"]): d for docs in found for d in docs}.values())


def unformed_visible_pipeline(viewer: Viewer, limit: int) -> list[Document]:
    """The newest ``limit`` user messages ``viewer`` may see that formation has not
    reached, as stages the embedded server serves from an index, the privacy filter
    inside.

    One partition visible (a group; a DM outside any circle): plain equalities, which
    the index of unformed user messages serves (migration 10). Several (a DM of someone
    in a circle): the filter's ``$or`` made the embedded server scan the whole journal
    (390 ms at 20,000 messages); the unformed messages are matched first, from their own
    index, and the privacy filter then runs on those alone (22 ms with 790 of them
    unformed, which formation keeps far fewer). MongoDB merges the two stages."""
    unformed = {"formed": False, "role": Role.USER.value}
    branches = and_visible_branches(viewer, unformed)
    if len(branches) == 1:
        first: list[Document] = [{"$match": branches[0]}]
    else:
        first = [
            {"$match": {"formed": False}},
            {"$match": and_visible(viewer, {"role": Role.USER.value})},
        ]
    return [
        *first,
        {"$match": {"handled": {"$ne": True}}},
        NEWEST_FIRST,
        {"$limit": limit},
    ]


def messages_part(docs: list[Document], source: str) -> list[Document]:
    """One list of a snapshot's messages (``history`` or ``unformed``), newest first,
    without the tag."""
    out = []
    for doc in docs:
        if doc.get(_SRC) == source:
            clean = dict(doc)
            clean.pop(_SRC, None)
            out.append(clean)
    return out
