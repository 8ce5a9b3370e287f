"""The hot-path memory operations (remember, correct, forget, erase, clarifications) on
the real embedded database, with the deterministic offline model and a hash embedder.

The forget tests scan every collection of the database, every string of every
document, for the forgotten words: "after it, the text is nowhere in the databases"
(DESIGN.md §3) is checked literally, not through the stores' own read paths.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.directory import MongoDirectory
from integrations.mongo.facts import MongoFactStore
from integrations.mongo.journal import MongoJournal
from integrations.mongo.notes import MongoNotes
from integrations.offline_llm import OfflineLLM
from memory.clock import ManualClock
from memory.constants import (
    CLARIFICATIONS,
    CONSOLIDATED,
    FACTS,
    MESSAGES,
    REFLECTIONS,
)
from memory.facts import FactWriter
from memory.ids import new_id
from memory.models import (
    Category,
    Clarification,
    Consolidated,
    Fact,
    Message,
    Partition,
    Reflection,
    ReflectionScope,
    Role,
    Thread,
    Viewer,
)
from memory.operations import (
    ALREADY_KNEW,
    CONFIRM_REMEMBER,
    FORGET_WHICH,
    FORGET_WHICH_REDACTED,
    FORGOTTEN,
    KEPT_ALL,
    NOTHING_TO_FORGET,
    MemoryOperations,
    OperationResult,
    choice_answer,
    forgotten_text,
)
from memory.prompts.common import Person
from memory.rules.intents import CorrectionIntent, ForgetIntent, RememberIntent, detect_intent
from runtime.bundle import Services
from runtime.container import build_assistant
from runtime.settings import Settings
from services.messages import Incoming, Sender
from tests.helpers.fakes import HashEmbedder
from tests.helpers.services import migrated_services

Db = AsyncDatabase[dict[str, Any]]
NOW = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
CIRCLE = "-100"
ALICE = Person(id="1", name="Alice")
BOB = Person(id="2", name="Bob")


class World:
    """The stores the bot assembles, on one fresh database, with Alice and Bob in a circle."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.clock = ManualClock(NOW)
        self.directory = MongoDirectory(db)
        self.journal = MongoJournal(db)
        self.facts = MongoFactStore(db)
        self.notes = MongoNotes(db)
        self.embedder = HashEmbedder()
        self.writer = FactWriter(self.facts, self.embedder, self.clock)
        self.ops = MemoryOperations(
            facts=self.facts,
            writer=self.writer,
            notes=self.notes,
            journal=self.journal,
            llm=OfflineLLM(),
            embedder=self.embedder,
            clock=self.clock,
        )
        self._seq = 0

    async def setup(self) -> None:
        await self.directory.upsert_user(1, "Alice", "alice", NOW)
        await self.directory.upsert_user(2, "Bob", "bob", NOW)
        circle = await self.directory.upsert_circle(int(CIRCLE), "Fam", NOW)
        await self.directory.add_member(circle.id, ALICE.id)
        await self.directory.add_member(circle.id, BOB.id)
        group = await self.directory.thread(circle.id)
        assert group is not None
        self.group = group
        self.alice_dm = await self.directory.dm_thread(ALICE.id, 1, NOW)
        self.bob_dm = await self.directory.dm_thread(BOB.id, 2, NOW)

    async def viewer(self, person: Person, thread: Thread) -> Viewer:
        return await self.directory.viewer(person.id, thread)

    # --- journaling, as the assistant does it -------------------------------------------

    async def say(self, thread: Thread, person: Person, text: str) -> str:
        """Journal a person's message; returns its id."""
        self._seq += 1
        self.clock.advance(timedelta(seconds=1))
        message_id = f"{thread.id}:{self._seq}"
        await self.journal.append(
            Message(
                id=message_id,
                thread_id=thread.id,
                partition=thread.partition_for(person.id),
                role=Role.USER,
                user_id=person.id,
                text=text,
                created_at=self.clock.now(),
            )
        )
        return message_id

    async def reply(self, thread: Thread, person: Person, text: str) -> None:
        """Journal Alfred's reply to ``person`` (no user id, the person's partition)."""
        self._seq += 1
        await self.journal.append(
            Message(
                id=f"{thread.id}:a:{self._seq}",
                thread_id=thread.id,
                partition=thread.partition_for(person.id),
                role=Role.AGENT,
                user_id=None,
                text=text,
                created_at=self.clock.now(),
            )
        )

    # --- the conversational operations -------------------------------------------------

    async def remember(self, thread: Thread, person: Person, text: str) -> OperationResult:
        message_id = await self.say(thread, person, text)
        intent = detect_intent(text)
        assert isinstance(intent, RememberIntent), intent
        result = await self.ops.remember(thread, person, intent.payload, message_id)
        await self.reply(thread, person, result.text)
        return result

    async def correct(self, thread: Thread, person: Person, text: str) -> OperationResult:
        message_id = await self.say(thread, person, text)
        intent = detect_intent(text)
        assert isinstance(intent, CorrectionIntent), intent
        viewer = await self.viewer(person, thread)
        result = await self.ops.correct(
            viewer, person, intent.statement, intent.negated, message_id
        )
        await self.reply(thread, person, result.text)
        return result

    async def forget(self, thread: Thread, person: Person, text: str) -> OperationResult:
        intent = detect_intent(text)
        assert isinstance(intent, ForgetIntent) and intent.target, intent
        # the assistant never journals what is being forgotten
        await self.say(thread, person, "[a request to forget something]")
        return await self.ops.forget(await self.viewer(person, thread), intent.target)

    # --- direct writes for notes --------------------------------------------------------

    async def reflection(
        self, content: str, partition: Partition, scope: ReflectionScope = ReflectionScope.USER
    ) -> Reflection:
        item = Reflection(
            id=new_id(), content=content, scope=scope, partition=partition, created_at=NOW
        )
        assert await self.notes.add_reflection(item)
        return item

    async def blob(
        self,
        partition: Partition,
        reflections: list[Reflection],
        scope: ReflectionScope = ReflectionScope.USER,
    ) -> Consolidated:
        blob = await self.notes.save_blob(
            Consolidated(
                id=new_id(),
                scope=scope,
                partition=partition,
                content=" ".join(r.content for r in reflections),
                word_limit=400,
                reflection_ids=[r.id for r in reflections],
                last_consolidated_at=NOW,
            )
        )
        await self.notes.mark_absorbed([r.id for r in reflections], blob.id)
        return blob

    async def current(self, partition: Partition) -> list[str]:
        return sorted(f.content for f in await self.facts.current_in_partition(partition))


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a document: values and keys, recursively."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


