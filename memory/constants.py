"""Named constants of the memory domain, each with the reason for its value."""

from __future__ import annotations

from typing import Final

# Collection names: one place, so adapters, migrations and tests agree.
CIRCLES: Final = "circles"
USERS: Final = "users"
THREADS: Final = "threads"
MESSAGES: Final = "messages"
FACTS: Final = "memory_facts"
REFLECTIONS: Final = "memory_reflections"
CONSOLIDATED: Final = "memory_consolidated"
CLARIFICATIONS: Final = "clarifications"
SCHEMA_MIGRATIONS: Final = "schema_migrations"
#: One document per partition holding facts, with a version bumped after every change.
PARTITIONS: Final = "memory_partitions"
#: Recall counts waiting to be added to their facts: fact ids and numbers, no content.
RECALLS: Final = "memory_recalls"

#: Every collection that holds a memory artefact and therefore a partition.
PARTITIONED_COLLECTIONS: Final = (FACTS, REFLECTIONS, CONSOLIDATED, CLARIFICATIONS, MESSAGES)

# Sizes from DESIGN.md §2: facts are atomic, reflections short.
FACT_MAX_WORDS: Final = 30
REFLECTION_MAX_WORDS: Final = 35

# Consolidation thresholds and word limits per scope (seed 002 §7.2).
CONSOLIDATE_AFTER: Final = {"circle": 8, "user": 4, "session": 4}
CONSOLIDATED_WORD_LIMIT: Final = {"circle": 1000, "user": 400, "session": 400}

# Message weights in formation (seed 002): the user's words count most.
MESSAGE_WEIGHTS: Final = {"user": 1.0, "tool": 0.5, "agent": 0.2}

# Formation triggers (DESIGN.md §5).
FORMATION_EVERY_MESSAGES: Final = 45
FORMATION_EVERY_TOKENS: Final = 1000
FORMATION_MIN_MESSAGES: Final = 4
SESSION_COLD_AFTER_SECONDS: Final = 600
#: Nothing waits forever: a thread whose oldest unformed user message is this old is
#: formed however few messages it has.
FORMATION_QUIET_AFTER_SECONDS: Final = 6 * 3600

# Similarity at which an existing fact is a candidate for UPDATE/DELETE/NONE (seed 002).
UPDATE_CANDIDATE_SIMILARITY: Final = 0.7
#: A question Alfred asked is answered by the person's next message in the same thread
#: within this many seconds, or by their Telegram reply to it within the TTL; then it
#: expires (issue 14).
CLARIFICATION_NEXT_MESSAGE_SECONDS: Final = 30 * 60
CLARIFICATION_TTL_DAYS: Final = 7
#: A person who changes what they said within this many seconds corrected themselves:
#: the later statement replaces the earlier one and nobody is asked (issue 14).
SELF_CORRECTION_SECONDS: Final = 60

# Retrieval (DESIGN.md §6): reply-path budget and the dynamic fact limit.
RETRIEVAL_BUDGET_MS: Final = 500
RETRIEVAL_MIN_LIMIT: Final = 5
RETRIEVAL_MAX_LIMIT: Final = 15
RRF_K: Final = 60

#: Formation jobs that may fail on one batch (the model's answer invalid each time)
#: before its messages are set aside for an operator's ``retry-formation``.
FORMATION_MAX_FAILURES: Final = 3
