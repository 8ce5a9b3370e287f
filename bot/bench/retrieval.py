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
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
import typer

from bot.bench.common import (
    DataDirOption,
    JsonOption,
    TimedProgress,
    bench_world,
    emit,
    percentiles,
    progress,
    sizes_or_exit,
    stderr,
)
from bot.bench.machine import LoopControl, machine_line, machine_speed, with_control
from bot.bench.synthetic import distinct_questions
from bot.bench.synthetic import facts as synthetic_facts
from bot.bench.synthetic import questions as synthetic_questions
from integrations.mongo.turn_memo import reply_turn
from memory.clock import ManualClock
from memory.context import fact_block
from memory.heuristics import dynamic_limit
from memory.ids import content_hash, new_id
from memory.models import Category, Fact, Partition, Thread, ThreadKind, Viewer
from memory.privacy import is_visible
from memory.semantic import semantic_user_id
from runtime.settings import load_settings

MEMBERS = ["m1", "m2", "m3", "m4"]


def _partition_for(i: int, circle: str) -> Partition:
    if i % 3 == 0:
        return Partition.circle(circle)
    return Partition.member(circle, MEMBERS[i % len(MEMBERS)])


async def _store(
    s: Any, texts: list[str], partitions: list[Partition], label: str
) -> list[tuple[str, npt.NDArray[np.float32]]]:
    """Embed and store the facts; their ids and vectors, for the comparison."""
    now = s.clock.now()
    stored: list[tuple[str, npt.NDArray[np.float32]]] = []
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
            stored.extend((f.id, vectors[j]) for j, f in enumerate(batch))
            bar.advance(task, len(chunk))
    return stored