async def traces(db: Db, *words: str) -> list[tuple[str, str]]:
    """(collection, string) for every string anywhere in the database containing a word."""
    folded = [w.casefold() for w in words]
    found = []
    for name in sorted(await db.list_collection_names()):
        async for doc in db[name].find({}):
            for text in _strings(doc):
                if any(w in text.casefold() for w in folded):
                    found.append((name, text))
    return found


def collections_of(found: list[tuple[str, str]]) -> set[str]:
    return {name for name, _ in found}


@pytest.fixture
async def world(migrated_db: Db) -> World:
    w = World(migrated_db)
    await w.setup()
    return w


# --- remember --------------------------------------------------------------------------


async def test_remember_in_a_dm_stays_in_the_dm_even_for_we(world: World) -> None:
    w = world
    result = await w.remember(w.alice_dm, ALICE, "remember that we are going to Lisbon in May")
    assert result.text == CONFIRM_REMEMBER == "Got it, I'll remember that."
    (fact,) = await w.facts.all_for_audit()
    assert fact.partition == Partition.dm(ALICE.id), "a DM never makes a circle-level memory"
    assert fact.content == "Alice and others are going to Lisbon in May"
    assert fact.provenance.source == "explicit"
    assert fact.provenance.speaker_id == ALICE.id
    assert fact.provenance.message_ids == [f"{w.alice_dm.id}:1"]
    assert fact.importance == 7, "an explicit request is at least importance 7"
    assert fact.embedding_model == w.embedder.model_name and fact.embedding_dims == 64
    assert [f.id for f in result.facts] == [fact.id]

    again = await w.remember(w.alice_dm, ALICE, "remember that we are going to Lisbon in May")
    assert again.text == ALREADY_KNEW
    assert again.text.startswith("I already knew that")
    assert [f.id for f in again.facts] == [fact.id]
    assert len(await w.facts.all_for_audit()) == 1

    bob_group = await w.viewer(BOB, w.group)
    assert await w.facts.list_visible(bob_group) == []


async def test_a_replayed_remember_confirms_what_its_failed_first_try_stored(
    world: World,
) -> None:
    """The first try stored the fact, then failed before its turn was done (the database
    went away): the replay of the same message finds the fact it stored. The person
    asked once and was told "kept, will answer": the answer is "Got it", not "I already
    knew that"; the same words in a new message are "already known" as before."""
    w = world
    said = "remember that the boat key hangs by the back door"
    message_id = await w.say(w.alice_dm, ALICE, said)
    intent = detect_intent(said)
    assert isinstance(intent, RememberIntent)
    first = await w.ops.remember(w.alice_dm, ALICE, intent.payload, message_id)
    replay = await w.ops.remember(w.alice_dm, ALICE, intent.payload, message_id)
    assert first.text == replay.text == CONFIRM_REMEMBER
    assert [f.id for f in replay.facts] == [f.id for f in first.facts]
    assert len(await w.facts.all_for_audit()) == 1
    assert (await w.remember(w.alice_dm, ALICE, said)).text == ALREADY_KNEW


