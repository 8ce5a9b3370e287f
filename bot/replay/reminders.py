"""The replay's side of reminders: deliveries while jobs drain, and button presses.

A delivery job sends through the replay's own bot (the in-process Bot API), so what it
sends is printed as ``reply`` objects like any answer; ``to`` is the person the
reminder is for (null for "remind us"). Inline buttons are printed as ``"buttons"``,
and a ``press`` line sends the callback query Telegram would send for one of them.
The replay's clock is simulated, so arq's real-time deferral is not used here: the
sweep that runs when jobs drain queues what is due at the simulated time.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from telegram import Bot

from bot.telegram.offline_bot_api import SentMessage
from jobs.reminder_tasks import SCHEDULER_KEY, SENDER_KEY, BotSender
from memory.reminders import Mention
from services.reminders import NoScheduler


@dataclass
class ReplayReminders:
    """Who each delivered reminder was for, and the latest buttons per chat."""

    bot: Bot
    #: Telegram message id → the user id the reminder is for (None: the whole group).
    to: dict[int, str | None] = field(default_factory=dict)
    #: chat id → its bot messages that carry buttons, oldest first.
    with_buttons: dict[int, list[SentMessage]] = field(default_factory=dict)
    _callback_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def send(
        self,
        chat_id: int,
        text: str,
        *,
        reminder_id: str,
        to_user_id: str | None,
        mention: Mention | None = None,
    ) -> int | None:
        message_id = await BotSender(self.bot).send(
            chat_id, text, reminder_id=reminder_id, to_user_id=to_user_id, mention=mention
        )
        if message_id is not None:
            self.to[message_id] = to_user_id
        return message_id

    def job_ctx(self) -> dict[str, Any]:
        """What the drain's worker is preset with: this sender, no real-time deferral."""
        return {SENDER_KEY: self, SCHEDULER_KEY: NoScheduler()}

    def seen(self, sent: SentMessage) -> None:
        if sent.buttons:
            self.with_buttons.setdefault(sent.chat_id, []).append(sent)

    def carrying(self, chat_id: int, label: str) -> SentMessage | None:
        """The latest bot message in the chat with a button labelled ``label``."""
        for sent in reversed(self.with_buttons.get(chat_id, [])):
            if any(text == label for text, _ in sent.buttons):
                return sent
        return None

    def callback(
        self,
        sent: SentMessage,
        label: str,
        user: dict[str, Any],
        chat: dict[str, Any],
        date: int,
        bot_user: dict[str, Any],
    ) -> dict[str, Any]:
        """The ``callback_query`` update payload of pressing ``label`` on ``sent``."""
        data = next(d for text, d in sent.buttons if text == label)
        return {
            "callback_query": {
                "id": str(next(self._callback_ids)),
                "from": user,
                "chat_instance": str(chat["id"]),
                "data": data,
                "message": {
                    "message_id": sent.message_id,
                    "date": date,
                    "chat": chat,
                    "from": bot_user,
                    "text": sent.text,
                },
            }
        }
