"""Shared lists with tick-off buttons, their privacy under forged presses, and lists in a
circle-wide erase and in a person's export, end to end through replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.bench.fake_openai import (
    FakeOpenAI,
    RecordedRequest,
    completion,
    json_task_handler,
    tool_call,
)
from bot.replay import Replay, replay_world
from bot.telegram.offline_bot_api import SentMessage
from runtime.settings import Settings
from services.reply.lists import NONE_HERE, NOTHING_TO_TICK
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.replay import replay_lines, replies, say, with_model
from tests.integration.test_telegram_bot import (  # noqa: F401 - fixtures used below
    bot_env,
    handler_errors,
    spool_file,
)

HOME = {"circle": "home", "members": ["nora", "omar"]}
STUDIO = {"circle": "studio", "members": ["pia", "quinn"]}


def press(who: str, where: str, button: str) -> dict[str, Any]:
    return {"press": {"as": who, "in": where, "button": button}}


def _edits(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["edit"] for o in out if "edit" in o]


async def test_a_group_list_is_ticked_off_by_its_buttons_and_a_dm_list_stays_out(
    settings: Settings, tmp_path: Path
) -> None:
    """Every list Alfred shows in its own thread carries one button per item; pressing
    one ticks the item off for everyone and the message is edited to the list as it
    now is. Nora's DM list never shows in the group, nor can its button be pressed there;
    the group's list read from a DM has no buttons (lists change only at home)."""
    out = await replay_lines(
        settings,
        [
            HOME,
            say(
                "nora",
                "group:home",
                "@alfred add rye bread, lemons and dish soap to the groceries list",
            ),
            press("omar", "group:home", "lemons"),
            press("omar", "group:home", "lemons"),  # gone from the message: nothing
            say("omar", "group:home", "@alfred what's on the groceries list?"),
            press("nora", "group:home", "dish soap"),
            say("nora", "dm:nora", "add a wool scarf for Omar to the presents list"),
            say("omar", "group:home", "@alfred what's on the presents list?"),
            press("omar", "group:home", "wool scarf for Omar"),
            say("nora", "dm:nora", "what's on the groceries list?"),
            press("nora", "dm:nora", "wool scarf for Omar"),
            say("nora", "dm:nora", "what's on the presents list?"),
        ],
        tmp_path / "a",
    )
    said = replies(out)
    assert said[0]["buttons"] == ["rye bread", "lemons", "dish soap"], said[0]
    edits = _edits(out)
    assert edits[0] == {
        "in": "group:home",
        "text": "Omar ticked off lemons.\nGroceries list: rye bread, dish soap",
        "buttons": ["rye bread", "dish soap"],
    }
    # The second press found no "lemons" button any more: one edit, no reply between.
    assert [next(iter(o)) for o in out[1:3]] == ["edit", "reply"], out[1:3]
    assert said[1]["text"] == "Groceries list: rye bread, dish soap"
    assert said[1]["buttons"] == ["rye bread", "dish soap"]
    # Nora pressed "dish soap" on Omar's answer: that message is edited now.
    assert edits[1]["text"] == "Nora ticked off dish soap.\nGroceries list: rye bread"
    assert edits[1]["buttons"] == ["rye bread"]
    # The DM list: buttons in Nora's DM only; nothing of it in the group.
    assert said[2]["in"] == "dm:nora" and said[2]["buttons"] == ["wool scarf for Omar"]
    group = [json.dumps(o) for o in out if "group:home" in json.dumps(o)]
    assert not any("scarf" in line for line in group), group
    assert said[3]["in"] == "group:home" and "scarf" not in said[3]["text"]
    # The group's list read from Nora's DM: shown, but without buttons.
    assert said[4] == {
        "in": "dm:nora",
        "to": "nora",
        "text": "Groceries list: rye bread (the group's list)",
    }
    assert edits[2]["in"] == "dm:nora" and edits[2]["text"].startswith("Nora ticked off wool")
    assert "buttons" not in edits[2]
    assert said[5]["text"] == "Presents list: empty."
    assert len(edits) == 3


def _peeking_model(request: RecordedRequest) -> Any:
    """A model that reads the pantry list with its tool when asked to PEEK, then says so."""
    if not request.tools:
        return json_task_handler()(request)
    if "PEEK" in request.last_user_text and not any(
        m.get("role") == "tool" for m in request.messages
    ):
        return completion(None, tool_calls=[tool_call("show_list", {"list": "pantry"})])
    return completion("Here it is.")


async def test_a_list_the_chat_model_shows_carries_its_buttons_at_home_only(
    settings: Settings, tmp_path: Path
) -> None:
    """With a real model, a list read by the ``show_list`` tool gets the same buttons
    under the model's answer, in the list's own thread only."""
    async with FakeOpenAI(embedding_dimensions=8) as fake:
        fake.set_handler(_peeking_model)
        world = with_model(settings, fake)
        out = await replay_lines(
            world,
            [
                HOME,
                say("nora", "group:home", "@alfred add figs and capers to the pantry list"),
                say("omar", "group:home", "@alfred PEEK at the pantry for me"),
                press("omar", "group:home", "capers"),
                say("omar", "dm:omar", "PEEK at the pantry from here"),
            ],
            tmp_path / "m",
        )
    said = replies(out)
    assert said[1] == {
        "in": "group:home",
        "to": "omar",
        "text": "Here it is.",
        "buttons": ["figs", "capers"],
    }
    assert _edits(out)[0]["text"] == "Omar ticked off capers.\nPantry list: figs"
    assert said[2]["in"] == "dm:omar" and "buttons" not in said[2], said[2]


