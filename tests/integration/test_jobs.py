"""Background formation jobs on the real arq worker, the real embedded Redis and Mongo.

Each test gets its own database; the arq queue and the formation locks are named
after the database, so tests sharing the session's Redis never see each other's jobs.
The model is a deterministic fake (one fact and one session reflection per batch),
except in the kill test, where separate worker processes talk to a local fake
OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from bot.bench.fake_openai import (
    FakeOpenAI,
    RecordedRequest,
    completion,
    json_task_handler,
)
from integrations.mongo.codec import fact_from_doc, message_to_doc
from integrations.mongo.connection import MongoHandle
from integrations.mongo.outbox import MongoOutbox
from integrations.redis.connection import RedisHandle
from integrations.redis.queue import JobQueue
from jobs.admin.names import ADMIN_RETRY_FORMATION
from jobs.config import COLD_SESSIONS, CONSOLIDATE, JobsConfig, lock_prefix, queue_name
from jobs.inprocess import drain, run_due_crons, start_inprocess_worker
from memory.clock import ManualClock
from memory.constants import FACTS, MESSAGES, REFLECTIONS
from memory.job_ports import JobState, RequestKind, RequestStatus
from memory.llm import ChatOutcome, LLMOutputError, Task, Usage
from memory.models import Message, Partition, ReflectionScope, Role, Thread
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.container import build_services
from runtime.jobs import admin_context, formation_trigger
from runtime.settings import Settings
from services.admin.stats import collect_stats
from services.trigger import FormationTrigger
from tests.conftest import make_settings
from tests.helpers.cleanup import drop_test_database
from tests.helpers.fakes import HashEmbedder
from tests.helpers.journal import message
from tests.helpers.polling import eventually

NOW = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]
#: Short locks and quick retries: the same code paths as production, in test time.
FAST = JobsConfig(
    lock_ttl=2.0,
    lock_busy_defer=0.1,
    retry_base=0.1,
    retry_max=1.0,
    orphan_confirm=0.2,
)


class JobsLLM:
    """Deterministic formation answers: one fact and one session reflection per batch.

    Records how many calls run at once (the per-thread lock must keep it at one) and
    lets a test hook the reflection step (the middle of a formation)."""

    def __init__(self) -> None:
        self._usage = Usage()
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.on_reflect: Callable[[], Awaitable[None]] | None = None
        #: Fact extractions still to answer with garbage (the adapter's LLMOutputError).
        self.garbage = 0

    @property
    def offline(self) -> bool:
        return False

    @property
    def usage(self) -> Usage:
        return self._usage

    async def run(self, task: Task[Any, Any], ctx: Any) -> Any:
        self._usage.record(task.name)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            answer = await self._answer(task.name, ctx)
        finally:
            self.in_flight -= 1
        return task.response_model.model_validate(answer)

    async def _answer(self, name: str, ctx: Any) -> dict[str, Any]:
        if name == "extract_facts" and self.garbage:
            self.garbage -= 1
            raise LLMOutputError(name, "no JSON object in the answer")
        if name == "extract_facts":
            line = next(x for x in ctx.lines if x.role is Role.USER)
            return {
                "facts": [
                    {
                        "content": f"{line.speaker_name} mentioned {line.text}",
                        "speaker_id": line.speaker_id,
                        "source_message_ids": [line.message_id],
                    }
                ]
            }
        if name == "decide_updates":
            return {
                "decisions": [{"new_index": i, "action": "ADD"} for i in range(len(ctx.new_facts))]
            }
        if name == "reflect":
            if self.on_reflect is not None:
                await self.on_reflect()
            first = ctx.lines[0].message_id[:8]
            return {"reflections": [{"scope": "session", "content": f"Talk {first} plans a trip"}]}
        if name == "consolidate":
            return {"content": " ".join([ctx.current_blob or "", *ctx.reflections]).strip()}
        raise AssertionError(f"unexpected task {name}")

    async def chat(self, *args: Any, **kwargs: Any) -> ChatOutcome:
        raise AssertionError("formation never chats")


@dataclass
class Env:
    """One test's world: services on a fresh database, a manual clock, three threads."""

    settings: Settings
    services: Services
    llm: JobsLLM
    clock: ManualClock
    redis: RedisHandle
    outbox: MongoOutbox
    group: Thread
    alice_dm: Thread
    bob_dm: Thread
    queues: list[JobQueue] = field(default_factory=list)

    async def say(self, thread: Thread, speaker: str, text: str, *, tokens: int = 10) -> Message:
        """Journal a message as the bot does: touch the thread, then append."""
        tick = await self.services.directory.touch(thread.id, self.clock.now(), tokens)
        msg = message(thread, speaker, text, self.clock.now(), session_id=tick.session_id)
        assert await self.services.journal.append(msg)
        self.clock.advance(timedelta(seconds=5))
        return msg

    def queue(self) -> JobQueue:
        queue = JobQueue.from_url(self.redis.url, queue_name(self.settings))
        self.queues.append(queue)
        return queue

    async def facts(self) -> list[dict[str, Any]]:
        return [d async for d in self.services.mongo.db[FACTS].find({})]

    async def unformed(self, thread: Thread) -> int:
        return await self.services.journal.count_unformed(thread.id)


