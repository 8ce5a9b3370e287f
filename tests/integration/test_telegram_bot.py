"""Alfred's real bot over the real Telegram protocol: polling, webhook, faults.

Every test starts Alfred exactly as ``alfred run`` does (:func:`bot.telegram.run.run_bot`, as an
asyncio task with a stop event), with ``TELEGRAM_API_BASE_URL`` pointing the real
python-telegram-bot client at a local fake Bot API server
(:mod:`tests.helpers.fake_telegram`). Each test has its own MongoDB database on the
session's embedded server, so tests never see each other's data.

Negative checks ("no reply") never sleep: PTB handles updates one at a time, in order,
so once the reply to a later update has arrived, every earlier update was handled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from pydantic import SecretStr
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ServerSelectionTimeoutError

from bot.bench.fake_openai import (
    FakeOpenAI,
    RecordedRequest,
    completion,
    json_task_handler,
    server_error,
)
from bot.telegram import spool_retry
from bot.telegram.handlers.messages import MEMORY_RESTARTING, NON_TEXT_REPLY
from bot.telegram.run import run_bot
from integrations.mongo.connection import MongoHandle
from integrations.redis.connection import RedisHandle
from memory.constants import FACTS
from memory.errors import ConfigurationError
from runtime.embedded import acquire
from runtime.settings import Settings
from services.reply.assistant import LLM_DOWN
from services.reply.commands import UNKNOWN_COMMAND
from tests.helpers.cleanup import drop_test_database
from tests.helpers.failing import FailNext
from tests.helpers.fake_telegram import MAX_TEXT_LENGTH, FakeTelegram, free_port

ROOT = Path(__file__).resolve().parents[2]
GOT_IT = "Got it, I'll remember that."
START_TIMEOUT = 60.0  # the first start loads the local embedding model
REPLY_TIMEOUT = 20.0

Document = dict[str, Any]


# --------------------------------------------------------------------------------------
# Harness
# --------------------------------------------------------------------------------------


@dataclass
class Bot:
    """A running Alfred and what a test needs to talk to it and look inside."""

    tg: FakeTelegram
    settings: Settings
    db: AsyncDatabase[Document]
    task: asyncio.Task[None]
    marker_user: Document
    marker_chat: Document

    async def say(
        self,
        update: dict[str, Any],
        timeout: float = REPLY_TIMEOUT,  # noqa: ASYNC109 - a test deadline
    ) -> list[Document]:
        """Push an update and return the messages the bot sent because of it.

        The update is followed by a marker: a /help from a dedicated user. Its answer
        proves the update before it was fully handled (PTB handles updates one at a
        time, in order), so the messages between are this update's replies, maybe none.
        """
        before = len(self.tg.sent_messages)
        self.tg.push_update(update)
        await self.sync(timeout)
        marker = self.marker_chat["id"]
        return [m for m in self.tg.sent_messages[before:] if m["chat_id"] != marker]

    async def sync(self, timeout: float = REPLY_TIMEOUT) -> None:  # noqa: ASYNC109
        """Wait until every update pushed so far was handled."""
        before = len(self.tg.sent_messages)
        marker = self.marker_chat["id"]
        self.tg.push_text(self.marker_chat, self.marker_user, "/help")
        await self.tg.wait_until(
            lambda: (
                self.task.done()
                or any(m["chat_id"] == marker for m in self.tg.sent_messages[before:])
            ),
            timeout=timeout,
            what="the marker's /help answer",
        )
        self.check_alive()

    def check_alive(self) -> None:
        if self.task.done():
            raise AssertionError(f"run_bot ended: {self.task.exception()!r}")

    async def message_doc(self, chat: Document, message_id: int) -> Document | None:
        return await self.db["messages"].find_one({"_id": f"{chat['id']}:{message_id}"})


def _message_id(update: Document) -> int:
    for key in ("message", "edited_message", "channel_post"):
        if key in update:
            return int(update[key]["message_id"])
    raise KeyError("no message in update")


def _texts(messages: list[Document]) -> list[str]:
    return [str(m["text"]) for m in messages]


class HandlerErrors(logging.Handler):
    """Collects what reached the application's error handler (an unhandled exception)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("unhandled error in a handler"):
            self.records.append(record)


@pytest.fixture
def handler_errors() -> Iterator[HandlerErrors]:
    collector = HandlerErrors()
    logger = logging.getLogger("bot.telegram")
    logger.addHandler(collector)
    try:
        yield collector
    finally:
        logger.removeHandler(collector)


@pytest.fixture
def spool_file(settings: Settings) -> Iterator[Path]:
    """The spool of the session's data folder, empty before and after each test (a
    spooled update left behind would be replayed into the next test's bot)."""
    path = settings.data_dir() / "spool" / "updates.jsonl"
    path.unlink(missing_ok=True)
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
async def bot_env(
    settings: Settings,
    mongo: MongoHandle,
    redis: RedisHandle,
    spool_file: Path,
    handler_errors: HandlerErrors,
) -> AsyncIterator[Callable[..., Any]]:
    """``async with env(tg, **settings) as bot``: Alfred's ``run_bot`` on a fresh database.

    Depending on the session's ``mongo``/``redis`` keeps the embedded servers up between
    tests (``run_bot`` leases the same ones).
    """
    database = f"tg_{uuid.uuid4().hex[:12]}"

    @contextlib.asynccontextmanager
    async def start(tg: FakeTelegram, **overrides: Any) -> AsyncIterator[Bot]:
        world = settings.model_copy(
            update={
                "telegram_bot_token": SecretStr(tg.token),
                "telegram_api_base_url": tg.base_url,
                "mongodb_database": database,
                # One update at a time, in arrival order: ``Bot.say`` proves an update
                # handled by the answer to a marker pushed after it, in another chat.
                # Tests of concurrent handling set their own; every other test runs the
                # bot with the production default.
                "update_concurrency": 1,
                **overrides,
            }
        )
        stop = asyncio.Event()
        task = asyncio.create_task(run_bot(world, stop=stop), name="alfred-run-bot")
        marker = tg.user("Marker", username="marker")
        bot = Bot(tg, world, mongo.client[database], task, marker, tg.private_chat(marker))
        try:
            # Started when the first update is answered.
            await bot.sync(START_TIMEOUT)
            yield bot
        finally:
            stop.set()
            try:
                await asyncio.wait_for(task, 30)
            finally:
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    try:
        yield start
    finally:
        await drop_test_database(mongo.client, database)
    assert not handler_errors.records, [r.getMessage() for r in handler_errors.records]