async def run_retrieval(
    n: int,
    queries: int,
    *,
    data_dir: Path | None,
    compare: str | None = None,
    others: int | None = None,
) -> dict[str, Any]:
    """Time the reply-path retrieval at ``n`` facts; with ``compare="mem0"`` also mem0 OSS
    and the floor, interleaved per query, with each one's recall of the exact top 10."""
    clock = ManualClock(datetime(2026, 6, 1, tzinfo=UTC))
    async with bench_world(
        load_settings(), data_dir=data_dir, clock=clock, database="alfred_bench_retrieval"
    ) as s:
        texts = synthetic_facts(n)
        parts = [_partition_for(i, "bench") for i in range(n)]
        mine = await _store(s, texts, parts, f"{n} facts")
        if others is None:
            # with --compare the viewer's memories are 10 of every 19 (10k among 19k)
            others = round(0.9 * n) if compare else max(500, n // 10)
        noise = synthetic_facts(others, seed=99)
        noise_parts = [
            Partition.dm(MEMBERS[i % 4]) if i % 2 else Partition.circle(f"other{i % 5}")
            for i in range(len(noise))
        ]
        theirs = await _store(s, noise, noise_parts, "other circles and DMs")
        viewer = Viewer(
            user_id="m1",
            thread=Thread(id="bench-group", kind=ThreadKind.GROUP, circle_id="bench"),
            circle_ids=frozenset({"bench"}),
        )
        started = time.perf_counter()
        await s.retriever.search(viewer, "warm up the index", limit=5)
        build_ms = (time.perf_counter() - started) * 1000
        machine = await machine_speed(s.mongo.db)
        control = LoopControl()
        head = {"facts": n, "backend": s.search_backend, "embedder": s.embedder.model_name}
        if compare is not None:
            world = _World(texts + noise, parts + noise_parts, mine + theirs)
            compared = await _compare(s, viewer, world, queries, data_dir, control)
            return {
                **head,
                "machine": with_control(machine, control),
                **compared,
                "others": others,
                "index_build_ms": round(build_ms, 1),
            }
        asked = synthetic_questions(queries)
        samples: list[float] = []
        retrieved = 0
        with TimedProgress() as bar:
            task = bar.add_task("queries", total=len(asked))
            for q in asked:
                t0 = time.perf_counter()
                result = await s.retriever.for_message(viewer, q)
                fact_block(result.facts, viewer, lambda uid: uid)
                samples.append((time.perf_counter() - t0) * 1000)
                retrieved += bool(result.facts)
                control.tick()  # the machine's own spread, between queries
                bar.step(task)
        after_change = await _after_changes(s, viewer)
        await s.retriever.drain()
        return {
            **head,
            "machine": with_control(machine, control),
            "queries": len(asked),
            "latency_ms": percentiles(samples),
            "mean_ms": round(float(np.mean(samples)), 3) if samples else 0.0,
            "index_build_ms": round(build_ms, 1),
            "queries_with_results": retrieved,
            "after_change_ms": after_change,
        }


#: Facts written one at a time after the timed queries, each followed by a search.
CHANGES = 5


async def _after_changes(s: Any, viewer: Viewer) -> dict[str, float]:
    """The first search after each of a few new facts in the viewer's circle: the cached
    index catches up with the change before it searches, which is what the reply after a
    remember, a forget or a formation pays (it was about 1 s at 10,000 facts, unseen by
    the timed queries above, which change nothing)."""
    samples: list[float] = []
    for i in range(CHANGES):
        day = i + 3
        await s.writer.add(
            f"The plumber comes on day {day} of the month", Partition.circle("bench")
        )
        t0 = time.perf_counter()
        await s.retriever.search(viewer, f"when does the plumber come on day {day}?", limit=10)
        samples.append((time.perf_counter() - t0) * 1000)
    return {"p50": round(float(np.median(samples)), 3), "max": round(max(samples), 3)}


@dataclass(frozen=True)
class _World:
    """Every stored fact: its text, partition, and (id, vector) as stored."""

    texts: list[str]
    partitions: list[Partition]
    stored: list[tuple[str, npt.NDArray[np.float32]]]


async def _compare(
    s: Any,
    viewer: Viewer,
    world: _World,
    queries: int,
    data_dir: Path | None,
    control: LoopControl,
) -> dict[str, Any]:
    """Alfred, mem0 and the floor on the same facts and the same distinct queries, in a
    rotating order per query so that machine noise falls on all three alike (and
    ``control`` timed once after each query's round)."""
    from bot.bench.mem0_compare import (
        TOP_K,
        VIEWER_SCOPE,
        Floor,
        Mem0Side,
        NetworkGuard,
        recall,
        threads,
    )

    seen = [is_visible(p, viewer) for p in world.partitions]
    visible = [item for item, ok in zip(world.stored, seen, strict=True) if ok]
    floor = Floor(s.embedder, [i for i, _ in visible], np.stack([v for _, v in visible]))
    known = {text: vector for text, (_, vector) in zip(world.texts, world.stored, strict=True)}
    items = [
        (fact_id, text, VIEWER_SCOPE if ok else semantic_user_id(p))
        for text, (fact_id, _), p, ok in zip(
            world.texts, world.stored, world.partitions, seen, strict=True
        )
    ]
    folder = Path(tempfile.mkdtemp(prefix="alfred-mem0-", dir=data_dir))
    guard = NetworkGuard()
    names = ("alfred", "mem0", "floor", "in_turn")
    samples: dict[str, list[float]] = {name: [] for name in (*names, "snapshot")}
    recalls: dict[str, list[float]] = {name: [] for name in (*names, "alfred_dense")}
    returned: dict[str, list[int]] = {name: [] for name in names}

    async def in_turn(q: str) -> tuple[list[str], float]:
        """Alfred's retrieval as a reply runs it: in a turn whose memory read (the
        partition versions, the unformed messages, with the history that needs it too)
        was made first, by the always-in-context step. Only the search is timed; the
        read's time is kept apart (``snapshot``)."""
        with reply_turn():
            started = time.perf_counter()
            await s.facts.visible_partitions(viewer)  # opens the turn's memory read
            samples["snapshot"].append((time.perf_counter() - started) * 1000)
            t0 = time.perf_counter()
            result = await s.retriever.for_message(viewer, q)
            fact_block(result.facts, viewer, lambda uid: uid)
            return [f.fact.id for f in result.facts], (time.perf_counter() - t0) * 1000

    try:
        with guard.active():
            side = await asyncio.to_thread(Mem0Side.create, s.embedder, folder, known)
            await asyncio.to_thread(side.load, items)
            asked = distinct_questions(queries)
            # The references first: each query's exact top 10 and what Alfred's dense
            # leg alone finds. Between two timings there is then only the three systems'
            # own work: computed there, the scan of a 30 MB double-precision copy pushed
            # the searches' data out of the caches before every timing.
            prepared = await s.retriever.backend.prepare(viewer)
            exacts: list[list[str]] = []
            for q in asked:
                vector = s.embedder.embed_sync([q])[0]
                exacts.append(floor.exact(vector))
                dense = await prepared.dense(vector, TOP_K)
                recalls["alfred_dense"].append(recall(list(dense), exacts[-1], TOP_K))
            with TimedProgress() as bar:
                task = bar.add_task("queries (alfred, mem0, floor)", total=len(asked))
                for turn, q in enumerate(asked):
                    exact = exacts[turn]
                    found: dict[str, list[str]] = {}
                    for name in names[turn % 4 :] + names[: turn % 4]:
                        if name == "in_turn":  # the same query: nothing caches its vector
                            found[name], elapsed = await in_turn(q)
                            samples[name].append(elapsed)
                            continue
                        t0 = time.perf_counter()
                        if name == "alfred":
                            result = await s.retriever.for_message(viewer, q)
                            fact_block(result.facts, viewer, lambda uid: uid)
                            ids = [f.fact.id for f in result.facts]
                        elif name == "mem0":
                            ids = side.search(q)
                        else:
                            ids = floor.search(q)
                        samples[name].append((time.perf_counter() - t0) * 1000)
                        found[name] = ids
                    # Alfred answers with as many as the reply path asks for (5-15)
                    asked_k = min(dynamic_limit(q), TOP_K)
                    recalls["alfred"].append(recall(found["alfred"], exact, asked_k))
                    recalls["mem0"].append(recall(found["mem0"], exact, TOP_K))
                    recalls["floor"].append(recall(found["floor"], exact, TOP_K))
                    recalls["in_turn"].append(recall(found["in_turn"], exact, asked_k))
                    for name in names:
                        returned[name].append(len(found[name]))
                    control.tick()
                    bar.step(task)
            await s.retriever.drain()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    def mean(values: list[float] | list[int]) -> float:
        return round(float(np.mean(values)), 4) if values else 0.0

    return {
        "compare": "mem0",
        "threads": threads(),
        "queries": len(asked),
        "latency_ms": percentiles(samples["alfred"]),
        "mean_ms": mean(samples["alfred"]),
        "queries_with_results": sum(1 for count in returned["alfred"] if count),
        "recall_vs_exact": mean(recalls["alfred"]),
        "dense_recall_vs_exact": mean(recalls["alfred_dense"]),
        "returned_mean": mean(returned["alfred"]),
        "mem0": {
            "store": side.store,
            "latency_ms": percentiles(samples["mem0"]),
            "mean_ms": mean(samples["mem0"]),
            "recall_vs_exact": mean(recalls["mem0"]),
            "returned": {"mean": mean(returned["mem0"]), "min": min(returned["mem0"], default=0)},
            "memories": side.count,
            "viewer_memories": len(visible),
            "load_s": round(side.load_s, 2),
            "add_ms": round(side.add_ms, 3),
            "save_ms": round(side.save_ms, 1),
            "query_embeddings": side.embedding.computed,
            "network_attempts": len(guard.attempts),
        },
        "floor": {
            "latency_ms": percentiles(samples["floor"]),
            "mean_ms": mean(samples["floor"]),
            "recall_vs_exact": mean(recalls["floor"]),
            "vectors": len(visible),
        },
        "in_turn": {
            "latency_ms": percentiles(samples["in_turn"]),
            "mean_ms": mean(samples["in_turn"]),
            "recall_vs_exact": mean(recalls["in_turn"]),
            "snapshot_ms": percentiles(samples["snapshot"]),
        },
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
    if "mem0" not in points[0]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for key in ("p50", "p95", "p99"):
            ax.plot(xs, [p["latency_ms"][key] for p in points], marker="o", label=key)
        ax.axhline(50, color="grey", linestyle="--", linewidth=1, label="50 ms target")
        ax.set_xscale("log")
        ax.set_xlabel("facts in the circle")
        ax.set_ylabel("retrieval latency (ms)")
        ax.set_title("Alfred retrieval latency (embedded backend, local embedder)")
        ax.legend()
    else:
        fig, (ax, rx) = plt.subplots(1, 2, figsize=(11, 4))
        systems: dict[str, list[dict[str, Any]]] = {
            "Alfred": points,
            f"mem0 ({points[0]['mem0']['store']})": [p["mem0"] for p in points],
            "floor": [p["floor"] for p in points],
        }
        for (label, parts), colour in zip(systems.items(), ("C0", "C1", "C2"), strict=True):
            for key, style in (("p50", ":"), ("p95", "-")):
                values = [part["latency_ms"][key] for part in parts]
                ax.plot(xs, values, style, color=colour, marker="o", label=f"{label} {key}")
            rx.plot(xs, [part["recall_vs_exact"] for part in parts], color=colour,
                    marker="o", label=label)  # fmt: skip
        rx.plot(xs, [p["dense_recall_vs_exact"] for p in points], "--", color="C0",
                marker="x", label="Alfred dense leg")  # fmt: skip
        for axis in (ax, rx):
            axis.set_xscale("log")
            axis.set_xlabel("the viewer's facts (others' alongside: see --others)")
        ax.set_ylabel("latency per query (ms)")
        ax.set_title("Retrieval latency, interleaved in one run")
        rx.set_ylabel("recall of the exact scoped top 10")
        rx.set_ylim(0, 1.05)
        rx.set_title("What each returns")
        ax.legend(fontsize="small")
        rx.legend(fontsize="small")
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
        compare: Annotated[
            str | None,
            typer.Option(
                "--compare",
                help="Also time mem0 OSS (faiss) and the floor in the same run: 'mem0'.",
            ),
        ] = None,
        others: Annotated[
            int | None,
            typer.Option(
                "--others",
                min=0,
                help="Facts of other circles and DMs (default: 0.9 x --facts with --compare).",
            ),
        ] = None,
        data_dir: DataDirOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Latency of the whole reply-path retrieval at N facts (p50/p95/p99)."""
        if compare not in (None, "mem0"):
            stderr.print("alfred bench retrieval: --compare knows only 'mem0'")
            raise typer.Exit(2)
        options: dict[str, Any] = {"compare": compare, "others": others}
        if plot is None:
            result = asyncio.run(run_retrieval(facts, queries, data_dir=data_dir, **options))
        else:
            points = [  # every size is checked before the first one runs
                asyncio.run(run_retrieval(n, queries, data_dir=None, **options))
                for n in sizes_or_exit(sizes, "retrieval")
            ]
            _plot(points, plot)
            result = {**points[-1], "series": points, "plot": str(plot)}
        lat = result["latency_ms"]
        summary = (
            f"retrieval at {result['facts']} facts ({result['backend']}, "
            f"{result['queries']} queries): p50 {lat['p50']} ms, p95 {lat['p95']} ms, "
            f"p99 {lat['p99']} ms; index build {result['index_build_ms']} ms"
        )
        if "after_change_ms" in result:
            after = result["after_change_ms"]
            summary += (
                f"\n  first search after a new fact: p50 {after['p50']} ms, max {after['max']} ms"
                f" ({CHANGES} changes)"
            )
        if "mem0" in result:
            m, f = result["mem0"], result["floor"]
            summary += (
                f"\n  recall of the exact scoped top 10: Alfred {result['recall_vs_exact']}"
                f" (dense leg {result['dense_recall_vs_exact']})"
                f"\n  mem0 ({m['store']}, {m['viewer_memories']} of {m['memories']} memories"
                f" the viewer's): p50 {m['latency_ms']['p50']} ms, p95 {m['latency_ms']['p95']}"
                f" ms, p99 {m['latency_ms']['p99']} ms; recall {m['recall_vs_exact']}, returned"
                f" {m['returned']['mean']} of 10 on average; load {m['load_s']} s"
                f"\n  floor (embedding + one scan of {f['vectors']} vectors): p50"
                f" {f['latency_ms']['p50']} ms, p95 {f['latency_ms']['p95']} ms, p99"
                f" {f['latency_ms']['p99']} ms"
            )
            t = result["in_turn"]
            summary += (
                f"\n  Alfred in a reply turn (after the turn's memory read, p50"
                f" {t['snapshot_ms']['p50']} ms, not counted): p50"
                f" {t['latency_ms']['p50']} ms, p95 {t['latency_ms']['p95']} ms, p99"
                f" {t['latency_ms']['p99']} ms"
            )
        summary += "\n  " + machine_line(result["machine"])
        emit(result, as_json=as_json, summary=summary)
