"""Shared pieces of the benchmarks: a throwaway world, percentiles, progress, output."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memory.ports import Clock
from memory.retrieval import RetrievalConfig
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.container import build_services
from runtime.embedded import stop_before_removal
from runtime.settings import Settings

#: The options every benchmark takes.
DataDirOption = Annotated[Path | None, typer.Option("--data-dir", help="Keep the store here.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Last stdout line: one JSON object.")]

stderr = Console(stderr=True)


def percentiles(samples_ms: Sequence[float], qs: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    if not samples_ms:
        return {f"p{q}": 0.0 for q in qs}
    values = np.asarray(samples_ms, dtype=np.float64)
    return {f"p{q}": round(float(np.percentile(values, q)), 3) for q in qs}


def progress() -> Progress:
    """A progress bar on stderr, so stdout stays machine-readable."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )


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
