"""What the bot sent during one replay event, as REPLAY.md output lines.

A message or a file may go to another chat than the one the event happened in (an export
asked for in a group goes to the asker's DM), so each line names the chat it went to:
``dm:<user>`` (``to`` that user) or ``group:<circle>`` (``to`` the person who spoke).
Reactions come first, then messages and documents in the order they were sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.telegram.offline_bot_api import OfflineBotAPI, SentDocument, SentMessage


def chat_ref(chat_id: int, users: Mapping[str, int], circles: Mapping[str, int]) -> str | None:
    """The script's name of a chat (``dm:alice``, ``group:fam``), if the script named it."""
    for name, tid in users.items():
        if tid == chat_id:
            return f"dm:{name}"
    for name, cid in circles.items():
        if cid == chat_id:
            return f"group:{name}"
    return None


def take_sent(
    api: OfflineBotAPI,
    where: str,
    sender: str | None,
    users: Mapping[str, int],
    circles: Mapping[str, int],
    *,
    to_of: Callable[[SentMessage], str | None] | None = None,
) -> tuple[list[dict[str, Any]], list[SentMessage]]:
    """The output lines for everything ``api`` recorded since the last call, and the
    messages themselves (a later ``reply_to`` replies to the latest one of a chat).
    ``to_of`` names whom a group message is for when it answers nobody who just spoke
    (a delivered reminder: its person, or None for the whole group)."""
    out: list[dict[str, Any]] = [
        {"reaction": {"in": where, "to": sender, "emoji": r.emoji}} for r in api.take_reactions()
    ]
    messages = api.take()
    sent: list[SentMessage | SentDocument] = [*messages, *api.take_documents()]
    sent.sort(key=lambda s: s.message_id)
    for item in sent:
        ref = chat_ref(item.chat_id, users, circles) or where or str(item.chat_id)
        to: str | None = sender
        if ref.startswith("dm:"):
            to = ref.split(":", 1)[1]
        elif to_of is not None and isinstance(item, SentMessage):
            to = to_of(item)
        if isinstance(item, SentDocument):
            try:
                text: str | None = item.content.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            doc: dict[str, Any] = {"in": ref, "to": to, "name": item.name, "text": text}
            if item.caption:
                doc["caption"] = item.caption
            out.append({"document": doc})
        else:
            reply: dict[str, Any] = {"in": ref, "to": to, "text": item.text}
            if item.buttons:
                reply["buttons"] = [label for label, _ in item.buttons]
            out.append({"reply": reply})
    for edited in api.take_edits():  # a list's message, edited after a tick-off press
        ref = chat_ref(edited.chat_id, users, circles) or where or str(edited.chat_id)
        change: dict[str, Any] = {"in": ref, "text": edited.text}
        if edited.buttons:
            change["buttons"] = [label for label, _ in edited.buttons]
        out.append({"edit": change})
    return out, messages