async def test_remember_in_the_group_is_the_members_or_the_circles(world: World) -> None:
    w = world
    mine = await w.remember(w.group, ALICE, "remember that I love Thai food")
    ours = await w.remember(w.group, ALICE, "remember that our dog is called Rex")
    assert mine.text == ours.text == CONFIRM_REMEMBER
    assert await w.current(Partition.member(CIRCLE, ALICE.id)) == ["Alice loves Thai food"]
    assert await w.current(Partition.circle(CIRCLE)) == ["The group members' dog is called Rex"]
    (rex,) = ours.facts
    assert rex.partition.owner_user_id is None and rex.provenance.speaker_id == ALICE.id
    assert rex.category is Category.RELATIONSHIP

    # Bob sees both in the group; in his DM only the circle-level one (DESIGN.md §3).
    bob_group = await w.viewer(BOB, w.group)
    bob_dm = await w.viewer(BOB, w.bob_dm)
    assert sorted(f.content for f in await w.facts.list_visible(bob_group)) == [
        "Alice loves Thai food",
        "The group members' dog is called Rex",
    ]
    assert [f.content for f in await w.facts.list_visible(bob_dm)] == [
        "The group members' dog is called Rex"
    ]

    # the same words from Bob are his own memory, not a duplicate of Alice's
    bobs = await w.remember(w.group, BOB, "remember that I love Thai food")
    assert bobs.text == CONFIRM_REMEMBER
    assert await w.current(Partition.member(CIRCLE, BOB.id)) == ["Bob loves Thai food"]
    assert (await w.remember(w.group, ALICE, "remember that I love Thai food")).text == (
        ALREADY_KNEW
    )


async def test_words_kept_as_said_are_the_circles_when_they_say_we(world: World) -> None:
    """A statement no rule reads is kept whole (first person put in the third, never a
    name prefix); "we …" in the group is the circle's, the same words in a DM stay the
    speaker's, and "I …" stays the speaker's anywhere."""
    w = world
    said = "we always buy marzipan for Christmas"
    assert (await w.remember(w.group, ALICE, f"remember that {said}")).text == CONFIRM_REMEMBER
    assert await w.current(Partition.circle(CIRCLE)) == [
        "The group members always buy marzipan for Christmas"
    ]
    await w.remember(w.alice_dm, ALICE, f"remember that {said}")
    assert await w.current(Partition.dm(ALICE.id)) == [
        "Alice and others always buy marzipan for Christmas"
    ]
    await w.remember(w.group, BOB, "remember that usually the bins go out at dawn")
    assert await w.current(Partition.member(CIRCLE, BOB.id)) == ["Usually the bins go out at dawn"]
    # Bob's DM: the circle's and his own group memory, never Alice's DM copy
    bob_dm = await w.viewer(BOB, w.bob_dm)
    visible = await w.facts.list_visible(bob_dm)
    assert sorted((f.content, f.partition.owner_user_id) for f in visible) == [
        ("The group members always buy marzipan for Christmas", None),
        ("Usually the bins go out at dawn", BOB.id),
    ]


# --- correct ----------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["group", "dm"])
async def test_correction_replaces_only_the_speakers_fact_here(world: World, where: str) -> None:
    w = world
    here = w.group if where == "group" else w.alice_dm
    elsewhere = w.alice_dm if where == "group" else w.group
    await w.remember(here, ALICE, "remember that I love Thai food")
    await w.remember(elsewhere, ALICE, "remember that I love Thai food")
    await w.remember(w.group, BOB, "remember that I love Thai food")
    mine = here.partition_for(ALICE.id)
    (thai,) = [f for f in await w.facts.all_for_audit() if f.partition == mine]
    w.clock.advance(timedelta(hours=1))
    correction_time = w.clock.now() + timedelta(seconds=1)  # say() ticks one second

    result = await w.correct(
        here, ALICE, "Actually, I don't love Thai food anymore, I love Korean food now"
    )

    assert result.text == "Thanks for the correction — I've updated it: Alice loves Korean food"
    old = await w.facts.get(thai.id)
    assert old is not None, "a corrected fact is kept as history"
    assert old.invalid_at == correction_time and not old.current
    assert await w.current(mine) == ["Alice loves Korean food"]
    (korean,) = result.facts
    assert korean.partition == mine and korean.provenance.source == "correction"
    viewer = await w.viewer(ALICE, here)
    assert [f.content for f in await w.facts.list_visible(viewer) if f.partition == mine] == [
        "Alice loves Korean food"
    ]
    history = await w.facts.list_visible(viewer, include_history=True)
    assert {f.id for f in history if f.partition == mine} == {thai.id, korean.id}

    # another member's fact and Alice's fact in the other partition are untouched
    assert await w.current(Partition.member(CIRCLE, BOB.id)) == ["Bob loves Thai food"]
    assert await w.current(elsewhere.partition_for(ALICE.id)) == ["Alice loves Thai food"]
    assert sum(not f.current for f in await w.facts.all_for_audit()) == 1


