"""``alfred bench bot``: messages per second and the reply path's own overhead.

Alfred answers addressed messages in a circle's group holding N facts, with the chat
model served by a local OpenAI-compatible server at zero latency. Each message is timed
as the Telegram handler runs it: through the reply path (registration, journal,
always-in-context block, heuristic, retrieval, prompt, the real OpenAI client, the
formation trigger) until the replies are ready to send; the time spent inside the model
client is measured separately and subtracted, which leaves the overhead Alfred adds to
whatever model it is given. That time is reported too (``model_client_ms``): with a
model that answers at once it is the client's own work (rendering the prompt, the SDK,
the HTTP exchange over loopback), which a reply pays on top of the model's. The
handler journals the replies once they are sent, while the person reads them
(``after_reply_ms``, counted in the throughput and the round trips, not the overhead).

Round trips per answered message are counted, not estimated: every command a PyMongo
client of the process starts (a command listener) and every request sent to Redis (the
connection's send; a pipeline is one), with formations queued on the embedded Redis as a
bot whose worker runs elsewhere would queue them. That worker's part runs between the
timed messages (a burst worker drains the queue, untimed), so the journal and the memories
the reply path reads are those of a running deployment, where messages get formed.

The first message is timed apart (``first_reply_ms``, the model's time included): it
builds the circle's search index, which is what the first reply after a bot starts waits
for.

Memory: ``peak_rss_mb`` is the whole process's peak, including embedding and storing the
N facts, which a bot never does at start; ``serving_peak_rss_mb`` is the peak from the
first message on (the kernel's peak count started again there, from what loading left
resident), the figure of a bot serving that circle.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr

from bot.bench.common import (
    DataDirOption,
    JsonOption,
    TimedProgress,
    bench_world,
    emit,
    percentiles,
    sizes_or_exit,
)
from bot.bench.fake_answers import formation_answer
from bot.bench.fake_openai import FakeOpenAI, text_task_handler
from bot.bench.machine import LoopControl, machine_line, machine_speed, with_control
from bot.bench.resources import (
    DatabaseOps,
    count_database_ops,
    count_redis_sends,
    mean_document_bytes,
    peak_rss_mb,
    peak_since_restart_mb,
    restart_peak,
)
from bot.bench.retrieval import MEMBERS, _partition_for, _store
from bot.bench.synthetic import facts as synthetic_facts
from bot.bench.synthetic import questions as synthetic_questions
from integrations.redis.queue import JobQueue
from jobs.inprocess import drain
from memory.clock import ManualClock
from memory.constants import FACTS
from memory.errors import AlfredError
from runtime.connections import open_redis
from runtime.container import build_assistant
from runtime.jobs import formation_trigger, queue_name
from runtime.settings import load_settings
from services.messages import Incoming, Sender

#: Time between the timed messages: a lively group's pace, well inside one session (a
#: frozen clock would put a whole conversation at one instant, which no thread has).
MESSAGE_GAP = timedelta(seconds=20)


def _chat_or_task(system: str, user: str) -> Any:
    if "You are Alfred" in system:
        return "Sure — here is what I know."
    return formation_answer(system, user)


class _TimedLLM:
    """Wraps the LLM to add up the time spent inside the model client."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def chat(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.chat(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.run(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


