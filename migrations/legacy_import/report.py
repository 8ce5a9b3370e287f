"""The legacy import's vocabulary and its report: the collections it reads, the kinds
of legacy items, why an item is skipped, and what a run counted (ids and counts only)."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from pymongo.asynchronous.database import AsyncDatabase

from memory.errors import AlfredError

log = logging.getLogger(__name__)

Document = dict[str, Any]
Db = AsyncDatabase[Document]

LEGACY_SESSIONS: Final = "memory_sessions"
LEGACY_USER: Final = "memory_user"
LEGACY_AGENT: Final = "memory_agent"
LEGACY_COLLECTIONS: Final = (LEGACY_SESSIONS, LEGACY_USER, LEGACY_AGENT)
#: Optional operator-filled table: legacy user id → Alfred (Telegram) user id.
LEGACY_USER_MAP: Final = "legacy_user_map"
#: The ids of every record an import wrote (derived ids and kinds, no content), so a
#: memory forgotten since is never imported again from the legacy collections.
LEGACY_LEDGER: Final = "legacy_import_ledger"

#: Facts embedded per embedder call: large enough to amortise a network round trip,
#: small enough that one failure costs little.
EMBED_BATCH: Final = 64
#: Skipped items listed by legacy id in the report (the counts are always complete).
MAX_SAMPLES: Final = 200

# Kinds (report keys).
FACT: Final = "fact"
DIRECTIVE: Final = "directive"
EPISODE: Final = "episode"
SUGGESTION: Final = "suggestion"
USER_BLOB: Final = "user_blob"
AGENT_SHARD: Final = "agent_shard"
UNKNOWN: Final = "unknown_type"
KINDS: Final = (FACT, DIRECTIVE, EPISODE, USER_BLOB, SUGGESTION, AGENT_SHARD, UNKNOWN)

#: Why an item was skipped, for the report.
REASONS: Final = {
    "already_imported": "imported by an earlier run (same legacy id)",
    "duplicate": "the same fact already exists in that partition",
    "no_owner": "no related user: no private partition to put it in",
    "several_owners": "several related users and no circles in legacy data: no partition "
    "is private to all of them",
    "unmapped_user": "legacy user id has no Alfred (Telegram) user id: map it (legacy_user_map "
    "collection or --legacy-user-map) and run `alfred migrate --legacy-import`",
    "empty": "no content",
    "agent_scope": "an agent shard's blob is merged from every user's conversations, so no "
    "private partition can hold it, and only operators write shared memory (DESIGN.md §3)",
    "other_agent": "belongs to another legacy agent than the one imported",
    "partition_has_blob": "the user already has a consolidated blob; its reflections are "
    "imported unabsorbed so the next consolidation merges them",
    "unknown_type": "memory_type is not episode, directive, fact or suggestion",
}


class LegacyDryRunFinished(AlfredError):
    """Raised by migration 0004 after a dry run, so the migrator does not record it as
    applied (a dry run must leave the migration pending)."""

    def __init__(self, report: ImportReport) -> None:
        super().__init__(
            "legacy import dry run finished: nothing was written",
            hint="run `alfred migrate` without the dry-run flag to import",
        )
        self.report = report


@dataclass
class KindReport:
    """Counts for one legacy kind."""

    seen: int = 0
    imported: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"seen": self.seen, "imported": self.imported, "skipped": dict(self.skipped)}


@dataclass(frozen=True)
class SkippedItem:
    """One skipped legacy record, by id (never by content)."""

    kind: str
    legacy_id: str
    reason: str


@dataclass
class ImportReport:
    """What an import did (or, in a dry run, would do): per kind, counts and reasons."""

    dry_run: bool
    legacy_collections: list[str] = field(default_factory=list)
    kinds: dict[str, KindReport] = field(default_factory=lambda: {k: KindReport() for k in KINDS})
    #: Records written per target collection (in a dry run: that would be written).
    written: Counter[str] = field(default_factory=Counter)
    embedded: int = 0
    samples: list[SkippedItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.legacy_collections)

    @property
    def imported(self) -> int:
        return sum(k.imported for k in self.kinds.values())

    @property
    def skipped(self) -> int:
        return sum(sum(k.skipped.values()) for k in self.kinds.values())

    def seen(self, kind: str) -> None:
        self.kinds[kind].seen += 1

    def ok(self, kind: str) -> None:
        self.kinds[kind].imported += 1

    def skip(self, kind: str, legacy_id: str, reason: str) -> None:
        self.kinds[kind].skipped[reason] += 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(SkippedItem(kind, legacy_id, reason))

    def lines(self) -> list[str]:
        """The report for a person: one line per kind, then what was written, then why."""
        mode = "dry run, nothing written" if self.dry_run else "applied"
        if not self.found:
            return [f"legacy import ({mode}): no legacy collections found; nothing to import"]
        verb = "would import" if self.dry_run else "imported"
        out = [f"legacy import ({mode}): found {', '.join(self.legacy_collections)}"]
        reasons: set[str] = set()
        for kind in KINDS:
            k = self.kinds[kind]
            if not k.seen:
                continue
            skipped = ", ".join(f"{r} {n}" for r, n in sorted(k.skipped.items()))
            reasons |= set(k.skipped)
            tail = f", skipped {sum(k.skipped.values())} ({skipped})" if k.skipped else ""
            out.append(f"  {kind}: {k.seen} seen, {verb} {k.imported}{tail}")
        written = ", ".join(f"{n} {c}" for c, n in sorted(self.written.items())) or "nothing"
        embed = "to embed" if self.dry_run else "embedded"
        out.append(
            f"  {'would write' if self.dry_run else 'wrote'}: {written} ({self.embedded} "
            f"fact(s) {embed})"
        )
        for reason in sorted(reasons):
            out.append(f"  {reason}: {REASONS.get(reason, reason)}")
        out.extend(f"  note: {n}" for n in self.notes)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "legacy_collections": self.legacy_collections,
            "kinds": {k: v.as_dict() for k, v in self.kinds.items()},
            "written": dict(self.written),
            "embedded": self.embedded,
            "skipped_samples": [s.__dict__ for s in self.samples],
            "notes": self.notes,
        }