async def test_correction_cannot_reach_another_members_fact(world: World) -> None:
    w = world
    await w.remember(w.group, BOB, "remember that I love Thai food")
    result = await w.correct(
        w.group, ALICE, "Actually, I don't love Thai food anymore, I love Korean food now"
    )
    assert result.text == "Thanks, noted: Alice loves Korean food", "nothing of hers to replace"
    assert await w.current(Partition.member(CIRCLE, BOB.id)) == ["Bob loves Thai food"]
    assert await w.current(Partition.member(CIRCLE, ALICE.id)) == ["Alice loves Korean food"]
    assert all(f.current for f in await w.facts.all_for_audit())


# --- forget ------------------------------------------------------------------------------


async def test_forget_cascades_until_the_words_are_nowhere(world: World) -> None:
    w = world
    dm = Partition.dm(ALICE.id)
    # an older version of the plan, contradicted since (kept as history)
    older, _ = await w.writer.add("Alice is planning a surprise party for Bob in April", dm)
    await w.facts.invalidate(older.id, at=NOW, reason="contradicted")
    remembered = await w.remember(
        w.alice_dm, ALICE, "remember that I'm planning a surprise party for Bob's birthday"
    )
    (party,) = remembered.facts
    # an UPDATE keeps the previous wording in the fact's history
    updated = await w.writer.reword(
        party.id, "Alice is planning a surprise party for Bob's birthday at the lake house"
    )
    assert updated is not None and updated.history[0].content == party.content
    # said again in other words, and quoted back by Alfred (journaled as his reply to her)
    await w.say(w.alice_dm, ALICE, "Planning Bob's surprise birthday party this weekend, shh")
    await w.reply(w.alice_dm, ALICE, f"From what I remember:\n- {updated.content}")
    # unrelated memories that must survive
    keep = await w.remember(w.alice_dm, ALICE, "remember that I love Thai food")
    # notes derived from it: two absorbed into a blob with an unrelated one, one buffered
    organising = await w.reflection("Alice is secretly organising Bob's surprise party", dm)
    mornings = await w.reflection("Alice prefers short replies in the morning", dm)
    blob = await w.blob(dm, [organising, mornings])
    nervous = await w.reflection("Alice worries Bob will find out about the surprise party", dm)
    jazz = await w.reflection("Alice listens to jazz while cooking", dm)

    before = await traces(w.db, "surprise", "party")
    assert collections_of(before) == {FACTS, REFLECTIONS, CONSOLIDATED, MESSAGES}

    result = await w.forget(w.alice_dm, ALICE, "forget that I'm planning a surprise party")

    assert result.text == forgotten_text(
        {"facts": 2, "reflections": 2, "consolidated": 1, "messages": 3}
    )
    assert result.removed == {
        "facts": 2,
        "reflections": 2,
        "consolidated": 1,
        "messages": 3,
        "clarifications": 0,
    }
    assert await traces(w.db, "surprise", "party") == []
    assert await traces(w.db, "lake house", "April") == []
    assert await w.facts.get(party.id) is None and await w.facts.get(older.id) is None
    # the blob is gone and its surviving reflection is buffered again, to be re-consolidated
    assert await w.notes.blob(ReflectionScope.USER, dm) is None
    survivors = await w.notes.unabsorbed(ReflectionScope.USER, dm)
    assert {r.id for r in survivors} == {mornings.id, jazz.id}
    assert all(not r.absorbed and r.absorbed_into is None for r in survivors)
    assert blob.id not in {b.id for b in (await w.notes.all_for_audit())["consolidated"]}
    assert nervous.id not in {r.id for r in (await w.notes.all_for_audit())["reflections"]}
    # the rest is untouched
    assert await w.current(dm) == [keep.facts[0].content] == ["Alice loves Thai food"]
    assert {m.text for m in await w.journal.all_for_audit()} == {
        "[a request to forget something]",
        "remember that I love Thai food",
        CONFIRM_REMEMBER,
    }


