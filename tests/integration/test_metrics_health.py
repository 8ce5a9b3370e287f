"""Metrics, health endpoints and structured logs, against real servers where it matters.

The endpoints run in a real aiohttp server; "database down" is checked both with a
services object whose ping raises and with a real client pointed at a closed port, and
"up" with the session's embedded MongoDB and Redis.
"""

from __future__ import annotations

import io
import json
import logging
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families
from pymongo import AsyncMongoClient
from pymongo.errors import ServerSelectionTimeoutError

from integrations.mongo.connection import MongoHandle
from integrations.redis.connection import RedisHandle
from memory.formation import FormationReport
from memory.llm import Usage
from memory.models import Category, Partition
from memory.retrieval import RetrievalResult, ScoredFact
from memory.search.candidate import Candidate
from memory.semantic import SemanticMetrics
from runtime.health import add_health_routes, make_health_app
from runtime.logs import REDACTED, configure_logging, sensitive
from runtime.metrics import (
    AlfredMetrics,
    ExportingSemanticMetrics,
    arq_queue_depth,
    set_metrics,
    watch_services,
)
from runtime.settings import Settings
from tests.helpers.cleanup import drop_test_database

# --- helpers -----------------------------------------------------------------------------


def samples(metrics: AlfredMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the registry's text output: (name, sorted labels) → value."""
    text = metrics.render().decode()
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(metrics: AlfredMetrics, name: str, **labels: str) -> float:
    return samples(metrics).get((name, tuple(sorted(labels.items()))), 0.0)


def scored(fact_id: str) -> ScoredFact:
    candidate = Candidate(
        id=fact_id,
        content="irrelevant here",
        category=Category.FACT,
        importance=5,
        partition=Partition.dm("1"),
        reinforced_at=datetime(2026, 1, 1, tzinfo=UTC),
        access_count=0,
    )
    return ScoredFact(candidate, 0.9, 0.9)


@dataclass
class _Mongo:
    db: Any


@dataclass
class _Services:
    """Just enough of :class:`runtime.bundle.Services` for the health checks."""

    mongo: _Mongo


class _DownDb:
    async def command(self, name: str) -> Any:
        raise ServerSelectionTimeoutError("no servers: mongodb://user:secret@db:27017")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- recording ---------------------------------------------------------------------------


async def test_recorded_results_appear_in_the_metrics_text() -> None:
    m = AlfredMetrics()
    m.record_retrieval(
        RetrievalResult(
            retrieved=True,
            facts=[scored("a"), scored("b")],
            legs={"keyword": "ok (3)", "dense": "timeout", "mem0": "failed: Unavailable"},
            timings_ms={"prepare": 2.0, "keyword": 12.0, "dense": 250.0, "total": 260.0},
        )
    )
    m.record_retrieval(RetrievalResult(retrieved=True))  # searched, found nothing
    m.record_retrieval(RetrievalResult(retrieved=False))  # heuristic skipped
    assert value(m, "alfred_retrieval_requests_total") == 2
    assert value(m, "alfred_retrieval_hits_total") == 1
    assert value(m, "alfred_retrieval_skipped_total") == 1
    assert value(m, "alfred_retrieval_hit_rate") == 0.5
    assert value(m, "alfred_retrieval_leg_failures_total", leg="dense", reason="timeout") == 1
    assert value(m, "alfred_retrieval_leg_failures_total", leg="mem0", reason="error") == 1
    assert value(m, "alfred_retrieval_leg_seconds_count", leg="keyword") == 1
    assert value(m, "alfred_retrieval_seconds_bucket", le="0.3") == 1
    assert value(m, "alfred_retrieval_seconds_bucket", le="0.25") == 0

    m.record_formation(
        FormationReport(
            thread_id="t",
            messages=12,
            facts_added=3,
            facts_updated=1,
            facts_invalidated=1,
            reflections_added=2,
            llm_calls=3,
            failed_steps=["reflect"],
        )
    )
    m.record_formation(FormationReport(thread_id="t", skipped="2 user message(s), fewer than 4"))
    assert value(m, "alfred_formations_total", outcome="partial") == 1
    assert value(m, "alfred_formations_total", outcome="skipped") == 1
    assert value(m, "alfred_formation_facts_total", action="added") == 3
    assert value(m, "alfred_formation_facts_total", action="invalidated") == 1
    assert value(m, "alfred_formation_reflections_total") == 2
    assert value(m, "alfred_formation_failed_steps_total", step="reflect") == 1
    assert value(m, "alfred_formation_memories_sum") == 6  # 3 added + 1 updated + 2 reflections

    failed = FormationReport(thread_id="t", messages=6, llm_calls=2, failed_steps=["extract_facts"])
    failed.batch_failed = True
    m.record_formation(failed)
    aside = FormationReport(thread_id="t", messages=6, llm_calls=2, set_aside=6)
    aside.batch_failed, aside.failed_steps = True, ["extract_facts"]
    m.record_formation(aside)
    assert value(m, "alfred_formations_total", outcome="failed") == 1
    assert value(m, "alfred_formations_total", outcome="set_aside") == 1
    assert value(m, "alfred_formation_set_aside_messages_total") == 6
    assert value(m, "alfred_formation_failed_steps_total", step="extract_facts") == 2
    assert value(m, "alfred_formation_messages_total") == 12, "failed batches formed nothing"
    assert value(m, "alfred_formation_memories_count") == 1, "nor count as a formation"

    usage = Usage()
    usage.record("extract_facts", prompt_tokens=100, completion_tokens=20)
    m.record_llm_usage(usage)
    usage.record("extract_facts", prompt_tokens=50, completion_tokens=5)
    usage.record("reply", prompt_tokens=10, completion_tokens=1)
    m.record_llm_usage(usage)  # only the growth since the last call is added
    m.record_llm_usage(usage)
    assert value(m, "alfred_llm_calls_total", purpose="extract_facts") == 2
    assert value(m, "alfred_llm_tokens_total", purpose="extract_facts", kind="prompt") == 150
    assert value(m, "alfred_llm_tokens_total", purpose="extract_facts", kind="completion") == 25
    assert value(m, "alfred_llm_calls_total", purpose="reply") == 1


async def test_mem0_counters_window_percentiles_and_histogram() -> None:
    m = AlfredMetrics()
    semantic = ExportingSemanticMetrics(exporter=m)
    for ms in (20.0, 40.0, 60.0, 80.0, 450.0):
        semantic.observe_latency(ms)
    semantic.searches, semantic.timeouts, semantic.fallbacks, semantic.errors = 7, 1, 2, 3
    semantic.dropped_foreign = 1
    m.watch_semantic(semantic)
    assert await m.refresh() == {"mem0": "ok"}
    semantic.searches += 3
    await m.refresh()  # a second scrape adds only the growth
    assert value(m, "alfred_mem0_searches_total") == 10
    assert value(m, "alfred_mem0_timeouts_total") == 1
    assert value(m, "alfred_mem0_fallbacks_total") == 2
    assert value(m, "alfred_mem0_errors_total") == 3
    assert value(m, "alfred_mem0_dropped_total", reason="foreign") == 1
    assert value(m, "alfred_mem0_latency_seconds_count") == 5
    assert value(m, "alfred_mem0_latency_seconds_bucket", le="0.5") == 5
    assert value(m, "alfred_mem0_latency_seconds_bucket", le="0.1") == 4
    assert value(m, "alfred_mem0_latency_window_seconds", quantile="0.5") == pytest.approx(0.06)
    assert value(m, "alfred_mem0_latency_window_seconds", quantile="0.99") == pytest.approx(0.45)

    # A plain SemanticMetrics (a restart of the layer: counters start again) counts anew.
    fresh = SemanticMetrics()
    fresh.searches = 2
    m.record_semantic_snapshot(fresh.snapshot())
    assert value(m, "alfred_mem0_searches_total") == 12


async def test_watch_services_exports_usage_mem0_and_queue_at_scrape(redis: RedisHandle) -> None:
    @dataclass
    class _LLM:
        usage: Usage

    @dataclass
    class _Built:
        llm: _LLM
        semantic_metrics: SemanticMetrics

    built = _Built(_LLM(Usage()), SemanticMetrics())
    queue = "alfred:test-watch:queue"
    await redis.client.delete(queue)
    await redis.client.zadd(queue, {"a": 1.0})
    m = watch_services(built, redis=redis.client, queue_name=queue, metrics=AlfredMetrics())
    built.llm.usage.record("reflect", prompt_tokens=7, completion_tokens=3)
    built.semantic_metrics.searches = 4
    try:
        assert await m.refresh() == {"llm_usage": "ok", "mem0": "ok", "queue_depth": "ok"}
    finally:
        await redis.client.delete(queue)
    assert value(m, "alfred_llm_tokens_total", purpose="reflect", kind="prompt") == 7
    assert value(m, "alfred_mem0_searches_total") == 4
    assert value(m, "alfred_queue_depth") == 1


async def test_job_timer_counts_outcomes_and_durations() -> None:
    m = AlfredMetrics()

    class Retry(Exception):
        pass

    async with m.time_job("consolidate"):
        pass
    with pytest.raises(ValueError):
        async with m.time_job("consolidate"):
            raise ValueError("boom")
    with pytest.raises(Retry):
        async with m.time_job("form_thread", retry_types=(Retry,)):
            raise Retry

    assert value(m, "alfred_jobs_total", job="consolidate", outcome="ok") == 1
    assert value(m, "alfred_jobs_total", job="consolidate", outcome="failed") == 1
    assert value(m, "alfred_job_failures_total", job="consolidate") == 1
    assert value(m, "alfred_jobs_total", job="form_thread", outcome="retry") == 1
    assert value(m, "alfred_job_failures_total", job="form_thread") == 0
    assert value(m, "alfred_job_seconds_count", job="consolidate") == 2


async def test_registries_are_isolated() -> None:
    a, b = AlfredMetrics(), AlfredMetrics()
    a.record_retrieval(RetrievalResult(retrieved=False))
    assert value(a, "alfred_retrieval_skipped_total") == 1
    assert value(b, "alfred_retrieval_skipped_total") == 0


async def test_admin_jobs_replies_and_formations_move_the_scraped_series(
    client_for: Any, settings: Settings, mongo: MongoHandle, redis: RedisHandle
) -> None:
    """The wiring, not the recorder: real code paths feed the process-wide metrics that
    ``/metrics`` serves — admin jobs run by a real arq worker on the embedded Redis, a
    formation job drained from the queue, and a reply whose retrieval ran."""
    from integrations.mongo.outbox import MongoOutbox
    from integrations.redis.queue import JobQueue
    from jobs.admin_client import AdminClient
    from jobs.config import queue_name
    from jobs.inprocess import drain
    from memory.job_ports import RequestKind
    from migrations import MigrationContext, migrate
    from runtime.bundle import Services
    from runtime.container import build_assistant, build_services
    from services.messages import Incoming, Sender
    from tests.conftest import make_settings
    from tests.helpers.fakes import HashEmbedder

    m = AlfredMetrics()
    set_metrics(m)
    world = make_settings(
        settings.alfred_data_dir, mongodb_database=f"metrics_{uuid.uuid4().hex[:10]}"
    )
    services = await build_services(world, embedder=HashEmbedder())
    queue = JobQueue.from_url(redis.url, queue_name(world))

    async def lend() -> Services:
        return services

    admin = AdminClient(world, redis, services=lend, close_services=False)
    try:
        await migrate(
            MigrationContext(
                db=services.mongo.db, atlas_search=False, embedding_dims=64, log=lambda _: None
            )
        )
        bot = build_assistant(services)
        mia = Sender(telegram_id=7001, name="Mia")

        async def dm(n: int, text: str) -> str:
            turn = await bot.handle(
                Incoming(chat_id=7001, chat_type="private", sender=mia, message_id=n, text=text)
            )
            return " ".join(r.text for r in turn.replies)

        for n, text in enumerate(
            [
                "I really love spicy ramen on Fridays.",
                "My sister Jane lives in Lisbon now.",
                "I work at the bakery on Main Street.",
                "I am training for the Porto marathon.",
            ],
            start=1,
        ):
            await dm(n, text)
        # formation through the queue: an outbox request, its arq job, a burst worker
        request, _ = await MongoOutbox(services.mongo.db).request(
            "7001", RequestKind.FORM, services.clock.now()
        )
        assert await queue.enqueue_form(request.id)
        assert await drain(services, redis) == [("form_thread", "complete")]
        # the reply path: a question whose retrieval runs and finds what was formed
        assert "ramen" in await dm(5, "What food do I love?")
        # admin jobs through a real arq worker (no worker alive: the client runs one)
        stats = await admin.wait(await admin.enqueue("stats"), give_up_after=30)
        assert stats.success and stats.ran_here
        bad = await admin.wait(await admin.enqueue("re-embed", 0, None), give_up_after=30)
        assert not bad.success, "batch size 0 fails"

        http = await client_for(make_health_app(lambda: services, lambda: redis.client, m))
        text = await (await http.get("/metrics")).text()
    finally:
        set_metrics(None)
        await admin.close()
        await queue.close()
        await drop_test_database(services.mongo.client, world.mongodb_database)
        await services.aclose()

    scraped: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            scraped[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value

    def got(name: str, **labels: str) -> float:
        return scraped.get((name, tuple(sorted(labels.items()))), 0.0)

    # admin jobs: timed, counted by outcome, failures counted
    assert got("alfred_job_seconds_count", job="admin_stats") == 1
    assert got("alfred_jobs_total", job="admin_stats", outcome="ok") == 1
    assert got("alfred_job_seconds_count", job="admin_re_embed") == 1
    assert got("alfred_job_failures_total", job="admin_re_embed") == 1
    assert got("alfred_job_failures_total", job="admin_stats") == 0
    # the formation job and the formation it ran
    assert got("alfred_jobs_total", job="form_thread", outcome="ok") == 1
    assert got("alfred_formations_total", outcome="formed") == 1
    assert got("alfred_formation_messages_total") >= 4
    assert got("alfred_formation_facts_total", action="added") >= 1
    # the reply's retrieval: searched, found, timed
    assert got("alfred_retrieval_requests_total") >= 1
    assert got("alfred_retrieval_hits_total") >= 1
    assert got("alfred_retrieval_seconds_count") == got("alfred_retrieval_requests_total")
    assert 'alfred_up{component="database"} 1.0' in text


# --- endpoints ---------------------------------------------------------------------------


async def test_metrics_answer_while_the_database_is_down(client_for: Any) -> None:
    m = AlfredMetrics()
    m.record_retrieval(RetrievalResult(retrieved=False))
    services = _Services(_Mongo(_DownDb()))
    client = await client_for(make_health_app(lambda: services, lambda: None, m))
    response = await client.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    text = await response.text()
    assert 'alfred_up{component="database"} 0.0' in text
    assert 'alfred_up{component="queue"} 0.0' in text  # not started
    assert "alfred_retrieval_skipped_total 1.0" in text
    assert "secret" not in text


async def test_metrics_with_mongo_on_a_closed_port_answer_within_the_ping_limit(
    client_for: Any,
) -> None:
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{_closed_port()}", serverSelectionTimeoutMS=20_000
    )
    try:
        services = _Services(_Mongo(mongo["alfred"]))
        m = AlfredMetrics()
        client = await client_for(make_health_app(lambda: services, lambda: None, m))
        started = time.perf_counter()
        response = await client.get("/metrics")
        elapsed = time.perf_counter() - started
        assert response.status == 200
        assert 'alfred_up{component="database"} 0.0' in await response.text()
        assert elapsed < 3.0  # bounded by the 1 s ping limit, not the driver's 20 s

        ready = await client.get("/readyz")
        assert ready.status == 503
        assert (await ready.json())["checks"]["database"] == "timeout"
    finally:
        await mongo.close()


async def test_readyz_names_the_database_when_it_is_down(
    client_for: Any, redis: RedisHandle
) -> None:
    services = _Services(_Mongo(_DownDb()))
    m = AlfredMetrics()
    client = await client_for(make_health_app(lambda: services, lambda: redis.client, m))
    response = await client.get("/readyz")
    assert response.status == 503
    body = await response.json()
    assert body["ready"] is False
    assert body["down"] == ["database"]
    assert body["checks"] == {
        "database": "error: ServerSelectionTimeoutError",
        "queue": "ok",
    }
    assert "secret" not in json.dumps(body)  # driver messages are never echoed
    # Liveness is not readiness: the process is alive.
    assert (await client.get("/healthz")).status == 200


async def test_ready_and_up_with_the_real_servers(
    client_for: Any, mongo: MongoHandle, redis: RedisHandle
) -> None:
    m = AlfredMetrics()
    queue = "alfred:test-metrics:queue"
    await redis.client.delete(queue)
    await redis.client.zadd(queue, {"job-1": 1.0, "job-2": 2.0, "job-3": 3.0})
    m.set_queue_depth_source(lambda: arq_queue_depth(redis.client, queue))
    services = _Services(_Mongo(mongo.db))
    try:
        client = await client_for(make_health_app(lambda: services, lambda: redis.client, m))
        ready = await client.get("/readyz")
        assert ready.status == 200
        assert await ready.json() == {"ready": True, "checks": {"database": "ok", "queue": "ok"}}
        text = await (await client.get("/metrics")).text()
        assert 'alfred_up{component="database"} 1.0' in text
        assert 'alfred_up{component="queue"} 1.0' in text
        assert "alfred_queue_depth 3.0" in text
    finally:
        await redis.client.delete(queue)


async def test_healthz_is_200_with_nothing_started(client_for: Any) -> None:
    client = await client_for(make_health_app(lambda: None, lambda: None, AlfredMetrics()))
    response = await client.get("/healthz")
    assert response.status == 200
    assert await response.json() == {"ok": True}
    ready = await client.get("/readyz")
    assert ready.status == 503
    assert (await ready.json())["checks"] == {"database": "not started", "queue": "not started"}


async def test_add_health_routes_keeps_an_existing_healthz(client_for: Any) -> None:
    async def own(_: web.Request) -> web.Response:
        return web.json_response({"own": True})

    app = web.Application()
    app.router.add_get("/healthz", own)
    add_health_routes(app, lambda: None, lambda: None, AlfredMetrics())
    client = await client_for(app)
    assert await (await client.get("/healthz")).json() == {"own": True}
    assert (await client.get("/metrics")).status == 200
    assert (await client.get("/readyz")).status == 503


async def test_an_internet_facing_app_can_leave_metrics_out(client_for: Any) -> None:
    app = web.Application()
    add_health_routes(app, lambda: None, lambda: None, AlfredMetrics(), include_metrics=False)
    client = await client_for(app)
    assert (await client.get("/metrics")).status == 404
    assert (await client.get("/readyz")).status == 503
    assert (await client.get("/healthz")).status == 200


# --- structured logs ---------------------------------------------------------------------


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """Alfred's JSON handler on the root logger, writing to a buffer; restored after."""
    root = logging.getLogger()
    level = root.level
    buffer = io.StringIO()
    handler = configure_logging("DEBUG", stream=buffer)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        handler.close()
        root.setLevel(level)


def _lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]