# --------------------------------------------------------------------------------------
# 1. Polling: the conversation
# --------------------------------------------------------------------------------------


async def test_polling_conversation_in_dm_and_group(bot_env: Any) -> None:
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        alice = tg.user("Alice", username="alice")
        bob = tg.user("Bob", username="bob")
        dm_alice = tg.private_chat(alice)
        family = tg.group_chat(title="Family", members=[alice, bob])

        # polling, not a webhook
        assert tg.webhook is None and tg.calls_of("getUpdates")

        # a DM "remember that …" is confirmed inline
        sent = await bot.say(
            tg.text_message(dm_alice, alice, "remember that my favourite tea is rooibos")
        )
        assert _texts(sent) == [GOT_IT]
        assert sent[0]["chat_id"] == dm_alice["id"] and sent[0]["reply_to_message_id"] is None

        # an unaddressed group message: journaled, not answered
        chatter = tg.text_message(family, bob, "Who is picking up the kids today?")
        assert await bot.say(chatter) == []
        doc = await bot.message_doc(family, _message_id(chatter))
        assert doc is not None and doc["text"] == "Who is picking up the kids today?"
        assert doc["thread_id"] == str(family["id"])

        # a mention gets a reply in the group, as a reply to the message
        mention = tg.text_message(
            family, alice, "@alfred remember that we are going to Lisbon in May"
        )
        sent = await bot.say(mention)
        assert _texts(sent) == [GOT_IT]
        assert sent[0]["chat_id"] == family["id"]
        assert sent[0]["reply_to_message_id"] == _message_id(mention)

        # a reply to one of the bot's messages counts as addressed
        follow_up = tg.text_message(
            family, bob, "what do you remember about us?", reply_to=sent[0]["message_id"]
        )
        sent = await bot.say(follow_up)
        assert len(sent) == 1 and sent[0]["chat_id"] == family["id"]
        assert "Lisbon" in sent[0]["text"]
        assert sent[0]["reply_to_message_id"] == _message_id(follow_up)

        # … and so does naming it
        named = tg.text_message(family, bob, "Alfred, remember that we recycle on Tuesdays")
        sent = await bot.say(named)
        assert _texts(sent) == [GOT_IT] and sent[0]["reply_to_message_id"] == _message_id(named)

        # commands
        dm_bob = tg.private_chat(bob)
        (start,) = await bot.say(tg.text_message(dm_bob, bob, "/start"))
        assert start["text"].startswith("Hello! I'm Alfred") and "Family" in start["text"]
        (help_,) = await bot.say(tg.text_message(dm_bob, bob, "/help"))
        assert "Commands: /start, /help, /status" in help_["text"]
        (status,) = await bot.say(tg.text_message(dm_bob, bob, "/status"))
        assert status["text"].startswith("Private chat. Your circles: Family")
        group_status = tg.text_message(family, alice, "/status@alfred")
        (status,) = await bot.say(group_status)
        assert status["text"].startswith("Circle: Family")
        assert status["reply_to_message_id"] == _message_id(group_status)
        (unknown,) = await bot.say(tg.text_message(dm_bob, bob, "/foo"))
        assert unknown["text"] == UNKNOWN_COMMAND
        # a command for another bot in the group is not ours to answer
        assert await bot.say(tg.text_message(family, bob, "/foo@otherbot")) == []

        # while Bob is a member, his DM sees the circle's memories
        (before,) = await bot.say(tg.text_message(dm_bob, bob, "what do you remember about us?"))
        assert "Lisbon" in before["text"]

        # Bob leaves the group: the circle's memories leave his DM at once
        assert await bot.say(tg.left_chat_member(family, bob, bob)) == []
        (after,) = await bot.say(tg.text_message(dm_bob, bob, "what do you remember about us?"))
        assert "Lisbon" not in after["text"]
        circle = await bot.db["circles"].find_one({"_id": str(family["id"])})
        assert circle is not None and str(bob["id"]) not in circle["member_ids"]
        # … and Alice, still a member, keeps them in hers
        (kept,) = await bot.say(tg.text_message(dm_alice, alice, "what do you remember about us?"))
        assert "Lisbon" in kept["text"]

        # the bot added to a new group greets it, and the group is a circle at once
        carol = tg.user("Carol", username="carol")
        work = tg.group_chat(title="Work", members=[carol], bot_status="left")
        greeting = await bot.say(tg.my_chat_member(work, carol, old_status="left"))
        assert len(greeting) == 1 and greeting[0]["chat_id"] == work["id"]
        assert greeting[0]["text"].startswith("Hello! I'm Alfred")
        assert "@alfred" in greeting[0]["text"]
        # Telegram also sends the service message; it must not greet twice
        assert await bot.say(tg.new_chat_members(work, carol, [tg.bot_user])) == []
        new_circle = await bot.db["circles"].find_one({"_id": str(work["id"])})
        assert new_circle is not None and new_circle["archived_at"] is None
        assert str(carol["id"]) in new_circle["member_ids"]
        sent = await bot.say(
            tg.text_message(work, carol, "@alfred remember that the standup is at 9:30")
        )
        assert _texts(sent) == [GOT_IT] and sent[0]["chat_id"] == work["id"]

        # chat_member updates (supergroups may hide the service messages) keep it right too
        dave = tg.user("Dave", username="dave")
        assert await bot.say(tg.chat_member(work, carol, dave)) == []
        new_circle = await bot.db["circles"].find_one({"_id": str(work["id"])})
        assert new_circle is not None and str(dave["id"]) in new_circle["member_ids"]
        left = tg.chat_member(work, dave, dave, old_status="member", new_status="left")
        assert await bot.say(left) == []
        new_circle = await bot.db["circles"].find_one({"_id": str(work["id"])})
        assert new_circle is not None and str(dave["id"]) not in new_circle["member_ids"]

        # a user blocking the bot in private is no event to crash on
        blocked = tg.my_chat_member(dm_bob, bob, old_status="member", new_status="kicked")
        assert await bot.say(blocked) == []

        # the bot removed from a group: the circle is archived
        kicked = tg.my_chat_member(family, alice, old_status="member", new_status="kicked")
        assert await bot.say(kicked) == []
        circle = await bot.db["circles"].find_one({"_id": str(family["id"])})
        assert circle is not None and circle["archived_at"] is not None
        (gone,) = await bot.say(tg.text_message(dm_alice, alice, "/status"))
        assert "Family" not in gone["text"]
        bot.check_alive()