async def test_forget_in_the_group_and_what_another_member_cannot_forget(world: World) -> None:
    w = world
    await w.remember(w.group, ALICE, "remember that I'm planning a surprise party for Carol")
    await w.remember(w.group, BOB, "remember that I love running marathons")
    alices = Partition.member(CIRCLE, ALICE.id)

    # Bob cannot forget Alice's memory, from the group or from his DM
    for thread in (w.group, w.bob_dm):
        result = await w.forget(thread, BOB, "forget that Alice is planning a surprise party")
        assert result.text == NOTHING_TO_FORGET and result.removed == {}
    assert await w.current(alices) == ["Alice is planning a surprise party for Carol"]
    assert "remember that I'm planning a surprise party for Carol" in {
        m.text for m in await w.journal.all_for_audit()
    }

    # nothing close enough: nothing is deleted
    result = await w.forget(w.group, ALICE, "forget that I like opera")
    assert result.text == NOTHING_TO_FORGET
    assert await w.current(alices) == ["Alice is planning a surprise party for Carol"]

    # Alice can, and only hers goes
    result = await w.forget(w.group, ALICE, "forget that I'm planning a surprise party")
    assert result.text == forgotten_text({"facts": 1, "messages": 1})
    assert await traces(w.db, "surprise", "party") == []
    assert await w.current(alices) == []
    assert await w.current(Partition.member(CIRCLE, BOB.id)) == ["Bob loves running marathons"]
    assert len(await traces(w.db, "marathon")) >= 2  # Bob's fact and his message


# --- forget: which one? -------------------------------------------------------------------

SPARE = "remember that my spare key is under the blue flowerpot"
BIKE = "remember that my bike key is in the kitchen drawer"


def numbered(question: str, word: str) -> str:
    """The number a "which should I forget?" question gives the memory containing ``word``."""
    (line,) = [x for x in question.splitlines() if word in x]
    return line.split(")", 1)[0]


async def test_two_distinct_memories_are_asked_about_and_nothing_is_deleted(world: World) -> None:
    w = world
    await w.remember(w.alice_dm, ALICE, SPARE)
    await w.remember(w.alice_dm, ALICE, BIKE)
    before = sorted(f.id for f in await w.facts.all_for_audit())
    viewer = await w.viewer(ALICE, w.alice_dm)

    asked = await w.forget(w.alice_dm, ALICE, "forget my key")

    assert asked.removed == {} and len(asked.choices) == 2
    lines = asked.text.splitlines()
    assert lines[0] == FORGET_WHICH
    assert [x[:3] for x in lines[1:3]] == ["1) ", "2) "], lines
    assert {"drawer" in lines[1], "drawer" in lines[2]} == {True, False}
    assert {"flowerpot" in lines[1], "flowerpot" in lines[2]} == {True, False}
    assert lines[3].startswith("Reply with the number")
    assert sorted(f.id for f in await w.facts.all_for_audit()) == before, "nothing deleted yet"

    # "cancel" keeps both; something that is not an answer is not one
    kept = await w.ops.forget_chosen(viewer, asked.choices, "cancel")
    assert kept is not None and kept.text == KEPT_ALL and kept.removed == {}
    assert await w.ops.forget_chosen(viewer, asked.choices, "what's for dinner?") is None
    assert await w.ops.forget_chosen(viewer, asked.choices, "3") is None, "not offered"
    assert sorted(f.id for f in await w.facts.all_for_audit()) == before

    # the number of the bike key: only it goes, and all its words with it
    bike = numbered(asked.text, "drawer")
    done = await w.ops.forget_chosen(viewer, asked.choices, f"{bike}.")
    assert (
        done is not None
        and done.text == forgotten_text({"facts": 1, "messages": 1})
        and done.removed["facts"] == 1
    )
    assert await traces(w.db, "drawer", "bike") == []
    (spare,) = await w.current(Partition.dm(ALICE.id))
    assert "flowerpot" in spare
    assert SPARE in {m.text for m in await w.journal.all_for_audit()}


async def test_all_forgets_every_listed_memory_and_its_history(world: World) -> None:
    w = world
    dm = Partition.dm(ALICE.id)
    older, _ = await w.writer.add("Alice's spare key is under the red doormat", dm)
    await w.facts.invalidate(older.id, at=NOW, reason="contradicted")
    await w.remember(w.alice_dm, ALICE, SPARE)
    await w.remember(w.alice_dm, ALICE, BIKE)
    await w.remember(w.alice_dm, ALICE, "remember that I love Thai food")
    asked = await w.forget(w.alice_dm, ALICE, "forget my key")
    assert len(asked.choices) == 2, "the old version is history, not a third memory"
    assert "doormat" not in asked.text
    assert [older.id in group for group in asked.choices].count(True) == 1

    done = await w.ops.forget_chosen(await w.viewer(ALICE, w.alice_dm), asked.choices, "all")
    assert (
        done is not None
        and done.text == forgotten_text({"facts": 3, "messages": 2})
        and done.removed["facts"] == 3
    )
    assert await traces(w.db, "spare key", "bike key", "flowerpot", "drawer", "doormat") == []
    assert await w.current(dm) == ["Alice loves Thai food"]


