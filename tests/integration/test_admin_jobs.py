"""Admin jobs end to end: the real arq worker path, the embedded MongoDB and Redis.

Every job is queued on the test database's own arq queue and run by a real arq
``Worker`` (``AdminClient.wait`` runs it in-process when no worker is alive, as
``alfred admin`` does; one test uses ``drain``, one a live in-process worker). The
world: Alice and Bob in the "Family" circle, Alice and Carol in "Work", Dave alone in
"Chess"; facts, reflections, clarifications and messages in every partition shape.
The model is the offline provider and vectors are ``HashEmbedder``'s (fast, local).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from integrations.mongo.admin import JOB_RUNS
from integrations.mongo.connection import MongoHandle
from integrations.mongo.lists import MongoListStore
from integrations.redis.connection import RedisHandle
from integrations.redis.progress import read_progress
from integrations.redis.queue import JobQueue
from jobs.admin.names import ADMIN_STATS, COMMANDS
from jobs.admin_client import AdminClient, JobOutcome
from jobs.config import JobsConfig, queue_name
from jobs.inprocess import drain, start_inprocess_worker
from memory.clock import ManualClock
from memory.constants import FACTS
from memory.facts import FactWriter
from memory.ids import new_id
from memory.job_ports import JobState
from memory.lists import ListItem, SharedList, item_key
from memory.models import (
    Clarification,
    Partition,
    Provenance,
    Reflection,
    ReflectionScope,
    Thread,
    ThreadKind,
    Viewer,
)
from memory.privacy import is_visible
from migrations import MigrationContext, migrate
from runtime.bundle import Services
from runtime.container import build_services
from runtime.jobs import admin_context, progress_key
from runtime.settings import Settings
from services.admin.export import EXPORT_FORMAT, EXPORT_VERSION, ExportDocument
from services.admin.purge import memory_operations
from tests.conftest import make_settings
from tests.helpers.cleanup import drop_test_database
from tests.helpers.fake_mem0 import FakeMem0
from tests.helpers.fakes import HashEmbedder
from tests.helpers.journal import message

NOW = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]
ALICE, BOB, CAROL, DAVE = "1", "2", "3", "4"
FAM, WORK, CHESS = "-100", "-200", "-300"
MEM0_KEY = "m0-admin-key"


@dataclass(frozen=True)
class SeedFact:
    content: str
    partition: Partition
    speaker: str
    current: bool = True


SEED_FACTS = [
    SeedFact("Alice secretly plans a surprise party for Bob", Partition.dm(ALICE), ALICE),
    SeedFact("Alice drives a blue Fiat", Partition.dm(ALICE), ALICE, current=False),
    SeedFact("Bob is quietly job hunting at Initech", Partition.dm(BOB), BOB),
    SeedFact("Bob loves spicy ramen", Partition.member(FAM, BOB), BOB),
    SeedFact("Alice is allergic to peanuts", Partition.member(FAM, ALICE), ALICE),
    SeedFact("The family is going to Lisbon in May", Partition.circle(FAM), ALICE),
    SeedFact("We adopted a cat named Miso", Partition.circle(FAM), BOB),
    SeedFact("The work offsite is in Porto", Partition.circle(WORK), CAROL),
    SeedFact("Carol thinks the Monday meeting is pointless", Partition.dm(CAROL), CAROL),
    SeedFact("The chess club meets on Thursdays", Partition.circle(CHESS), DAVE),
]
SEED_REFLECTIONS = [
    ("Alice prefers short answers", ReflectionScope.USER, Partition.dm(ALICE), None),
    ("Alice wants reminders in the morning", ReflectionScope.USER, Partition.dm(ALICE), None),
    ("Bob wants replies in Spanish", ReflectionScope.USER, Partition.dm(BOB), None),
    ("The family plans a summer trip", ReflectionScope.CIRCLE, Partition.circle(FAM), None),
    ("Bob tracks his running times", ReflectionScope.USER, Partition.member(FAM, BOB), None),
    ("Family talked about dinner", ReflectionScope.SESSION, Partition.circle(FAM), "s-fam"),
    ("The team prefers async updates", ReflectionScope.CIRCLE, Partition.circle(WORK), None),
]
SEED_QUESTIONS = [
    (ALICE, "Is the Lisbon trip still in May?"),
    (BOB, "Is Miso still your cat, Bob?"),
]
#: Words that only Bob's memories (his DM, his group memories, what only he stated and
#: what was derived from it) contain: after purging Bob, none may be left anywhere.
BOB_ONLY = ["Initech", "ramen", "Spanish", "running times", "Miso", "job hunting"]
#: What Alice may never see: other members' DM and group memories, other circles.
HIDDEN_FROM_ALICE = [
    "Initech",
    "ramen",
    "Monday meeting",
    "chess",
    "Spanish",
    "running times",
    "Miso still your cat",
]


def alice_dm_viewer() -> Viewer:
    thread = Thread(id=ALICE, kind=ThreadKind.DM, user_id=ALICE)
    return Viewer(user_id=ALICE, thread=thread, circle_ids=frozenset({FAM, WORK}))


@dataclass
class Env:
    """One test's database, services, client and seeded world."""

    settings: Settings
    services: Services
    redis: RedisHandle
    client: AdminClient
    clock: ManualClock

    async def run(self, command: str, *args: Any) -> JobOutcome:
        """Queue ``alfred admin <command> args`` and wait for it (run in-process)."""
        job_id = await self.client.enqueue(command, *args)
        outcome = await self.client.wait(job_id, give_up_after=30)
        assert outcome.success, outcome.error
        return outcome

    async def all_text(self) -> str:
        """Every document of every collection, as one string (to search for leftovers)."""
        db = self.services.mongo.db
        chunks = []
        for name in await db.list_collection_names():
            async for doc in db[name].find({}, {"embedding": 0}):
                chunks.append(json.dumps(doc, default=str))
        return "\n".join(chunks)


