"""Formation, consolidation and the always-in-context block on the real database,
with a scripted model so each rule is checked exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from bot.bench.fake_openai import FakeOpenAI, RecordedRequest, completion, json_task_handler
from integrations.mongo.directory import MongoDirectory
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.journal import MongoJournal
from integrations.mongo.notes import MongoNotes
from integrations.openai_llm import OpenAILLM, RetryPolicy
from memory.always import AlwaysInContext
from memory.clock import ManualClock
from memory.consolidation import ConsolidationService
from memory.facts import FactWriter
from memory.formation import FormationFailed, FormationService
from memory.llm import LLMOutputError, LLMTruncated
from memory.models import Partition, Reflection, ReflectionScope, Thread
from memory.prompts.decide_updates import DecideUpdatesContext
from tests.helpers.fakes import HashEmbedder, ScriptedLLM
from tests.helpers.journal import conversation

NOW = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)


class World:
    def __init__(self, db: AsyncDatabase[dict[str, Any]], llm: ScriptedLLM | OpenAILLM) -> None:
        self.clock = ManualClock(NOW)
        self.directory = MongoDirectory(db)
        self.journal = MongoJournal(db)
        self.facts = MongoFactStore(db)
        self.notes = MongoNotes(db)
        self.embedder = HashEmbedder()
        self.writer = FactWriter(self.facts, self.embedder, self.clock)
        self.llm = llm
        self.formation = FormationService(
            journal=self.journal,
            directory=self.directory,
            facts=self.facts,
            writer=self.writer,
            notes=self.notes,
            llm=llm,
            embedder=self.embedder,
            clock=self.clock,
        )
        self.consolidation = ConsolidationService(self.notes, llm, self.clock)

    async def setup(self) -> tuple[Thread, Thread]:
        await self.directory.upsert_user(1, "Alice", "alice", NOW)
        await self.directory.upsert_user(2, "Bob", "bob", NOW)
        circle = await self.directory.upsert_circle(-100, "Fam", NOW)
        await self.directory.add_member(circle.id, "1")
        await self.directory.add_member(circle.id, "2")
        group = await self.directory.thread(circle.id)
        assert group is not None
        return group, await self.directory.dm_thread("1", 1, NOW)

    async def journal_lines(self, thread: Thread, lines: list[tuple[str | None, str]]) -> None:
        for m in conversation(thread, lines, NOW):
            await self.journal.append(m)


GROUP_TALK = [
    ("1", "I'm allergic to peanuts"),
    ("2", "We're going to Lisbon in May"),
    ("2", "I love ramen"),
    (None, "Noted!"),
    ("1", "Sounds great"),
]


def fact(
    content: str, speaker: str | None = None, about: str = "speaker", **kw: Any
) -> dict[str, Any]:
    return {"content": content, "about": about, "speaker_id": speaker, **kw}


async def test_group_facts_get_partitions_from_thread_and_speaker(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    llm = ScriptedLLM(
        extract_facts={
            "facts": [
                fact("Alice is allergic to peanuts", "1", importance=9),
                fact("The family is going to Lisbon in May", "2", about="circle"),
                fact("Bob loves ramen", "mallory"),  # unknown speaker: from its message
            ]
        }
    )
    w = World(migrated_db, llm)
    group, _ = await w.setup()
    await w.journal_lines(group, GROUP_TALK)
    # the third fact names a speaker who is not here; its source message is Bob's
    unformed = await w.journal.unformed(group.id)
    llm.scripts["extract_facts"]["facts"][2]["source_message_ids"] = [unformed[2].id]  # type: ignore[index]
    report = await w.formation.form_thread(group.id)
    assert report.facts_added == 3
    assert report.llm_calls == 2, "no candidates: the decision step is skipped"
    stored = {f.content: f.partition for f in await w.facts.all_for_audit()}
    assert stored["Alice is allergic to peanuts"] == Partition.member(group.circle_id or "", "1")
    assert stored["The family is going to Lisbon in May"] == Partition.circle("-100")
    assert stored["Bob loves ramen"] == Partition.member("-100", "2")
    assert await w.journal.unformed(group.id) == []


async def test_alfreds_own_words_are_not_stored_again_unless_confirmed(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """Alfred quoting a circle memory in a DM must not copy it into the DM partition
    (the copy would outlive the member's leaving the circle, or the original's being
    forgotten); a user who confirms what Alfred said makes it theirs as usual."""
    llm = ScriptedLLM(
        extract_facts={
            "facts": [
                fact("The family goes to Lisbon in May", "1"),  # Alfred's words only
                fact("Alice's gate code is 4412", "1"),  # Alfred asked, Alice confirmed
                fact("Alice likes figs", "1"),  # Alice's own line
            ]
        }
    )
    w = World(migrated_db, llm)
    _, dm = await w.setup()
    await w.journal_lines(
        dm,
        [
            ("1", "what are our plans?"),
            (None, "I remember the family goes to Lisbon in May."),
            (None, "Is your gate code still 4412?"),
            ("1", "yes, it is"),
            ("1", "I like figs"),
            ("1", "thanks"),
        ],
    )
    ids = [m.id for m in await w.journal.unformed(dm.id)]
    facts = llm.scripts["extract_facts"]["facts"]  # type: ignore[index]
    facts[0]["source_message_ids"] = [ids[1]]
    facts[1]["source_message_ids"] = [ids[2], ids[3]]
    facts[2]["source_message_ids"] = [ids[4]]
    report = await w.formation.form_thread(dm.id)
    stored = sorted(f.content for f in await w.facts.all_for_audit())
    assert stored == ["Alice likes figs", "Alice's gate code is 4412"]
    assert report.facts_added == 2


async def test_dm_never_produces_circle_memory(migrated_db: AsyncDatabase[dict[str, Any]]) -> None:
    llm = ScriptedLLM(
        extract_facts={"facts": [fact("We are planning a surprise for Bob", "1", about="circle")]},
        reflect={"reflections": [{"scope": "circle", "content": "A surprise is planned for Bob"}]},
    )
    w = World(migrated_db, llm)
    _, dm = await w.setup()
    await w.journal_lines(dm, [("1", "a"), ("1", "b"), ("1", "c"), ("1", "we plan a surprise")])
    await w.formation.form_thread(dm.id)
    (stored,) = await w.facts.all_for_audit()
    assert stored.partition == Partition.dm("1")
    audit = await w.notes.all_for_audit()
    (reflection,) = audit["reflections"]
    assert reflection.partition == Partition.dm("1") and reflection.scope is ReflectionScope.USER


async def test_too_few_messages_are_left_for_later(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    w = World(migrated_db, ScriptedLLM())
    group, _ = await w.setup()
    await w.journal_lines(group, [("1", "hi"), ("2", "hello"), (None, "Hello!")])
    report = await w.formation.form_thread(group.id)
    assert report.skipped and report.llm_calls == 0
    assert len(await w.journal.unformed(group.id)) == 3


async def test_update_delete_none_and_contradiction(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    llm = ScriptedLLM()
    w = World(migrated_db, llm)
    group, dm = await w.setup()
    bob_p = Partition.member("-100", "2")
    ramen, _ = await w.writer.add("Bob loves ramen noodles", bob_p)
    colour, _ = await w.writer.add("Bob favourite colour is green", bob_p)
    job, _ = await w.writer.add("Bob works at the bakery", bob_p)
    secret, _ = await w.writer.add("Bob favourite colour is a secret", Partition.dm("1"))

    def decide(ctx: DecideUpdatesContext) -> dict[str, Any]:
        by_text = {c.content: c.id for c in ctx.candidates}
        assert secret.id not in by_text.values(), "candidates come from the same partition only"
        return {
            "decisions": [
                {
                    "new_index": 0,
                    "action": "UPDATE",
                    "target_id": by_text["Bob loves ramen noodles"],
                    "content": "Bob loves ramen noodles, especially tonkotsu",
                },
                {
                    "new_index": 1,
                    "action": "UPDATE",
                    "target_id": by_text["Bob favourite colour is green"],
                    "contradiction": True,
                },
                {
                    "new_index": 2,
                    "action": "DELETE",
                    "target_id": by_text["Bob works at the bakery"],
                },
                {"new_index": 3, "action": "DELETE", "target_id": secret.id},  # not shown: ignored
            ]
        }

    llm.scripts["extract_facts"] = {
        "facts": [
            fact("Bob loves ramen noodles tonkotsu", "2"),
            fact("Bob favourite colour is blue", "2"),
            fact("Bob no longer works at the bakery", "2"),
            fact("Bob favourite colour is a secret", "2"),
        ]
    }
    llm.scripts["decide_updates"] = decide
    await w.journal_lines(group, [("2", "m1"), ("2", "m2"), ("2", "m3"), ("2", "m4")])
    report = await w.formation.form_thread(group.id)
    assert report.llm_calls == 3
    updated = await w.facts.get(ramen.id)
    assert updated is not None and updated.content.endswith("tonkotsu")
    assert updated.history[0].content == "Bob loves ramen noodles" and updated.version == 2
    old_colour = await w.facts.get(colour.id)
    assert old_colour is not None and old_colour.invalid_at == NOW, "contradiction keeps history"
    old_job = await w.facts.get(job.id)
    assert old_job is not None and not old_job.current
    still_secret = await w.facts.get(secret.id)
    assert still_secret is not None and still_secret.current, "another partition was untouched"
    bob_view = await w.directory.viewer("2", await w.directory.dm_thread("2", 2, NOW))
    question = await w.notes.pending_clarification(bob_view)
    assert question is not None and "Bob favourite colour is green" in question.question
    alice_view = await w.directory.viewer("1", dm)
    assert await w.notes.pending_clarification(alice_view) is None


async def test_a_malformed_later_step_is_skipped_and_logged_not_lost(
    migrated_db: AsyncDatabase[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLLM(
        extract_facts={"facts": [fact("Alice is allergic to peanuts", "1")]},
        reflect=LLMOutputError("reflect", "not JSON"),
    )
    w = World(migrated_db, llm)
    group, _ = await w.setup()
    await w.journal_lines(group, GROUP_TALK)
    report = await w.formation.form_thread(group.id)
    assert report.failed_steps == ["reflect"]
    assert report.facts_added == 1, "the facts in hand are kept"
    assert await w.journal.unformed(group.id) == []
    assert "reflections skipped" in caplog.text and report.batch_id in caplog.text


async def test_an_invalid_extraction_leaves_the_batch_unformed_and_fails_the_job(
    migrated_db: AsyncDatabase[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLLM(extract_facts=LLMTruncated("extract_facts", 4000))
    w = World(migrated_db, llm)
    group, _ = await w.setup()
    await w.journal_lines(group, GROUP_TALK)

    with pytest.raises(FormationFailed) as raised:
        await w.formation.form_thread(group.id)

    report = raised.value.report
    assert report.batch_failed and report.failed_steps == ["extract_facts"]
    assert [name for name, _ in llm.seen] == ["extract_facts"], "no reflection on nothing"
    assert len(await w.journal.unformed(group.id)) == len(GROUP_TALK), "not marked formed"
    docs = await migrated_db["messages"].find({"thread_id": group.id}).to_list()
    assert {d["formation_failures"] for d in docs} == {1}
    assert not any(d.get("set_aside") for d in docs)
    assert "stays unformed" in caplog.text and report.batch_id in caplog.text


async def test_three_failed_jobs_set_the_batch_aside_and_later_messages_still_form(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    bad = LLMOutputError("extract_facts", "not JSON")
    later = {"facts": [fact("Bob is training for a marathon", "2")]}
    retried = {"facts": [fact("Alice is allergic to peanuts", "1")]}
    llm = ScriptedLLM(extract_facts=[bad, bad, bad, later, retried])
    w = World(migrated_db, llm)
    group, _ = await w.setup()
    await w.journal_lines(group, GROUP_TALK)

    for _ in range(2):
        with pytest.raises(FormationFailed):
            await w.formation.form_thread(group.id)
    third = await w.formation.form_thread(group.id)
    assert third.set_aside == len(GROUP_TALK) and third.facts_added == 0
    assert await w.journal.unformed(group.id) == [], "the set-aside batch no longer blocks"
    assert await w.journal.set_aside_counts() == {group.id: len(GROUP_TALK)}
    assert await migrated_db["messages"].count_documents({"formed": True}) == 0

    talk = [("2", "I'm training for a marathon"), ("1", "Nice"), ("2", "October"), ("1", "Go!")]
    for m in conversation(group, talk, NOW + timedelta(minutes=5)):
        await w.journal.append(m)
    formed = await w.formation.form_thread(group.id)
    assert formed.messages == 4 and formed.facts_added == 1
    assert await w.journal.set_aside_counts() == {group.id: len(GROUP_TALK)}, "still aside"

    assert await w.journal.release_set_aside(group.id) == {group.id: len(GROUP_TALK)}
    again = await w.formation.form_thread(group.id)
    assert again.messages == len(GROUP_TALK) and again.facts_added == 1
    assert await w.journal.set_aside_counts() == {}
    assert await migrated_db["messages"].count_documents({"formed": False}) == 0


async def test_garbage_from_the_model_server_leaves_the_batch_for_a_later_formation(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    """Through the real adapter and the local fake OpenAI server: prose instead of JSON,
    twice (the answer and its corrective retry), fails the batch; once the server
    answers properly the same batch forms."""
    async with FakeOpenAI() as server:
        llm = OpenAILLM.for_endpoint(
            api_key="k",
            base_url=server.base_url,
            fast_model="fast",
            slow_model="slow",
            chat_model="chat",
            timeout=5.0,
            retry=RetryPolicy(attempts=1),
        )
        try:
            w = World(migrated_db, llm)
            group, _ = await w.setup()
            await w.journal_lines(group, GROUP_TALK)
            server.set_handler(lambda r: completion("Sure! Alice likes peanuts, I think."))

            with pytest.raises(FormationFailed):
                await w.formation.form_thread(group.id)
            assert len(server.chat_requests) == 2, "the answer and one corrective retry"
            assert len(await w.journal.unformed(group.id)) == len(GROUP_TALK)
            assert await w.facts.current_in_partition(Partition.member(group.id, "1")) == []

            server.set_handler(json_task_handler())
            report = await w.formation.form_thread(group.id)
            assert report.facts_added == 1 and report.failed_steps == []
            assert await w.journal.unformed(group.id) == []
            sent: list[RecordedRequest] = server.chat_requests
            assert sent[-1].json["response_format"]["type"] == "json_schema"
        finally:
            await llm.aclose()


async def test_rerun_after_crash_duplicates_nothing(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    answers = {
        "extract_facts": lambda ctx: {"facts": [fact("Alice is allergic to peanuts", "1")]},
        "reflect": lambda ctx: {
            "reflections": [
                {"scope": "user", "content": "Alice wants short answers", "about_user_id": "1"}
            ]
        },
    }
    llm = ScriptedLLM(**answers)
    w = World(migrated_db, llm)
    group, _ = await w.setup()
    await w.journal_lines(group, GROUP_TALK)
    await w.formation.form_thread(group.id)
    # simulate a crash before the batch was marked formed: same batch again
    await migrated_db["messages"].update_many({}, {"$set": {"formed": False}})
    llm.scripts["decide_updates"] = lambda ctx: {"decisions": [{"new_index": 0, "action": "NONE"}]}
    await w.formation.form_thread(group.id)
    assert len(await w.facts.all_for_audit()) == 1
    assert len((await w.notes.all_for_audit())["reflections"]) == 1


async def test_consolidation_per_partition_and_absorb_after_save(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    seen: list[list[str]] = []

    def merge(ctx: Any) -> dict[str, Any]:
        seen.append(list(ctx.reflections))
        return {"content": " ".join(ctx.reflections)}

    w = World(migrated_db, ScriptedLLM(consolidate=merge))
    await w.setup()
    alice, bob = Partition.dm("1"), Partition.member("-100", "2")
    for i in range(4):
        for owner, p in (("alice", alice), ("bob", bob)):
            await w.notes.add_reflection(
                Reflection(
                    id=f"{owner}{i}",
                    content=f"{owner} note {i}",
                    scope=ReflectionScope.USER,
                    partition=p,
                    created_at=NOW,
                )
            )
    reports = await w.consolidation.consolidate_due()
    assert len(reports) == 2
    assert sorted(seen) == [
        [f"alice note {i}" for i in range(4)],
        [f"bob note {i}" for i in range(4)],
    ]
    blob = await w.notes.blob(ReflectionScope.USER, alice)
    assert blob is not None and "bob" not in blob.content
    assert await w.notes.unabsorbed(ReflectionScope.USER, alice) == []


async def test_failed_consolidation_keeps_reflections_buffered(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    w = World(migrated_db, ScriptedLLM(consolidate=LLMOutputError("consolidate", "garbage")))
    await w.setup()
    p = Partition.dm("1")
    for i in range(4):
        await w.notes.add_reflection(
            Reflection(
                id=f"r{i}",
                content=f"note {i}",
                scope=ReflectionScope.USER,
                partition=p,
                created_at=NOW,
            )
        )
    assert await w.consolidation.consolidate_due() == []
    assert len(await w.notes.unabsorbed(ReflectionScope.USER, p)) == 4
    assert await w.notes.blob(ReflectionScope.USER, p) is None


async def test_always_in_context_is_private_and_cached(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    w = World(migrated_db, ScriptedLLM())
    group, dm = await w.setup()
    always = AlwaysInContext(w.notes)
    await w.notes.add_reflection(
        Reflection(
            id="a",
            content="Alice wants short answers",
            scope=ReflectionScope.USER,
            partition=Partition.member("-100", "1"),
            created_at=NOW,
        )
    )
    await w.notes.add_reflection(
        Reflection(
            id="b",
            content="Alice is planning Bob's party",
            scope=ReflectionScope.USER,
            partition=Partition.dm("1"),
            created_at=NOW,
        )
    )
    names = {"1": "Alice", "2": "Bob"}.__getitem__
    bob_in_group = await w.directory.viewer("2", group)
    text = await always.block(bob_in_group, None, names)
    assert "[Alice] Alice wants short answers" in text and "party" not in text
    builds = always.builds
    assert await always.block(bob_in_group, None, names) == text
    assert always.builds == builds, "unchanged notes are served from the cache"
    alice_dm = await w.directory.viewer("1", dm)
    own = await always.block(alice_dm, None, names)
    assert "party" in own and "short answers" in own
    await w.notes.add_reflection(
        Reflection(
            id="c",
            content="The family loves board games",
            scope=ReflectionScope.CIRCLE,
            partition=Partition.circle("-100"),
            created_at=NOW,
        )
    )
    assert "board games" in await always.block(bob_in_group, None, names)


async def test_conflicts_off_applies_the_newest_without_asking(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    from memory.flags import MemoryFlags

    llm = ScriptedLLM()
    w = World(migrated_db, llm)
    w.formation.flags = MemoryFlags(conflicts=False)
    group, _ = await w.setup()
    bob_p = Partition.member("-100", "2")
    colour, _ = await w.writer.add("Bob favourite colour is green", bob_p)
    llm.scripts["extract_facts"] = {"facts": [fact("Bob favourite colour is blue", "2")]}
    llm.scripts["decide_updates"] = lambda ctx: {
        "decisions": [
            {"new_index": 0, "action": "UPDATE", "target_id": colour.id, "contradiction": True}
        ]
    }
    await w.journal_lines(group, [("2", "m1"), ("2", "m2"), ("2", "m3"), ("2", "m4")])
    report = await w.formation.form_thread(group.id)
    assert report.facts_invalidated == 1 and report.clarifications == 0
    assert (await w.notes.all_for_audit())["clarifications"] == []


async def test_extraction_off_leaves_messages_for_later(
    migrated_db: AsyncDatabase[dict[str, Any]],
) -> None:
    from memory.flags import MemoryFlags

    w = World(migrated_db, ScriptedLLM())
    w.formation.flags = MemoryFlags(extraction=False)
    group, _ = await w.setup()
    await w.journal_lines(group, GROUP_TALK)
    report = await w.formation.form_thread(group.id)
    assert report.skipped and report.llm_calls == 0
    assert len(await w.journal.unformed(group.id)) == len(GROUP_TALK)