async def test_a_single_clear_match_is_still_forgotten_at_once(world: World) -> None:
    w = world
    await w.remember(w.alice_dm, ALICE, SPARE)
    await w.remember(w.alice_dm, ALICE, "remember that I love Thai food")
    result = await w.forget(w.alice_dm, ALICE, "forget my spare key")
    assert (
        result.text == forgotten_text({"facts": 1, "messages": 1})
        and result.choices == []
        and result.removed["facts"] == 1
    )
    assert await traces(w.db, "flowerpot") == []


@pytest.mark.parametrize(
    ("text", "picked"),
    [
        ("2", [1]),
        ("@alfred 1", [0]),
        ("#3.", [2]),
        ("1 and 3", [0, 2]),
        ("1, 2", [0, 1]),
        ("all", [0, 1, 2]),
        ("Both!", [0, 1, 2]),
        ("none", []),
        ("cancel", []),
        ("neither", []),
        ("4", None),
        ("0", None),
        ("2 cats", None),
        ("tell me about 2024", None),
        ("all good, thanks", None),
    ],
)
def test_choice_answers(text: str, picked: list[int] | None) -> None:
    assert choice_answer(text, 3) == picked


# --- the question through the assistant, across a restart -------------------------------------


@pytest.fixture
async def services(settings: Settings) -> AsyncIterator[Services]:
    async with migrated_services(settings, "which", NOW) as made:
        yield made


class Chat:
    def __init__(self, services: Services) -> None:
        self.bot = build_assistant(services)
        self.n = 0

    async def __call__(self, who: Person, text: str, *, group: bool = False) -> str:
        self.n += 1
        uid = int(who.id)
        turn = await self.bot.handle(
            Incoming(
                chat_id=int(CIRCLE) if group else uid,
                chat_type="group" if group else "private",
                sender=Sender(telegram_id=uid, name=who.name),
                message_id=self.n,
                text=text,
                chat_title="Fam" if group else None,
                addressed=text.startswith("@alfred"),
            )
        )
        return "\n".join(r.text for r in turn.replies)


async def test_the_question_survives_a_restart_and_leaves_no_trace(services: Services) -> None:
    chat = Chat(services)
    await chat(ALICE, SPARE)
    await chat(ALICE, BIKE)
    question = await chat(ALICE, "forget my key")
    assert question.startswith(FORGET_WHICH) and "drawer" in question
    bike = numbered(question, "drawer")

    restarted = Chat(services)  # a new process: the question waits in the database
    restarted.n = chat.n
    assert await restarted(ALICE, bike) == forgotten_text({"facts": 1, "messages": 2})
    db = services.mongo.db
    assert await traces(db, "drawer", "bike") == []
    texts = {m.text for m in await services.journal.all_for_audit()}
    assert "[a request to forget something]" in texts
    assert not any(FORGET_WHICH in t for t in texts), "the question quoted it: gone or redacted"
    assert await traces(db, "flowerpot"), "the other memory is kept"
    # answered: the same number again is just a message now
    assert not (await restarted(ALICE, bike)).startswith(FORGOTTEN[:-1])
    assert await traces(db, "flowerpot")


async def test_an_unrelated_message_lets_the_question_lapse(services: Services) -> None:
    chat = Chat(services)
    await chat(ALICE, SPARE)
    await chat(ALICE, BIKE)
    assert (await chat(ALICE, "forget my key")).startswith(FORGET_WHICH)
    answer = await chat(ALICE, "what's a good name for a cat?")
    assert (
        answer
        and not answer.startswith(FORGOTTEN[:-1])
        and answer != KEPT_ALL
        and FORGET_WHICH not in answer
    )
    assert not (await chat(ALICE, "1")).startswith(FORGOTTEN[:-1]), "the question lapsed"
    assert await traces(services.mongo.db, "drawer") and await traces(
        services.mongo.db, "flowerpot"
    )
    # asked again, "none": nothing goes, and the answered question is redacted
    assert (await chat(ALICE, "forget my key")).startswith(FORGET_WHICH)
    assert await chat(ALICE, "none") == KEPT_ALL
    assert await traces(services.mongo.db, "drawer") and await traces(
        services.mongo.db, "flowerpot"
    )
    texts = [m.text for m in await services.journal.all_for_audit()]
    assert texts.count(FORGET_WHICH_REDACTED) == 1
    assert sum(t.startswith(FORGET_WHICH) for t in texts) == 1, "the lapsed one stays"