async def seed(services: Services, clock: ManualClock) -> None:
    d = services.directory
    for tid, name in ((1, "Alice"), (2, "Bob"), (3, "Carol"), (4, "Dave")):
        await d.upsert_user(tid, name, name.lower(), NOW)
        await d.dm_thread(str(tid), tid, NOW)
    for chat, title, members in (
        (FAM, "Family", [ALICE, BOB]),
        (WORK, "Work", [ALICE, CAROL]),
        (CHESS, "Chess", [DAVE]),
    ):
        circle = await d.upsert_circle(int(chat), title, NOW)
        for member in members:
            await d.add_member(circle.id, member)
    for f in SEED_FACTS:
        fact, _ = await services.writer.add(
            f.content, f.partition, provenance=Provenance(speaker_id=f.speaker)
        )
        if not f.current:
            await services.facts.invalidate(fact.id, at=NOW, reason="changed")
    for content, scope, partition, session in SEED_REFLECTIONS:
        await services.notes.add_reflection(
            Reflection(
                id=new_id(),
                content=content,
                scope=scope,
                partition=partition,
                session_id=session,
                created_at=NOW,
            )
        )
    for user, question in SEED_QUESTIONS:
        await services.notes.add_clarification(
            Clarification(
                id=new_id(),
                user_id=user,
                partition=Partition.circle(FAM),
                question=question,
                created_at=NOW,
            )
        )
    fam = await d.thread(FAM)
    assert fam is not None
    lines = [
        (Thread(id=ALICE, kind=ThreadKind.DM, user_id=ALICE), ALICE, "I plan the surprise party"),
        (Thread(id=BOB, kind=ThreadKind.DM, user_id=BOB), BOB, "I am job hunting at Initech"),
        (fam, ALICE, "Lisbon in May!"),
        (fam, BOB, "We adopted Miso"),
    ]
    for i, (thread, speaker, text) in enumerate(lines):
        when = NOW + timedelta(seconds=i)
        assert await services.journal.append(message(thread, speaker, text, when))


async def open_env(settings: Settings, redis: RedisHandle, **overrides: Any) -> Env:
    test_settings = make_settings(
        settings.alfred_data_dir, mongodb_database=f"admin_{uuid.uuid4().hex[:10]}", **overrides
    )
    clock = ManualClock(NOW)
    services = await build_services(test_settings, clock=clock, embedder=HashEmbedder())
    await migrate(
        MigrationContext(db=services.mongo.db, atlas_search=False, embedding_dims=64, log=print)
    )
    await seed(services, clock)

    async def lend() -> Services:
        return services

    client = AdminClient(test_settings, redis, services=lend, close_services=False)
    return Env(test_settings, services, redis, client, clock)


async def close_env(env: Env) -> None:
    await env.client.close()
    name = queue_name(env.settings)
    await env.redis.client.delete(name)
    await drop_test_database(env.services.mongo.client, env.settings.mongodb_database)
    await env.services.aclose()


@pytest.fixture
async def env(settings: Settings, mongo: MongoHandle, redis: RedisHandle) -> AsyncIterator[Env]:
    world = await open_env(settings, redis)
    yield world
    await close_env(world)


# --- the queue: registration, progress, a live worker --------------------------------


async def test_admin_jobs_are_registered_and_run_by_arq_tooling(env: Env) -> None:
    from jobs.worker import functions

    names = {f.name for f in functions()}
    assert set(COMMANDS.values()) <= names, "every admin job is in WorkerSettings"

    queue = JobQueue.from_url(env.redis.url, queue_name(env.settings))
    try:
        # what `arq`'s tooling does: enqueue by function name, any job id
        assert await queue.enqueue(ADMIN_STATS, job_id="by-hand")
        assert await drain(env.services, env.redis) == [(ADMIN_STATS, "complete")]
    finally:
        await queue.close()
    progress = await read_progress(env.redis.client, progress_key(env.settings, "by-hand"))
    assert progress is not None and progress.phase == "done"
    assert progress.total == progress.done > 0
    ttl = await env.redis.client.ttl(progress_key(env.settings, "by-hand"))
    assert 0 < ttl <= 24 * 3600, "progress hashes expire"


async def test_a_live_worker_runs_the_job_and_the_client_only_waits(env: Env) -> None:
    worker = await start_inprocess_worker(env.services, env.redis, crons=False, poll_delay=0.05)
    try:
        for _ in range(100):
            if await env.client.worker_alive():
                break
            await asyncio.sleep(0.05)
        assert await env.client.worker_alive()
        seen: list[str] = []
        job_id = await env.client.enqueue("stats")
        outcome = await env.client.wait(
            job_id, on_progress=lambda _p, state: seen.append(state.value), give_up_after=20
        )
    finally:
        await worker.stop()
    assert outcome.success and not outcome.ran_here, "the worker ran it, not the client"
    assert outcome.result["queue"]["worker_alive"] is True
    assert "complete" in seen


async def test_unknown_job_id_is_a_clear_error(env: Env) -> None:
    from jobs.admin_client import UnknownJob

    with pytest.raises(UnknownJob, match="no admin job nope"):
        await env.client.wait("nope", give_up_after=5)


