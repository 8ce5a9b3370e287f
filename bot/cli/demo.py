"""``alfred demo``: the bundled scenario, replayed and printed readably."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import run, settings


def demo(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the demo's store here.")
    ] = None,
) -> None:
    """Replay the bundled scenario (a couple, a group, two DMs) and print it readably."""
    from bot.replay.demo import run_demo

    run(run_demo(settings(), data_dir=data_dir))
