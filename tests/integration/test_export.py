"""Export: "export my memories" sends the person's own DM view as two documents (Markdown
and JSON), each item marked with where it came from; asked in a group it goes to their DM;
a DM Telegram refuses gets a start link in the group, and opening it delivers once.

Replay scenarios (the offline Bot API refuses a DM whose user never wrote there, as
Telegram does), then the same refusal over the real Bot API protocol with the fake
server, where the start link's token is followed."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from telegram import Bot, InputFile
from telegram.error import Forbidden

from bot.bench.fake_bot_api import TOKEN, FakeBotApi
from bot.telegram.offline_bot_api import OfflineBotAPI
from runtime.settings import Settings
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.replay import replay_lines, replies, say
from tests.integration.test_telegram_bot import (  # noqa: F401 - fixtures used below
    bot_env,
    handler_errors,
    spool_file,
)

START_LINK = re.compile(r"t\.me/alfred\?start=([A-Za-z0-9_-]+)")


def _documents(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["document"] for o in out if "document" in o]


def _export_of(docs: list[dict[str, Any]], who: str) -> tuple[str, dict[str, Any]]:
    """The Markdown text and the parsed JSON of the export sent to ``who``'s DM."""
    mine = [d for d in docs if d["in"] == f"dm:{who}" and d["to"] == who]
    markdown = [d["text"] for d in mine if d["name"].endswith(".md")]
    data = [json.loads(d["text"]) for d in mine if d["name"].endswith(".json")]
    assert len(markdown) == 1 and len(data) == 1, [d["name"] for d in mine]
    return markdown[0], data[0]


def _world() -> list[dict[str, Any]]:
    """Maya and Theo share the circle "nest"; each says things in their DM and the group."""
    return [
        {"circle": "nest", "members": ["maya", "theo"]},
        say("maya", "dm:maya", "remember that my locker code is 4471"),
        say("maya", "group:nest", "@alfred remember that I'm allergic to penicillin"),
        say("maya", "group:nest", "@alfred remember that our bins go out on Wednesday"),
        say("theo", "group:nest", "@alfred remember that I am learning the banjo"),
        say("theo", "dm:theo", "remember that I'm saving up for a kayak"),
        say("maya", "dm:maya", "no emojis please"),
    ]


async def test_a_dm_export_holds_exactly_the_persons_dm_view(
    settings: Settings, tmp_path: Path
) -> None:
    """Maya's export has her DM memory, her own group memory and the circle's shared one,
    each marked with where it came from, and her instruction; Theo's memories (his group
    one, visible in the shared group, and his DM one) are in neither document."""
    out = await replay_lines(
        settings, [*_world(), say("maya", "dm:maya", "export my memories")], tmp_path / "a"
    )
    markdown, data = _export_of(_documents(out), "maya")
    for said in ("4471", "penicillin", "bins go out on Wednesday", "no emojis"):
        assert said in markdown, (said, markdown)
    for partner in ("banjo", "kayak"):
        assert partner not in markdown and partner not in json.dumps(data), partner
    where = {f["content"]: f["from"]["where"] for f in data["facts"]}
    assert [w for c, w in where.items() if "4471" in c] == ["dm"], where
    assert [w for c, w in where.items() if "penicillin" in c] == ["group"], where
    assert [w for c, w in where.items() if "bins" in c] == ["circle"], where
    assert {f["source"] for f in data["facts"]} == {"explicit"}
    assert all(f["current"] and f["learned_at"] for f in data["facts"])
    assert [i["instruction"] for i in data["instructions"]] == ["no emojis"]
    assert data["counts"]["facts"] == 3
    # Markdown groups by origin, in words a person reads
    assert "### Our private chat" in markdown and "### You, in the Nest group" in markdown
    assert "### The Nest circle (shared)" in markdown
    # the chat says what was sent; the group heard nothing
    assert not [r for r in replies(out) if r["in"] == "group:nest" and "export" in r["text"]]