def test_logs_are_json_lines_and_carry_no_content_at_info(json_log: io.StringIO) -> None:
    log = logging.getLogger("alfred.test")
    secret = "I am secretly vegetarian"
    log.info(
        "formed thread %s: %d facts, said %s",
        "t-1",
        3,
        sensitive(secret),
        extra={
            "thread_id": "t-1",
            "facts": 3,
            "text": secret,
            "content": secret,
            "query": secret,
            "fact_content": secret,
            "detail": {"message_text": secret, "count": 2},
        },
    )
    try:
        raise ValueError(f"could not parse {secret}")
    except ValueError:
        log.exception("formation failed for thread %s", "t-1")
    log.debug("debug shows content %s", sensitive(secret), extra={"text": secret})

    info, error, debug = _lines(json_log)
    for entry in (info, error):
        assert secret not in json.dumps(entry)
    assert info["level"] == "INFO"
    assert info["logger"] == "alfred.test"
    assert info["message"] == f"formed thread t-1: 3 facts, said {REDACTED}"
    assert info["thread_id"] == "t-1" and info["facts"] == 3
    for key in ("text", "content", "query", "fact_content"):
        assert info[key] == REDACTED
    assert info["detail"] == {"message_text": REDACTED, "count": 2}
    assert "time" in info and info["time"].endswith("+00:00")
    # Exceptions at INFO+: the type and the stack, never the message.
    assert error["level"] == "ERROR"
    assert error["exception"]["type"] == "ValueError"
    assert any("test_metrics_health.py" in frame for frame in error["exception"]["stack"])
    # DEBUG is for a developer's machine: content is shown there.
    assert debug["level"] == "DEBUG"
    assert debug["text"] == secret and secret in debug["message"]


