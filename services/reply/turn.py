"""What one incoming message led to: the replies, and the writes left once they are out.

A turn is handed back before its replies are journaled when the caller sends them first
(:meth:`services.reply.assistant.Assistant.handle` with ``deliver_first``), so it carries
those writes (``settle``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from services.messages import Outgoing, PrivateDelivery, Reaction, SentReply

#: The writes a turn leaves until its replies are out
#: (:meth:`services.reply.assistant.Assistant.settle`).
Settle = Callable[[], Awaitable[None]]


@dataclass
class Turn:
    """What one incoming message led to (for replay probes, logs and tests)."""

    replies: list[Outgoing]
    retrieved: bool = False
    addressed: bool = False
    #: Answered by an explicit operation (not the chat model): the message is marked
    #: handled in the journal, so formation never redoes or undoes what was done.
    handled: bool = False
    #: Quiet acknowledgements: reactions set on the user's message instead of a reply.
    reactions: list[Reaction] = field(default_factory=list)
    #: Messages for the asker's DM, asked for in a group (an export): the sender tries
    #: the DM and says in the group where it went, or gives a start link when refused.
    private: list[PrivateDelivery] = field(default_factory=list)
    #: What is left once the replies are out: journaling them. ``Assistant.handle`` runs
    #: it itself unless asked to ``deliver_first``.
    settle: Settle | None = field(default=None, repr=False, compare=False)
    #: The replies as ``settle`` journals them: spooled with the message if that write
    #: fails, so its replay journals them even after a restart.
    sent: tuple[SentReply, ...] = field(default=(), repr=False, compare=False)