async def open_env(settings: Settings, redis: RedisHandle, **overrides: Any) -> Env:
    test_settings = make_settings(
        settings.alfred_data_dir, mongodb_database=f"jobs_{uuid.uuid4().hex[:10]}", **overrides
    )
    clock = ManualClock(NOW)
    llm = JobsLLM()
    services = await build_services(test_settings, clock=clock, embedder=HashEmbedder(), llm=llm)
    await migrate(
        MigrationContext(db=services.mongo.db, atlas_search=False, embedding_dims=64, log=print)
    )
    directory = services.directory
    await directory.upsert_user(1, "Alice", "alice", NOW)
    await directory.upsert_user(2, "Bob", "bob", NOW)
    circle = await directory.upsert_circle(-100, "Family", NOW)
    await directory.add_member(circle.id, "1")
    await directory.add_member(circle.id, "2")
    group = await directory.thread(circle.id)
    assert group is not None
    return Env(
        settings=test_settings,
        services=services,
        llm=llm,
        clock=clock,
        redis=redis,
        outbox=MongoOutbox(services.mongo.db),
        group=group,
        alice_dm=await directory.dm_thread("1", 1, NOW),
        bob_dm=await directory.dm_thread("2", 2, NOW),
    )


async def close_env(env: Env) -> None:
    for queue in env.queues:
        await queue.close()
    await drop_test_database(env.services.mongo.client, env.settings.mongodb_database)
    await env.services.aclose()


@pytest.fixture
async def env(settings: Settings, mongo: MongoHandle, redis: RedisHandle) -> AsyncIterator[Env]:
    world = await open_env(settings, redis)
    yield world
    await close_env(world)


async def chatter(env: Env, thread: Thread, count: int, *, tokens: int = 10) -> list[Message]:
    speakers = ["1", "2"] if thread.circle_id else [thread.user_id or "1"]
    return [
        await env.say(
            thread, speakers[i % len(speakers)], f"note {i} about the Lisbon trip", tokens=tokens
        )
        for i in range(count)
    ]


async def talk(env: Env, thread: Thread, count: int, trigger: FormationTrigger) -> list[Any]:
    """Messages as the bot handles them: journal one, then call the trigger."""
    outcomes = []
    for _ in range(count):
        msg = (await chatter(env, thread, 1))[0]
        outcomes.append(await trigger.after_message(msg.thread_id))
    return outcomes


class SpyQueue(JobQueue):
    """Records the outbox status of each request at the moment its job is queued."""

    def __init__(self, env: Env) -> None:
        inner = env.queue()
        super().__init__(inner.pool)
        self.outbox = env.outbox
        self.seen: list[tuple[str, str | None]] = []

    async def enqueue_form(self, request_id: str, *, defer: float | None = None) -> bool:
        request = await self.outbox.get(request_id)
        self.seen.append((request_id, request.status.value if request else None))
        return await super().enqueue_form(request_id, defer=defer)


# --- the trigger ----------------------------------------------------------------------