async def test_in_the_group_only_the_asker_answers(services: Services) -> None:
    chat = Chat(services)
    db = services.mongo.db
    await chat(ALICE, "@alfred " + SPARE, group=True)
    await chat(ALICE, "@alfred " + BIKE, group=True)
    await chat(BOB, "@alfred remember that my car key is on the hook", group=True)
    question = await chat(ALICE, "@alfred forget my key", group=True)
    assert question.startswith(FORGET_WHICH)
    assert "car" not in question, "Bob's memory is not hers to forget"
    bike = numbered(question, "drawer")
    # Bob answering her question deletes nothing, addressed or not
    assert not (await chat(BOB, f"@alfred {bike}", group=True)).startswith(FORGOTTEN[:-1])
    assert await chat(BOB, "all", group=True) == ""
    assert await traces(db, "drawer") and await traces(db, "flowerpot")
    # her bare answer is enough in the group
    assert await chat(ALICE, bike, group=True) == forgotten_text({"facts": 1, "messages": 2})
    assert await traces(db, "drawer") == []
    assert await traces(db, "flowerpot") and await traces(db, "car key")
    texts = [m.text for m in await services.journal.all_for_audit()]
    assert not any(FORGET_WHICH in t for t in texts)


# --- forget everything -----------------------------------------------------------------


async def test_forget_everything_erases_the_user_and_nobody_else(world: World) -> None:
    w = world
    alice_dm, alice_group = Partition.dm(ALICE.id), Partition.member(CIRCLE, ALICE.id)
    bob_dm, bob_group = Partition.dm(BOB.id), Partition.member(CIRCLE, BOB.id)
    circle = Partition.circle(CIRCLE)
    # Alice: a DM fact, a group fact, a circle-level fact only she stated, notes, a question
    await w.remember(w.alice_dm, ALICE, "remember that I love playing the trombone")
    await w.remember(w.group, ALICE, "remember that I'm allergic to peanuts")
    await w.remember(w.group, ALICE, "remember that we are going to Lisbon in May")
    await w.reflection("Alice practises the trombone every evening", alice_dm)
    peanut_note = await w.reflection("Alice avoids peanuts at restaurants", alice_group)
    await w.blob(alice_group, [peanut_note])
    # notes derived from the circle-level fact only she stated go with it
    lisbon_note = await w.reflection(
        "The group members are excited about going to Lisbon in May",
        circle,
        ReflectionScope.CIRCLE,
    )
    await w.blob(circle, [lisbon_note], ReflectionScope.CIRCLE)
    await w.notes.add_clarification(
        Clarification(
            id="c-alice",
            user_id=ALICE.id,
            partition=alice_dm,
            question='I thought "Alice plays the trombone" — has that changed?',
            created_at=NOW,
        )
    )
    # Bob: the same kinds of things, which must all stay
    await w.remember(w.bob_dm, BOB, "remember that I love ramen")
    await w.remember(w.group, BOB, "remember that I love running marathons")
    await w.remember(w.group, BOB, "remember that we are going to Croatia in August")
    bob_note = await w.reflection("Bob runs before work", bob_group)
    await w.blob(bob_group, [bob_note])
    await w.reflection("Bob likes spicy ramen", bob_dm)
    await w.reflection("The circle likes sunny holidays", circle, ReflectionScope.CIRCLE)
    await w.notes.add_clarification(
        Clarification(
            id="c-bob",
            user_id=BOB.id,
            partition=bob_dm,
            question='I thought "Bob loves ramen" — has that changed?',
            created_at=NOW,
        )
    )

    async def snapshot(user: str) -> dict[str, list[Any]]:
        """Everything of ``user``'s (owned, stated, written, addressed to them)."""
        out: dict[str, list[Any]] = {}
        for name in (FACTS, REFLECTIONS, CONSOLIDATED, CLARIFICATIONS, MESSAGES):
            query = {
                "$or": [
                    {"owner_user_id": user},
                    {"user_id": user},
                    {"provenance.speaker_id": user},
                ]
            }
            out[name] = sorted(
                [d async for d in w.db[name].find(query, {"embedding": 0})],
                key=lambda d: str(d["_id"]),
            )
        return out

    bobs_before = await snapshot(BOB.id)
    shared = await w.db[REFLECTIONS].find_one({"content": "The circle likes sunny holidays"})
    assert shared is not None
    alice_before = await snapshot(ALICE.id)
    assert all(alice_before[name] for name in alice_before), "Alice has something everywhere"
    assert await traces(w.db, "trombone", "peanuts", "Lisbon")

    counts = await w.ops.forget_everything(ALICE.id)

    assert counts["facts"] == 3
    assert counts["messages"] == 6, "her three requests and Alfred's three replies to her"
    assert counts["clarifications"] == 1
    assert await snapshot(ALICE.id) == {name: [] for name in alice_before}
    assert await traces(w.db, "trombone", "peanuts", "Lisbon") == []
    assert await snapshot(BOB.id) == bobs_before
    assert await w.db[REFLECTIONS].find_one({"_id": shared["_id"]}) == shared
    assert await w.current(circle) == ["The group members are going to Croatia in August"]
    assert await w.current(bob_group) == ["Bob loves running marathons"]
    assert await w.current(bob_dm) == ["Bob loves ramen"]


