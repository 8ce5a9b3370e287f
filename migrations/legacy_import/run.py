"""Running the legacy import: once over a database (:func:`import_legacy`, used by
migration 0004 and the tests) and from the CLI (:func:`run_legacy_import`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from memory.ports import Clock, Embedder
from migrations.legacy_import.importer import LegacyImporter
from migrations.legacy_import.report import ImportReport
from migrations.legacy_import.source import (
    UserResolver,
    legacy_collections_present,
    load_user_table,
)

log = logging.getLogger(__name__)

Document = dict[str, Any]
Db = AsyncDatabase[Document]


async def import_legacy(
    db: Db,
    *,
    dry_run: bool,
    embedder: Embedder | None,
    clock: Clock,
    user_map: Mapping[str, str] | None = None,
    agent_id: str | None = None,
) -> ImportReport:
    """Import the legacy collections of ``db`` into Alfred's collections of ``db``.

    ``dry_run`` only reads and reports what would happen (``embedder`` may then be
    None: nothing is embedded). ``user_map`` maps legacy user ids to Alfred user ids
    (see :class:`UserResolver`); ``agent_id`` limits the import to one legacy agent,
    for a legacy database that served several. Safe to run again: records already
    imported are skipped. Never logs content.
    """
    if not dry_run and embedder is None:
        raise ValueError("a real import needs an embedder (facts are embedded as they land)")
    report = ImportReport(dry_run=dry_run)
    report.legacy_collections = await legacy_collections_present(db)
    if not report.found:
        report.notes.append("no legacy collections; nothing to import")
        return report
    users = UserResolver(user_map, await load_user_table(db))
    importer = LegacyImporter(
        db,
        dry_run=dry_run,
        embedder=embedder,
        clock=clock,
        users=users,
        agent_id=agent_id,
        report=report,
    )
    await importer.import_user_blobs_and_directives()
    await importer.import_episodes()
    await importer.import_facts()
    await importer.import_suggestions()
    await importer.skip_agent_shards()
    await importer.skip_unknown_types()
    report.notes.append(
        "legacy collections were left as they are; they are outside the forget cascade: "
        "drop them once the import is checked (drop_legacy_collections)"
    )
    log.info(
        "legacy import %s: %d imported, %d skipped",
        "dry run" if dry_run else "applied",
        report.imported,
        report.skipped,
    )
    if not dry_run:
        _export_metrics(report)
    return report


def _export_metrics(report: ImportReport) -> None:
    try:
        from runtime.metrics import get_metrics

        metrics = get_metrics()
        for kind, counts in report.kinds.items():
            if counts.imported:
                metrics.legacy_imported.labels(kind=kind).inc(counts.imported)
    except Exception as exc:  # metrics never fail an import
        log.warning("exporting legacy import metrics failed (%s)", type(exc).__name__)


# --- the CLI-facing entry point --------------------------------------------------------


async def run_legacy_import(
    settings: Any,
    *,
    dry_run: bool,
    user_map: Mapping[str, str] | None = None,
    agent_id: str | None = None,
    emit: Callable[[str], None] = print,
    wait_seconds: float | None = None,
) -> ImportReport:
    """``alfred migrate --legacy-dry-run`` and ``alfred migrate --legacy-import``.

    Connects with ``settings`` (an :class:`runtime.settings.Settings`), runs
    :func:`import_legacy`, prints the report line by line through ``emit`` and closes.
    A dry run never loads the embedding model and never touches ``schema_migrations``,
    so migration 0004 stays pending. A real run requires migration 0001 (the unique
    indexes that make dedup and idempotency safe) to be applied, and holds the
    migration lock (waiting up to ``wait_seconds``), so it never runs alongside
    ``alfred migrate`` or a bot applying 0004 at start-up. It can run any number of
    times: what an earlier run (or migration 0004) imported is counted as
    ``already_imported``, never written twice; run it after mapping users that were
    skipped as ``unmapped_user``.
    """
    from integrations.mongo.migrator import LOCK_WAIT_SECONDS, MigrationLock, status
    from memory.clock import SystemClock
    from memory.errors import ConfigurationError
    from runtime.connections import open_mongo

    handle = await open_mongo(settings)
    try:
        embedder: Embedder | None = None
        if not dry_run:
            if 1 not in (await status(handle.db, ())).applied:
                raise ConfigurationError(
                    "the database has no schema yet", hint="run `alfred migrate` first"
                )
            from runtime.builders import build_embedder

            embedder = build_embedder(settings)
        async with contextlib.AsyncExitStack() as stack:
            if not dry_run:
                wait = LOCK_WAIT_SECONDS if wait_seconds is None else wait_seconds
                await stack.enter_async_context(MigrationLock(handle.db, wait_seconds=wait))
            report = await import_legacy(
                handle.db,
                dry_run=dry_run,
                embedder=embedder,
                clock=SystemClock(),
                user_map=user_map,
                agent_id=agent_id,
            )
        for line in report.lines():
            emit(line)
        return report
    finally:
        await handle.close()
