"""A message whose turn failed at its very end is answered by its replay as if it were
the first time, and does nothing twice.

The failure comes after the turn did its work (the fact stored, the item added or taken
off, the reminder set or cancelled, everything erased) and before it was marked handled:
a database connection cut by a restart does that. The person was told "I've kept your
message"; what the replay says must be what the first try would have said ("Got it",
"Added milk", "Cancelled", "Done — I've erased …"), not "I already knew that", "milk is
already on it" or "I found no reminder", and it must not set a second reminder. In the
same bot the retry finishes the kept turn; after a restart the replay finds what the
first try recorded.
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import AutoReconnect

from bot.telegram import spool_retry
from bot.telegram.handlers.messages import MEMORY_RESTARTING
from memory.constants import FACTS
from tests.helpers.failing import FailNext
from tests.helpers.fake_telegram import FakeTelegram
from tests.integration import test_telegram_bot as harness

bot_env = harness.bot_env
handler_errors = harness.handler_errors
spool_file = harness.spool_file

GOT_IT = "Got it, I'll remember that."


async def test_a_turn_that_failed_after_its_work_is_answered_once_after_a_restart(
    bot_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each message's turn is cut at its end, and the bot restarts before its replay:
    what the bot kept in memory of the turn is gone, and the replay at the start finds
    what the first try did through what that recorded (a fact's provenance, an item's
    source, a reminder's id and ``cancelled_by``, a list's ``removed_by``)."""
    from integrations.mongo.journal import MongoJournal

    cut = FailNext(lambda: AutoReconnect("127.0.0.1: connection reset by peer (a restart)"))
    monkeypatch.setattr(MongoJournal, "mark_handled", cut.wrap(MongoJournal.mark_handled))
    monkeypatch.setattr(spool_retry, "FIRST_WAIT", 3600.0)  # the next start replays it
    async with FakeTelegram(bot_username="alfred") as tg:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)

        def said_to_ann(since: int) -> list[str]:
            return [str(m["text"]) for m in tg.sent_messages[since:] if m["chat_id"] == dm["id"]]

        async def retried(text: str) -> str:
            """Say ``text`` with its turn cut at the end; what the next start answered."""
            cut.left = 1
            before = len(tg.sent_messages)
            async with bot_env(tg) as bot:
                first = await bot.say(tg.text_message(dm, ann, text))
                assert [m["text"] for m in first] == [MEMORY_RESTARTING]
                assert cut.left == 0
            async with bot_env(tg) as bot:  # its start replays the spool
                await tg.wait_until(
                    lambda: len(said_to_ann(before)) >= 2,
                    timeout=harness.REPLY_TIMEOUT,
                    what=f"the replayed answer to {text!r}",
                )
                await bot.sync()
                bot.check_alive()
            answers = said_to_ann(before)
            assert len(answers) == 2, answers  # one apology, one answer
            return answers[1]

        assert await retried("remember that the ferry leaves at nine") == GOT_IT
        said = await retried("add milk to the shopping list")
        assert said.startswith("Added milk to the shopping list."), said
        said = await retried("remind me to call mum tomorrow at 9")
        assert said.startswith("I'll remind you tomorrow"), said
        # cancelled by the first try: its replay finds it cancelled by this message
        said = await retried("cancel the call mum reminder")
        assert said == "Cancelled: call mum.", said

        async with bot_env(tg) as bot:
            assert await bot.db[FACTS].count_documents({"content": {"$regex": "ferry"}}) == 1
            (shopping,) = await bot.db["lists"].find({}).to_list()
            assert [i["text"] for i in shopping["items"]] == ["milk"]
            (mum,) = await bot.db["reminders"].find({"text": "call mum"}).to_list()
            assert mum["state"] == "cancelled"
            # the same words in a new message are what they always were
            (again,) = await bot.say(tg.text_message(dm, ann, "add milk to the shopping list"))
            assert again["text"].startswith("milk is already on it."), again["text"]
            (again,) = await bot.say(tg.text_message(dm, ann, "cancel the call mum reminder"))
            assert again["text"] == 'I found no reminder about "call mum" here.', again["text"]
        # taken off by the first try: its replay says so, and takes nothing else off
        said = await retried("remove milk from the shopping list")
        assert said == "Ticked off milk.\nShopping list: empty.", said
        async with bot_env(tg) as bot:
            text = "remove milk from the shopping list"
            (again,) = await bot.say(tg.text_message(dm, ann, text))
            assert again["text"] == "milk isn't on the shopping list.", again["text"]


async def test_an_erasure_cut_at_its_end_is_confirmed_by_the_retry(
    bot_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everything about Ann is erased, then marking her "yes" handled fails. Done again,
    the erasure would find nobody: the retry greeted her as a stranger and never said
    it was done. It finishes the turn with the first try's answer instead."""
    from integrations.mongo.journal import MongoJournal

    cut = FailNext(lambda: AutoReconnect("127.0.0.1: connection reset by peer (a restart)"))
    monkeypatch.setattr(MongoJournal, "mark_handled", cut.wrap(MongoJournal.mark_handled))
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ann = tg.user("Ann", username="ann")
        dm = tg.private_chat(ann)
        await bot.say(tg.text_message(dm, ann, "remember that my bike is red"))
        await bot.say(tg.text_message(dm, ann, "forget everything about me"))
        cut.left = 1
        before = len(tg.sent_messages)
        first = await bot.say(tg.text_message(dm, ann, "yes, erase everything"))
        assert [m["text"] for m in first] == [MEMORY_RESTARTING]
        await tg.wait_until(
            lambda: len([m for m in tg.sent_messages[before:] if m["chat_id"] == dm["id"]]) >= 2,
            timeout=harness.REPLY_TIMEOUT,
            what="the retried erasure's answer",
        )
        await bot.sync()
        answers = [m["text"] for m in tg.sent_messages[before:] if m["chat_id"] == dm["id"]]
        assert cut.left == 0
        assert len(answers) == 2, answers  # one apology, one answer
        assert answers[1].startswith("Done — I've erased everything about you (1 memories"), answers
        assert await bot.db[FACTS].count_documents({"content": {"$regex": "bike"}}) == 0
        bot.check_alive()
