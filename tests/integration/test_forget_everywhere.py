"""Forget reaches everything: a targeted "forget …" takes the words out of the notes,
summaries, pending questions and messages that hold them, not only out of facts, and
says what went; another member's memories stay, whatever words they share."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from memory.models import Clarification, Partition, ReflectionScope
from memory.operations import FORGOTTEN, NOTHING_TO_FORGET
from runtime.settings import Settings
from tests.helpers.replay import dumps, replay_lines, replies, say
from tests.integration.test_operations import ALICE, BOB, CIRCLE, NOW, World

#: Said of the pegs, not of Dana: offline formation learns where someone put a thing ("I
#: stashed the pegs …" is a fact), and this scenario needs a mention that is no fact.
PEGS = "the spare tent pegs are behind the water heater in the basement"


def _texts(dump: dict[str, Any], kind: str) -> list[str]:
    key = {"messages": "text", "clarifications": "question"}.get(kind, "content")
    return [str(item[key]) for item in dump[kind]]


def _of(dump: dict[str, Any], user: str) -> list[str]:
    """The texts of one person's messages (the replay's user ids are numbers)."""
    return sorted(m["text"] for m in dump["messages"] if m["user_id"] == user)


async def test_a_forget_reaches_notes_summaries_and_the_journal_and_only_the_askers(
    settings: Settings, tmp_path: Path
) -> None:
    """Dana mentioned where the tent pegs are (in the group and in her DM) without asking
    Alfred to remember it: no fact, but notes, summaries and the journal hold it. Eli
    talks about the same water heater, in the group and in his DM."""
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("dana", "group:fam", PEGS),
            say("eli", "group:fam", "my toolbox sits behind the water heater in the basement"),
            say("dana", "group:fam", "the new curtains for the attic arrive on Friday morning"),
            say("eli", "group:fam", "the hedge along the driveway needs trimming this weekend"),
            say("dana", "dm:dana", PEGS),
            say("dana", "dm:dana", "my yoga class moved to Wednesday evening at the studio"),
            say("dana", "dm:dana", "the kettle switch broke so I ordered a replacement part"),
            say("dana", "dm:dana", "I am reading a long novel about lighthouse keepers"),
            say("eli", "dm:eli", "remember that my toolbox is behind the water heater"),
            say("eli", "dm:eli", "the water heater in the basement rattles when it starts"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            {"dump": "all"},
            say("dana", "dm:dana", "forget the tent pegs behind the water heater"),
            {"dump": "all"},
        ],
        tmp_path / "pegs",
    )
    before, after = dumps(out)
    noted = " ".join(_texts(before, "reflections") + _texts(before, "consolidated")).lower()
    assert "tent pegs" in noted, "formation noted it: the scenario tests something"
    eli = str(next(m["user_id"] for m in before["messages"] if "toolbox sits" in m["text"]))

    answer = replies(out)[-1]["text"]
    assert answer != NOTHING_TO_FORGET, answer
    assert answer.startswith(FORGOTTEN[:-1]) and "note" in answer and "message" in answer, answer

    for kind in ("facts", "reflections", "consolidated", "clarifications", "messages"):
        left = [t for t in _texts(after, kind) if "peg" in t.lower()]
        assert left == [], f"{kind} still hold it: {left}"
    # Eli's memories, messages and his sentences in the shared notes are all still there
    assert _of(after, eli) == _of(before, eli)
    assert (
        [f for f in _texts(after, "facts") if "toolbox" in f]
        == [f for f in _texts(before, "facts") if "toolbox" in f]
        != []
    )
    # the shared notes keep Eli's sentences, and Dana's about other things
    kept = " ".join(_texts(after, "reflections") + _texts(after, "consolidated"))
    assert "hedge along the driveway" in noted and "hedge along the driveway" in kept
    assert "lighthouse keepers" in kept and "curtains" in kept
    # and what was learned of Dana's other things (the moved class is a fact, dated)
    assert (
        [f for f in _texts(after, "facts") if "yoga class" in f]
        == [f for f in _texts(before, "facts") if "yoga class" in f]
        != []
    )


async def test_a_forget_rewrites_a_shared_summary_and_drops_the_question(
    migrated_db: Any,
) -> None:
    """A circle summary mixing Alice's sentence with Bob's loses only hers; her pending
    question that quotes it goes; Bob's question with the same words stays."""
    w = World(migrated_db)
    await w.setup()
    circle = Partition.circle(CIRCLE)
    alice_dm, bob_dm = Partition.dm(ALICE.id), Partition.dm(BOB.id)
    await w.say(w.group, ALICE, "the canoe paddles hang in the garage loft")
    scope = ReflectionScope.CIRCLE
    mine = await w.reflection(
        "Alice said the canoe paddles hang in the garage loft.", circle, scope
    )
    bobs = await w.reflection("Bob keeps the canoe in the garage by the bikes.", circle, scope)
    await w.blob(circle, [mine, bobs], scope)
    for who, partition in ((ALICE, alice_dm), (BOB, bob_dm)):
        await w.notes.add_clarification(
            Clarification(
                id=f"q-{who.id}",
                user_id=who.id,
                partition=partition,
                question="Are the canoe paddles still in the garage loft?",
                created_at=NOW,
            )
        )

    result = await w.forget(w.alice_dm, ALICE, "forget the canoe paddles in the garage loft")

    assert result.removed["clarifications"] == 1 and result.removed["consolidated"] == 1
    assert result.removed["reflections"] == 1 and result.removed["messages"] == 1
    assert "1 pending question" in result.text and "1 summary" in result.text
    blob = await w.notes.blob(scope, circle)
    assert blob is not None and "paddles" not in blob.content
    assert blob.content == "Bob keeps the canoe in the garage by the bikes."
    audit = await w.notes.all_for_audit()
    assert [c.id for c in audit["clarifications"]] == [f"q-{BOB.id}"]
    assert [r.content for r in audit["reflections"]] == [bobs.content]
    assert json.dumps([m.text for m in await w.journal.all_for_audit()]).count("paddles") == 0


