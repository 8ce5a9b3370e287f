"""Explicit memories without the speaker's name in front.

Before this version, an explicit "remember that …" the rules could not read was stored as
"Alice: the spare key is under the blue pot", so every search naming Alice found it
whatever it was about. The speaker is the memory's provenance, not its text: such
memories are reworded as they are stored now (first person in the third, "Alice keeps
Alice's passport in the desk", anything else as said) through the fact store's
``update_content``, which keeps the old wording in the memory's history.

The name compared is the speaker's current one; a prefix with a name they have since
changed is left as it is. The new wording is embedded with the migration's embedder when
it has one; otherwise the memory is found by keywords until the ``re-embed`` admin job
gives it a vector (it counts as stale, so the job picks it up). Idempotent: a memory
without the prefix is not touched again.

It also indexes current facts by the messages they were learned from: an edited message
retires what was learned from its old words (services/reply/edits.py).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, IndexModel

from integrations.mongo.facts import MongoFactStore
from integrations.mongo.migrator import MigrationContext
from memory.constants import FACTS, USERS
from memory.ids import content_hash
from memory.models import ThreadKind
from memory.rules.person import Voice
from memory.rules.statements import as_stated

VERSION = 7
NAME = "explicit memories without a name prefix; facts by source message"

INDEXES = [
    IndexModel(
        [("provenance.message_ids", ASCENDING)],
        partialFilterExpression={"current": True},
        name="current_by_source_message",
    ),
]

_PREFIX = re.compile(r"^(?P<name>[^:\n]{1,80}): (?P<rest>\S.*)$", re.S)


async def up(ctx: MigrationContext) -> None:
    facts = ctx.db[FACTS]
    await facts.create_indexes(INDEXES)
    query = {"current": True, "provenance.source": "explicit", "content": {"$regex": ": "}}
    docs = [d async for d in facts.find(query, {"embedding": 0})]
    if not docs:
        return
    speakers = {str(_speaker(d)) for d in docs if _speaker(d)}
    names = {
        str(u["_id"]): str(u.get("name") or "")
        async for u in ctx.db[USERS].find({"_id": {"$in": list(speakers)}}, {"name": 1})
    }
    store = MongoFactStore(ctx.db)
    now = ctx.clock.now() if ctx.clock is not None else datetime.now(UTC)
    reworded = 0
    for doc in docs:
        content = _reworded(doc, names)
        if content is None:
            continue
        vector = None
        if ctx.embedder is not None:
            vector = (await ctx.embedder.embed([content]))[0].tolist()
        updated = await store.update_content(
            str(doc["_id"]),
            content=content,
            content_hash=content_hash(content),
            embedding=vector,
            embedding_model=ctx.embedder.model_name if ctx.embedder is not None else None,
            at=now,
            reason="the speaker's name taken out of the wording",
        )
        reworded += updated is not None
    if reworded:
        ctx.note(f"reworded {reworded} explicit memories that began with the speaker's name")
        if ctx.embedder is None:
            ctx.note("run the re-embed admin job to give the reworded memories vectors")


def _speaker(doc: dict[str, Any]) -> str | None:
    provenance = doc.get("provenance") or {}
    speaker = provenance.get("speaker_id") or doc.get("owner_user_id")
    return str(speaker) if speaker else None


def _reworded(doc: dict[str, Any], names: dict[str, str]) -> str | None:
    """The memory's wording without "<speaker's name>: ", or None when it has none."""
    match = _PREFIX.match(str(doc.get("content") or ""))
    speaker = _speaker(doc)
    name = names.get(speaker or "")
    if match is None or not name or match.group("name") != name:
        return None
    # The circle's memory was said in a group; the rest is the speaker's own.
    kind = ThreadKind.GROUP if doc.get("owner_user_id") is None else ThreadKind.DM
    said = doc.get("created_at")
    when = said if isinstance(said, datetime) else datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return as_stated(match.group("rest"), Voice.for_speaker(name, kind), when)
