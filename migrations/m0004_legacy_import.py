"""Import the previous generation of the memory system (seed 002), if it is there.

The bot applies pending migrations at start-up, so this may run with no user map and
no dry run first: it imports what it can (users mapped by the ``legacy_user_map``
collection or by a numeric legacy id) and reports, by id and reason, what it skipped.
Nothing skipped is lost: the legacy collections are left as they are, and
``alfred migrate --legacy-import`` (after mapping users) imports the rest at any time,
skipping what is already imported.

The mapping, the partition rule (every legacy memory goes to its single owner's DM:
private is the only safe choice without circles) and what is skipped and why are in
:mod:`migrations.legacy_import`. Without legacy collections this is a no-op that
says so. Idempotent: imported records have ids derived from legacy ids.

Optional attributes of the migration context, read with ``getattr`` so the migration
works with the plain :class:`~integrations.mongo.migrator.MigrationContext` too:

* ``embedder``: embeds imported facts. When absent and there is something to import,
  the configured embedder is built from the settings (and its dimension checked
  against ``ctx.embedding_dims``).
* ``clock``: defaults to the system clock.
* ``legacy_dry_run``: report only. The migration then raises
  :class:`~migrations.legacy_import.LegacyDryRunFinished` so the migrator does *not*
  record it as applied. (``alfred migrate --legacy-dry-run`` and ``--legacy-import``
  call :func:`migrations.legacy_import.run_legacy_import` instead, which never
  records a migration; this flag exists for callers that go through the migrator.)
* ``legacy_user_map``: legacy user id → Telegram user id (see ``legacy_user_map`` too).
* ``legacy_agent_id``: import one legacy agent only.

Numbered 0004, leaving 0003 to a change made in parallel; the migrator only needs the
numbers to be distinct and applies them in order.
"""

from __future__ import annotations

from typing import Any

from integrations.mongo.migrator import MigrationContext
from memory.errors import ConfigurationError
from memory.ports import Clock, Embedder
from migrations.legacy_import import (
    LegacyDryRunFinished,
    import_legacy,
    legacy_collections_present,
)

VERSION = 4
NAME = "import the previous memory system (memory_sessions, memory_user, memory_agent)"


def _embedder(ctx: MigrationContext) -> Embedder:
    given: Embedder | None = getattr(ctx, "embedder", None)
    if given is None:
        from runtime.builders import build_embedder
        from runtime.settings import load_settings

        given = build_embedder(load_settings())
        ctx.note(f"legacy import: embedding with the configured model {given.model_name}")
    if given.dimensions != ctx.embedding_dims:
        raise ConfigurationError(
            f"the embedder has {given.dimensions} dimensions, the database expects "
            f"{ctx.embedding_dims}",
            hint="import with the embedder the deployment is configured with",
        )
    return given


async def up(ctx: MigrationContext) -> None:
    if not await legacy_collections_present(ctx.db):
        ctx.note(
            "legacy import: no legacy collections (memory_sessions, memory_user, "
            "memory_agent); nothing to import"
        )
        return
    dry_run = bool(getattr(ctx, "legacy_dry_run", False))
    clock: Clock | None = getattr(ctx, "clock", None)
    if clock is None:
        from memory.clock import SystemClock

        clock = SystemClock()
    user_map: dict[str, Any] | None = getattr(ctx, "legacy_user_map", None)
    report = await import_legacy(
        ctx.db,
        dry_run=dry_run,
        embedder=None if dry_run else _embedder(ctx),
        clock=clock,
        user_map=user_map,
        agent_id=getattr(ctx, "legacy_agent_id", None),
    )
    for line in report.lines():
        ctx.note(line)
    if not dry_run and report.skipped:
        ctx.note(
            f"legacy import: {report.skipped} item(s) skipped (reasons above); what can be "
            "fixed (an unmapped user) is imported by `alfred migrate --legacy-import` once "
            "fixed, without duplicating what is already imported"
        )
    if dry_run:
        raise LegacyDryRunFinished(report)
