"""``alfred replay``: the real bot driven by a script of events."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import run, settings


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
    from bot.replay.from_file import replay_file

    code = run(replay_file(settings(), script, data_dir=data_dir, as_text=pretty))
    raise typer.Exit(code)