# --- clarifications ------------------------------------------------------------------------


async def _contradiction(
    w: World, where: Partition | None = None
) -> tuple[Fact, Fact, Clarification]:
    """What formation leaves after a contradiction in Alice's DM (or ``where``): the old
    fact invalidated, the new one stored, a question pending."""
    dm = where or Partition.dm(ALICE.id)
    old, _ = await w.writer.add("Alice is vegetarian", dm, importance=8)
    await w.facts.invalidate(old.id, at=NOW, reason="contradicted")
    new, _ = await w.writer.add("Alice eats fish", dm)
    item = Clarification(
        id="c1",
        user_id=ALICE.id,
        partition=dm,
        question='I thought "Alice is vegetarian" — has that changed?',
        kind="contradiction",
        fact_id=new.id,
        proposed_content=old.id,
        created_at=NOW,
    )
    assert await w.notes.add_clarification(item)
    return old, new, item


async def _status(w: World, clarification_id: str) -> tuple[str, datetime | None]:
    doc = await w.db[CLARIFICATIONS].find_one({"_id": clarification_id})
    assert doc is not None
    return doc["status"], doc.get("resolved_at")


async def test_a_pending_question_is_asked_once_in_its_partition(world: World) -> None:
    w = world
    await _contradiction(w)
    alice_group = await w.viewer(ALICE, w.group)
    alice_dm = await w.viewer(ALICE, w.alice_dm)
    bob_dm = await w.viewer(BOB, w.bob_dm)
    assert await w.ops.question_for(alice_group) is None, "a DM question is not asked in the group"
    assert await w.ops.question_for(bob_dm) is None
    assert await w.ops.answer(alice_dm, "yes") is None, "nothing was asked yet"
    assert await _status(w, "c1") == ("pending", None)

    question = await w.ops.question_for(alice_dm)
    assert question == 'I thought "Alice is vegetarian" — has that changed?'
    assert await _status(w, "c1") == ("asked", None)
    assert await w.ops.question_for(alice_dm) is None, "asked once"
    assert await w.ops.answer(alice_dm, "what's the weather like?") is None, "not an answer"
    assert await _status(w, "c1") == ("asked", None)


async def test_yes_keeps_the_new_fact(world: World) -> None:
    w = world
    old, new, _ = await _contradiction(w)
    alice_dm = await w.viewer(ALICE, w.alice_dm)
    await w.ops.question_for(alice_dm)
    w.clock.advance(timedelta(minutes=5))
    result = await w.ops.answer(alice_dm, "Yes, I eat fish now")
    assert result is not None and result.text == "Thanks — I've updated what I remember."
    assert await _status(w, "c1") == ("resolved", w.clock.now())
    assert await w.current(Partition.dm(ALICE.id)) == ["Alice eats fish"]
    kept = await w.facts.get(new.id)
    assert kept is not None and kept.current
    stale = await w.facts.get(old.id)
    assert stale is not None and stale.invalid_at == NOW
    assert await w.ops.answer(alice_dm, "yes") is None, "resolved questions are not answered twice"


async def test_in_the_group_the_answer_may_mention_alfred(world: World) -> None:
    """In a group an answer reaches Alfred as "@alfred no, …" (or "Alfred, yes"): the
    address is not part of the answer."""
    w = world
    await _contradiction(w, Partition.member(CIRCLE, ALICE.id))
    alice_group = await w.viewer(ALICE, w.group)
    assert await w.ops.question_for(alice_group) is not None
    result = await w.ops.answer(alice_group, "@alfred no, I'm still vegetarian")
    assert result is not None and result.text.startswith("Thanks — I'll keep remembering")
    assert await w.current(Partition.member(CIRCLE, ALICE.id)) == ["Alice is vegetarian"]


async def test_no_restores_the_old_fact(world: World) -> None:
    w = world
    old, new, _ = await _contradiction(w)
    alice_dm = await w.viewer(ALICE, w.alice_dm)
    await w.ops.question_for(alice_dm)
    w.clock.advance(timedelta(minutes=5))
    result = await w.ops.answer(alice_dm, "no, I'm still vegetarian")
    assert result is not None
    assert result.text == "Thanks — I'll keep remembering it the way it was."
    assert await _status(w, "c1") == ("resolved", w.clock.now())
    wrong = await w.facts.get(new.id)
    assert wrong is not None and wrong.invalid_at == w.clock.now()
    (restored,) = await w.facts.current_in_partition(Partition.dm(ALICE.id))
    assert restored.content == "Alice is vegetarian" and restored.importance == old.importance
    assert restored.partition == old.partition
    visible = await w.facts.list_visible(alice_dm)
    assert [f.content for f in visible] == ["Alice is vegetarian"]