async def test_a_failing_job_fails_once_and_is_recorded(env: Env) -> None:
    job_id = await env.client.enqueue("re-embed", 0, None)  # batch size 0: a bad call
    outcome = await env.client.wait(job_id, give_up_after=20)
    assert not outcome.success and outcome.error is not None and "ValueError" in outcome.error
    record = await env.services.mongo.db[JOB_RUNS].find_one({"_id": "admin_re_embed"})
    assert record is not None and record["last_status"] == "failed"
    assert record["last_error"] == "ValueError" and record["runs"] == 1, "not retried"


# --- consolidate ------------------------------------------------------------------------


async def test_consolidate_a_user_a_circle_a_thread_and_everything(env: Env) -> None:
    notes = env.services.notes

    async def buffered() -> set[tuple[str, str]]:
        return {(s.value, p.key()) for s, p, _, _ in await notes.buffered_groups()}

    assert len(await buffered()) == 6
    alice = (await env.run("consolidate", "user", ALICE)).result
    assert alice["known"] and (alice["buffers"], alice["consolidated"], alice["absorbed"]) == (
        1,
        1,
        2,
    )
    assert ("user", Partition.dm(ALICE).key()) not in await buffered()
    blob = await notes.blob(ReflectionScope.USER, Partition.dm(ALICE))
    assert blob is not None and len(blob.reflection_ids) == 2

    fam = (await env.run("consolidate", "circle", FAM)).result
    assert (fam["buffers"], fam["consolidated"]) == (3, 3), "circle, Bob's, the session"
    assert fam["by_scope"] == {"circle": 1, "user": 1, "session": 1}
    bob_dm = (await env.run("consolidate", "thread", BOB)).result
    assert (bob_dm["buffers"], bob_dm["consolidated"]) == (1, 1)
    assert await buffered() == {("circle", Partition.circle(WORK).key())}
    rest = (await env.run("consolidate", "all", None)).result
    assert rest["consolidated"] == 1 and await buffered() == set()
    again = (await env.run("consolidate", "all", None)).result
    assert again["buffers"] == 0, "nothing buffered: nothing to do"

    unknown = (await env.run("consolidate", "user", "999")).result
    assert unknown["known"] is False and unknown["buffers"] == 0


# --- re-embed -----------------------------------------------------------------------------


async def test_re_embed_converts_old_vectors_and_resumes_where_it_stopped(env: Env) -> None:
    old = FactWriter(env.services.facts, HashEmbedder(32, "old-model-32"), env.clock)
    for i in range(5):
        await old.add(f"old fact number {i} about gardens", Partition.dm(CAROL))
    db = env.services.mongo.db
    assert await db[FACTS].count_documents({"embedding_model": "old-model-32"}) == 5

    first = (await env.run("re-embed", 2, 1)).result  # a run "killed" after one batch
    assert (first["re_embedded"], first["left"], first["complete"]) == (2, 3, False)
    assert first["model"] == "hash-bow-64" and first["dims"] == 64
    assert await db[FACTS].count_documents({"embedding_model": "old-model-32"}) == 3

    second = (await env.run("re-embed", 2, None)).result  # restarted: continues
    assert (second["stale_before"], second["re_embedded"], second["batches"]) == (3, 3, 2)
    assert second["complete"] and second["left"] == 0
    third = (await env.run("re-embed", 64, None)).result
    assert third["re_embedded"] == 0 and third["complete"]

    async for doc in db[FACTS].find({}):
        assert doc["embedding_model"] == "hash-bow-64" and doc["embedding_dims"] == 64
        assert len(doc["embedding"].as_vector().data) == 64
    runs = await db[JOB_RUNS].find_one({"_id": "admin_re_embed"})
    assert runs is not None and runs["last_status"] == "complete" and runs["runs"] == 3
    assert runs["last_summary"] == {"model": "hash-bow-64", "re_embedded": 0, "left": 0}


class GatedEmbedder(HashEmbedder):
    """The services' embedder (same model, same vectors) whose ``block_at``-th call waits
    until ``release`` is set: a batch in flight when the job is cancelled. Every batch
    it is given is kept, to count what was embedded twice."""

    def __init__(self, block_at: int) -> None:
        super().__init__()
        self.block_at = block_at
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.batches: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> Any:
        self.batches.append(list(texts))
        if len(self.batches) == self.block_at:
            self.entered.set()
            await self.release.wait()
        return await super().embed(texts)


