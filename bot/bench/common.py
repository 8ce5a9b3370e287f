"""Shared pieces of the benchmarks: a throwaway world, percentiles, progress, output."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from memory.ports import Clock
from memory.search.config import RetrievalConfig
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.container import build_services
from runtime.embedded import stop_before_removal
from runtime.settings import Settings

#: The options every benchmark takes.
DataDirOption = Annotated[Path | None, typer.Option("--data-dir", help="Keep the store here.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Last stdout line: one JSON object.")]

stderr = Console(stderr=True)
_COLUMNS = (
    TextColumn("[progress.description]{task.description}"),
    BarColumn(),
    MofNCompleteColumn(),
    TimeRemainingColumn(),
)


def sizes_or_exit(value: str, command: str) -> list[int]:
    """``--sizes`` ("1000,10000") as the fact counts to measure. Anything else stops the
    bench before it starts anything, with one line that says what was wrong (exit 2),
    rather than a traceback after a size's process has been spawned."""
    sizes: list[int] = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        try:
            size = int(part.replace("_", ""))
        except ValueError:
            size = 0
        if size < 1:
            stderr.print(
                f"alfred bench {command}: --sizes takes positive whole numbers separated by "
                f"commas (e.g. 1000,10000), not {part!r}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(2)
        sizes.append(size)
    if not sizes:
        stderr.print(
            f"alfred bench {command}: --sizes names no size (e.g. 1000,10000)", soft_wrap=True
        )
        raise typer.Exit(2)
    return sizes


def percentiles(samples_ms: Sequence[float], qs: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    if not samples_ms:
        return {f"p{q}": 0.0 for q in qs}
    values = np.asarray(samples_ms, dtype=np.float64)
    return {f"p{q}": round(float(np.percentile(values, q)), 3) for q in qs}


def progress() -> Progress:
    """A progress bar on stderr, so stdout stays machine-readable."""
    return Progress(*_COLUMNS, console=stderr, transient=True)


class TimedProgress(Progress):
    """A :func:`progress` bar for loops that time something: it has no refresh thread.

    rich redraws a bar from a thread ten times a second, and each redraw holds the
    interpreter lock for a while; a timed search that waits on its embedding thread
    paid for it in its tail. This bar is redrawn by :meth:`step`, between timings."""

    def __init__(self) -> None:
        super().__init__(*_COLUMNS, console=stderr, transient=True, auto_refresh=False)
        self._drawn_at = 0.0

    def step(self, task: TaskID, steps: int = 1) -> None:
        """Advance ``task``; redraw if a tenth of a second has passed (call it outside
        a timing)."""
        self.advance(task, steps)
        now = time.monotonic()
        if now - self._drawn_at >= 0.1:
            self._drawn_at = now
            self.refresh()


def emit(result: dict[str, Any], *, as_json: bool, summary: str) -> None:
    """The summary for people, or the JSON object as the last stdout line."""
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(summary + "\n")


@asynccontextmanager
async def bench_world(
    settings: Settings,
    *,
    data_dir: Path | None,
    clock: Clock | None = None,
    retrieval: RetrievalConfig | None = None,
    database: str = "alfred_bench",
) -> AsyncIterator[Services]:
    """Services on the embedded backend in a temporary folder (or ``data_dir``)."""
    folder = data_dir or Path(tempfile.mkdtemp(prefix="alfred-bench-"))
    world = settings.model_copy(
        update={"alfred_data_dir": folder, "mongodb_database": database, "mongodb_uri": None}
    )
    try:
        services = await build_services(world, clock=clock, retrieval=retrieval)
        try:
            await services.mongo.db.client.drop_database(database)
            await migrate(
                MigrationContext(
                    services.mongo.db,
                    services.capabilities.atlas_search,
                    services.embedder.dimensions,
                    log=lambda _: None,
                )
            )
            yield services
        finally:
            await services.aclose()
    finally:
        if data_dir is None:
            await asyncio.to_thread(stop_before_removal, folder)
            shutil.rmtree(folder, ignore_errors=True)
