"""A Bot API that never leaves the process, for replay, the console and the demo.

PTB talks to Telegram through a ``BaseRequest``; this one answers ``getMe`` as the bot
``alfred`` and records ``sendMessage`` (with its inline keyboard), ``setMessageReaction``
and ``answerCallbackQuery`` calls instead of sending them, so the real application,
handlers and rate limiter run with no network and no token.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from telegram.request import BaseRequest, RequestData

BOT_ID = 7_000_000_001


@dataclass
class SentMessage:
    chat_id: int
    text: str
    reply_to_message_id: int | None
    message_id: int
    #: Inline keyboard buttons: (label, callback data), row after row.
    buttons: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class SetReaction:
    """A reaction the bot set on a message (``setMessageReaction``)."""

    chat_id: int
    message_id: int
    emoji: str


@dataclass
class OfflineBotAPI(BaseRequest):
    """Answers the Bot API methods the application uses; records what the bot sends."""

    username: str = "alfred"
    sent: list[SentMessage] = field(default_factory=list)
    reactions: list[SetReaction] = field(default_factory=list)
    #: The texts of answered callback queries (button presses).
    answered: list[str] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1_000_000))

    def __post_init__(self) -> None:
        BaseRequest.__init__(self)

    @property
    def read_timeout(self) -> float | None:
        return 1.0

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    def bot_user(self) -> dict[str, Any]:
        return {
            "id": BOT_ID,
            "is_bot": True,
            "first_name": self.username.capitalize(),
            "username": self.username,
            "can_join_groups": True,
            "can_read_all_group_messages": True,
            "supports_inline_queries": False,
        }

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = None,
        write_timeout: Any = None,
        connect_timeout: Any = None,
        pool_timeout: Any = None,
    ) -> tuple[int, bytes]:
        name = url.rsplit("/", 1)[-1]
        params: dict[str, Any] = dict(request_data.parameters) if request_data is not None else {}
        result: Any
        if name == "getMe":
            result = self.bot_user()
        elif name == "sendMessage":
            message_id = next(self._ids)
            reply = params.get("reply_parameters") or {}
            if isinstance(reply, str):
                reply = json.loads(reply)
            reply_to = params.get("reply_to_message_id") or reply.get("message_id")
            markup = params.get("reply_markup") or {}
            if isinstance(markup, str):
                markup = json.loads(markup)
            buttons = [
                (str(b.get("text", "")), str(b.get("callback_data", "")))
                for row in markup.get("inline_keyboard", [])
                for b in row
            ]
            self.sent.append(
                SentMessage(
                    chat_id=int(params["chat_id"]),
                    text=str(params.get("text", "")),
                    reply_to_message_id=int(reply_to) if reply_to else None,
                    message_id=message_id,
                    buttons=buttons,
                )
            )
            chat_id = int(params["chat_id"])
            result = {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                "from": self.bot_user(),
                "text": str(params.get("text", "")),
            }
        elif name == "setMessageReaction":
            kinds = params.get("reaction") or []
            if isinstance(kinds, str):
                kinds = json.loads(kinds)
            for kind in kinds:
                self.reactions.append(
                    SetReaction(
                        chat_id=int(params["chat_id"]),
                        message_id=int(params["message_id"]),
                        emoji=str(kind.get("emoji", "")),
                    )
                )
            result = True
        elif name == "answerCallbackQuery":
            self.answered.append(str(params.get("text", "")))
            result = True
        elif name in ("getUpdates",):
            result = []
        else:
            result = True
        return 200, json.dumps({"ok": True, "result": result}).encode()

    def take(self) -> list[SentMessage]:
        """What was sent since the last call."""
        out, self.sent = self.sent, []
        return out

    def take_reactions(self) -> list[SetReaction]:
        """The reactions set since the last call."""
        out, self.reactions = self.reactions, []
        return out