def test_extra_fields_and_dict_messages_cannot_overwrite_the_core_fields(
    json_log: io.StringIO,
) -> None:
    """An extra named like a core field, a dict logged as the message and ``stack_info``
    would otherwise let a record lie about its level or logger, or carry source lines."""
    log = logging.getLogger("alfred.test.core")
    log.warning("cleanup %s", "t-1", extra={"level": "DEBUG", "logger": "x", "time": 0, "n": 2})
    log.warning("with a stack", stack_info=True)
    log.info({"logger": "x", "level": "DEBUG", "text": "a secret", "count": 3})

    extra, stacked, as_dict = _lines(json_log)
    assert (extra["level"], extra["logger"], extra["message"]) == (
        "WARNING",
        "alfred.test.core",
        "cleanup t-1",
    )
    assert extra["time"].endswith("+00:00") and extra["n"] == 2
    assert "stack_info" not in stacked and stacked["message"] == "with a stack"
    assert (as_dict["level"], as_dict["logger"]) == ("INFO", "alfred.test.core")
    assert as_dict["text"] == REDACTED and as_dict["count"] == 3


def test_configure_logging_is_idempotent_and_captures_own_handlers(
    json_log: io.StringIO,
) -> None:
    root = logging.getLogger()
    before = len(root.handlers)
    plain = io.StringIO()
    arq_like = logging.getLogger("alfred.test.arq-like")
    arq_like.addHandler(logging.StreamHandler(plain))
    arq_like.propagate = False
    again = configure_logging("DEBUG", stream=json_log, capture=["alfred.test.arq-like"])
    try:
        assert len(root.handlers) == before
        arq_like.info("job %s done", "j-1")
        assert plain.getvalue() == ""
        assert _lines(json_log)[-1]["message"] == "job j-1 done"
    finally:
        root.removeHandler(again)
        again.close()


