"""Pinning (seed 001): explicit memories are pinned, "pin …" / "unpin …" work on the
person's own memories only, and a pinned memory does not fade with age."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from integrations.mongo.facts import MongoFactStore
from memory.clock import ManualClock
from memory.constants import PARTITIONS
from memory.facts import FactWriter
from memory.models import Category, Partition, Provenance
from memory.pinning import NOTHING_TO_PIN
from runtime.settings import Settings
from tests.helpers.fakes import HashEmbedder
from tests.helpers.replay import dumps, probe, probes, replay_lines, replies, say

FORMED_JOB: list[Any] = [
    {"circle": "fam", "members": ["dana", "eli"]},
    say("dana", "dm:dana", "I work at the bakery"),
    say("dana", "dm:dana", "the weather is grey today"),
    say("dana", "dm:dana", "we watched a film last night"),
    say("dana", "dm:dana", "the train was late again"),
    {"clock": "+20m"},
    {"jobs": "drain"},
]


def _pins(dump: dict[str, Any]) -> dict[str, bool]:
    """Current facts and whether each is pinned."""
    return {f["content"]: f["pinned"] for f in dump["facts"] if f["invalid_at"] is None}


def _bakery(dump: dict[str, Any]) -> bool:
    (pinned,) = [p for content, p in _pins(dump).items() if "bakery" in content]
    return pinned


async def test_explicit_memories_are_pinned_and_stay_pinned(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "dm:dana", "remember that the gate code is 4512"),
            {"dump": "all"},
            say("dana", "dm:dana", "remember that the gate code is 4512"),
            say("dana", "dm:dana", "the weather is grey today"),
            say("dana", "dm:dana", "we watched a film last night"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            {"clock": "+30d"},
            {"dump": "all"},
        ],
        tmp_path / "p",
    )
    first, last = (_pins(d) for d in dumps(out))
    gate = [content for content in first if "4512" in content]
    assert len(gate) == 1 and first[gate[0]] is True, first
    assert [c for c in last if "4512" in c] == gate and last[gate[0]] is True, last


async def test_pin_and_unpin_only_what_is_yours(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        settings,
        [
            *FORMED_JOB,
            {"dump": "all"},
            # Eli can see nothing of Dana's DM: neither from the group nor from his DM
            say("eli", "group:fam", "@alfred pin Dana's job at the bakery"),
            say("eli", "dm:eli", "pin the bakery job"),
            {"dump": "all"},
            say("dana", "dm:dana", "pin my job at the bakery"),
            {"dump": "all"},
            say("dana", "dm:dana", "the kettle is broken"),
            say("dana", "dm:dana", "it rained all day"),
            say("dana", "dm:dana", "we had soup for lunch"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            {"dump": "all"},
            say("dana", "dm:dana", "unpin my job at the bakery"),
            {"dump": "all"},
        ],
        tmp_path / "q",
    )
    formed, after_eli, pinned, after_formation, unpinned = dumps(out)
    assert _bakery(formed) is False, "learned in the background: not pinned"
    texts = [r["text"] for r in replies(out)]
    assert texts[-7] == NOTHING_TO_PIN and texts[-6] == NOTHING_TO_PIN, texts
    assert _bakery(after_eli) is False
    assert texts[-5].startswith("Pinned") and "bakery" in texts[-5], texts[-5]
    assert _bakery(pinned) is True
    assert _bakery(after_formation) is True, "formation keeps the pin"
    assert texts[-1].startswith("Unpinned") and "bakery" in texts[-1], texts[-1]
    assert _bakery(unpinned) is False


async def test_pin_that_points_at_what_was_just_discussed(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            *FORMED_JOB,
            say("dana", "dm:dana", "I work at the bakery, right?"),
            say("dana", "dm:dana", "pin that"),
            {"dump": "all"},
        ],
        tmp_path / "r",
    )
    assert replies(out)[-1]["text"].startswith("Pinned"), replies(out)[-1]
    assert _bakery(dumps(out)[-1]) is True


async def test_pin_that_keeps_what_was_just_said_before_it_is_a_memory(
    settings: Settings, tmp_path: Path
) -> None:
    """ "I love gardening" → "pin that", before formation: nothing to find yet, so it is
    kept at once, pinned, as a bare "remember that" keeps it. Formation does not learn it
    a second time, and a month later it is one pinned memory. With nothing said before
    it to keep, "pin that" still says it found nothing."""
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "dm:dana", "I love gardening"),
            say("dana", "dm:dana", "pin that"),
            say("eli", "dm:eli", "ok"),
            say("eli", "dm:eli", "pin that"),
            say("dana", "dm:dana", "the weather is grey today"),
            say("dana", "dm:dana", "we watched a film last night"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            {"clock": "+30d"},
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path / "g",
    )
    texts = [r["text"] for r in replies(out)]
    assert texts[1].startswith("Pinned") and "gardening" in texts[1], texts[1]
    assert texts[3] == NOTHING_TO_PIN, texts[3]
    gardening = {c: p for c, p in _pins(dumps(out)[-1]).items() if "gardening" in c}
    assert list(gardening.values()) == [True], gardening


async def _score_after_a_year(settings: Settings, path: Path, *, pin: bool) -> float:
    lines: list[Any] = [*FORMED_JOB]
    if pin:
        lines.append(say("dana", "dm:dana", "pin my job at the bakery"))
    lines += [{"clock": "+365d"}, probe("dana", "dm:dana", "where do I work? the bakery?")]
    out = await replay_lines(settings, lines, path)
    (memory,) = [m for m in probes(out)[-1]["memories"] if "bakery" in m["content"]]
    return float(memory["score"])


async def test_a_pinned_memory_does_not_fade(settings: Settings, tmp_path: Path) -> None:
    faded = await _score_after_a_year(settings, tmp_path / "s", pin=False)
    kept = await _score_after_a_year(settings, tmp_path / "t", pin=True)
    assert kept > faded, (kept, faded)


async def test_the_upgrade_pins_memories_asked_for_before_it(
    db: AsyncDatabase[dict[str, Any]],
) -> None:
    """Explicit memories and corrections stored before pinning existed are pinned by
    migration 5; what the background learned is not; partition versions move so cached
    indexes reload."""
    from migrations import MigrationContext, migrate

    def ctx() -> MigrationContext:
        return MigrationContext(db=db, atlas_search=False, embedding_dims=384, log=lambda _: None)

    await migrate(ctx(), to=4)
    store = MongoFactStore(db)
    writer = FactWriter(store, HashEmbedder(), ManualClock(datetime(2026, 1, 5, tzinfo=UTC)))
    dana = Partition.dm("1")
    stored = await writer.add_many(
        [
            (text, Category.FACT, 7, dana, Provenance(source=source))
            for text, source in (
                ("Dana's gate code is 4512", "explicit"),
                ("Dana is not vegan anymore", "correction"),
                ("Dana works at the bakery", "conversation"),
            )
        ]
    )
    before = await db[PARTITIONS].find_one({"_id": dana.key()})
    assert before is not None
    await migrate(ctx())
    pinned = {f.content: f.pinned for f in await store.current_in_partition(dana)}
    assert pinned == {
        "Dana's gate code is 4512": True,
        "Dana is not vegan anymore": True,
        "Dana works at the bakery": False,
    }, [f for f, _ in stored]
    after = await db[PARTITIONS].find_one({"_id": dana.key()})
    assert after is not None and after["version"] > before["version"]
