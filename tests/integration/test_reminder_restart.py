"""A reminder survives a restart of the bot and its worker between being set and being due,
and is delivered once: the real bot (``run_bot``, its in-process arq worker included)
against the local fake Bot API, stopped after the confirmation and started again; and
``alfred run`` as a real process of its own, killed outright (SIGKILL: no shutdown at
all) after the confirmation and started again as a new process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from pymongo.asynchronous.collection import AsyncCollection

from bot.telegram.run import run_bot
from integrations.mongo.connection import MongoHandle
from integrations.mongo.reminders import REMINDERS
from runtime.settings import Settings
from tests.conftest import make_settings
from tests.helpers.fake_telegram import FakeTelegram

START_TIMEOUT = 90.0  # the first start may load the local embedding model
ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT = 60.0


async def _stop(stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    stop.set()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(task, STOP_TIMEOUT)
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def wait_for_document(
    collection: AsyncCollection[dict[str, Any]], query: dict[str, Any], *, what: str
) -> None:
    for _ in range(300):
        if await collection.find_one(query) is not None:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"timed out after 30 s waiting for {what}")


async def test_a_reminder_set_before_a_restart_is_delivered_once_after_it(
    settings: Settings, mongo: MongoHandle
) -> None:
    async with FakeTelegram(bot_username="alfred") as tg:
        world = make_settings(
            settings.alfred_data_dir,
            mongodb_database=f"restart_{uuid.uuid4().hex[:10]}",
            telegram_bot_token=SecretStr(tg.token),
            telegram_api_base_url=tg.base_url,
        )
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)

        def texts() -> list[str]:
            return [str(m["text"]) for m in tg.sent_messages if m["chat_id"] == dm["id"]]

        stop = asyncio.Event()
        task = asyncio.create_task(run_bot(world, stop=stop), name="alfred-before")
        try:
            tg.push_text(dm, ann, "remind me in 25 seconds to stir the soup")
            await tg.wait_until(
                lambda: task.done() or any("I'll remind you" in t for t in texts()),
                timeout=START_TIMEOUT,
                what="the confirmation",
            )
            if task.done():
                pytest.fail(f"run_bot ended: {task.exception()!r}")
        finally:
            await _stop(stop, task)
        assert not [t for t in texts() if "⏰" in t], "stopped before it was due"

        stop = asyncio.Event()
        task = asyncio.create_task(run_bot(world, stop=stop), name="alfred-after")
        try:
            await tg.wait_until(
                lambda: task.done() or any("⏰" in t for t in texts()),
                timeout=START_TIMEOUT + 30,
                what="the reminder",
            )
            if task.done():
                pytest.fail(f"run_bot ended: {task.exception()!r}")
            sent = next(m for m in tg.sent_messages if "⏰" in str(m["text"]))
            keyboard = sent["message"]["reply_markup"]["inline_keyboard"]
            assert [b["text"] for b in keyboard[0]] == ["Done", "Snooze 10 min"]
            # A person presses only once the message reached them, after the bot had
            # Telegram's answer and recorded which message it was; here the press would be
            # pushed as soon as the fake saw the request, so wait for that record first.
            delivered = {"deliveries.message_id": sent["message"]["message_id"]}
            reminders = mongo.db.client[world.mongodb_database][REMINDERS]
            await wait_for_document(reminders, delivered, what="the delivery's record")
            # Ann presses "Snooze 10 min": a callback query, as Telegram sends it
            tg.push_update(
                {
                    "callback_query": {
                        "id": "press-1",
                        "from": ann,
                        "chat_instance": str(dm["id"]),
                        "data": keyboard[0][1]["callback_data"],
                        "message": sent["message"],
                    }
                }
            )
            await tg.wait_until(
                lambda: any(t.startswith("Snoozed") for t in texts()), timeout=30, what="snooze"
            )
            # one more sweep of the running worker may pass; it must not send it again
            tg.push_text(dm, ann, "what are my reminders?")
            await tg.wait_until(
                lambda: any("Reminders here" in t for t in texts()), timeout=30, what="the list"
            )
        finally:
            await _stop(stop, task)
        assert [t for t in texts() if "⏰" in t] == ["⏰ Reminder: stir the soup"]
        assert "Snoozed for 10 minutes: stir the soup." in texts()
        assert [c["callback_query_id"] for c in tg.answered_callbacks] == ["press-1"]
        # Listed as due about ten minutes after the snooze, on the day that is: "today", or
        # "tomorrow" when the ten minutes cross midnight (the bot's clock is the real one).
        listed = texts()[-1]
        found = re.search(r"stir the soup — (today|tomorrow)\b.* at (\d\d):(\d\d)", listed)
        assert found is not None, listed
        listed_at = datetime.now(UTC)
        due = listed_at.replace(hour=int(found[2]), minute=int(found[3]), second=0, microsecond=0)
        if found[1] == "tomorrow":
            due += timedelta(days=1)
        assert timedelta(minutes=8) <= due - listed_at <= timedelta(minutes=11), listed


def _alfred_run(
    settings: Settings, database: str, tg: FakeTelegram, log: Path
) -> subprocess.Popen[bytes]:
    """``alfred run`` as an operator starts it: its own process, on the session's embedded
    servers (a lease on them, through the data folder), its output in ``log``."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(settings.data_dir().parent),
        "ALFRED_DATA_DIR": str(settings.data_dir()),
        "MONGODB_DATABASE": database,
        "TELEGRAM_BOT_TOKEN": tg.token,
        "TELEGRAM_API_BASE_URL": tg.base_url,
        "METRICS_PORT": "0",
        "PTB_TIMEDELTA": "1",
        "PYTHONPATH": str(ROOT),
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run"],
            cwd=settings.data_dir().parent,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def _ended(process: subprocess.Popen[bytes], how: signal.Signals) -> None:
    if process.poll() is None:
        process.send_signal(how)
    await asyncio.to_thread(process.wait, STOP_TIMEOUT)