async def test_trigger_requests_formation_at_the_thresholds_outbox_first(env: Env) -> None:
    queue = SpyQueue(env)
    trigger = formation_trigger(env.services, queue)
    assert await talk(env, env.group, 44, trigger) == [None] * 44, "under 45 messages"
    assert await env.outbox.all_requests() == []

    (request,) = await talk(env, env.group, 1, trigger)
    assert request is not None and request.kind is RequestKind.FORM
    assert request.status is RequestStatus.QUEUED
    assert queue.seen == [(request.id, "pending")], "written to MongoDB before it was queued"
    assert await queue.state(request.id) is JobState.QUEUED, "the arq job id is the request id"
    assert await env.services.directory.pending(env.group.id) == (0, 0), "counters reset"
    assert len(await env.outbox.all_requests()) == 1

    # ~1000 tokens trigger before 45 messages ...
    for _ in range(3):
        await env.say(env.alice_dm, "1", "a long story about the garden", tokens=300)
        assert await trigger.after_message(env.alice_dm.id) is None
    await env.say(env.alice_dm, "1", "and the end of the story", tokens=300)
    by_tokens = await trigger.after_message(env.alice_dm.id)
    assert by_tokens is not None and by_tokens.thread_id == env.alice_dm.id

    # ... but never under 4 messages, however long they are.
    for _ in range(3):
        await env.say(env.bob_dm, "2", "an enormous message", tokens=5000)
        assert await trigger.after_message(env.bob_dm.id) is None
    assert {r.thread_id for r in await env.outbox.all_requests()} == {
        env.group.id,
        env.alice_dm.id,
    }


async def test_redis_down_keeps_requests_pending_until_the_requeue_cron(env: Env) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    down = JobQueue.from_url(f"redis://127.0.0.1:{closed_port}/0", queue_name(env.settings))
    env.queues.append(down)
    trigger = formation_trigger(env.services, down)
    request = (await talk(env, env.group, 45, trigger))[-1]
    assert request is not None and request.status is RequestStatus.PENDING, "nothing raised"
    assert [r.status for r in await env.outbox.all_requests()] == [RequestStatus.PENDING]
    assert await env.unformed(env.group) == 45, "every message is kept"

    runs = await run_due_crons(env.services, redis=env.redis, config=FAST)
    assert runs[1].name == "requeue_outbox" and runs[1].report["requeued"] == [], "too young"
    env.clock.advance(timedelta(minutes=3))
    runs = await run_due_crons(env.services, redis=env.redis, config=FAST)
    assert runs[1].report["requeued"] == [request.id]
    assert await drain(env.services, env.redis, config=FAST) == [("form_thread", "complete")]

    assert await env.unformed(env.group) == 0
    assert len(await env.facts()) == 1
    done = await env.outbox.get(request.id)
    assert done is not None and done.status is RequestStatus.DONE and done.requeues == 1


async def test_without_redis_drain_runs_the_outbox_inline(env: Env) -> None:
    trigger = formation_trigger(env.services, None)  # a replay with no queue at all
    request = (await talk(env, env.group, 45, trigger))[-1]
    assert request is not None and request.status is RequestStatus.PENDING
    assert await drain(env.services) == [("form_thread", "complete")]
    assert await drain(env.services) == [], "nothing left open"
    assert await env.unformed(env.group) == 0 and len(await env.facts()) == 1


async def test_job_ids_are_request_ids_so_a_request_forms_once(env: Env) -> None:
    queue = env.queue()
    trigger = formation_trigger(env.services, queue)
    request = (await talk(env, env.group, 45, trigger))[-1]
    assert request is not None
    assert await queue.enqueue_form(request.id) is False, "arq refuses a second job"
    again, created = await env.outbox.request(env.group.id, RequestKind.FORM, env.clock.now())
    assert again.id == request.id and not created, "one open request per thread and kind"

    assert await drain(env.services, env.redis, config=FAST) == [("form_thread", "complete")]
    assert env.llm.usage.calls["extract_facts"] == 1
    assert await queue.enqueue_form(request.id) is False, "still refused: the result is kept"
    # Even a forced re-run (as the requeue cron does after a failed run) forms nothing.
    await queue.forget_result(request.id)
    assert await queue.enqueue_form(request.id) is True
    assert await drain(env.services, env.redis, config=FAST) == [("form_thread", "complete")]
    assert env.llm.usage.calls["extract_facts"] == 1
    assert len(await env.facts()) == 1 and await env.unformed(env.group) == 0


