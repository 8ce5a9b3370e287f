"""``alfred doctor``: how each component runs, and whether it answers."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from bot.cli.common import err, run, settings


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Say how each component runs (embedded, configured or off) and check that it answers."""
    from bot.cli.doctor_checks import as_json as doctor_json
    from bot.cli.doctor_checks import run_doctor

    reports = run(run_doctor(settings()))
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
