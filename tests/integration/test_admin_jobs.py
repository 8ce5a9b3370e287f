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
import stat
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from integrations.container import Services, build_services
from integrations.mongo.admin import JOB_RUNS
from integrations.mongo.connection import MongoHandle
from integrations.mongo.migrator import MigrationContext, migrate
from integrations.redis_connection import RedisHandle
from integrations.settings import Settings
from jobs.admin.common import AdminContext
from jobs.admin.export import EXPORT_FORMAT, EXPORT_VERSION, ExportDocument
from jobs.admin.names import ADMIN_STATS, COMMANDS
from jobs.admin.progress import progress_key, read_progress
from jobs.admin.purge import memory_operations
from jobs.admin.runner import AdminClient, JobOutcome
from jobs.config import JobsConfig, queue_name
from jobs.inprocess import drain, start_inprocess_worker
from jobs.queue import JobQueue, JobState
from memory.clock import ManualClock
from memory.constants import FACTS
from memory.facts import FactWriter
from memory.ids import new_id
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
from tests.conftest import make_settings
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
    await env.services.mongo.client.drop_database(env.settings.mongodb_database)
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
    from jobs.admin.runner import UnknownJob

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
    ops = memory_operations(AdminContext.of(env.services))
    owned = await env.services.facts.owned_by(BOB)
    await ops.erase_facts(BOB, owned, [])
    assert await env.services.directory.user(BOB) is not None

    result = (await env.run("purge-user", BOB)).result
    assert result["found"] is True and result["left"] == {}
    assert result["removed"]["memory_facts"] == 0, "already gone"
    assert result["removed"]["messages"] >= 1 and result["removed"]["users"] == 1
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


async def test_stats_counts(env: Env) -> None:
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
    assert fam["title"] == "Family" and fam["members"] == 2
    assert fam["memory_facts"] == sum(1 for f in SEED_FACTS if f.partition.circle_id == FAM)
    assert fam["memory_reflections"] == 3 and fam["messages"] == 2
    assert result["by_circle"][CHESS]["memory_facts"] == 1

    assert result["queue"]["depth"] == len(waiting), "the stats job does not count itself"
    assert result["queue"]["worker_alive"] is False
    assert result["job_runs"]["admin_re_embed"]["last_status"] == "complete"
    assert result["job_runs"]["admin_stats"]["last_status"] == "running", "this very run"
    assert result["mem0"] == "off"
    json.dumps(result)  # plain JSON as it stands


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


def start_cli(env: Env, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "admin", *args],
        cwd=work,
        env=cli_env(env, tmp_path),
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