async def _feed(replay: Replay, *lines: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in lines:
        ((kind, value),) = line.items()
        out += await replay.run_event(kind, value)
    return out


def _buttons_in(replay: Replay, chat_id: int) -> list[tuple[str, str]]:
    """Every (label, callback data) on the bot's messages with buttons in a chat."""
    return [b for sent in replay.reminders.with_buttons.get(chat_id, []) for b in sent.buttons]


async def _forge(replay: Replay, who: str, where: str, data: str) -> list[dict[str, Any]]:
    """``who`` presses, in ``where``, a button whose callback data was copied from
    another chat (a tampered client can send any data for a message it can see)."""
    kind, name = where.split(":", 1)
    chat_id = replay.names.circle(name) if kind == "group" else replay.names.user(name)
    bait = SentMessage(chat_id, "a message with a button", None, 999_999, [("forged", data)])
    replay.reminders.with_buttons.setdefault(chat_id, []).append(bait)
    return await replay.press(who, where, "forged")


async def test_a_tick_off_button_pressed_outside_its_lists_chat_changes_and_tells_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    """The ids of Nora's DM list and of the home circle's list, pressed from Omar's DM,
    from the home group (Nora's DM list), from another circle's group and from Nora's
    own DM (the circle's list: she may read it there but it changes only in the group):
    no edit, no message, the same answer each time, and every list as it was."""
    world = settings.model_copy(
        update={"alfred_data_dir": tmp_path / "leak", "mongodb_database": "replay_list_leak"}
    )
    async with replay_world(world) as replay:
        await replay.circle("home", ["nora", "omar"])
        await replay.circle("studio", ["pia", "quinn"])
        await _feed(
            replay,
            say("nora", "dm:nora", "add a pearl brooch for Omar to the presents list"),
            say("nora", "group:home", "@alfred add quince jam to the groceries list"),
            say("omar", "dm:omar", "add stamps to the errands list"),
            say("pia", "group:studio", "@alfred add toner to the office list"),
        )
        (private,) = _buttons_in(replay, replay.names.user("nora"))
        (shared,) = _buttons_in(replay, replay.names.circle("home"))
        assert private[0] == "pearl brooch for Omar" and shared[0] == "quince jam"
        for data in (private[1], shared[1]):  # ids only, never the item's words
            assert data.startswith("lst:") and len(data.encode()) <= 64
            assert not any(w in data for w in ("pearl", "brooch", "quince", "jam"))
        answered = len(replay.api.answered)
        out = [
            *await _forge(replay, "omar", "dm:omar", private[1]),
            *await _forge(replay, "omar", "group:home", private[1]),
            *await _forge(replay, "pia", "group:studio", private[1]),
            *await _forge(replay, "pia", "group:studio", shared[1]),
            *await _forge(replay, "quinn", "dm:quinn", shared[1]),
            *await _forge(replay, "nora", "dm:nora", shared[1]),
        ]
        assert out == [], out
        assert replay.api.answered[answered:] == [NOTHING_TO_TICK] * 6
        after = await _feed(
            replay,
            say("nora", "dm:nora", "what's on the presents list?"),
            say("omar", "group:home", "@alfred what's on the groceries list?"),
            say("omar", "dm:omar", "what's on the errands list?"),
            say("pia", "group:studio", "@alfred what's on the office list?"),
        )
        assert [r["text"] for r in replies(after)] == [
            "Presents list: pearl brooch for Omar",
            "Groceries list: quince jam",
            "Errands list: stamps",
            "Office list: toner",
        ]
        # The real buttons still work where they belong.
        ticked = await replay.press("omar", "group:home", "quince jam")
        assert _edits(ticked)[0]["text"].startswith("Omar ticked off quince jam.")


async def test_forget_everything_about_us_erases_the_circles_lists(
    settings: Settings, tmp_path: Path
) -> None:
    """A circle-wide erase takes the circle's lists with its shared memories; each
    member's own DM list stays."""
    out = await replay_lines(
        settings,
        [
            HOME,
            say("nora", "group:home", "@alfred add birdseed and matches to the groceries list"),
            say("omar", "group:home", "@alfred put a hinge on the repairs list"),
            say("omar", "dm:omar", "add a wool hat to the wishes list"),
            say("nora", "group:home", "@alfred forget everything about us"),
            say("nora", "group:home", "@alfred yes"),
            say("omar", "group:home", "@alfred what lists do we have?"),
            say("omar", "dm:omar", "what's on the wishes list?"),
        ],
        tmp_path / "us",
    )
    texts = [r["text"] for r in replies(out)]
    assert "its lists included" in texts[3], texts[3]
    assert texts[4].startswith("Done — I've erased") and "and 2 lists" in texts[4], texts[4]
    assert texts[5] == NONE_HERE
    assert texts[6] == "Wishes list: wool hat"


async def test_an_export_holds_the_lists_and_reminders_the_person_may_see(
    settings: Settings, tmp_path: Path
) -> None:
    """Nora's export has her DM list, the circle's list (whole) and the reminders she
    may see; Omar's DM list and DM reminder are not in it, nor another circle's list."""
    out = await replay_lines(
        settings,
        [
            HOME,
            STUDIO,
            say("nora", "dm:nora", "add a pearl brooch to the presents list"),
            say("nora", "group:home", "@alfred add quince jam to the groceries list"),
            say("omar", "group:home", "@alfred add birdseed to the groceries list"),
            say("omar", "dm:omar", "add a brass compass to the presents list"),
            say("omar", "dm:omar", "remind me to renew the fishing licence tomorrow at 9"),
            say("nora", "dm:nora", "remind me to water the orchids tomorrow at 8"),
            say("omar", "group:home", "@alfred remind us to defrost the freezer on Saturday at 10"),
            say("pia", "group:studio", "@alfred add toner to the office list"),
            say("nora", "dm:nora", "export my memories"),
        ],
        tmp_path / "x",
    )
    docs = [o["document"] for o in out if "document" in o and o["document"]["in"] == "dm:nora"]
    markdown = next(d["text"] for d in docs if d["name"].endswith(".md"))
    data = next(json.loads(d["text"]) for d in docs if d["name"].endswith(".json"))
    lists = {row["name"]: row for row in data["lists"]}
    assert set(lists) == {"Presents list", "Groceries list"}, lists
    assert [i["text"] for i in lists["Presents list"]["items"]] == ["pearl brooch"]
    assert lists["Presents list"]["from"] == {"where": "dm"}
    groceries = lists["Groceries list"]
    assert [(i["text"], i["by_you"]) for i in groceries["items"]] == [
        ("quince jam", True),
        ("birdseed", False),
    ]
    assert groceries["from"]["where"] == "circle"
    reminders = {r["text"]: r for r in data["reminders"]}
    assert set(reminders) == {"water the orchids", "defrost the freezer"}, reminders
    assert reminders["water the orchids"]["for"] == "you"
    assert reminders["defrost the freezer"]["for"] == "everyone"
    assert data["counts"]["lists"] == 2 and data["counts"]["reminders"] == 2
    everything = markdown + json.dumps(data)
    for other in ("brass compass", "fishing licence", "toner"):
        assert other not in everything, other
    assert "## Lists (not memories)" in markdown and "quince jam" in markdown
    assert "## Reminders (not memories)" in markdown and "water the orchids" in markdown


async def test_over_the_bot_api_a_press_answers_and_edits_the_lists_message(
    bot_env: Any,  # noqa: F811 - the fixture imported above
) -> None:
    """Real PTB against the fake Bot API: the list goes out with an inline keyboard whose
    callback data fits Telegram's 64 bytes; Omar's press is answered (the toast) and the
    very message is edited (``editMessageText``) to the list that is left; a forged press
    from his DM with that data is answered "Nothing to tick off here." and edits nothing."""
    async with FakeTelegram(bot_username="alfred") as tg, bot_env(tg) as bot:
        nora = tg.user("Nora", username="nora")
        omar = tg.user("Omar", username="omar")
        home = tg.group_chat(title="Home", members=[nora, omar])
        (shown,) = await bot.say(
            tg.text_message(home, nora, "@alfred add figs and capers to the pantry list")
        )
        keyboard = shown["message"]["reply_markup"]["inline_keyboard"]
        assert [row[0]["text"] for row in keyboard] == ["figs", "capers"]
        capers = keyboard[1][0]["callback_data"]
        assert len(capers.encode()) <= 64 and "capers" not in capers

        def pressed(number: int, chat: Any, message: Any) -> dict[str, Any]:
            return {
                "callback_query": {
                    "id": f"press-{number}",
                    "from": omar,
                    "chat_instance": str(chat["id"]),
                    "data": capers,
                    "message": message,
                }
            }

        dm = tg.private_chat(omar)
        await bot.say(tg.text_message(dm, omar, "hello"))
        (hello,) = [m for m in tg.sent_messages if m["chat_id"] == dm["id"]]
        assert await bot.say(pressed(1, dm, hello["message"])) == []
        assert tg.edited_messages == []
        assert await bot.say(pressed(2, home, shown["message"])) == []
        (edited,) = tg.edited_messages
        assert edited["chat_id"] == home["id"]
        assert edited["message_id"] == shown["message_id"]
        assert edited["text"] == "Omar ticked off capers.\nPantry list: figs"
        rows = edited["message"]["reply_markup"]["inline_keyboard"]
        assert [row[0]["text"] for row in rows] == ["figs"]
        toasts = [(c["callback_query_id"], c.get("text")) for c in tg.answered_callbacks]
        assert toasts == [("press-1", NOTHING_TO_TICK), ("press-2", "Ticked off capers.")]