async def test_a_request_nobody_addressed_is_kept_and_gets_a_reaction(bot_env: Any) -> None:
    """Over the real Bot API protocol: an unaddressed "don't forget …" in a group is stored
    and acknowledged with ``setMessageReaction`` on that message, no message sent; a chat
    that refuses the reaction still keeps the memory, and nothing crashes."""
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ana = tg.user("Ana", username="ana")
        luis = tg.user("Luis", username="luis")
        home = tg.group_chat(title="Home", members=[ana, luis])

        request = tg.text_message(home, ana, "Don't forget that the piano tuner comes on Friday")
        assert await bot.say(request) == []
        assert tg.reactions == [
            {
                "chat_id": home["id"],
                "message_id": _message_id(request),
                "emoji": "\N{THUMBS UP SIGN}",
            }
        ]
        doc = await bot.message_doc(home, _message_id(request))
        assert doc is not None and doc["handled"] is True
        assert await bot.db["memory_facts"].count_documents({"content": {"$regex": "piano tuner"}})

        tg.fail_next("setMessageReaction", 400, description="Bad Request: REACTION_INVALID")
        refused = tg.text_message(home, luis, "the gutter needs clearing in October, remember that")
        assert await bot.say(refused) == []
        assert len(tg.reactions) == 1
        assert await bot.db["memory_facts"].count_documents({"content": {"$regex": "gutter"}})

        # plain chatter: no reaction, no message
        assert await bot.say(tg.text_message(home, luis, "has anyone seen the remote?")) == []
        assert len(tg.reactions) == 1
        bot.check_alive()


# --------------------------------------------------------------------------------------
# 2. Webhook mode, and 3. deduplication
# --------------------------------------------------------------------------------------


async def test_webhook_mode_checks_the_secret_and_dedups(bot_env: Any) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram"
    secret = "s3cret-Token_for-tests"
    async with (
        FakeTelegram(bot_username="alfred") as tg,
        bot_env(
            tg,
            webhook_url=url,
            webhook_listen="127.0.0.1",
            webhook_port=port,
            webhook_secret=SecretStr(secret),
        ) as bot,
    ):
        # setWebhook recorded the URL and the secret; updates came by webhook, not polling
        assert tg.webhook is not None
        assert tg.webhook.url == url and tg.webhook.secret_token == secret
        assert not tg.calls_of("getUpdates")
        assert tg.webhook_deliveries and all(
            d.status == 200 and d.secret_token == secret for d in tg.webhook_deliveries
        )

        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        family = tg.group_chat(title="Family", members=[ann])
        sent = await bot.say(tg.text_message(dm, ann, "remember that my bike is the blue one"))
        assert _texts(sent) == [GOT_IT] and sent[0]["chat_id"] == dm["id"]
        mention = tg.text_message(
            family, ann, "@alfred remember that we water the plants on Sundays"
        )
        sent = await bot.say(mention)
        assert _texts(sent) == [GOT_IT] and sent[0]["reply_to_message_id"] == _message_id(mention)

        # the same update delivered twice (Telegram retries a webhook it thinks failed)
        twice = tg.push_update(tg.text_message(dm, ann, "remember that my locker is number 12"))
        sent = await bot.say(twice)
        assert _texts(sent) == [GOT_IT], "a redelivered update was answered again"
        assert [d.status for d in tg.webhook_deliveries if d.update_id == twice["update_id"]] == [
            200,
            200,
        ]

        # a POST without the secret, or with a wrong one, is refused and not processed
        forged = {
            "update_id": 999_000_001,
            **tg.text_message(dm, ann, "remember that the forged message got through"),
        }
        async with aiohttp.ClientSession() as http:
            for headers in ({}, {"X-Telegram-Bot-Api-Secret-Token": "wrong"}):
                async with http.post(url, json=forged, headers=headers) as response:
                    assert response.status == 403
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200
            # malformed bodies with the right secret: 400, not a crash
            good = {"X-Telegram-Bot-Api-Secret-Token": secret}
            for body in (b"not json", b"123", b"[1, 2]", b"{}", b"null"):
                async with http.post(url, data=body, headers=good) as response:
                    assert response.status == 400, body
        await bot.sync()
        assert await bot.message_doc(dm, _message_id(forged)) is None
        assert all("forged" not in str(m["text"]) for m in tg.sent_messages)
        bot.check_alive()


async def test_polling_dedups_and_rides_out_rate_limits(bot_env: Any) -> None:
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        # the same update_id queued twice before the bot reads either
        update = tg.push_update(tg.text_message(dm, ann, "remember that I parked on level 3"))
        sent = await bot.say(update)
        assert _texts(sent) == [GOT_IT]
        stored = await bot.db["messages"].count_documents(
            {"thread_id": str(ann["id"]), "role": "user"}
        )
        assert stored == 1

        # 5. Telegram says "too many requests, retry after 1s": AIORateLimiter waits and
        # retries, and the answer still arrives (once)
        tg.rate_limit_next("sendMessage", retry_after=1)
        sent = await bot.say(tg.text_message(dm, ann, "remember that the gym opens at 6"))
        assert _texts(sent) == [GOT_IT]
        statuses = [c.status for c in tg.calls if c.method == "sendMessage"]
        assert statuses[-3:-1] == [429, 200]  # then the marker's answer
        limited, retried = [c for c in tg.calls if c.method == "sendMessage"][-3:-1]
        assert retried.at - limited.at >= 1.0
        assert retried.params["text"] == GOT_IT


# --------------------------------------------------------------------------------------
# 4. Bad input
# --------------------------------------------------------------------------------------