async def test_model_output_never_reaches_info_logs(json_log: io.StringIO) -> None:
    """The OpenAI adapter, through the real ``openai`` client against the local fake: two
    invalid answers that repeat a user's secret (one not JSON, one a refusal). The
    secret is in no INFO+ record and not in the error callers log at WARNING; it is in
    the DEBUG record and in the corrective retry shown to the model."""
    from openai import AsyncOpenAI

    from bot.bench.fake_openai import FakeOpenAI, completion
    from integrations.openai_llm import OpenAILLM, RetryPolicy
    from memory.llm import LLMOutputError
    from memory.models import Role, ThreadKind
    from memory.prompts.common import JournalLine, Person
    from memory.prompts.extract_facts import EXTRACT_FACTS, ExtractFactsContext

    secret = "Alice hides the spare key under the blue flowerpot"
    refusal = completion(None)
    refusal["choices"][0]["message"]["refusal"] = f"I won't repeat that {secret}."
    context = ExtractFactsContext(
        thread_kind=ThreadKind.DM,
        thread_owner_id="u1",
        people=[Person(id="u1", name="Alice")],
        now=datetime(2025, 3, 1, 12, 0, tzinfo=UTC),
        lines=[
            JournalLine(
                message_id="m1", role=Role.USER, speaker_id="u1", speaker_name="Alice", text=secret
            )
        ],
    )
    async with FakeOpenAI() as fake:
        fake.enqueue(f"Noted: {secret}. Nothing else to add.", refusal)
        client = AsyncOpenAI(api_key="test-key", base_url=fake.base_url)
        llm = OpenAILLM(
            client,
            fast_model="fast",
            slow_model="slow",
            chat_model="chat",
            timeout=2.0,
            retry=RetryPolicy(attempts=2, base_delay=0.005, max_delay=0.01),
        )
        try:
            with pytest.raises(LLMOutputError) as raised:
                await llm.run(EXTRACT_FACTS, context)
        finally:
            await client.close()
        corrective = fake.chat_requests[1].messages[-1]["content"]

    assert secret not in str(raised.value)
    assert str(raised.value) == (
        "the model's answer to extract_facts was not valid: the model refused"
    )
    assert secret[:40] in corrective, "the model is still shown what was wrong"
    entries = [e for e in _lines(json_log) if e["logger"] == "integrations.openai_llm"]
    above_debug = [e for e in entries if e["level"] != "DEBUG"]
    assert [e["message"] for e in above_debug] == [
        "llm extract_facts answer 1 invalid: no JSON object in the answer",
        "llm extract_facts answer 2 invalid: the model refused",
    ]
    for entry in _lines(json_log):
        if entry["level"] != "DEBUG":
            assert "flowerpot" not in json.dumps(entry), entry
    debug = [e["message"] for e in entries if e["level"] == "DEBUG"]
    assert len(debug) == 2 and all("flowerpot" in m for m in debug)


