"""``alfred bench retrieval``: the whole reply-path retrieval, timed, at N facts.

One circle holds N synthetic facts (circle-level and its members' own), among other
circles and DMs holding more; a member asks Q questions in the circle's group. Each
timing covers what a reply waits for: the heuristic and dynamic limit, the query
embedding, the partition check, both legs, fusion, the visibility re-check, blending
and the context block. The scope index is built before timing starts (its build time is
reported on its own).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from bot.bench.common import (
    DataDirOption,
    JsonOption,
    bench_world,
    emit,
    percentiles,
    progress,
    stderr,
)
from bot.bench.synthetic import facts as synthetic_facts
from bot.bench.synthetic import questions as synthetic_questions
from memory.clock import ManualClock
from memory.context import fact_block
from memory.ids import content_hash, new_id
from memory.models import Category, Fact, Partition, Thread, ThreadKind, Viewer
from runtime.settings import load_settings

MEMBERS = ["m1", "m2", "m3", "m4"]


def _partition_for(i: int, circle: str) -> Partition:
    if i % 3 == 0:
        return Partition.circle(circle)
    return Partition.member(circle, MEMBERS[i % len(MEMBERS)])


async def _store(s: Any, texts: list[str], partitions: list[Partition], label: str) -> None:
    now = s.clock.now()
    with progress() as bar:
        task = bar.add_task(label, total=len(texts))
        for start in range(0, len(texts), 256):
            chunk = texts[start : start + 256]
            vectors = await s.embedder.embed(chunk)
            batch = [
                Fact(
                    id=new_id(),
                    content=text,
                    hash=content_hash(text),
                    category=Category.FACT,
                    importance=(start + j) % 10 + 1,
                    partition=partitions[start + j],
                    embedding=[float(x) for x in vectors[j]],
                    embedding_model=s.embedder.model_name,
                    embedding_dims=s.embedder.dimensions,
                    valid_at=now,
                    created_at=now,
                    updated_at=now,
                )
                for j, text in enumerate(chunk)
            ]
            await s.facts.add_bulk(batch)
            bar.advance(task, len(chunk))


async def run_retrieval(n: int, queries: int, *, data_dir: Path | None) -> dict[str, Any]:
    clock = ManualClock(datetime(2026, 6, 1, tzinfo=UTC))
    async with bench_world(
        load_settings(), data_dir=data_dir, clock=clock, database="alfred_bench_retrieval"
    ) as s:
        texts = synthetic_facts(n)
        await _store(s, texts, [_partition_for(i, "bench") for i in range(n)], f"{n} facts")
        noise = synthetic_facts(max(500, n // 10), seed=99)
        noise_parts = [
            Partition.dm(MEMBERS[i % 4]) if i % 2 else Partition.circle(f"other{i % 5}")
            for i in range(len(noise))
        ]
        await _store(s, noise, noise_parts, "other circles and DMs")
        viewer = Viewer(
            user_id="m1",
            thread=Thread(id="bench-group", kind=ThreadKind.GROUP, circle_id="bench"),
            circle_ids=frozenset({"bench"}),
        )
        started = time.perf_counter()
        await s.retriever.search(viewer, "warm up the index", limit=5)
        build_ms = (time.perf_counter() - started) * 1000
        asked = synthetic_questions(queries)
        samples: list[float] = []
        retrieved = 0
        with progress() as bar:
            task = bar.add_task("queries", total=len(asked))
            for q in asked:
                t0 = time.perf_counter()
                result = await s.retriever.for_message(viewer, q)
                fact_block(result.facts, viewer, lambda uid: uid)
                samples.append((time.perf_counter() - t0) * 1000)
                retrieved += bool(result.facts)
                bar.advance(task)
        await s.retriever.drain()
        return {
            "facts": n,
            "queries": len(asked),
            "backend": s.search_backend,
            "embedder": s.embedder.model_name,
            "latency_ms": percentiles(samples),
            "mean_ms": round(float(np.mean(samples)), 3) if samples else 0.0,
            "index_build_ms": round(build_ms, 1),
            "queries_with_results": retrieved,
        }


def _plot(points: list[dict[str, Any]], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        stderr.print("alfred bench retrieval: --plot needs matplotlib (pip install matplotlib)")
        raise typer.Exit(2) from None
    xs = [p["facts"] for p in points]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key in ("p50", "p95", "p99"):
        ax.plot(xs, [p["latency_ms"][key] for p in points], marker="o", label=key)
    ax.axhline(50, color="grey", linestyle="--", linewidth=1, label="50 ms target")
    ax.set_xscale("log")
    ax.set_xlabel("facts in the circle")
    ax.set_ylabel("retrieval latency (ms)")
    ax.set_title("Alfred retrieval latency (embedded backend, local embedder)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def register(app: typer.Typer) -> None:
    @app.command("retrieval")
    def retrieval(
        facts: Annotated[int, typer.Option("--facts", min=1, help="Facts in the circle.")] = 10_000,
        queries: Annotated[int, typer.Option("--queries", min=1, help="Questions to time.")] = 200,
        plot: Annotated[
            Path | None, typer.Option("--plot", help="Also measure --sizes and write a PNG here.")
        ] = None,
        sizes: Annotated[str, typer.Option(help="Sizes for --plot.")] = "1000,10000,100000",
        data_dir: DataDirOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Latency of the whole reply-path retrieval at N facts (p50/p95/p99)."""
        if plot is None:
            result = asyncio.run(run_retrieval(facts, queries, data_dir=data_dir))
        else:
            points = [
                asyncio.run(run_retrieval(int(n), queries, data_dir=None))
                for n in sizes.split(",")
                if n.strip()
            ]
            _plot(points, plot)
            result = {**points[-1], "series": points, "plot": str(plot)}
        lat = result["latency_ms"]
        summary = (
            f"retrieval at {result['facts']} facts ({result['backend']}, "
            f"{result['queries']} queries): p50 {lat['p50']} ms, p95 {lat['p95']} ms, "
            f"p99 {lat['p99']} ms; index build {result['index_build_ms']} ms"
        )
        emit(result, as_json=as_json, summary=summary)