async def test_a_reminder_outlives_its_bot_process_killed_outright_and_is_delivered_once(
    settings: Settings, tmp_path: Path
) -> None:
    database = f"restart_{uuid.uuid4().hex[:10]}"
    log = tmp_path / "alfred-run.log"
    async with FakeTelegram(bot_username="alfred") as tg:
        bea = tg.user("Bea", username="bea")
        dm = tg.private_chat(bea)

        def texts() -> list[str]:
            return [str(m["text"]) for m in tg.sent_messages if m["chat_id"] == dm["id"]]

        def alive(process: subprocess.Popen[bytes]) -> None:
            if process.poll() is not None:
                pytest.fail(f"alfred run ended ({process.returncode}):\n{log.read_text()}")

        first = _alfred_run(settings, database, tg, log)
        try:
            tg.push_text(dm, bea, "remind me in 20 seconds to turn the compost")
            await tg.wait_until(
                lambda: first.poll() is not None or any("I'll remind you" in t for t in texts()),
                timeout=START_TIMEOUT,
                what="the confirmation",
            )
            alive(first)
        finally:
            await _ended(first, signal.SIGKILL)  # no shutdown: the worker dies mid-whatever
        assert first.returncode == -signal.SIGKILL
        assert not [t for t in texts() if "⏰" in t], "killed before it was due"

        second = _alfred_run(settings, database, tg, log)
        try:
            await tg.wait_until(
                lambda: second.poll() is not None or any("⏰" in t for t in texts()),
                timeout=START_TIMEOUT + 60,
                what="the reminder",
            )
            alive(second)
            # the request Telegram may hand the new process again must not set it twice,
            # and the new worker's sweep must not send it again: ask, and wait for the answer
            tg.push_text(dm, bea, "what are my reminders?")
            await tg.wait_until(
                lambda: second.poll() is not None or any("reminders" in t for t in texts()),
                timeout=60,
                what="the list",
            )
            alive(second)
        finally:
            await _ended(second, signal.SIGTERM)
        delivered = [t for t in texts() if "⏰" in t]
        assert len(delivered) == 1 and delivered[0].endswith("Reminder: turn the compost"), texts()
        assert [t for t in texts() if t.startswith("I'll remind you")] != []
        assert len([t for t in texts() if t.startswith("I'll remind you")]) == 1, texts()
        assert texts()[-1] == "There are no reminders set here.", texts()
