"""``alfred bench formation``: formation throughput on the embedded backend.

Runs N formations over synthetic household conversations (a group of three and their
DMs; the same topics come back, so the update step meets similar facts) against a
local OpenAI-compatible server, with Alfred's real OpenAI adapter, the embedded
MongoDB-wire server in a temporary data folder, and real embeddings calls to the fake.
At zero model latency (the default) what it measures is Alfred's own cost per
formation: database round trips, JSON, HTTP, the ≤ 3 LLM calls and the tokens their
prompts take. ``--model-latency MS`` makes the fake wait that long before each chat
answer, to show what a real model's latency does to the rate (one formation at a time).

It also reports what the run left in the database (BSON bytes per collection, before
the server's compression and indexes) per journaled message: the storage a message
costs once its facts, reflections and summaries are formed (docs/scaling.md, F7).

``--via-jobs`` sends each formation through the job path instead (trigger → outbox →
arq on the embedded Redis → ``drain``), to show the queue's overhead.

Nothing configured in the environment or ``.env`` is used: the benchmark never touches
a real database or a paid endpoint.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from pydantic import SecretStr
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bot.bench.fake_answers import bag_of_words, estimate_tokens, formation_answer
from bot.bench.fake_openai import FakeOpenAI, text_task_handler
from bot.bench.resources import DatabaseOps, count_database_ops, database_bytes, peak_rss_mb
from memory.errors import NotFound
from memory.llm import Usage
from runtime.embedded import stop_before_removal

if TYPE_CHECKING:
    from integrations.redis.connection import RedisHandle
    from integrations.redis.queue import JobQueue
    from runtime.bundle import Services

PEOPLE = [(9101, "Alice"), (9102, "Bob"), (9103, "Chloe")]
CITIES = ["Lisbon", "Porto", "Kyoto", "Oslo", "Lyon", "Denver"]
FOODS = ["ramen", "peanuts", "sushi", "lentil soup", "mango", "oat milk"]
MONTHS = ["March", "May", "July", "September", "December"]
NAMES = ["Maria", "Tom", "Priya", "Jonas", "Aiko"]
STATEMENTS = [
    "I really love {food} on weekends",
    "We are going to {city} in {month}",
    "My sister {name} lives in {city} now",
    "I am allergic to {food} since I was a kid",
    "Our anniversary dinner is planned for {month}",
    "I started a new job at a bakery in {city}",
    "We need to book the flights to {city} before {month}",
    "My friend {name} is visiting us in {month}",
]
FILLER = ["ok", "haha yes", "sounds good", "what time?", "sure", "thanks!", "see you then"]


@dataclass
class Figures:
    """What the benchmark measured, per formation."""

    via: str
    seconds: list[float] = field(default_factory=list)
    llm_calls: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    facts: list[int] = field(default_factory=list)
    messages: int = 0
    skipped: int = 0
    database_ops: DatabaseOps = field(default_factory=DatabaseOps)
    model_latency_ms: float = 0.0
    #: BSON bytes per collection at the end of the run; messages journaled in all.
    storage: dict[str, int] = field(default_factory=dict)
    journaled: int = 0
    embedding_dims: int = 0

    def summary(self) -> dict[str, Any]:
        total = sum(self.seconds)
        count = len(self.seconds)
        return {
            "formations": count,
            "per_second": round(count / total, 2) if total else 0.0,
            "llm_calls_per_formation": {
                "mean": round(statistics.fmean(self.llm_calls), 2) if count else 0.0,
                "max": max(self.llm_calls, default=0),
            },
            "tokens_per_formation": {
                "mean": round(statistics.fmean(self.tokens), 1) if count else 0.0
            },
            "facts_per_formation": {
                "mean": round(statistics.fmean(self.facts), 2) if count else 0.0
            },
            "messages_per_formation": self.messages,
            "seconds": {
                "total": round(total, 3),
                "p50": round(statistics.median(self.seconds), 4) if count else 0.0,
                "max": round(max(self.seconds, default=0.0), 4),
            },
            "skipped": self.skipped,
            "database_ops_per_formation": self.database_ops.per(count),
            "peak_rss_mb": peak_rss_mb(),
            "via": self.via,
            "backend": "embedded",
            "model_latency_ms": self.model_latency_ms,
            "storage": self.storage_summary(),
        }

    def storage_summary(self) -> dict[str, Any]:
        """What the run stored, in all and per journaled message."""
        total = sum(self.storage.values())
        return {
            "bytes_by_collection": dict(sorted(self.storage.items())),
            "total_bytes": total,
            "messages_journaled": self.journaled,
            "bytes_per_message": round(total / self.journaled, 1) if self.journaled else 0.0,
            "embedding_dims": self.embedding_dims,
        }


def conversation(
    rng: random.Random, speakers: list[str], size: int
) -> list[tuple[str | None, str]]:
    """``size`` lines: statements, small talk and Alfred's short replies (speaker None),
    with at least four user lines so that every batch is formed."""
    lines: list[tuple[str | None, str]] = []
    while len(lines) < size:
        roll = rng.random()
        if roll < 0.15 and lines and lines[-1][0] is not None:
            lines.append((None, "Noted."))
            continue
        speaker = rng.choice(speakers)
        if roll < 0.5:
            text = rng.choice(STATEMENTS).format(
                food=rng.choice(FOODS),
                city=rng.choice(CITIES),
                month=rng.choice(MONTHS),
                name=rng.choice(NAMES),
            )
        else:
            text = rng.choice(FILLER)
        lines.append((speaker, text))
    return lines


#: The LLM tasks of a formation (consolidation, which a job may run after, is not one).
FORMATION_TASKS = ("extract_facts", "decide_updates", "reflect")


def formation_usage(usage: Usage) -> tuple[int, int]:
    """Calls and tokens spent so far on formation tasks."""
    calls = sum(usage.calls.get(t, 0) for t in FORMATION_TASKS)
    tokens = sum(
        usage.prompt_tokens.get(t, 0) + usage.completion_tokens.get(t, 0) for t in FORMATION_TASKS
    )
    return calls, tokens


async def _wait_stopped(pids: list[int], seconds: float = 15.0) -> None:
    """Wait for the embedded servers' supervisors to exit before their folder goes."""
    from runtime.embedded.state import process_alive

    for _ in range(int(seconds * 10)):
        if not any(process_alive(pid) for pid in pids):
            return
        await asyncio.sleep(0.1)


