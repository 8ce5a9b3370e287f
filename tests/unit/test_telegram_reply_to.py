"""A Telegram reply to one of Alfred's messages reaches the services with the text it
replies to (so it can answer the question that message asked); a reply to anyone else's
message carries nothing."""

from __future__ import annotations

from typing import Any

from telegram import Update

from bot.telegram.updates import to_incoming

BOT_ID = 99


def _reply_update(replied_from: dict[str, Any], replied_text: str) -> Update:
    return Update.de_json(
        {
            "update_id": 1,
            "message": {
                "message_id": 11,
                "date": 0,
                "chat": {"id": -5, "type": "group", "title": "Fam"},
                "from": {"id": 7, "is_bot": False, "first_name": "Ann"},
                "text": "mine",
                "reply_to_message": {
                    "message_id": 10,
                    "date": 0,
                    "chat": {"id": -5, "type": "group", "title": "Fam"},
                    "from": replied_from,
                    "text": replied_text,
                },
            },
        },
        None,
    )


def test_a_reply_to_alfred_carries_the_replied_text() -> None:
    alfred = {"id": BOT_ID, "is_bot": True, "first_name": "Alfred", "username": "alfred"}
    inc = to_incoming(_reply_update(alfred, 'whose "Mom" do you mean?'), BOT_ID, "alfred")
    assert inc is not None and inc.addressed
    assert inc.reply_to_bot_text == 'whose "Mom" do you mean?'


def test_a_reply_to_a_person_carries_nothing() -> None:
    bob = {"id": 8, "is_bot": False, "first_name": "Bob"}
    inc = to_incoming(_reply_update(bob, "whose do you mean?"), BOT_ID, "alfred")
    assert inc is not None and inc.reply_to_bot_text is None and not inc.addressed
