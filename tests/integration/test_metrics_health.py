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
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp.test_utils as aiotest
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families
from pymongo import AsyncMongoClient
from pymongo.errors import ServerSelectionTimeoutError

from integrations.health import add_health_routes, make_health_app
from integrations.logging_setup import REDACTED, configure_logging, sensitive
from integrations.metrics import (
    AlfredMetrics,
    ExportingSemanticMetrics,
    arq_queue_depth,
    watch_services,
)
from integrations.mongo.connection import MongoHandle
from integrations.redis_connection import RedisHandle
from memory.formation import FormationReport
from memory.llm import Usage
from memory.models import Category, Partition
from memory.retrieval import Candidate, RetrievalResult, ScoredFact
from memory.semantic import SemanticMetrics

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
    """Just enough of :class:`integrations.container.Services` for the health checks."""

    mongo: _Mongo


class _DownDb:
    async def command(self, name: str) -> Any:
        raise ServerSelectionTimeoutError("no servers: mongodb://user:secret@db:27017")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def client_for() -> AsyncIterator[Any]:
    """Start a real server for an app; every client is closed at the end."""
    clients: list[aiotest.TestClient[Any, Any]] = []

    async def start(app: web.Application) -> aiotest.TestClient[Any, Any]:
        client: aiotest.TestClient[Any, Any] = aiotest.TestClient(aiotest.TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()


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

    @m.instrument_job("stats")
    async def stats() -> int:
        return 3

    assert await stats() == 3
    assert value(m, "alfred_jobs_total", job="consolidate", outcome="ok") == 1
    assert value(m, "alfred_jobs_total", job="consolidate", outcome="failed") == 1
    assert value(m, "alfred_job_failures_total", job="consolidate") == 1
    assert value(m, "alfred_jobs_total", job="form_thread", outcome="retry") == 1
    assert value(m, "alfred_job_failures_total", job="form_thread") == 0
    assert value(m, "alfred_job_seconds_count", job="consolidate") == 2
    assert value(m, "alfred_jobs_total", job="stats", outcome="ok") == 1


async def test_registries_are_isolated() -> None:
    a, b = AlfredMetrics(), AlfredMetrics()
    a.record_retrieval(RetrievalResult(retrieved=False))
    assert value(a, "alfred_retrieval_skipped_total") == 1
    assert value(b, "alfred_retrieval_skipped_total") == 0


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