async def test_an_export_asked_in_the_group_goes_to_the_dm(
    settings: Settings, tmp_path: Path
) -> None:
    """Theo (who has written to Alfred privately) asks in the group: the documents go to
    his DM, with his memories only, and the group gets a short notice with no memory."""
    out = await replay_lines(
        settings,
        [*_world(), say("theo", "group:nest", "@alfred could you give me a copy of my data?")],
        tmp_path / "b",
    )
    docs = _documents(out)
    assert {(d["in"], d["to"]) for d in docs} == {("dm:theo", "theo")}, docs
    markdown, data = _export_of(docs, "theo")
    assert "banjo" in markdown and "kayak" in markdown and "bins go out" in markdown
    # Random ids are hex: "4471" may turn up inside one, so they are masked first.
    dumped = re.sub(r"\b[0-9a-f]{32}\b", "<id>", json.dumps(data))
    for maya in ("4471", "penicillin", "no emojis"):
        assert maya not in markdown and maya not in dumped, maya
    (notice,) = [r for r in replies(out) if r["in"] == "group:nest" and r["to"] == "theo"][-1:]
    assert "private" in notice["text"] and "banjo" not in notice["text"]


async def test_a_refused_dm_gets_a_start_link_and_is_delivered_once_opened(
    settings: Settings, tmp_path: Path
) -> None:
    """Iris never wrote to Alfred privately, so Telegram refuses its DM: the group gets a
    start link (and no memory); when she opens the chat (/start) the export arrives, once."""
    out = await replay_lines(
        settings,
        [
            {"circle": "nest", "members": ["iris", "maya"]},
            say("iris", "group:nest", "@alfred remember that I sing in a choir"),
            say("maya", "group:nest", "@alfred remember that I'm allergic to penicillin"),
            say("iris", "group:nest", "@alfred export everything you know about me"),
            say("iris", "dm:iris", "/start"),
            say("iris", "dm:iris", "/start"),
        ],
        tmp_path / "c",
    )
    group = [r for r in replies(out) if r["in"] == "group:nest"]
    assert START_LINK.search(group[-1]["text"]), group[-1]
    assert "choir" not in group[-1]["text"]
    docs = _documents(out)
    assert {(d["in"], d["to"]) for d in docs} == {("dm:iris", "iris")}
    assert len(docs) == 2, [d["name"] for d in docs]  # the second /start delivers nothing
    markdown, _ = _export_of(docs, "iris")
    assert "choir" in markdown and "penicillin" not in markdown