async def test_a_standalone_worker_logs_json_without_a_metrics_port(
    settings: Any, redis: RedisHandle
) -> None:
    """``arq jobs.worker.WorkerSettings`` runs ``startup`` with ``serve_health``: its logs
    are JSON lines through the redacting filter even with ``METRICS_PORT=0``."""
    from integrations.redis.queue import JobQueue
    from jobs.config import queue_name
    from jobs.tasks import shutdown, startup
    from runtime.container import build_services
    from tests.helpers.fakes import HashEmbedder

    assert settings.metrics_port == 0
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    for earlier in handlers:  # so that only startup can have put ours there
        if earlier.get_name() == "alfred-json":
            root.removeHandler(earlier)
    arq_log = logging.getLogger("arq")
    arq_handlers, arq_propagate = list(arq_log.handlers), arq_log.propagate
    plain = io.StringIO()
    arq_log.addHandler(logging.StreamHandler(plain))  # as arq's CLI does before startup
    arq_log.propagate = False
    services = await build_services(settings, embedder=HashEmbedder())
    queue = JobQueue.from_url(redis.url, queue_name(settings))
    ctx: dict[str, Any] = {
        "settings": settings,
        "serve_health": True,
        "services": services,
        "redis_handle": redis,
        "redis": queue.pool,
        "recover_on_startup": False,
    }
    try:
        await startup(ctx)
        ours = [h for h in root.handlers if h.get_name() == "alfred-json"]
        assert len(ours) == 1 and isinstance(ours[0], logging.StreamHandler)
        buffer = io.StringIO()
        ours[0].setStream(buffer)
        arq_log.info("job %s done", "j-1")
        logging.getLogger("jobs.tasks").info("formed %s", sensitive("a secret"))
        first, second = _lines(buffer)
        assert first["logger"] == "arq" and first["message"] == "job j-1 done"
        assert second["message"] == f"formed {REDACTED}"
        assert plain.getvalue() == "", "arq's own plain handler was replaced"
        assert "_alfred_health_runner" not in ctx, "no metrics server on port 0"
    finally:
        await shutdown(ctx)
        await queue.close()
        await services.aclose()
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)
        arq_log.handlers[:] = arq_handlers
        arq_log.propagate = arq_propagate
