"""Reading the legacy collections: the derived ids of imported records, the user
mapping, and the small helpers that read a legacy document's fields."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bson import ObjectId
from pymongo.asynchronous.database import AsyncDatabase

from migrations.legacy_import.report import (
    LEGACY_COLLECTIONS,
    LEGACY_USER_MAP,
)

log = logging.getLogger(__name__)

Document = dict[str, Any]
Db = AsyncDatabase[Document]

# --- helpers ---------------------------------------------------------------------------


def legacy_record_id(kind: str, legacy_id: str, legacy_owner: str | None) -> str:
    """The Alfred id of an imported record: the same legacy record (and owner) always
    gives the same id, which is what makes a second run a no-op."""
    key = f"legacy|{kind}|{legacy_id}|{legacy_owner or '-'}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def legacy_session_id(legacy_session: str) -> str:
    """The Alfred session id of a legacy session: never equal to a live session's."""
    return f"legacy:{legacy_session}"


def as_legacy_id(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def first_date(doc: Document, *keys: str) -> datetime | None:
    for key in keys:
        value = doc.get(key)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
    oid = doc.get("_id")
    if isinstance(oid, ObjectId):
        return oid.generation_time
    return None


def related_users(doc: Document) -> list[str]:
    """The distinct legacy users a raw memory relates to."""
    related = doc.get("related_users") or []
    if not isinstance(related, list):
        related = [related]
    if not related and doc.get("user_id") is not None:
        related = [doc["user_id"]]
    out: list[str] = []
    for user in related:
        sid = as_legacy_id(user)
        if sid is not None and sid not in out:
            out.append(sid)
    return out


def text_of(doc: Document, key: str = "content") -> str:
    value = doc.get(key)
    return " ".join(value.split()) if isinstance(value, str) else ""


class UserResolver:
    """Legacy user id → Alfred user id (see the module docstring for the order)."""

    def __init__(self, explicit: Mapping[str, str] | None, table: Mapping[str, str]) -> None:
        self.explicit = {str(k): str(v) for k, v in (explicit or {}).items()}
        self.table = dict(table)

    def __call__(self, legacy_user: str) -> str | None:
        if legacy_user in self.explicit:
            return self.explicit[legacy_user]
        if legacy_user in self.table:
            return self.table[legacy_user]
        if legacy_user.lstrip("-").isdigit():
            return legacy_user
        return None


async def load_user_table(db: Db) -> dict[str, str]:
    if LEGACY_USER_MAP not in set(await db.list_collection_names()):
        return {}
    table: dict[str, str] = {}
    async for doc in db[LEGACY_USER_MAP].find({}):
        target = as_legacy_id(doc.get("user_id"))
        if target is not None:
            table[str(doc["_id"])] = target
    return table


def load_user_map(path: Path) -> dict[str, str]:
    """Read a user map file: a JSON object ``{"<legacy user id>": <telegram user id>}``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a user map is a JSON object of legacy id → Telegram user id")
    return {str(k): str(v) for k, v in data.items()}


async def legacy_collections_present(db: Db) -> list[str]:
    """The legacy collections this database holds, in a fixed order."""
    names = set(await db.list_collection_names())
    return [name for name in LEGACY_COLLECTIONS if name in names]


async def drop_legacy_collections(db: Db) -> list[str]:
    """Drop the legacy collections (after a checked import): they are outside the
    forget cascade, so keeping them would keep forgotten text. Returns those dropped."""
    present = await legacy_collections_present(db)
    for name in present:
        await db.drop_collection(name)
    return present


async def existing_ids(db: Db, collection: str, ids: Iterable[str]) -> set[str]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return set()
    cursor = db[collection].find({"_id": {"$in": wanted}}, {"_id": 1})
    return {str(d["_id"]) async for d in cursor}