async def test_non_text_edits_channels_forwards_and_long_messages(bot_env: Any) -> None:
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann = tg.user("Ann", username="ann")
        ben = tg.user("Ben", username="ben")
        dm = tg.private_chat(ann)
        family = tg.group_chat(title="Family", members=[ann, ben])

        # stickers and voice notes: a clear answer in a DM, silence in a group
        for update in (tg.sticker_message(dm, ann), tg.voice_message(dm, ann)):
            assert _texts(await bot.say(update)) == [NON_TEXT_REPLY]
        for update in (tg.sticker_message(family, ben), tg.voice_message(family, ben)):
            assert await bot.say(update) == []
        # … unless the sticker answers the bot
        (hello,) = await bot.say(tg.text_message(family, ann, "hi @alfred"))
        sticker = tg.sticker_message(family, ben)
        sticker["message"]["reply_to_message"] = tg.messages[(family["id"], hello["message_id"])]
        (answer,) = await bot.say(sticker)
        assert answer["text"] == NON_TEXT_REPLY
        assert answer["reply_to_message_id"] == _message_id(sticker)

        # empty or blank text (clients never send it; a buggy proxy might)
        for text in ("", "   "):
            assert _texts(await bot.say(tg.text_message(dm, ann, text, entities=[]))) == [
                NON_TEXT_REPLY
            ]

        # a photo's caption is read as the message
        photo = tg.photo_message(dm, ann, "remember that the wifi password is on the fridge")
        assert _texts(await bot.say(photo)) == [GOT_IT]
        doc = await bot.message_doc(dm, _message_id(photo))
        assert doc is not None and "wifi password" in doc["text"]
        (recall,) = await bot.say(tg.text_message(dm, ann, "what do you remember about me?"))
        assert "wifi password" in recall["text"]

        # an edited message is learned from, not answered a second time: its journal
        # entry takes the new text (tests/integration/test_edits_and_captions.py)
        original = tg.text_message(dm, ann, "remember that my dentist is Dr Ames")
        assert _texts(await bot.say(original)) == [GOT_IT]
        edit = tg.push_update(tg.edited_message(original, "remember that my dentist is Dr Baker"))
        assert await bot.say(edit) == []
        edited = await bot.message_doc(dm, _message_id(original))
        assert edited is not None and "Dr Baker" in edited["text"]
        assert "Dr Ames" not in edited["text"]
        # an edited command is not answered again either
        command = tg.text_message(dm, ann, "/help")
        assert len(await bot.say(command)) == 1
        assert await bot.say(tg.edited_message(command, "/status")) == []

        # channel posts are ignored, commands included, without a crash
        news = tg.channel(title="News")
        for text in ("@alfred remember that the channel said hi", "/help"):
            assert await bot.say(tg.channel_post(news, text)) == []
        assert await bot.db["messages"].count_documents({"thread_id": str(news["id"])}) == 0

        # a forwarded message is journaled as forwarded; it is not the sender's own request
        forwarded = tg.forwarded_message(dm, ann, "remember that I owe Tom 20 euros", origin=ben)
        sent = await bot.say(forwarded)
        assert len(sent) >= 1 and GOT_IT not in _texts(sent)
        doc = await bot.message_doc(dm, _message_id(forwarded))
        assert doc is not None and doc["text"].startswith("[forwarded]")
        assert await bot.say(tg.forwarded_message(family, ben, "lunch at noon", origin="Zed")) == []

        # 5,000 characters in: answered, and nothing over Telegram's limit goes out
        long_text = "We should plan the garden. " + "Tomatoes need sun and water every day. " * 128
        assert len(long_text) > 5000
        for update in (
            tg.text_message(dm, ann, long_text),
            tg.text_message(dm, ann, "remember that " + long_text),
            tg.text_message(family, ann, "@alfred " + long_text),
        ):
            sent = await bot.say(update)
            assert sent, "a long message got no answer"
            assert all(0 < len(m["text"]) <= MAX_TEXT_LENGTH for m in sent)
        doc = await bot.db["messages"].find_one({"text": long_text})
        assert doc is not None, "the long message was not journaled whole"

        # nothing the bot sent was refused by Telegram
        assert all(c.status == 200 for c in tg.calls if c.method == "sendMessage")
        bot.check_alive()


async def test_forum_topics_get_their_answers_in_the_same_topic(bot_env: Any) -> None:
    """A supergroup with topics: every answer goes back into the asker's topic, and a
    topic is not a privacy boundary (the whole group is one circle thread)."""
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann = tg.user("Ann", username="ann")
        ben = tg.user("Ben", username="ben")
        forum = tg.group_chat(title="House", supergroup=True, is_forum=True, members=[ann, ben])
        dm_ben = tg.private_chat(ben)

        remember = tg.text_message(
            forum,
            ann,
            "@alfred remember that the boiler is serviced in March",
            message_thread_id=7,
        )
        (got,) = await bot.say(remember)
        assert got["text"] == GOT_IT and got["message_thread_id"] == 7
        assert got["reply_to_message_id"] == _message_id(remember)

        # asked in another topic, the group's memory is there, answered in that topic
        ask = tg.text_message(
            forum, ben, "@alfred what do you remember about the boiler?", message_thread_id=9
        )
        (answer,) = await bot.say(ask)
        assert answer["message_thread_id"] == 9 and "boiler" in answer["text"]

        # commands and non-text answers follow the topic too
        (status,) = await bot.say(
            tg.text_message(forum, ben, "/status@alfred", message_thread_id=9)
        )
        assert status["message_thread_id"] == 9 and status["text"].startswith("Circle: House")
        sticker = tg.sticker_message(forum, ben)
        sticker["message"]["reply_to_message"] = tg.messages[(forum["id"], answer["message_id"])]
        sticker["message"]["message_thread_id"] = 9
        sticker["message"]["is_topic_message"] = True
        (non_text,) = await bot.say(sticker)
        assert non_text["text"] == NON_TEXT_REPLY and non_text["message_thread_id"] == 9

        # the General topic (no thread id) and private chats carry none
        (general,) = await bot.say(tg.text_message(forum, ann, "@alfred hello"))
        assert general["message_thread_id"] is None
        (private,) = await bot.say(tg.text_message(dm_ben, ben, "hello"))
        assert private["message_thread_id"] is None
        bot.check_alive()


# --------------------------------------------------------------------------------------
# 4. Faults: the chat model long-winded or down, the database down
# --------------------------------------------------------------------------------------


class ChatModel:
    """The chat model behind the fake OpenAI server: long answers, or down (500s)."""

    LONG = "\n\n".join(
        f"Paragraph {i}: " + "the garden plan needs sun, water and patience. " * 12
        for i in range(10)
    )

    def __init__(self) -> None:
        self.down = False
        self.tasks = json_task_handler()

    def __call__(self, request: RecordedRequest) -> Any:
        if self.down:
            return server_error(500, "the model is on fire")
        if not request.tools:  # formation tasks: the fake's default JSON answers
            return self.tasks(request)
        return completion(self.LONG)


