"""Complete erasure: after "forget everything about me", nothing the person said is left in
any MongoDB collection, any Redis key or value, or any file under the data folder
(Redis's append-only file included, rewritten after the erase). Only the MongoDB engine's
own journal and checkpoint files are exempt (docs/privacy.md says why and how an operator
compacts them).

The canary is a made-up word nobody else says, in a group and in a DM, in explicit
requests and in chatter; formation and consolidation run before the erase, so it is in
facts, notes, summaries and the journal first. Reminders and lists are not memories, but
they hold her words too: her reminders, one set for her, her DM list, a circle list only
she used and her item on the circle's list that Eli started carry the canary."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from bot.replay import Replay, replay_world
from jobs.admin_client import AdminClient
from runtime.settings import Settings
from tests.helpers.replay import say

CANARY = "plumquartz"
#: The engine's own files under ``<data>/mongo``: WiredTiger's journal (``WiredTigerLog.*``)
#: and its checkpoint files (every ``*.wt`` table, ``WiredTiger*`` metadata). The
#: collections they hold are scanned through the server instead.
ENGINE_FILES = ("WiredTiger", ".wt")


async def _feed(replay: Replay, *lines: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in lines:
        ((kind, value),) = line.items()
        out += await replay.run_event(kind, value)
    return out


def _redis(replay: Replay) -> Any:
    """The client of the replay's embedded Redis (the one its jobs run on)."""
    jobs: Any = replay.jobs
    return jobs.redis.client


async def _mongo_hits(replay: Replay) -> list[str]:
    """``database.collection`` of every document anywhere on the server holding the canary."""
    client = replay.services.mongo.client
    hits = []
    for name in await client.list_database_names():
        db = client[name]
        for collection in await db.list_collection_names():
            async for doc in db[collection].find({}):
                if CANARY in json.dumps(doc, default=str).lower():
                    hits.append(f"{name}.{collection}")
    return hits


async def _redis_hits(replay: Replay) -> list[str]:
    """Every Redis key whose name or value holds the canary (values read by type)."""
    redis = _redis(replay)
    hits = []
    async for key in redis.scan_iter(count=500):
        kind = (await redis.type(key)).decode()
        value: Any
        if kind == "string":
            value = await redis.get(key)
        elif kind == "hash":
            value = await redis.hgetall(key)
        elif kind == "list":
            value = await redis.lrange(key, 0, -1)
        elif kind == "set":
            value = await redis.smembers(key)
        elif kind == "zset":
            value = await redis.zrange(key, 0, -1, withscores=True)
        else:
            value = await redis.dump(key)
        if CANARY.encode() in (repr(key) + repr(value)).lower().encode():
            hits.append(key.decode())
    return hits


async def _aof_rewrites(replay: Replay) -> tuple[int, bool]:
    """(rewrites finished, one running or scheduled) from ``INFO persistence``."""
    info = await _redis(replay).info("persistence")
    busy = bool(info["aof_rewrite_in_progress"]) or bool(info["aof_rewrite_scheduled"])
    return int(info["aof_rewrites"]), busy


def _spool_line(update_id: int, user: int, text: str) -> str:
    message = {
        "message_id": update_id,
        "date": 1767600000,
        "chat": {"id": user, "type": "private"},
        "from": {"id": user, "is_bot": False, "first_name": "Someone"},
        "text": text,
    }
    return json.dumps({"update_id": update_id, "message": message})