async def test_per_thread_lock_defers_the_second_job(env: Env) -> None:
    session = (await chatter(env, env.group, 45))[-1].session_id
    env.llm.delay = 0.15
    form, _ = await env.outbox.request(env.group.id, RequestKind.FORM, env.clock.now())
    cold, _ = await env.outbox.request(
        env.group.id, RequestKind.COLD, env.clock.now(), session_id=session
    )
    queue = env.queue()
    assert await queue.enqueue_form(form.id) and await queue.enqueue_form(cold.id)
    worker = await start_inprocess_worker(
        env.services, env.redis, config=FAST, crons=False, max_jobs=2, poll_delay=0.02
    )
    try:

        async def both_done() -> bool:
            return all(not r.open for r in await env.outbox.all_requests())

        await eventually(both_done, "both requests done", within=20)
    finally:
        await worker.stop()
    assert env.llm.max_in_flight == 1, "never two formations of one thread at once"
    assert worker.worker.jobs_retried >= 1, "the second job found the lock and was deferred"
    results = [r.result or {} for r in await env.outbox.all_requests()]
    assert sum(r["backlog"]["formations"] for r in results) == 1, "formed once"
    assert len(await env.facts()) == 1 and await env.unformed(env.group) == 0


async def test_stopping_the_inprocess_worker_mid_job_puts_the_job_back(env: Env) -> None:
    await chatter(env, env.group, 45)
    request, _ = await env.outbox.request(env.group.id, RequestKind.FORM, env.clock.now())
    assert await env.queue().enqueue_form(request.id)
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.sleep(30)

    env.llm.on_reflect = hang
    worker = await start_inprocess_worker(
        env.services, env.redis, config=FAST, crons=False, poll_delay=0.02
    )
    await asyncio.wait_for(started.wait(), 10)
    await worker.stop(grace=0.1)
    assert await env.unformed(env.group) == 45 and len(await env.facts()) == 1
    assert await JobQueue(env.queues[0].pool).state(request.id) is JobState.QUEUED

    env.llm.on_reflect = None
    assert await drain(env.services, env.redis, config=FAST) == [("form_thread", "complete")]
    assert await env.unformed(env.group) == 0 and len(await env.facts()) == 1


async def test_a_long_backlog_is_formed_batch_after_batch(env: Env) -> None:
    thread = env.alice_dm
    docs = [
        message_to_doc(
            message(thread, "1", f"note {i} about the garden", NOW + timedelta(seconds=i))
        )
        for i in range(1_200)
    ]
    await env.services.mongo.db[MESSAGES].insert_many(docs)
    request, _ = await env.outbox.request(thread.id, RequestKind.FORM, env.clock.now())
    assert await env.queue().enqueue_form(request.id)
    # A zero time budget: every run forms one batch, then the job runs again.
    config = replace(FAST, form_budget=0.0, form_max_tries=20)
    assert await drain(env.services, env.redis, config=config) == [("form_thread", "complete")]

    assert await env.unformed(thread) == 0
    assert env.llm.usage.calls["extract_facts"] == 12, "100 messages per batch"
    assert len(await env.facts()) == 12
    (done,) = await env.outbox.all_requests(thread.id)
    assert done.status is RequestStatus.DONE and done.attempts == 13, "12 batches, then none"


# --- MongoDB down in the middle of a job -----------------------------------------------


