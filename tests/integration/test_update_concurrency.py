"""The real bot handling updates of different chats side by side (``UPDATE_CONCURRENCY``).

Alfred runs as ``alfred run`` does, against the local fake Bot API and the local fake
OpenAI server. Nothing here is timed: a model answer that hangs until the test lets it go
shows what may and may not happen meanwhile. (The marker harness of
``test_telegram_bot`` relies on one-at-a-time handling: here only its start-up is used.)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from pymongo.errors import ServerSelectionTimeoutError

from bot.bench.bot import _chat_or_task
from bot.bench.fake_openai import FakeOpenAI, RecordedRequest, text_task_handler
from bot.telegram import spool_retry
from bot.telegram.handlers.messages import MEMORY_RESTARTING
from tests.helpers.fake_telegram import FakeTelegram
from tests.integration import test_telegram_bot as harness
from tests.integration.test_telegram_bot import GOT_IT, REPLY_TIMEOUT

# The bot harness's fixtures, shared.
bot_env = harness.bot_env
handler_errors = harness.handler_errors
spool_file = harness.spool_file

SLOW = "slowpoke"


class HangingModel:
    """Answers at once, except Alfred's answer to a message saying ``slowpoke``: that one
    waits until the test releases it."""

    def __init__(self) -> None:
        self.answer = text_task_handler(_chat_or_task)
        self.released = asyncio.Event()
        self.slow_asked = 0

    async def __call__(self, request: RecordedRequest) -> Any:
        if "You are Alfred" in request.system_prompt and SLOW in request.last_user_text:
            self.slow_asked += 1
            await self.released.wait()
        return self.answer(request)


def _to(tg: FakeTelegram, chat: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in tg.sent_messages if m["chat_id"] == chat["id"]]


async def test_a_hung_answer_in_a_group_holds_only_that_group(bot_env: Any) -> None:
    model = HangingModel()
    async with (
        FakeOpenAI(embedding_dimensions=8, chat_handler=model) as openai_fake,
        FakeTelegram(bot_username="alfred") as tg,
        bot_env(
            tg,
            update_concurrency=8,
            openai_api_key=SecretStr("test-key"),
            openai_base_url=openai_fake.base_url,
            embeddings_provider="local",
        ) as bot,
    ):
        ann, bob = tg.user("Ann", username="ann"), tg.user("Bob", username="bob")
        family = tg.group_chat(title="Family", members=[ann, bob])
        dm = tg.private_chat(bob)
        slow = tg.push_update(tg.text_message(family, ann, f"@alfred {SLOW}: plan Sunday?"))
        await tg.wait_until(lambda: model.slow_asked == 1, timeout=REPLY_TIMEOUT, what="A asks")

        # while the group's answer hangs: the same update again (Telegram redelivers),
        # a later mention in the group, and a DM
        tg.push_update(slow)
        later = tg.push_update(tg.text_message(family, bob, "@alfred and on Monday?"))
        tg.push_update(tg.text_message(dm, bob, "remember that my locker is number 12"))
        await tg.wait_until(
            lambda: bool(_to(tg, dm)), timeout=REPLY_TIMEOUT, what="the DM's answer"
        )
        assert [m["text"] for m in _to(tg, dm)] == [GOT_IT]  # answered beside the hang
        assert _to(tg, family) == []  # the group's later mention waits its turn
        assert model.slow_asked == 1  # the redelivered update was dropped, not run again

        model.released.set()
        await tg.wait_until(
            lambda: len(_to(tg, family)) >= 2, timeout=REPLY_TIMEOUT, what="the group's answers"
        )
        answers = _to(tg, family)
        assert [m["reply_to_message_id"] for m in answers] == [
            slow["message"]["message_id"],
            later["message"]["message_id"],
        ]  # in the order they were written
        stored = await bot.db["messages"].count_documents({"text": {"$regex": SLOW}})
        assert stored == 1
        bot.check_alive()


async def test_the_spool_under_concurrency(
    bot_env: Any, spool_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many chats failing at once (the database down) are all spooled, each once and in
    its chat's order, and all replayed at the next start."""
    from integrations.mongo.journal import MongoJournal

    async def down(self: MongoJournal, message: Any) -> bool:
        raise ServerSelectionTimeoutError("No servers found yet (simulated outage)")

    async with FakeTelegram(bot_username="alfred") as tg:
        people = [tg.user(f"P{k}", username=f"p{k}") for k in range(4)]
        dms = [tg.private_chat(p) for p in people]
        family = tg.group_chat(title="Family", members=people)
        pushed = []
        # The spool's file is read while the bot runs: the retry that would replay it
        # after a second is held off (the start-up replay is what is checked here).
        monkeypatch.setattr(spool_retry, "FIRST_WAIT", 3600.0)
        async with bot_env(tg, update_concurrency=8) as bot:
            monkeypatch.setattr(MongoJournal, "append", down)
            for k in range(3):
                for p, dm in zip(people, dms, strict=True):
                    pushed.append(tg.push_text(dm, p, f"remember that {p['first_name']} #{k}"))
                pushed.append(tg.push_text(family, people[k], f"@alfred group note #{k}"))
            await tg.wait_until(
                lambda: len([m for m in tg.sent_messages if m["text"] == MEMORY_RESTARTING]) >= 15,
                timeout=REPLY_TIMEOUT,
                what="every message told memory is down",
            )
            lines = (await asyncio.to_thread(spool_file.read_text)).splitlines()
            spooled = [json.loads(line) for line in lines]
            ids = [u["update_id"] for u in spooled]
            assert sorted(ids) == sorted(u["update_id"] for u in pushed)  # each once
            for chat in [*dms, family]:
                of_chat = [
                    u["update_id"] for u in spooled if u["message"]["chat"]["id"] == chat["id"]
                ]
                assert of_chat == sorted(of_chat)  # each chat's in order
            monkeypatch.undo()

        async with bot_env(tg, update_concurrency=8) as bot:
            texts = [u["message"]["text"] for u in pushed]

            async def all_stored() -> bool:
                found = await bot.db["messages"].count_documents({"text": {"$in": texts}})
                return found == len(texts)

            for _ in range(200):
                if await all_stored():
                    break
                await asyncio.sleep(0.1)
            assert await all_stored()
            assert not await asyncio.to_thread(spool_file.exists)
