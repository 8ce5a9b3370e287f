"""``alfred replay`` as REPLAY.md specifies it: the example, the format, the errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.replay import ScriptError, parse_script
from bot.replay.world import replay_world
from runtime.settings import Settings
from tests.helpers.replay import dumps, probe, probes, replay_lines, replies, say

SURPRISE = "Remember that I'm planning a surprise party for Bob on Friday"
EXAMPLE = [
    {"circle": "fam", "members": ["alice", "bob"]},
    say("alice", "dm:alice", SURPRISE),
    say("bob", "group:fam", "@alfred is anyone planning something for Friday?"),
    probe("bob", "group:fam", "What is Alice planning for Friday?"),
    probe("alice", "dm:alice", "What am I planning for Friday?"),
]


async def test_replay_md_example(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(settings, EXAMPLE, tmp_path)
    first, second = replies(out)
    assert first == {"in": "dm:alice", "to": "alice", "text": "Got it, I'll remember that."}
    assert second["in"] == "group:fam" and second["to"] == "bob"
    assert "surprise" not in second["text"].lower() and "party" not in second["text"].lower()
    bob, alice = probes(out)
    assert bob["retrieved"] is True and bob["memories"] == []
    assert "surprise" not in bob["context"].lower()
    # said on Monday 5 January 2026 (the replay's first day): the Friday that week
    content = alice["memories"][0]["content"]
    assert content == "Alice is planning a surprise party for Bob on Friday, January 9"
    assert alice["memories"][0]["owner"] == "alice" and alice["memories"][0]["visibility"] == "dm"
    assert set(alice["memories"][0]) == {
        "id",
        "content",
        "category",
        "owner",
        "visibility",
        "circle",
        "score",
    }


async def test_group_learns_silently_and_answers_when_addressed(
    settings: Settings, tmp_path: Path
) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            say("alice", "group:fam", "remember that our anniversary is on 12 June"),
            say("bob", "group:fam", "Alfred, remember that I'm allergic to peanuts"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    assert [r["to"] for r in replies(out)] == ["bob"], "unaddressed group messages get no reply"
    dump = out[-1]["dump"]
    assert {m["text"] for m in dump["messages"] if m["role"] == "user"} >= {
        "remember that our anniversary is on 12 June"
    }, "it still reads and journals them"
    assert set(dump) == {"facts", "reflections", "consolidated", "clarifications", "messages"}
    assert all("embedding" not in f for f in dump["facts"])


async def test_clock_and_drain_run_cold_sessions(settings: Settings, tmp_path: Path) -> None:
    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["bob"]},
            say("bob", "dm:bob", "I really love Thai food."),
            say("bob", "dm:bob", "My sister's name is Jane."),
            say("bob", "dm:bob", "We went hiking on Sunday and it was lovely."),
            say("bob", "dm:bob", "Work has been busy with the product launch."),
            {"jobs": "drain"},
            {"clock": "+15m"},
            {"jobs": "drain"},
            probe("bob", "dm:bob", "What food do I love?"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    jobs = [o["job"] for o in out if "job" in o]
    assert {"name": "form_thread", "status": "complete"} in jobs
    assert any("Thai" in m["content"] for m in probes(out)[0]["memories"])
    dump = out[-1]["dump"]
    assert dump["consolidated"], "the cold session was consolidated into a blob"
    assert all(m["formed"] for m in dump["messages"] if m["role"] == "user")


def test_parse_rejects_malformed_lines() -> None:
    with pytest.raises(ScriptError, match="line 2"):
        parse_script(['{"circle": "fam"}', '{"say": {"from": "a"}}'])
    with pytest.raises(ScriptError, match="line 1"):
        parse_script(["not json"])
    with pytest.raises(ScriptError, match="exactly one"):
        parse_script(['{"say": {"from": "a", "in": "dm:a", "text": "x"}, "probe": {}}'])
    with pytest.raises(ScriptError, match="clock"):
        parse_script(['{"clock": "soon"}'])
    assert parse_script(["", "# a comment", '{"jobs": "drain"}']) == [(3, "jobs", "drain")]


def test_cli_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"circle": "fam", "members": ["a"]}\n{"say": 42}\n')
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "replay", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "line 2" in result.stderr and result.stderr.count("\n") == 1
    assert result.stdout == ""


def _replay_cli(tmp_path: Path, script: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "replay", str(script), "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_cli_runs_a_script(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text("\n".join(json.dumps(x) for x in EXAMPLE) + "\n")
    objects = _replay_cli(tmp_path, script)
    assert [next(iter(o)) for o in objects] == ["reply", "reply", "probe", "probe"]

    # A second session on the kept folder is answered (its messages are numbered after
    # the first's, not taken for redeliveries of them) and remembers the first.
    later = tmp_path / "later.jsonl"
    later.write_text(
        "\n".join(
            json.dumps(x)
            for x in (
                {"circle": "fam", "members": ["alice", "bob"]},
                say("alice", "dm:alice", "remember that the ferry leaves at nine"),
                say("alice", "dm:alice", "what do you remember about me?"),
            )
        )
        + "\n"
    )
    texts = [o["reply"]["text"] for o in _replay_cli(tmp_path, later) if "reply" in o]
    assert len(texts) == 2, texts
    assert texts[0] == "Got it, I'll remember that."
    assert "ferry" in texts[1] and "surprise party" in texts[1], texts[1]


async def test_forget_everything_needs_the_confirmation_and_only_the_next_message(
    settings: Settings, tmp_path: Path
) -> None:
    """ "Forget everything about me" asks first; the very next message of that person
    either confirms it or cancels it; someone else speaking in between changes nothing."""
    from services.reply.assistant import CONFIRM_ERASE, CONFIRM_ERASE_US

    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            say("alice", "dm:alice", "remember that I love jazz"),
            say("alice", "group:fam", "@alfred remember that we water the plants on Sundays"),
            say("alice", "dm:alice", "forget everything about me"),
            say("alice", "dm:alice", "what's the weather like?"),  # not a yes: cancelled
            probe("alice", "dm:alice", "what music do I love?"),
            say("alice", "dm:alice", "forget everything about me"),
            say("bob", "dm:bob", "yes, erase everything"),  # Bob was never asked
            probe("alice", "dm:alice", "what music do I love?"),
            say("alice", "dm:alice", "yes, erase everything"),
            probe("alice", "dm:alice", "what music do I love?"),
            say("bob", "group:fam", "@alfred forget everything about us"),
            say("bob", "group:fam", "@alfred yes, erase everything"),
            probe("bob", "group:fam", "when do we water the plants?"),
        ],
        tmp_path,
    )
    texts = [(r["to"], r["text"]) for r in replies(out)]
    assert texts[2] == ("alice", CONFIRM_ERASE)
    assert "erased" not in texts[3][1]
    assert texts[4] == ("alice", CONFIRM_ERASE)
    assert texts[5][0] == "bob" and "erased" not in texts[5][1]
    assert texts[6][0] == "alice" and texts[6][1].startswith("Done — I've erased everything")
    assert texts[7] == ("bob", CONFIRM_ERASE_US)
    assert texts[8][0] == "bob" and "erased" in texts[8][1]
    seen = [[m["content"] for m in p["memories"]] for p in probes(out)]
    assert any("jazz" in c for c in seen[0]), "a cancelled erase erases nothing"
    assert any("jazz" in c for c in seen[1]), "Bob's yes is not Alice's"
    assert seen[2] == [] and seen[3] == []


async def test_forget_asks_which_when_two_memories_are_as_close(
    settings: Settings, tmp_path: Path
) -> None:
    """Two different memories match "forget my key": Alfred asks which; "all" forgets
    both, and afterwards neither their words nor the question are anywhere."""
    from memory.operations import FORGET_WHICH, forgotten_text

    out = await replay_lines(
        settings,
        [
            {"circle": "fam", "members": ["alice", "bob"]},
            say("alice", "dm:alice", "remember that my spare key is under the blue flowerpot"),
            say("alice", "dm:alice", "remember that my bike key is in the kitchen drawer"),
            say("alice", "dm:alice", "forget my key"),
            {"dump": "all"},
            say("alice", "dm:alice", "all"),
            {"dump": "all"},
        ],
        tmp_path,
    )
    texts = [r["text"] for r in replies(out)]
    assert texts[2].startswith(FORGET_WHICH) and "drawer" in texts[2]
    assert "flowerpot" in texts[2]
    asked, answered = dumps(out)
    assert len(asked["facts"]) == 2, "nothing is deleted before the answer"
    assert texts[3] == forgotten_text({"facts": 2, "messages": 3})
    assert answered["facts"] == []
    words = json.dumps(answered).lower()
    assert "drawer" not in words and "flowerpot" not in words


async def test_a_kept_store_numbers_the_bots_messages_after_its_deliveries(
    settings: Settings, tmp_path: Path
) -> None:
    """A reminder delivered in one session keeps the number of its message (a reply to it
    snoozes it); the next session on the same store numbers the bot's messages after it,
    so no new message of the bot carries a number a stored delivery has."""
    world = settings.model_copy(
        update={"alfred_data_dir": tmp_path / "kept", "mongodb_database": "replay_kept_ids"}
    )
    async with replay_world(world) as replay:
        for kind, value in (
            ("circle", {"name": "fam", "members": ["ann"]}),
            ("say", {"from": "ann", "in": "dm:ann", "text": "remind me to stretch in 10 minutes"}),
            ("clock", "+15m"),
            ("jobs", "drain"),
        ):
            await replay.run_event(kind, value)
        doc = await replay.services.mongo.db["reminders"].find_one({"text": "stretch"})
        assert doc is not None and doc["last_message_id"] is not None, doc  # delivered
        delivered = int(doc["last_message_id"])
    async with replay_world(world) as replay:
        await replay.run_event("circle", {"name": "fam", "members": ["ann"]})
        await replay.run_event("say", {"from": "ann", "in": "dm:ann", "text": "hello"})
        numbers = [m["message_id"] for m in replay._last_bot_message.values()]
        assert numbers and min(numbers) > delivered, (numbers, delivered)