def _supervisors(data_dir: Path) -> list[int]:
    from runtime.embedded.state import EmbeddedPaths, read_state

    pids = []
    for kind in ("mongo", "redis"):
        state = read_state(EmbeddedPaths(data_dir, kind))
        if state is not None:
            pids.append(state.supervisor_pid)
    return pids


class JobsPath:
    """Formation through the job path: trigger → outbox → arq (embedded Redis) → drain."""

    def __init__(self, services: Services, redis: RedisHandle, queue: JobQueue) -> None:
        from runtime.jobs import formation_trigger

        self.services = services
        self.redis = redis
        self.queue = queue
        self.trigger = formation_trigger(services, queue)

    @classmethod
    async def open(cls, services: Services) -> JobsPath:
        from integrations.redis.queue import JobQueue
        from jobs.config import queue_name
        from runtime.connections import open_redis

        redis = await open_redis(services.settings)
        return cls(services, redis, JobQueue.from_url(redis.url, queue_name(services.settings)))

    async def form(self, thread_id: str) -> bool:
        """Request (as the trigger does at 45 messages) and drain; True if all completed."""
        from jobs.inprocess import drain
        from memory.job_ports import RequestKind

        if await self.trigger.after_message(thread_id) is None:
            # Fewer than 45 messages / 1000 tokens: request as the trigger would.
            request, _ = await self.trigger.outbox.request(
                thread_id, RequestKind.FORM, self.services.clock.now()
            )
            await self.queue.enqueue_form(request.id)
        ran = await drain(self.services, self.redis)
        return bool(ran) and all(status == "complete" for _, status in ran)

    async def close(self) -> None:
        await self.queue.close()
        await self.redis.close()