async def test_re_embed_cancelled_mid_batch_resumes_and_embeds_each_fact_once_more_at_most(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = FactWriter(env.services.facts, HashEmbedder(32, "old-model-32"), env.clock)
    contents = [f"old fact {word} about the garden shed" for word in "abcdefg"]
    for content in contents:
        await old.add(content, Partition.dm(CAROL))
    db = env.services.mongo.db
    gate = GatedEmbedder(block_at=2)  # the second batch hangs
    monkeypatch.setattr(env.services, "embedder", gate)

    job_id = await env.client.enqueue("re-embed", 2, None)
    waiting = asyncio.create_task(env.client.wait(job_id, give_up_after=30))
    await asyncio.wait_for(gate.entered.wait(), timeout=30)
    key = progress_key(env.settings, job_id)
    progress = await read_progress(env.redis.client, key)
    assert progress is not None and progress.phase == "re-embedding with hash-bow-64"
    assert (progress.done, progress.total) == (2, 7), "one batch of two stored, of seven"

    waiting.cancel()  # the operator's Ctrl-C: the job runner is cancelled mid-batch
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not gate.release.is_set(), "the batch never finished"
    assert await db[FACTS].count_documents({"embedding_model": "old-model-32"}) == 5
    run = await db[JOB_RUNS].find_one({"_id": "admin_re_embed"})
    assert run is not None and run["last_status"] == "cancelled"
    assert await env.client.state(job_id) is JobState.QUEUED, "arq put the job back"

    gate.block_at = 0  # no more hanging
    outcome = await env.client.wait(job_id, give_up_after=30)  # the same job, run again
    assert outcome.success, outcome.error
    result = outcome.result
    assert (result["stale_before"], result["re_embedded"], result["batches"]) == (5, 5, 3)
    assert result["complete"] and result["left"] == 0
    final = await read_progress(env.redis.client, key)
    assert final is not None and final.phase == "done"
    assert (final.done, final.total) == (5, 5)

    async for doc in db[FACTS].find({}):
        assert doc["embedding_model"] == "hash-bow-64" and doc["embedding_dims"] == 64
    embedded = [text for batch in gate.batches for text in batch]
    interrupted = gate.batches[1]
    assert len(interrupted) == 2 and sorted(set(embedded)) == sorted(contents)
    for content in contents:
        assert embedded.count(content) == (2 if content in interrupted else 1), content
    runs = await db[JOB_RUNS].find_one({"_id": "admin_re_embed"})
    assert runs is not None and runs["last_status"] == "complete" and runs["runs"] == 2


# --- purge --------------------------------------------------------------------------------


async def test_purge_user_erases_everything_of_theirs_and_nothing_else(env: Env) -> None:
    outcome = await env.run("purge-user", BOB)
    result = outcome.result
    assert result["found"] is True and result["left"] == {}
    removed = result["removed"]
    assert removed["memory_facts"] == 3, "his DM, his group memory, the circle fact he stated"
    assert removed["messages"] == 2 and removed["clarifications"] == 1
    assert removed["users"] == 1 and removed["threads"] == 1 and removed["memberships"] == 1
    assert removed["memory_reflections"] >= 2

    text = await env.all_text()
    for word in BOB_ONLY:
        assert word not in text, f"{word!r} survived the purge"
    assert "surprise party" in text and "Lisbon" in text and "Porto" in text, "others intact"
    assert await env.services.directory.user(BOB) is None
    fam = await env.services.directory.circle(FAM)
    assert fam is not None and fam.member_ids == [ALICE]
    record = await env.services.mongo.db[JOB_RUNS].find_one({"_id": "admin_purge_user"})
    assert record is not None and record["last_status"] == "complete"
    assert set(record["last_summary"]) == {"found", "removed"}, "counts, not the user's id"

    again = (await env.run("purge-user", BOB)).result
    assert again == {"user_id": BOB, "found": False, "removed": {}, "left": {}}


async def test_an_interrupted_purge_finishes_when_run_again(env: Env) -> None:
    # The first steps of a purge that died: Bob's facts are gone, nothing else is.
    ops = memory_operations(admin_context(env.services))
    owned = await env.services.facts.owned_by(BOB)
    await ops.erase_facts(BOB, owned, [])
    assert await env.services.directory.user(BOB) is not None

    # ... and it had died inside its last step, after Bob left his circle.
    await env.services.directory.remove_member(FAM, BOB)
    db = env.services.mongo.db
    messages_left = await db["messages"].count_documents({"user_id": BOB})
    assert messages_left == 2

    result = (await env.run("purge-user", BOB)).result
    assert result["found"] is True and result["left"] == {}
    removed = result["removed"]
    assert removed["memory_facts"] == 0, "already gone: not counted again"
    assert removed["memberships"] == 0, "already left: not counted again"
    assert removed["messages"] == messages_left
    assert (removed["users"], removed["threads"], removed["clarifications"]) == (1, 1, 1)
    assert removed["formation_requests"] == 0
    text = await env.all_text()
    for word in BOB_ONLY:
        assert word not in text


async def test_purge_of_an_unknown_user_is_nothing_to_purge(env: Env) -> None:
    before = await env.all_text()
    result = (await env.run("purge-user", "424242")).result
    assert result == {"user_id": "424242", "found": False, "removed": {}, "left": {}}
    after = await env.all_text()
    assert before.count("Alice") == after.count("Alice")


# --- export -------------------------------------------------------------------------------


async def test_export_holds_only_what_the_user_may_see(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="arq")
    outcome = await env.run("export-user", ALICE)
    doc = outcome.result
    assert isinstance(doc, ExportDocument), "arq round-trips the export type"
    assert doc["format"] == EXPORT_FORMAT and doc["version"] == EXPORT_VERSION
    assert doc["user"]["id"] == ALICE and doc["user"]["name"] == "Alice"
    assert {c["id"] for c in doc["user"]["circles"]} == {FAM, WORK}

    viewer = alice_dm_viewer()
    expected = {f.content for f in SEED_FACTS if is_visible(f.partition, viewer)}
    assert {f["content"] for f in doc["facts"]} == expected
    assert {f["content"]: f["current"] for f in doc["facts"]}["Alice drives a blue Fiat"] is False
    for section in ("facts", "reflections", "consolidated", "clarifications"):
        for item in doc[section]:
            assert is_visible(Partition.model_validate(item["partition"]), viewer), item
    assert {r["content"] for r in doc["reflections"]} == {
        c for c, _, p, _ in SEED_REFLECTIONS if is_visible(p, viewer)
    }
    assert [c["question"] for c in doc["clarifications"]] == ["Is the Lisbon trip still in May?"]

    dumped = json.dumps(dict(doc))
    for hidden in HIDDEN_FROM_ALICE:
        assert hidden not in dumped, f"{hidden!r} leaked into Alice's export"
    assert '"embedding"' not in dumped and "mem0_id" not in dumped
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "ExportDocument(user='1', facts=6" in logged, "arq logged counts only"
    assert "surprise party" not in logged, "no memory text in logs"


async def test_export_after_leaving_a_circle_drops_that_circle(env: Env) -> None:
    await env.services.directory.remove_member(WORK, ALICE)
    doc = (await env.run("export-user", ALICE)).result
    assert "Porto" not in json.dumps(dict(doc)), "a member who left sees that circle no more"
    assert {c["id"] for c in doc["user"]["circles"]} == {FAM}


async def test_export_of_an_unknown_user(env: Env) -> None:
    result = (await env.run("export-user", "424242")).result
    assert result == {"user_id": "424242", "found": False}


# --- stats ---------------------------------------------------------------------------------


async def test_stats_counts(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="arq")
    await env.run("re-embed", 64, None)
    waiting = [await env.client.enqueue("consolidate", "all", None) for _ in range(2)]
    result = (await env.run("stats")).result

    n_facts = len(SEED_FACTS)
    assert result["collections"]["memory_facts"] == n_facts
    assert result["collections"]["users"] == 4 and result["collections"]["circles"] == 3
    assert result["collections"]["memory_reflections"] == len(SEED_REFLECTIONS)
    assert result["collections"]["clarifications"] == len(SEED_QUESTIONS)
    assert result["collections"]["messages"] == 4
    assert result["collections"]["threads"] == 4 + 3
    facts = result["facts"]
    assert facts["total"] == n_facts and facts["current"] == n_facts - 1
    assert facts["history"] == 1 and facts["stale_embeddings"] == 0
    assert facts["embedding_model"] == "hash-bow-64"

    def kind(p: Partition) -> str:
        if p.visibility.value == "dm":
            return "dm"
        return "circle" if p.owner_user_id is None else "member"

    by_kind = {
        k: sum(1 for f in SEED_FACTS if kind(f.partition) == k) for k in ("circle", "member", "dm")
    }
    assert result["by_partition_kind"]["memory_facts"] == by_kind
    assert result["by_partition_kind"]["messages"] == {"circle": 0, "member": 2, "dm": 2}
    fam = result["by_circle"][FAM]
    assert fam["members"] == 2 and "title" not in fam
    assert fam["memory_facts"] == sum(1 for f in SEED_FACTS if f.partition.circle_id == FAM)
    assert fam["memory_reflections"] == 3 and fam["messages"] == 2
    assert result["by_circle"][CHESS]["memory_facts"] == 1

    assert result["queue"]["depth"] == len(waiting), "the stats job does not count itself"
    assert result["queue"]["worker_alive"] is False
    assert result["job_runs"]["admin_re_embed"]["last_status"] == "complete"
    assert result["job_runs"]["admin_stats"]["last_status"] == "running", "this very run"
    assert result["mem0"] == "off"
    dumped = json.dumps(result)  # plain JSON as it stands
    # ids only: arq keeps the result in Redis and logs it at INFO
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "admin_stats" in logged, "arq logged the run"
    for title in ("Family", "Work", "Chess"):
        assert title not in dumped, f"group title {title!r} in the stats result"
        assert title not in logged
    for name in ("Alice", "Bob", "Carol", "Dave", "alice"):
        assert name not in dumped


def expected_partitions() -> dict[tuple[str, str | None, str | None], dict[str, int]]:
    """The seeded world's records per partition (visibility, circle id, owner id)."""
    out: dict[tuple[str, str | None, str | None], dict[str, int]] = {}

    def add(p: Partition, collection: str) -> None:
        key = (p.visibility.value, p.circle_id, p.owner_user_id)
        row = out.setdefault(key, {})
        row[collection] = row.get(collection, 0) + 1

    for f in SEED_FACTS:
        add(f.partition, "memory_facts")
    for _, _, p, _ in SEED_REFLECTIONS:
        add(p, "memory_reflections")
    for _ in SEED_QUESTIONS:
        add(Partition.circle(FAM), "clarifications")
    for p in (
        Partition.dm(ALICE),
        Partition.dm(BOB),
        Partition.member(FAM, ALICE),
        Partition.member(FAM, BOB),
    ):
        add(p, "messages")
    return out


async def test_stats_per_partition_ids_only_largest_first_capped(env: Env) -> None:
    expected = expected_partitions()
    full = (await env.run("stats")).result["by_partition"]
    assert full["total"] == len(expected) == full["shown"], "all of them fit under 20"
    rows = full["top"]
    for row in rows:
        key = (row["visibility"], row["circle_id"], row["owner_user_id"])
        counts = {k: v for k, v in row.items() if k.startswith(("memory_", "clar", "mess")) and v}
        assert counts == expected[key], key
        assert row["records"] == sum(expected[key].values())
        assert set(row) == {
            "visibility",
            "circle_id",
            "owner_user_id",
            "records",
            "memory_facts",
            "memory_reflections",
            "memory_consolidated",
            "clarifications",
            "messages",
        }, "ids and counts, nothing else"
    sizes = [row["records"] for row in rows]
    assert sizes == sorted(sizes, reverse=True), "largest first"
    # the Family circle partition: 2 facts, 2 reflections (circle, session), 2 questions
    assert rows[0] == {
        "visibility": "shared",
        "circle_id": FAM,
        "owner_user_id": None,
        "memory_facts": 2,
        "memory_reflections": 2,
        "memory_consolidated": 0,
        "clarifications": 2,
        "messages": 0,
        "records": 6,
    }

    capped = (await env.run("stats", 2)).result["by_partition"]
    assert (capped["total"], capped["shown"]) == (len(expected), 2)
    assert capped["top"] == rows[:2]


# --- mem0 -------------------------------------------------------------------------------------


async def test_reconcile_with_mem0_off_does_nothing(env: Env) -> None:
    result = (await env.run("reconcile-mem0", False)).result
    assert result["enabled"] is False and "mem0 is off" in result["message"]


@pytest.fixture
def fake_mem0() -> Iterator[FakeMem0]:
    with FakeMem0(MEM0_KEY) as server:
        yield server


@pytest.fixture
async def mem0_env(
    settings: Settings, mongo: MongoHandle, redis: RedisHandle, fake_mem0: FakeMem0
) -> AsyncIterator[Env]:
    world = await open_env(
        settings, redis, mem0_mode="cloud", mem0_api_key=MEM0_KEY, mem0_host=fake_mem0.base_url
    )
    yield world
    await close_env(world)


async def test_reconcile_mem0_mirrors_missing_deletes_orphans_and_relinks(
    mem0_env: Env, fake_mem0: FakeMem0
) -> None:
    env, fake = mem0_env, fake_mem0
    s = env.services
    assert s.mirror is not None
    # A copy left behind by a purge that died between the local and the mem0 delete ...
    doomed, _ = await s.writer.add("Temporary note about a dentist", Partition.dm(ALICE))
    await s.mirror.mirror(doomed)
    await s.facts.delete([doomed.id])
    # ... a stray copy no fact points to, and a fact whose copy vanished on mem0's side.
    fake.insert("stray copy of something", user_id=Partition.dm(ALICE).key())
    linked, _ = await s.writer.add("Alice likes green tea", Partition.dm(ALICE))
    await s.mirror.mirror(linked)
    stale = await s.facts.get(linked.id)
    assert stale is not None and stale.mem0_id is not None
    with fake.lock:
        del fake.memories[stale.mem0_id]

    dry = (await env.run("reconcile-mem0", True)).result
    assert dry["dry_run"] and dry["missing"] == len(SEED_FACTS) - 1 and dry["orphans"] == 2
    assert dry["mirrored"] == dry["orphans_deleted"] == dry["relinked"] == 0
    assert len(fake.memories) == 2, "a dry run changes nothing"

    result = (await env.run("reconcile-mem0", False)).result
    assert result["mirrored"] == len(SEED_FACTS) - 1, "every current fact, once"
    assert (result["orphans_deleted"], result["stale_links"], result["relinked"]) == (2, 1, 1)
    assert result["mirror_failed"] == 0 and result["partitions_unlisted"] == 0
    local = {d["mem0_id"] async for d in s.mongo.db[FACTS].find({"current": True})}
    assert None not in local and set(fake.memories) == local, "one copy per current fact"
    assert not any("dentist" in m.memory or "stray" in m.memory for m in fake.memories.values())

    again = (await env.run("reconcile-mem0", False)).result
    assert (again["missing"], again["orphans"], again["stale_links"]) == (0, 0, 0)

    # Purging Bob removes his mem0 copies too (and the circle fact only he stated).
    await env.run("purge-user", BOB)
    texts = " ".join(m.memory for m in fake.memories.values())
    for word in ("Initech", "ramen", "Miso"):
        assert word not in texts
    assert "Lisbon" in texts
    final = (await env.run("reconcile-mem0", False)).result
    assert (final["missing"], final["orphans"]) == (0, 0), "the purge left no orphan"


async def test_a_purge_interrupted_after_its_mem0_step_counts_no_copy_twice(
    mem0_env: Env, fake_mem0: FakeMem0
) -> None:
    env, fake = mem0_env, fake_mem0
    s = env.services
    await env.run("reconcile-mem0", False)  # every current fact has its copy
    assert s.mirror is not None
    owned = await s.facts.owned_by(BOB)
    copies = [f.mem0_id for f in owned if f.mem0_id]
    assert len(copies) == 3 and all(c in fake.memories for c in copies)
    # The first run deleted one copy, then died: the facts still point at all three.
    await s.mirror.forget([f for f in owned if f.mem0_id == copies[0]])
    assert copies[0] not in fake.memories

    result = (await env.run("purge-user", BOB)).result
    assert result["found"] and result["left"] == {}
    assert result["removed"]["mem0_copies"] == 2, "only the copies this run deleted"
    assert "mem0_copies_unverified" not in result["removed"], "the fake lists in full"
    assert not any(c in fake.memories for c in copies)
    assert result["removed"]["memory_facts"] == 3


async def test_purge_with_mem0_down_retries_and_finishes(
    mem0_env: Env, fake_mem0: FakeMem0
) -> None:
    env, fake = mem0_env, fake_mem0
    await env.run("reconcile-mem0", False)  # every fact has its copy

    async def lend() -> Services:
        return env.services

    fast = AdminClient(
        env.settings,
        env.redis,
        services=lend,
        close_services=False,
        config=JobsConfig(retry_base=0.1, retry_max=0.5),
    )
    db = env.services.mongo.db
    try:
        fake.go_down()
        job_id = await fast.enqueue("purge-user", BOB)
        waiting = asyncio.create_task(fast.wait(job_id, give_up_after=30))

        async def retrying() -> bool:
            run = await db[JOB_RUNS].find_one({"_id": "admin_purge_user"})
            return run is not None and run["last_status"] == "retrying"

        for _ in range(200):
            if await retrying():
                break
            await asyncio.sleep(0.05)
        assert await retrying(), "mem0 down: the job backs off and retries"
        # mem0 copies go first, so nothing local was deleted while mem0 was down
        assert await db[FACTS].count_documents({"owner_user_id": BOB}) == 2
        fake.come_back()
        outcome = await waiting
    finally:
        fake.come_back()
        await fast.close()
    assert outcome.success and outcome.result["found"] and outcome.result["left"] == {}
    assert outcome.result["removed"]["mem0_copies"] == 3
    texts = " ".join(m.memory for m in fake.memories.values())
    assert "Initech" not in texts and "ramen" not in texts and "Miso" not in texts


# --- the command line ----------------------------------------------------------------------


def cli_env(env: Env, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ALFRED_DATA_DIR": str(env.settings.data_dir()),  # joins the session's servers
        "MONGODB_DATABASE": env.settings.mongodb_database,
        "PTB_TIMEDELTA": "1",
        "PYTHONPATH": str(ROOT),
    }


def start_cli(
    env: Env, tmp_path: Path, *args: str, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "admin", *args],
        cwd=work,
        env={**cli_env(env, tmp_path), **(extra_env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


async def test_cli_stats_export_and_unknown_users(env: Env, tmp_path: Path) -> None:
    export = tmp_path / "exports" / "alice.json"
    runs = [
        start_cli(env, tmp_path, "stats", "--json"),
        start_cli(env, tmp_path, "export-user", ALICE, "--out", str(export), "--json"),
        start_cli(env, tmp_path, "purge-user", "424242"),
        start_cli(env, tmp_path, "export-user", "424242"),
        start_cli(env, tmp_path, "consolidate", "--user", ALICE, "--circle", FAM),
    ]
    stats, exported, purge, unknown, usage = await asyncio.gather(
        *(asyncio.to_thread(finish, p) for p in runs)
    )

    assert stats.returncode == 0, stats.stderr
    summary = json.loads(stats.stdout.strip().splitlines()[-1])
    assert summary["ok"] and summary["job"] == "stats"
    assert summary["result"]["collections"]["memory_facts"] == len(SEED_FACTS)
    assert summary["result"]["collections"]["users"] == 4

    assert exported.returncode == 0, exported.stderr
    done = json.loads(exported.stdout.strip().splitlines()[-1])
    assert done["ok"] and done["user_id"] == ALICE and done["out"] == str(export)
    assert done["counts"] == {"facts": 6, "reflections": 5, "consolidated": 0, "clarifications": 1}
    assert await env.client.state(done["job_id"]) is JobState.NOT_FOUND, "no export in Redis"
    doc = json.loads(export.read_text(encoding="utf-8"))
    assert doc["format"] == "alfred-export" and doc["version"] == 1
    for hidden in HIDDEN_FROM_ALICE:
        assert hidden not in export.read_text(encoding="utf-8")
    assert stat.S_IMODE(export.stat().st_mode) == 0o600, "an export is personal data"

    assert purge.returncode == 0, purge.stderr
    assert "Nothing to purge" in purge.stdout
    assert unknown.returncode == 1 and "unknown user 424242" in unknown.stderr
    assert unknown.stdout == ""
    assert usage.returncode == 2 and "exactly one of" in usage.stderr


async def cli(env: Env, tmp_path: Path, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(finish, start_cli(env, tmp_path, *args, **kw))


async def test_cli_summaries_of_purge_consolidate_and_re_embed(env: Env, tmp_path: Path) -> None:
    runs = [
        start_cli(env, tmp_path, "purge-user", BOB),
        start_cli(env, tmp_path, "consolidate", "--user", ALICE),
        start_cli(env, tmp_path, "consolidate", "--circle", "-999"),
    ]
    purge, alice, unknown = await asyncio.gather(*(asyncio.to_thread(finish, p) for p in runs))

    assert purge.returncode == 0, purge.stderr
    [line] = purge.stdout.splitlines()
    assert line.startswith(f"Purged user {BOB}: ") and line.endswith(".")
    parts = dict(
        p.rsplit(" ", 1) for p in line.removeprefix(f"Purged user {BOB}: ")[:-1].split(", ")
    )
    assert {k: parts[k] for k in ("memory_facts", "messages", "clarifications")} == {
        "memory_facts": "3",
        "messages": "2",
        "clarifications": "1",
    }
    assert (parts["users"], parts["threads"], parts["memberships"]) == ("1", "1", "1")
    assert all(int(n) > 0 for n in parts.values()), "only what was removed is listed"
    assert await env.services.directory.user(BOB) is None

    assert alice.returncode == 0, alice.stderr
    assert alice.stdout.strip() == (
        f"Consolidated 1 of 1 buffer(s) of user {ALICE} (2 reflection(s) absorbed)."
    )
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert "alfred: Unknown circle -999: nothing consolidated." in unknown.stderr

    # the CLI's own embedder is not the tests' hash embedder: every fact left is stale
    left = await env.services.mongo.db[FACTS].count_documents({})
    assert left == len(SEED_FACTS) - 3
    first = await cli(env, tmp_path, "re-embed", "--batch-size", "3", "--max-batches", "1")
    assert first.returncode == 0, first.stderr
    shape = r"Re-embedded (\d+) fact\(s\) with (\S+) \((\d+) dims\) in (\d+) batch\(es\)\."
    head = re.fullmatch(shape + r" (\d+) left: run it again to continue\.", first.stdout.strip())
    assert head is not None, first.stdout
    assert (head[1], head[4], head[5]) == ("3", "1", str(left - 3))
    rest = await cli(env, tmp_path, "re-embed", "--batch-size", "3")
    assert rest.returncode == 0, rest.stderr
    tail = re.fullmatch(shape, rest.stdout.strip())
    assert tail is not None, rest.stdout
    assert (tail[1], tail[2], tail[3], tail[4]) == (str(left - 3), head[2], head[3], "2")
    models = await env.services.mongo.db[FACTS].distinct("embedding_model")
    assert models == [head[2]], "every fact now carries the CLI's model"


async def test_cli_reconcile_mem0_summaries(
    mem0_env: Env, fake_mem0: FakeMem0, tmp_path: Path
) -> None:
    env, fake = mem0_env, fake_mem0
    fake.insert("stray copy of something", user_id=Partition.dm(ALICE).key())
    mem0 = {"MEM0_MODE": "cloud", "MEM0_API_KEY": MEM0_KEY, "MEM0_HOST": fake.base_url}
    current = len(SEED_FACTS) - 1

    dry = await cli(env, tmp_path, "reconcile-mem0", "--dry-run", extra_env=mem0)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.strip() == (
        f"mem0 (mem0-cloud): {current} fact(s) missing, 0 mirrored; 1 orphaned cop(ies), "
        "0 deleted; 0 stale link(s), 0 relinked (dry run: nothing changed)."
    )
    assert len(fake.memories) == 1

    done = await cli(env, tmp_path, "reconcile-mem0", extra_env=mem0)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"mem0 (mem0-cloud): {current} fact(s) missing, {current} mirrored; "
        "1 orphaned cop(ies), 1 deleted; 0 stale link(s), 0 relinked."
    )
    assert len(fake.memories) == current
    assert not any("stray" in m.memory for m in fake.memories.values())

    off = await cli(env, tmp_path, "reconcile-mem0", extra_env={"MEM0_MODE": "off"})
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip() == (
        "mem0 is off (MEM0_MODE=off, or no MEM0_API_KEY): nothing to reconcile"
    )


async def test_cli_no_wait_then_wait(env: Env, tmp_path: Path) -> None:
    queued = await asyncio.to_thread(
        finish, start_cli(env, tmp_path, "stats", "--no-wait", "--json")
    )
    assert queued.returncode == 0, queued.stderr
    job_id = json.loads(queued.stdout)["job_id"]
    assert job_id.startswith("admin-stats-")
    assert await env.client.state(job_id) is JobState.QUEUED, "queued, not run"

    status = await asyncio.to_thread(finish, start_cli(env, tmp_path, "status", job_id))
    assert status.returncode == 0 and "queued" in status.stdout

    waited = await asyncio.to_thread(finish, start_cli(env, tmp_path, "wait", job_id, "--json"))
    assert waited.returncode == 0, waited.stderr
    result = json.loads(waited.stdout.strip().splitlines()[-1])
    assert result["job_id"] == job_id and result["ok"] and result["job"] == "stats"
    assert await env.client.state(job_id) is JobState.COMPLETE


async def test_a_job_run_here_ends_cleanly_while_its_runner_is_still_closing(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result is in Redis before the runner has closed its arq worker: the client
    must wait for that close, not cancel it and fail (as it once did under load)."""
    from arq.worker import Worker

    close = Worker.close

    async def slow_close(self: Worker) -> None:
        await asyncio.sleep(0.5)
        await close(self)

    monkeypatch.setattr(Worker, "close", slow_close)
    job_id = await env.client.enqueue("stats")
    outcome = await env.client.wait(job_id, give_up_after=30, poll=0.02)
    assert outcome.success and outcome.ran_here


async def test_cli_stats_counts_set_aside_formations_and_retry_formation_releases_them(
    env: Env, tmp_path: Path
) -> None:
    messages = env.services.mongo.db["messages"]
    aside = await messages.update_many(
        {"thread_id": FAM}, {"$set": {"set_aside": True, "formation_failures": 3}}
    )
    assert aside.modified_count == 2

    stats = await cli(env, tmp_path, "stats")
    assert stats.returncode == 0, stats.stderr
    assert "formation: 2 message(s) of 1 thread(s) set aside" in stats.stdout

    other = await cli(env, tmp_path, "retry-formation", "--thread", ALICE)
    assert other.returncode == 0, other.stderr
    assert "Nothing set aside" in other.stdout
    assert await env.services.journal.set_aside_counts() == {FAM: 2}, "another thread's kept"

    done = await cli(env, tmp_path, "retry-formation", "--thread", FAM, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["ok"] and summary["job"] == "retry-formation"
    assert summary["result"]["messages"] == 2 and summary["result"]["thread_ids"] == [FAM]
    assert await env.services.journal.set_aside_counts() == {}
    assert await messages.count_documents({"thread_id": FAM, "formation_failures": 0}) == 2
    (request,) = await env.services.outbox.open_requests()
    assert request.thread_id == FAM, "its formation was requested"


async def test_purge_user_erases_their_lists_and_their_items_on_circle_lists(env: Env) -> None:
    lists = MongoListStore(env.services.mongo.db)

    def item(text: str, who: str) -> ListItem:
        return ListItem(text=text, key=item_key(text), added_by=who, added_at=NOW)

    def new_list(key: str, partition: Partition, thread: str, who: str) -> SharedList:
        return SharedList(
            id=f"{key}-{thread}",
            key=key,
            title=key,
            partition=partition,
            thread_id=thread,
            created_by=who,
            created_at=NOW,
            used_at=NOW,
        )

    private = await lists.create(new_list("gifts", Partition.dm(BOB), "dm", BOB))
    await lists.add_items(private.id, [item("chess clock", BOB)], NOW)
    shared = await lists.create(new_list("shopping", Partition.circle(FAM), "g", BOB))
    await lists.add_items(shared.id, [item("ramen noodles", BOB), item("figs", ALICE)], NOW)

    removed = (await env.run("purge-user", BOB)).result["removed"]

    assert removed["lists"] == 1 and removed["list_items"] == 1
    text = await env.all_text()
    assert "chess clock" not in text and "ramen noodles" not in text
    docs = [d async for d in env.services.mongo.db["lists"].find({})]
    assert [(d["key"], [i["text"] for i in d["items"]], d["created_by"]) for d in docs] == [
        ("shopping", ["figs"], None)
    ]