async def test_nothing_of_an_erased_person_is_left_anywhere(
    settings: Settings, tmp_path: Path
) -> None:
    data = tmp_path / "residue"
    world = settings.model_copy(
        update={"alfred_data_dir": data, "mongodb_database": "replay_residue"}
    )
    async with replay_world(world) as replay:
        await replay.circle("fam", ["dana", "eli"])
        await _feed(
            replay,
            say("dana", "group:fam", "@alfred remember that my gym locker code is plumquartz"),
            say("dana", "group:fam", "we are planning a plumquartz picnic by the lake on Sunday"),
            say("eli", "group:fam", "the hedge along the driveway needs trimming this weekend"),
            say("dana", "group:fam", "I hid the Plumquartz ring inside the blue teapot upstairs"),
            say("eli", "group:fam", "my bike chain snapped on the hill road yesterday evening"),
            say("dana", "dm:dana", "remember that my plumquartz passport is in the green folder"),
            say("dana", "dm:dana", "my plumquartz dentist appointment moved to Thursday"),
            say("dana", "dm:dana", "the garden hose is leaking near the plumquartz tomatoes"),
            say("dana", "dm:dana", "I bought plumquartz walking boots for the October trip"),
            say("dana", "dm:dana", "remind me to fetch the plumquartz parcel tomorrow at 9"),
            say("eli", "group:fam", "@alfred remind Dana to return the plumquartz ladder Friday"),
            say("eli", "group:fam", "@alfred add bread to the shopping list"),
            say("dana", "group:fam", "@alfred add plumquartz jam to the shopping list"),
            say("dana", "group:fam", "@alfred add a rope to the plumquartz list"),
            say("dana", "dm:dana", "add plumquartz socks to the packing list"),
            {"clock": "+20m"},
            {"jobs": "drain"},
            say("dana", "dm:dana", "what do you remember about me?"),
        )
        # updates that were waiting in the spool when she asked (one unreadable)
        dana, eli = replay.names.user("dana"), replay.names.user("eli")
        spool = data / "spool"
        spool.mkdir(parents=True, exist_ok=True)
        (spool / "updates.jsonl").write_text(
            _spool_line(9001, dana, "my plumquartz bike is blue")
            + "\n"
            + _spool_line(9002, eli, "the hedge is trimmed")
            + "\n"
        )
        (spool / "unreadable.jsonl").write_text(
            _spool_line(9003, dana, "plumquartz again")[:-1] + ', "odd": [1]}\n'
        )
        # an operator exported her memories: arq keeps the job's result, her words in it
        jobs: Any = replay.jobs
        admin = AdminClient(world, jobs.redis)
        await admin.enqueue("export-user", str(dana))
        await admin.close()
        await _feed(replay, {"jobs": "drain"})
        assert await _redis_hits(replay), "the export's kept result quotes her"
        formed = set(await _mongo_hits(replay))
        for collection in ("messages", "memory_facts", "memory_reflections"):
            assert f"replay_residue.{collection}" in formed, formed
        assert "replay_residue.memory_consolidated" in formed, "a summary quoted her"
        assert "replay_residue.reminders" in formed, "her reminders, and one set for her"
        assert "replay_residue.lists" in formed, "her lists, and her item on a circle list"
        rewrites, _ = await _aof_rewrites(replay)

        out = await _feed(
            replay,
            say("dana", "dm:dana", "forget everything about me"),
            say("dana", "dm:dana", "yes, erase everything"),
            {"jobs": "drain"},
        )
        erased = out[-1]["reply"]["text"]
        assert erased.startswith("Done — I've erased everything about you"), erased
        # her DM list and the circle list only she used (its rope counted among her items)
        assert "2 reminders, 2 lists, 2 items on shared lists" in erased, erased

        assert await _mongo_hits(replay) == []
        assert await _redis_hits(replay) == []
        assert [json.loads(x)["update_id"] for x in (spool / "updates.jsonl").open()] == [9002]
        assert (spool / "unreadable.jsonl").read_text() == ""
        done, busy = await _aof_rewrites(replay)
        while busy or done <= rewrites:  # the rewrite runs in the server's background
            await asyncio.sleep(0.05)
            done, busy = await _aof_rewrites(replay)
        # Eli's words are all still there
        eli_said = [
            m["text"] for m in (await replay.dump())["dump"]["messages"] if m["user_id"] == str(eli)
        ]
        # (his reminder request for her is kept as his message, without its words)
        assert len(eli_said) == 4 and "[a reminder request]" in eli_said, eli_said
        # and the circle's shopping list keeps his bread, without her jam
        left = await _feed(replay, say("eli", "group:fam", "@alfred what's on the shopping list?"))
        assert [o["reply"]["text"] for o in left if "reply" in o] == ["Shopping list: bread"]
    files = [p for p in data.rglob("*") if p.is_file()]
    assert any(p.name.startswith("appendonly.aof") for p in files), "the AOF is scanned"
    left = [
        str(p.relative_to(data))
        for p in files
        if not (p.parent.name == "mongo" and any(part in p.name for part in ENGINE_FILES))
        and CANARY.encode() in p.read_bytes().lower()
    ]
    assert left == []
