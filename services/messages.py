"""What the Telegram layer hands to the assistant, and what it gets back.

The assistant never sees a PTB object: handlers turn an update into an :class:`Incoming`
and send each :class:`Outgoing`, so the reply path is the same for Telegram, the replay
and the console.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

ChatType = Literal["private", "group", "supergroup", "channel"]

#: Telegram refuses messages longer than this.
TELEGRAM_MAX_TEXT = 4096
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(text: str) -> str:
    """``text`` with every unpaired UTF-16 surrogate replaced by U+FFFD.

    JSON may escape half a surrogate pair (``"\\ud83d"``), and Python decodes it into a
    string that cannot be encoded as UTF-8 (the database) or UTF-16 (entity offsets):
    such a message would fail on every retry. The replacement keeps its length in
    UTF-16 code units, so Telegram's entity offsets still point at the same text."""
    return _LONE_SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True)
class Sender:
    telegram_id: int
    name: str
    username: str | None = None
    is_bot: bool = False


@dataclass(frozen=True)
class SentReply:
    """One of Alfred's replies as the journal keeps it. A reply that went out before its
    journal write failed travels in the spool as this, so its replay journals it even
    when a restart has lost the turn that made it."""

    id: str
    text: str
    at: datetime


@dataclass(frozen=True)
class Incoming:
    """One user message, normalised."""

    chat_id: int
    chat_type: ChatType
    sender: Sender
    message_id: int
    text: str
    chat_title: str | None = None
    addressed: bool = False
    update_id: int | None = None
    kind: str = "text"
    #: The forum topic of a supergroup with topics (Telegram's ``message_thread_id``):
    #: answers go back into it. Topics share the group's members, so privacy treats
    #: the whole group as one thread.
    topic_id: int | None = None
    #: The text of Alfred's message this one is a Telegram reply to, if it is one: a
    #: reply to a question answers that question (within its time to live).
    reply_to_bot_text: str | None = None
    #: The Telegram id of that message of Alfred's (a reply to a delivered reminder
    #: snoozes that reminder).
    reply_to_bot_message_id: int | None = None
    #: Replayed from the spool: it failed part-way before (maybe after its journal entry
    #: was written), so a journal entry already there does not mean it was answered.
    replayed: bool = False
    #: Replayed, and its answer was delivered before a write after it failed: the
    #: replies it was (the spool kept them, for the journal; none from a spool line
    #: written before they were kept). None when it was not answered.
    answers: tuple[SentReply, ...] | None = None

    @property
    def answered(self) -> bool:
        """Its answer went out before: the replay finishes what the turn left, and never
        answers again."""
        return self.answers is not None

    @property
    def is_group(self) -> bool:
        return self.chat_type in ("group", "supergroup")

    @property
    def journal_id(self) -> str:
        """The message's name ("chat:message") in the journal and in what its turn made
        (a fact's provenance, an item's source, a reminder's id)."""
        return f"{self.chat_id}:{self.message_id}"


@dataclass(frozen=True)
class Document:
    """A file to send (Telegram ``sendDocument``): its name, its bytes and their type."""

    name: str
    content: bytes
    mime_type: str = "text/plain"

    @property
    def text(self) -> str | None:
        """The content as text, when it is text (JSON, Markdown)."""
        try:
            return self.content.decode("utf-8")
        except UnicodeDecodeError:
            return None


@dataclass(frozen=True)
class Outgoing:
    """One message to send: a text, or a ``document`` with ``text`` as its caption."""

    chat_id: int
    text: str
    reply_to_message_id: int | None = None
    meta: dict[str, object] = field(default_factory=dict)
    document: Document | None = None
    #: Inline buttons under the message, one per row: (label, callback data). A text
    #: sent in several parts carries them under its last part.
    buttons: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PrivateDelivery:
    """Messages for one person's DM, asked for somewhere else (a group).

    Telegram refuses a bot's first message to someone who never opened a chat with it
    (403 "bot can't initiate conversation"). So the sender tries the DM first, then says in
    the chat where it was asked either ``sent_notice`` or, refused, ``refused_notice``
    with ``{link}`` replaced by a start link (``t.me/<bot>?start=<token>``): the token
    names a pending delivery of ``kind`` kept for the person (never its content), and
    opening the link delivers it."""

    user_id: str
    telegram_user_id: int
    kind: str
    messages: list[Outgoing]
    #: Where it was asked, and the request's message (the notices reply to it).
    chat_id: int
    reply_to_message_id: int | None
    sent_notice: str
    refused_notice: str


#: The reaction that quietly acknowledges a request Alfred acted on without being
#: addressed (one of the emoji Telegram lets bots react with).
ACK_REACTION = "\N{THUMBS UP SIGN}"


@dataclass(frozen=True)
class Reaction:
    """A reaction to set on a user's message (Telegram ``setMessageReaction``): how Alfred
    says "done" in a group where nobody talked to it, without adding a message."""

    chat_id: int
    message_id: int
    emoji: str = ACK_REACTION


def split_for_telegram(text: str, limit: int = TELEGRAM_MAX_TEXT) -> list[str]:
    """Cut a long reply into messages Telegram accepts, at paragraph or line breaks."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    parts: list[str] = []
    while len(text) > limit:
        cut = max(
            text.rfind("\n\n", 0, limit), text.rfind("\n", 0, limit), text.rfind(" ", 0, limit)
        )
        if cut <= 0:
            cut = limit
        parts.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        parts.append(text)
    return parts
