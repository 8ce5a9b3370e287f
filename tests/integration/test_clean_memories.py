"""Clean memories (issue 14 point 6): what someone asks Alfred to remember is stored as a
stand-alone sentence, never as "<name>: <what they said>", so a search that names them
does not find everything they ever asked for; the upgrade rewords the old ones."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.constants import FACTS, USERS
from memory.facts import FactWriter
from memory.models import Category, Partition, Provenance
from runtime.settings import Settings
from tests.helpers.fakes import HashEmbedder
from tests.helpers.replay import current_facts, dumps, probe, probes, replay_lines, say

_PREFIXED = re.compile(r"^(?:Dana|Eli|Fern):")


async def test_explicit_memories_are_worded_as_sentences_without_a_name_prefix(
    settings: Settings, tmp_path: Path
) -> None:
    """First person no rule reads becomes third person; words with no first person are
    kept as said; whose memory it is stays in the provenance."""
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "dm:dana", "remember that I hide my diary behind the piano"),
            say("dana", "dm:dana", "remember that the fuse box is behind the coats"),
            say("eli", "group:fam", "@alfred remember that my umbrella lives in the boot"),
            {"dump": "all"},
        ],
        tmp_path / "a",
    )
    dump = dumps(out)[-1]
    current = current_facts(dump)
    assert not [c for c in current if _PREFIXED.match(c)], current
    assert "Dana hides Dana's diary behind the piano" in current, current
    assert "The fuse box is behind the coats" in current, current
    assert "Eli's umbrella lives in the boot" in current, current
    speakers = {f["content"]: f["provenance"]["speaker_id"] for f in dump["facts"]}
    assert (
        speakers["The fuse box is behind the coats"]
        == speakers["Dana hides Dana's diary behind the piano"]
    )
    assert (
        speakers["Eli's umbrella lives in the boot"] != speakers["The fuse box is behind the coats"]
    )


async def test_a_question_naming_someone_does_not_pull_up_their_unrelated_memories(
    settings: Settings, tmp_path: Path
) -> None:
    """Dana's memories about the plants have nothing to do with the car; with her name in
    front of them, a question that named her offered them beside Eli's answer."""
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "group:fam", "remember that the plants need water on fridays"),
            say("dana", "group:fam", "remember that the cactus sits on the landing"),
            say("eli", "group:fam", "remember that the car keys hang in the hallway"),
            probe("eli", "group:fam", "dana asked where the car keys are"),
        ],
        tmp_path / "b",
    )
    memories = [m["content"] for m in probes(out)[-1]["memories"]]
    assert memories and "car keys" in memories[0], memories
    # the plants and the cactus share nothing with the question but Dana's name
    assert not [m for m in memories if "plants" in m or "cactus" in m], memories


async def test_the_upgrade_takes_the_name_out_of_old_explicit_memories(
    db: AsyncDatabase[dict[str, Any]],
) -> None:
    """Migration 7 rewords explicit memories stored as "<speaker's name>: …" (keeping the
    old wording as history, the vector marked for re-embedding); other memories, and a
    prefix that is not the speaker's name, are left alone."""
    from migrations import MigrationContext, migrate

    def ctx() -> MigrationContext:
        return MigrationContext(db=db, atlas_search=False, embedding_dims=384, log=lambda _: None)

    await migrate(ctx(), to=6)
    await db[USERS].insert_one({"_id": "7", "name": "Fern"})
    store = MongoFactStore(db)
    writer = FactWriter(store, HashEmbedder(), ManualClock(datetime(2026, 1, 5, tzinfo=UTC)))
    fern = Partition.dm("7")
    await writer.add_many(
        [
            (text, Category.FACT, 7, fern, Provenance(source=source, speaker_id="7"))
            for text, source in (
                ("Fern: I water my ferns on sundays", "explicit"),
                ("Fern: the bins go out on monday", "explicit"),
                ("Note: the boiler was serviced in May", "explicit"),
                ("Fern: said hello", "conversation"),
            )
        ]
    )
    await migrate(ctx())
    current = {f.content: f for f in await store.current_in_partition(fern)}
    assert set(current) == {
        "Fern waters Fern's ferns on sundays",
        "The bins go out on monday",
        "Note: the boiler was serviced in May",
        "Fern: said hello",
    }, set(current)
    reworded = current["The bins go out on monday"]
    assert [h.content for h in reworded.history] == ["Fern: the bins go out on monday"]
    doc = await db[FACTS].find_one({"_id": reworded.id})
    assert doc is not None and doc["embedding"] is None
    await migrate(ctx())  # idempotent
    again = {f.content for f in await store.current_in_partition(fern)}
    assert again == set(current)


async def test_the_upgrade_embeds_the_new_wording_when_it_has_an_embedder(
    db: AsyncDatabase[dict[str, Any]],
) -> None:
    """``alfred migrate`` and ``alfred run`` hand migrations the configured embedder: the
    reworded memory gets its vector at once, from the new words."""
    from migrations import MigrationContext, migrate

    embedder = HashEmbedder()
    await migrate(MigrationContext(db, False, 384, log=lambda _: None), to=6)
    await db[USERS].insert_one({"_id": "8", "name": "Gil"})
    store = MongoFactStore(db)
    writer = FactWriter(store, embedder, ManualClock(datetime(2026, 1, 5, tzinfo=UTC)))
    gil = Partition.dm("8")
    said = "Gil: my bike lock code is in the blue notebook"
    await writer.add_many(
        [(said, Category.FACT, 7, gil, Provenance(source="explicit", speaker_id="8"))]
    )
    await migrate(MigrationContext(db, False, 384, log=lambda _: None, embedder=embedder))
    (fact,) = await store.current_in_partition(gil)
    assert fact.content == "Gil's bike lock code is in the blue notebook"
    doc = await db[FACTS].find_one({"_id": fact.id})
    assert doc is not None and doc["embedding_model"] == embedder.model_name
    (expected,) = await embedder.embed([fact.content])
    assert fact.embedding is not None
    assert [round(x, 5) for x in fact.embedding] == [round(float(x), 5) for x in expected]
