"""``alfred migrate``: apply or list the versioned migrations, reconcile the Atlas search
indexes, and (on demand) import the previous memory system."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console

from integrations.mongo.capabilities import detect_capabilities
from integrations.mongo.migrator import LOCK_WAIT_SECONDS, NO_ATLAS_SEARCH
from integrations.mongo.search_indexes import check_search_indexes
from memory.clock import SystemClock
from memory.constants import FACTS
from migrations import MigrationContext, migrate, status
from runtime.builders import build_embedder
from runtime.connections import open_mongo
from runtime.settings import Settings


async def run_migrate(
    settings: Settings,
    *,
    show_status: bool,
    to: int | None,
    legacy_user_map: Mapping[str, str] | None = None,
    legacy_agent_id: str | None = None,
    wait_seconds: float = LOCK_WAIT_SECONDS,
) -> None:
    # soft_wrap: one line per message, even in a pipe; markup=False: "[applied …]" is text.
    console = Console(soft_wrap=True)
    handle = await open_mongo(settings)
    try:
        if show_status:
            st = await status(handle.db)
            for m in st.available:
                when = st.applied.get(m.version)
                state = f"applied {when:%Y-%m-%d %H:%M}" if when else "pending"
                console.print(
                    f"{m.version:04d}  {m.name}  [{state}]", markup=False, highlight=False
                )
            caps = await detect_capabilities(handle.db)
            if not caps.atlas_search:
                console.print(NO_ATLAS_SEARCH, markup=False, highlight=False)
            elif 1 not in st.applied:
                console.print("search indexes: none yet (run `alfred migrate`)", highlight=False)
            else:
                dims = build_embedder(settings).dimensions
                for check in await check_search_indexes(handle.db[FACTS], dims):
                    console.print(check.line(), markup=False, highlight=False)
            console.print(f"current version: {st.current}", highlight=False)
            return
        caps = await detect_capabilities(handle.db)
        embedder = build_embedder(settings)
        ctx = MigrationContext(
            db=handle.db,
            atlas_search=caps.atlas_search,
            embedding_dims=embedder.dimensions,
            log=lambda line: console.print(line, markup=False, highlight=False),
            embedder=embedder,
            clock=SystemClock(),
            legacy_user_map=legacy_user_map,
            legacy_agent_id=legacy_agent_id,
        )
        applied = await migrate(ctx, to=to, wait_seconds=wait_seconds)
        if applied:
            console.print(f"applied {len(applied)} migration(s)", highlight=False)
        elif to is None:
            console.print("nothing to apply: the database is up to date", highlight=False)
        else:
            # Migrations only go forward: a lower target than the current version is not
            # a downgrade.
            current = (await status(handle.db)).current
            console.print(
                f"nothing to apply up to version {to}: the database is at version {current}",
                highlight=False,
            )
    finally:
        await handle.close()
