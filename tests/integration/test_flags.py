"""Feature flags (seed 004 rollout), each honoured where it applies, through the real bot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.assistant import NOT_RECALLING, NOT_STORING
from integrations.settings import Settings
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
