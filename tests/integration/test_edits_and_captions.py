"""Edited messages and captions over the real Telegram protocol (issue 14 point 6).

An edit replaces the message's journal entry and corrects what was learned from the old
words; a photo's or a document's caption is read as the message's text. Alfred runs as
``alfred run`` does, against the fake Bot API (see test_telegram_bot.py for the harness,
whose fixtures these tests share). The edit of a message the background had already
formed is checked through the reply path itself, with formation run on the same store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.telegram.handlers.messages import NON_TEXT_REPLY
from runtime.bundle import Services
from runtime.container import build_assistant
from runtime.settings import Settings
from services.messages import Incoming, Sender
from services.reply.edits import EDITED
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.services import migrated_services
from tests.integration.test_telegram_bot import (  # noqa: F401 - shared fixtures
    GOT_IT,
    Bot,
    _message_id,
    _texts,
    bot_env,
    handler_errors,
    spool_file,
)

Document = dict[str, Any]


async def _facts(bot: Bot, needle: str) -> list[Document]:
    return [
        d
        async for d in bot.db["memory_facts"].find(
            {"content": {"$regex": needle}}, {"embedding": 0}
        )
    ]


async def test_an_edited_request_replaces_what_was_remembered(bot_env: Any) -> None:  # noqa: F811
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ivy = tg.user("Ivy", username="ivy")
        jon = tg.user("Jon", username="jon")
        dm = tg.private_chat(ivy)
        home = tg.group_chat(title="Home", members=[ivy, jon])

        original = tg.text_message(dm, ivy, "remember that the vet is on Elm Street")
        assert _texts(await bot.say(original)) == [GOT_IT]
        edit = tg.edited_message(original, "remember that the vet is on Birch Road")
        assert await bot.say(edit) == []  # not answered a second time
        # the journal holds what the message says now, under the message's own id
        doc = await bot.message_doc(dm, _message_id(original))
        assert doc is not None and doc["text"] == "remember that the vet is on Birch Road"
        assert await bot.db["messages"].count_documents({"_id": {"$regex": ":edit:"}}) == 0
        (old,) = await _facts(bot, "Elm Street")
        assert old["current"] is False and old["invalid_reason"] == EDITED
        (new,) = await _facts(bot, "Birch Road")
        assert new["current"] is True and new["pinned"] is True
        # the same edit delivered again changes nothing
        assert await bot.say(edit) == []
        assert len(await _facts(bot, "Birch Road")) == 1
        (recall,) = await bot.say(tg.text_message(dm, ivy, "what do you remember about me?"))
        assert "Birch Road" in recall["text"] and "Elm Street" not in recall["text"]

        # in the group, a quiet request edited: the new value replaces the old one
        said = tg.text_message(home, jon, "remember that the recycling goes out on tuesdays")
        assert await bot.say(said) == []
        assert [c.params["message_id"] for c in tg.calls if c.method == "setMessageReaction"][
            -1
        ] == _message_id(said)
        reactions = len([c for c in tg.calls if c.method == "setMessageReaction"])
        edit = tg.edited_message(said, "remember that the recycling goes out on wednesdays")
        assert await bot.say(edit) == []
        assert len([c for c in tg.calls if c.method == "setMessageReaction"]) == reactions
        (old,) = await _facts(bot, "tuesdays")
        (new,) = await _facts(bot, "wednesdays")
        assert old["current"] is False and new["current"] is True
        assert new["owner_user_id"] == old["owner_user_id"]

        # an edit that is no longer a request: what the old words stored is retired, and
        # the message waits for the background, which reads only the new words
        said = tg.text_message(dm, ivy, "remember that the boiler code is 3141")
        assert _texts(await bot.say(said)) == [GOT_IT]
        assert await bot.say(tg.edited_message(said, "the boiler is making noise again")) == []
        (old,) = await _facts(bot, "3141")
        assert old["current"] is False
        doc = await bot.message_doc(dm, _message_id(said))
        assert doc is not None and doc["formed"] is False and doc["handled"] is False
        assert doc["text"] == "the boiler is making noise again"


async def test_captions_are_read_as_text(bot_env: Any) -> None:  # noqa: F811
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        ivy = tg.user("Ivy", username="ivy")
        jon = tg.user("Jon", username="jon")
        dm = tg.private_chat(ivy)
        home = tg.group_chat(title="Home", members=[ivy, jon])

        # a document's caption is the message
        lease = tg.document_message(dm, ivy, "remember that the lease ends on 31 March")
        assert _texts(await bot.say(lease)) == [GOT_IT]
        doc = await bot.message_doc(dm, _message_id(lease))
        assert doc is not None and doc["text"] == "remember that the lease ends on 31 March"
        # a photo's caption in the group, nobody addressed: a quiet request, a reaction
        photo = tg.photo_message(home, jon, "remember that the spare bulbs are in the attic")
        assert await bot.say(photo) == []
        assert [c.params["message_id"] for c in tg.calls if c.method == "setMessageReaction"][
            -1
        ] == _message_id(photo)
        assert len(await _facts(bot, "spare bulbs")) == 1
        # an edited caption is an edited message
        edit = tg.edited_message(photo, "remember that the spare bulbs are in the garage")
        assert await bot.say(edit) == []
        (old,) = await _facts(bot, "attic")
        (new,) = await _facts(bot, "garage")
        assert old["current"] is False and new["current"] is True
        # media without a caption: as before, Alfred says it reads text
        assert _texts(await bot.say(tg.document_message(dm, ivy))) == [NON_TEXT_REPLY]
        (recall,) = await bot.say(tg.text_message(dm, ivy, "when does the lease end?"))
        assert "31 March" in recall["text"]


# --- an edit after formation, through the reply path --------------------------------------

NOW = datetime(2026, 4, 1, 9, tzinfo=UTC)
DM = 8101


@pytest.fixture
async def s(settings: Settings) -> AsyncIterator[Services]:
    async with migrated_services(settings, "edit", NOW) as services:
        yield services


def _said(text: str, n: int, *, edited: bool = False) -> Incoming:
    return Incoming(
        chat_id=DM,
        chat_type="private",
        sender=Sender(telegram_id=DM, name="Kit"),
        message_id=n,
        text=text,
        update_id=100 + n + (50 if edited else 0),
        kind="edited" if edited else "text",
    )


async def test_an_edit_after_formation_is_learned_again_from_the_new_words(
    s: Services,
) -> None:
    assistant = build_assistant(s)
    lines = [
        "I work at the library",
        "the weather is grey today",
        "we watched a film last night",
        "the train was late again",
    ]
    for n, text in enumerate(lines, start=1):
        await assistant.handle(_said(text, n))
    await s.formation.form_thread(str(DM), min_messages=1)
    facts = s.mongo.db["memory_facts"]
    (formed,) = [d async for d in facts.find({"content": {"$regex": "library"}})]
    assert formed["current"] is True

    turn = await assistant.handle(_said("I work at the museum", 1, edited=True))
    assert turn.replies == []
    (old,) = [d async for d in facts.find({"content": {"$regex": "library"}})]
    assert old["current"] is False and old["invalid_reason"] == EDITED
    await s.formation.form_thread(str(DM), min_messages=1)
    current = [d["content"] async for d in facts.find({"current": True})]
    assert any("works at the museum" in c for c in current), current
    assert not any("library" in c for c in current), current
