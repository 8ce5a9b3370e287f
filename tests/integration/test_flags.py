"""Feature flags (seed 004 rollout), each honoured where it applies, through the real bot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.settings import Settings
from services.reply.assistant import NOT_RECALLING, NOT_STORING
from tests.helpers.replay import probe, probes, replay_lines, replies, say

CIRCLES = [{"circle": "fam", "members": ["alice", "bob"]}]
FAM_ID = "-1000000001"  # the first circle a replay creates
WORK_ID = "-1000000002"


def flagged(settings: Settings, **flags: Any) -> Settings:
    return settings.model_copy(update=flags)


async def test_memory_off_stores_and_reads_nothing(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        flagged(settings, memory_enabled=False),
        [
            *CIRCLES,
            say("alice", "dm:alice", "Remember that I love jazz"),
            probe("alice", "dm:alice", "what music do I love?"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    assert replies(out)[0]["text"] == NOT_STORING
    assert probes(out)[0]["memories"] == [] and probes(out)[0]["retrieved"] is False
    assert out[-1]["dump"]["facts"] == []


async def test_retrieval_off_still_learns_but_reads_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        flagged(settings, memory_retrieval=False),
        [
            *CIRCLES,
            say("alice", "dm:alice", "Remember that I love jazz"),
            say("alice", "dm:alice", "What do you remember about me?"),
            probe("alice", "dm:alice", "what music do I love?"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    assert [r["text"] for r in replies(out)] == ["Got it, I'll remember that.", NOT_RECALLING]
    assert probes(out)[0]["memories"] == [] and probes(out)[0]["context"] == ""
    assert [f["content"] for f in out[-1]["dump"]["facts"]] == ["Alice loves jazz"]


async def test_extraction_off_stores_nothing_new(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        flagged(settings, memory_extraction=False),
        [
            *CIRCLES,
            say("bob", "dm:bob", "Remember that I love jazz"),
            say("bob", "dm:bob", "I really love Thai food."),
            say("bob", "dm:bob", "My sister's name is Jane."),
            say("bob", "dm:bob", "I work at the bakery on Main Street."),
            say("bob", "dm:bob", "I live in Lisbon these days."),
            {"clock": "+15m"},
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path,
    )
    assert replies(out)[0]["text"] == NOT_STORING
    dump = out[-1]["dump"]
    assert dump["facts"] == [] and dump["reflections"] == []
    assert any(not m["formed"] for m in dump["messages"]), "kept, to be formed if switched on"


async def test_cross_partner_off_hides_other_members_memories(
    settings: Settings, tmp_path: Path
) -> None:
    lines = [
        *CIRCLES,
        say("alice", "group:fam", "@alfred remember that I love jazz"),
        say("alice", "group:fam", "@alfred remember that we love board games"),
        say("bob", "group:fam", "@alfred remember that I love rock music"),
        probe("bob", "group:fam", "what music and games do we love? jazz rock board games"),
    ]
    on = probes(await replay_lines(settings, lines, tmp_path / "on"))[0]
    off = probes(
        await replay_lines(flagged(settings, memory_cross_partner=False), lines, tmp_path / "off")
    )[0]
    assert any(m["content"] == "Alice loves jazz" for m in on["memories"])
    contents = {m["content"] for m in off["memories"]}
    assert "Alice loves jazz" not in contents and "jazz" not in off["context"]
    assert any("rock" in c for c in contents) and any("board games" in c for c in contents)


async def test_calendar_off(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        flagged(settings, memory_calendar=False),
        [
            *CIRCLES,
            say("alice", "dm:alice", "/calendar"),
        ],
        tmp_path,
    )
    assert replies(out)[0]["text"] == "Calendar features are switched off here."


async def test_allowed_circles_limit_memory(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        flagged(settings, memory_allowed_circles=FAM_ID),
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            {"circle": "work", "members": ["carol", "alice"]},
            say("alice", "group:fam", "@alfred remember that we love board games"),
            say("carol", "group:work", "@alfred remember that we ship on Fridays"),
            say("alice", "dm:alice", "Remember that I love jazz"),
            say("carol", "dm:carol", "Remember that I love opera"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    texts = [r["text"] for r in replies(out)]
    assert texts == [
        "Got it, I'll remember that.",
        NOT_STORING,
        "Got it, I'll remember that.",
        NOT_STORING,
    ]
    circles = {f["circle_id"] for f in out[-1]["dump"]["facts"]}
    assert WORK_ID not in circles


def chatter(who: str, where: str, lines: list[str]) -> list[dict[str, Any]]:
    return [say(who, where, text) for text in lines]


#: Two formations of Alice's DM: the second contradicts two facts of the first.
CONTRADICTED = [
    *CIRCLES,
    *chatter(
        "alice",
        "dm:alice",
        ["I live in Paris.", "I work at Acme.", "My brother's name is Tom.", "I love Thai food."],
    ),
    {"clock": "+15m"},
    {"jobs": "drain"},
    {"clock": "+2h"},
    *chatter(
        "alice",
        "dm:alice",
        ["I live in Berlin.", "I work at Beta.", "My sister's name is Jane.", "I enjoy hiking."],
    ),
    {"clock": "+15m"},
    {"jobs": "drain"},
    {"clock": "+2h"},
    say("alice", "dm:alice", "How is your day going?"),
    say("alice", "dm:alice", "Actually, my brother's name is Tim."),
    {"dump": "all"},
]


async def test_conflicts_off_asks_nothing_but_corrections_still_work(
    settings: Settings, tmp_path: Path
) -> None:
    on = await replay_lines(settings, CONTRADICTED, tmp_path / "on")
    off = await replay_lines(
        flagged(settings, memory_conflicts=False), CONTRADICTED, tmp_path / "off"
    )

    def current(out: list[dict[str, Any]]) -> dict[str, bool]:
        return {f["content"]: f["invalid_at"] is None for f in out[-1]["dump"]["facts"]}

    # With conflicts on, the background contradiction is asked about at the next reply.
    asked = replies(on)[-2]["text"]
    assert 'I thought "Alice lives in Paris" — has that changed?' in asked
    assert {c["kind"] for c in on[-1]["dump"]["clarifications"]} == {"contradiction"}

    # Off: formation still lets the newest statement win, but nobody is asked.
    assert not any("has that changed" in r["text"] for r in replies(off))
    assert off[-1]["dump"]["clarifications"] == []
    facts = current(off)
    assert facts["Alice lives in Paris"] is False and facts["Alice lives in Berlin"] is True
    assert facts["Alice works at Acme"] is False and facts["Alice works at Beta"] is True
    # An explicit correction is the person's own word: it still works.
    assert replies(off)[-1]["text"] == (
        "Thanks for the correction — I've updated it: Alice's brother's name is Tim"
    )
    assert facts["Alice's brother's name is Tom"] is False
    assert facts["Alice's brother's name is Tim"] is True


async def test_allowed_circles_limit_formation(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        flagged(settings, memory_allowed_circles=FAM_ID),
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            {"circle": "work", "members": ["carol", "alice"]},
            # group chatter, not addressed to Alfred: only formation learns from it
            say("alice", "group:fam", "I really love Thai food."),
            say("bob", "group:fam", "My sister's name is Jane."),
            say("alice", "group:fam", "I work at the bakery on Main Street."),
            say("bob", "group:fam", "I live in Lisbon these days."),
            say("carol", "group:work", "I really love sushi."),
            say("alice", "group:work", "My brother's name is Tom."),
            say("carol", "group:work", "I ride a red bicycle to work."),
            say("alice", "group:work", "I live in Porto these days."),
            # DMs: Alice is in an allowed circle, Carol only in the other one
            *chatter(
                "alice",
                "dm:alice",
                [
                    "I play the piano.",
                    "My dog is called Rex.",
                    "I was born in Rome.",
                    "I hate olives.",
                ],
            ),
            *chatter(
                "carol",
                "dm:carol",
                [
                    "I play the cello.",
                    "My cat is called Miso.",
                    "I was born in Oslo.",
                    "I hate figs.",
                ],
            ),
            {"clock": "+15m"},
            {"jobs": "drain"},
            {"dump": "all"},
        ],
        tmp_path,
    )
    dump = out[-1]["dump"]
    formed = {f["content"]: f for f in dump["facts"]}
    assert all(f["provenance"]["source"] == "conversation" for f in formed.values())
    assert {f["circle_id"] for f in formed.values()} == {FAM_ID, None}
    assert "Alice really loves Thai food" in formed and "Bob lives in Lisbon these days" in formed
    assert "Alice hates olives" in formed, "a DM of a member of an allowed circle"
    assert "Alice's dog is called Rex" in formed
    text = " ".join(formed)
    for word in ("sushi", "bicycle", "Tom", "Porto", "cello", "Miso", "Oslo", "figs"):
        assert word not in text, f"{word!r} was formed from a circle that is not allowed"
    assert not any(r["circle_id"] == WORK_ID for r in dump["reflections"])
    by_thread: dict[str, set[bool]] = {}
    for m in dump["messages"]:
        if m["role"] == "user":
            by_thread.setdefault(m["thread_id"], set()).add(m["formed"])
    assert by_thread[FAM_ID] == {True} and by_thread[WORK_ID] == {False}, "kept, not formed"