async def run_bench(
    data_dir: Path,
    formations: int,
    messages: int,
    seed: int,
    via_jobs: bool,
    progress: Progress,
    model_latency_ms: float = 0.0,
) -> Figures:
    """Set up the embedded backend in ``data_dir`` and time ``formations`` formations
    (each chat answer of the fake model delayed by ``model_latency_ms``)."""
    from memory.ids import new_id
    from memory.models import Message, Role, Thread
    from migrations import MigrationContext, migrate
    from runtime.container import build_services
    from runtime.settings import Settings

    figures = Figures(
        via="jobs" if via_jobs else "service",
        messages=messages,
        database_ops=count_database_ops(),  # before any client is made
        model_latency_ms=model_latency_ms,
    )
    rng = random.Random(seed)
    async with FakeOpenAI(
        chat_handler=text_task_handler(formation_answer),
        vector=bag_of_words,
        latency_s=model_latency_ms / 1000.0,
        record=False,
    ) as server:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            alfred_data_dir=data_dir,
            mongodb_uri=None,
            redis_url=None,
            mongodb_database="alfred_bench",
            openai_api_key=SecretStr("bench-key"),
            openai_base_url=server.base_url,
            embeddings_provider="openai",
            mem0_mode="off",
        )
        setup = progress.add_task("starting the embedded backend", total=None)
        services = await build_services(settings)
        jobs_path: JobsPath | None = None
        try:
            await migrate(
                MigrationContext(
                    db=services.mongo.db,
                    atlas_search=False,
                    embedding_dims=services.embedder.dimensions,
                    log=lambda _: None,
                )
            )
            directory = services.directory
            now = services.clock.now()
            for user_id, name in PEOPLE:
                await directory.upsert_user(user_id, name, name.lower(), now)
            circle = await directory.upsert_circle(-9100, "Bench family", now)
            for user_id, _ in PEOPLE:
                await directory.add_member(circle.id, str(user_id))
            group = await directory.thread(circle.id)
            if group is None:  # upsert_circle creates it; only a concurrent purge removes it
                raise NotFound(f"the bench group's thread {circle.id} vanished")
            threads: list[tuple[Thread, list[str]]] = [(group, [str(u) for u, _ in PEOPLE])]
            for user_id, _ in PEOPLE:
                dm = await directory.dm_thread(str(user_id), user_id, now)
                threads.append((dm, [str(user_id)]))
            jobs_path = await JobsPath.open(services) if via_jobs else None
            progress.remove_task(setup)

            bar = progress.add_task(f"formations ({figures.via})", total=formations)
            for i in range(formations):
                thread, speakers = threads[i % len(threads)]
                for speaker, text in conversation(rng, speakers, messages):
                    at: datetime = services.clock.now()
                    tick = await directory.touch(thread.id, at, estimate_tokens(text))
                    await services.journal.append(
                        Message(
                            id=new_id(),
                            thread_id=thread.id,
                            partition=thread.partition_for(speaker or speakers[0]),
                            role=Role.USER if speaker else Role.AGENT,
                            user_id=speaker,
                            text=text,
                            session_id=tick.session_id,
                            created_at=at,
                        )
                    )
                    figures.journaled += 1
                calls, tokens = formation_usage(services.llm.usage)
                facts_before = await services.mongo.db["memory_facts"].count_documents({})
                figures.database_ops.counting = True
                started = time.perf_counter()
                if jobs_path is not None:
                    formed = await jobs_path.form(thread.id)
                else:
                    report = await services.formation.form_thread(thread.id)
                    formed = report.skipped is None
                figures.seconds.append(time.perf_counter() - started)
                figures.database_ops.counting = False
                calls_after, tokens_after = formation_usage(services.llm.usage)
                figures.llm_calls.append(calls_after - calls)
                figures.tokens.append(tokens_after - tokens)
                facts_after = await services.mongo.db["memory_facts"].count_documents({})
                figures.facts.append(facts_after - facts_before)
                figures.skipped += int(not formed)
                progress.advance(bar)
            figures.storage = await database_bytes(services.mongo.db)
            figures.embedding_dims = services.embedder.dimensions
        finally:
            pids = _supervisors(data_dir)
            if jobs_path is not None:
                await jobs_path.close()
            await services.aclose()
            await _wait_stopped(pids)
    return figures


def register(app: typer.Typer) -> None:
    """Add ``formation`` to ``alfred bench``."""

    @app.command("formation")
    def formation(
        formations: int = typer.Option(40, "--formations", "-n", min=1, help="How many."),
        messages: int = typer.Option(
            45, "--messages", min=4, help="Messages journaled before each formation."
        ),
        via_jobs: bool = typer.Option(
            False, "--via-jobs", help="Trigger → outbox → arq → drain instead of direct calls."
        ),
        model_latency: float = typer.Option(
            0.0,
            "--model-latency",
            min=0.0,
            metavar="MS",
            help="Milliseconds the fake model waits before each chat answer (0: none).",
        ),
        seed: int = typer.Option(7, help="Seed of the synthetic conversations."),
        as_json: bool = typer.Option(
            False, "--json", help="Print one JSON object as the last line on stdout."
        ),
    ) -> None:
        """Formations per second, LLM calls and tokens per formation, storage per message
        (fake LLM, zero latency unless --model-latency)."""
        err = Console(stderr=True)
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        )
        with tempfile.TemporaryDirectory(prefix="alfred-bench-") as tmp, progress:
            try:
                figures = asyncio.run(
                    run_bench(
                        Path(tmp), formations, messages, seed, via_jobs, progress, model_latency
                    )
                )
            finally:
                stop_before_removal(tmp)
        summary = figures.summary()
        if as_json:
            sys.stdout.write(json.dumps(summary) + "\n")
            return
        table = Table(
            title=f"formation ({summary['via']}, embedded backend, fake LLM answering in "
            f"{model_latency:g} ms)"
        )
        table.add_column("measure")
        table.add_column("value", justify="right")
        table.add_row("formations", str(summary["formations"]))
        table.add_row("formations / second", f"{summary['per_second']:.2f}")
        table.add_row("seconds per formation (p50)", f"{summary['seconds']['p50']:.4f}")
        calls = summary["llm_calls_per_formation"]
        table.add_row("LLM calls per formation (mean / max)", f"{calls['mean']} / {calls['max']}")
        table.add_row("tokens per formation (mean)", f"{summary['tokens_per_formation']['mean']}")
        table.add_row("facts per formation (mean)", f"{summary['facts_per_formation']['mean']}")
        table.add_row("skipped", str(summary["skipped"]))
        ops = summary["database_ops_per_formation"]
        table.add_row("database reads / writes per formation", f"{ops['reads']} / {ops['writes']}")
        table.add_row("peak resident memory (MB)", f"{summary['peak_rss_mb']}")
        storage = summary["storage"]
        table.add_row(
            "stored bytes per journaled message (BSON)",
            f"{storage['bytes_per_message']:.0f} ({storage['embedding_dims']}-dim vectors)",
        )
        Console().print(table)
