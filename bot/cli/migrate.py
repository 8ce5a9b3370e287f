"""``alfred migrate``: the versioned migrations, the Atlas search indexes, and the import
of the previous memory system."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import err, run, settings, usage_error


def migrate(
    show_status: Annotated[
        bool,
        typer.Option(
            "--status", help="List migrations, whether each is applied, and the search indexes."
        ),
    ] = False,
    to: Annotated[
        int | None,
        typer.Option("--to", help="Apply migrations up to this version only (never downgrades)."),
    ] = None,
    legacy_import: Annotated[
        bool,
        typer.Option(
            "--legacy-import",
            help="Import the previous memory system now (again after mapping skipped users; "
            "what was imported before is not duplicated).",
        ),
    ] = False,
    legacy_dry_run: Annotated[
        bool,
        typer.Option(
            "--legacy-dry-run",
            help="Report what the import of the previous memory system would do; write nothing.",
        ),
    ] = False,
    legacy_user_map: Annotated[
        Path | None,
        typer.Option(
            "--legacy-user-map",
            help="JSON object mapping legacy user ids to Telegram user ids (for the import).",
        ),
    ] = None,
    legacy_agent: Annotated[
        str | None, typer.Option("--legacy-agent", help="Only import this legacy agent's data.")
    ] = None,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            min=0,
            help="Seconds to wait for another run holding the migration lock.",
        ),
    ] = 120.0,
) -> None:
    """Apply the versioned database migrations and reconcile the Atlas search indexes
    (idempotent, safe while bots run); or import the previous memory system."""
    from runtime.logs import configure_logging

    given = {
        "--status": show_status,
        "--to": to is not None,
        "--legacy-import": legacy_import,
        "--legacy-dry-run": legacy_dry_run,
    }
    # --legacy-dry-run is the dry run of --legacy-import: together they are one mode.
    modes = [name for name, on in given.items() if on and name != "--legacy-import"]
    if legacy_import and not legacy_dry_run:
        modes.append("--legacy-import")
    if len(modes) > 1:
        usage_error(f"{' and '.join(modes)} cannot be used together")
    if show_status and (legacy_user_map is not None or legacy_agent is not None):
        usage_error("--status cannot be used with --legacy-user-map or --legacy-agent")
    loaded = settings()
    configure_logging(loaded.log_level)
    user_map = None
    if legacy_user_map is not None:
        from migrations.legacy_import import load_user_map

        try:
            user_map = load_user_map(legacy_user_map)
        except (OSError, ValueError) as exc:
            err.print(f"alfred: cannot read {legacy_user_map}: {exc}", markup=False)
            raise typer.Exit(2) from None
    if legacy_import or legacy_dry_run:
        from migrations.legacy_import import run_legacy_import

        run(
            run_legacy_import(
                loaded,
                dry_run=legacy_dry_run,
                user_map=user_map,
                agent_id=legacy_agent,
                wait_seconds=wait,
            )
        )
        return
    from bot.cli.migrate_run import run_migrate

    run(
        run_migrate(
            loaded,
            show_status=show_status,
            to=to,
            legacy_user_map=user_map,
            legacy_agent_id=legacy_agent,
            wait_seconds=wait,
        )
    )
