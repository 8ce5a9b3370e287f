"""A Bot API that never leaves the process, for replay, the console and the demo.

PTB talks to Telegram through a ``BaseRequest``; this one answers ``getMe`` as the bot
``alfred`` and records ``sendMessage`` (with its inline keyboard), ``editMessageText``,
``sendDocument`` (multipart), ``setMessageReaction`` and ``answerCallbackQuery`` calls
instead of sending them, so the real application, handlers and rate limiter run with no
network and no token.

With ``started`` set (the replay sets it), a private chat accepts the bot's messages only
once its user has written there, as on Telegram: before that a send is refused with 403
"bot can't initiate conversation with a user".
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from telegram.request import BaseRequest, RequestData

BOT_ID = 7_000_000_001
#: The bot's messages are numbered from here, the people's below it.
FIRST_BOT_MESSAGE_ID = 1_000_000


@dataclass
class SentMessage:
    chat_id: int
    text: str
    reply_to_message_id: int | None
    message_id: int
    #: Inline keyboard buttons: (label, callback data), row after row.
    buttons: list[tuple[str, str]] = field(default_factory=list)
    #: The entities sent with the text (a reminder's ``text_mention`` of a person).
    entities: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SentDocument:
    """A file the bot sent (``sendDocument``)."""

    chat_id: int
    name: str
    content: bytes
    caption: str
    message_id: int


@dataclass
class SetReaction:
    """A reaction the bot set on a message (``setMessageReaction``)."""

    chat_id: int
    message_id: int
    emoji: str


def _buttons(params: dict[str, Any]) -> list[tuple[str, str]]:
    """The (label, callback data) of a request's inline keyboard, row after row."""
    markup = params.get("reply_markup") or {}
    if isinstance(markup, str):
        markup = json.loads(markup)
    return [
        (str(b.get("text", "")), str(b.get("callback_data", "")))
        for row in markup.get("inline_keyboard", [])
        for b in row
    ]


@dataclass
class OfflineBotAPI(BaseRequest):
    """Answers the Bot API methods the application uses; records what the bot sends."""

    username: str = "alfred"
    sent: list[SentMessage] = field(default_factory=list)
    reactions: list[SetReaction] = field(default_factory=list)
    documents: list[SentDocument] = field(default_factory=list)
    #: The private chats whose user has written to the bot (None: every chat accepts).
    started: set[int] | None = None
    #: The texts of answered callback queries (button presses).
    answered: list[str] = field(default_factory=list)
    #: Messages the bot edited since the last :meth:`take_edits`, as they now read.
    edits: list[SentMessage] = field(default_factory=list)
    #: Every message the bot sent, by (chat, message id): an edit changes it in place.
    _messages: dict[tuple[int, int], SentMessage] = field(default_factory=dict)
    _ids: itertools.count[int] = field(
        default_factory=lambda: itertools.count(FIRST_BOT_MESSAGE_ID)
    )

    def number_from(self, first: int) -> None:
        """Number the bot's next messages from ``first`` (never below
        :data:`FIRST_BOT_MESSAGE_ID`): a kept store may hold numbers an earlier session
        used, which a reply to a new message must not name."""
        self._ids = itertools.count(max(first, FIRST_BOT_MESSAGE_ID))

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
        target = params.get("chat_id")
        if (
            name.startswith("send")
            and self.started is not None
            and target is not None
            and int(target) > 0
            and int(target) not in self.started
        ):
            refusal = {
                "ok": False,
                "error_code": 403,
                "description": "Forbidden: bot can't initiate conversation with a user",
            }
            return 403, json.dumps(refusal).encode()
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
            entities = params.get("entities") or []
            if isinstance(entities, str):
                entities = json.loads(entities)
            self.sent.append(
                SentMessage(
                    chat_id=int(params["chat_id"]),
                    text=str(params.get("text", "")),
                    reply_to_message_id=int(reply_to) if reply_to else None,
                    message_id=message_id,
                    buttons=buttons,
                    entities=[dict(e) for e in entities],
                )
            )
            chat_id = int(params["chat_id"])
            self._messages[(chat_id, message_id)] = self.sent[-1]
            result = {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                "from": self.bot_user(),
                "text": str(params.get("text", "")),
            }
        elif name == "editMessageText":
            chat_id, message_id = int(params["chat_id"]), int(params["message_id"])
            edited = self._messages.get((chat_id, message_id))
            if edited is None:
                refusal = {
                    "ok": False,
                    "error_code": 400,
                    "description": "Bad Request: message to edit not found",
                }
                return 400, json.dumps(refusal).encode()
            edited.text = str(params.get("text", ""))
            edited.buttons = _buttons(params)
            self.edits.append(edited)
            result = {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                "from": self.bot_user(),
                "text": edited.text,
            }
        elif name == "sendDocument":
            message_id = next(self._ids)
            chat_id = int(params["chat_id"])
            files = request_data.multipart_data if request_data is not None else {}
            upload = files.get("document")
            filename, content = (str(upload[0]), upload[1]) if upload else ("file", b"")
            data = content if isinstance(content, bytes) else bytes(content.read())
            caption = str(params.get("caption") or "")
            self.documents.append(SentDocument(chat_id, filename, data, caption, message_id))
            result = {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                "from": self.bot_user(),
                "document": {
                    "file_id": f"doc{message_id}",
                    "file_unique_id": f"u{message_id}",
                    "file_name": filename,
                },
                **({"caption": caption} if caption else {}),
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

    def take_edits(self) -> list[SentMessage]:
        """The messages edited since the last call (each once, as it now reads)."""
        out, self.edits = list({id(m): m for m in self.edits}.values()), []
        return out

    def take_documents(self) -> list[SentDocument]:
        """The documents sent since the last call."""
        out, self.documents = self.documents, []
        return out

    def take_reactions(self) -> list[SetReaction]:
        """The reactions set since the last call."""
        out, self.reactions = self.reactions, []
        return out
