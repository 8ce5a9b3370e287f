"""Durable by default: what Alfred confirmed survives ``kill -9`` of its database.

The test runs the real bot (``run_bot`` against the local fake Bot API) on an embedded
database of its own data folder, never the session's shared one: it kills that server.
"Got it, I'll remember that." is the promise under test, so the kill comes the moment
that reply reaches Telegram, with no quiet period in which the server could flush its
log on its own (before ``--sync-on-commit`` the memory and its journal entry were lost
that way).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from pymongo import AsyncMongoClient, WriteConcern

from bot.telegram.run import run_bot
from integrations.mongo.connection import MongoHandle
from memory.constants import FACTS, MESSAGES
from runtime.connections import open_mongo
from runtime.embedded import acquire
from runtime.embedded.state import EmbeddedPaths, process_alive
from tests.conftest import make_settings
from tests.helpers.fake_telegram import FakeTelegram

GOT_IT = "Got it, I'll remember that."
START_TIMEOUT = 60.0  # the first start loads the local embedding model
STOP_TIMEOUT = 60.0


async def _gone(pid: int, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while process_alive(pid):
        if time.monotonic() > deadline:
            pytest.fail(f"process {pid} still alive {within}s after SIGKILL")
        await asyncio.sleep(0.05)


async def test_a_confirmed_memory_survives_kill_9_of_the_database(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # This test's own lease: it names the server process to kill (the bot, in the same
    # process, shares the server and the lease).
    lease = await asyncio.to_thread(acquire, "mongo", data_dir)
    server_pid = lease.server_pid
    assert server_pid is not None
    settings = make_settings(data_dir, mongodb_database="alfred_durable")
    async with FakeTelegram(bot_username="alfred") as tg:
        world = settings.model_copy(
            update={"telegram_bot_token": SecretStr(tg.token), "telegram_api_base_url": tg.base_url}
        )
        stop = asyncio.Event()
        task = asyncio.create_task(run_bot(world, stop=stop), name="alfred-durable-bot")
        try:
            ann = tg.user("Ann", username="ann")
            dm = tg.private_chat(ann)
            tg.push_text(dm, ann, "/help")  # answered once the bot is up
            await tg.wait_for_messages(1, timeout=START_TIMEOUT)
            said = tg.push_text(dm, ann, "remember that my locker code is 4711")
            await tg.wait_until(
                lambda: task.done() or any(m["text"] == GOT_IT for m in tg.sent_messages),
                timeout=20,
                what="the confirmation",
            )
            if task.done():
                pytest.fail(f"run_bot ended: {task.exception()!r}")
            # The promise was made: the database dies at once, with no chance to flush.
            os.kill(server_pid, signal.SIGKILL)
            await _gone(server_pid)
        finally:
            stop.set()
            # How the bot winds down with its database gone is another matter (it may
            # complain); only what the database kept is under test here.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, STOP_TIMEOUT)
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    await asyncio.to_thread(lease.release)
    assert EmbeddedPaths(data_dir.absolute(), "mongo").server_dir.is_dir()

    # The same folder, a new server: what was confirmed is there.
    handle: MongoHandle = await open_mongo(settings)
    try:
        assert handle.lease is not None and handle.lease.server_pid != server_pid
        db = handle.db
        message_id = f"{dm['id']}:{said['message']['message_id']}"
        journaled = await db[MESSAGES].find_one({"_id": message_id})
        assert journaled is not None, "the journal entry of the confirmed message was lost"
        assert journaled["text"] == "remember that my locker code is 4711"
        facts = await db[FACTS].find({"content": {"$regex": re.escape("4711")}}).to_list()
        assert facts, "the confirmed memory was lost"
    finally:
        await handle.close()


async def test_the_embedded_server_keeps_an_unjournaled_write_across_kill_9(
    tmp_path: Path,
) -> None:
    """The server itself syncs every commit: even a ``w:1`` write without ``j`` (a tool, a
    script, a client other than Alfred's) is on disk once acknowledged."""
    lease = await asyncio.to_thread(acquire, "mongo", tmp_path)
    server_pid = lease.server_pid
    assert server_pid is not None
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        lease.url, w=1, journal=False, serverSelectionTimeoutMS=5000
    )
    try:
        await client.alfred.notes.insert_one({"_id": "canary", "text": "kept"})
        os.kill(server_pid, signal.SIGKILL)
    finally:
        await client.close()
    await _gone(server_pid)
    await asyncio.to_thread(lease.release)
    reopened = await asyncio.to_thread(acquire, "mongo", tmp_path)
    client = AsyncMongoClient(reopened.url, serverSelectionTimeoutMS=5000)
    try:
        assert reopened.server_pid != server_pid
        assert await client.alfred.notes.find_one({"_id": "canary"}) == {
            "_id": "canary",
            "text": "kept",
        }
    finally:
        await client.close()
        await asyncio.to_thread(reopened.release)


async def test_alfred_writes_wait_for_a_journaled_majority(mongo: MongoHandle) -> None:
    """Production MongoDB gets ``w: majority, j: true`` on every write of Alfred's client
    (the embedded server accepts the same concern: one code path for both)."""
    expected = WriteConcern(w="majority", j=True)
    assert mongo.client.write_concern == expected
    assert mongo.db.write_concern == expected
    assert mongo.db[FACTS].write_concern == expected
    # …and a write with it is acknowledged, not refused as an unknown concern.
    name = "durability_probe"
    result = await mongo.db[name].insert_one({"probe": True})
    assert result.acknowledged
    await mongo.db.drop_collection(name)
