"""A reply is sent first and journaled after, while its person reads it.

The Telegram handler sends Alfred's answer as soon as the turn has it, then journals it
(``Assistant.handle(..., deliver_first=True)``, then ``Assistant.settle``): the person
waits one database write fewer. If that last write fails, they have their answer
already, so they are not told "I've kept your message", and no replay may answer them a
second time: the update is spooled as answered, with the replies' words, and its replay
finishes the journal and says nothing, in the same bot or after a restart.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import AutoReconnect

from bot.telegram import spool_retry
from bot.telegram.delivery import ANSWERED
from memory.constants import FACTS
from memory.models import Role
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.polling import eventually
from tests.integration import test_telegram_bot as harness

bot_env = harness.bot_env
handler_errors = harness.handler_errors
spool_file = harness.spool_file

GOT_IT = harness.GOT_IT


class ReplyWriteCut:
    """The next ``left`` journal writes of Alfred's own replies fail as a connection
    reset does; the person's messages are journaled as usual."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from integrations.mongo.journal import MongoJournal

        self.left = 0
        self.cut = 0
        real = MongoJournal.append

        async def append(journal: MongoJournal, message: Any) -> bool:
            if message.role is Role.AGENT and self.left > 0:
                self.left -= 1
                self.cut += 1
                raise AutoReconnect("127.0.0.1: connection reset by peer (a restart)")
            return await real(journal, message)

        monkeypatch.setattr(MongoJournal, "append", append)


async def _replies_journaled(bot: Any, chat: dict[str, Any], message_id: int) -> list[str]:
    docs = bot.db["messages"].find({"_id": {"$regex": f"^{chat['id']}:a:r{message_id}:"}})
    return [str(d["text"]) async for d in docs]


async def test_a_reply_whose_journaling_failed_is_answered_once_and_journaled_by_the_retry(
    bot_env: Any, spool_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = ReplyWriteCut(monkeypatch)
    monkeypatch.setattr(spool_retry, "FIRST_WAIT", 0.2)
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        said = tg.text_message(dm, ann, "remember that the ferry leaves at nine")
        message_id = said["message"]["message_id"]
        cut.left = 1
        sent = await bot.say(said)
        # the answer went out before its journal write failed: no apology, no "kept"
        assert [m["text"] for m in sent] == [GOT_IT]
        assert cut.cut == 1
        # the retry finishes the turn's writes in this bot, and sends nothing
        await eventually(
            lambda: _replies_journaled(bot, dm, message_id),
            "the retried journal write of the reply",
            within=harness.REPLY_TIMEOUT,
        )
        await bot.sync()
        assert await _replies_journaled(bot, dm, message_id) == [GOT_IT]
        assert [m["text"] for m in tg.sent_messages if m["chat_id"] == dm["id"]] == [GOT_IT]
        assert not await asyncio.to_thread(spool_file.exists)
        # the fact was stored once, and the next turn's history holds the reply
        facts = await bot.db[FACTS].count_documents({"content": {"$regex": "ferry"}})
        assert facts == 1
        (recall,) = await bot.say(tg.text_message(dm, ann, "what do you remember about me?"))
        assert "ferry" in recall["text"]
        bot.check_alive()


async def test_an_answered_message_replayed_after_a_restart_is_journaled_not_answered_again(
    bot_env: Any, spool_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = ReplyWriteCut(monkeypatch)
    monkeypatch.setattr(spool_retry, "FIRST_WAIT", 3600.0)  # the next start replays it
    async with FakeTelegram(bot_username="alfred") as tg:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        said = tg.text_message(dm, ann, "remember that the ferry leaves at nine")
        message_id = said["message"]["message_id"]
        async with bot_env(tg) as bot:
            cut.left = 1
            sent = await bot.say(said)
            assert [m["text"] for m in sent] == [GOT_IT]
            (line,) = (await asyncio.to_thread(spool_file.read_text)).splitlines()
            spooled = json.loads(line)
            assert [a["text"] for a in spooled[ANSWERED]] == [GOT_IT]
            assert spooled["message"]["message_id"] == message_id
            assert await _replies_journaled(bot, dm, message_id) == []
        before = len(tg.sent_messages)
        async with bot_env(tg) as bot:  # its start replays the spool
            await eventually(
                lambda: _spool_gone(spool_file),
                "the spool replayed at the start",
                within=harness.REPLY_TIMEOUT,
            )
            await bot.sync()
            # nothing is sent or done twice, and the reply the first bot sent is
            # journaled from the spool's line, after the message it answered
            assert [m for m in tg.sent_messages[before:] if m["chat_id"] == dm["id"]] == []
            assert await bot.message_doc(dm, message_id) is not None
            assert await _replies_journaled(bot, dm, message_id) == [GOT_IT]
            history = [
                (d["role"], d["text"])
                async for d in bot.db["messages"]
                .find({"_id": {"$regex": f"^{dm['id']}:"}})
                .sort([("created_at", 1), ("_id", 1)])
            ]
            assert history == [
                ("user", "remember that the ferry leaves at nine"),
                ("agent", GOT_IT),
            ]
            facts = await bot.db[FACTS].count_documents({"content": {"$regex": "ferry"}})
            assert facts == 1
            (again,) = await bot.say(tg.text_message(dm, ann, "what do you remember about me?"))
            assert "ferry" in again["text"]
            bot.check_alive()


async def _spool_gone(path: Path) -> bool:
    return not await asyncio.to_thread(path.exists)