async def test_chat_model_long_answers_are_split_and_an_outage_gets_an_apology(
    bot_env: Any,
) -> None:
    model = ChatModel()
    assert len(ChatModel.LONG) > MAX_TEXT_LENGTH
    async with (
        FakeOpenAI(embedding_dimensions=8, chat_handler=model) as openai_fake,
        FakeTelegram(bot_username="alfred") as tg,
        bot_env(
            tg,
            openai_api_key=SecretStr("test-key"),
            openai_base_url=openai_fake.base_url,
            embeddings_provider="local",
        ) as bot,
    ):
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        family = tg.group_chat(title="Family", members=[ann])

        # a reply longer than Telegram allows arrives whole, in several messages
        sent = await bot.say(tg.text_message(dm, ann, "How should we plan the garden this year?"))
        assert len(sent) >= 2 and all(len(m["text"]) <= MAX_TEXT_LENGTH for m in sent)
        assert "".join("".join(_texts(sent)).split()) == "".join(ChatModel.LONG.split())
        assert openai_fake.chat_requests, "the chat model was asked"

        # the model is down: a short apology; the message is still journaled
        model.down = True
        asked = len(openai_fake.chat_requests)
        question = tg.text_message(dm, ann, "What should I cook for dinner tonight?")
        assert _texts(await bot.say(question)) == [LLM_DOWN]
        assert len(openai_fake.chat_requests) > asked, "the model was really tried"
        doc = await bot.message_doc(dm, _message_id(question))
        assert doc is not None and doc["text"] == "What should I cook for dinner tonight?"
        mention = tg.text_message(family, ann, "@alfred any idea for Sunday lunch?")
        (apology,) = await bot.say(mention)
        assert apology["text"] == LLM_DOWN
        assert apology["reply_to_message_id"] == _message_id(mention)
        unaddressed = tg.text_message(family, ann, "I'll buy bread on the way home")
        assert await bot.say(unaddressed) == []
        assert await bot.message_doc(family, _message_id(unaddressed)) is not None
        bot.check_alive()


async def test_chat_model_unreachable(bot_env: Any) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    async with (
        FakeTelegram(bot_username="alfred") as tg,
        bot_env(
            tg,
            openai_api_key=SecretStr("test-key"),
            openai_base_url=closed,
            embeddings_provider="local",
        ) as bot,
    ):
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        question = tg.text_message(dm, ann, "What should I cook for dinner tonight?")
        assert _texts(await bot.say(question)) == [LLM_DOWN]
        assert await bot.message_doc(dm, _message_id(question)) is not None


