"""The ``alfred`` command line.

Every command reads settings once, runs, and turns an :class:`AlfredError` into one
line on stderr and a non-zero exit, never a bare traceback.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from memory.errors import AlfredError
from runtime.settings import Settings, load_settings

T = TypeVar("T")

app = typer.Typer(
    name="alfred",
    help="Alfred: a Telegram assistant that remembers, with per-chat privacy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# soft_wrap: an error stays on one line whatever the terminal width (or none, in a pipe).
err = Console(stderr=True, soft_wrap=True)


def _settings() -> Settings:
    try:
        return load_settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]).upper()
        message = str(first["msg"]).removeprefix("Value error, ")
        err.print(
            f"alfred: invalid setting {field}: {message} (see .env.example)",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(2) from None
    except AlfredError as exc:
        err.print(f"alfred: {exc.one_line()}", markup=False, highlight=False)
        raise typer.Exit(2) from None


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine; print domain errors as one line and exit 1."""
    try:
        return asyncio.run(coro)
    except AlfredError as exc:
        err.print(f"alfred: {exc.one_line()}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("alfred: interrupted")
        raise typer.Exit(130) from None


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Say how each component runs (embedded, configured or off) and check that it answers."""
    from bot.doctor import as_json as doctor_json
    from bot.doctor import run_doctor

    settings = _settings()
    reports = _run(run_doctor(settings))
    if as_json:
        print(json.dumps(doctor_json(reports)))
    else:
        table = Table(title="Alfred doctor", show_lines=False)
        table.add_column("component")
        table.add_column("mode")
        table.add_column("ok")
        table.add_column("detail", overflow="fold")
        for name, report in reports.items():
            mark = "[green]yes[/green]" if report.ok else "[red]NO[/red]"
            table.add_row(name, report.mode, mark, report.detail)
        Console().print(table)
    failed = [name for name, report in reports.items() if not report.ok]
    if failed:
        if not as_json:
            err.print(f"alfred: not answering: {', '.join(failed)}")
        raise typer.Exit(1)


@app.command()
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
        _usage_error(f"{' and '.join(modes)} cannot be used together")
    if show_status and (legacy_user_map is not None or legacy_agent is not None):
        _usage_error("--status cannot be used with --legacy-user-map or --legacy-agent")
    settings = _settings()
    configure_logging(settings.log_level)
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

        _run(
            run_legacy_import(
                settings,
                dry_run=legacy_dry_run,
                user_map=user_map,
                agent_id=legacy_agent,
                wait_seconds=wait,
            )
        )
        return
    from bot.migrate_command import run_migrate

    _run(
        run_migrate(
            settings,
            show_status=show_status,
            to=to,
            legacy_user_map=user_map,
            legacy_agent_id=legacy_agent,
            wait_seconds=wait,
        )
    )


def _usage_error(message: str) -> NoReturn:
    """A wrong combination of options: one line on stderr, exit 2 (as for a bad option)."""
    err.print(f"alfred: {message}", markup=False, highlight=False)
    raise typer.Exit(2)


@app.command()
def replay(
    script: Annotated[Path, typer.Argument(help="A JSON-lines scenario (see REPLAY.md).")],
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Keep the store here (default: a temporary folder)."),
    ] = None,
    pretty: Annotated[
        bool, typer.Option("--pretty", help="Readable text instead of JSON.")
    ] = False,
) -> None:
    """Drive the real bot from a script of events and print what happened."""
    from bot.replay_command import replay_file

    code = _run(replay_file(_settings(), script, data_dir=data_dir, as_text=pretty))
    raise typer.Exit(code)


@app.command()
def demo(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the demo's store here.")
    ] = None,
) -> None:
    """Replay the bundled scenario (a couple, a group, two DMs) and print it readably."""
    from bot.demo import run_demo

    _run(run_demo(_settings(), data_dir=data_dir))


@app.command()
def chat(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the store here (default: temporary).")
    ] = None,
) -> None:
    """Talk to Alfred in the terminal as any user in any thread (type /help inside)."""
    from bot.console import run_console

    _run(run_console(_settings(), data_dir=data_dir))


@app.command()
def run() -> None:
    """Run the Telegram bot (long polling, or a webhook server when WEBHOOK_URL is set)."""
    from bot.run import run_bot
    from runtime.logs import configure_logging

    settings = _settings()
    configure_logging(settings.log_level)
    _run(run_bot(settings))


def _register_subcommands() -> None:
    from bot.bench import bench_app

    app.add_typer(bench_app, name="bench")
    from bot.admin_command import admin_app

    app.add_typer(admin_app, name="admin")


_register_subcommands()


def main() -> None:
    """Entry point of the ``alfred`` console script."""
    try:
        app()
    except AlfredError as exc:  # raised outside _run, e.g. while building services
        err.print(f"alfred: {exc.one_line()}", markup=False, highlight=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