async def test_over_the_bot_api_a_refused_dm_is_delivered_by_its_start_link_once(
    bot_env: Any,  # noqa: F811 - the fixture imported above
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Real PTB against the fake Bot API: ``sendDocument`` to Noor, who never opened a
    chat with the bot, is refused with 403; the group gets a ``t.me/alfred?start=<token>``
    link; someone else opening that link gets nothing; Noor's ``/start <token>`` gets both
    documents, and a second one nothing. The token and the logs carry no memory text."""
    caplog.set_level(logging.INFO)
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        noor = tg.user("Noor", username="noor")
        omar = tg.user("Omar", username="omar")
        home = tg.group_chat(title="Home", members=[noor, omar])
        await bot.say(tg.text_message(home, noor, "@alfred remember that I collect old maps"))
        await bot.say(tg.text_message(home, omar, "@alfred remember that I restore bicycles"))

        ask = tg.text_message(home, noor, "@alfred export my memories")
        (notice,) = await bot.say(ask)
        assert notice["chat_id"] == home["id"] and notice["reply_to_message_id"] is not None
        link = START_LINK.search(notice["text"])
        assert link is not None, notice["text"]
        token = link.group(1)
        refused = [c for c in tg.calls if c.method.lower() == "senddocument"]
        assert refused and all(c.status == 403 for c in refused)
        assert tg.sent_documents == []
        waiting = await bot.db["pending_deliveries"].find({}).to_list(None)
        assert [w["_id"] for w in waiting] == [token]
        assert set(waiting[0]) == {"_id", "user_id", "kind", "created_at", "expires_at"}

        # Omar follows Noor's link: his own DM opens, her export does not come to him
        dm_omar = tg.private_chat(omar)
        await bot.say(tg.text_message(dm_omar, omar, f"/start {token}"))
        assert tg.sent_documents == []

        dm_noor = tg.private_chat(noor)
        (hello,) = await bot.say(tg.text_message(dm_noor, noor, f"/start {token}"))
        assert hello["chat_id"] == noor["id"]
        docs = tg.sent_documents
        assert {d["chat_id"] for d in docs} == {noor["id"]}
        assert sorted(d["filename"].rsplit(".", 1)[1] for d in docs) == ["json", "md"]
        markdown = next(d["content"].decode() for d in docs if d["filename"].endswith(".md"))
        assert "old maps" in markdown and "bicycles" not in markdown

        await bot.say(tg.text_message(dm_noor, noor, f"/start {token}"))
        assert len(tg.sent_documents) == 2  # delivered once
        assert await bot.db["pending_deliveries"].count_documents({}) == 0
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "old maps" not in logged and "old maps" not in token


async def test_an_export_marks_how_each_fact_was_learned_and_keeps_history_marked(
    settings: Settings, tmp_path: Path
) -> None:
    """Learned in the background, corrected later: the export says ``conversation`` and
    ``correction``, and the replaced value is there as history (not current, with the date
    it ended), under its own heading in the Markdown."""
    out = await replay_lines(
        settings,
        [
            {"circle": "nest", "members": ["rui", "ana"]},
            say("rui", "dm:rui", "I work as a carpenter"),
            say("rui", "dm:rui", "I'm vegetarian"),
            say("rui", "dm:rui", "my brother Tomas lives in Braga"),
            say("rui", "dm:rui", "I go climbing on Saturdays"),
            {"clock": "+30m"},
            {"jobs": "drain"},
            say("rui", "dm:rui", "Actually, I'm not vegetarian anymore"),
            say("rui", "dm:rui", "/export"),
        ],
        tmp_path / "d",
    )
    markdown, data = _export_of(_documents(out), "rui")
    facts = data["facts"]
    assert any(f["source"] == "conversation" and "carpenter" in f["content"] for f in facts)
    assert any(f["source"] == "correction" and f["current"] for f in facts), facts
    old = [f for f in facts if not f["current"]]
    assert old and all(f["ended_at"] for f in old), facts
    assert any("vegetarian" in f["content"] and "not" not in f["content"] for f in old), old
    assert data["counts"]["past_facts"] == len(old)
    assert "## No longer true (kept as history)" in markdown


async def test_the_fakes_take_documents_as_multipart_and_refuse_an_unopened_dm() -> None:
    """The benchmark's Bot API and the offline one (replay) answer ``sendDocument`` as
    Telegram does: the upload arrives whole, and a private chat that was never opened
    refuses the bot with 403 (PTB's ``Forbidden``)."""
    content = "# notes\nthe café opens at 8\n".encode()
    async with FakeBotApi() as api:
        api.not_started.add(5555)
        async with Bot(TOKEN, base_url=api.base_url) as bot:
            await bot.send_document(4444, InputFile(content, filename="n.md"), caption="hi")
            with pytest.raises(Forbidden, match="initiate conversation"):
                await bot.send_document(5555, InputFile(content, filename="n.md"))
        assert api.documents == [(4444, "n.md", content)]

    offline = OfflineBotAPI(started={4444})
    async with Bot("7000000001:replay", request=offline) as bot:
        await bot.send_document(4444, InputFile(content, filename="n.md"), caption="hi")
        with pytest.raises(Forbidden, match="initiate conversation"):
            await bot.send_document(5555, InputFile(content, filename="n.md"))
        await bot.send_message(-100, "a group is no private chat: it takes messages")
    (sent,) = offline.take_documents()
    assert (sent.chat_id, sent.name, sent.content, sent.caption) == (4444, "n.md", content, "hi")