class TcpProxy:
    """A TCP pass-through that can be cut (every connection dropped, new ones refused)
    and restored on the same port: MongoDB going down and coming back."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def ensure_up(self) -> None:
        if self._server is None:
            await self.start()

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_mongodb_down_mid_job_retries_without_half_written_state(
    settings: Settings, mongo: MongoHandle, redis: RedisHandle
) -> None:
    assert mongo.lease is not None
    target = urlsplit(mongo.lease.url)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 27017)
    await proxy.start()
    env = await open_env(
        settings,
        redis,
        mongodb_uri=f"mongodb://127.0.0.1:{proxy.port}/?directConnection=true",
        mongodb_timeout_ms=300,
    )
    direct = mongo.client[env.settings.mongodb_database]  # not through the proxy
    seen_during_outage: dict[str, Any] = {}
    outage: list[asyncio.Task[None]] = []

    async def come_back() -> None:
        await asyncio.sleep(1.0)
        seen_during_outage["unformed"] = await direct[MESSAGES].count_documents({"formed": False})
        seen_during_outage["facts"] = [d async for d in direct[FACTS].find({})]
        await proxy.start()

    async def cut_in_the_middle() -> None:
        if not outage:  # the first formation, after its facts, before its reflections
            await proxy.cut()
            outage.append(asyncio.create_task(come_back()))

    try:
        await chatter(env, env.group, 45)
        request, _ = await env.outbox.request(env.group.id, RequestKind.FORM, env.clock.now())
        assert await env.queue().enqueue_form(request.id)
        env.llm.on_reflect = cut_in_the_middle
        drained = await drain(env.services, env.redis, config=FAST, max_seconds=30)
        await outage[0]

        assert drained == [("form_thread", "complete")]
        assert seen_during_outage["unformed"] == 45, "nothing marked formed by the failed run"
        for doc in seen_during_outage["facts"]:  # what was written is whole
            fact = fact_from_doc(doc)
            assert fact.content and fact.hash and fact.embedding is not None
            assert len(fact.embedding) == 64
        done = await env.outbox.get(request.id)
        assert done is not None and done.status is RequestStatus.DONE
        assert done.attempts >= 2, "failed (its error could not be written), retried"
        assert await env.unformed(env.group) == 0
        assert len(await env.facts()) == 1, "the retry duplicated nothing"
        assert await direct[REFLECTIONS].count_documents({}) == 1
    finally:
        await proxy.ensure_up()
        await close_env(env)
        await proxy.cut()


# --- cold sessions ------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["inline", "queued", "arq-cron"])
async def test_cold_session_cron_forms_consolidates_and_closes(env: Env, path: str) -> None:
    said = await chatter(env, env.group, 6)
    session = said[-1].session_id
    assert session is not None
    await chatter(env, env.bob_dm, 3)
    env.clock.advance(timedelta(minutes=9))
    assert (await run_due_crons(env.services, config=FAST))[0].report["cold"] == 0, "not yet"
    env.clock.advance(timedelta(minutes=2))

    if path == "inline":  # a replay without Redis: the duty does the work itself
        runs = await run_due_crons(env.services, config=FAST)
        assert len(runs[0].report["processed"]) == 2
        report = runs[0].report
    elif path == "queued":  # a replay with Redis: the duty queues, drain runs the jobs
        runs = await run_due_crons(env.services, redis=env.redis, config=FAST)
        assert len(runs[0].report["queued"]) == 2
        drained = await drain(env.services, env.redis, config=FAST)
        assert drained == [("form_thread", "complete")] * 2
        report = runs[0].report
    else:  # the cron job itself, run by arq
        assert await env.queue().enqueue(COLD_SESSIONS)
        drained = await drain(env.services, env.redis, config=FAST)
        assert drained == [("cold_sessions", "complete")] + [("form_thread", "complete")] * 2
        report = {"cold": 2}
    assert report["cold"] == 2

    circle = Partition.circle(env.group.circle_id or "")
    notes = env.services.notes
    blob = await notes.blob(ReflectionScope.SESSION, circle, session)
    assert blob is not None and "plans a trip" in blob.content
    assert await notes.unabsorbed(ReflectionScope.SESSION, circle, session) == []
    assert await env.unformed(env.group) == 0 and len(await env.facts()) == 1
    assert await env.unformed(env.bob_dm) == 3, "too few to form: kept for later, not dropped"
    assert await env.services.directory.cold_threads(env.clock.now()) == [], "sessions closed"
    cold = [r for r in await env.outbox.all_requests() if r.kind is RequestKind.COLD]
    assert len(cold) == 2 and all(r.status is RequestStatus.DONE for r in cold)


async def test_admin_consolidate_job(env: Env) -> None:
    session = (await chatter(env, env.group, 6))[-1].session_id
    request, _ = await env.outbox.request(env.group.id, RequestKind.FORM, env.clock.now())
    queue = env.queue()
    assert await queue.enqueue_form(request.id)
    assert await drain(env.services, env.redis, config=FAST) == [("form_thread", "complete")]
    circle = Partition.circle(env.group.circle_id or "")
    notes = env.services.notes
    assert len(await notes.unabsorbed(ReflectionScope.SESSION, circle, session)) == 1, "buffered"

    assert await queue.enqueue(CONSOLIDATE, "session", circle.as_fields(), session)
    assert await drain(env.services, env.redis, config=FAST) == [("consolidate", "complete")]
    assert await notes.unabsorbed(ReflectionScope.SESSION, circle, session) == []
    assert await notes.blob(ReflectionScope.SESSION, circle, session) is not None


# --- invalid model answers ----------------------------------------------------------------


async def form_now(env: Env, thread: Thread) -> list[tuple[str, str]]:
    request, _ = await env.outbox.request(thread.id, RequestKind.FORM, env.clock.now())
    await env.queue().enqueue_form(request.id)
    return await drain(env.services, env.redis, config=FAST, max_seconds=30)


async def test_garbage_extraction_fails_the_job_and_a_later_job_forms_the_batch(
    env: Env,
) -> None:
    await chatter(env, env.group, 6)
    env.llm.garbage = 2

    assert await form_now(env, env.group) == [("form_thread", "complete")]

    assert env.llm.usage.calls["extract_facts"] == 3, "two failed jobs, one that formed"
    assert env.llm.usage.calls["reflect"] == 1, "no reflection on a failed batch"
    (request,) = await env.outbox.all_requests()
    assert request.status is RequestStatus.DONE and request.attempts == 3, "retried twice"
    assert await env.unformed(env.group) == 0
    assert len(await env.facts()) == 1
    docs = await env.services.mongo.db[MESSAGES].find({}).to_list()
    assert {d["formation_failures"] for d in docs} == {2} and not any(d["set_aside"] for d in docs)


async def test_three_failed_jobs_set_the_batch_aside_and_retry_formation_forms_it(
    env: Env,
) -> None:
    await chatter(env, env.group, 6)
    env.llm.garbage = 3

    assert await form_now(env, env.group) == [("form_thread", "complete")]
    assert env.llm.usage.calls["extract_facts"] == 3 and len(await env.facts()) == 0
    assert await env.services.journal.set_aside_counts() == {env.group.id: 6}
    stats = await collect_stats(admin_context(env.services))
    assert stats["formation_set_aside"] == {
        "messages": 6,
        "threads": 1,
        "by_thread": {env.group.id: 6},
    }

    # the thread goes on: its later messages form although the batch before is aside
    for i in range(4):
        await env.say(env.group, "12"[i % 2], f"later {i}: the flights are booked")
    assert await form_now(env, env.group) == [("form_thread", "complete")]
    assert len(await env.facts()) == 1
    assert await env.services.journal.set_aside_counts() == {env.group.id: 6}

    # the model behaves again: the operator forms the set-aside batch on demand
    assert await env.queue().enqueue(ADMIN_RETRY_FORMATION, env.group.id)
    drained = await drain(env.services, env.redis, config=FAST, max_seconds=30)
    assert drained == [("admin_retry_formation", "complete"), ("form_thread", "complete")]
    assert await env.services.journal.set_aside_counts() == {}
    assert await env.unformed(env.group) == 0
    assert len(await env.facts()) == 2
    stats = await collect_stats(admin_context(env.services))
    assert stats["formation_set_aside"]["messages"] == 0


# --- processes --------------------------------------------------------------------------


def subprocess_env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    return {**base, "LOG_LEVEL": "INFO", **extra}


def test_importing_the_worker_starts_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = subprocess.run(
        [sys.executable, "-c", "import jobs.worker, jobs.inprocess, services.trigger"],
        env=subprocess_env(ALFRED_DATA_DIR=str(data)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert not data.exists(), "no embedded server was started by an import"


#: Worker A of the kill test: the real worker, with a 1-second lock so it lapses quickly,
#: and arq's in-progress marker as long-lived as arq makes it, so only worker B's start-up
#: recovery (the orphan release) can hand the job on.
KILLABLE_WORKER = """
import logging
logging.basicConfig(level=logging.INFO)
from arq.worker import run_worker
from jobs.config import JobsConfig
from jobs.worker import build_worker_settings
run_worker(build_worker_settings(config=JobsConfig(lock_ttl=1.0, job_lease=900.0)))
"""
#: The real worker with the production tunables.
PRODUCTION_WORKER = """
import logging
logging.basicConfig(level=logging.INFO)
from arq.worker import run_worker
from jobs.worker import build_worker_settings
run_worker(build_worker_settings())
"""


async def seed_backlog(env: Env, thread: Thread, n: int, wording: str) -> None:
    """``n`` unformed messages of two speakers in ``thread`` (``wording`` formatted with
    the speaker's name and the message's number), counted as pending for formation."""
    names = {"1": "Alice", "2": "Bob"}
    docs = [
        message_to_doc(
            message(
                thread,
                speaker,
                wording.format(name=names[speaker], speaker=speaker, i=i),
                NOW + timedelta(seconds=i),
            )
        )
        for i, speaker in enumerate(["1", "2"] * (n // 2))
    ]
    await env.services.mongo.db[MESSAGES].insert_many(docs)
    await env.services.mongo.db["threads"].update_one(
        {"_id": thread.id}, {"$set": {"pending_messages": n, "pending_tokens": n * 10}}
    )


def reflections_hanging_at(
    batch: int, topic: str
) -> tuple[Callable[[RecordedRequest], Awaitable[Any]], asyncio.Event, asyncio.Event]:
    """A model whose reflection call of the ``batch``-th batch hangs (``held`` set) until
    ``release`` is set; each batch reflects once, named by its first message's id."""
    held, release = asyncio.Event(), asyncio.Event()
    reflections = 0
    default = json_task_handler()

    async def handler(request: RecordedRequest) -> Any:
        nonlocal reflections
        if '{"reflections"' not in request.system_prompt:
            return default(request)
        reflections += 1
        if reflections == batch:  # worker A: hang until killed
            held.set()
            await release.wait()
        first = re.search(r"^\[([^\]]+)\] \(", request.last_user_text, re.M)
        assert first is not None
        content = f"Batch {first.group(1)[:8]} plans {topic}"
        return completion(json.dumps({"reflections": [{"scope": "session", "content": content}]}))

    return handler, held, release