async def test_a_forget_in_the_group_takes_only_the_askers_words(
    settings: Settings, tmp_path: Path
) -> None:
    """In the group Dana forgets what she said about the garden shed; Eli's memory, his
    messages and the shared note about his fishing rods in that same shed stay."""
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["dana", "eli"]},
            say("eli", "group:fam", "remember that my fishing rods are in the garden shed"),
            say("dana", "group:fam", "I left the birthday candles in the garden shed by the rods"),
            say("eli", "group:fam", "the fishing rods in the garden shed need new lines in June"),
            say("dana", "group:fam", "the piano tuner comes on Tuesday at ten"),
            say("eli", "group:fam", "the gutter over the porch is clogged with leaves again"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            {"dump": "all"},
            say("dana", "group:fam", "@alfred forget the birthday candles in the garden shed"),
            {"dump": "all"},
        ],
        tmp_path / "shed",
    )
    before, after = dumps(out)
    answer = replies(out)[-1]["text"]
    assert answer.startswith(FORGOTTEN[:-1]) and "1 message" in answer, answer
    assert not [t for t in _texts(after, "messages") if "candles" in t]
    eli = str(next(m["user_id"] for m in before["messages"] if "fishing rods are" in m["text"]))
    assert _of(after, eli) == _of(before, eli) and len(_of(after, eli)) == 3
    assert _texts(after, "facts") == _texts(before, "facts") != []
    notes = _texts(after, "reflections") + _texts(after, "consolidated")
    # Notes lose Dana's sentence about the candles (when a note retold it) and nothing else.
    expected = [
        " ".join(s for s in re.split(r"(?<=\.)\s+", t) if "candles" not in s)
        for t in _texts(before, "reflections") + _texts(before, "consolidated")
    ]
    assert notes == [t for t in expected if t], (notes, expected)
    assert any("fishing rods in the garden shed" in t for t in notes)
