"""What the connected MongoDB can do, decided once at start-up.

Atlas (and ``mongodb-atlas-local``) run ``$vectorSearch`` and ``$search``; self-hosted
MongoDB and the embedded server do not, and Alfred scores vectors and keywords itself
over the privacy-filtered candidates there. The probe is ``$listSearchIndexes``: only a
server with a search engine attached answers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from memory.constants import FACTS

#: Longest server message quoted in a capability's detail (``alfred doctor`` shows it).
REASON_CHARS = 120
#: What ``alfred doctor`` shows for a server error that came with no message.
NO_REASON = "the server gave no reason"


def short_reason(message: str, limit: int = REASON_CHARS) -> str:
    """A server's error, as a person reads it in ``alfred doctor``: its first sentence,
    without the driver's ``full error`` dump, and never cut inside a word (MongoDB's
    answer to the probe runs to three sentences)."""
    text = message.split(", full error:", 1)[0].strip()
    first = text.split(". ", 1)[0].rstrip(".").strip()
    if not first:
        return NO_REASON
    if len(first) <= limit:
        return first
    cut = first[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


@dataclass(frozen=True)
class Capabilities:
    """Server features the adapters choose their path by."""

    atlas_search: bool
    server_version: str
    detail: str


async def detect_capabilities(db: AsyncDatabase[dict[str, Any]]) -> Capabilities:
    """Probe the server; never raises for a missing feature, only records it."""
    try:
        info = await db.client.admin.command("buildInfo")
        version = str(info.get("version", "?"))
    except PyMongoError:
        version = "?"
    try:
        cursor = await db[FACTS].aggregate([{"$listSearchIndexes": {}}])
        await cursor.to_list(length=1)
    except PyMongoError as exc:
        reason = short_reason(str(exc))
        return Capabilities(
            atlas_search=False,
            server_version=version,
            detail=f"no Atlas Search on this server ({reason}); search runs in the application",
        )
    return Capabilities(atlas_search=True, server_version=version, detail="Atlas Search available")