def request_finished(env: Env, request_id: str) -> Callable[[], Awaitable[bool]]:
    """Whether the request is done in the outbox and arq recorded its job complete."""

    async def finished() -> bool:
        current = await env.outbox.get(request_id)
        if current is None or current.status is not RequestStatus.DONE:
            return False
        return await env.queues[0].state(request_id) is JobState.COMPLETE

    return finished


async def kill_all(*procs: asyncio.subprocess.Process | None) -> None:
    for proc in procs:
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_worker_killed_mid_formation_loses_and_duplicates_nothing(
    settings: Settings, mongo: MongoHandle, redis: RedisHandle, tmp_path: Path
) -> None:
    """THE KILL TEST. Worker A (a separate process) forms a 250-message backlog; in the
    third batch, after its fact is stored and while the reflection call hangs, A gets
    SIGKILL. Worker B, started as ``arq jobs.worker.WorkerSettings`` on the embedded
    servers (no URLs, just the data folder), recovers the orphaned job at start-up and
    finishes. Every fact exists once, every message is formed, the request is done."""
    assert mongo.lease is not None
    env = await open_env(settings, redis)
    thread = env.group
    await seed_backlog(env, thread, 250, "{name} plans part {i} of the Lisbon trip")
    handler, held, release = reflections_hanging_at(3, "Lisbon")

    logs = tmp_path / "logs"
    logs.mkdir()
    log_a, log_b = (logs / "a.out").open("w"), (logs / "b.out").open("w")
    common = {"MONGODB_DATABASE": env.settings.mongodb_database, "OPENAI_API_KEY": "test-key"}
    worker_a = worker_b = None
    try:
        async with FakeOpenAI(chat_handler=handler) as fake:
            common["OPENAI_BASE_URL"] = fake.base_url
            trigger = formation_trigger(env.services, env.queue())
            request = await trigger.after_message(thread.id)
            assert request is not None and request.status is RequestStatus.QUEUED

            worker_a = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                KILLABLE_WORKER,
                env=subprocess_env(
                    **common,
                    MONGODB_URI=mongo.lease.url,
                    REDIS_URL=env.redis.url,
                    ALFRED_DATA_DIR=str(tmp_path / "unused"),
                ),
                cwd=tmp_path,
                stdout=log_a,
                stderr=subprocess.STDOUT,
            )
            await asyncio.wait_for(held.wait(), 30)
            assert await env.unformed(thread) == 50, "two batches formed, the third in flight"
            assert len(await env.facts()) == 3, "the third batch's fact is already stored"
            worker_a.send_signal(signal.SIGKILL)
            await asyncio.wait_for(worker_a.wait(), 10)
            lock = f"{lock_prefix(env.settings)}{thread.id}"

            async def lock_lapsed() -> bool:
                return not await env.redis.client.exists(lock)

            await eventually(lock_lapsed, "the lock lapsed", within=5)
            release.set()

            arq_cli = Path(sys.executable).with_name("arq")
            worker_b = await asyncio.create_subprocess_exec(
                str(arq_cli),
                "jobs.worker.WorkerSettings",
                env=subprocess_env(**common, ALFRED_DATA_DIR=str(settings.data_dir())),
                cwd=tmp_path,
                stdout=log_b,
                stderr=subprocess.STDOUT,
            )

            try:
                await eventually(request_finished(env, request.id), "request done", within=40)
            except pytest.fail.Exception:
                raise AssertionError((logs / "b.out").read_text()[-3000:]) from None
            worker_b.send_signal(signal.SIGTERM)
            await asyncio.wait_for(worker_b.wait(), 15)
            assert worker_b.returncode == 0, (logs / "b.out").read_text()[-3000:]

        facts = await env.facts()
        assert len(facts) == 3 and len({f["hash"] for f in facts}) == 3, "each fact once"
        assert await env.unformed(thread) == 0, "every message formed"
        stored = [d async for d in env.services.mongo.db[REFLECTIONS].find({})]
        assert len(stored) == 3, "one reflection per batch, none twice"
        done = await env.outbox.get(request.id)
        assert done is not None and done.attempts == 2
        assert "orphaned by a dead worker" in (logs / "b.out").read_text(), "fast recovery"
        assert not await JobQueue(env.queues[0].pool).in_progress_for(request.id)
    finally:
        await kill_all(worker_a, worker_b)
        log_a.close()
        log_b.close()
        await close_env(env)


