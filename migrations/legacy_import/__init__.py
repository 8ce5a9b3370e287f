"""Importing the previous generation of this memory system into Alfred's model.

Seed 002 ("Current System Reference") describes the previous generation: three
collections, and four kinds of raw memory. Its document shapes, which this module
reads, are those of that system's models (``SessionMemory``, ``UserMemory``,
``AgentMemory``)::

    memory_sessions  {_id, agent_id, source_session_id, memory_type, content,
                      source_message_ids, related_users: [user ids], shard_id,
                      agent_owner, createdAt}
                     memory_type ∈ episode | directive | fact | suggestion
    memory_user      {_id, agent_id, user_id, content (the consolidated blob),
                      unabsorbed_memory_ids: [directive ids], last_updated_at}
    memory_agent     {_id, agent_id, shard_name, extraction_prompt, is_active, content,
                      unabsorbed_memory_ids: [suggestion ids], facts: [fact ids],
                      fully_formed_memory_shard, last_updated_at}

The mapping (seed 002's table, constrained by DESIGN.md §3):

===========================  =================================================  ==========
legacy                       Alfred                                             partition
===========================  =================================================  ==========
fact                         fact (embedded with the given embedder)            owner's DM
directive                    user-scope reflection; absorbed into the imported  owner's DM
                             user blob if the legacy blob had absorbed it
episode                      session-scope reflection of session               owner's DM
                             ``legacy:<session id>``, plus that session's blob
                             (the episodes in order: what the old system showed)
memory_user blob             user-scope consolidated blob                       owner's DM
suggestion                   user-scope reflection, unabsorbed (consolidation   owner's DM
                             merges it into the owner's user blob)
memory_agent shard           **skipped**: see below
===========================  =================================================  ==========

Why the owner's DM: the legacy data has no circles and no notion of who else may see
a memory, so the only partition that cannot show a memory to someone who should not
see it is the private one of the single user it belongs to (DESIGN.md §3's third row).
A memory is owned by the single user in its ``related_users`` (a directive: by the
user whose blob lists it as unabsorbed). A memory related to several users, or to
none, has no safe partition and is skipped with a reason. Episodes were session-scoped
in the old system; their session is over, so their reflections are stored already
absorbed into the session's blob and never trigger a consolidation (no LLM cost), and
a ``legacy:`` session id is never current, so they are kept (export, audit, "forget")
rather than shown.

Suggestions: the old system's *agent*-scope notes, extracted from one conversation and
then shown to every user of the bot. Alfred has no agent partition (DESIGN.md §3 allows
shared memory only when an operator writes it: extracted shared memory leaks between
tenants), so a suggestion is never imported as shared. It is imported only where it
came from: a suggestion related to a single user came from that user's conversation,
so it becomes a user-scope reflection in that user's DM, seen by nobody else (fewer
people than the old system showed it to, never more). Unabsorbed, so the next
consolidation merges it into that user's blob. Related to several users or none, it
is skipped like any memory.

Why agent shards are skipped: a shard's blob (``memory_agent.content``) is merged from
every user's suggestions; it cannot be split back into who said what, so no private
partition can hold it. Shards are counted and listed by id in the report so an
operator can read them in the legacy collection and re-author what is worth keeping
(as operator-written memory). (A shard's ``facts`` are ``memory_sessions`` facts, and
its unabsorbed ids are suggestions: both are imported on their own rows, under the
rules above.)

Users: legacy user ids are the old system's ids; Alfred's are Telegram user ids. Each
legacy id is resolved by, in order: the ``user_map`` argument, the ``legacy_user_map``
collection (``{_id: legacy id, user_id: Alfred id}``), and a legacy id made only of
digits (already a Telegram id). Anything else is skipped as ``unmapped_user``: a memory
stored under an id no Telegram user has would be invisible and escape erasure.

Idempotent: every imported record's id is derived from its legacy id (and its legacy
owner), and every id written is also entered in ``legacy_import_ledger`` (ids and kinds
only, no content). A second run skips what it finds in either as ``already_imported``,
so a memory a user made Alfred forget since is not brought back from the legacy
collections. Facts are also deduplicated per partition by content hash, like any fact.
Dry run reads only: no write, no collection created, no embedding call (it may cost
money).

The legacy collections are not modified or dropped: they are outside Alfred's forget
cascade, so an operator should drop them (:func:`drop_legacy_collections`) once the
import is checked. Nothing here logs content: only ids and counts.
"""

from __future__ import annotations

from migrations.legacy_import.report import (
    LEGACY_AGENT,
    LEGACY_COLLECTIONS,
    LEGACY_LEDGER,
    LEGACY_SESSIONS,
    LEGACY_USER,
    LEGACY_USER_MAP,
    REASONS,
    ImportReport,
    KindReport,
    LegacyDryRunFinished,
    SkippedItem,
)
from migrations.legacy_import.run import import_legacy, run_legacy_import
from migrations.legacy_import.source import (
    UserResolver,
    drop_legacy_collections,
    legacy_collections_present,
    legacy_record_id,
    legacy_session_id,
    load_user_map,
)

__all__ = [
    "LEGACY_AGENT",
    "LEGACY_COLLECTIONS",
    "LEGACY_LEDGER",
    "LEGACY_SESSIONS",
    "LEGACY_USER",
    "LEGACY_USER_MAP",
    "REASONS",
    "ImportReport",
    "KindReport",
    "LegacyDryRunFinished",
    "SkippedItem",
    "UserResolver",
    "drop_legacy_collections",
    "import_legacy",
    "legacy_collections_present",
    "legacy_record_id",
    "legacy_session_id",
    "load_user_map",
    "run_legacy_import",
]
