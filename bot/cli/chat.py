"""``alfred chat``: talk to Alfred in the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import run, settings


def chat(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the store here (default: temporary).")
    ] = None,
) -> None:
    """Talk to Alfred in the terminal as any user in any thread (type /help inside)."""
    from bot.replay.console import run_console

    run(run_console(settings(), data_dir=data_dir))