async def test_database_down_apologises_spools_and_replays(
    bot_env: Any, spool_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from integrations.mongo.journal import MongoJournal

    journal_append = MongoJournal.append

    async def down(self: MongoJournal, message: Any) -> bool:
        raise ServerSelectionTimeoutError("No servers found yet (simulated outage)")

    # What is checked is the spool's file and the replay at the next start: the retry
    # that would replay it in this bot after a second is held off (its own test is below).
    monkeypatch.setattr(spool_retry, "FIRST_WAIT", 3600.0)
    async with FakeTelegram(bot_username="alfred") as tg:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        family = tg.group_chat(title="Family", members=[ann])
        lost = tg.text_message(dm, ann, "remember that the spare key is under the blue pot")
        async with bot_env(tg) as bot:
            monkeypatch.setattr(MongoJournal, "append", down)
            sent = await bot.say(lost)
            assert _texts(sent) == [MEMORY_RESTARTING]
            assert await bot.say(tg.text_message(family, ann, "we're out of milk")) == []
            # both updates are in the spool under the data folder
            lines = (await asyncio.to_thread(spool_file.read_text)).splitlines()
            spooled = [json.loads(line) for line in lines]
            assert len(spooled) == 2
            assert spooled[0]["message"]["message_id"] == _message_id(lost)
            assert spooled[0]["message"]["chat"]["id"] == dm["id"]
            assert spooled[1]["message"]["chat"]["id"] == family["id"]
            # the database is back: the bot never stopped
            monkeypatch.setattr(MongoJournal, "append", journal_append)
            sent = await bot.say(tg.text_message(dm, ann, "remember that I like my coffee black"))
            assert _texts(sent) == [GOT_IT]
            assert await bot.message_doc(dm, _message_id(lost)) is None

        # a crash may leave a torn last line; start-up must not choke on it
        with spool_file.open("a", encoding="utf-8") as f:
            f.write('[1, 2]\n{"update_id": 12, "message": {"mess\n')

        # the next start replays the spool: the lost message is learned and answered now
        before = len(tg.sent_messages)
        async with bot_env(tg) as bot:
            await tg.wait_until(
                lambda: any(
                    m["chat_id"] == dm["id"] and m["text"] == GOT_IT
                    for m in tg.sent_messages[before:]
                ),
                timeout=REPLY_TIMEOUT,
                what="the spooled message's answer",
            )
            await bot.sync()
            doc = await bot.message_doc(dm, _message_id(lost))
            assert doc is not None and "spare key" in doc["text"]
            assert await bot.db["messages"].find_one({"text": "we're out of milk"}) is not None
            assert not await asyncio.to_thread(spool_file.exists)
            (recall,) = await bot.say(tg.text_message(dm, ann, "what do you remember about me?"))
            assert "spare key" in recall["text"]


async def test_a_message_that_failed_after_its_journal_entry_is_answered_by_the_retry(
    bot_env: Any, spool_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database fails after the message was journaled but before its memory was
    stored, while every ping of the watch succeeds (an outage shorter than a ping): no
    outage ends to replay the spool, so the retry does, in the same bot, and stores and
    answers it (the journal entry already there does not mean it was handled). Its
    person was told "I've kept your message": that must come true without a restart."""
    from integrations.mongo.facts import MongoFactStore

    # the first try and the first retry fail
    failures = FailNext(lambda: ServerSelectionTimeoutError("No servers found yet (simulated)"), 2)

    async with FakeTelegram(bot_username="alfred") as tg:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        said = tg.text_message(dm, ann, "remember that the bikes are kept in the blue shed")
        async with bot_env(tg) as bot:
            monkeypatch.setattr(MongoFactStore, "add", failures.wrap(MongoFactStore.add))
            monkeypatch.setattr(MongoFactStore, "add_bulk", failures.wrap(MongoFactStore.add_bulk))
            assert _texts(await bot.say(said)) == [MEMORY_RESTARTING]
            assert await bot.message_doc(dm, _message_id(said)) is not None  # journaled
            await tg.wait_until(
                lambda: GOT_IT in [m["text"] for m in tg.sent_messages if m["chat_id"] == dm["id"]],
                timeout=REPLY_TIMEOUT,
                what="the retried message's answer",
            )
            await bot.sync()
            answers = [m["text"] for m in tg.sent_messages if m["chat_id"] == dm["id"]]
            assert answers == [MEMORY_RESTARTING, GOT_IT]  # one apology, one answer
            assert failures.left == 0
            facts = await bot.db[FACTS].count_documents({"content": {"$regex": "blue shed"}})
            assert facts == 1
            assert not await asyncio.to_thread(spool_file.exists)
            bot.check_alive()


async def test_a_member_leaving_while_the_database_is_down_is_spooled_and_replayed(
    bot_env: Any, spool_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leave that cannot be written (the database down) is not dropped: it is spooled
    like a message and applied by the replay, so the circle's memories leave the DM of
    the person who left."""
    from integrations.mongo.directory import MongoDirectory

    async def down(self: MongoDirectory, *args: Any) -> Any:
        raise ServerSelectionTimeoutError("No servers found yet (simulated outage)")

    async with FakeTelegram(bot_username="alfred") as tg:
        ann, ben = tg.user("Ann", username="ann"), tg.user("Ben", username="ben")
        family = tg.group_chat(title="Family", members=[ann, ben])
        async with bot_env(tg) as bot:
            await bot.say(tg.text_message(family, ann, "@alfred remember that we meet at six"))
            assert await bot.say(tg.new_chat_members(family, ben, [ben])) == []
            circle = await bot.db["circles"].find_one({"_id": str(family["id"])})
            assert circle is not None and str(ben["id"]) in circle["member_ids"]
            monkeypatch.setattr(spool_retry, "FIRST_WAIT", 3600.0)  # the start replays it
            monkeypatch.setattr(MongoDirectory, "upsert_circle", down)
            assert await bot.say(tg.left_chat_member(family, ben, ben)) == []
            monkeypatch.undo()
            lines = (await asyncio.to_thread(spool_file.read_text)).splitlines()
            spooled = [json.loads(line) for line in lines]
            assert [u["message"]["left_chat_member"]["id"] for u in spooled] == [ben["id"]]
        async with bot_env(tg) as bot:  # the next start replays the spool
            await bot.sync()
            circle = await bot.db["circles"].find_one({"_id": str(family["id"])})
            assert circle is not None and str(ben["id"]) not in circle["member_ids"]
            assert not await asyncio.to_thread(spool_file.exists)

            # A leave that fails while the database answers is applied by the retry, in
            # the same bot: Ann leaves, her write fails once.
            once = FailNext(lambda: ServerSelectionTimeoutError("No servers found (simulated)"), 1)
            monkeypatch.setattr(
                MongoDirectory, "upsert_circle", once.wrap(MongoDirectory.upsert_circle)
            )
            assert await bot.say(tg.left_chat_member(family, ann, ann)) == []
            assert once.left == 0

            async def ann_gone() -> bool:
                found = await bot.db["circles"].find_one({"_id": str(family["id"])})
                return found is not None and str(ann["id"]) not in found["member_ids"]

            for _ in range(int(REPLY_TIMEOUT / 0.1)):
                if await ann_gone():
                    break
                await asyncio.sleep(0.1)
            assert await ann_gone()
            assert not await asyncio.to_thread(spool_file.exists)


async def test_webhook_without_a_configured_secret_uses_a_stable_one(bot_env: Any) -> None:
    """Replicas behind one webhook must agree on the secret Telegram sends."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    webhook = {"webhook_url": url, "webhook_listen": "127.0.0.1", "webhook_port": port}
    secrets_seen = []
    async with FakeTelegram(bot_username="alfred") as tg:
        for _ in range(2):
            async with bot_env(tg, **webhook) as bot:
                assert tg.webhook is not None and tg.webhook.url == url
                secrets_seen.append(tg.webhook.secret_token)
                ann = tg.user("Ann")
                sent = await bot.say(tg.text_message(tg.private_chat(ann), ann, "/start"))
                assert sent and sent[0]["text"].startswith("Hello! I'm Alfred")
    first, second = secrets_seen
    assert first and first == second and tg.token not in first
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,256}", first)


async def test_a_webhook_secret_telegram_would_refuse_fails_at_start(settings: Settings) -> None:
    bad = settings.model_copy(
        update={
            "telegram_bot_token": SecretStr("123:abc"),
            "webhook_url": "https://example.invalid/telegram",
            "webhook_secret": SecretStr("change me!"),
        }
    )
    with pytest.raises(ConfigurationError, match="WEBHOOK_SECRET"):
        await run_bot(bad, stop=asyncio.Event())


# --------------------------------------------------------------------------------------
# 7. The Google Calendar redirect, served by ``alfred run`` itself
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_calendar_redirect_is_served_in_both_modes(
    bot_env: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/calendar`` in a DM → Google's consent page → the redirect lands on the server
    ``run_bot`` started (the webhook server, or a small one of its own when polling) →
    the person is told in Telegram and the connection is stored."""
    from cryptography.fernet import Fernet

    from integrations.mongo.calendar_store import CONNECTIONS
    from services.calendar.commands import IN_GROUP
    from services.calendar.connect import CONNECTED_NOTICE, confirm_question
    from tests.helpers.fake_google import FakeGoogle

    # the local token endpoint is plain HTTP on loopback; oauthlib insists on HTTPS
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server: dict[str, Any] = {"webhook_listen": "127.0.0.1", "webhook_port": port}
    if mode == "webhook":
        server["webhook_url"] = f"{base}/telegram"
    async with FakeGoogle() as google, FakeTelegram(bot_username="alfred") as tg:
        calendar = {
            "google_client_id": google.client_id,
            "google_client_secret": SecretStr(google.client_secret),
            "google_redirect_url": f"{base}/oauth/google",
            "calendar_encryption_key": SecretStr(Fernet.generate_key().decode()),
            "google_oauth_base_url": google.url,
            "google_calendar_api_url": google.api_url,
        }
        async with bot_env(tg, **server, **calendar) as bot:
            assert bool(tg.calls_of("getUpdates")) == (mode == "polling")
            ann = tg.user("Ann", username="ann")
            dm = tg.private_chat(ann)
            family = tg.group_chat(title="Family", members=[ann])
            (in_group,) = await bot.say(tg.text_message(family, ann, "/calendar"))
            assert in_group["text"] == IN_GROUP

            (invite,) = await bot.say(tg.text_message(dm, ann, "/calendar"))
            link = next(w for w in invite["text"].split() if w.startswith(google.url))
            query = parse_qs(urlsplit(link).query)
            assert query["redirect_uri"] == [f"{base}/oauth/google"]
            code = google.issue_code("ann@example.com", challenge=query["code_challenge"][0])

            async with aiohttp.ClientSession() as http:
                redirect = f"{base}/oauth/google"
                params = {"state": query["state"][0], "code": code}
                async with http.get(redirect, params=params) as page:
                    assert page.status == 200, await page.text()
                    assert "confirm which Google account" in await page.text()
                # the same link a second time, and a link not made by Alfred
                async with http.get(redirect, params=params) as page:
                    assert page.status == 400
                forged = {"state": "x" * 40, "code": code}
                async with http.get(redirect, params=forged) as page:
                    assert page.status == 400
                async with http.get(f"{base}/healthz") as page:
                    assert page.status == 200

            question = confirm_question("ann@example.com")

            def questions() -> list[Document]:
                return [m for m in tg.sent_messages if m["text"] == question]

            await tg.wait_until(
                lambda: bool(questions()), timeout=REPLY_TIMEOUT, what="the confirmation question"
            )
            assert [m["chat_id"] for m in questions()] == [dm["id"]], "asked once, in Ann's DM"
            stored = await bot.db[CONNECTIONS].find_one({"_id": str(ann["id"])})
            assert stored is not None and stored["status"] == "unconfirmed"
            # nothing is read before she confirms: /calendar asks again
            (status,) = await bot.say(tg.text_message(dm, ann, "/calendar"))
            assert status["text"] == question
            assert google.count("GET", "/calendar/v3/calendars/primary/events") == 0
            (confirmed,) = await bot.say(tg.text_message(dm, ann, "/calendar confirm"))
            assert confirmed["text"] == CONNECTED_NOTICE
            stored = await bot.db[CONNECTIONS].find_one({"_id": str(ann["id"])})
            assert stored is not None and stored["status"] == "connected"
            (status,) = await bot.say(tg.text_message(dm, ann, "/calendar"))
            assert "is connected" in status["text"] and "ann@example.com" in status["text"]


# --------------------------------------------------------------------------------------
# 8. Migrations beside a running bot
# --------------------------------------------------------------------------------------


def _alfred_cli(settings: Settings, database: str, *args: str) -> subprocess.Popen[str]:
    """``alfred …`` as an operator runs it: another process, on the same database."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(settings.data_dir().parent),
        "ALFRED_DATA_DIR": str(settings.data_dir()),
        "MONGODB_DATABASE": database,
        "PTB_TIMEDELTA": "1",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=settings.data_dir().parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _finished(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = await asyncio.to_thread(process.communicate, timeout=120)
    assert "Traceback" not in err, err
    return process.returncode, out


async def test_migrations_beside_a_running_bot(
    bot_env: Any, settings: Settings, mongo: MongoHandle
) -> None:
    """A database left at an older version (`alfred migrate --to 2`) is brought up to
    date by the bot's start; operators' `alfred migrate` runs while the bot answers
    neither disturb it nor apply anything twice."""
    from integrations.mongo.migrator import NO_ATLAS_SEARCH
    from memory.constants import SCHEMA_MIGRATIONS
    from migrations import discover

    available = discover()
    latest = available[-1].version
    database = f"mig_{uuid.uuid4().hex[:12]}"
    db = mongo.client[database]
    try:
        code, out = await _finished(_alfred_cli(settings, database, "migrate", "--to", "2"))
        assert code == 0 and out.strip().splitlines()[-1] == "applied 2 migration(s)", out
        async with (
            FakeTelegram(bot_username="alfred") as tg,
            bot_env(tg, mongodb_database=database) as bot,
        ):
            versions = await db[SCHEMA_MIGRATIONS].distinct("version")
            assert sorted(versions) == [m.version for m in available]
            ann = tg.user("Ann", username="ann")
            dm = tg.private_chat(ann)
            operators = [
                _alfred_cli(settings, database, "migrate"),
                _alfred_cli(settings, database, "migrate", "--to", "1"),
                _alfred_cli(settings, database, "migrate", "--status"),
            ]
            sent = [
                await bot.say(tg.text_message(dm, ann, f"remember that locker {n} is mine"))
                for n in range(3)
            ]
            assert [_texts(s) for s in sent] == [[GOT_IT]] * 3
            (plain, to_one, listed) = [await _finished(p) for p in operators]
            assert plain == (
                0,
                f"{NO_ATLAS_SEARCH}\nnothing to apply: the database is up to date\n",
            )
            assert to_one == (
                0,
                f"{NO_ATLAS_SEARCH}\n"
                f"nothing to apply up to version 1: the database is at version {latest}\n",
            )
            assert listed[0] == 0 and listed[1].splitlines()[-1] == (f"current version: {latest}")
            # the bot kept its state through it all
            (recall,) = await bot.say(tg.text_message(dm, ann, "which locker is mine?"))
            assert re.search(r"Locker [012] is Ann's", recall["text"]), recall["text"]
            bot.check_alive()
        records = [d async for d in db[SCHEMA_MIGRATIONS].find({})]
        assert sorted(d["version"] for d in records) == [m.version for m in available]
        assert all(d["_id"] != "migration-lock" for d in records), "the lock was let go"
    finally:
        await drop_test_database(mongo.client, database)


# --------------------------------------------------------------------------------------
# 9. A group upgraded to a supergroup keeps its memories, and nothing else moves
# --------------------------------------------------------------------------------------


async def _no_trace_of(bot: Bot, circle_id: str) -> None:
    from memory.constants import CIRCLES, PARTITIONED_COLLECTIONS, PARTITIONS, THREADS

    for name in (*PARTITIONED_COLLECTIONS, PARTITIONS):
        assert await bot.db[name].count_documents({"circle_id": circle_id}) == 0, name
    assert await bot.db[CIRCLES].find_one({"_id": circle_id}) is None
    assert await bot.db[THREADS].find_one({"_id": circle_id}) is None


async def test_an_upgraded_group_keeps_its_memories_in_the_supergroup(bot_env: Any) -> None:
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann, ben, cat = tg.user("Ann", username="ann"), tg.user("Ben"), tg.user("Cat")
        family = tg.group_chat(title="Family", members=[ann, ben])
        others = tg.group_chat(title="Book club", members=[cat, ben])
        said = await bot.say(
            tg.text_message(family, ann, "@alfred remember that our anniversary is on 12 June")
        )
        assert _texts(said) == [GOT_IT]
        said = await bot.say(
            tg.text_message(family, ann, "@alfred remember that I'm allergic to hazelnuts")
        )
        assert _texts(said) == [GOT_IT]
        secret = "remember that the surprise gift for Ben is a red kayak"
        assert _texts(await bot.say(tg.text_message(tg.private_chat(ann), ann, secret))) == [GOT_IT]
        old_id = str(family["id"])
        before = await bot.db["memory_facts"].count_documents({})

        supergroup, in_old, in_new = tg.upgrade_to_supergroup(family, ann)
        assert await bot.say(in_old) == [] and await bot.say(in_new) == []
        await _no_trace_of(bot, old_id)
        assert await bot.db["memory_facts"].count_documents({}) == before, "nothing lost"

        asked = tg.text_message(supergroup, ben, "@alfred when is our anniversary?")
        (answer,) = await bot.say(asked)
        assert answer["chat_id"] == supergroup["id"] and "12 June" in answer["text"]
        (answer,) = await bot.say(
            tg.text_message(supergroup, ann, "@alfred what am I allergic to?")
        )
        assert "hazelnut" in answer["text"]
        # what was private stays private; what was the family's stays the family's
        probes = [
            (supergroup, ben, "@alfred what gift is Ann getting me? anything about a kayak?"),
            (others, cat, "@alfred when is the anniversary? any allergies?"),
            (others, ben, "@alfred what gift is Ann getting me? anything about a kayak?"),
        ]
        for chat, who, text in probes:
            for reply in await bot.say(tg.text_message(chat, who, text)):
                assert "kayak" not in reply["text"].lower(), (chat["title"], reply["text"])
                if chat is others:
                    assert "12 June" not in reply["text"] and "hazelnut" not in reply["text"]
        (mine,) = await bot.say(
            tg.text_message(tg.private_chat(ann), ann, "what is the surprise gift for Ben?")
        )
        assert "kayak" in mine["text"]


async def test_a_reply_refused_by_an_upgraded_group_moves_the_circle_and_goes_through(
    bot_env: Any,
) -> None:
    """The upgrade's announcements never arrived; the first send to the old id is refused
    with the new id: the circle moves then, and the reply is sent to the supergroup."""
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann = tg.user("Ann", username="ann")
        family = tg.group_chat(title="Family", members=[ann])
        said = await bot.say(
            tg.text_message(family, ann, "@alfred remember that the wifi password is on the fridge")
        )
        assert _texts(said) == [GOT_IT]
        supergroup, _, _ = tg.upgrade_to_supergroup(family, ann)
        late = tg.text_message(family, ann, "@alfred where is the wifi password?")
        (answer,) = await bot.say(late)
        assert answer["chat_id"] == supergroup["id"] and "fridge" in answer["text"]
        await _no_trace_of(bot, str(family["id"]))
        (again,) = await bot.say(
            tg.text_message(supergroup, ann, "@alfred where is the wifi password?")
        )
        assert "fridge" in again["text"]


async def test_a_failed_move_still_delivers_the_reply_and_the_announcement_retries_it(
    bot_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import integrations.mongo.circle_move as circle_move

    move = circle_move.move_circle_documents

    async def database_down(*args: Any, **kwargs: Any) -> Any:
        raise ServerSelectionTimeoutError("database unreachable")

    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann = tg.user("Ann", username="ann")
        family = tg.group_chat(title="Family", members=[ann])
        said = await bot.say(
            tg.text_message(family, ann, "@alfred remember that the spare key is under the mat")
        )
        assert _texts(said) == [GOT_IT]
        supergroup, _, in_new = tg.upgrade_to_supergroup(family, ann)
        monkeypatch.setattr(circle_move, "move_circle_documents", database_down)
        late = tg.text_message(family, ann, "@alfred where is the spare key?")
        (answer,) = await bot.say(late)
        assert answer["chat_id"] == supergroup["id"] and "under the mat" in answer["text"]
        assert await bot.db["circles"].find_one({"_id": str(family["id"])}) is not None

        monkeypatch.setattr(circle_move, "move_circle_documents", move)
        assert await bot.say(in_new) == []
        await _no_trace_of(bot, str(family["id"]))
        (again,) = await bot.say(
            tg.text_message(supergroup, ann, "@alfred where is the spare key?")
        )
        assert "under the mat" in again["text"]


# --------------------------------------------------------------------------------------
# Stopping after a dependency died
# --------------------------------------------------------------------------------------


async def test_stopping_after_redis_died_does_not_raise(bot_env: Any, tmp_path: Path) -> None:
    """Redis dies under the running bot (its queue, its in-process worker); a SIGTERM
    afterwards must still stop ``run_bot`` cleanly, not raise the dead connection."""
    lease = acquire("redis", tmp_path / "own-redis")  # not the session's: this one dies
    try:
        async with FakeTelegram(bot_username="alfred") as tg:
            async with bot_env(tg, redis_url=SecretStr(lease.url)) as bot:
                alice = tg.user("Alice", username="alice")
                dm = tg.private_chat(alice)
                sent = await bot.say(tg.text_message(dm, alice, "remember that I like figs"))
                assert _texts(sent) == [GOT_IT]  # the trigger queued a job on this Redis
                for pid in (lease.supervisor_pid, lease.server_pid):
                    if pid is not None:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                await asyncio.sleep(1.5)  # the worker polls the dead server meanwhile
            # bot_env has set ``stop`` and awaited run_bot: it returned without raising
            assert bot.task.done() and bot.task.exception() is None
    finally:
        lease.release()
