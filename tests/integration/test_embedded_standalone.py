"""The embedded database runs standalone, not as a one-node replica set.

So it keeps no oplog: a replica set copies every write, text included, into
``local.oplog.rs``; here nothing anyone says is copied there (``runtime/embedded/servers.py``).
The oplog's table is still a file in the data folder, and only a server started as a
replica set shows it, so the oplog tests reopen the folder that way to read what the
table holds. A data folder first served as a replica set (before Alfred ran its server
standalone) may still hold entries: the prune that follows every erase drops them.

And on a standalone server the driver retries no write, so Alfred's client must let a
pooled connection go before the server closes it for being idle.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.errors import PyMongoError
from secantus.server import DEFAULT_CLIENT_IDLE_TIMEOUT_S

from bot.replay import replay_world
from integrations.mongo.connection import MongoHandle
from memory.constants import MESSAGES
from runtime.connections import open_mongo
from runtime.embedded.servers import find_program
from runtime.embedded.state import EmbeddedPaths, process_alive, read_state
from runtime.erasure import ErasureFiles
from runtime.settings import Settings
from tests.helpers.fake_telegram import free_port
from tests.helpers.polling import eventually
from tests.helpers.replay import say

CANARY = "quillmarsh"
START_DEADLINE = 30.0


@asynccontextmanager
async def replica_set_server(data_dir: Path) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    """The embedded program on ``data_dir``'s database folder, started as a one-node
    replica set (SecantusDB's own default), which shows its oplog as ``local.oplog.rs``."""
    paths = EmbeddedPaths(data_dir, "mongo")
    paths.server_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "replica-set.toml"
    config.write_text("# flags only\n")
    port = free_port()
    log = data_dir / "replica-set.log"
    argv = [
        str(find_program("mongo")),
        "--config", str(config),
        "--storage-path", str(paths.server_dir),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--log-level", "WARNING",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(*argv, stdout=out, stderr=out)
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        f"mongodb://127.0.0.1:{port}/?directConnection=true", serverSelectionTimeoutMS=1000
    )
    try:
        deadline = time.monotonic() + START_DEADLINE
        while True:
            try:
                await client.admin.command("ping")
                break
            except PyMongoError:
                if proc.returncode is not None or time.monotonic() > deadline:
                    said = log.read_text(errors="replace")[-2000:]
                    pytest.fail(f"the replica-set server did not start on the folder: {said}")
                await asyncio.sleep(0.1)
        hello = await client.admin.command("hello")
        assert hello.get("setName"), "the reopened server must be a replica set to show its oplog"
        yield client
    finally:
        await client.close()
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def oplog_entries(client: AsyncMongoClient[dict[str, Any]]) -> list[str]:
    """Every oplog entry, as JSON text to search."""
    found = client.local["oplog.rs"].find({})
    return [json.dumps(doc, default=str).lower() async for doc in found]


def server_pid(data_dir: Path) -> int:
    """The process of Alfred's embedded server on ``data_dir``, while it runs."""
    state = read_state(EmbeddedPaths(data_dir, "mongo"))
    assert state is not None, "Alfred's embedded server runs on the folder"
    return state.server_pid


async def canary_in_oplog(data_dir: Path, alfreds_server: int) -> list[str]:
    """The oplog entries holding the canary, once Alfred's own server (process
    ``alfreds_server``) has let go of the folder: it stops a moment after its last user."""
    await eventually(
        lambda: not process_alive(alfreds_server),
        "Alfred's embedded server stops after its last user left",
        within=START_DEADLINE,
    )
    async with replica_set_server(data_dir) as client:
        return [e for e in await oplog_entries(client) if CANARY in e]


async def test_what_someone_says_is_copied_to_no_oplog(settings: Settings, tmp_path: Path) -> None:
    data = tmp_path / "no-oplog"
    world = settings.model_copy(update={"alfred_data_dir": data, "mongodb_database": "oplog"})
    async with replay_world(world) as replay:
        await replay.circle("fam", ["dana", "eli"])
        for event in (
            say("dana", "dm:dana", f"remember that my {CANARY} passport is in the green folder"),
            say("dana", "group:fam", f"we are planning a {CANARY} picnic by the lake"),
            say("dana", "dm:dana", f"where is my {CANARY} passport?"),
        ):
            ((kind, value),) = event.items()
            await replay.run_event(kind, value)
        messages = replay.services.mongo.db[MESSAGES]
        said = await messages.count_documents({"text": {"$regex": CANARY}})
        assert said >= 3, "the messages were journaled"
        alfreds_server = server_pid(data)
    assert await canary_in_oplog(data, alfreds_server) == []


async def test_entries_left_by_a_replica_set_are_dropped_at_the_next_erase(
    settings: Settings, tmp_path: Path
) -> None:
    data = tmp_path / "old-folder"
    async with replica_set_server(data) as client:
        notes = client["oplog"]["notes"]
        await notes.insert_one({"_id": 1, "text": f"the {CANARY} ring is in the teapot"})
        await notes.update_one({"_id": 1}, {"$set": {"text": f"the {CANARY} ring moved"}})
        assert len([e for e in await oplog_entries(client) if CANARY in e]) == 2

    world = settings.model_copy(update={"alfred_data_dir": data, "mongodb_database": "oplog"})
    mongo = await open_mongo(world)
    alfreds_server = server_pid(data)
    try:
        erasure = ErasureFiles(None, lambda: None, mongo)
        counts = await erasure.scrub(None, None)
        assert counts["oplog_entries"] >= 2, counts
        again = await erasure.scrub(None, None)
        assert again["oplog_entries"] == 0, "nothing is left to drop"
        assert await mongo.db["notes"].find_one({"_id": 1}) is not None, "the data stays"
    finally:
        await mongo.close()
    assert await canary_in_oplog(data, alfreds_server) == []


async def test_a_pooled_connection_is_let_go_before_the_server_drops_it(
    mongo: MongoHandle,
) -> None:
    """The server closes a connection idle for ``DEFAULT_CLIENT_IDLE_TIMEOUT_S`` (the
    embedded program sets no other); a write on such a connection would fail, not retry."""
    assert (await mongo.client.admin.command("hello")).get("setName") is None, "standalone"
    idle = mongo.client.options.pool_options.max_idle_time_seconds
    assert idle is not None and idle < DEFAULT_CLIENT_IDLE_TIMEOUT_S