async def run_bot_bench(
    n: int, messages: int, *, data_dir: Path | None, ops: DatabaseOps
) -> dict[str, Any]:
    clock = ManualClock(datetime(2026, 6, 1, 9, tzinfo=UTC))
    async with FakeOpenAI(chat_handler=text_task_handler(_chat_or_task), record=False) as server:
        settings = load_settings().model_copy(
            update={
                "openai_api_key": SecretStr("bench"),
                "openai_base_url": server.base_url,
                "embeddings_provider": "local",
            }
        )
        async with bench_world(
            settings, data_dir=data_dir, clock=clock, database=f"alfred_bench_bot_{n}"
        ) as s:
            await _store(
                s, synthetic_facts(n), [_partition_for(i, "-100") for i in range(n)], f"{n} facts"
            )
            machine = await machine_speed(s.mongo.db)
            # A bot does not embed its store at start: the peak of serving is counted
            # from here (what loading left resident counts, nothing it freed).
            serving_counted = restart_peak()
            timed = _TimedLLM(s.llm)
            s.llm = timed
            # The real queue on the embedded Redis, as a bot whose worker runs elsewhere
            # (RUN_WORKER=external): due formations are queued, and counted, not run.
            redis = await open_redis(s.settings)
            queue = JobQueue.from_url(redis.url, queue_name(s.settings))
            trigger = formation_trigger(s, queue)

            requested: list[str] = []

            async def after_message(thread_id: str) -> None:
                if await trigger.after_message(thread_id) is not None:
                    requested.append(thread_id)

            assistant = build_assistant(s, after_message=after_message)
            for i, member in enumerate(MEMBERS):
                await s.directory.upsert_user(1000 + i, member.upper(), member, clock.now())
            ids = itertools.count(1)
            asked = synthetic_questions(messages + 5, seed=5)
            totals: list[float] = []
            first_reply_ms = 0.0
            overheads: list[float] = []
            in_model_client: list[float] = []
            after_replies: list[float] = []
            control = LoopControl()
            with TimedProgress() as bar:
                task = bar.add_task(f"messages at {n} facts", total=len(asked))
                for k, question in enumerate(asked):
                    clock.advance(MESSAGE_GAP)
                    sender = Sender(telegram_id=1000 + k % 4, name=MEMBERS[k % 4].upper())
                    inc = Incoming(
                        chat_id=-100,
                        chat_type="group",
                        sender=sender,
                        message_id=next(ids),
                        text=f"@alfred {question}",
                        chat_title="Bench",
                        addressed=True,
                    )
                    before = timed.seconds
                    ops.counting = k >= 5
                    started = time.perf_counter()
                    # As the Telegram handler: the replies are sent, then journaled.
                    turn = await assistant.handle(inc, deliver_first=True)
                    elapsed = time.perf_counter() - started
                    await assistant.settle(turn)
                    settled = time.perf_counter() - started - elapsed
                    ops.counting = False
                    if not turn.replies:  # the bench would time nothing but a silence
                        raise AlfredError(
                            f"bench: the addressed message {inc.message_id} got no reply"
                        )
                    if k == 0:  # it builds the circle's search index, as after a start
                        first_reply_ms = round(elapsed * 1000, 1)
                    if k >= 5:  # the first few warm caches and connections
                        in_client = timed.seconds - before
                        totals.append((elapsed + settled) * 1000)
                        overheads.append((elapsed - in_client) * 1000)
                        in_model_client.append(in_client * 1000)
                        after_replies.append(settled * 1000)
                        control.tick()  # the machine's own spread, between messages
                    if requested:  # the worker "elsewhere" forms them, between messages
                        requested.clear()
                        await drain(s, redis)
                    bar.step(task)
            wall = sum(totals) / 1000
            await s.retriever.drain()
            if s.access is not None:  # the recall counts still waiting are this run's too
                ops.counting = True
                await s.access.flush()
                ops.counting = False
            database_ops = ops.per(len(totals))
            ops.commands.clear()
            ops.redis_sends = 0
            await queue.close()
            await redis.close()
            return {
                "facts": n,
                "messages": len(totals),
                "per_second": round(len(totals) / wall, 2) if wall else 0.0,
                "overhead_ms": percentiles(overheads, (50, 95, 99)),
                "total_ms": percentiles(totals, (50, 95, 99)),
                "model_client_ms": percentiles(in_model_client, (50, 95, 99)),
                "after_reply_ms": percentiles(after_replies, (50, 95, 99)),
                "first_reply_ms": first_reply_ms,
                "database_ops_per_message": database_ops,
                "fact_document_bytes": await mean_document_bytes(s.mongo.db[FACTS]),
                "peak_rss_mb": peak_rss_mb(),
                "serving_peak_rss_mb": peak_since_restart_mb() if serving_counted else None,
                "machine": with_control(machine, control),
            }


def _one_size(n: int, messages: int, data_dir: Path | None) -> dict[str, Any]:
    """One size in a process of its own: a size measured after another would report
    the memory that one left behind as its own peak."""
    ops = count_database_ops()
    with count_redis_sends(ops):
        return asyncio.run(run_bot_bench(n, messages, data_dir=data_dir, ops=ops))


def register(app: typer.Typer) -> None:
    @app.command("bot")
    def bench_bot(
        sizes: Annotated[
            str, typer.Option(help="Facts in the circle, e.g. 1000,10000.")
        ] = "1000,10000",
        messages: Annotated[int, typer.Option(min=1, help="Messages to time per size.")] = 100,
        data_dir: DataDirOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Reply-path throughput and overhead (model time excluded) at N facts, with the
        round trips to MongoDB and Redis per message and the peak memory of a process
        serving that circle (each size runs in a fresh process)."""
        spawn = multiprocessing.get_context("spawn")
        results = []
        for size in sizes_or_exit(sizes, "bot"):
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                results.append(pool.submit(_one_size, size, messages, data_dir).result())
        out = {
            "messages": messages,
            "by_facts": {
                str(r["facts"]): {k: v for k, v in r.items() if k != "facts"} for r in results
            },
        }
        lines = [
            f"{r['facts']:>7} facts: {r['per_second']} msg/s, overhead p50 "
            f"{r['overhead_ms']['p50']} ms, p95 {r['overhead_ms']['p95']} ms, "
            f"p99 {r['overhead_ms']['p99']} ms (inside the model client, zero-latency model: "
            f"p50 {r['model_client_ms']['p50']} ms; the replies journaled after they are "
            f"sent, p50 {r['after_reply_ms']['p50']} ms); the first reply, which builds the "
            f"circle's search index, {r['first_reply_ms']} ms; per message "
            f"{r['database_ops_per_message']['round_trips']} round trips "
            f"({r['database_ops_per_message']['reads']} database reads, "
            f"{r['database_ops_per_message']['writes']} writes, "
            f"{r['database_ops_per_message']['redis']} Redis requests); "
            f"{r['fact_document_bytes']:.0f} bytes per fact document; "
            f"peak RSS {r['peak_rss_mb']} MB, serving {r['serving_peak_rss_mb']} MB; "
            + machine_line(r["machine"])
            for r in results
        ]
        emit(out, as_json=as_json, summary="reply path (model time excluded)\n" + "\n".join(lines))