async def test_a_worker_killed_holding_the_lock_hands_its_job_on_within_the_lease(
    settings: Settings, mongo: MongoHandle, redis: RedisHandle, tmp_path: Path
) -> None:
    """Worker A (production tunables) is killed while its job holds the thread's lock;
    worker B is started at once, while that lock is still held (so B's start-up recovery
    sees a live-looking job and leaves it). While A runs, arq's in-progress marker and
    the lock live only seconds (renewed by the job): so once A is dead both lapse, and B
    takes the job up by itself and finishes it, each fact and reflection once."""
    assert mongo.lease is not None
    env = await open_env(settings, redis)
    thread = env.group
    await seed_backlog(env, thread, 100, "Speaker {speaker} plans step {i} of the move")
    handler, held, release = reflections_hanging_at(1, "the move")

    logs = tmp_path / "logs"
    logs.mkdir()
    log_a, log_b = (logs / "a.out").open("w"), (logs / "b.out").open("w")
    common = {
        "MONGODB_DATABASE": env.settings.mongodb_database,
        "OPENAI_API_KEY": "test-key",
        "MONGODB_URI": mongo.lease.url,
        "REDIS_URL": env.redis.url,
        "ALFRED_DATA_DIR": str(tmp_path / "unused"),
    }
    worker_a = worker_b = None
    try:
        async with FakeOpenAI(chat_handler=handler) as fake:
            common["OPENAI_BASE_URL"] = fake.base_url
            trigger = formation_trigger(env.services, env.queue())
            request = await trigger.after_message(thread.id)
            assert request is not None and request.status is RequestStatus.QUEUED
            worker_a = await asyncio.create_subprocess_exec(
                sys.executable, "-c", PRODUCTION_WORKER, env=subprocess_env(**common),
                cwd=tmp_path, stdout=log_a, stderr=subprocess.STDOUT,
            )  # fmt: skip
            await asyncio.wait_for(held.wait(), 30)
            lock = f"{lock_prefix(env.settings)}{thread.id}"
            marker = f"arq:in-progress:{request.id}"
            production = JobsConfig()
            # The job keeps both short: a dead worker's are gone within seconds.
            assert 0 < await env.redis.client.pttl(marker) <= production.job_lease * 1000
            assert 0 < await env.redis.client.pttl(lock) <= production.lock_ttl * 1000
            worker_a.send_signal(signal.SIGKILL)
            await asyncio.wait_for(worker_a.wait(), 10)
            release.set()
            worker_b = await asyncio.create_subprocess_exec(
                sys.executable, "-c", PRODUCTION_WORKER, env=subprocess_env(**common),
                cwd=tmp_path, stdout=log_b, stderr=subprocess.STDOUT,
            )  # fmt: skip

            try:
                await eventually(request_finished(env, request.id), "request done", within=40)
            except pytest.fail.Exception:
                raise AssertionError((logs / "b.out").read_text()[-3000:]) from None
        facts = await env.facts()
        assert facts and len({f["hash"] for f in facts}) == len(facts), "each fact once"
        assert await env.unformed(thread) == 0, "every message formed"
        stored = [d async for d in env.services.mongo.db[REFLECTIONS].find({})]
        assert len({d["content"] for d in stored}) == len(stored), "no reflection twice"
        done = await env.outbox.get(request.id)
        assert done is not None and done.attempts == 2
    finally:
        await kill_all(worker_a, worker_b)
        log_a.close()
        log_b.close()
        await close_env(env)
